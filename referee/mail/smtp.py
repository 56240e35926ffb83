"""Mail out: drain the outbox over one SMTP connection (aiosmtplib).

No mail goes out before every row that led to it is durable (Store.sync):
what a player has seen survives a power cut.  A mail is marked sent only
after the server accepted it, so a crash in
between sends it again, with the Message-ID it was given when it was queued:
a resend is recognisably the same mail.  The marks are made in batches (the
mails sent while a message was read, SEND_BATCH at most), so a crash may
send again as many as that, never more.  The SMTP conversation runs in a
process of its own (``_Wire``), so mail goes out while messages are read.
A temporary failure of one mail (a 4xx reply, or the connection dropped or
timed out while it was being sent) leaves it queued and tries it again
later, waiting twice as long each time; a permanent one (5xx) is recorded against the mail and reported by
``referee status``.  A server that cannot be reached at all is no failure of
any mail: the queue stays due, and the first connection that works sends it
(the runner decides how often to try: every cron run, or the daemon's
backoff).  A stop lets the mail in hand finish first (STOP_GRACE at most),
so a mail the server took is marked sent, not sent again by the next run.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import gc
import logging
import math
import multiprocessing
import os
import pickle
import signal
import socket
import struct
import sys
import traceback
from collections.abc import Coroutine
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum
from multiprocessing.connection import Connection

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
ENDING = 5.0  # seconds the sending process is given to end once told to


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
    runs in the wire's own process; the store is touched by the runner
    alone, never while a message is being read)."""

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
    """One SMTP connection, worked by a process of its own (forked), so
    that mail goes out while the runner reads and ingests messages, and
    neither waits on the other for Python's GIL.  It is handed rows that
    are durable already, sends them in order, and reports what became of
    each as it goes, setting ``wake`` on the runner's loop once the batch
    is done (or stopped); it never touches the store.

    A thread did this until issue 36's last measures: its every SMTP reply
    took the GIL from the reading thread, some 36 futex calls and 13
    context switches a mail, and a backlog's pass cost a sixth more CPU
    than reading first and sending after (4.8 against 4.1 ms a move).

    The process dies with the referee (the kernel's parent-death signal):
    a referee killed mid-batch leaves no sender behind to send what it
    will send again.  It ignores SIGINT and SIGTERM, which a terminal or a
    service manager sends the whole group: the referee's own stop ends it,
    after the mail in hand (``halt``, ``close``)."""

    def __init__(self, sender: SmtpSender, wake: asyncio.Event):
        self._sender, self._wake = sender, wake
        self._home = asyncio.get_running_loop()
        ours, theirs = multiprocessing.Pipe()
        parent = os.getpid()
        self._pid = os.fork()
        if self._pid == 0:  # the sending process: it never returns from here
            status = 1
            try:
                ours.close()
                _work(sender, theirs, parent)
                status = 0
            except BaseException:  # (a bug: said in the log, as the referee's own would be; the referee hears EOF)
                log.exception("the process sending mail failed")
            finally:
                os._exit(status)  # (no cleanup of the referee's objects it was forked with: games.db is not its own)
        theirs.close()
        self._pipe = ours
        # A batch given to a process that does not read (stuck) fails after the server's timeout, not never.
        with socket.socket(fileno=os.dup(ours.fileno())) as end:  # (the same socket: its options are the pipe's)
            end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", math.ceil(sender.timeout), 0))
        self._batch: list[OutboxRow] = []  # the mails given last, in order
        self._outcomes: list[Outcome] = []  # heard, not taken yet
        self._failure: BaseException | None = None
        self._ended = self._home.create_future()  # the batch in hand is done (no batch: done)
        self._ended.set_result(None)
        self._gone = self._home.create_future()  # the process closed its end: it has ended
        self._halt = False  # no mail begun once it is set
        self._overdue: asyncio.TimerHandle | None = None
        self._lost = "the process sending mail ended unexpectedly"  # what its end means, if it ends with mail in hand
        self.in_hand = 0  # mails handed over whose outcome the runner has not taken yet
        self._home.add_reader(ours.fileno(), self._heard)

    @property
    def halted(self) -> bool:
        return self._halt

    @property
    def busy(self) -> bool:
        """Whether it has mail in hand, or has not said its last batch ended
        (a batch is given only once the one before has: its end is that
        batch's, and no other's)."""
        return self.in_hand > 0 or not self._ended.done()

    @property
    def closed(self) -> bool:
        return self._pipe.closed

    def give(self, mails: list[OutboxRow]) -> None:
        """Send ``mails``, in order (called with none in hand); ``wake`` is
        set once they are all sent, or the sending stopped: their sent marks
        are one statement."""
        self.in_hand += len(mails)
        self._batch, self._failure = mails, None
        self._ended = self._home.create_future()
        if self._gone.done() or not self._tell(("give", mails)):  # it ended since its last batch
            self._ended_with(SmtpUnreachable(self._lost))
            return
        # A batch that takes longer than the server's every reply could is
        # stuck (the process is, or its connection): killed, it is a batch
        # whose end is unknown, sent again by a later drain.
        replies = _REPLIES_TO_CONNECT + sum(_REPLIES_A_MAIL + len(mail["recipients"]) for mail in mails)
        seconds = self._sender.timeout * replies
        self._overdue = self._home.call_later(
            seconds, self._kill, f"the process sending mail took over {seconds:.0f} s"
        )

    def outcomes(self) -> list[Outcome]:
        """What became of the mails sent since the last look."""
        taken, self._outcomes = self._outcomes, []
        self.in_hand -= sum(outcome.mail is not None for outcome in taken)
        return taken

    def failure(self) -> BaseException | None:
        """What stopped the sending that is no mail's outcome: a server that
        cannot be reached (SmtpUnreachable, SmtpRefused), or an error of no known kind."""
        return self._failure if self._ended.done() else None

    async def halt(self) -> None:
        """Begin no other mail; return once the one in hand is done."""
        self._halt = True
        if not self._ended.done():
            self._tell(("halt",))
            await asyncio.shield(self._ended)

    async def close(self, polite: bool) -> None:
        """QUIT (``polite``), or end the process at once, the connection
        and any mail in hand with it (as a stop that waited STOP_GRACE
        does); killed if it has not ended within ENDING seconds of being
        told (a QUIT: and the server's timeout)."""
        if self._overdue is not None:
            self._overdue.cancel()  # (its pid is waited for below, and may be another's after)
        try:
            self._tell(("quit",) if polite else ("close",))
            waiting = self._sender.timeout + ENDING if polite else ENDING
            with suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._gone), waiting)
        finally:
            if not self._gone.done():
                with suppress(ProcessLookupError):
                    os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            self._heard()  # what it said before it ended (the pipe holds it, then its end)
            self._home.remove_reader(self._pipe.fileno())
            self._pipe.close()

    def _tell(self, message: tuple[object, ...]) -> bool:
        """Say ``message`` to the process; whether it could be said (not if it has ended)."""
        try:
            self._pipe.send(message)
        except OSError:
            return False
        return True

    def _kill(self, why: str) -> None:
        self._lost = why
        with suppress(ProcessLookupError):
            os.kill(self._pid, signal.SIGKILL)  # (its end is heard: _heard)

    def _heard(self) -> None:
        """What the process said (on the runner's loop): a mail's outcomes,
        the batch's end, or its own end."""
        try:
            while self._pipe.poll():
                said, what = self._pipe.recv()
                if said == "mail":
                    self._note(what)
                else:
                    self._ended_with(what)
        except (EOFError, OSError):
            self._home.remove_reader(self._pipe.fileno())
            if not self._ended.done():  # it died with mail in hand: the mails it reported are marked, no other
                self._ended_with(SmtpUnreachable(self._lost))
            if not self._gone.done():
                self._gone.set_result(None)

    def _note(self, outcomes: list[tuple[int | None, str, str, int]]) -> None:
        """A mail's outcomes, by its place in the batch (no wake: the drain
        takes them at its next look, or at the batch's end)."""
        for index, said, error, code in outcomes:
            self._outcomes.append(Outcome(None if index is None else self._batch[index], Said(said), error, code))
            if said == Said.DROPPED.value:
                self._halt = True

    def _ended_with(self, failure: BaseException | None) -> None:
        if self._overdue is not None:
            self._overdue.cancel()
        self._failure = failure
        if not self._ended.done():
            self._ended.set_result(None)
        self._wake.set()


# -- in the sending process ----------------------------------------------------


def _work(sender: SmtpSender, pipe: Connection, parent: int) -> None:
    """The sending process's life: send each batch it is given and say
    what became of it, until it is told to QUIT or close, or the referee
    is gone."""
    _die_with(parent)
    # What the referee's objects were at the fork is never collected here:
    # garbage it had not collected yet may hold its sockets and files, and
    # their finalizers are the referee's business, not this process's.
    gc.freeze()
    signal.set_wakeup_fd(-1)  # (the referee's loop's: a signal here must not wake it)
    for stopping in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stopping, signal.SIG_IGN)  # (the referee's stop ends this one, after the mail in hand)
    asyncio.events._set_running_loop(None)  # (the referee's loop, forked running: not this process's)
    # A loop of its own, left as it is at the end (os._exit): asyncio.run's
    # cleanup would wait on its executor's threads without a time limit.
    asyncio.new_event_loop().run_until_complete(_serve(sender, pipe))


def _die_with(parent: int) -> None:
    """SIGKILL this process when the referee ends (Linux's parent-death
    signal), or at once if it already has."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)


_PR_SET_PDEATHSIG = 1  # (linux/prctl.h)
# The replies a batch waits for, each for the server's timeout at most: a
# connection's (the greeting, EHLO, STARTTLS and EHLO again, AUTH), and a
# mail's (MAIL, DATA, the data's end, RSET after a refusal), and a RCPT a recipient.
_REPLIES_TO_CONNECT = 5
_REPLIES_A_MAIL = 4


async def _serve(sender: SmtpSender, pipe: Connection) -> None:
    loop = asyncio.get_running_loop()
    told: asyncio.Queue[tuple[object, ...]] = asyncio.Queue()
    halt = False
    client: aiosmtplib.SMTP | None = None

    def heard() -> None:
        nonlocal halt
        try:
            while pipe.poll():
                message = pipe.recv()
                if message[0] == "halt":
                    halt = True  # (read between two mails: the one in hand finishes)
                elif message[0] == "close":
                    os._exit(0)  # at once: the mail in hand, if any, is cut off (the kernel closes the connection)
                else:
                    told.put_nowait(message)
        except (EOFError, OSError):  # the referee is gone: nothing sent from here on would be marked
            os._exit(0)

    loop.add_reader(pipe.fileno(), heard)
    while True:
        message = await told.get()
        if message[0] != "give":
            break
        mails: list[OutboxRow] = message[1]  # type: ignore[assignment]
        failure: BaseException | None = None
        try:
            if client is None:  # the first mails: connect here, so the runner never waits on it
                client = await sender._open()
            for index, mail in enumerate(mails):
                if halt:
                    break
                said = await sender._send(client, mail)
                pipe.send(("mail", [(None if o.mail is None else index, o.said.value, o.error, o.code) for o in said]))
                if said[-1].said is Said.DROPPED:
                    halt = True
                    break
        except Exception as error:  # noqa: BLE001 - of no known kind: the runner hears it
            if not isinstance(error, SmtpUnreachable):  # (a bug: where it happened, for the referee's log)
                error.add_note("".join(traceback.format_exception(error)).rstrip())
            failure = _portable(error)
        pipe.send(("ended", failure))
    if client is not None:  # (told to QUIT: "close" ends the process at once)
        try:
            await client.quit()
        except (aiosmtplib.SMTPException, OSError):
            client.close()


def _portable(error: Exception) -> Exception:
    """``error`` as it can cross to the referee's process (pickled)."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - whatever its attributes are, the referee hears its words
        return RuntimeError(f"{type(error).__name__}: {error}")
    return error


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

        The SMTP conversation runs in a process of its own (``_Wire``), so
        it goes on while a message is being read; games.db stays here: the
        wire is handed rows already durable, and what it did is recorded
        here, between messages (``_settle``: the sent marks of a batch, in
        one statement)."""
        report, wire, last = Drained(), None, 0
        wake = feed.more if feed else asyncio.Event()
        try:
            while True:
                wake.clear()  # (set again by whatever comes from here on: the feed, or the wire)
                if wire is not None:
                    self._settle(wire, report)
                if wire is None or not wire.busy:
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
                    feed.looked(sending=wire is not None and wire.busy)
                await wake.wait()
        except asyncio.CancelledError:  # stopping: the mail in hand may finish, no polite QUIT
            if wire is not None:
                try:
                    await _finishing(wire.halt())
                finally:
                    try:
                        await wire.close(polite=False)  # (the process's last words are heard as it ends)
                    finally:
                        with suppress(SmtpUnreachable):  # (the stop is what the caller hears)
                            self._settle(wire, report)
            raise
        finally:
            if feed:
                feed.looked(sending=False)  # (a reading that waits on the wire goes on)
            if wire is not None and not wire.closed:
                # QUIT when all is done; with mail in hand (an error here), end it at once
                await wire.close(polite=not (wire.halted or wire.busy))

    async def _open(self) -> aiosmtplib.SMTP:
        """A connection, logged in (run in the wire's process)."""
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
        """Send one mail (in the wire's process); what became of it, and of the
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
