"""The public history site (render) and what the public may know (public)."""
