"""Mail that must never be answered: auto-replies, bounces, lists, ourselves."""

from __future__ import annotations

from referee.mail.parse import Incoming, without_comments

_LIST_OR_AUTO = ("List-Id", "List-Post", "List-Unsubscribe", "X-Autoreply", "X-Autorespond")


def never_answer(message: Incoming, own_address: str) -> str | None:
    """Why this message must get no reply (a loop or backscatter risk), or None."""
    headers = message.headers
    auto = without_comments(str(headers.get("Auto-Submitted", ""))).partition(";")[0]
    if auto.strip().lower() not in ("", "no"):  # RFC 3834; "no (comment)" is a person's mail
        return "auto-submitted"
    if str(headers.get("Precedence", "")).strip().lower() in ("bulk", "junk", "list", "auto_reply"):
        return "bulk, list or auto-reply mail"
    if any(name in headers for name in _LIST_OR_AUTO):
        return "list mail or auto-reply"
    return_path = str(headers.get("Return-Path", "<x>")).strip().lower()
    if return_path in ("<>", "") or "mailer-daemon" in return_path:
        return "bounce (empty or MAILER-DAEMON return path)"
    if message.sender.split("@")[0] in ("mailer-daemon", "postmaster") or not message.sender:
        return "bounce or no sender"
    if headers.get_content_type() == "multipart/report":
        return "delivery status notification"
    own_local, _, own_domain = own_address.lower().rpartition("@")
    local, _, domain = message.sender.rpartition("@")
    if domain == own_domain and local.split("+")[0] == own_local:
        return "our own mail"
    return None
