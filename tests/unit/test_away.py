"""Time away (issue 33, item 2): AWAY and BACK from a seat, by mail.

Played through ``Engine.ingest`` as players live it: Bob says he is away,
the deadline that would fall inside his absence moves to its end and
everyone is told, his own move in between counts, the round resolves at
the new deadline; a phase that opens while he is away is held too (in a
game of rounds every round waits on him, in a turn-based one only his
turns); past his cap nothing moves; BACK ends it; a forged AWAY, a bot's
seat and a paused game change nothing they should not.  Each game is
played to its end and its record verified, and records forged three ways
(a deadline moved past the absence, an absence past the cap, an absence
that moved the deadline of a phase its seat does not move in) are refused."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import timedelta

import pytest
from conftest import PLAYERS, Mailbox, Seeds, make_mail, seat_address, send, to_deadline
from test_keeper_mail import KEEPER, last_answer, order
from test_keeping import held_digests
from test_site import page

from referee.cli import main
from referee.config import load
from referee.engine import Engine
from referee.engine.keeping import SHELL
from referee.record import verify
from referee.site.public import game_record
from referee.site.render import Site
from referee.store import Store
from referee.timeutil import from_iso

ALICE, BOB, CAROL = PLAYERS


@pytest.fixture
def config(config):
    return replace(config, keepers=(KEEPER,))


@pytest.fixture
def pure(engine: Engine) -> Engine:
    """A Game of Pure Skill: every round waits on every seat.  Round 1's
    deadline is 2026-11-24 12:00 UTC."""
    engine.new_game("pure-skill", PLAYERS)
    return engine


@pytest.fixture
def turns(config, clock) -> Engine:
    """Auction (priority cards), a turn-based game, its seats moving (with
    this seed) Carol, Alice, Bob, Carol, Bob...: three days a turn."""
    engine = Engine(Store(config.database), config, clock, Seeds(bytes([5]) * 32))
    engine.new_game("priority", PLAYERS, options={"turn_limit": 2})
    return engine


def deadline(engine: Engine) -> str:
    return engine.status(1)["phase"]["deadline"]


def acts(engine: Engine) -> list[tuple[str, str | None]]:
    """The game's interventions: each act, and who made it (None: the referee)."""
    return [(i["act"], i["by"]) for i in engine.store.interventions(1)]


def play_out(engine: Engine, clock) -> dict:
    """Every phase to its deadline until the game ends; its published record, verified."""
    for _ in range(500):
        if engine.status(1)["state"] != "running":
            break
        to_deadline(engine, clock)
        engine.tick()
    published = game_record(engine.table(1))
    verdict = verify(published)
    assert verdict.ok, verdict
    return published


def said(mail: dict) -> str:
    """A mail's text with its lines joined: what it says, however it is wrapped."""
    return " ".join(mail["body"].split())


def at(clock, when: str) -> None:
    """Move the clock to a time (never back)."""
    clock.advance(seconds=(from_iso(when) - clock()).total_seconds())


# -- an absence moves a deadline ------------------------------------------------------------


def test_an_absence_moves_the_deadline_the_others_are_told_and_the_round_resolves_at_its_end(pure, clock):
    box = Mailbox(pure)
    box.new()
    outcome = send(pure, clock, BOB, "AWAY 2026-11-23 to 2026-11-26 my sister's wedding")
    assert outcome.code == "done"
    assert deadline(pure) == "2026-11-27T00:00:00Z"  # the 26th is the whole day
    mails = box.new()
    [answer] = [m for m in mails if m["to"] == BOB]  # one mail answers his
    assert "You are away from 2026-11-23 00:00 UTC until 2026-11-27 00:00 UTC (4 days)." in said(answer)
    assert "moves from 2026-11-24 12:00 UTC to 2026-11-27 00:00 UTC" in said(answer)
    assert "You have 11 days of time away left in this game." in answer["body"]
    told = [m for m in mails if m["to"] != BOB]
    assert sorted(m["to"] for m in told) == [ALICE, CAROL]
    for mail in told:
        assert mail["subject"].endswith("bob@example.org is away until 2026-11-27 00:00 UTC")
        assert "from 2026-11-23 00:00 UTC until 2026-11-27 00:00 UTC (4 days)" in said(mail)
        assert "the deadline moves from 2026-11-24 12:00 UTC to 2026-11-27 00:00 UTC" in said(mail)
        assert "wedding" not in mail["body"]  # the reason is the keepers'
    assert acts(pure) == [("away", BOB), ("absent", None)]

    assert send(pure, clock, ALICE, "bid 5").code == "move"
    at(clock, "2026-11-24T13:00:00Z")  # past the old deadline: nobody bids at random
    assert pure.tick() == [] and pure.status(1)["phase"]["number"] == 1
    at(clock, "2026-11-26T09:00:00Z")
    assert send(pure, clock, BOB, "bid 7").code == "move"  # while away, his move counts
    at(clock, "2026-11-27T00:00:00Z")
    assert pure.tick() == ["resolved game 1 Round 1 of 13"]
    counted = pure.table(1).counted[1]
    assert [counted[seat]["source"] for seat in range(3)] == ["mail", "mail", "random"]  # Carol missed it
    assert pure.status(1)["phase"]["deadline"] == "2026-11-30T00:00:00Z"  # round 2, after his absence: as usual

    published = play_out(pure, clock)
    away, absent = published["interventions"]
    assert (away["act"], away["by"], away["why"], away["seat"], away["until"]) == (
        "away",
        "player",
        "",
        1,
        "2026-11-27T00:00:00Z",
    )
    assert (absent["act"], absent["by"], absent["old"], absent["new"]) == (
        "absent",
        "referee",
        "2026-11-24T12:00:00Z",
        "2026-11-27T00:00:00Z",
    )
    assert "wedding" not in json.dumps(published) and BOB not in json.dumps(published)
    assert held_digests(pure) <= {(d.label, d.digest) for d in verify(published).digests}  # the mails' digests


def test_a_phase_opening_inside_an_absence_is_held_and_everyone_is_told(pure, clock):
    box = Mailbox(pure)
    assert send(pure, clock, BOB, "AWAY 2026-11-25 to 2026-12-01").code == "done"
    assert deadline(pure) == "2026-11-24T12:00:00Z"  # round 1's falls before it: it stands
    assert "the deadline moves" not in box.to(ALICE)[-1]["body"]
    assert acts(pure) == [("away", BOB)]
    box.new()
    to_deadline(pure, clock)
    pure.tick()  # round 2 opens: its deadline (the 27th) falls inside Bob's absence
    assert deadline(pure) == "2026-12-02T00:00:00Z"
    assert acts(pure) == [("away", BOB), ("absent", None)]
    mails = box.new()
    result = next(m for m in mails if m["to"] == ALICE and "Round 1 of 13" in m["subject"])
    assert "Deadline 2026-12-02 00:00 UTC." in result["body"]
    assert (
        "bob@example.org is away until 2026-12-02 00:00 UTC: "
        "the deadline moves from 2026-11-27 12:00 UTC to 2026-12-02 00:00 UTC." in said(result)
    )
    prompt = next(m for m in mails if m["to"] == BOB and "Round 2 of 13" in m["subject"])
    assert "Deadline: 2026-12-02 00:00 UTC" in prompt["body"]
    to_deadline(pure, clock)
    pure.tick()  # round 3 opens after his absence: as usual
    assert deadline(pure) == "2026-12-05T00:00:00Z"
    play_out(pure, clock)


def test_an_absence_read_after_a_deadline_passed_meets_the_next_round(pure, clock):
    """Round 1's deadline passed before the tick: the AWAY is of round 2,
    which opened at that deadline, as a tick would have had it."""
    at(clock, "2026-11-24T13:00:00Z")
    assert send(pure, clock, BOB, "AWAY 5d").code == "done"
    assert pure.status(1)["phase"]["label"] == "Round 2 of 13"
    assert deadline(pure) == "2026-11-29T13:00:00Z"  # round 2's (the 27th, noon) held to his absence's end
    assert [(act, i["phase"]) for (act, _), i in zip(acts(pure), pure.store.interventions(1))] == [
        ("away", 2),
        ("absent", 2),
    ]
    play_out(pure, clock)


def test_in_a_turn_based_game_only_the_away_seats_turns_are_held(turns, clock):
    assert send(turns, clock, CAROL, "NOTIFY EVERY").code == "done"  # (at TURNS she hears of it at her turn)
    assert send(turns, clock, BOB, "AWAY until 2026-12-01").code == "done"
    assert deadline(turns) == "2026-11-24T12:00:00Z"  # Carol's turn: it does not wait on Bob
    to_deadline(turns, clock)
    turns.tick()
    assert turns.status(1)["phase"]["waiting_for"] == [ALICE] and deadline(turns) == "2026-11-27T12:00:00Z"
    box = Mailbox(turns)
    box.new()
    to_deadline(turns, clock)
    turns.tick()  # Bob's turn opens, inside his absence
    assert turns.status(1)["phase"]["waiting_for"] == [BOB] and deadline(turns) == "2026-12-02T00:00:00Z"
    result = next(m for m in box.new() if m["to"] == CAROL)
    assert "bob@example.org to move, deadline 2026-12-02 00:00 UTC" in result["body"]
    assert "bob@example.org is away until 2026-12-02 00:00 UTC:" in result["body"]
    at(clock, "2026-12-01T10:00:00Z")
    table = turns.table(1)
    move = table.rules.move_text(table.rules.legal_moves(table.state, 1)[0])
    assert send(turns, clock, BOB, move).code == "move"
    assert turns.table(1).counted[3][1]["source"] == "mail"
    published = play_out(turns, clock)
    assert [i["act"] for i in published["interventions"]] == ["away", "absent"]

    # A record whose absence moved the deadline of a turn its seat does not move in is refused.
    forged = copy.deepcopy(published)
    for intervention in forged["interventions"]:
        intervention["seat"] = 2  # Carol, away instead; turn 3 is Bob's
    verdict = verify(forged)
    assert not verdict.ok and "seat 3 does not move in it" in verdict.message, verdict


# -- the cap ----------------------------------------------------------------------------------


def test_an_absence_past_the_cap_moves_nothing_and_says_what_is_left(pure, clock):
    box = Mailbox(pure)
    box.new()
    assert send(pure, clock, BOB, "AWAY 16d").code == "refused"
    answer = box.new()
    assert [m["to"] for m in answer] == [BOB]  # nobody else hears of it
    assert "your seat may be away 15 days in this game in all: you have 15 days of it left" in said(answer[0])
    assert deadline(pure) == "2026-11-24T12:00:00Z" and acts(pure) == []
    assert send(pure, clock, BOB, "AWAY 2026-11-23 for 10d").code == "done"
    assert send(pure, clock, BOB, "AWAY 2026-12-10 to 2026-12-15").code == "refused"  # 6 days
    assert "you have 5 days of it left" in said(box.new()[-1])
    assert send(pure, clock, BOB, "AWAY 2026-12-10 to 2026-12-14").code == "done"  # 5: the cap spent
    assert send(pure, clock, BOB, "AWAY 2026-12-20 for 1h").code == "refused"
    assert "you have none of it left, so deadlines run as usual" in said(box.new()[-1])
    assert [act for act, _ in acts(pure)] == ["away", "absent", "away"]
    play_out(pure, clock)


def test_the_cap_is_the_keepers_setting(tmp_path):
    path = tmp_path / "referee.toml"
    path.write_text('[keepers]\nmost_away = "5d"\n')
    assert load(path).most_away == timedelta(days=5)
    path.write_text("[keepers]\n")
    assert load(path).most_away == timedelta(days=15)


def test_a_time_away_written_wrong_or_overlapping_or_over_is_refused_politely(pure, clock):
    box = Mailbox(pure)
    for line, reason in [
        ("AWAY", "Say how long, or until when. Write it as AWAY 5d"),
        ("AWAY 2026-12-03", "Say until when it lasts"),
        ("AWAY next week", "'next' is no date such as 2026-12-03"),
        ("AWAY until 2026-11-01", "would end (2026-11-02 00:00 UTC) before it begins (2026-11-21 12:00 UTC)"),
    ]:
        assert send(pure, clock, BOB, line).code == "refused", line
        assert reason in said(box.new()[-1]), line
    assert send(pure, clock, BOB, "AWAY 2026-12-03 to 2026-12-05").code == "done"
    assert send(pure, clock, BOB, "AWAY 2026-12-05T12:00:00Z for 2d").code == "refused"
    assert "You are away from 2026-12-03 00:00 UTC until 2026-12-06 00:00 UTC already" in box.new()[-1]["body"]
    assert [act for act, _ in acts(pure)] == ["away"]


def test_dates_are_read_in_the_players_time_zone(pure, clock):
    assert send(pure, clock, BOB, "TIMEZONE Europe/Berlin").code == "done"
    assert send(pure, clock, BOB, "AWAY 2026-11-23 to 2026-11-26").code == "done"
    [away] = [i["detail"] for i in pure.store.interventions(1) if i["act"] == "away"]
    assert (away["from"], away["until"]) == ("2026-11-22T23:00:00Z", "2026-11-26T23:00:00Z")


# -- back -------------------------------------------------------------------------------------


def test_back_withdraws_an_absence_to_come_and_its_days_return(pure, clock):
    box = Mailbox(pure)
    assert send(pure, clock, BOB, "AWAY 2026-11-26 to 2026-12-05").code == "done"  # 10 days
    box.new()
    assert send(pure, clock, BOB, "Back.").code == "done"
    mails = box.new()
    answer = said(next(m for m in mails if m["to"] == BOB))
    assert "is withdrawn" in answer and "You have 15 days of time away left" in answer
    told = next(m for m in mails if m["to"] == ALICE)
    assert told["subject"].endswith("bob@example.org is back")
    assert "will not be away from 2026-11-26 00:00 UTC after all" in said(told)
    to_deadline(pure, clock)
    pure.tick()
    assert deadline(pure) == "2026-11-27T12:00:00Z"  # round 2: as if he had never asked
    assert [act for act, _ in acts(pure)] == ["away", "back"]
    play_out(pure, clock)


def test_back_leaves_a_moved_deadline_and_the_absence_that_moved_it_counts_whole(pure, clock):
    box = Mailbox(pure)
    assert send(pure, clock, BOB, "AWAY 5d").code == "done"
    assert deadline(pure) == "2026-11-26T12:00:00Z"
    clock.advance(days=1)
    box.new()
    assert send(pure, clock, BOB, "BACK").code == "done"
    assert deadline(pure) == "2026-11-26T12:00:00Z"  # the others were told it: it stays
    answer = said(next(m for m in box.new() if m["to"] == BOB))
    assert "Your time away from 2026-11-21 12:00 UTC until 2026-11-26 12:00 UTC ends now." in answer
    assert "it counts whole" in answer and "You have 10 days of time away left" in answer
    assert send(pure, clock, BOB, "BACK").code == "refused"  # not away now
    assert "You are not away" in box.new()[-1]["body"]
    play_out(pure, clock)


# -- what must change nothing ------------------------------------------------------------------


def test_a_forged_away_changes_nothing_and_bob_is_told(pure, clock):
    box = Mailbox(pure)
    box.new()
    forged = make_mail("mallory@example.net", "AWAY 15d", to=seat_address(pure, BOB), received=clock())
    outcome = pure.ingest(forged)
    assert (outcome.code, outcome.detail) == ("refused", f"a reply token used from another address; {BOB} was told")
    assert deadline(pure) == "2026-11-24T12:00:00Z" and acts(pure) == []
    assert [m["to"] for m in box.new()] == [BOB]  # his notice; nobody is told he is away


def test_a_seat_a_bot_plays_cannot_be_away(pure, clock):
    pure.resign(1, BOB)
    box = Mailbox(pure)
    box.new()
    assert send(pure, clock, BOB, "AWAY 5d").code == "refused"
    assert "a random bot plays your seat now" in box.new()[-1]["body"]
    assert acts(pure) == []


def test_away_while_paused_holds_the_deadline_when_the_game_goes_on(pure, clock):
    pure.pause(1, SHELL, "a dispute")
    box = Mailbox(pure)
    box.new()
    assert send(pure, clock, BOB, "AWAY 2026-11-23 to 2026-11-27").code == "done"
    assert deadline(pure) == "2026-11-24T12:00:00Z"  # no deadline runs while paused
    assert "The game is paused" in next(m for m in box.new() if m["to"] == BOB)["body"]
    clock.advance(days=1)
    line = pure.resume(1, SHELL)
    assert line == (
        "game 1 resumed: deadline moved from 2026-11-24T12:00:00Z to 2026-11-25T12:00:00Z, "
        "then to 2026-11-28T00:00:00Z: bob@example.org is away until then"
    )
    assert deadline(pure) == "2026-11-28T00:00:00Z"
    resumed = next(m for m in box.new() if m["to"] == ALICE)["body"]
    assert "bob@example.org is away until 2026-11-28 00:00 UTC:" in resumed
    assert [act for act, _ in acts(pure)] == ["pause", "away", "resume", "absent"]
    play_out(pure, clock)


def test_the_outage_guard_moves_a_deadline_on_past_an_absence(config, clock):
    engine = Engine(Store(config.database), replace(config, outage_gap=timedelta(hours=6)), clock)
    engine.new_game("pure-skill", PLAYERS)
    engine.tick()
    assert send(engine, clock, BOB, "AWAY 2026-11-25 to 2026-11-26").code == "done"
    at(clock, "2026-11-25T06:00:00Z")  # the referee was down across round 1's deadline
    engine.tick()  # the grace (24 hours) would end inside Bob's absence
    assert deadline(engine) == "2026-11-27T00:00:00Z"
    assert [act for act, _ in acts(engine)] == ["away", "outage", "absent"]
    play_out(Engine(engine.store, config, clock), clock)  # (without the guard, whose gaps a jump to each deadline is)


def test_the_last_phase_is_held_unless_it_waits_on_nobody(pure, clock):
    for _ in range(11):
        to_deadline(pure, clock)
        pure.tick()
    assert pure.status(1)["phase"]["label"] == "Round 12 of 13"
    assert send(pure, clock, BOB, "AWAY 5d").code == "done"
    assert from_iso(deadline(pure)) == clock() + timedelta(days=5)
    to_deadline(pure, clock)
    pure.tick()  # round 13: everyone's last card, played at once; the game ends
    assert pure.status(1)["state"] == "finished"
    published = play_out(pure, clock)
    assert [(i["act"], i["phase"]) for i in published["interventions"]] == [("away", 12), ("absent", 12)]


# -- what the keepers see, and verify --------------------------------------------------------------


def test_the_keepers_status_lists_the_absence_with_its_reason(pure, clock, tmp_path, capsys):
    assert send(pure, clock, BOB, "AWAY 2026-11-23 to 2026-11-26 wedding").code == "done"
    order(pure, clock, "STATUS 1")
    status = last_answer(pure)
    assert "phase 1, bob@example.org: away, seat 2 from 2026-11-23 00:00 UTC until 2026-11-27 00:00 UTC (wedding)" in (
        status
    )
    assert "phase 1, the referee: absent, seat 2 away: deadline moved to 2026-11-27 00:00 UTC" in status
    shell = tmp_path / "referee.toml"
    shell.write_text(f'[referee]\naddress = "referee@example.org"\ndatabase = "{pure.config.database}"\n')
    assert main(["--config", str(shell), "status", "1"], clock=clock) == 0
    printed = capsys.readouterr().out
    assert "bob@example.org: seat 2 away from 2026-11-23T00:00:00Z until 2026-11-27T00:00:00Z (wedding)" in printed
    assert "the referee: deadline moved from 2026-11-24T12:00:00Z to 2026-11-27T00:00:00Z: seat 2 is away" in printed


def test_the_site_and_the_calendar_show_the_moved_deadline_and_the_absence_by_name(pure, clock, tmp_path):
    import icalendar

    assert send(pure, clock, BOB, "AWAY 2026-11-23 to 2026-11-26 wedding").code == "done"
    site = tmp_path / "site"
    Site(pure, site).render()
    text = " ".join(page(site, "games/1/index.html").text.split())
    assert "bob is away from 2026-11-23 00:00 UTC until 2026-11-27 00:00 UTC" in text
    assert "the referee moved the deadline from 2026-11-24 12:00 UTC to 2026-11-27 00:00 UTC, as bob is away" in text
    assert "wedding" not in text and BOB not in text
    [event] = icalendar.Calendar.from_ical((site / "games/1/deadlines.ics").read_bytes()).walk("VEVENT")
    assert event.decoded("DTSTART") == from_iso("2026-11-27T00:00:00Z")


@pytest.fixture
def held_record(pure, clock) -> dict:
    """A finished game whose round 1 Bob's absence held (until the 27th)."""
    assert send(pure, clock, BOB, "AWAY 2026-11-23 to 2026-11-26").code == "done"
    return play_out(pure, clock)


def test_verify_refuses_a_deadline_moved_further_than_the_absence(held_record):
    forged = copy.deepcopy(held_record)
    forged["interventions"][1]["new"] = forged["phases"][0]["deadline"] = "2026-11-28T00:00:00Z"
    verdict = verify(forged)
    assert not verdict.ok and "seat 2's absence ends at 2026-11-27T00:00:00Z" in verdict.message, verdict


def test_verify_refuses_an_absence_past_the_cap(held_record):
    forged = copy.deepcopy(held_record)
    forged["interventions"][0]["until"] = "2026-12-09T00:00:00Z"  # 16 days
    verdict = verify(forged)
    assert (
        not verdict.ok
        and "an absence of 16 days for seat 2, past its cap: 15 days of 15 days were left" in verdict.message
    ), verdict


def test_verify_refuses_an_absence_made_by_anyone_but_the_player_or_a_hold_by_anyone_but_the_referee(held_record):
    for index, by in ((0, "keeper"), (1, "player")):
        forged = copy.deepcopy(held_record)
        forged["interventions"][index]["by"] = by
        assert not verify(forged).ok
