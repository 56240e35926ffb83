"""Mail that must never be answered: auto-replies, bounces, lists, ourselves."""

from __future__ import annotations

from referee.mail.parse import Incoming


def never_answer(message: Incoming, own_address: str) -> str | None:
    """Why this message must get no reply (a loop or backscatter risk), or None."""
    headers = message.headers
    auto = str(headers.get("Auto-Submitted", "")).strip().lower()
    if auto and auto != "no":
        return "auto-submitted"
    if str(headers.get("Precedence", "")).strip().lower() in ("bulk", "junk", "list"):
        return "bulk or list mail"
    if headers.get("List-Id") or headers.get("X-Autoreply") or headers.get("X-Autorespond"):
        return "list mail or auto-reply"
    if "Return-Path" in headers and str(headers["Return-Path"]).strip() in ("<>", ""):
        return "bounce (empty return path)"
    if message.sender.split("@")[0] in ("mailer-daemon", "postmaster") or not message.sender:
        return "bounce or no sender"
    if headers.get_content_type() == "multipart/report":
        return "delivery status notification"
    if message.sender == own_address.lower():
        return "our own mail"
    return None
