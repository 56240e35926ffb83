"""Delivery status notifications (RFC 3464): which of our mails failed, to whom.

A bounce is never answered (``classify``); this module only reads it, so
the referee can record that a player's address did not take its mail.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import Message

from referee.mail.parse import Incoming, header_text, one_line, parse_headers

_MAX_PARTS = 20  # a report has three parts; a hostile one gets no more attention than that


@dataclass(frozen=True)
class Failure:
    address: str  # the recipient that could not be reached, lower case
    status: str  # "5.2.2"
    diagnostic: str  # the remote server's words
    message_id: str | None  # the failed mail's Message-ID, from the returned headers


def delivery_failures(message: Incoming) -> list[Failure]:
    """The failed recipients a multipart/report delivery-status names."""
    report = message.headers
    if report.get_content_type() != "multipart/report" or message.oversized:
        return []
    status, original = None, None
    for count, part in enumerate(report.walk()):
        if count > _MAX_PARTS:
            break
        kind = part.get_content_type()
        if kind == "message/delivery-status" and status is None:
            status = part
        elif kind in ("message/rfc822", "text/rfc822-headers") and original is None:
            original = part
    if status is None:
        return []
    message_id = _original_id(original)
    failures = []
    for fields in _field_groups(status):
        action = _field(fields, "Action").lower()
        recipient = _field(fields, "Final-Recipient") or _field(fields, "Original-Recipient")
        address = recipient.partition(";")[2].strip().strip("<>").lower()
        if action == "failed" and "@" in address:
            failures.append(
                Failure(address, _field(fields, "Status"), _field(fields, "Diagnostic-Code")[:200], message_id)
            )
    return failures


def _field_groups(part: Message) -> list[Message]:
    """The per-message and per-recipient field groups of a delivery-status part."""
    payload = part.get_payload()
    if isinstance(payload, list):  # the email package parses the groups as messages
        return [group for group in payload[:_MAX_PARTS] if isinstance(group, Message)]
    blocks = str(payload).replace("\r\n", "\n").split("\n\n", _MAX_PARTS)[:_MAX_PARTS]
    return [parse_headers(block.encode("utf-8", "replace")) for block in blocks]


def _field(group: Message, name: str) -> str:
    return one_line(header_text(group, name))


def _original_id(part: Message | None) -> str | None:
    if part is None:
        return None
    payload = part.get_payload()
    if (
        isinstance(payload, list) and payload and isinstance(payload[0], Message)
    ):  # message/rfc822: the returned message
        headers = payload[0]
    else:  # text/rfc822-headers
        text = payload if isinstance(payload, str) else ""
        headers = parse_headers(text.encode("utf-8", "replace"))
    return _field(headers, "Message-ID") or None
