"""The keeper is told (issue 32, item 6): what is wrong is the referee's
health (Reports.problems, what `referee status` heads its list with), and
the keepers get a mail when a problem comes, again each day it lasts, and
when it is fixed (referee.engine.watch)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, dsn, mails

from referee.config import Config, MaildirSettings
from referee.engine import Engine
from referee.mail.source import SourceError
from referee.runner import Runner
from referee.store import FaultAside, MailState, Store
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
        engine.store.mark_sent(mail["id"], iso(clock()))


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
