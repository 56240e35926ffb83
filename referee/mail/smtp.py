"""Mail out: drain the outbox over one SMTP connection (aiosmtplib).

No mail goes out before every row that led to it is durable (Store.sync):
what a player has seen survives a power cut.  A mail is marked sent only
after the server accepted it, so a crash in
between sends it again, with the Message-ID it was given when it was queued:
a resend is recognisably the same mail.  A temporary failure of one mail (a
4xx reply, or the connection dropped or timed out while it was being sent)
leaves it queued and tries it again later, waiting twice as long each time;
a permanent one (5xx) is recorded against the mail and reported by
``referee status``.  A server that cannot be reached at all is no failure of
any mail: the queue stays due, and the first connection that works sends it
(the runner decides how often to try: every cron run, or the daemon's
backoff).  A stop lets the mail in hand finish first (STOP_GRACE at most),
so a mail the server took is marked sent, not sent again by the next run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import timedelta

import aiosmtplib

from referee.config import Server
from referee.mail.source import WrongSettings, tls_refused
from referee.store import MailState, OutboxRow, Store
from referee.timeutil import Clock, iso

log = logging.getLogger("referee.smtp")

FIRST_RETRY = timedelta(minutes=1)
LAST_RETRY = timedelta(hours=1)
STOP_GRACE = 2.0  # seconds a stopping sender gives the mail in hand to be taken and marked sent


class SmtpUnreachable(ConnectionError):
    """The SMTP server could not be reached or went away; queued mail is kept."""


class SmtpRefused(SmtpUnreachable, WrongSettings):
    """The SMTP server refused the referee's account or settings (a wrong
    password, no STARTTLS or AUTH where the config asks for it, TLS spoken
    to a plain port); queued mail is kept."""


@dataclass
class Drained:
    sent: int = 0
    deferred: int = 0
    failed: int = 0


@dataclass
class Feed:
    """How the runner keeps a drain going while it reads mail: each message
    read may queue mail (``added``), and ``close`` says no more will come.
    The runner yields between messages, so the sender sends its next
    command while the server works on the last (the loop runs one thread:
    the sender never touches the store while a message is being read)."""

    more: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False

    def added(self) -> None:
        self.more.set()

    def close(self) -> None:
        self.closed = True
        self.more.set()


async def _finishing(sending: Coroutine[object, object, None]) -> None:
    """Await one mail's sending (its SMTP transaction, then its sent mark).
    Cancelled meanwhile (the referee stopping), it lets that finish first,
    STOP_GRACE at most, then stops: else a mail the server took in that
    moment would stay queued and go out again with the next run."""
    task = asyncio.ensure_future(sending)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        give_up = asyncio.get_running_loop().time() + STOP_GRACE
        while not task.done() and (left := give_up - asyncio.get_running_loop().time()) > 0:
            with suppress(asyncio.CancelledError):  # the stop asks again, and waits (runner.cancel_and_wait)
                await asyncio.wait({task}, timeout=left)
        if not task.done():
            task.cancel()
            with suppress(asyncio.CancelledError):
                await asyncio.wait({task}, timeout=1)  # it ends at its next step
        elif not task.cancelled():
            task.exception()  # retrieved: the stop is what the caller hears
        raise


def retry_delay(attempts: int) -> timedelta:
    """1, 2, 4 ... minutes after the 1st, 2nd, 3rd ... failure, at most an hour."""
    return min(FIRST_RETRY * 2 ** max(attempts - 1, 0), LAST_RETRY)


class SmtpSender:
    def __init__(self, server: Server, sender: str, store: Store, clock: Clock, timeout: float = 30.0):
        self.server, self.sender, self.store, self.clock = server, sender, store, clock
        self.timeout = timeout

    def _client(self) -> aiosmtplib.SMTP:
        return aiosmtplib.SMTP(
            hostname=self.server.host,
            port=self.server.port,
            use_tls=self.server.security == "tls",
            start_tls=self.server.security == "starttls",
            local_hostname=self.sender.rpartition("@")[2],  # no DNS lookup of our own name
            timeout=self.timeout,
        )

    async def drain(self, feed: Feed | None = None) -> Drained:
        """Send every queued mail that is due; with ``feed``, go on sending
        what is queued meanwhile until the feed is closed, so the mail a
        message caused goes out while the next messages are read (the SMTP
        server's work overlaps the referee's).  Raises SmtpUnreachable (after
        recording it against the mail it was sending) if the server cannot be
        reached or goes away; whatever is unsent stays queued."""
        report, client, last = Drained(), None, 0
        try:
            while True:
                due = self.store.outbox(MailState.QUEUED, due=iso(self.clock()), after=last)
                if not due:
                    if feed is None or feed.closed:
                        return report
                    feed.more.clear()
                    await feed.more.wait()
                    continue
                # Durable before sent: a mail a player holds must never be
                # unknown to games.db after a power cut, nor the moves and
                # phases that made it.  One flush covers every message read
                # since the last (while the server took the last batch, the
                # runner read on: the flushes group themselves); the first
                # covers what a run killed before its own flush committed.
                self.store.sync(always=client is None)
                client = client or await self._connect()
                for mail in due:
                    await _finishing(self._send(client, mail, report))
                    last = mail["id"]
        except asyncio.CancelledError:  # stopping: no polite QUIT that may wait on the server
            if client is not None:
                client.close()
                client = None
            raise
        finally:
            if client is not None:
                try:
                    await client.quit()
                except (aiosmtplib.SMTPException, OSError):
                    client.close()

    async def _connect(self) -> aiosmtplib.SMTP:
        client = self._client()
        try:
            await client.connect()
            if self.server.username:
                await client.login(self.server.username, self.server.password or "")
        except (aiosmtplib.SMTPException, OSError) as error:
            if _settings_refused(error):
                said = (
                    f"{error.code} {error.message}"
                    if isinstance(error, aiosmtplib.SMTPResponseException)
                    else str(error).rstrip(".")
                )
                raise SmtpRefused(
                    f"SMTP server {self.server.host}:{self.server.port}: {said} "
                    "(check username, password and security in [smtp])"
                ) from None
            raise self._unreachable(error) from None
        return client

    async def _send(self, client: aiosmtplib.SMTP, mail: OutboxRow, report: Drained) -> None:
        # An internationalised address needs the server's SMTPUTF8 (RFC 6531).
        utf8 = not all(address.isascii() for address in (self.sender, *mail["recipients"]))
        try:
            await client.sendmail(
                self.sender, mail["recipients"], mail["raw"], mail_options=["SMTPUTF8"] if utf8 else None
            )
        except aiosmtplib.SMTPNotSupported:
            # No retry will help: fail this mail alone, not the queue behind it.
            self._refused(
                mail,
                554,
                "cannot be sent: the SMTP server does not offer SMTPUTF8, which an internationalised address needs",
                report,
            )
        except aiosmtplib.SMTPRecipientsRefused as error:
            codes = [refusal.code for refusal in error.recipients]
            self._refused(mail, min(codes), "; ".join(str(r) for r in error.recipients), report)
        except aiosmtplib.SMTPResponseException as error:
            self._refused(mail, error.code, f"{error.code} {error.message}", report)
        except (UnicodeError, ValueError) as error:
            # Cannot be put on the wire at all (e.g. a non-ASCII address and a
            # server without SMTPUTF8): no retry will help, so fail this mail
            # alone rather than block the queue behind it.
            self._refused(mail, 554, f"cannot be sent: {error}", report)
            try:  # the failure may have left a transaction half open
                await client.rset()
            except (aiosmtplib.SMTPException, OSError) as reset_error:
                raise self._unreachable(reset_error) from None
        except (aiosmtplib.SMTPException, OSError) as error:  # dropped, timed out
            self._defer(mail, str(error))
            report.deferred += 1
            raise self._unreachable(error) from None
        else:
            self.store.mark_sent(mail["id"], iso(self.clock()))
            report.sent += 1
            log.info("sent mail %d %s to %s", mail["id"], mail["message_id"], ", ".join(mail["recipients"]))

    def _unreachable(self, error: Exception) -> SmtpUnreachable:
        return SmtpUnreachable(f"SMTP server {self.server.host}:{self.server.port}: {error}")

    def _refused(self, mail: OutboxRow, code: int, error: str, report: Drained) -> None:
        if 400 <= code < 500:
            self._defer(mail, error)
            report.deferred += 1
        else:
            self.store.fail_mail(mail["id"], error)
            report.failed += 1
            log.warning("mail %d to %s refused for good: %s", mail["id"], ", ".join(mail["recipients"]), error)

    def _defer(self, mail: OutboxRow, error: str) -> None:
        next_try = self.clock() + retry_delay(mail["attempts"] + 1)
        self.store.defer_mail(mail["id"], error, iso(next_try))
        log.info("mail %d deferred until %s: %s", mail["id"], iso(next_try), error)


def _settings_refused(error: Exception) -> bool:
    """Whether connecting and logging in failed for the referee's settings:
    a permanent (5xx) refusal (of the password, say), an extension the config
    counts on that the server lacks (STARTTLS, AUTH), or TLS that cannot
    work with this port or certificate."""
    if isinstance(error, aiosmtplib.SMTPResponseException):
        return error.code >= 500
    if type(error) in (aiosmtplib.SMTPException, aiosmtplib.SMTPNotSupported):
        return True  # "... extension not supported by server"
    return tls_refused(error)
