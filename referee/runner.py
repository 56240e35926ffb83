"""The referee's main job: poll the mail source, ingest what came, enforce
deadlines, send the outbox.

``once`` is cron mode (``referee run --once``); ``serve`` is the daemon
(``referee serve``): it waits on IMAP IDLE (or polls), wakes for the next
deadline, settle window, reminder or mail retry, and for any change another
process commits to games.db (a keeper's ``referee new``, ``resign`` or
``ingest``: SQLite's data_version, looked at every WAKE_POLL seconds), and
stops on SIGTERM or SIGINT at once, mid-pass if need be (``until_stopped``).  Both hold a lock
on the database, so two runs never handle the same mail at once, and both
are safe to kill at any moment: a message is filed away on the server only
after its effects are committed.

A pass that meets a fault stops and raises it: SourceError (the mail
server), SmtpUnreachable (the SMTP server), StorageFault (games.db or the
disk) or an OSError of a file beside it (a template the disk cannot read, no
file descriptor left); a server's error that is also WrongSettings (a wrong password, a
TLS mismatch, no such mailbox) needs the keeper, as a storage fault does.
The daemon waits and tries again; ``run --once`` exits non-zero.
games.db keeps when the last pass went through and the last fault, for
``referee status``; after each pass the keepers are told what has gone
wrong or been fixed (referee.engine.watch).
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import time
import traceback
from collections.abc import Awaitable, Callable, Iterator, Set
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, NamedTuple, TypeVar

from referee.config import Config
from referee.engine import Engine
from referee.errors import Busy
from referee.interrupt import Stopped
from referee.mail import smtp
from referee.mail.imap import ImapSource
from referee.mail.maildir import MaildirSource
from referee.mail.smtp import Drained, Feed, SmtpSender, SmtpUnreachable
from referee.mail.source import EXCERPT, Received, Source, SourceError, Waiting, WrongSettings, oversized
from referee.site.render import Site
from referee.store import (
    FaultAside,
    MailState,
    OutcomeCode,
    Snapshot,
    StorageFault,
    Unreadable,
)
from referee.timeutil import from_iso, iso

log = logging.getLogger("referee.runner")

HEARTBEAT = timedelta(minutes=20)  # the daemon ticks at least this often (outage guard)
MAILDIR_POLL = 5.0  # seconds between looks at a Maildir, which cannot push
LONGEST_BACKOFF = 60.0  # the daemon tries a failed server (or disk) again at least once a minute
LOCK_POLL = 1.0  # seconds between the waiting daemon's looks at the run lock
WAKE_POLL = 0.5  # seconds between the waiting daemon's looks for a commit by another process
WINDOW = 10_000  # new messages listed at a time (UID or name, size, receipt time: about 200 bytes each)
BATCH_MAIL = 200  # messages read, handled and filed at a time, at most
BATCH_BYTES = 8 * 2**20  # bytes of mail read at a time, at most (one message alone, up to max_message_size)
# Messages handled in one transaction at most (Store.batch): a COMMIT a
# message was a tenth of the statements' CPU.  The sender sends only what is
# committed, so a transaction ends sooner once it queued a sender's batch.
MESSAGES_A_COMMIT = 20
# ... and for this long at most (seconds, by the process's own clock, not the
# engine's): the write lock is held the while, and a keeper's command from
# another process waits for it (10 s at most), as do catch-ups after downtime.
SECONDS_A_COMMIT = 1.0
IN_FLIGHT = "in_flight"  # games.db's meta: the batch being read and handled (Runner.receive)
GIVE_UP_FAILED = 2  # a mail read alone is quarantined unread once this many passes it ended saw why
GIVE_UP_ENDED = 5  # ... or once this many ended unseen (killed), or with the mail server failing

T = TypeVar("T")
Fault = SourceError | SmtpUnreachable | StorageFault | OSError  # what stops a pass (see the module's doc)


def _a_fault(error: BaseException) -> bool:
    """Whether ``error`` is a Fault: a server's, or the machine's (an OSError
    that is no server's ConnectionError is a file's, as a StorageFault is games.db's)."""
    if isinstance(error, (SourceError, SmtpUnreachable, StorageFault)):
        return True
    return isinstance(error, OSError) and not isinstance(error, ConnectionError)


def fault_text(error: BaseException) -> str:
    """What a fault that stopped a pass says, for the log and ``referee status``."""
    if isinstance(error, MemoryError):  # (it says nothing itself)
        return "the pass ran out of memory: what it finished is filed; the next pass goes on"
    return str(error)


class RunLock:
    """An exclusive lock beside the database (``games.db.lock``), held for
    a whole run: two runs never handle the same mail at once."""

    def __init__(self, database: Path):
        self.path = Path(f"{database}.lock")
        self._handle: IO[str] | None = None

    def acquire(self) -> bool:
        """Take the lock if it is free; whether it is now ours."""
        handle = open(self.path, "a")  # noqa: SIM115 - held open for the run, closed by release()
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._handle = handle
        return True

    async def wait(self, stop: asyncio.Event) -> bool:
        """Take the lock, waiting while another run holds it (the daemon
        started while a cron run or a keeper's command works); False if
        ``stop`` is set first."""
        if self.acquire():
            return True
        log.warning("waiting for %s: another referee run holds it", self.path)
        while not stop.is_set():
            await _sleep(LOCK_POLL, stop)
            if not stop.is_set() and self.acquire():
                log.info("took %s; starting", self.path)
                return True
        return False

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


@contextmanager
def run_lock(database: Path) -> Iterator[None]:
    """The run lock for a run that does not wait: Busy if another holds it."""
    lock = RunLock(database)
    if not lock.acquire():
        raise Busy(f"another referee run holds {lock.path}")
    try:
        yield
    finally:
        lock.release()


async def until_stopped(work: Awaitable[T], stop: asyncio.Event) -> T | None:
    """Await ``work`` unless ``stop`` is set first: then cancel it and
    return None.  Cancelling a pass is safe wherever it waits: each message
    is handled in one transaction between two waits, and what is not filed
    or marked sent yet is recognised by the next pass.  A pass the stop
    signal cut short while it read a mail (Stopped: referee.interrupt)
    returns None too, once the loop has heard the signal."""
    working = asyncio.ensure_future(work)
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({working, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        if not working.done():
            await cancel_and_wait(working)
    if working.cancelled():
        return None
    if isinstance(working.exception(), Stopped):
        # The signal cut a mail's reading short (referee.interrupt); the
        # loop hears it on its next turn: the stop is logged, ``stop`` set.
        await stop.wait()
        return None
    return working.result()


async def cancel_and_wait(task: asyncio.Future) -> None:
    """Cancel a task and wait until it has stopped; its own error, if it had
    one meanwhile, is dropped (the caller is already failing or stopping).
    Cancelled again until it ends: asyncio.wait_for in Python 3.11, which
    the mail libraries use, can swallow a cancellation that meets a reply."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=0.1)
    if not task.cancelled():
        task.exception()  # retrieved, so asyncio does not log it as lost


class Tally(NamedTuple):
    """Of a mail read alone: the passes it was in flight when they ended."""

    failed: int  # seen: out of memory, an error of no known kind
    ended: int  # unseen: killed (kill -9, the OOM killer), or the mail server failed

    def __str__(self) -> str:
        return f"{self.failed} out of memory or in error, {self.ended} killed or cut off"


@dataclass
class Report:
    """What one pass did."""

    received: int = 0
    done: list[str] = field(default_factory=list)
    mail: Drained = field(default_factory=Drained)


def source_for(config: Config, engine: Engine) -> Source | None:
    if config.imap:
        return ImapSource(config.imap, engine.store, max_size=config.max_message_size)
    if config.maildir:
        m = config.maildir
        return MaildirSource(m.path, processed=m.processed, quarantine=m.quarantine, max_size=config.max_message_size)
    return None


class Runner:
    def __init__(self, engine: Engine, source: Source | None, sender: SmtpSender | None, site: Site | None = None):
        self.engine, self.source, self.sender, self.site = engine, source, sender, site
        self._looked = engine.clock.real()  # when the last pass looked at the inbox
        self._queued_before = 0  # the store's mails_queued as a pass began to read (see _ingest_some)
        self.caught_up: list[str] = []  # what the last pass did between its mails
        # Of the pass's ``due``: the due stamps at which it was known to be no later than every moment
        # of a game (by its id; None: of every game), had next_due been asked (see _ingest).
        self._due_known: dict[int | None, tuple[int, ...]] = {}
        self.poll_interval = MAILDIR_POLL  # for sources that cannot push
        self._version: int | None = None  # games.db's data_version as the last pass began
        on_disk = str(engine.store.path) != ":memory:"
        self.aside = FaultAside(engine.store.path) if on_disk else None  # faults games.db could not take
        if self.aside:
            self.aside.reserve()

    @classmethod
    def from_config(cls, config: Config, engine: Engine) -> Runner:
        config = config.connecting()  # (read already by the command, which fails before opening games.db)
        sender = SmtpSender(config.smtp, config.address, engine.store, engine.clock) if config.smtp else None
        site = Site(engine, config.site_dir, config.templates, config.template_cache) if config.site_dir else None
        return cls(engine, source_for(config, engine), sender, site)

    async def once(self) -> Report:
        """One pass: guard against an outage, receive, tick, and write the
        site (when there is a site_dir) for what changed.  What a message
        causes is sent while the next messages are read, and all of it
        before the tick, so a receipt waits on no deadline work; what the
        tick causes is sent after it.  If the mail source or the SMTP server
        cannot be reached, deadlines are still enforced and the site written;
        then the SourceError (or SmtpUnreachable) is raised.  A storage
        fault stops the pass where it falls (StorageFault), as does memory
        run out (MemoryError; what the pass finished is filed first)."""
        try:
            return await self._pass()
        except (StorageFault, OSError, MemoryError) as error:
            if _a_fault(error) or isinstance(error, MemoryError):
                self._note_fault(error)
                self._tell_keepers()
            raise

    def _tell_keepers(self) -> None:
        """After a pass that failed, the keepers are told if it has gone on
        (referee.engine.watch), when games.db takes it: a fault of games.db
        is told by the first pass that goes through after it."""
        store = self.engine.store
        try:
            with store.impatient():
                self.engine.tell_keepers()
                store.sync()
        except (StorageFault, OSError) as error:  # (a template the disk cannot read, too)
            if not _a_fault(error):
                raise
            log.debug("could not tell the keepers of the fault (%s): the first pass that goes through will", error)

    def _note_fault(self, fault: Fault | MemoryError) -> None:
        """Keep the fault for ``referee status`` (the last pass that went
        through is noted at its end): in games.db if it takes it at once (it
        may be the very thing that failed), else beside it (FaultAside)
        until it does."""
        store = self.engine.store
        now = iso(self.engine.clock())
        note = {"since": self._failing_since(now), "at": now, "error": fault_text(fault)}
        try:
            with store.impatient():
                store.set_meta("last_fault", json.dumps(note))
                store.sync()
        except StorageFault as error:  # the fault itself is what the caller reports
            kept = self.aside.path if self.aside is not None and self.aside.write(note) else None
            log.debug("could not note the fault in games.db (%s); %s", error, f"kept in {kept}" if kept else "not kept")
            return
        if self.aside:
            self.aside.clear()  # older than the fault games.db now has

    def _failing_since(self, now: str) -> str:
        """When the passes began to fail: the first fault noted since the last
        pass that went through (``now``, if this is the first), so the keeper
        is told how long it lasted (referee.engine.watch)."""
        notes = [self.aside.read() if self.aside else None]  # a note there: no pass went through since
        try:
            last_pass = json.loads(self.engine.store.get_meta("last_pass") or "null")
            known = json.loads(self.engine.store.get_meta("last_fault") or "null")
        except StorageFault:  # games.db cannot even be read: what is beside it says what it can
            last_pass = known = None
        if known and (not last_pass or known["at"] > last_pass["at"]):
            notes.append(known)
        return min([now, *(note.get("since", note["at"]) for note in notes if note)])

    def _settle_aside(self) -> None:
        """A fault kept beside games.db goes into it, now that it takes writes
        (unless games.db has a newer one)."""
        note = self.aside and self.aside.read()
        if not note:
            return
        store = self.engine.store
        known = json.loads(store.get_meta("last_fault") or "null")
        if not known or note["at"] > known["at"]:
            store.set_meta("last_fault", json.dumps(note))

    async def _pass(self) -> Report:
        # What another process commits from now on wakes the daemon's next
        # wait (_changed_elsewhere); this pass sees what came before.
        self._version = self.engine.store.data_version()
        if self.source:
            await self.handle_again()
        report = Report(done=self.engine.guard_outage())
        self.caught_up = report.done  # receive() adds what it did between mails
        unreachable: SourceError | SmtpUnreachable | None = None
        feed = Feed()
        sending = asyncio.ensure_future(self._send(report, feed))
        try:
            if self.source:
                report.received = await self.receive(self.source, feed)
        except SourceError as error:
            unreachable = error
        except BaseException:  # stopped, or a storage fault: the sending stops too
            feed.close()
            await cancel_and_wait(sending)
            raise
        feed.close()
        undelivered = await sending
        # Deadlines and closes up to the second before the inbox was looked
        # at: mail the server received by then has been read (R8), so the
        # phase it came for is still open to it.  Later ones wait for the
        # next pass, which looks first.
        with self.engine.clock.at(self._looked if self.source and not unreachable else self.engine.clock.real()):
            report.done += self.engine.tick()
        if undelivered is None:
            undelivered = await self._send(report)
        if self.site:
            self.site.refresh()  # only the games that changed: cheap when nothing did
        if not (unreachable or undelivered):
            self._settle_aside()
            self.engine.store.set_meta(
                "last_pass",
                json.dumps({"at": iso(self.engine.clock()), "received": report.received, "sent": report.mail.sent}),
            )
        self.engine.store.sync()  # the sent marks, what the tick did, and the note
        if self.aside and not (unreachable or undelivered):
            self.aside.clear()  # in games.db now
        if not (unreachable or undelivered) and self.engine.tell_keepers():
            # The keepers' mail goes now, not a pass later (the drain makes
            # it durable first); if the server went away meanwhile, the next
            # pass sends it.
            await self._send(report)
            self.engine.store.sync()  # its sent marks
        if faults := [fault for fault in (unreachable, undelivered) if fault]:
            raise next((fault for fault in faults if isinstance(fault, WrongSettings)), faults[0])  # the keeper's first
        return report

    async def _send(self, report: Report, feed: Feed | None = None) -> SmtpUnreachable | None:
        """Send what is queued (and, with ``feed``, what is queued meanwhile),
        adding to the report; the error if the server cannot be reached (the
        mail stays queued)."""
        if not self.sender:
            return None
        try:
            drained = await self.sender.drain(feed)
        except SmtpUnreachable as error:
            return error
        report.mail = Drained(
            report.mail.sent + drained.sent,
            report.mail.deferred + drained.deferred,
            report.mail.failed + drained.failed,
        )
        return None

    async def receive(self, source: Source, feed: Feed | None = None) -> int:
        """Ingest every new message of ``source`` (the runner's), each in its
        own transaction, a batch at a time (``batches``: bounded in count and
        in bytes, so memory does not grow with the backlog), and file each
        batch once its effects are on disk (quarantine those that could not
        be handled, or read).  With ``feed``, the sender sends what each
        message queued while the next is read.  Returns how many were taken.

        In the order the server received them (its UIDs almost always are):
        a change of mind counts after the move it changes.  The inbox is
        listed first (WINDOW messages at a time: their sizes and receipt
        times, none read), sorted, and read in that order.

        A crash before a batch is filed leaves it in place: the next pass
        sees each message handled as a duplicate, and files it.  A pass that
        runs out of memory files what it finished first.

        No mail can stop the referee for good by ending every pass that
        reads it (running it out of memory, say, or into a bug, or taking so
        long that it is killed).  Each batch is marked in games.db while it
        is read and handled (``_mark``), and the mark goes once the batch is
        done, or the pass stopped by a signal or a fault of games.db or the
        disk, none of them its mail's doing.  A pass that finds a mark left
        reads that batch's mail one message at a time, each marked alone; a
        mail alone in flight when passes ended is quarantined unread
        (``_set_aside``) after GIVE_UP_FAILED ends the pass saw (out of
        memory, an error of no known kind) or GIVE_UP_ENDED it did not (a
        kill: ``kill -9`` and the kernel's OOM killer look alike; or the mail
        server failing as it was read), so a kill -9 now and then costs no
        mail its turn.  The mail before it in its batch is handled, and the
        mail after it is read as usual once it is gone."""
        self._looked = _second_before(self.engine.clock.real())
        self._queued_before = self.engine.store.mails_queued  # (see _ingest_some)
        store, max_size = self.engine.store, self.engine.config.max_message_size
        stale = self._stale(source)  # ref -> its tally: the mail of a batch a pass did not finish
        taken = 0
        due = self._due_of_all()
        listed: set[str] = set()
        while True:
            waiting = sorted(await source.waiting(WINDOW), key=lambda message: message.received_at)
            for batch in batches(waiting, max_size, alone=set(stale)):
                tally = stale.get(batch[0].ref) if len(batch) == 1 else None
                if tally is not None and (tally.failed >= GIVE_UP_FAILED or tally.ended >= GIVE_UP_ENDED):
                    await self._set_aside(source, batch[0], tally)
                    taken += 1
                    continue
                taken, due = await self._batch(source, batch, tally, taken, due, feed)
            if len(waiting) < WINDOW or listed.issuperset(message.ref for message in waiting):
                break  # all of it, or (a source that did not file them) nothing new to look at
            listed = {message.ref for message in waiting}
        if store.get_meta(IN_FLIGHT) is not None:
            store.delete_meta(IN_FLIGHT)  # a mark of a batch none of which was waiting any more
        return taken

    async def _batch(
        self,
        source: Source,
        batch: list[Waiting],
        tally: Tally | None,
        taken: int,
        due: datetime | None,
        feed: Feed | None,
    ) -> tuple[int, datetime | None]:
        """Read, ingest and file one batch (with ``tally``, one mail read
        alone); what ``receive`` counts and the next moment due, as they are
        after it."""
        store = self.engine.store
        self._mark(source, batch, tally)
        finished: list[Received] = []
        failed: list[Received] = []
        try:
            read = await source.read(batch)
            # Several messages in one transaction (``_ingest_some``; Store.batch:
            # each message in a savepoint of its own).  The drain has its turn
            # only between them, so it never sees a row not yet committed, and
            # it flushes before it hands a mail over (durable before sent).  A
            # StorageFault stops the loop and files nothing: the messages of
            # its transaction are rolled back, those before are committed, and
            # the next pass knows them.
            handled, most = 0, 1
            while handled < len(read.messages):
                with store.batch():
                    handled, due = self._ingest_some(read.messages, handled, most, due, finished, failed, feed)
                most = min(2 * most, MESSAGES_A_COMMIT)
                if feed:
                    feed.added()
                    await asyncio.sleep(0)  # the drain's turn: it marks what was sent, hands what was queued on
                    while feed.ahead(store.mails_queued - self._queued_before):
                        await feed.progressed()
            for unread in read.unreadable:
                self.engine.set_aside(f"unread:{source.name}:{unread.ref}", unread.received_at, "could not be read")
        except BaseException as error:
            await self._cut_short(source, error, finished, failed)
            raise
        store.delete_meta(IN_FLIGHT)
        store.sync()  # on disk before the server lets go of them
        await source.done(finished)
        await source.done([*failed, *read.unreadable], quarantine=True)
        return taken + len(read.messages) + len(read.unreadable), due

    def _ingest_some(
        self,
        messages: list[Received],
        start: int,
        most: int,
        due: datetime | None,
        finished: list[Received],
        failed: list[Received],
        feed: Feed | None,
    ) -> tuple[int, datetime | None]:
        """Handle ``messages`` from ``start`` on, in the caller's transaction:
        ``most`` of them (the runner starts a batch with one, so its first
        mail goes out at once, and doubles it up to MESSAGES_A_COMMIT) or,
        with a sender fed, fewer once the pass has queued another half
        batch of mail for it; and fewer once SECONDS_A_COMMIT have gone
        (the write lock is held the while).  The drain hands the wire a batch
        (smtp.SEND_BATCH) at its turn, if the wire has none in hand, and has
        its turns only between transactions: a turn for every half batch
        queued lets it catch up after a turn that found the wire busy (a
        turn a whole batch held back 15% of a backlog's mail until the
        reading was over, 6% with a commit a message).  Where to go on
        from, and the next moment due."""
        store, index = self.engine.store, start
        half = max(1, smtp.SEND_BATCH // 2)
        halves_queued = (store.mails_queued - self._queued_before) // half
        ends = time.monotonic() + SECONDS_A_COMMIT
        while index < len(messages) and index - start < most:
            due = self._ingest(messages[index], due, finished, failed)
            index += 1
            if feed and self.sender and (store.mails_queued - self._queued_before) // half > halves_queued:
                break
            if time.monotonic() > ends:
                break
        return index, due

    def _ingest(
        self, message: Received, due: datetime | None, finished: list[Received], failed: list[Received]
    ) -> datetime | None:
        """Handle one message of a batch, adding it to ``finished`` or
        ``failed``; the next moment due after it."""
        # What fell due before the mail came is done first, as of its own
        # time: the mail meets the game as it was when the server got it
        # (as when it is handled again after a restore).
        if due is not None and due < message.received_at:
            self.caught_up += self.engine.catch_up(message.received_at)
            due = self._due_of_all()
        outcome = self.engine.ingest(message.raw, received_at=message.received_at, size=message.size)
        (failed if outcome.code == OutcomeCode.FAILED else finished).append(message)
        if outcome.keeper:  # a keeper's commands may move any game's moments, or make a game
            return self._due_of_all()
        if outcome.game_id is None:
            return due
        # A player's message changes its own game's moments only.  Unless
        # nothing next_due reads was written since ``due`` was known to be no
        # later than each of them (a move that completes nothing, after
        # another): not since the message began, as a keeper's command in
        # another process, or a mail of no game, may have changed them before.
        stamp = self.engine.due_stamp()
        if stamp in (self._due_known.get(outcome.game_id), self._due_known.get(None)):
            return due
        self._due_known[outcome.game_id] = stamp
        return min((*self.engine.next_due(outcome.game_id), *([due] if due else [])), default=None)

    def _due_of_all(self) -> datetime | None:
        """The next moment due of every game, known as of the due stamp now."""
        due = min(self.engine.next_due(), default=None)
        self._due_known = {None: self.engine.due_stamp()}
        return due

    def _mark(self, source: Source, batch: list[Waiting], tally: Tally | None) -> None:
        """Note the batch about to be read (committed, not flushed: a crash
        of the process loses no commit), and, of a mail read alone, its tally."""
        mark = {"source": source.name, "refs": [message.ref for message in batch], "alone": tally is not None}
        mark |= {"failed": tally.failed, "ended": tally.ended, "seen": False} if tally else {}
        self.engine.store.set_meta(IN_FLIGHT, json.dumps(mark))

    def _stale(self, source: Source) -> dict[str, Tally]:
        """The mail of the batch a pass did not finish (its mark is still
        there), each with its tally; a mail read alone counts the end of
        that pass, if the pass did not see it (``_cut_short`` counts those it saw)."""
        mark = json.loads(self.engine.store.get_meta(IN_FLIGHT) or "null")
        if not mark or mark["source"] != source.name:
            return {}
        if not mark["alone"]:
            log.warning("the last pass ended in a batch of %d mail(s): read one at a time now", len(mark["refs"]))
            return {ref: Tally(0, 0) for ref in mark["refs"]}
        tally = Tally(mark["failed"], mark["ended"] + (not mark["seen"]))
        log.warning("%s: the last pass ended as it read mail %s alone (%s)", source.name, mark["refs"][0], tally)
        return {mark["refs"][0]: tally}

    async def _set_aside(self, source: Source, message: Waiting, tally: Tally) -> None:
        """Quarantine unread a mail that ended too many passes (see receive)."""
        log.warning(
            "%s: mail %s (%d bytes) was read alone when passes ended (%s): quarantined unread",
            source.name,
            message.ref,
            message.size,
            tally,
        )
        self.engine.set_aside(f"unread:{source.name}:{message.ref}", message.received_at, f"passes ended: {tally}")
        self.engine.store.delete_meta(IN_FLIGHT)
        self.engine.store.sync()
        await source.done([message], quarantine=True)

    async def _cut_short(
        self, source: Source, error: BaseException, finished: list[Received], failed: list[Received]
    ) -> None:
        """A batch cut short by ``error``.  A stop, or a fault of games.db or
        the disk, is none of its mail's doing: its mark goes.  A mail server
        that failed as it read the batch, or an interrupt, may be: the mark
        stays, as a kill leaves it.  Out of memory, or an error of no known
        kind: the mark stays, counting it (of a mail read alone), and what
        was finished is filed, if games.db and the server take it."""
        store = self.engine.store
        if isinstance(error, (asyncio.CancelledError, Stopped)) or (
            _a_fault(error) and not isinstance(error, SourceError)
        ):
            with suppress(StorageFault):
                store.delete_meta(IN_FLIGHT)
            return
        if isinstance(error, SourceError) or not isinstance(error, Exception):
            return
        traceback.clear_frames(error.__traceback__)  # the batch's mail, held by the frames it went through
        try:
            mark = json.loads(store.get_meta(IN_FLIGHT) or "null")
            if mark and mark["alone"] and not mark["seen"]:
                store.set_meta(IN_FLIGHT, json.dumps(mark | {"failed": mark["failed"] + 1, "seen": True}))
            store.sync()
            await source.done(finished)
            await source.done(failed, quarantine=True)
        except (StorageFault, SourceError, OSError) as fault:  # the next pass files them
            log.debug("could not file what the pass finished: %s", fault)

    async def handle_again(self) -> int:
        """After `referee restore`, before any other mail: the mail the
        referee had handled since the backup was made, read again from the
        processed folder and handled again in the order the server received
        it, each as of its receipt time, with what fell due in between done
        as of its own time (Engine.catch_up); then what fell due until the
        referee last ran (the games.db replaced says when, or the keeper).
        So every move counts again and every phase resolves as before.  A
        mail this makes that the games.db replaced had sent is kept as
        "restored", not sent again; if that games.db cannot be read, every
        one is taken as sent.  The people playing the games this changed get
        one short notice.  Mail the backup knows is a duplicate, skipped.
        Safe to stop at any point: the next run takes it up again.  Returns
        how many messages were handled again."""
        engine, store = self.engine, self.engine.store
        restore = json.loads(store.get_meta("restored") or "null")
        if restore is None or self.source is None:
            return 0
        since = from_iso(restore["since"]) if restore["since"] else None
        messages = sorted(await self.source.handled(since), key=lambda message: message.received_at)
        again = 0
        with engine.restoring(_sent_before(restore["replaced"], restore["since"])):
            for batch in batches(messages, engine.config.max_message_size):  # a batch read at a time
                read = await self.source.read(batch, handled=True)
                for message in read.messages:
                    engine.catch_up(message.received_at)
                    outcome = engine.ingest(message.raw, received_at=message.received_at, size=message.size)
                    again += outcome.code != OutcomeCode.DUPLICATE
                for unread in read.unreadable:  # filed already: the keeper may look at it there
                    log.warning("%s: handled mail %s could not be read again", self.source.name, unread.ref)
            ran = [from_iso(restore["ran_until"])] if restore["ran_until"] else []
            until = max([*ran, *(message.received_at for message in messages)], default=None)
            if until is not None:
                engine.catch_up(until + timedelta(seconds=1))  # what fell due in its very second too
        changed = [
            game["id"]
            for game in store.games()
            if restore["games"].get(str(game["id"])) != [len(store.phases(game["id"])), len(store.moves(game["id"]))]
        ]
        with store.transaction():
            if until is not None:  # the referee ran until then: no outage before it
                store.set_meta("last_tick", max(iso(until), store.get_meta("last_tick") or ""))
            told = engine.announce_restore(changed, restore["since"], again)
            store.delete_meta("restored")
        store.sync()
        log.warning(
            "after the restore from %s: %d mail(s) of the %d filed since %s handled again, deadlines "
            "done until %s; %d game(s) changed, %d player(s) told",
            restore["backup"],
            again,
            len(messages),
            restore["since"] or "the start",
            iso(until) if until else "the backup",
            len(changed),
            told,
        )
        return again

    async def close(self) -> None:
        if self.source:
            await self.source.close()

    async def serve(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set, which stops a pass at once (see
        until_stopped).  A fault is one line in the log, and is waited out:
        1, 2, 4 ... seconds, at most LONGEST_BACKOFF."""
        backoff = 1.0
        try:
            while not stop.is_set():
                try:
                    await until_stopped(self.once(), stop)
                    backoff = 1.0
                except (StorageFault, OSError, MemoryError) as error:
                    if not (_a_fault(error) or isinstance(error, MemoryError)):
                        raise
                    needs_keeper = not isinstance(error, ConnectionError) or isinstance(error, WrongSettings)
                    level = logging.ERROR if needs_keeper else logging.WARNING
                    log.log(level, "%s; trying again in %.0f s", fault_text(error), backoff)
                    await self._nap(backoff, stop)
                    backoff = min(backoff * 2, LONGEST_BACKOFF)
                    continue
                await self._wait(self.seconds_to_next_work(), stop)
        finally:
            await self.close()

    def seconds_to_next_work(self) -> float:
        """Until the next deadline, settle window, reminder or mail retry, or
        the heartbeat that keeps the outage guard from seeing an outage."""
        now = self.engine.clock()
        gap = self.engine.config.outage_gap
        heartbeat = min(HEARTBEAT, gap / 2) if gap else HEARTBEAT
        # A deadline is done by the first pass that looks at the inbox after its second.
        moments = [now + heartbeat, *(moment + timedelta(seconds=1) for moment in self.engine.next_due())]
        for mail in self.engine.store.outbox(MailState.QUEUED) if self.sender else []:
            moments.append(from_iso(mail["next_try_at"]) if mail["next_try_at"] else now)
        return max(0.0, (min(moments) - now).total_seconds())

    async def _wait(self, seconds: float, stop: asyncio.Event) -> None:
        """Until mail may have come, ``seconds`` pass, another process
        commits to games.db, or ``stop`` is set."""
        if seconds <= 0 or stop.is_set() or self._changed_elsewhere():
            return
        waiting: asyncio.Future[bool | None]  # (IMAP's wait says whether mail may have come)
        if isinstance(self.source, ImapSource):
            waiting = asyncio.ensure_future(self.source.wait_for_mail(seconds))
        else:
            waiting = asyncio.ensure_future(asyncio.sleep(min(seconds, self.poll_interval)))
        stopping = asyncio.ensure_future(stop.wait())
        woken = asyncio.ensure_future(self._until_changed_elsewhere())
        try:
            await asyncio.wait({waiting, stopping, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (waiting, stopping, woken):
                task.cancel()
                with suppress(asyncio.CancelledError, SourceError):
                    await task
        if waiting.done() and not waiting.cancelled() and waiting.exception():
            # IDLE itself failed: wait as a poller would, not pass after pass.
            log.warning("%s; polling instead", waiting.exception())
            await self._nap(min(seconds, self.poll_interval), stop)

    async def _nap(self, seconds: float, stop: asyncio.Event) -> None:
        """``seconds`` (a fault's backoff, a poll's interval), or until
        ``stop`` is set or another process commits to games.db: a keeper's
        command is acted on within a second even while a server is down."""
        napping = asyncio.ensure_future(_sleep(seconds, stop))
        woken = asyncio.ensure_future(self._until_changed_elsewhere(fault=False))
        try:
            await asyncio.wait({napping, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (napping, woken):
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task

    def _changed_elsewhere(self, fault: bool = True) -> bool:
        """Whether another process has committed to games.db since the last
        pass began: a keeper's command that queued mail or changed a game
        (`referee new`, `resign`, `ingest`, or any command to come), which
        the daemon then acts on at once, not at its next deadline."""
        try:
            return self.engine.store.data_version() != self._version
        except StorageFault:
            # a change for a wait: the next pass meets the fault, and says
            # so; not for a fault's backoff (``fault`` False), which it is
            return fault

    async def _until_changed_elsewhere(self, fault: bool = True) -> None:
        """Return once another process has committed to games.db, looking
        every WAKE_POLL seconds (a look costs microseconds: no CPU to speak of)."""
        while not self._changed_elsewhere(fault):
            await asyncio.sleep(WAKE_POLL)
        log.info("games.db changed outside the daemon (a keeper's command): a pass now")


def batches(waiting: list[Waiting], max_size: int, alone: Set[str] = frozenset()) -> Iterator[list[Waiting]]:
    """``waiting``, in its order, cut into the batches read at once: at most
    BATCH_MAIL messages and BATCH_BYTES of mail read (a message over
    ``max_size`` costs its EXCERPT), a message larger than that alone, and
    alone too each of ``alone``.  So a batch holds at most
    max(BATCH_BYTES, max_size + 1) bytes of mail, however much is waiting."""
    batch: list[Waiting] = []
    held = 0
    for message in waiting:
        cost = EXCERPT if oversized(message, max_size) else min(message.size, max_size + 1)
        single = message.ref in alone
        if batch and (single or len(batch) >= BATCH_MAIL or held + cost > BATCH_BYTES):
            yield batch
            batch, held = [], 0
        batch.append(message)
        held += cost
        if single:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


def _second_before(moment: datetime) -> datetime:
    """The last moment of the second before ``moment``'s: receipt times are
    whole seconds, so mail received in ``moment``'s own second may not be
    in the inbox yet."""
    return moment.replace(microsecond=0) - timedelta(microseconds=1)


def _sent_before(replaced: str | None, since: str | None) -> Callable[[str], bool]:
    """Whether the games.db a restore replaced had sent a mail, by its
    Message-ID; when it cannot be read, every mail is taken as sent (the
    players' one notice says to ask again for an answer that never came)."""
    if replaced is None:
        return lambda message_id: True
    try:
        sent = Snapshot(replaced).sent_since(iso(from_iso(since) - timedelta(days=2)) if since else "")
    except Unreadable as error:
        log.warning("cannot read %s (%s): every mail made again is taken as sent", replaced, error)
        return lambda message_id: True
    return sent.__contains__


async def _sleep(seconds: float, stop: asyncio.Event) -> None:
    with suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
