"""Mail that must never be answered: auto-replies, bounces, lists, ourselves."""

from __future__ import annotations

from email.utils import getaddresses

from referee.mail.parse import Incoming, without_comments

_LIST_OR_AUTO = ("List-Id", "List-Post", "List-Unsubscribe", "X-Autoreply", "X-Autorespond")
_LIST = ("List-Id", "List-Post")  # what a mailing list adds to each mail it sends on (RFC 2919, 2369)
# Where a list that sends a mail on under its own From ("Referee via Club" <club@lists.example.org>, its
# answer to DMARC) keeps the author: Google Groups in X-Original-Sender, Sympa in X-Original-From, Mailman 3
# in Reply-To (or Cc).
_AUTHOR_KEPT = ("X-Original-From", "X-Original-Sender", "Reply-To", "Cc")


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
    if "X-MS-Exchange-Inbox-Rules-Loop" in headers and "all" in _words(headers.get("X-Auto-Response-Suppress")):
        # Exchange's out-of-office reply, which carries no Auto-Submitted: made by an inbox rule, and asking
        # that nothing answer it (the pair Zammad's OutOfOfficeCheck reads; either alone is ordinary mail's).
        return "an out-of-office reply (Exchange)"
    return_path = str(headers.get("Return-Path", "<x>")).strip().lower()
    if return_path in ("<>", "") or "mailer-daemon" in return_path:
        return "bounce (empty or MAILER-DAEMON return path)"
    if message.sender.split("@")[0] in ("mailer-daemon", "postmaster") or not message.sender:
        return "bounce or no sender"
    if headers.get_content_type() == "multipart/report":
        return "delivery status notification"
    if is_own(message.sender, own_address):
        return "our own mail"
    return None


def _words(value: object) -> list[str]:
    return [word.strip().lower() for word in str(value or "").split(",")]


def through_a_list(message: Incoming, own_address: str) -> bool:
    """Whether a list sent on a mail of the referee's (one it announced a
    game to, whose members the referee's address is among) under the
    list's own From, with ours kept as its author (``_AUTHOR_KEPT``)."""
    headers = message.headers
    if not any(name in headers for name in _LIST):
        return False
    kept = getaddresses([str(value) for name in _AUTHOR_KEPT for value in headers.get_all(name, [])])
    return any(is_own(address.lower(), own_address) for _, address in kept)


def is_own(address: str, own_address: str) -> bool:
    """Whether ``address`` is the referee's own, or one of its plus-addresses."""
    own_local, _, own_domain = own_address.lower().rpartition("@")
    local, _, domain = address.lower().rpartition("@")
    return domain == own_domain and local.split("+")[0] == own_local
