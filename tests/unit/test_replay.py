"""Replaying a game's record (referee.record): what anyone can re-check from the seed."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.record import PhaseRecord, ReplayError, commitment, replay
from referee.rules import Rng
from referee.rules.pure_skill import PureSkill

GAME = PureSkill()
SEED = bytes(range(32))


def random_bids(seed):
    """Bids as the engine makes them at a deadline: each seat's own documented stream."""
    return lambda state, n, seat: GAME.random_move(state, seat, Rng(seed, f"phase {n} random seat {seat}"))


def live_game(seed, choose, options=None, bots=()):
    """Play with the rules directly, as docs/rules-api.md's engine loop does, keeping the record."""
    state = GAME.setup(3, Rng(seed, "setup"), options or {})
    for seat in bots:
        state = GAME.replace_by_bot(state, seat)
    records, events = [], []
    for n in range(1, 14):
        moves = {seat: choose(state, n, seat) for seat in GAME.phase(state).movers}
        records.append(PhaseRecord(n, {seat: GAME.move_text(move) for seat, move in moves.items()}))
        state, new_events = GAME.resolve(state, moves, Rng(seed, f"phase {n} resolve"))
        events.append(new_events)
    assert GAME.phase(state) is None
    return state, events, records


def run(records, seed=SEED, options=None, initial_bots=()):
    return replay(GAME, seed, 3, options or {}, initial_bots, records)


def with_moves(records, number, moves):
    return [dataclasses.replace(r, moves=moves) if r.number == number else r for r in records]


# --- a faithful replay ------------------------------------------------------------


def test_replay_reproduces_the_final_state_and_every_event():
    final, events, records = live_game(SEED, random_bids(SEED))
    replayed = run(records)
    assert replayed.state == final
    assert [step.events for step in replayed.steps] == events
    assert GAME.result(replayed.state) == GAME.result(final)


@settings(max_examples=40, deadline=None)
@given(
    st.binary(min_size=1, max_size=32),
    st.lists(st.integers(min_value=0, max_value=12), min_size=39, max_size=39),
    st.sampled_from(["discard", "carry"]),
)
def test_replay_reproduces_any_game(seed, picks, ties):
    def choose(state, n, seat):
        legal = GAME.legal_moves(state, seat)
        return legal[picks[3 * (n - 1) + seat] % len(legal)]

    final, events, records = live_game(seed, choose, {"ties": ties})
    replayed = replay(GAME, seed, 3, {"ties": ties}, (), records)
    assert replayed.state == final
    assert [step.events for step in replayed.steps] == events


def test_replay_stops_at_an_open_phase():
    _, events, records = live_game(SEED, random_bids(SEED))
    replayed = run([*records[:4], PhaseRecord(5, None)])
    assert len(replayed.steps) == 4
    assert replayed.state.round == 5
    assert [step.events for step in replayed.steps] == events[:4]


def test_a_changed_seed_changes_the_events():
    _, events, records = live_game(SEED, random_bids(SEED))
    # Every recorded bid is still legal under another seed: the hands never depend on it.
    other = run(records, seed=SEED[::-1])
    assert [step.events for step in other.steps] != events


# --- records that disagree with the rules --------------------------------------------


@pytest.mark.parametrize(
    "moves",
    [
        {0: "bid A", 1: "bid A"},
        {0: "bid A", 1: "bid A", 2: "bid A", 3: "bid A"},
        {0: "bid A", 1: "bid A", 5: "bid A"},
    ],
    ids=["missing seat", "extra seat", "wrong seat"],
)
def test_moves_not_from_the_seats_that_owed_them_raise_replay_error_naming_the_phase(moves):
    _, _, records = live_game(SEED, random_bids(SEED))
    with pytest.raises(ReplayError) as error:
        run(with_moves(records, 5, moves))
    assert error.value.number == 5
    assert "phase 5" in str(error.value)


def test_a_card_bid_twice_raises_replay_error_at_the_second_bid():
    def king_then_lowest(state, n, seat):
        return 13 if n == 1 else min(GAME.legal_moves(state, seat))

    _, _, records = live_game(SEED, king_then_lowest)
    bad = with_moves(records, 4, {**records[3].moves, 1: "bid K"})
    with pytest.raises(ReplayError) as error:
        run(bad)
    assert error.value.number == 4
    assert "seat 1" in str(error.value)


def test_a_record_that_goes_on_after_the_game_ended_raises_replay_error():
    _, _, records = live_game(SEED, random_bids(SEED))
    with pytest.raises(ReplayError) as error:
        run([*records, PhaseRecord(14, {0: "bid A", 1: "bid A", 2: "bid A"})])
    assert error.value.number == 14


# --- the seed commitment -----------------------------------------------------------


def test_commitment_is_the_sha256_hex_digest_of_the_seed():
    # FIPS 180-2's test vector for SHA-256("abc").
    assert commitment(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert commitment(SEED) == hashlib.sha256(SEED).hexdigest()
    assert commitment(SEED) != commitment(SEED[::-1])


# --- bots ------------------------------------------------------------------------------


def test_initial_bots_are_bots_from_the_start():
    assert run([], initial_bots=(1,)).state.bots == {1}


def test_new_bots_are_bots_from_the_phase_they_left_in():
    _, _, records = live_game(SEED, random_bids(SEED))
    records = [dataclasses.replace(r, new_bots=(2,)) if r.number == 3 else r for r in records]
    replayed = run(records)
    assert [2 in step.before.bots for step in replayed.steps[:4]] == [False, False, True, True]
    assert replayed.state.bots == {2}


def test_a_player_leaving_during_an_open_phase_is_a_bot_at_once():
    _, _, records = live_game(SEED, random_bids(SEED))
    replayed = run([*records[:2], PhaseRecord(3, None, new_bots=(0,))], initial_bots=(1,))
    assert replayed.state.bots == {0, 1}


def test_replay_going_on_from_an_earlier_replay_is_the_same_as_from_the_seed():
    _, _, records = live_game(SEED, random_bids(SEED))
    first = run(records[:5])
    resumed = replay(GAME, SEED, 3, {}, (), records, start=first)
    whole = run(records)
    assert resumed.state == whole.state
    assert [(s.number, s.moves, s.events) for s in resumed.steps] == [
        (s.number, s.moves, s.events) for s in whole.steps
    ]
    assert len(first.steps) == 5  # the earlier replay is left as it was


def test_the_engine_never_serves_a_replay_of_a_record_that_was_rolled_back(tmp_path):
    """The engine keeps each game's last replay; a transaction that fails
    after a move was read must not leave that move in what it serves."""
    from conftest import PLAYERS, FakeClock, reply

    from referee.config import Config
    from referee.engine import Engine
    from referee.store import Store

    clock = FakeClock()
    config = Config(address="referee@example.org", secret_key=b"k")
    engine = Engine(Store(tmp_path / "games.db"), config, clock=clock)
    game = engine.new_game("pure-skill", PLAYERS)
    for player in PLAYERS[:2]:
        engine.ingest(reply(engine, player, "bid 13", received=clock.now))
    with pytest.raises(RuntimeError), engine.store.transaction():
        engine.ingest(reply(engine, PLAYERS[2], "bid 13", received=clock.now))  # resolves round 1
        assert engine.table(game).open_phase["number"] == 2
        raise RuntimeError("the transaction fails after round 1 resolved")
    engine.ingest(reply(engine, PLAYERS[2], "bid 12", received=clock.now))
    fresh = Engine(Store(tmp_path / "games.db"), config, clock=clock)
    assert engine.table(game).state == fresh.table(game).state
    assert fresh.table(game).replay.steps[0].moves[2] == 12
