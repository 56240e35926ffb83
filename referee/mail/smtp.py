"""Mail out: drain the outbox over one SMTP connection (aiosmtplib).

No mail goes out before every row that led to it is durable (Store.sync):
what a player has seen survives a power cut.  A mail is marked sent only
after the server accepted it, so a crash in
between sends it again, with the Message-ID it was given when it was queued:
a resend is recognisably the same mail.  The marks are made in batches (the
mails sent while a message was read, SEND_BATCH at most), so a crash may
send again as many as that, never more.  The SMTP conversation runs in a
thread of its own (``_Wire``), so mail goes out while messages are read.  A temporary failure of one mail (a
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
import concurrent.futures
import functools
import logging
import queue
import threading
from collections.abc import Coroutine
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum
from typing import TypeVar

import aiosmtplib
from aiosmtplib.email import quote_address
from aiosmtplib.protocol import normalize_message_line_endings
from aiosmtplib.typing import SMTPStatus

from referee.config import Server
from referee.mail.source import WrongSettings, tls_refused
from referee.store import MailState, OutboxRow, Store
from referee.timeutil import Clock, iso

log = logging.getLogger("referee.smtp")

FIRST_RETRY = timedelta(minutes=1)
LAST_RETRY = timedelta(hours=1)
STOP_GRACE = 2.0  # seconds a stopping sender gives the mail in hand to be taken and marked sent
# Mails handed to the wire at a time: one flush of games.db makes them durable
# first, and at most this many are sent and not marked sent yet (a crash may send
# them again).  While messages are read, a batch waits until it is full.
SEND_BATCH = 20
ENDING = 5.0  # seconds the wire's thread is given to end once its connection is closed

T = TypeVar("T")


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
    The runner yields between messages: the drain then records what the
    wire sent meanwhile and hands it what is queued (the SMTP conversation
    runs in the wire's own thread; the store is touched on the runner's
    thread alone, never while a message is being read)."""

    more: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False
    given: int = 0  # mails the drain handed to the wire
    sending: bool = False  # the wire has mails in hand (as the drain last looked)
    progress: asyncio.Event = field(default_factory=asyncio.Event)  # the drain looked again

    def added(self) -> None:
        self.more.set()

    def ahead(self, queued: int) -> bool:
        """Whether the reading is a whole batch ahead of the sending, with
        ``queued`` mails queued since it began: the wire has a batch in
        hand and another waits.  The runner then waits (``progressed``) for
        the wire, so that sending keeps pace with reading: a mail server
        that delivers each mail as it takes it shares the machine with the
        referee, and mail held back until the reading ends goes out later."""
        return self.sending and queued - self.given >= SEND_BATCH

    async def progressed(self) -> None:
        self.progress.clear()
        await self.progress.wait()

    def looked(self, sending: bool) -> None:
        self.sending = sending
        self.progress.set()

    def close(self) -> None:
        self.closed = True
        self.more.set()


class Said(Enum):
    """What became of a mail handed to the SMTP server."""

    SENT = "sent"
    REFUSED = "refused"  # by the server, this mail alone: deferred (a 4xx code) or failed for good
    DROPPED = "dropped"  # the connection broke or timed out: the mail is deferred, the drain stops


@dataclass(frozen=True)
class Outcome:
    mail: OutboxRow | None  # None: the connection broke just after the mail before (a reset that failed)
    said: Said
    error: str = ""
    code: int = 0


class _Wire:
    """One SMTP connection, worked by a thread of its own with its own
    event loop, so that mail goes out while the runner's thread reads and
    ingests messages (CPU work, between which it yields only now and then).
    It is handed rows that are durable already, sends them in order, and
    reports each outcome back, setting ``wake`` on the runner's loop; it
    never touches the store (SQLite's connection stays on the runner's
    thread).  Waiting on the network costs the runner nothing: the thread
    takes the GIL when the runner's thread lets it go, at each SQL
    statement, or after sys.getswitchinterval() at most.  (A shorter
    interval while the wire sent, 98 us at last, gave the pipeline bench
    no pace over Python's 5 ms in eight rounds run in turn, and cost more
    of the kernel's CPU in seven: the process's own is left alone.)"""

    def __init__(self, sender: SmtpSender, wake: asyncio.Event):
        self._sender, self._wake = sender, wake
        self._home = asyncio.get_running_loop()
        self._loop = asyncio.new_event_loop()
        self._outcomes: queue.SimpleQueue[Outcome] = queue.SimpleQueue()
        self._halt = threading.Event()  # no mail begun once it is set
        self._client: aiosmtplib.SMTP | None = None
        self._sending: concurrent.futures.Future[None] | None = None
        self.in_hand = 0  # mails handed over whose outcome the runner's thread has not taken yet
        self._thread = threading.Thread(target=self._run, name="referee-smtp", daemon=True)
        self._thread.start()

    @property
    def halted(self) -> bool:
        return self._halt.is_set()

    def give(self, mails: list[OutboxRow]) -> None:
        """Send ``mails``, in order (called with none in hand); ``wake`` is
        set once they are all sent, or the sending stopped: their sent marks
        are one statement (the runner's thread may look earlier, between
        two messages it reads)."""
        self.in_hand += len(mails)
        self._sending = asyncio.run_coroutine_threadsafe(self._send_all(mails), self._loop)
        self._sending.add_done_callback(lambda _: self._tell())  # all sent, stopped, or failed

    def outcomes(self) -> list[Outcome]:
        """What became of the mails sent since the last look."""
        taken: list[Outcome] = []
        with suppress(queue.Empty):
            while True:
                taken.append(self._outcomes.get_nowait())
        self.in_hand -= sum(outcome.mail is not None for outcome in taken)
        return taken

    def failure(self) -> BaseException | None:
        """What stopped the sending that is no mail's outcome: a server that
        cannot be reached (SmtpUnreachable, SmtpRefused), or an error of no known kind."""
        sending = self._sending
        if sending is None or not sending.done() or sending.cancelled():
            return None
        return sending.exception()

    async def halt(self) -> None:
        """Begin no other mail; return once the one in hand is done."""
        self._halt.set()
        if self._sending is not None:
            with suppress(Exception):  # (heard by outcomes())
                await asyncio.wrap_future(self._sending)

    async def close(self, polite: bool) -> None:
        """QUIT (``polite``), or just close the connection; the thread ends either way."""
        try:
            if polite and self._client is not None:
                await self._there(self._quit())
        finally:
            self._loop.call_soon_threadsafe(self._abandon)
            self._thread.join(ENDING)

    # -- on the wire's thread ------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
            left = asyncio.all_tasks(self._loop)  # a mail cut off by a stop, say
            for task in left:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        finally:
            self._loop.close()

    async def _there(self, work: Coroutine[object, object, T]) -> T:
        """Run ``work`` on the wire's thread (awaited from the runner's)."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._loop))

    async def _send_all(self, mails: list[OutboxRow]) -> None:
        if self._client is None:  # the first mails: connect here, so the runner's thread never waits on it
            self._client = await self._sender._open()
        for mail in mails:
            if self._halt.is_set():
                return
            outcomes = await self._sender._send(self._client, mail)
            for outcome in outcomes:
                self._outcomes.put(outcome)
            if outcomes[-1].said is Said.DROPPED:
                self._halt.set()
                return  # (the runner's thread is told as this ends: give())

    def _tell(self) -> None:
        self._home.call_soon_threadsafe(self._wake.set)

    async def _quit(self) -> None:
        assert self._client is not None
        try:
            await self._client.quit()
        except (aiosmtplib.SMTPException, OSError):
            self._client.close()

    def _abandon(self) -> None:
        if self._client is not None:
            self._client.close()
        self._loop.stop()


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
        reached or goes away; whatever is unsent stays queued.

        The SMTP conversation runs in a thread of its own (``_Wire``), so it
        goes on while a message is being read; games.db stays on this
        thread: the wire is handed rows already durable, and what it did is
        recorded here, between messages (``_settle``: the sent marks of all
        the mails it sent since, in one statement)."""
        report, wire, last = Drained(), None, 0
        wake = feed.more if feed else asyncio.Event()
        try:
            while True:
                wake.clear()  # (set again by whatever comes from here on: the feed, or the wire)
                if wire is not None:
                    self._settle(wire, report)
                if wire is None or not wire.in_hand:
                    due = self.store.outbox(MailState.QUEUED, due=iso(self.clock()), after=last, limit=SEND_BATCH)
                    reading = feed is not None and not feed.closed
                    if due and (len(due) == SEND_BATCH or not reading):
                        # Durable before sent: a mail a player holds must never be
                        # unknown to games.db after a power cut, nor the moves and
                        # phases that made it.  One flush covers every message read
                        # since the last batch was handed over: while messages are
                        # read, a batch waits to be full, so a backlog costs a flush
                        # per SEND_BATCH mails, not per message; the first covers
                        # what a run killed before its own flush committed.
                        self.store.sync(always=wire is None)
                        wire = wire or _Wire(self, wake)  # (it connects as it is given its first mail)
                        wire.give(due)
                        last = due[-1]["id"]
                        if feed:
                            feed.given += len(due)
                    elif not (due or reading):
                        return report
                if feed:
                    feed.looked(sending=wire is not None and wire.in_hand > 0)
                await wake.wait()
        except asyncio.CancelledError:  # stopping: the mail in hand may finish, no polite QUIT
            if wire is not None:
                try:
                    await _finishing(wire.halt())
                finally:
                    with suppress(SmtpUnreachable):  # (the stop is what the caller hears)
                        self._settle(wire, report)
            raise
        finally:
            if feed:
                feed.looked(sending=False)  # (a reading that waits on the wire goes on)
            if wire is not None:
                await wire.close(polite=not wire.halted)

    async def _open(self) -> aiosmtplib.SMTP:
        """A connection, logged in (run on the wire's thread)."""
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

    async def _send(self, client: aiosmtplib.SMTP, mail: OutboxRow) -> list[Outcome]:
        """Send one mail (on the wire's thread); what became of it, and of the
        connection.  It touches no store: the outcomes are recorded by ``_settle``."""
        # An internationalised address needs the server's SMTPUTF8 (RFC 6531).
        utf8 = not all(address.isascii() for address in (self.sender, *mail["recipients"]))
        try:
            await _transact(client, self.sender, mail["recipients"], mail["raw"], utf8)
        except aiosmtplib.SMTPNotSupported:
            # No retry will help: fail this mail alone, not the queue behind it.
            why = "cannot be sent: the SMTP server does not offer SMTPUTF8, which an internationalised address needs"
            return [Outcome(mail, Said.REFUSED, why, 554)]
        except aiosmtplib.SMTPRecipientsRefused as error:
            codes = [refusal.code for refusal in error.recipients]
            return [Outcome(mail, Said.REFUSED, "; ".join(str(r) for r in error.recipients), min(codes))]
        except aiosmtplib.SMTPResponseException as error:
            return [Outcome(mail, Said.REFUSED, f"{error.code} {error.message}", error.code)]
        except (UnicodeError, ValueError) as error:
            # Cannot be put on the wire at all (e.g. a non-ASCII address and a
            # server without SMTPUTF8): no retry will help, so fail this mail
            # alone rather than block the queue behind it.
            refused = Outcome(mail, Said.REFUSED, f"cannot be sent: {error}", 554)
            try:  # the failure may have left a transaction half open
                await client.rset()
            except (aiosmtplib.SMTPException, OSError) as reset_error:
                return [refused, Outcome(None, Said.DROPPED, str(reset_error))]
            return [refused]
        except (aiosmtplib.SMTPException, OSError) as error:  # dropped, timed out
            return [Outcome(mail, Said.DROPPED, str(error))]
        return [Outcome(mail, Said.SENT)]

    def _settle(self, wire: _Wire, report: Drained) -> None:
        """Record what the wire did since the last look: the sent marks in
        one statement, each refusal, and a connection that broke
        (SmtpUnreachable, after the mail it was sending is deferred), or a
        server that could not be reached at all."""
        sent: list[OutboxRow] = []
        broken: SmtpUnreachable | None = None
        for outcome in wire.outcomes():
            mail = outcome.mail
            if outcome.said is Said.DROPPED:
                if mail is not None:
                    self._defer(mail, outcome.error)
                    report.deferred += 1
                broken = self._unreachable(Exception(outcome.error))
            elif mail is None:
                continue  # (only a dropped connection comes without a mail)
            elif outcome.said is Said.SENT:
                sent.append(mail)
            else:
                self._refused(mail, outcome.code, outcome.error, report)
        if sent:
            self.store.mark_sent([mail["id"] for mail in sent], iso(self.clock()))
            report.sent += len(sent)
            for mail in sent:
                log.info("sent mail %d %s to %s", mail["id"], mail["message_id"], ", ".join(mail["recipients"]))
        if broken is not None:
            raise broken
        if (failure := wire.failure()) is not None:
            raise failure

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


async def _transact(client: aiosmtplib.SMTP, sender: str, recipients: list[str], raw: bytes, utf8: bool) -> None:
    """One mail's SMTP transaction, as aiosmtplib's sendmail makes it (the
    same commands, bytes, errors, and RSET after a refusal), with less of the
    wire's CPU: sendmail reads each address twice a mail (once to check it,
    once to quote it, by the email package's address parser: a mail's largest
    cost after the socket's), here once an address (``_quoted``); and it
    copies the whole mail once more to count the size the MAIL command
    announces, where mail with CRLF line ends alone (every mail the referee
    composes) is counted as it is."""
    encoding = "utf-8" if utf8 else "ascii"
    mail_from = _quoted(sender)  # (a ValueError for an address that cannot be sent, before anything is)
    quoted = [_quoted(recipient) for recipient in recipients]
    await _greeted(client)  # (the server's extensions are known after its EHLO reply)
    if utf8 and not client.supports_extension("smtputf8"):
        raise aiosmtplib.SMTPNotSupported("SMTPUTF8 is not supported by this server")
    options = [b"SMTPUTF8"] if utf8 else []
    if client.supports_extension("size"):
        options.insert(0, f"size={_size_on_the_wire(raw)}".encode())
    try:  # (client.mail and client.rcpt would read each address again)
        said = await client.execute_command(b"MAIL", b"FROM:" + mail_from.encode(encoding), *options)
        if said.code != SMTPStatus.completed:
            raise aiosmtplib.SMTPSenderRefused(said.code, said.message, sender)
        refused: list[aiosmtplib.SMTPRecipientRefused] = []
        for recipient, address in zip(recipients, quoted, strict=True):
            said = await client.execute_command(b"RCPT", b"TO:" + address.encode(encoding))
            if said.code not in (SMTPStatus.completed, SMTPStatus.will_forward):
                refused.append(aiosmtplib.SMTPRecipientRefused(said.code, said.message, recipient))
        if len(refused) == len(recipients):
            raise aiosmtplib.SMTPRecipientsRefused(refused)
        await client.data(raw)
    except (aiosmtplib.SMTPResponseException, aiosmtplib.SMTPRecipientsRefused):
        with suppress(ConnectionError, aiosmtplib.SMTPResponseException):  # (sendmail's reset)
            await client.rset()
        raise


# An address as the MAIL and RCPT commands write it: the referee's own on
# every mail, and the players' on most, so each is read once, not once a
# mail.  Right to keep: quote_address depends on the address alone, and an
# address it refuses (ValueError) is not kept, so it is refused again at
# each mail, as before; bounded, so a daemon's years of addresses do not pile up.
_quoted = functools.lru_cache(maxsize=4096)(quote_address)


async def _greeted(client: aiosmtplib.SMTP) -> None:
    """EHLO (HELO if the server knows no EHLO) once a connection, as sendmail does before its first mail."""
    if client.is_ehlo_or_helo_needed:
        try:
            await client.ehlo()
        except aiosmtplib.SMTPHeloError:
            if not client.is_connected:
                raise
            await client.helo()


def _size_on_the_wire(raw: bytes) -> int:
    """RFC 1870's size: the mail's bytes with every line ended by CRLF, as DATA sends them."""
    lines = raw.count(b"\n")
    if raw.count(b"\r") == lines == raw.count(b"\r\n"):  # no line end to mend: count, don't copy
        return len(raw) + (0 if raw.endswith(b"\r\n") else 2)
    return len(normalize_message_line_endings(raw))


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
