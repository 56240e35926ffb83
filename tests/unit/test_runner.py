"""The runner's pass and timers, with a real Maildir source and the fake clock."""

import asyncio
import os
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from conftest import PLAYERS, reply

from referee.config import MaildirSettings
from referee.engine import Engine
from referee.mail.source import Read, Received, SourceError, Waiting
from referee.runner import HEARTBEAT, Runner
from referee.store import Store

ALICE, BOB, CAROL = PLAYERS


@pytest.fixture
def maildir(tmp_path):
    box = tmp_path / "Maildir"
    for sub in ("new", "cur", "tmp"):
        (box / sub).mkdir(parents=True)
    return box


def deliver(box, raw: bytes, at) -> None:
    """As a delivery agent would: the file name starts with the delivery time."""
    name = f"{int(at.timestamp())}.M0P{os.getpid()}Q{len(list((box / 'new').iterdir()))}.test"
    (box / "tmp" / name).write_bytes(raw)
    os.rename(box / "tmp" / name, box / "new" / name)


def make_runner(config, clock, maildir, **changes) -> tuple[Engine, Runner]:
    config = replace(config, maildir=MaildirSettings(maildir), **changes)
    engine = Engine(Store(config.database), config, clock)
    return engine, Runner.from_config(config, engine)


def test_a_bid_received_during_an_outage_after_the_deadline_counts(config, clock, maildir):
    engine, runner = make_runner(config, clock, maildir, outage_gap=timedelta(hours=6))
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=1))
    asyncio.run(runner.once())  # the referee ran once, then was down for 10 hours
    start = clock()
    clock.advance(hours=10)
    deliver(maildir, reply(engine, ALICE, "bid 7"), start + timedelta(hours=5))  # after the deadline
    report = asyncio.run(runner.once())
    assert report.received == 1 and report.done[0].startswith("extended game 1")
    assert engine.store.messages()[0]["code"] == "move"  # not refused as late
    assert engine.status(1)["phase"]["waiting_for"] == [BOB, CAROL]


def test_deadlines_are_enforced_even_when_the_mail_source_is_down(config, clock, tmp_path):
    engine, runner = make_runner(config, clock, tmp_path / "no-such-maildir")
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=1))
    clock.advance(hours=2)
    with pytest.raises(SourceError):
        asyncio.run(runner.once())
    assert engine.status(1)["phase"]["number"] == 2  # round 1 was still resolved


def test_without_smtp_queued_mail_does_not_make_the_daemon_spin(config, clock, maildir):
    engine, runner = make_runner(config, clock, maildir)
    engine.new_game("pure-skill", PLAYERS)  # queues mail that nobody can send
    assert runner.sender is None and engine.store.outbox()
    assert runner.seconds_to_next_work() == HEARTBEAT.total_seconds()


def test_the_heartbeat_is_well_inside_the_outage_gap(config, clock, maildir):
    _engine, runner = make_runner(config, clock, maildir, outage_gap=timedelta(minutes=10))
    assert runner.seconds_to_next_work() == 300  # half the gap: never mistaken for an outage


def test_the_daemon_wakes_for_the_next_deadline(config, clock, maildir):
    engine, runner = make_runner(config, clock, maildir)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(minutes=3))
    assert runner.seconds_to_next_work() == 181  # the first pass to look at the inbox after its second


def test_the_daemon_stops_when_told(config, clock, maildir):
    _engine, runner = make_runner(config, clock, maildir)

    async def serve_then_stop():
        stop = asyncio.Event()
        serving = asyncio.ensure_future(runner.serve(stop))
        await asyncio.sleep(0.1)
        stop.set()
        await asyncio.wait_for(serving, 2)

    asyncio.run(serve_then_stop())


def test_a_commit_by_another_process_wakes_the_waiting_daemon(config, clock, maildir, monkeypatch):
    """A keeper's `referee new` (another connection to games.db) ends the
    daemon's wait at its next look, not at the heartbeat; the daemon's own
    writes do not wake it."""
    monkeypatch.setattr("referee.runner.WAKE_POLL", 0.01)
    engine, runner = make_runner(config, clock, maildir)
    runner.poll_interval = 3600  # only the wake can end a wait before the test's own timeout
    passes: list[int] = []
    pass_done = asyncio.Event()
    once = runner.once

    async def counted_once():
        report = await once()
        passes.append(len(engine.store.games()))
        pass_done.set()
        return report

    runner.once = counted_once  # type: ignore[method-assign]

    async def serve_then_keeper_command():
        stop = asyncio.Event()
        serving = asyncio.ensure_future(runner.serve(stop))
        await asyncio.wait_for(pass_done.wait(), 5)
        await asyncio.sleep(0.05)  # several looks: the daemon's own pass did not wake it
        assert passes == [0]
        pass_done.clear()
        keeper = Engine(Store(config.database), config, clock)  # the keeper's command, its own connection
        keeper.new_game("pure-skill", PLAYERS)
        await asyncio.wait_for(pass_done.wait(), 5)
        stop.set()
        await asyncio.wait_for(serving, 5)

    asyncio.run(serve_then_keeper_command())
    assert passes == [0, 1]


def test_each_pass_updates_the_site_when_there_is_a_site_dir(config, clock, maildir, tmp_path):
    site = tmp_path / "site"
    engine, runner = make_runner(config, clock, maildir, site_dir=site)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=1))
    asyncio.run(runner.once())
    page = site / "games" / "1" / "index.html"
    assert "Moved: nobody yet" in page.read_text()
    written = page.stat().st_mtime_ns
    asyncio.run(runner.once())  # nothing changed: the page is not written again
    assert page.stat().st_mtime_ns == written
    deliver(maildir, reply(engine, ALICE, "bid 7"), clock())
    asyncio.run(runner.once())
    assert "Moved: alice. Still to move: bob, carol." in page.read_text()


def test_without_a_site_dir_no_site_is_written(config, clock, maildir, tmp_path):
    engine, runner = make_runner(config, clock, maildir)
    engine.new_game("pure-skill", PLAYERS)
    asyncio.run(runner.once())
    assert runner.site is None and not (tmp_path / "site").exists()


class RecordingSender:
    """Stands in for the SMTP sender: records, for each drain, what it found
    queued (and, fed, went on finding until the feed closed)."""

    def __init__(self, engine, fail=False):
        self.engine, self.fail, self.drains = engine, fail, []

    async def drain(self, feed=None):
        from referee.mail.smtp import Drained, SmtpUnreachable

        if self.fail:
            raise SmtpUnreachable("no server")
        subjects = []
        self.drains.append(subjects)
        while True:
            queued = self.engine.store.outbox("queued")
            for mail in queued:
                subjects.append(mail["subject"])
                self.engine.store.mark_sent([mail["id"]], "2026-11-21T12:00:00Z")
            if not queued and (feed is None or feed.closed):
                return Drained(sent=len(subjects))
            if not queued:
                feed.more.clear()
                await feed.more.wait()


def test_a_receipt_goes_out_before_the_pass_works_on_deadlines(config, clock, maildir):
    """A bid's receipt is sent before the tick resolves other games' deadlines."""
    engine, runner = make_runner(config, clock, maildir)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=1))
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    runner.sender = RecordingSender(engine)
    asyncio.run(runner.once())
    # alice bid in game 2 before game 1's deadline; the referee reads it after
    deliver(maildir, reply(engine, ALICE, "bid 7", game=2), clock() + timedelta(minutes=50))
    clock.advance(hours=2)
    report = asyncio.run(runner.once())
    receipts, results = runner.sender.drains[-2:]
    assert any(s.startswith("Re: [pure-skill-2") for s in receipts)
    assert not any("[pure-skill-1" in s for s in receipts)  # game 1's round comes after
    assert any("[pure-skill-1" in s for s in results)
    assert report.mail.sent == len(receipts) + len(results)


def test_without_smtp_deadlines_are_still_enforced_and_the_error_raised(config, clock, maildir):
    from referee.mail.smtp import SmtpUnreachable

    engine, runner = make_runner(config, clock, maildir)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=1))
    runner.sender = RecordingSender(engine, fail=True)
    clock.advance(hours=2)
    with pytest.raises(SmtpUnreachable):
        asyncio.run(runner.once())
    assert engine.status(1)["phase"]["number"] == 2


def test_messages_are_filed_away_only_once_their_effects_are_flushed_to_disk(config, clock, maildir):
    """Commits skip the fsync (synchronous=NORMAL); the runner flushes the
    journal once before the mail source lets go of what it ingested, so a
    power cut cannot lose a move whose mail is gone from the inbox."""
    engine, runner = make_runner(config, clock, maildir)
    engine.new_game("pure-skill", PLAYERS)
    asyncio.run(runner.once())
    assert not engine.store.unsynced  # the pass ends flushed
    deliver(maildir, reply(engine, ALICE, "bid 7"), clock())
    deliver(maildir, reply(engine, BOB, "bid 3"), clock())
    filed_unsynced = []
    done = runner.source.done

    async def watching_done(messages, quarantine=False):
        filed_unsynced.append(engine.store.unsynced)
        await done(messages, quarantine)

    runner.source.done = watching_done
    report = asyncio.run(runner.once())
    assert report.received == 2 and engine.status(1)["phase"]["waiting_for"] == [CAROL]
    assert filed_unsynced and not any(filed_unsynced)
    assert engine.store.db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL between syncs


def test_a_messages_receipt_goes_out_while_the_next_messages_are_read(config, clock, maildir):
    """The sender works while the runner reads on: the receipt of the first
    of three bids is sent before the third bid is read (the SMTP server's
    work overlaps the referee's), and every receipt is sent by the pass."""
    engine, runner = make_runner(config, clock, maildir)
    for _ in range(3):
        engine.new_game("pure-skill", PLAYERS)
    runner.sender = RecordingSender(engine)
    asyncio.run(runner.once())
    for game in (1, 2, 3):
        deliver(maildir, reply(engine, ALICE, "bid 7", game=game), clock())
    events = []
    ingest, mark_sent = engine.ingest, engine.store.mark_sent

    def logged_ingest(raw, **kwargs):
        events.append("read")
        return ingest(raw, **kwargs)

    def logged_mark(mail_id, at):
        events.append("sent")
        mark_sent(mail_id, at)

    engine.ingest, engine.store.mark_sent = logged_ingest, logged_mark
    report = asyncio.run(runner.once())
    assert report.received == 3 and report.mail.sent == 3
    assert events.index("sent") < len(events) - 1 - events[::-1].index("read")  # a receipt before the last read


def test_the_daemon_logs_settings_a_server_refused_as_an_error_and_a_server_away_as_a_warning(
    config, clock, maildir, caplog
):
    """A wrong password needs the keeper (ERROR); a server away does not (WARNING)."""
    import logging

    from referee.mail.source import SourceRefused

    _engine, runner = make_runner(config, clock, maildir)
    levels = {}
    for fault in (SourceRefused("imap: LOGIN refused: [AUTHENTICATIONFAILED]"), SourceError("imap: cannot connect")):

        async def waiting(limit, fault=fault):
            raise fault

        runner.source.waiting = waiting

        async def serve_until_logged() -> None:
            stop = asyncio.Event()
            handler = logging.Handler(logging.WARNING)
            handler.emit = lambda record: stop.set()  # type: ignore[method-assign]
            logging.getLogger("referee").addHandler(handler)
            try:
                await asyncio.wait_for(runner.serve(stop), 10)
            finally:
                logging.getLogger("referee").removeHandler(handler)

        caplog.clear()
        asyncio.run(serve_until_logged())
        [record] = [r for r in caplog.records if r.levelno >= logging.WARNING]
        levels[type(fault).__name__] = record.levelname
    assert levels == {"SourceRefused": "ERROR", "SourceError": "WARNING"}


class Numbered:
    """An IMAP INBOX as the runner sees it (the Source protocol): each mail
    with its UID and its INTERNALDATE, which need not rise with the UID."""

    name = "numbered"
    max_size = None

    def __init__(self, mail: list[tuple[bytes, datetime]]):
        self.mail = [Received(str(uid), raw, at) for uid, (raw, at) in enumerate(mail, 1)]

    async def waiting(self, limit: int) -> list[Waiting]:
        return [Waiting(m.ref, m.received_at, len(m.raw)) for m in self.mail][:limit]

    async def read(self, messages, handled=False) -> Read:
        kept = {m.ref: m for m in self.mail}
        return Read([kept[m.ref] for m in messages if m.ref in kept], [])  # in the batch's order

    async def done(self, messages, quarantine=False) -> None:
        refs = {m.ref for m in messages}
        self.mail = [m for m in self.mail if m.ref not in refs]

    async def handled(self, since) -> list[Waiting]:
        return []

    async def close(self) -> None:
        pass


def test_a_pass_reads_in_receipt_order_so_a_bid_numbered_after_the_closing_one_but_received_before_counts(
    config, clock
):
    """Dovecot numbers mail out of delivery order now and then.  Bob's two
    bids came in the same second, Carol's closing bid a second later, but
    the server numbered Carol's before Bob's first.  Read in one pass,
    Bob's first bid came in time (pure-skill.md R7, R8), and of his two
    bids in one second the one numbered last counts (design.md, "Time")."""
    engine = Engine(Store(config.database), config, clock)
    engine.new_game("pure-skill", PLAYERS)
    second, next_second = clock() + timedelta(minutes=5), clock() + timedelta(minutes=5, seconds=1)
    clock.advance(minutes=10)
    inbox = Numbered(
        [
            (reply(engine, ALICE, "bid 4"), second),
            (reply(engine, BOB, "bid 10"), second),  # his change of mind, numbered first
            (reply(engine, CAROL, "bid 6"), next_second),  # the bid that closes the round
            (reply(engine, BOB, "bid 2"), second),  # his first bid, numbered last
        ]
    )
    report = asyncio.run(Runner(engine, inbox, None).once())
    assert report.received == 4 and not inbox.mail
    moves = [(move["seat"], move["move"]) for move in engine.store.moves(1, 1)]
    assert moves == [(0, "bid 4"), (1, "bid 10"), (1, "bid 2"), (2, "bid 6")]  # in the order they count
    assert {seat: move["move"] for seat, move in engine.store.final_moves(1, 1).items()} == {
        0: "bid 4",
        1: "bid 2",
        2: "bid 6",
    }
    assert engine.status(1)["phase"]["number"] == 2  # round 1 resolved with those bids


def test_a_stop_lets_the_mail_in_hand_be_taken_and_marked_sent(monkeypatch):
    """A stop cancels the sender while the SMTP server is taking a mail: the
    sender waits for the server's answer (STOP_GRACE at most) and marks the
    mail sent, so the next run does not send it again; then it stops."""
    from referee.mail import smtp

    async def stop_while_sending(grace: float) -> list[str]:
        monkeypatch.setattr(smtp, "STOP_GRACE", grace)
        taken, done = asyncio.Event(), []

        async def send() -> None:  # _send: the server's answer, then the sent mark
            await taken.wait()
            done.append("marked sent")

        sending = asyncio.ensure_future(smtp._finishing(send()))
        await asyncio.sleep(0)  # it is waiting for the server
        sending.cancel()
        await asyncio.sleep(0)
        sending.cancel()  # asked again, as runner._cancel does
        await asyncio.sleep(0)
        taken.set()  # the server answers
        with pytest.raises(asyncio.CancelledError):
            await sending
        return done

    assert asyncio.run(stop_while_sending(grace=10)) == ["marked sent"]
    assert asyncio.run(stop_while_sending(grace=0)) == []  # a server that never answers is not waited for
