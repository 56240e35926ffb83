"""Where received mail comes from: an IMAP mailbox or a local Maildir.

A source first says what is waiting, oldest first, each message with the
receiving server's own time and its size, without reading any (``waiting``);
the runner then has it ``read`` them a batch at a time, bounded in count and
in bytes, so no backlog is ever held in memory whole.  A message over the
source's ``max_size`` is never read whole either: its first EXCERPT bytes
(its header section and the start of its body) are enough to answer it.
The runner ingests each message (one transaction each), and only after those
commits tells the source the batch is ``done``: the source then files them
away, many at once (processed folder, or quarantine for mail that could not
be handled, or read).
A crash between the two leaves the message in place; the next run reads
it again and the store recognises it as a duplicate, so it is filed then.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, Protocol

# Bytes read of a message over max_size: its header section (a person's
# mail has a few KB of it; the engine keeps up to 64 KB) and the start of its body.
EXCERPT = 128 * 1024


@dataclass(frozen=True, slots=True)
class Waiting:
    """A message waiting in the inbox, as the source knows it without reading it."""

    ref: str  # what the source needs to find the message again (IMAP UID, Maildir key)
    received_at: datetime  # the server's receipt time: IMAP INTERNALDATE, Maildir delivery
    size: int  # bytes: IMAP RFC822.SIZE, the Maildir file's


@dataclass(frozen=True)
class Received:
    ref: str  # what the source needs to find the message again (IMAP UID, Maildir key)
    raw: bytes
    received_at: datetime  # the server's receipt time: IMAP INTERNALDATE, Maildir delivery
    # The whole message's size when ``raw`` is only its start (a message over
    # max_size: its first EXCERPT bytes); None when ``raw`` is all of it.
    size: int | None = None


class Read(NamedTuple):
    """What ``read`` made of a batch: the messages read, in the batch's order,
    and those that could not be read for a reason of their own (the runner
    quarantines them).  One gone meanwhile (filed by another) is in neither."""

    messages: list[Received]
    unreadable: list[Waiting]


def oversized(message: Waiting, max_size: int | None) -> bool:
    """Whether a message is over the size limit: read only its first EXCERPT bytes."""
    return max_size is not None and message.size > max_size


class SourceError(ConnectionError):
    """The mail server or folder cannot be reached; the message says which and why."""


class WrongSettings(Exception):
    """Mixed into a mail server's error when the server answered and refused
    the referee's account or settings: a wrong password, a TLS setting that
    does not fit the port or the certificate, no such mailbox.  Trying again
    will not help until the config or the account is put right (exit status
    4, and ERROR in the daemon's log), unlike a server away (status 1)."""


class SourceRefused(SourceError, WrongSettings):
    """The mail server refused the referee's account or settings."""


def tls_refused(error: BaseException | None) -> bool:
    """Whether an error (or what caused it) is a TLS handshake that cannot
    work with these settings (TLS spoken to a plain port, a certificate not
    trusted or not for this host), not a connection cut in the middle."""
    while error is not None:
        if isinstance(error, ssl.SSLError):
            return not isinstance(error, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError))
        error = error.__cause__ or error.__context__
    return False


class Source(Protocol):
    name: str  # which mailbox or Maildir: the refs are its own
    max_size: int | None  # a message over it is read only in part (None: every message whole)

    async def waiting(self, limit: int) -> list[Waiting]:
        """The oldest new messages, at most ``limit`` (the lowest UIDs, the
        earliest deliveries), oldest first by receipt time; none is read.
        Raises SourceError if unreachable."""

    async def handled(self, since: datetime | None) -> list[Waiting]:
        """The messages filed in the processed folder that the server
        received since ``since`` (all with None; a day's margin more is
        fine: the store knows those), oldest first, for handling again
        after a restore; none is read."""

    async def read(self, messages: Sequence[Waiting], handled: bool = False) -> Read:
        """These messages (of ``waiting``, or with ``handled`` of ``handled``),
        each whole, or, over ``max_size`` (or found to be while read), its
        first EXCERPT bytes and its size.  At most ``max_size`` + 1 bytes of
        any message are ever held."""

    async def done(self, messages: Sequence[Waiting | Received], quarantine: bool = False) -> None:
        """File messages whose effects are committed: to the processed
        folder, or to quarantine.  Never deletes anything unfiled."""

    async def close(self) -> None:
        """Let go of connections and locks."""
