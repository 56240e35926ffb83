"""Where received mail comes from: an IMAP mailbox or a local Maildir.

A source hands over new messages oldest first, each with the receiving
server's own time.  The runner ingests each message (one transaction each),
and only after those commits tells the source they are ``done``: the source
then files them away, many at once (processed folder, or quarantine for
mail that could not be handled).
A crash between the two leaves the message in place; the next run fetches
it again and the store recognises it as a duplicate, so it is filed then.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class Received:
    ref: str  # what the source needs to find the message again (IMAP UID, Maildir key)
    raw: bytes
    received_at: datetime  # the server's receipt time: IMAP INTERNALDATE, Maildir delivery


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
    async def fetch(self) -> list[Received]:
        """New messages, oldest first.  Raises SourceError if unreachable."""

    async def handled(self, since: datetime | None) -> list[Received]:
        """The messages filed in the processed folder that the server
        received since ``since`` (all with None; a day's margin more is
        fine: the store knows those), for handling again after a restore."""

    async def done(self, messages: Sequence[Received], quarantine: bool = False) -> None:
        """File messages whose effects are committed: to the processed
        folder, or to quarantine.  Never deletes anything unfiled."""

    async def close(self) -> None:
        """Let go of connections and locks."""
