"""The referee's main job: poll the mail source, ingest what came, enforce
deadlines, send the outbox.

``once`` is cron mode (``referee run --once``); ``serve`` is the daemon
(``referee serve``): it waits on IMAP IDLE (or polls), wakes for the next
deadline, settle window, reminder or mail retry, and stops cleanly on
SIGTERM or SIGINT.  Both hold a lock on the database, so two runs never
handle the same mail at once, and both are safe to kill at any moment: a
message is filed away on the server only after its effects are committed.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from referee.config import Config
from referee.engine import Engine
from referee.mail.imap import ImapSource
from referee.mail.maildir import MaildirSource
from referee.mail.smtp import Drained, Feed, SmtpSender, SmtpUnreachable
from referee.mail.source import Source, SourceError
from referee.site.render import Site
from referee.timeutil import from_iso

log = logging.getLogger("referee.runner")

HEARTBEAT = timedelta(minutes=20)  # the daemon ticks at least this often (outage guard)
MAILDIR_POLL = 5.0  # seconds between looks at a Maildir, which cannot push
LONGEST_BACKOFF = 300.0


class Busy(RuntimeError):
    """Another referee run holds the lock."""


@contextmanager
def run_lock(database: Path) -> Iterator[None]:
    """An exclusive lock beside the database, held for the whole run."""
    path = Path(f"{database}.lock")
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"another referee run holds {path}") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass
class Report:
    """What one pass did."""

    received: int = 0
    done: list[str] = field(default_factory=list)
    mail: Drained = field(default_factory=Drained)


def source_for(config: Config, engine: Engine) -> Source | None:
    if config.imap:
        return ImapSource(config.imap, engine.store)
    if config.maildir:
        m = config.maildir
        return MaildirSource(m.path, processed=m.processed, quarantine=m.quarantine)
    return None


class Runner:
    def __init__(self, engine: Engine, source: Source | None, sender: SmtpSender | None,
                 site: Site | None = None):  # fmt: skip
        self.engine, self.source, self.sender, self.site = engine, source, sender, site
        self.poll_interval = MAILDIR_POLL  # for sources that cannot push

    @classmethod
    def from_config(cls, config: Config, engine: Engine) -> Runner:
        sender = config.smtp and SmtpSender(config.smtp, config.address, engine.store, engine.clock)
        site = config.site_dir and Site(engine, config.site_dir, config.templates)
        return cls(engine, source_for(config, engine), sender, site)

    async def once(self) -> Report:
        """One pass: guard against an outage, receive, tick, and write the
        site (when there is a site_dir) for what changed.  What a message
        causes is sent while the next messages are read, and all of it
        before the tick, so a receipt waits on no deadline work; what the
        tick causes is sent after it.  If the mail source or the SMTP server
        cannot be reached, deadlines are still enforced and the site written;
        then the SourceError (or SmtpUnreachable) is raised."""
        report = Report(done=self.engine.guard_outage())
        unreachable: SourceError | SmtpUnreachable | None = None
        feed = Feed()
        sending = asyncio.ensure_future(self._send(report, feed))
        try:
            if self.source:
                report.received = await self.receive(feed)
        except SourceError as error:
            unreachable = error
        finally:
            feed.close()
            undelivered = await sending
        report.done += self.engine.tick()
        if undelivered is None:
            undelivered = await self._send(report)
        if self.site:
            self.site.refresh()  # only the games that changed: cheap when nothing did
        self.engine.store.sync()  # the sent marks, and what the tick did
        if unreachable or undelivered:
            raise unreachable or undelivered
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
        report.mail = Drained(report.mail.sent + drained.sent, report.mail.deferred + drained.deferred,
                              report.mail.failed + drained.failed)  # fmt: skip
        return None

    async def receive(self, feed: Feed | None = None) -> int:
        """Ingest every new message, each in its own transaction, then file
        them all (quarantine those that could not be handled).  With ``feed``,
        the sender sends what each message queued while the next is read.
        A crash before the filing leaves them in place: the next pass sees
        each as a duplicate, and files it."""
        messages = await self.source.fetch()
        failed = set()
        for message in messages:
            if self.engine.ingest(message.raw, received_at=message.received_at).code == "failed":
                failed.add(message.ref)
            if feed:
                feed.added()
                for _ in range(4):  # the sender's turn: a reply it waited for is read, its next command sent
                    await asyncio.sleep(0)
        self.engine.store.sync()  # on disk before the server lets go of them
        await self.source.done([m for m in messages if m.ref not in failed])
        await self.source.done([m for m in messages if m.ref in failed], quarantine=True)
        return len(messages)

    async def close(self) -> None:
        if self.source:
            await self.source.close()

    async def serve(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set.  Server outages are waited out with backoff."""
        backoff = 1.0
        while not stop.is_set():
            try:
                await self.once()
                backoff = 1.0
            except (SourceError, SmtpUnreachable) as error:
                log.warning("%s; trying again in %.0f s", error, backoff)
                await _sleep(backoff, stop)
                backoff = min(backoff * 2, LONGEST_BACKOFF)
                continue
            await self._wait(self.seconds_to_next_work(), stop)
        await self.close()

    def seconds_to_next_work(self) -> float:
        """Until the next deadline, settle window, reminder or mail retry, or
        the heartbeat that keeps the outage guard from seeing an outage."""
        now = self.engine.clock()
        gap = self.engine.config.outage_gap
        heartbeat = min(HEARTBEAT, gap / 2) if gap else HEARTBEAT
        moments = [now + heartbeat, *self.engine.next_due()]
        for mail in self.engine.store.outbox("queued") if self.sender else []:
            moments.append(from_iso(mail["next_try_at"]) if mail["next_try_at"] else now)
        return max(0.0, (min(moments) - now).total_seconds())

    async def _wait(self, seconds: float, stop: asyncio.Event) -> None:
        """Until mail may have come, ``seconds`` pass, or ``stop`` is set."""
        if seconds <= 0 or stop.is_set():
            return
        if isinstance(self.source, ImapSource):
            waiting = asyncio.ensure_future(self.source.wait_for_mail(seconds))
        else:
            waiting = asyncio.ensure_future(asyncio.sleep(min(seconds, self.poll_interval)))
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (waiting, stopping):
                task.cancel()
                with suppress(asyncio.CancelledError, SourceError):
                    await task
        if waiting.done() and not waiting.cancelled() and waiting.exception():
            # IDLE itself failed: wait as a poller would, not pass after pass.
            log.warning("%s; polling instead", waiting.exception())
            await _sleep(min(seconds, self.poll_interval), stop)


async def _sleep(seconds: float, stop: asyncio.Event) -> None:
    with suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
