"""The keeper is told (issue 32, item 6): what is wrong is the referee's
health (Reports.problems, what `referee status` heads its list with), and
the keepers get a mail when a problem comes, again each day it lasts, and
when it is fixed (referee.engine.watch)."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, dsn, last_id, mails, reply

from referee import limits
from referee import store as store_module
from referee.config import Config, MaildirSettings
from referee.engine import Engine
from referee.engine.keeping import SHELL
from referee.mail.smtp import Drained
from referee.mail.source import SourceError
from referee.runner import Runner
from referee.store import FaultAside, MailState, StorageFault, Store
from referee.timeutil import iso

ALICE, BOB, CAROL = PLAYERS


def maildir_runner(config: Config, clock, box: Path) -> tuple[Engine, Runner]:
    """An engine and its runner, reading a Maildir, with no SMTP server (mail stays queued)."""
    for sub in ("new", "cur", "tmp"):
        (box / sub).mkdir(parents=True, exist_ok=True)
    config = replace(config, maildir=MaildirSettings(box))
    engine = Engine(Store(config.database), config, clock)
    return engine, Runner.from_config(config, engine)


def problems(engine: Engine) -> dict[str, str]:
    return {problem.key: problem.text for problem in engine.reports.problems()}


def sent(engine: Engine, clock) -> None:
    """Every mail queued goes out (there is no SMTP server here)."""
    for mail in engine.store.outbox(MailState.QUEUED):
        engine.store.mark_sent([mail["id"]], iso(clock()))


def bounce(engine: Engine, clock, address: str) -> None:
    """The referee's newest mail to ``address`` comes back: its mailbox is full."""
    sent = mails(engine, to=address)[-1]
    assert engine.ingest(dsn(address, sent["message_id"], received=clock())).code == "bounce"


# -- what is wrong ------------------------------------------------------------------------------


def test_a_player_whose_mail_bounces_is_a_problem_while_they_play(engine, clock):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    assert problems(engine) == {}
    bounce(engine, clock, BOB)
    bounce(engine, clock, BOB)
    text = problems(engine)[f"bounce {BOB}"]
    assert text == f"mail to {BOB} bounces (2 since 2026-11-21T12:00:00Z, the last 5.2.2): [pure-skill-1]"
    engine.resign(1, BOB)  # a bot has the seat now: nobody's mail to bounce
    assert problems(engine) == {}


def test_a_bounce_is_a_problem_for_three_days(engine, clock):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=30))
    bounce(engine, clock, BOB)
    sent(engine, clock)
    clock.advance(days=3)
    assert f"bounce {BOB}" in problems(engine)
    clock.advance(seconds=1)  # and no mail to Bob has bounced since
    assert problems(engine) == {}


def test_mail_refused_for_good_is_a_problem_for_three_days(engine, clock):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=30))
    first = engine.store.outbox(MailState.QUEUED)[0]
    engine.store.fail_mail(first["id"], "550 5.1.1 no such user")
    sent(engine, clock)
    assert problems(engine) == {"refused": "1 mail(s) refused for good in the last 3 days"}
    clock.advance(days=3, seconds=1)
    assert problems(engine) == {}
    assert engine.health()["outbox"]["refused"][0]["error"] == "550 5.1.1 no such user"  # status still lists it


# -- how long the passes have failed ---------------------------------------------------------


def test_the_fault_noted_says_since_when_the_passes_fail(config, clock, tmp_path):
    box, gone = tmp_path / "Maildir", tmp_path / "gone"
    engine, runner = maildir_runner(config, clock, box)
    asyncio.run(runner.once())
    box.rename(gone)  # the Maildir vanished: passes fail until it is back
    for _ in range(2):
        clock.advance(minutes=1)
        with pytest.raises(SourceError):
            asyncio.run(runner.once())
    note = json.loads(engine.store.get_meta("last_fault"))
    assert (note["since"], note["at"]) == ("2026-11-21T12:01:00Z", "2026-11-21T12:02:00Z")
    assert engine.reports.problems()[0].since == "2026-11-21T12:01:00Z"
    gone.rename(box)
    clock.advance(minutes=1)
    asyncio.run(runner.once())  # goes through
    box.rename(gone)
    clock.advance(minutes=1)
    with pytest.raises(SourceError):
        asyncio.run(runner.once())
    note = json.loads(engine.store.get_meta("last_fault"))
    assert note["since"] == note["at"] == "2026-11-21T12:04:00Z"  # a new run of faults


def test_a_fault_kept_beside_games_db_keeps_since_when_the_passes_fail(tmp_path):
    aside = FaultAside(tmp_path / "games.db")
    aside.write({"at": "2026-11-21T12:01:00Z", "error": "database is locked"})
    aside.write({"since": "2026-11-21T12:02:00Z", "at": "2026-11-21T12:02:00Z", "error": "disk is full"})
    assert aside.read() == {"since": "2026-11-21T12:01:00Z", "at": "2026-11-21T12:02:00Z", "error": "disk is full"}
    aside.clear()  # a pass went through
    aside.write({"at": "2026-11-21T12:09:00Z", "error": "disk is full"})
    assert aside.read()["since"] == "2026-11-21T12:09:00Z"


# -- the keepers' mail --------------------------------------------------------------------------

KEEPERS = ("keeper@example.org", "deputy@example.org")


@pytest.fixture
def kept(config: Config, clock) -> Engine:
    """An engine whose config names two keepers, with a game running and its start mails sent."""
    engine = Engine(Store(config.database), replace(config, keepers=KEEPERS), clock)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=30))
    sent(engine, clock)
    return engine


def told(engine: Engine, after: int = 0) -> list[dict]:
    """The mails to the first keeper (the second gets the same), queued after the mail ``after``."""
    first, second = (mails(engine, to=keeper) for keeper in KEEPERS)
    assert [m["subject"] for m in first] == [m["subject"] for m in second]
    return [m for m in first if m["id"] > after]


def tell(engine: Engine, clock) -> int:
    """The keepers are told what there is to tell (as after a pass), and the mail goes out."""
    queued = engine.tell_keepers()
    sent(engine, clock)
    return queued


def quarantine(engine: Engine, monkeypatch, raw: bytes) -> None:
    """``raw`` meets a bug: it is kept as failed (quarantined on the mail server)."""

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    with monkeypatch.context() as patch:
        patch.setattr(engine.phases, "take_move", broken)
        assert engine.ingest(raw).code == "failed"


def test_a_problem_is_told_once_again_each_day_it_lasts_and_when_it_is_fixed(kept, clock, monkeypatch):
    assert tell(kept, clock) == 0  # nothing wrong: nothing to tell
    raw = reply(kept, ALICE, "bid 7", message_id="<poison@example.net>")
    quarantine(kept, monkeypatch, raw)
    assert tell(kept, clock) == 2  # one mail to each keeper
    [first] = told(kept)
    assert first["subject"] == "referee@example.org: 1 message(s) quarantined"
    assert "- 1 message(s) quarantined\n  since 2026-11-21 12:00 UTC\n" in first["body"]
    assert first["budget"] is None and first["answers"] is None  # it answers nobody: no budget spent
    clock.advance(hours=23, minutes=59)
    assert tell(kept, clock) == 0  # not again within the day
    clock.advance(minutes=1)
    assert tell(kept, clock) == 2  # a day on and still wrong: told again
    [again] = told(kept, after=first["id"])
    assert "since 2026-11-21 12:00 UTC, and you were told at 2026-11-21 12:00 UTC: it lasts" in again["body"]
    assert tell(kept, clock) == 0
    clock.advance(hours=2)
    assert kept.ingest(raw).code == "move"  # the bug fixed, the mail moved back to the inbox
    assert tell(kept, clock) == 2
    [fixed] = told(kept, after=again["id"])
    assert fixed["subject"] == "referee@example.org: fixed: 1 message(s) quarantined"
    lasted = "- 1 message(s) quarantined\n  from 2026-11-21 12:00 UTC to 2026-11-22 14:00 UTC (1 day 2 hours)"
    assert lasted in fixed["body"]
    assert tell(kept, clock) == 0
    clock.advance(days=2)
    assert tell(kept, clock) == 0  # fixed stays fixed


def test_a_new_problem_names_those_still_wrong_without_telling_them_again(kept, clock, monkeypatch):
    quarantine(kept, monkeypatch, reply(kept, ALICE, "bid 7"))
    assert tell(kept, clock) == 2
    clock.advance(hours=1)
    bounce(kept, clock, BOB)
    assert tell(kept, clock) == 2
    [mail] = told(kept)[1:]
    assert (
        mail["subject"]
        == f"referee@example.org: mail to {BOB} bounces (1 since 2026-11-21T13:00:00Z, the last 5.2.2): [pure-skill-1]"
    )
    assert "Still wrong, as you were told:\n\n- 1 message(s) quarantined\n  since 2026-11-21 12:00 UTC" in mail["body"]
    clock.advance(hours=23)
    assert tell(kept, clock) == 2  # the quarantine's day has come, not the bounce's
    assert told(kept)[-1]["subject"] == "referee@example.org: 1 message(s) quarantined"


def slow_smtp(engine: Engine, clock, times: int) -> None:
    """A slow SMTP server, ``times`` over: a mail waits over an hour (the
    keepers are told what there is to tell), then goes (and again)."""
    for _ in range(times):
        engine.say(1, "a word from the keeper", SHELL)
        clock.advance(minutes=61)
        tell(engine, clock)
        clock.advance(minutes=1)
        tell(engine, clock)


def test_a_problem_that_comes_and_goes_is_told_at_most_once_a_day(kept, clock):
    """A problem that clears and comes back within the day is not new each
    time: one mail that it is wrong, one that it is fixed, and nothing more
    until the day since the first is up."""
    slow_smtp(kept, clock, times=6)  # 12:00 to 18:12
    late = "3 mail(s) waiting over an hour to be sent"
    assert [m["subject"] for m in told(kept)] == [f"referee@example.org: {late}", f"referee@example.org: fixed: {late}"]
    assert "from 2026-11-21 13:01 UTC to 2026-11-21 13:02 UTC (1 minute)" in told(kept)[-1]["body"]


def test_a_problem_back_within_the_day_is_told_when_the_day_is_up(kept, clock, monkeypatch):
    slow_smtp(kept, clock, times=6)  # told at 13:01, fixed at 13:02; back five times since
    late = "3 mail(s) waiting over an hour to be sent"
    before = told(kept)[-1]["id"]
    kept.say(1, "a word from the keeper", SHELL)
    clock.advance(minutes=61)  # 19:13: back once more
    raw = reply(kept, ALICE, "bid 7")
    quarantine(kept, monkeypatch, raw)  # and another problem: its mail names the one back, telling it no more
    assert tell(kept, clock) == 2
    [mail] = told(kept, after=before)
    assert mail["subject"] == "referee@example.org: 1 message(s) quarantined"
    back = f"Back after you were told it was fixed (told again when its day is up):\n\n- {late}\n"
    assert back + "  since 2026-11-21 19:13 UTC; fixed, you were told, at 2026-11-21 13:02 UTC" in mail["body"]
    assert "Still wrong, as you were told" not in mail["body"]
    clock.advance(minutes=1)
    assert tell(kept, clock) == 0  # gone again
    assert kept.ingest(raw).code == "move"
    assert tell(kept, clock) == 2  # the quarantine fixed
    clock.now = datetime(2026, 11, 22, 12, 31, tzinfo=UTC)
    slow_smtp(kept, clock, times=1)  # back at 13:32, a day after the keepers were told of it: told again
    wrong, fixed = told(kept, after=mail["id"])[1:]
    assert wrong["subject"] == f"referee@example.org: {late}"
    assert (
        "since 2026-11-22 13:32 UTC: it came back (7 time(s))\n  after you were told at 2026-11-21 13:02 UTC"
        in (wrong["body"])
    )
    assert fixed["subject"] == f"referee@example.org: fixed: {late}"
    slow_smtp(kept, clock, times=3)  # comes and goes within the day again: nothing told
    assert told(kept, after=fixed["id"]) == []
    clock.advance(days=1)
    assert tell(kept, clock) == 2  # gone when its day is up: the keepers hear it came and went, once
    [gone] = told(kept, after=fixed["id"])
    assert gone["subject"] == f"referee@example.org: fixed: {late}"
    assert (
        "it came and went 3 time(s) after you were told at\n  2026-11-22 13:33 UTC that it was fixed" in (gone["body"])
    )
    assert "the last time from\n  2026-11-22 16:38 UTC to 2026-11-22 16:39 UTC (1 minute)" in gone["body"]
    clock.advance(days=1)
    assert tell(kept, clock) == 0  # and then it is forgotten: the next time, it is new
    slow_smtp(kept, clock, times=1)
    wrong, fixed = told(kept, after=gone["id"])
    assert (wrong["subject"], fixed["subject"]) == (
        f"referee@example.org: {late}",
        f"referee@example.org: fixed: {late}",
    )
    assert "it came back" not in wrong["body"]


def test_storage_faults_that_come_and_go_are_told_at_most_once_a_day(kept, clock):
    """Each storage fault is told only once it has cleared (games.db took no
    note while it lasted): the first as fixed, those within the day after
    it not at all until the day is up, and then once, as come and gone."""
    assert tell(kept, clock) == 0

    def fault_cleared(minutes: int) -> None:  # games.db failed for ``minutes``, then a pass went through
        since = iso(clock())
        clock.advance(minutes=minutes)
        kept.store.set_meta("last_fault", json.dumps({"since": since, "at": iso(clock()), "error": "disk is full"}))
        clock.advance(minutes=1)
        kept.store.set_meta("last_pass", json.dumps({"at": iso(clock()), "received": 0, "sent": 0}))
        tell(kept, clock)

    for _ in range(3):
        fault_cleared(minutes=30)
        clock.advance(hours=1)
    [first] = told(kept)
    assert first["subject"] == "referee@example.org: fixed: the passes failed: disk is full"
    assert "from 2026-11-21 12:00 UTC to 2026-11-21 12:31 UTC (31 minutes)" in first["body"]
    clock.now = datetime(2026, 11, 22, 12, 31, tzinfo=UTC)
    assert tell(kept, clock) == 2
    [again] = told(kept, after=first["id"])
    assert again["subject"] == first["subject"]
    assert "came and went 2 time(s) after you were told at\n  2026-11-21 12:31 UTC that it was fixed" in again["body"]
    assert "the last time from\n  2026-11-21 15:02 UTC to 2026-11-21 15:33 UTC (31 minutes)" in again["body"]


def test_a_seat_whose_mail_bounces_is_told_and_fixed_when_it_stops(kept, clock):
    bounce(kept, clock, BOB)
    assert tell(kept, clock) == 2
    [mail] = told(kept)
    assert BOB in mail["subject"] and "[pure-skill-1]" in mail["subject"]
    kept.resign(1, BOB)  # the keeper gave the seat to a bot
    sent(kept, clock)
    assert tell(kept, clock) == 2
    assert told(kept)[-1]["subject"].startswith(f"referee@example.org: fixed: mail to {BOB} bounces")


def test_the_keepers_mail_shows_nothing_private(config, clock, monkeypatch):
    """Neither a bid not yet resolved nor a quarantined mail's words reach
    the keepers, even when a keeper plays, and their mail spends none of
    their answers."""
    config = replace(config, keepers=(ALICE, "keeper@example.org"), daily_summary=True, replies_per_hour=2)
    engine = Engine(Store(config.database), config, clock)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=30), name="Zanzibar Cup")
    sent(engine, clock)
    assert engine.ingest(reply(engine, ALICE, "bid 11")).code == "move"  # unresolved: Alice's alone
    quarantine(engine, monkeypatch, reply(engine, BOB, "bid 12\nsecret plan: albatross", subject="Re: albatross"))
    bounce(engine, clock, CAROL)
    before = last_id(engine)
    assert tell(engine, clock) == 4  # the problems and the summary, to each keeper
    keepers_mail = mails(engine, after=before)
    assert {m["recipients"][0] for m in keepers_mail} == {ALICE, "keeper@example.org"}
    text = "\n".join(m["subject"] + "\n" + m["body"] for m in keepers_mail)
    assert "Zanzibar Cup" in text and "Round 1 of 13" in text  # the summary: what LIST shows anyone
    assert not re.search(r"(?<![-\d])11(?![-\d])", text)  # Alice's bid (2026-11-21 is a date)
    for private in ("bid 1", "albatross", BOB):
        assert private not in text
    assert all(m["budget"] is None for m in keepers_mail)
    assert limits.verdict(engine.store, config, ALICE, "player", clock()) == limits.Verdict.SEND


def test_the_daily_summary_comes_once_a_day(config, clock):
    engine = Engine(Store(config.database), replace(config, keepers=KEEPERS, daily_summary=True), clock)
    assert tell(engine, clock) == 2
    [summary] = told(engine)
    assert summary["subject"] == "referee@example.org: the day's summary: 0 game(s) running, 0 open"
    assert "Health: ok." in summary["body"] and "No game is running." in summary["body"]
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=30))
    sent(engine, clock)
    clock.advance(hours=23, minutes=59)
    assert tell(engine, clock) == 0
    clock.advance(minutes=1)
    assert tell(engine, clock) == 2
    [summary] = told(engine, after=summary["id"])
    assert "- game 1, Game of Pure Skill: Round 1 of 13, deadline 2026-12-21 12:00 UTC" in summary["body"]


def test_the_daily_summary_says_a_paused_game_is_paused(config, clock):
    engine = Engine(Store(config.database), replace(config, keepers=KEEPERS, daily_summary=True), clock)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    engine.pause(1, SHELL, "holidays", until=clock() + timedelta(days=5))
    assert tell(engine, clock) == 2
    [summary] = told(engine)
    assert (
        "- game 1, Game of Pure Skill: Round 1 of 13, paused since 2026-11-21 12:00 UTC, until 2026-11-26"
        in (summary["body"])
    )
    assert "deadline" not in summary["body"]


def test_no_keepers_no_mail(engine, clock, monkeypatch):
    engine.new_game("pure-skill", PLAYERS)
    quarantine(engine, monkeypatch, reply(engine, ALICE, "bid 7"))
    assert tell(engine, clock) == 0
    assert engine.store.get_meta("keepers_told") is None  # and nothing written


def test_the_keepers_mail_and_the_note_that_it_was_sent_are_committed_together(kept, clock, monkeypatch):
    """Durable before visible: if the second keeper's mail cannot be made,
    neither is queued nor noted as told, and the next check tells both."""
    quarantine(kept, monkeypatch, reply(kept, ALICE, "bid 7"))
    render, calls = kept.composer.render, []

    def failing_second(template, **context):
        calls.append(template)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        return render(template, **context)

    with monkeypatch.context() as patch:
        patch.setattr(kept.composer, "render", failing_second)
        with pytest.raises(OSError):
            kept.tell_keepers()
    assert told(kept) == [] and kept.store.get_meta("keepers_told") is None
    assert tell(kept, clock) == 2


# -- through the runner ------------------------------------------------------------------------


def test_passes_that_go_on_failing_are_told_after_ten_minutes_and_fixed(config, clock, tmp_path):
    box, gone = tmp_path / "Maildir", tmp_path / "gone"
    engine, runner = maildir_runner(replace(config, keepers=KEEPERS), clock, box)
    clock.advance(minutes=-1)
    asyncio.run(runner.once())  # 11:59
    clock.advance(minutes=1)
    box.rename(gone)
    for _ in range(2):  # 12:00 and 12:05: one blip wakes nobody
        with pytest.raises(SourceError):
            asyncio.run(runner.once())
        assert told(engine) == []
        clock.advance(minutes=5)
    with pytest.raises(SourceError):
        asyncio.run(runner.once())  # 12:10
    [mail] = told(engine)
    assert mail["subject"].startswith("referee@example.org: the last pass failed: ") and "Maildir" in mail["subject"]
    assert "since 2026-11-21 12:00 UTC" in mail["body"]
    gone.rename(box)
    clock.advance(minutes=5)
    asyncio.run(runner.once())
    fixed = told(engine)[-1]
    assert fixed["subject"].startswith("referee@example.org: fixed: the last pass failed: ")
    assert "from 2026-11-21 12:00 UTC to 2026-11-21 12:15 UTC (15 minutes)" in fixed["body"]


def test_a_storage_fault_is_told_when_it_clears_with_how_long_it_lasted(config, clock, tmp_path, monkeypatch):
    """A keeper's sqlite3 session holds games.db's write lock for half an
    hour: no pass can note anything in games.db, nor tell the keepers.  The
    first pass that goes through tells them what happened, and for how long."""
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 50)  # not 10 s: the same fault, sooner
    box = tmp_path / "Maildir"
    engine, runner = maildir_runner(replace(config, keepers=KEEPERS), clock, box)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=30))
    sent(engine, clock)
    asyncio.run(runner.once())
    clock.advance(minutes=5)
    (box / "new" / f"{int(clock().timestamp())}.M1.test").write_bytes(reply(engine, ALICE, "bid 5"))
    keeper = sqlite3.connect(config.database, isolation_level=None)
    keeper.execute("BEGIN IMMEDIATE")
    try:
        for _ in range(4):  # 12:05 to 12:35
            with pytest.raises(StorageFault, match="locked"):
                asyncio.run(runner.once())
            clock.advance(minutes=10)
    finally:
        keeper.execute("ROLLBACK")
    assert told(engine) == []
    asyncio.run(runner.once())  # 12:45
    [mail] = told(engine)
    assert mail["subject"].startswith("referee@example.org: fixed: the passes failed: ") and "locked" in mail["subject"]
    assert "from 2026-11-21 12:05 UTC to 2026-11-21 12:45 UTC (40 minutes)" in mail["body"]
    asyncio.run(runner.once())
    assert len(told(engine)) == 1


class Sender:
    """Stands in for the SMTP sender: sends whatever is queued, fed or not."""

    def __init__(self, engine: Engine):
        self.engine, self.subjects = engine, []

    async def drain(self, feed=None):
        while True:
            for mail in self.engine.store.outbox(MailState.QUEUED):
                self.subjects.append(mail["subject"])
                self.engine.store.mark_sent([mail["id"]], iso(self.engine.clock()))
            if feed is None or feed.closed:
                return Drained()
            feed.more.clear()
            await feed.more.wait()


def test_the_keepers_mail_leaves_in_the_pass_that_found_the_problem(config, clock, tmp_path, monkeypatch):
    box = tmp_path / "Maildir"
    engine, runner = maildir_runner(replace(config, keepers=KEEPERS), clock, box)
    runner.sender = Sender(engine)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=30))
    asyncio.run(runner.once())
    monkeypatch.setattr(engine.phases, "take_move", lambda *args: 1 / 0)
    (box / "new" / f"{int(clock().timestamp())}.M1.test").write_bytes(reply(engine, ALICE, "bid 5"))
    asyncio.run(runner.once())
    assert runner.sender.subjects[-2:] == ["referee@example.org: 1 message(s) quarantined"] * 2
    assert engine.store.outbox(MailState.QUEUED) == []
