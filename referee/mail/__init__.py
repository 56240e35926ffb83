"""Mail in (parse, classify, find the commands) and mail out (compose)."""
