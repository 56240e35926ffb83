"""`referee verify`: a finished game replayed from its published record alone.

A whole game is played through the engine (bids by mail, random bids at the
deadlines, a player who leaves and a bot that takes the seat), its record is
built as the site publishes it, and then checked as anyone would check it:
genuine, it verifies; with one bid, one prize, one random draw, the seed, the
winner or a phase altered, it fails at exactly the phase that was altered."""

from __future__ import annotations

import copy
import functools
import http.server
import itertools
import json
import os
import re
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import PLAYERS, FakeClock, Seeds, body_of, reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.cli import main
from referee.config import Config
from referee.engine import Engine
from referee.record import commitment, mail_digests, resolve_rng, setup_rng, verify
from referee.rules import get_game
from referee.rules.pure_skill import card_name
from referee.site.public import game_record
from referee.site.render import Site
from referee.store import Store

ALICE, BOB, CAROL = PLAYERS
SEED = bytes(32)  # with this seed and play(), alice wins: the game has a winner to name
OTHER_SEED = bytes(range(1, 33))
_SERIAL = itertools.count(1)


# -- playing a game --------------------------------------------------------------------


def fresh_engine(clock: FakeClock, seed: bytes | None = None) -> Engine:
    """An engine in memory whose new games have ``seed`` (unset: the system's)."""
    config = Config(address="referee@example.org", database=Path(":memory:"), reminder=None, outage_gap=None)
    return Engine(Store(":memory:"), config, clock, Seeds(seed))


def hand(engine: Engine, game: int, seat: int) -> list[int]:
    return sorted(engine.table(game).state.hands[seat])


def bid(engine: Engine, game: int, player: str, card: int) -> None:
    outcome = engine.ingest(
        reply(engine, player, f"bid {card_name(card)}", game=game, message_id=f"<verify-{next(_SERIAL)}@example.net>")
    )
    assert outcome.code in ("move", "replaced"), outcome


def open_number(engine: Engine, game: int) -> int | None:
    phase = engine.table(game).open_phase
    return phase["number"] if phase else None


def play(engine: Engine, clock: FakeClock) -> int:
    """A whole game: rounds 1-3 all by mail; carol misses round 4 and bob
    round 5 (random bids at the deadline); carol leaves in round 6 and a bot
    plays her seat from then on; bob misses every even round after that;
    round 13 is forced; ``engine``'s games have SEED.  Returns the game's id."""
    game = engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=1))
    assert engine.store.game(game)["seed"] == SEED.hex()
    seat = {p: i for i, p in enumerate(PLAYERS)}
    for number in range(1, 13):
        assert open_number(engine, game) == number
        clock.advance(hours=1)
        if number == 6:
            bid(engine, game, ALICE, max(hand(engine, game, seat[ALICE])))
            engine.resign(game, CAROL)
            bid(engine, game, BOB, min(hand(engine, game, seat[BOB])))
            continue
        if number != 5 and not (number > 6 and number % 2 == 0):
            bid(engine, game, BOB, min(hand(engine, game, seat[BOB])))
        cards = hand(engine, game, seat[ALICE])
        bid(engine, game, ALICE, cards[len(cards) // 2])
        if number < 6 and number != 4:
            bid(engine, game, CAROL, max(hand(engine, game, seat[CAROL])))
        if open_number(engine, game) == number:  # someone missed it: the deadline passes
            clock.advance(days=1, seconds=1)
            engine.tick()
    assert engine.table(game).row["state"] == "finished"
    return game


@pytest.fixture(scope="module")
def played() -> tuple[dict, str]:
    """The finished game's record, and its winner's address (played once)."""
    clock = FakeClock()
    engine = fresh_engine(clock, SEED)
    game = play(engine, clock)
    return game_record(engine.table(game)), engine.status(game)["winner"]


@pytest.fixture
def record(played) -> dict:
    return copy.deepcopy(played[0])


def moves_of(record: dict, source: str) -> list[tuple[int, dict]]:
    """(phase number, move) of every move made ``source``-wise, in order."""
    return [(p["number"], m) for p in record["phases"] for m in p["moves"] if m["source"] == source]


def hand_before(record: dict, number: int, seat: int) -> set[int]:
    """A seat's cards at the start of phase ``number``, from the record."""
    played_cards = {p["events"][0]["bids"][seat] for p in record["phases"] if p["number"] < number}
    return set(range(1, 14)) - played_cards


def phase_entry(record: dict, number: int) -> dict:
    return next(p for p in record["phases"] if p["number"] == number)


def round_label(number: int) -> str:
    """A Pure Skill phase as the mails name it."""
    return f"Round {number} of 13"


@pytest.fixture
def run_verify(tmp_path, capsys):
    """``run_verify(record)`` -> (exit status, stdout, stderr) of `referee verify FILE`."""

    def run(data: dict, *extra: str) -> tuple[int, str, str]:
        """The verdict is the last line; what it checked comes before it."""
        path = tmp_path / f"record-{next(_SERIAL)}.json"
        path.write_text(json.dumps(data, indent=1), encoding="utf-8")
        status = main([*extra, "verify", str(path)])
        out, err = capsys.readouterr()
        return status, out.splitlines()[-1] + "\n" if out else "", err

    return run


# -- the genuine record ------------------------------------------------------------------


def test_the_game_played_has_every_kind_of_move(record):
    """The scenario the other tests rely on: mail, random, bot and forced moves, a resignation."""
    sources = {m["source"] for p in record["phases"] for m in p["moves"]}
    assert sources == {"mail", "random", "bot", "forced"}
    assert [p["bot_from_phase"] for p in record["players"]] == [None, None, 6]
    assert record["seed"] == SEED.hex()
    assert record["seed_commitment"] == commitment(SEED)
    assert [p["number"] for p in record["phases"]] == list(range(1, 14))
    assert record["winner"] == "alice"


def test_a_genuine_record_verifies_with_the_winners_public_name(played, record, run_verify):
    _, winner = played
    status, out, err = run_verify(record)
    assert (status, err) == (0, "")
    assert out.startswith("verified")
    assert out.strip() == f"verified: 13 phases replay exactly; winner: {winner.partition('@')[0]}"
    assert "@" not in out


def test_verify_needs_no_database_nor_config(record, run_verify, tmp_path, monkeypatch):
    """The record alone: a config naming a database in a folder that does
    not exist, and any attempt to open a store, changes nothing."""
    config = tmp_path / "referee.toml"
    config.write_text(f'[referee]\naddress = "referee@example.org"\ndatabase = "{tmp_path / "nowhere" / "games.db"}"\n')

    def no_store(*args, **kwargs):
        raise AssertionError("verify opened a store")

    monkeypatch.setattr("referee.cli.Store", no_store)
    monkeypatch.setattr("referee.store.Store.__init__", no_store)
    status, out, _ = run_verify(record, "--config", str(config))
    assert status == 0 and out.startswith("verified")
    status, out, _ = run_verify(record, "--config", str(tmp_path / "missing.toml"))
    assert status == 0 and out.startswith("verified")
    assert not (tmp_path / "nowhere").exists()


def test_verify_is_pure(record):
    """Same answer twice, and the record is left as it was."""
    before = copy.deepcopy(record)
    first, second = verify(record), verify(record)
    assert first == second and first.ok
    assert record == before


# -- altered records --------------------------------------------------------------------


def alter_mail_bid_to_a_held_card(record: dict) -> tuple[int, str, str]:
    number, move = moves_of(record, "mail")[4]
    held = hand_before(record, number, move["seat"]) - {phase_entry(record, number)["events"][0]["bids"][move["seat"]]}
    move["move"] = f"bid {card_name(max(held))}"
    return number, round_label(number), "not what the rules make of its moves"


def alter_mail_bid_to_a_used_card(record: dict) -> tuple[int, str, str]:
    number, move = moves_of(record, "mail")[6]
    used = set(range(1, 14)) - hand_before(record, number, move["seat"])
    assert used
    move["move"] = f"bid {card_name(min(used))}"
    return number, round_label(number), "no longer hold"


def alter_prize(record: dict) -> tuple[int, str, str]:
    entry = phase_entry(record, 7)
    event = entry["events"][0]
    event["prize"] = next(c for c in range(1, 14) if c != event["prize"])
    return 7, round_label(7), "not what the rules make of its moves"


def alter_random_bid(record: dict) -> tuple[int, str, str]:
    number, move = moves_of(record, "random")[1]
    counted = phase_entry(record, number)["events"][0]["bids"][move["seat"]]
    other = sorted(hand_before(record, number, move["seat"]) - {counted})[0]
    move["move"] = f"bid {card_name(other)}"
    return number, round_label(number), "but the seed draws"


def alter_bot_bid(record: dict) -> tuple[int, str, str]:
    number, move = moves_of(record, "bot")[2]
    counted = phase_entry(record, number)["events"][0]["bids"][move["seat"]]
    other = sorted(hand_before(record, number, move["seat"]) - {counted})[-1]
    move["move"] = f"bid {card_name(other)}"
    return number, round_label(number), "but the seed draws"


def alter_random_bid_and_its_events(record: dict) -> tuple[int, str, str]:
    """A forger who also fixes up the phase's result still meets the seed."""
    number, move = moves_of(record, "random")[0]
    event = phase_entry(record, number)["events"][0]
    other = sorted(hand_before(record, number, move["seat"]) - {event["bids"][move["seat"]]})[0]
    move["move"] = f"bid {card_name(other)}"
    event["bids"][move["seat"]] = other
    return number, round_label(number), "but the seed draws"


def alter_winner(record: dict) -> tuple[int, str, str]:
    record["winner"] = "bob"
    return 13, "after Round 13 of 13", "the replay's winner is alice, the record says bob"


def remove_last_phase(record: dict) -> tuple[int, str, str]:
    record["phases"].pop()
    return 13, "Round 13 of 13", "the record ends before the game does"


def remove_a_middle_phase(record: dict) -> tuple[int, str, str]:
    """Phase 6 then stands where the rules expect round 5, and its number gives it away."""
    del record["phases"][4]
    for entry in record["phases"][4:]:
        entry["number"] -= 1  # renumbered to hide the gap: the rules' labels still tell
    return 5, "Round 5 of 13", "the record calls this phase 'Round 6 of 13'"


def relabel_a_phase(record: dict) -> tuple[int, str, str]:
    """The rules' label names the phase, not the record's."""
    phase_entry(record, 3)["label"] = "Round 9 of 13"
    return 3, "Round 3 of 13", "the record calls this phase 'Round 9 of 13'"


def add_a_phase_after_the_end(record: dict) -> tuple[int, str, str]:
    record["phases"].append({**copy.deepcopy(record["phases"][-1]), "number": 14, "label": "Round 14 of 13"})
    return 14, "after the game's end", "the record goes on with a phase it calls 'Round 14 of 13'"


def swap_seed_and_commitment(record: dict) -> tuple[int, str, str]:
    """Another seed with its own commitment: the draws then differ from round 1."""
    record["seed"], record["seed_commitment"] = OTHER_SEED.hex(), commitment(OTHER_SEED)
    return 1, round_label(1), "not what the rules make of its moves"


ALTERATIONS = [
    alter_mail_bid_to_a_held_card,
    alter_mail_bid_to_a_used_card,
    alter_prize,
    alter_random_bid,
    alter_bot_bid,
    alter_random_bid_and_its_events,
    alter_winner,
    remove_last_phase,
    remove_a_middle_phase,
    relabel_a_phase,
    add_a_phase_after_the_end,
    swap_seed_and_commitment,
]


@pytest.mark.parametrize("alter", ALTERATIONS, ids=lambda f: f.__name__)
def test_an_altered_record_fails_at_the_altered_phase(record, run_verify, alter):
    """Named as the mails name it (the rules' label: "Round 7 of 13"), its number kept for programs."""
    number, where, reason = alter(record)
    verdict = verify(record)
    assert not verdict.ok
    assert verdict.phase == number, verdict
    assert reason in verdict.message
    status, out, err = run_verify(record)
    assert (status, err) == (1, "")
    assert out.startswith(f"NOT verified: {where}: "), out
    assert reason in out
    assert out.count(where) == 1  # named once, not twice
    assert not re.search(r"phase \d", out)


def test_the_first_of_two_altered_phases_is_the_one_named(record):
    alter_prize(record)  # phase 7
    number, move = moves_of(record, "mail")[-1]  # a later one
    assert number > 7
    move["move"] = "bid K" if move["move"] != "bid K" else "bid Q"
    verdict = verify(record)
    assert (verdict.ok, verdict.phase) == (False, 7)


def reforge(record: dict) -> dict:
    """What a referee who knows the seed could publish after changing some
    moves: every phase's events and the winner made again by the rules from
    the record's moves, with no check of where a move came from."""
    game, seed = get_game(record["game"]["kind"]), bytes.fromhex(record["seed"])
    players = record["players"]
    state = game.setup(len(players), setup_rng(seed), record["game"]["options"])
    for player in players:
        if player["bot_from_phase"] == 0:
            state = game.replace_by_bot(state, player["seat"])
    for entry in record["phases"]:
        for player in players:
            if player["bot_from_phase"] == entry["number"]:
                state = game.replace_by_bot(state, player["seat"])
        moves = {m["seat"]: game.parse_move(state, m["seat"], m["move"]) for m in entry["moves"]}
        state, events = game.resolve(state, moves, resolve_rng(seed, entry["number"]))
        entry["events"] = json.loads(json.dumps(events))
    result = game.result(state)
    record["winner"] = None if result.winner is None else players[result.winner]["name"]
    return record


def test_reforging_a_genuine_record_changes_nothing(record):
    """The forger's tool of the next tests is faithful: it makes the genuine record again."""
    assert reforge(copy.deepcopy(record)) == record


def swap_bids(record: dict, number: int, seat: int, source: str | None = None) -> int:
    """A forger's change that keeps every bid legal: the seat's bid in phase
    ``number`` becomes its highest other card still held, and the later bid
    of that card becomes the one it replaces (both moves relabelled
    ``source`` if given).  Returns the later phase's number."""
    entry = phase_entry(record, number)
    counted = entry["events"][0]["bids"][seat]
    other = max(hand_before(record, number, seat) - {counted})
    later = next(p for p in record["phases"] if p["number"] > number and p["events"][0]["bids"][seat] == other)
    for phase, card in ((entry, other), (later, counted)):
        move = next(m for m in phase["moves"] if m["seat"] == seat)
        move["move"] = f"bid {card_name(card)}"
        if source:
            move["source"] = source
    return later["number"]


def test_a_forged_random_bid_with_consistent_results_still_fails_at_its_phase(record):
    """Results made consistent with a changed random bid: the seed still says otherwise."""
    number, move = moves_of(record, "random")[2]
    genuine_events = copy.deepcopy(phase_entry(record, number)["events"])
    swap_bids(record, number, move["seat"])
    forged = reforge(record)
    assert phase_entry(forged, number)["events"] != genuine_events  # the results were fixed up
    verdict = verify(forged)
    assert (verdict.ok, verdict.phase) == (False, number)
    assert "but the seed draws" in verdict.message


def test_a_bots_bid_relabelled_as_mail_fails_at_its_phase(record):
    """Carol left in phase 6: from phase 7 on her seat's bids are the bot's,
    drawn from the seed.  None of them can have come by mail."""
    number, move = next((n, m) for n, m in moves_of(record, "bot") if n > 6)
    for _, later in moves_of(record, "bot"):  # the bot's later draws would give the game away
        later["source"] = "mail"
    swap_bids(record, number, move["seat"])
    verdict = verify(reforge(record))
    assert (verdict.ok, verdict.phase) == (False, number), verdict


# -- how each move was made -------------------------------------------------------------


@pytest.fixture(scope="module")
def late() -> dict:
    """The record of a finished game in which carol misses round 1 (a random
    bid out of 13 cards) and every other bid of rounds 1-12 comes by mail;
    round 13's are forced."""
    clock = FakeClock()
    engine = fresh_engine(clock)
    game = engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=1))
    seat = {p: i for i, p in enumerate(PLAYERS)}
    for number in range(1, 13):
        clock.advance(hours=1)
        assert open_number(engine, game) == number
        for player in PLAYERS if number > 1 else (ALICE, BOB):
            bid(engine, game, player, min(hand(engine, game, seat[player])))
        if open_number(engine, game) == number:  # carol's missing bid: the deadline passes
            clock.advance(days=1, seconds=1)
            engine.tick()
    assert engine.table(game).row["state"] == "finished"
    return json.loads(json.dumps(game_record(engine.table(game))))


def test_the_last_round_is_forced_and_verifies(late):
    """A seat with one card left has one legal bid: that forced bid verifies."""
    sources = {(p["number"], m["source"]) for p in late["phases"] for m in p["moves"]}
    assert {(n, s) for n, s in sources if s != "mail"} == {(1, "random"), (13, "forced")}
    assert verify(late).ok


def test_a_random_bid_replaced_and_relabelled_forced_fails_at_its_round(late, run_verify):
    """The issue's forgery: carol's random bid of round 1, with 13 cards in
    hand, becomes another card marked forced (her later bid of that card
    becomes the one replaced), and every later round is recomputed so the
    results agree."""
    record = copy.deepcopy(late)
    carol = PLAYERS.index(CAROL)
    assert len(hand_before(record, 1, carol)) == 13
    later = swap_bids(record, 1, carol)
    next(m for m in phase_entry(record, 1)["moves"] if m["seat"] == carol)["source"] = "forced"
    forged = reforge(record)
    assert phase_entry(forged, later)["events"] != phase_entry(late, later)["events"]  # recomputed
    verdict = verify(forged)
    assert (verdict.ok, verdict.phase) == (False, 1), verdict
    status, out, _ = run_verify(forged)
    assert status == 1
    assert out.startswith("NOT verified: Round 1 of 13: seat 3's move "), out
    assert "is marked forced, but the seat had 13 legal moves" in out


def test_a_mail_bid_relabelled_forced_fails_at_its_round(record):
    """A bid by mail, out of 12 cards, is no forced bid either."""
    entry = phase_entry(record, 2)
    entry["moves"][0]["source"] = "forced"
    verdict = verify(record)
    assert (verdict.ok, verdict.phase) == (False, 2), verdict
    assert verdict.message.startswith("Round 2 of 13: ") and "marked forced" in verdict.message


@pytest.mark.parametrize("source", ["timeout", "referee", "Random", ""])
def test_a_move_marked_any_other_way_is_refused(record, source):
    """Only the ways the engine makes a move are known; any other label
    would let a move escape its check (here: carol's random bid of round 4)."""
    number, move = moves_of(record, "random")[0]
    move["source"] = source
    verdict = verify(record)
    assert (verdict.ok, verdict.phase) == (False, number), verdict
    assert verdict.message.startswith(f"Round {number} of 13: seat {move['seat'] + 1}'s move is marked {source!r}")


@pytest.mark.parametrize("source", [None, 1, ["random"]])
def test_a_move_marked_by_no_text_is_refused_as_no_record(record, source):
    _, move = moves_of(record, "random")[0]
    move["source"] = source
    verdict = verify(record)
    assert not verdict.ok and verdict.message == "a move's source in phase 4 of the record is not text"


def test_a_persons_random_bid_relabelled_as_a_bots_before_she_left_fails(record):
    """Carol left in round 6; her random bid of round 4 was not a bot's,
    though a bot's bid would come from the same stream."""
    number, move = moves_of(record, "random")[0]
    assert move["seat"] == PLAYERS.index(CAROL) and number < 6
    move["source"] = "bot"
    verdict = verify(record)
    assert (verdict.ok, verdict.phase) == (False, number), verdict
    assert "is a person's, but its move is marked as a bot's" in verdict.message


# -- which seats were bots, and from when --------------------------------------------


def test_a_seat_whose_player_left_is_flagged_a_bot_from_the_phase_they_left(record):
    """Carol left in round 6: her seat is a bot's from phase 6 on, and the
    record says so in both fields; alice and bob played to the end."""
    flags = [(p["name"], p["bot"], p["bot_from_phase"]) for p in record["players"]]
    assert flags == [("alice", False, None), ("bob", False, None), ("carol", True, 6)]
    carol = record["players"][2]
    entry = phase_entry(record, 6)
    assert entry["opened_at"] <= carol["left_at"] <= entry["resolved_at"]
    assert [p["left_at"] for p in record["players"][:2]] == [None, None]


def test_bots_from_the_start_are_flagged_bots_from_phase_0():
    record = bots_record("pure-skill")
    assert [(p["name"], p["bot"], p["bot_from_phase"], p["left_at"]) for p in record["players"]] == [
        (f"bot {seat}", True, 0, None) for seat in (1, 2, 3)
    ]
    assert verify(record).ok


@pytest.mark.parametrize(
    ("seat", "field", "value", "message"),
    [
        (2, "bot", False, "seat 3 is flagged a person, but its bot_from_phase is 6"),
        (0, "bot", True, "seat 1 is flagged a bot, but its bot_from_phase is null"),
        (2, "bot_from_phase", None, "seat 3 is flagged a bot, but its bot_from_phase is null"),
        (0, "bot_from_phase", 6, "seat 1 is flagged a person, but its bot_from_phase is 6"),
        (2, "bot_from_phase", 0, "seat 3 is named 'carol': a bot from the start is named 'bot 3', and only it"),
        (2, "bot_from_phase", 14, "seat 3 became a bot in phase '14', which the record does not have"),
    ],
)
def test_a_seats_bot_flag_or_phase_changed_alone_is_refused_as_no_record(record, seat, field, value, message):
    """The flag and the phase say the same thing, and each is checked
    against the other: changing either one alone is a record no referee
    writes."""
    record["players"][seat][field] = value
    verdict = verify(record)
    assert (verdict.ok, verdict.phase, verdict.message) == (False, None, message)


@pytest.mark.parametrize(
    ("left", "failing", "message"),
    [
        (5, 5, "seat 3's player left at {left_at}, while the phase was not open"),
        (7, 6, "seat 3 is a person's, but its move is marked as a bot's"),
        (12, 6, "seat 3 is a person's, but its move is marked as a bot's"),
    ],
)
def test_a_seat_made_a_bot_from_another_phase_fails_at_the_phase_that_betrays_it(record, left, failing, message):
    """Carol's leaving moved to another phase (bot flag and all): in an
    earlier phase she left while it was not open; in a later one, her seat
    moved as a bot's before she left."""
    carol = record["players"][2]
    carol["bot_from_phase"] = left
    verdict = verify(record)
    assert (verdict.ok, verdict.phase) == (False, failing), verdict
    assert verdict.message == f"{round_label(failing)}: {message.format(left_at=carol['left_at'])}"


def test_a_bot_from_the_start_made_a_person_is_refused():
    record = bots_record("pure-skill")
    record["players"][0].update(bot=False, bot_from_phase=None)
    verdict = verify(record)
    assert not verdict.ok
    assert verdict.message == "seat 1 is named 'bot 1': a bot from the start is named 'bot 1', and only it"


def test_a_record_of_the_format_before_reads_its_bot_flag_as_from_the_start(record):
    """A referee-record/2 record (a copy saved before this format) said
    ``bot`` only of a bot from the start: read so, it verifies, with the
    same digests; flagged as this format flags it, it is refused."""
    genuine = verify(record)
    old = copy.deepcopy(record)
    old["format"] = "referee-record/2"
    assert old.pop("interventions") == []
    old["players"][2]["bot"] = False
    verdict = verify(old)
    assert verdict.ok, verdict
    assert verdict.digests == genuine.digests
    old["players"][2]["bot"] = True
    verdict = verify(old)
    assert (verdict.ok, verdict.message) == (False, "seat 3 is flagged a bot, but its bot_from_phase is 6")
    record["format"] = "referee-record/1"
    assert verify(record).message.startswith("not a referee-record/4 record (it is referee-record/1")


def test_two_moves_for_one_seat_in_a_phase_fail_at_that_phase(record):
    entry = phase_entry(record, 3)
    genuine = entry["moves"][0]
    other = min(hand_before(record, 3, genuine["seat"]) - {entry["events"][0]["bids"][genuine["seat"]]})
    entry["moves"].insert(0, {**genuine, "move": f"bid {card_name(other)}"})
    verdict = verify(record)
    assert (verdict.ok, verdict.phase) == (False, 3), verdict


def test_a_swapped_seed_fails_the_commitment_check(record, run_verify):
    record["seed"] = OTHER_SEED.hex()
    verdict = verify(record)
    assert (verdict.ok, verdict.phase) == (False, 0)
    assert "does not match the commitment" in verdict.message
    status, out, _ = run_verify(record)
    assert status == 1
    assert out.startswith("NOT verified")
    assert "the seed does not match the commitment announced at the start" in out


def test_the_record_the_site_publishes_verifies(tmp_path, capsys):
    """`referee render` then `referee verify games/N/record.json`: a game of
    three bots (over at once; bots are not players, so nobody wins)."""
    engine = fresh_engine(FakeClock())
    game = engine.new_game("pure-skill", [], bots=3)
    assert engine.table(game).row["state"] == "finished"
    Site(engine, tmp_path / "site").render()
    assert main(["verify", str(tmp_path / "site" / "games" / str(game) / "record.json")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "verified: 13 phases replay exactly; winner: nobody"


def test_a_record_of_a_running_game_is_refused(run_verify):
    clock = FakeClock()
    engine = fresh_engine(clock)
    game = engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=1))
    for player in PLAYERS:
        bid(engine, game, player, 13)
    record = game_record(engine.table(game))
    assert record["seed"] is None and len(record["phases"]) == 1
    status, out, _ = run_verify(record)
    assert status == 1
    assert out.strip() == "NOT verified: the game has not ended: its seed is still secret"


def test_a_record_that_is_not_json_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "record.json"
    path.write_text("<html>not a record</html>")
    assert main(["verify", str(path)]) == 2
    assert "cannot read" in capsys.readouterr().err


# -- from a web server ----------------------------------------------------------------


@pytest.fixture
def web_folder(tmp_path):
    """An http server on 127.0.0.1 serving tmp_path/www; yields (folder, base URL)."""
    folder = tmp_path / "www"
    folder.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep the test output clean
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_verify_reads_a_record_from_an_http_url(record, web_folder, capsys):
    folder, base = web_folder
    (folder / "games" / "1").mkdir(parents=True)
    (folder / "games" / "1" / "record.json").write_text(json.dumps(record), encoding="utf-8")
    assert main(["verify", f"{base}/games/1/record.json"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "verified: 13 phases replay exactly; winner: alice"
    alter_prize(record)
    (folder / "games" / "1" / "record.json").write_text(json.dumps(record), encoding="utf-8")
    assert main(["verify", f"{base}/games/1/record.json"]) == 1
    assert capsys.readouterr().out.splitlines()[-1].startswith("NOT verified: Round 7 of 13: ")


def test_verify_of_a_missing_url_is_a_usage_error(web_folder, capsys):
    _, base = web_folder
    assert main(["verify", f"{base}/games/9/record.json"]) == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "404" in err


# -- any game ------------------------------------------------------------------------------


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(
        st.lists(st.one_of(st.none(), st.integers(0, 12)), min_size=3, max_size=3), min_size=13, max_size=13
    ),
    leaver=st.one_of(st.none(), st.tuples(st.sampled_from(PLAYERS), st.integers(1, 12))),
    alter_at=st.tuples(st.integers(1, 13), st.integers(0, 2), st.integers(0, 12)),
)
def test_any_game_verifies_and_any_altered_bid_fails_at_its_phase(picks, leaver, alter_at):
    """Each round each seat bids a card of its choice, or misses the deadline;
    a player may leave.  The record verifies, naming the engine's winner; a
    different card for any one bid makes it fail at that phase, never earlier."""
    clock = FakeClock()
    engine = fresh_engine(clock)
    game = engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=6))
    for number, choices in enumerate(picks, start=1):
        if open_number(engine, game) != number:
            break
        clock.advance(minutes=10)
        if leaver and leaver[1] == number:
            engine.resign(game, leaver[0])
        for seat, choice in enumerate(choices):
            table = engine.table(game)
            if choice is None or open_number(engine, game) != number or not table.human(seat):
                continue
            if seat in engine.store.final_moves(game, number):
                continue  # forced (round 13)
            cards = hand(engine, game, seat)
            bid(engine, game, PLAYERS[seat], cards[choice % len(cards)])
        if open_number(engine, game) == number:
            clock.advance(hours=6, seconds=1)
            engine.tick()
    table = engine.table(game)
    assert table.row["state"] == "finished"
    record = json.loads(json.dumps(game_record(table)))  # as published
    verdict = verify(record)
    assert verdict.ok, verdict
    result = table.rules.result(table.state)
    winner = "nobody" if result.winner is None else PLAYERS[result.winner].partition("@")[0]
    assert verdict.message.endswith(f"winner: {winner}")

    number, seat, pick = alter_at
    move = next(m for m in phase_entry(record, number)["moves"] if m["seat"] == seat)
    counted = phase_entry(record, number)["events"][0]["bids"][seat]
    others = [c for c in range(1, 14) if c != counted]
    move["move"] = f"bid {card_name(others[pick % len(others)])}"
    altered = verify(record)
    assert (altered.ok, altered.phase) == (False, number), altered


# -- every kind of game ----------------------------------------------------------------------


def bots_record(kind: str) -> dict:
    """The published record of a finished game of three bots (over at once), from SEED."""
    engine = fresh_engine(FakeClock(), SEED)
    game = engine.new_game(kind, [], bots=3)
    assert engine.table(game).row["state"] == "finished"
    return json.loads(json.dumps(game_record(engine.table(game))))


def other_coins(text: str) -> str:
    return "coins 1" if text == "coins 0" else "coins 0"


def declined(text: str) -> str | None:
    return "decline" if text.startswith("score") else None


def passed(text: str) -> str | None:
    return "pass" if text != "pass" else None


@pytest.mark.parametrize(
    ("kind", "label", "change"),
    [
        ("bid", r"Auction (\d+): coin tie-break", other_coins),
        ("ice", r"Auction (\d+) scoring, offer (\d+)", declined),
        ("priority", r"Round ([2-9]|1\d) of \d+, turn (\d+)", passed),  # round 1's turn N is phase N
    ],
)
def test_each_kind_names_the_phase_as_its_mails_do(kind, label, change, run_verify):
    """A bot's move changed in Bid!'s coin tie-break, in an Ice Ice Baby
    scoring offer, or in a later round of Auction: verify names the phase by
    its label, which is not its number (a tie-break adds a phase, as does
    every turn of an auction)."""
    record = bots_record(kind)
    assert verify(record).ok
    entry, move = next(
        (e, m) for e in record["phases"] if re.fullmatch(label, e["label"]) for m in e["moves"] if change(m["move"])
    )
    assert f"{entry['number']}" not in re.fullmatch(label, entry["label"]).groups()
    move["move"] = change(move["move"])
    verdict = verify(record)
    assert (verdict.ok, verdict.phase) == (False, entry["number"]), verdict
    status, out, _ = run_verify(record)
    assert status == 1
    assert out.startswith(f"NOT verified: {entry['label']}: seat {move['seat'] + 1}'s random move"), out
    assert "but the seed draws" in out
    assert not re.search(r"phase \d", out)


def test_a_relabelled_bid_tie_break_is_named_by_the_rules_label():
    record = bots_record("bid")
    entry = next(e for e in record["phases"] if e["label"].endswith(": coin tie-break"))
    rules_label, entry["label"] = entry["label"], entry["label"].removesuffix(": coin tie-break")
    verdict = verify(record)
    assert (verdict.ok, verdict.phase) == (False, entry["number"]), verdict
    assert verdict.message == f"{rules_label}: the record calls this phase {entry['label']!r}"


# -- what a player can compare: the start mail's facts, and the digests every result mail carried ----


@pytest.fixture(scope="module")
def kept() -> tuple[dict, list[dict]]:
    """The finished game of ``play``, its record, and every mail the referee
    sent (rows of the outbox, with their raw bytes): what the players kept."""
    clock = FakeClock()
    engine = fresh_engine(clock, SEED)
    game = play(engine, clock)
    record = json.loads(json.dumps(game_record(engine.table(game))))
    return record, engine.store.outbox(None)


def saved(mails: list[dict], folder: Path, *, to: str = ALICE, subject: str = "") -> list[Path]:
    """The mails ``to`` got whose subject holds ``subject``, saved as .eml files, in order."""
    paths = []
    for index, mail in enumerate(m for m in mails if m["recipients"] == [to] and subject in m["subject"]):
        path = folder / f"{index:03d}.eml"
        path.write_bytes(mail["raw"])
        paths.append(path)
    return paths


def test_every_announcement_carries_the_records_digest_at_that_point(kept):
    """The start mail, each round's result and the final result (the digest
    at the end): one digest line each, the one `verify` recomputes for that
    point from the finished record; prompts and receipts carry none."""
    record, mails = kept
    digests = {d.label: d.digest for d in verify(record).digests}
    assert len(digests) == 15
    carried: dict[str, set[str]] = {}
    for mail in mails:
        body = body_of(mail["raw"])
        found = mail_digests(body)
        if "begins" in mail["subject"] or "Game over" in mail["subject"] or " of game 1 is resolved." in body:
            assert len(found) == 1, mail["subject"]
        else:
            assert found == [], mail["subject"]
        for label, digest in found:
            carried.setdefault(label, set()).add(digest)
    assert carried == {label: {digest} for label, digest in digests.items()}  # every copy the same, all there


def test_kept_mails_agree_with_the_genuine_record(kept, tmp_path, capsys):
    record, mails = kept
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    alice = [p for p in saved(mails, tmp_path, subject="Round") if mail_digests(p.read_text())]
    assert main(["verify", str(path), *[f"--mail={p}" for p in alice]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("verified")
    assert sum(": agrees (after Round" in line for line in lines) == 13  # alice's results of rounds 1-13
    start = saved(mails, tmp_path / "", subject="begins")
    assert main(["verify", str(path), "--mail", str(start[0])]) == 0
    assert f"{start[0]}: agrees (at the start: " in capsys.readouterr().out


def relabel_random_as_mail(record: dict) -> int:
    """Carol's random bid of round 4, marked as hers by mail: the move, its
    time (the deadline) and every result stay as they were."""
    number, move = moves_of(record, "random")[0]
    move["source"] = "mail"
    return number


def move_a_receipt_time(record: dict) -> int:
    number, move = moves_of(record, "mail")[3]
    entry = phase_entry(record, number)
    move["received_at"] = entry["opened_at"]  # still inside the phase
    return number


def renumber_nothing_but_a_name(record: dict) -> int:
    record["players"][1]["name"] = "robert"
    return 0


def carol_left_a_phase_later(record: dict) -> int:
    """Carol's leaving moved from round 6 to round 7, and everything the
    record alone could hold against it made to fit: she left as round 7
    opened, and the bot's bid made for her in round 6 is marked as hers by
    mail (it was received while the phase was open, and a move by mail is
    the player's own choice)."""
    carol = record["players"][2]
    assert carol["bot_from_phase"] == 6
    carol["bot_from_phase"] = 7
    carol["left_at"] = phase_entry(record, 7)["opened_at"]
    move = next(m for m in phase_entry(record, 6)["moves"] if m["seat"] == 2)
    assert move["source"] == "bot"
    move["source"] = "mail"
    return 6


@pytest.mark.parametrize(
    "rewrite",
    [relabel_random_as_mail, move_a_receipt_time, renumber_nothing_but_a_name, carol_left_a_phase_later],
    ids=lambda f: f.__name__,
)
def test_a_record_rewritten_after_the_fact_verifies_alone_but_not_against_a_kept_mail(kept, tmp_path, capsys, rewrite):
    """What the replay cannot see (the record is consistent) a kept mail
    does: the final result's digest covers every phase before it."""
    record = copy.deepcopy(kept[0])
    changed = rewrite(record)
    assert verify(record).ok  # consistent in itself
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    final = saved(kept[1], tmp_path, to=ALICE, subject="Game over")
    assert main(["verify", str(path), "--mail", str(final[0])]) == 1
    out = capsys.readouterr().out
    assert f"{final[0]}: DISAGREES: it says at the end: " in out
    assert out.splitlines()[-1].startswith("verified")  # the replay holds; the mail says otherwise
    digests = {d.number: d.digest for d in verify(record).digests}
    genuine = {d.number: d.digest for d in verify(kept[0]).digests}
    assert [n for n in genuine if digests[n] != genuine[n]] == list(range(changed, 15))  # from the change on


def test_a_mail_of_another_game_or_without_a_digest_is_said_so(kept, tmp_path, capsys):
    record, mails = kept
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    other = bots_record("pure-skill")
    other_path = tmp_path / "other.json"
    other_path.write_text(json.dumps(other), encoding="utf-8")
    final = saved(mails, tmp_path, subject="Game over")[0]
    assert main(["verify", str(other_path), "--mail", str(final)]) == 1
    assert "DISAGREES" in capsys.readouterr().out
    prompt = next(m for m in mails if m["recipients"] == [ALICE] and not mail_digests(body_of(m["raw"])))
    (tmp_path / "prompt.eml").write_bytes(prompt["raw"])
    assert main(["verify", str(path), "--mail", str(tmp_path / "prompt.eml")]) == 2
    assert "carries no record digest" in capsys.readouterr().err
    assert main(["verify", str(path), "--mail", str(tmp_path / "missing.eml")]) == 2
    assert "missing.eml" in capsys.readouterr().err


def test_verify_prints_what_the_start_mail_announced(kept, tmp_path, capsys):
    """The commitment, the players in seat order, the options and the
    deadlines' rule, as the start mail gave them, then every digest."""
    record, mails = kept
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    start = body_of(next(m for m in mails if "begins" in m["subject"])["raw"])
    assert f"commitment: {record['seed_commitment']}" in out and record["seed_commitment"] in start
    assert "  1. alice\n  2. bob\n  3. carol (left in Round 6 of 13; a bot from then on)\n" in out
    assert "options: ties=discard" in out
    assert "deadlines: each phase lasts 1 day or until every move owed is in" in out
    assert re.search(r"after Round 13 of 13 +[0-9a-f]{4}-", out) and re.search(r"at the end +[0-9a-f]{4}-", out)
    assert "@" not in out


def test_verify_json_says_everything_it_checked(kept, tmp_path, capsys):
    record, _ = kept
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    assert main(["verify", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verified"] is True
    assert report["seed_commitment"] == record["seed_commitment"]
    assert [p["name"] for p in report["players"]] == ["alice", "bob", "carol"]
    assert report["options"] == {"ties": "discard"} and report["deadlines"]["round"] == 86400
    assert [d["label"] for d in report["digests"]] == ["the start", *[round_label(n) for n in range(1, 14)], "the end"]
    assert len(report["checks"]) >= 10
    record = copy.deepcopy(record)
    relabel_random_as_mail(record)
    record["winner"] = "bob"
    path.write_text(json.dumps(record), encoding="utf-8")
    assert main(["verify", "--json", str(path)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["verified"] is False and report["phase"] == 13


# -- no input gives a traceback ----------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(path=st.lists(st.integers(0, 30), min_size=1, max_size=6), value=_JSON)
def test_any_value_anywhere_gives_a_verdict_never_an_exception(played, path, value):
    """Whatever replaces whatever part of a genuine record, verify answers."""
    record = copy.deepcopy(played[0])
    record["seed"] = SEED.hex()  # (played is the finished game: already so)
    node: Any = record
    for step in path[:-1]:
        children = list(node.values()) if isinstance(node, dict) else node if isinstance(node, list) else []
        if not children or not isinstance(children[step % len(children)], dict | list):
            break
        node = children[step % len(children)]
    if isinstance(node, dict) and node:
        node[sorted(node)[path[-1] % len(node)]] = value
    elif isinstance(node, list) and node:
        node[path[-1] % len(node)] = value
    verdict = verify(record)
    assert isinstance(verdict.ok, bool) and verdict.message


@settings(max_examples=100, deadline=None)
@given(value=_JSON)
def test_any_json_at_all_gives_a_verdict(value):
    verdict = verify(value)
    assert not verdict.ok and verdict.message


def test_the_player_who_left_gets_the_final_result_and_its_digest(kept):
    """Carol left in round 6: the final mail, which covers every round after
    she left, reaches her too (had everyone left, no other mail would)."""
    record, mails = kept
    final = [m for m in mails if "Game over" in m["subject"]]
    assert sorted(m["recipients"][0] for m in final) == sorted(PLAYERS)
    end = next(d.digest for d in verify(record).digests if d.label == "the end")
    assert all(mail_digests(body_of(m["raw"])) == [("the end", end)] for m in final)


def test_the_finish_time_and_the_winner_are_covered_by_the_end_digest(kept):
    record = copy.deepcopy(kept[0])
    record["game"]["finished_at"] = record["game"]["finished_at"].replace("T", "T0", 0)[:-3] + "59Z"
    assert verify(record).ok
    genuine = {d.label: d.digest for d in verify(kept[0]).digests}
    forged = {d.label: d.digest for d in verify(record).digests}
    assert [label for label in genuine if genuine[label] != forged[label]] == ["the end"]


@pytest.mark.parametrize("where", ["settle", "round"])
def test_a_deadline_longer_than_any_is_refused_not_a_traceback(record, run_verify, where):
    record["game"]["deadlines"][where] = 10**14
    status, out, err = run_verify(record)
    assert (status, err) == (1, "")
    assert out.startswith("NOT verified: the ") and "out of range" in out


def test_nothing_from_the_record_reaches_the_terminal_as_it_came(record, tmp_path, capsys):
    """A record that names its game or its players with control characters
    (a fake "verified" line, a code that hides the rest) shows them escaped,
    or is refused."""
    record["game"]["name"] = "x\nverified: 13 phases replay exactly\x1b[8m"
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    main(["verify", str(path)])
    out = capsys.readouterr().out
    assert "\x1b" not in out and [line for line in out.splitlines() if line.startswith("verified")] == [
        "verified: 13 phases replay exactly; winner: alice"
    ]  # the verdict's own line, no other
    record["players"][0]["name"] = "alice\x1b[30;40m"
    path.write_text(json.dumps(record), encoding="utf-8")
    assert main(["verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and out.startswith("NOT verified: seat 1 has no name a referee writes")


def test_reading_a_mails_digests_is_linear(tmp_path):
    """A line of "Record digest after " repeated cost time in the square of
    its length (a 320 KB line: 164 s); lines are read one by one, bounded."""
    text = "Record digest after " * 100_000 + "\nRecord digest after Round 1 of 13: 0123-4567-89ab-cdef\n"
    started = time.process_time()
    assert mail_digests(text) == [("Round 1 of 13", "0123-4567-89ab-cdef")]
    assert time.process_time() - started < 10  # milliseconds when linear; quadratic, it took minutes


def test_a_pipe_given_for_a_mail_or_a_record_is_refused_at_once(record, tmp_path, capsys):
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    assert main(["verify", str(path), "--mail", str(pipe)]) == 2
    assert main(["verify", str(pipe)]) == 2
    assert "pipe" in capsys.readouterr().err
