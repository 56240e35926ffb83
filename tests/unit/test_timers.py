"""Reminders before a deadline, and the outage guard after the referee slept."""

from dataclasses import replace
from datetime import timedelta

import pytest
from conftest import PLAYERS, body_of, reply

from referee.engine import Engine
from referee.store import Store
from referee.timeutil import from_iso, iso

ALICE, BOB, CAROL = PLAYERS


@pytest.fixture
def timed(config, clock):
    """An engine with the documented defaults: reminders 1 day before the
    deadline, and the outage guard (6 hours' gap, 24 hours' grace)."""
    config = replace(
        config, reminder=timedelta(days=1), outage_gap=timedelta(hours=6), outage_grace=timedelta(hours=24)
    )
    return Engine(Store(config.database), config, clock)


def cron(engine, clock, hours: int, every: float = 1.0) -> list[str]:
    """Tick every ``every`` hours for ``hours`` hours, as cron would."""
    said = []
    for _ in range(int(hours / every)):
        clock.advance(hours=every)
        said += engine.tick()
    return said


def mails_to(engine, address: str, template_word: str) -> list[str]:
    return [
        body_of(m["raw"])
        for m in engine.store.outbox()
        if m["recipients"] == [address] and template_word in m["subject"]
    ]


def test_one_reminder_a_day_before_to_those_who_have_not_moved(timed, clock):
    timed.new_game("pure-skill", PLAYERS)
    timed.ingest(reply(timed, ALICE, "bid 7", received=clock.advance(hours=1)))
    said = cron(timed, clock, hours=70)
    assert said == ["reminded 2 player(s) in game 1 Round 1 of 13"]
    assert mails_to(timed, ALICE, "reminder") == []
    (bob,) = mails_to(timed, BOB, "reminder")
    assert "no move of yours has reached the referee" in bob and "bid K" in bob
    assert len(mails_to(timed, CAROL, "reminder")) == 1  # once per phase, not every tick


def test_no_reminder_when_the_lead_is_more_than_half_the_phase(timed, clock):
    timed.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=30))
    assert cron(timed, clock, hours=29) == []  # 1 day's lead would fall in the first half


def test_a_deadline_slept_through_is_extended_not_filled_at_random(timed, clock):
    timed.new_game("pure-skill", PLAYERS)
    timed.tick()  # the referee ran once, then was down for 4 days
    deadline = timed.status(1)["phase"]["deadline"]
    late_but_in_time = from_iso(deadline) - timedelta(hours=1)
    clock.advance(days=4)
    # Alice's bid reached the server before the deadline; the referee reads it now.
    assert timed.ingest(reply(timed, ALICE, "bid 7", received=late_but_in_time)).code == "move"
    said = timed.tick()
    assert len(said) == 1 and said[0].startswith("extended game 1 Round 1 of 13")
    status = timed.status(1)
    assert status["phase"]["number"] == 1  # nobody got a random bid
    assert status["phase"]["deadline"] == iso(clock() + timedelta(hours=24))
    assert status["phase"]["waiting_for"] == [BOB, CAROL]
    (change,) = status["interventions"]
    assert (change["act"], change["by"]) == ("outage", "the referee")
    assert change["old"] == deadline and "did not run" in change["why"]
    (notice,) = mails_to(timed, BOB, "deadline extended")
    assert "was not running" in notice and status["phase"]["deadline"][:10] in notice
    # A bid after the old deadline but before the new one counts.
    assert timed.ingest(reply(timed, BOB, "bid 8", received=clock.advance(hours=1))).code == "move"
    assert cron(timed, clock, hours=24) == ["resolved game 1 Round 1 of 13"]
    assert [m["source"] for m in timed.store.moves(1, 1)] == ["mail", "mail", "random"]


def test_a_short_pause_is_not_an_outage(timed, clock):
    timed.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=2))
    timed.tick()
    clock.advance(hours=3)  # down for 3 hours: less than the 6-hour gap
    assert timed.tick() == ["resolved game 1 Round 1 of 13"]


def test_next_due_names_deadline_and_reminder(timed, clock):
    timed.new_game("pure-skill", PLAYERS)
    deadline = from_iso(timed.status(1)["phase"]["deadline"])
    assert sorted(timed.next_due()) == [deadline - timedelta(days=1), deadline]


def test_a_deadline_under_a_second_is_refused(engine):
    from referee.engine import EngineError

    with pytest.raises(EngineError, match="at least 1 second"):
        engine.new_game("pure-skill", PLAYERS, deadline=timedelta(seconds=0.5))


def test_status_of_all_games_names_an_extended_deadline(timed, clock, capsys, tmp_path):
    from referee import cli

    timed.new_game("pure-skill", PLAYERS)
    timed.tick()
    clock.advance(days=4)
    timed.tick()
    config_file = tmp_path / "referee.toml"
    config_file.write_text(f'[referee]\naddress = "referee@example.org"\ndatabase = "{timed.config.database}"\n')
    assert cli.main(["--config", str(config_file), "status"], clock=clock) == 0
    assert "deadline of phase 1 moved to" in capsys.readouterr().out


def test_a_tick_reads_only_the_games_with_something_due(timed, clock, monkeypatch):
    """A tick's cost follows its work, not the number of games running: with
    nothing due it replays no game at all; with one deadline passed, one."""
    for _ in range(5):
        timed.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    timed.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=1))
    timed.tick()
    reads = []
    real = timed.tables.table
    monkeypatch.setattr(timed.tables, "table", lambda game_id: reads.append(game_id) or real(game_id))
    clock.advance(minutes=30)
    assert timed.tick() == [] and reads == []
    clock.advance(minutes=31)
    done = timed.tick()
    assert done == ["resolved game 6 Round 1 of 13"] and set(reads) == {6}
    clock.advance(hours=30)  # the referee slept past no other deadline: still nothing else read
    reads.clear()
    timed.tick()
    assert set(reads) <= {6}
