"""The keeper's hands (issue 32): extend, pause and resume, cancel, replace
and say, each on the game's record, announced, and replayed by verify.

Played as a keeper lives it: a game by mail, an act in the middle, the
game played on to its end, and the published record verified (and refused
once an intervention in it is altered)."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import timedelta

import pytest
from conftest import PLAYERS, Mailbox, make_mail, seat_address, send, to_deadline
from forgery import _text
from test_site import page

from referee.engine import Engine
from referee.engine.keeping import SHELL
from referee.errors import EngineError
from referee.record import mail_digests, verify
from referee.rules.pure_skill import card_name
from referee.site.public import game_record
from referee.site.render import Site
from referee.store import Store
from referee.timeutil import from_iso, iso

ALICE, BOB, CAROL = PLAYERS


def play_out(engine: Engine, clock, game: int = 1) -> None:
    """Every phase to its deadline until the game ends (random moves)."""
    for _ in range(2000):
        if engine.status(game)["state"] != "running":
            return
        to_deadline(engine, clock, game)
        engine.tick()
    raise AssertionError("the game did not end")


def record(engine: Engine, game: int = 1) -> dict:
    return game_record(engine.table(game))


@pytest.fixture
def pure(engine: Engine) -> Engine:
    engine.new_game("pure-skill", PLAYERS)
    return engine


@pytest.fixture
def turns(config, clock, seeds) -> Engine:
    """Auction (priority cards): a turn-based game, whose bots may be replaced."""
    engine = Engine(Store(config.database), config, clock, seeds)
    engine.new_game("priority", PLAYERS, options={"turn_limit": 2})
    return engine


def test_an_extension_moves_the_deadline_tells_everyone_and_verifies(pure, clock):
    box = Mailbox(pure)
    box.new()
    old = pure.status(1)["phase"]["deadline"]
    line = pure.extend(1, timedelta(days=2), SHELL, "Bob is at a wedding")
    new = pure.status(1)["phase"]["deadline"]
    assert from_iso(new) - from_iso(old) == timedelta(days=2)
    assert line == f"game 1 Round 1 of 13: deadline moved from {old} to {new}"
    told = box.new()
    assert sorted(m["to"] for m in told) == sorted(PLAYERS)
    assert all("Bob is at a wedding" in m["body"] and "extended the deadline" in m["subject"] for m in told)
    # A bid after the old deadline, before the new one, counts.
    clock.advance(days=3, hours=12)
    assert pure.tick() == []  # nobody got a random bid at the old deadline
    assert send(pure, clock, ALICE, "bid 7").code == "move"
    play_out(pure, clock)
    published = record(pure)
    assert [i["act"] for i in published["interventions"]] == ["extend"]
    assert verify(published).ok


def test_an_extension_past_the_cap_needs_force_and_a_wrong_phase_is_refused(pure):
    with pytest.raises(EngineError, match="longer than the longest allowed"):
        pure.extend(1, timedelta(days=8), SHELL)
    with pytest.raises(EngineError, match="not phase 3"):
        pure.extend(1, timedelta(days=1), SHELL, phase=3)
    assert pure.store.interventions(1) == []
    pure.extend(1, timedelta(days=8), SHELL, force=True)
    assert len(pure.store.interventions(1)) == 1


def test_a_paused_game_crosses_its_deadline_without_a_random_move_and_goes_on(pure, clock):
    deadline = from_iso(pure.status(1)["phase"]["deadline"])
    pure.pause(1, SHELL, "holidays")
    assert send(pure, clock, ALICE, "bid 5").code == "move"
    clock.advance(days=10)  # far past the deadline
    assert pure.tick() == []
    assert pure.next_due(1) == [from_iso(pure.store.paused()[1]["detail"]["until"])]  # only the pause's end
    assert send(pure, clock, BOB, "bid 6").code == "move"  # late for the old deadline, but it was paused
    assert send(pure, clock, CAROL, "bid 4").code == "move"
    assert pure.status(1)["phase"]["number"] == 1  # all moved, but nothing resolves while paused
    pure.resume(1, SHELL)
    status = pure.status(1)
    assert status["phase"]["number"] == 2  # resolved at once on resuming
    moved = next(i for i in pure.store.interventions(1) if i["act"] == "resume")["detail"]
    assert from_iso(moved["new"]) - deadline == timedelta(days=10)
    play_out(pure, clock)
    verdict = verify(record(pure))
    assert verdict.ok, verdict


def test_a_pause_ends_by_itself_at_its_time_and_the_cap_bounds_an_open_pause(pure, clock):
    capped = Engine(pure.store, replace(pure.config, most_pause=timedelta(days=4)), clock)
    line = capped.pause(1, SHELL)
    until = capped.store.paused()[1]["detail"]["until"]
    assert from_iso(until) - clock() == timedelta(days=4) and line == f"game 1 paused until {until}"
    clock.advance(days=4)
    assert capped.tick()[0].startswith("game 1 resumed")
    assert capped.store.paused() == {}
    with pytest.raises(EngineError, match="may be paused for 0 seconds more"):
        capped.pause(1, SHELL)
    play_out(capped, clock)
    assert verify(record(capped)).ok


def test_a_cancelled_game_ends_without_a_winner_and_its_record_verifies(pure, clock):
    send(pure, clock, ALICE, "bid 5")
    to_deadline(pure, clock)
    pure.tick()
    box = Mailbox(pure)
    box.new()
    pure.cancel(1, SHELL, "the club closed")
    status = pure.status(1)
    assert status["state"] == "finished" and status["winner"] is None and status["seed"]
    told = box.new()
    assert sorted(m["to"] for m in told) == sorted(PLAYERS)
    assert all(status["seed"] in m["body"] and "the club closed" in m["body"] for m in told)
    assert pure.next_due() == []  # its open phase is never resolved
    published = record(pure)
    verdict = verify(published)
    assert verdict.ok and "cancelled: the club closed" in verdict.message, verdict
    forged = copy.deepcopy(published)
    forged["interventions"][-1]["why"] = "the winner cheated"
    assert verify(forged).digests[-1] != verdict.digests[-1]  # the end's digest covers it
    forged = copy.deepcopy(published)
    forged["interventions"].pop()
    assert not verify(forged).ok  # a record that ends early, not cancelled


def test_a_cancel_needs_a_reason(pure):
    with pytest.raises(EngineError, match="say why"):
        pure.cancel(1, SHELL, " ")


def test_a_newcomer_takes_a_seat_gets_its_hand_and_time_and_can_win(pure, clock):
    box = Mailbox(pure)
    box.new()
    clock.advance(days=2)
    old_deadline = pure.status(1)["phase"]["deadline"]
    bobs = seat_address(pure, BOB)
    pure.replace(1, BOB, "dora@example.net", SHELL, "Bob moved abroad")
    assert from_iso(pure.status(1)["phase"]["deadline"]) == clock() + timedelta(days=3)  # a fresh deadline
    assert from_iso(old_deadline) < clock() + timedelta(days=3)
    told = [(m["to"], m["subject"].split("] ")[1]) for m in box.new()]
    assert told == [
        (BOB, "You no longer play in game 1"),
        (ALICE, "dora takes over seat 2 from bob"),
        (CAROL, "dora takes over seat 2 from bob"),
        ("dora@example.net", "Welcome to game 1: you play seat 2"),
        ("dora@example.net", "Round 1 of 13: the prize is the " + told[-1][1].rpartition("the ")[2]),
    ]
    welcome = box.to("dora@example.net")[0]["body"]
    assert "Your hand (diamonds): A 2 3 4 5 6 7 8 9 10 J Q K" in welcome and "Bob moved abroad" in welcome
    assert pure.ingest(make_mail(BOB, "bid 5", to=bobs, received=clock())).code == "refused"  # Bob plays no more
    assert send(pure, clock, "dora@example.net", "bid 5").code == "move"
    play_out(pure, clock)
    published = record(pure)
    assert published["players"][1]["name"] == "dora"
    assert [(i["act"], i["was"], i["name"]) for i in published["interventions"]] == [("replace", "bob", "dora")]
    assert verify(published).ok


def test_a_bot_seat_is_taken_over_where_the_rules_allow_it(turns, pure, clock):
    turns.resign(1, BOB)
    clock.advance(hours=1)
    turns.replace(1, "seat 2", "dora@example.net", SHELL)
    play_out(turns, clock)
    published = record(turns)
    [taken] = published["interventions"]
    assert taken["bot_from_phase"] is not None and taken["left_at"] is not None
    assert published["players"][1]["bot_from_phase"] is None
    verdict = verify(published)
    assert verdict.ok, verdict
    forged = copy.deepcopy(published)
    forged["interventions"][0]["bot_from_phase"] += 1
    assert not verify(forged).ok


def test_pure_skill_keeps_a_bots_seat_a_bots(pure, clock):
    pure.resign(1, BOB)
    with pytest.raises(EngineError, match="keep a bot's seat a bot's"):
        pure.replace(1, "2", "dora@example.net", SHELL)


def test_the_keepers_words_reach_every_player_or_one_and_only_the_public_ones_are_published(pure, clock):
    box = Mailbox(pure)
    box.new()
    pure.say(1, "Round 2 starts late: the server moves on Sunday.", SHELL)
    pure.say(1, "Please answer your mail, Carol.", SHELL, seat=CAROL)
    mails = box.new()
    assert sorted(m["to"] for m in mails) == sorted([*PLAYERS, CAROL])
    assert [m["to"] for m in mails if "Please answer" in m["body"]] == [CAROL]
    play_out(pure, clock)
    published = record(pure)
    assert [(i["text"], i["seat"]) for i in published["interventions"]] == [
        ("Round 2 starts late: the server moves on Sunday.", None),
        (None, 2),
    ]
    assert "Please answer" not in str(published)
    assert verify(published).ok


def test_an_altered_deadline_move_is_refused(pure, clock):
    pure.extend(1, timedelta(days=1), SHELL)
    play_out(pure, clock)
    published = record(pure)
    forged = copy.deepcopy(published)
    forged["interventions"][0]["new"] = forged["phases"][0]["deadline"] = "2026-11-30T12:00:00Z"
    verdict = verify(forged)
    assert not verdict.ok


def test_the_site_shows_a_pause_the_acts_and_a_cancelled_end(pure, clock, tmp_path):
    pure.extend(1, timedelta(days=1), SHELL, "Bob <asked> & got it")
    pure.pause(1, SHELL, "holidays", until=clock() + timedelta(days=5))
    Site(pure, tmp_path / "site").render()
    running = page(tmp_path / "site", "games/1/index.html").text
    assert "Paused by the keeper since" in running and "Deadline:" not in running
    assert "the keeper moved the deadline from" in running and "(Bob <asked> & got it)" in running
    assert "the keeper paused the game until" in running
    pure.resume(1, SHELL)
    pure.cancel(1, SHELL, "the club closed")
    Site(pure, tmp_path / "site").render()
    ended = page(tmp_path / "site", "games/1/index.html").text
    assert "The keeper cancelled the game on" in ended and "the club closed. There is no winner." in ended
    assert "Now:" not in ended


def test_a_paused_games_calendar_index_and_list_show_the_pause_not_a_stale_deadline(pure, clock, tmp_path):
    """While paused, no deadline runs: the calendar offers no deadline and no
    alarm but the pause's end, and the index and LIST say it is paused, and
    until when, not "deadline ... (any moment now)"; resumed, the moved
    deadline is back in all three."""
    import icalendar

    pure.pause(1, SHELL, "holidays")  # until the cap: 30 days
    clock.advance(days=4)  # past the deadline it had
    site = tmp_path / "site"
    Site(pure, site).render()
    ics = (site / "games/1/deadlines.ics").read_bytes()
    [event] = icalendar.Calendar.from_ical(ics).walk("VEVENT")
    assert str(event["SUMMARY"]) == "Game 1 (Game of Pure Skill): the keeper's pause ends, Round 1 of 13 goes on"
    assert event.decoded("DTSTART") == from_iso("2026-12-21T12:00:00Z") and not event.walk("VALARM")
    assert "Paused by the keeper since 2026-11-21 12:00 UTC, until 2026-12-21 12:00 UTC" in str(event["DESCRIPTION"])
    assert b"closes" not in ics
    index = page(site, "index.html").text
    assert "Round 1 of 13, paused by the keeper since 2026-11-21 12:00 UTC, until 2026-12-21 12:00 UTC" in index
    assert "any moment now" not in index and "deadline" not in index
    box = Mailbox(pure)
    box.new()
    assert send(pure, clock, ALICE, "list").code == "done"
    [listed] = box.new()
    expected = "game 1, Game of Pure Skill: Round 1 of 13, paused by the keeper since 2026-11-21 12:00 UTC, until"
    assert expected in listed["body"] and "deadline" not in listed["body"]
    pure.resume(1, SHELL)
    deadline = pure.status(1)["phase"]["deadline"]
    assert deadline == "2026-11-28T12:00:00Z"  # three days, moved by the four of the pause
    Site(pure, site).render()
    [event] = icalendar.Calendar.from_ical((site / "games/1/deadlines.ics").read_bytes()).walk("VEVENT")
    assert "Round 1 of 13 closes" in str(event["SUMMARY"]) and event.walk("VALARM")
    assert event.decoded("DTSTART") == from_iso(deadline)
    index = page(site, "index.html")
    assert "deadline 2026-11-28 12:00 UTC;" in index.text  # "(in 3 days)" after it: the reader's browser adds it
    assert [attrs["datetime"] for tag, attrs in index.tags if tag == "time" and "data-left" in attrs] == [deadline]
    send(pure, clock, ALICE, "list")
    assert "deadline 2026-11-28 12:00 UTC" in box.new()[-1]["body"]


def test_a_newcomer_in_a_vanished_players_seat_plays_on_and_wins(engine, clock, seeds):
    """Bob vanishes after round 1; Dora takes his seat and bids her highest
    card every round while the others miss every deadline: she wins, and
    the published record, read by anyone, says so and verifies."""
    seeds.fixed = bytes([1]) * 32  # a game she wins so (as with about one seed in three)
    engine.new_game("pure-skill", PLAYERS)
    to_deadline(engine, clock)
    engine.tick()  # round 1: everyone bids at random
    engine.replace(1, BOB, "dora@example.net", SHELL, "Bob vanished")
    while engine.status(1)["state"] == "running":
        hand = engine.table(1).state.hands[1]
        best = max(hand)
        assert send(engine, clock, "dora@example.net", f"bid {card_name(best)}").code == "move"
        to_deadline(engine, clock)
        engine.tick()
    published = record(engine)
    assert published["winner"] == "dora" == engine.status(1)["winner"].partition("@")[0]
    verdict = verify(published)
    assert verdict.ok and verdict.message.endswith("winner: dora"), verdict


def test_a_turn_based_game_paused_across_its_deadline_waits_and_goes_on(turns, clock):
    mover = turns.status(1)["phase"]["waiting_for"]
    turns.pause(1, SHELL, "a dispute")
    clock.advance(days=9)
    assert turns.tick() == [] and turns.status(1)["phase"]["waiting_for"] == mover  # nobody moved at random
    turns.resume(1, SHELL)
    play_out(turns, clock)
    verdict = verify(record(turns))
    assert verdict.ok, verdict


# -- what a review found (each a game a keeper or a player would live through) --

DORA = "dora@example.net"


def held_digests(engine: Engine) -> set[tuple[str, str]]:
    """Every (label, digest) line any mail of the referee carried."""
    held: set[tuple[str, str]] = set()
    for row in engine.store.outbox(None):
        held.update(mail_digests(_text(row["raw"])))
    return held


def test_a_seat_left_twice_in_one_phase_stays_a_bot_and_cannot_win(config, clock, seeds):
    seeds.fixed = bytes([1]) * 32
    engine = Engine(Store(config.database), config, clock, seeds)
    engine.new_game("priority", PLAYERS, options={"turn_limit": 2})
    engine.resign(1, BOB)
    engine.replace(1, "seat 2", DORA, SHELL)
    engine.resign(1, DORA)  # Dora changes her mind at once: a bot plays seat 2 again
    to_deadline(engine, clock)
    engine.tick()
    to_deadline(engine, clock)
    engine.tick()
    table = engine.table(1)
    assert not table.human(1)
    assert 1 in table.state.bots  # the rules must know a bot plays it
    play_out(engine, clock)
    published = record(engine)
    assert published["winner"] != "dora"  # (with this seed the bot's seat would have been declared the winner)
    assert verify(published).ok


def test_a_cancelled_game_whose_player_left_in_its_last_phase_verifies(pure, clock):
    to_deadline(pure, clock)
    pure.tick()
    clock.advance(hours=1)
    pure.resign(1, BOB)
    clock.advance(hours=1)
    pure.cancel(1, SHELL, "two players left: the club closes the game")
    verdict = verify(record(pure))
    assert verdict.ok, verdict


def test_a_newcomer_in_a_bots_seat_who_moves_in_the_same_sealed_phase_verifies(config, clock, seeds):
    seeds.fixed = bytes([3]) * 32
    engine = Engine(Store(config.database), config, clock, seeds)
    engine.new_game("bid", PLAYERS)
    engine.resign(1, BOB)
    to_deadline(engine, clock)
    engine.tick()  # Auction 1 resolved; the next sealed phase open, the bot's bid made at once
    clock.advance(hours=1)
    engine.replace(1, "bot 2", DORA, SHELL)
    table = engine.table(1)
    bid = table.rules.move_text(table.rules.legal_moves(table.state, 1)[0])
    assert send(engine, clock, DORA, bid).code == "refused"  # the bot's bid stands: she plays from the next phase
    play_out(engine, clock)
    verdict = verify(record(engine))
    assert verdict.ok, verdict


def test_say_after_an_outage_does_not_fill_in_random_moves(config, clock, seeds):
    config = replace(config, outage_gap=timedelta(hours=6))
    engine = Engine(Store(config.database), config, clock, seeds)
    engine.new_game("pure-skill", PLAYERS)
    engine.tick()
    send(engine, clock, ALICE, "bid 5")
    clock.advance(days=4)  # the referee was down across the round's deadline
    engine.say(1, "Sorry: the server was down.", SHELL)
    assert engine.status(1)["phase"]["number"] == 1  # Bob and Carol are owed the grace, not random bids


def test_an_outage_across_a_pauses_end_still_gets_the_grace(config, clock, seeds):
    config = replace(config, outage_gap=timedelta(hours=6))
    engine = Engine(Store(config.database), config, clock, seeds)
    engine.new_game("pure-skill", PLAYERS)
    engine.tick()
    engine.pause(1, SHELL, "holidays", until=clock() + timedelta(days=1))
    engine.tick()
    clock.advance(days=6)  # down from before the pause's end until after the resumed deadline
    engine.tick()
    assert engine.status(1)["phase"]["number"] == 1


def test_a_namesake_newcomer_keeps_the_digests_the_players_hold(pure, clock):
    clock.advance(hours=5)
    pure.replace(1, BOB, "carol@example.net", SHELL)
    play_out(pure, clock)
    verdict = verify(record(pure))
    assert verdict.ok, verdict
    mine = {(d.label, d.digest) for d in verdict.digests}
    assert held_digests(pure) <= mine


def test_a_keepers_act_after_a_pauses_end_but_before_the_tick_verifies(pure, clock):
    pure.pause(1, SHELL, "holidays", until=clock() + timedelta(days=1))
    clock.advance(days=2)  # cron has not run since the pause's end
    pure.say(1, "Back from the holidays.", SHELL)
    pure.tick()
    play_out(pure, clock)
    verdict = verify(record(pure))
    assert verdict.ok, verdict


def test_a_move_after_the_resumed_deadline_is_late(pure, clock):
    pure.pause(1, SHELL, "holidays", until=clock() + timedelta(days=1))
    clock.advance(days=5)  # the resumed deadline (3 days + the 1-day pause) has passed
    assert send(pure, clock, ALICE, "bid 5").code == "refused"


def test_verify_binds_a_newcomers_name(config, clock, seeds):
    seeds.fixed = bytes([2]) * 32
    engine = Engine(Store(config.database), config, clock, seeds)
    engine.new_game("pure-skill", PLAYERS)
    clock.advance(hours=5)
    engine.replace(1, BOB, DORA, SHELL)
    play_out(engine, clock)
    genuine = record(engine)
    assert genuine["winner"] != "dora"  # (this seed: else the end digest would see the renamed winner)
    forged = copy.deepcopy(genuine)
    forged["players"][1]["name"] = "mallory"
    verdict = verify(forged)
    assert not verdict.ok or verdict.digests != verify(genuine).digests


def test_a_newcomers_fresh_deadline_is_told_to_the_other_players(pure, clock):
    box = Mailbox(pure)
    box.new()
    clock.advance(days=2)
    pure.replace(1, BOB, DORA, SHELL)
    new = pure.status(1)["phase"]["deadline"]
    assert new != "2026-11-24T12:00:00Z"
    [to_alice] = [m for m in box.new() if m["to"] == ALICE]
    assert "2026-11-26" in to_alice["subject"] + to_alice["body"]


def test_a_game_made_within_a_second_verifies_with_and_without_a_deadline_moved(engine, clock):
    """A phase opened at 12:00:00.5 says so as 12:00:00, and its deadline,
    rounded up, is a second more than the deadline after that: verify
    allows that second, and only it."""
    clock.advance(seconds=0.5)
    engine.new_game("pure-skill", PLAYERS)
    engine.new_game("pure-skill", PLAYERS)
    first = engine.status(1)["phase"]
    assert from_iso(first["deadline"]) - from_iso(engine.table(1).phases[0]["opened_at"]) == timedelta(
        days=3, seconds=1
    )
    engine.extend(2, timedelta(hours=5), SHELL)
    play_out(engine, clock, 1)
    play_out(engine, clock, 2)
    assert verify(record(engine, 1)).ok and verify(record(engine, 2)).ok
    forged = record(engine, 1)
    forged["phases"][0]["deadline"] = iso(from_iso(forged["phases"][0]["deadline"]) + timedelta(seconds=1))
    assert not verify(forged).ok
