"""Issue 36, full renders: Bluff Auction's replay does less work for the
same answers.  Each faster way is held equal to the plain way it replaced."""

from __future__ import annotations

import itertools
import random

import pytest
from test_bluff import GAME
from test_bluff import random_game as _random_game

from referee.rules.api import replace
from referee.rules.bluff import (
    COLOURS,
    ERAS,
    SPECIAL_NAMES,
    TYPES,
    BluffState,
    Move,
    Stage,
    Tile,
    _acquisitions,
    _best_split,
    _has_set,
    _movers,
    _only_place,
    _sets,
    _sorted,
    _split_points,
    best_partition,
    set_points,
    share,
    spaces,
)

random_game = _random_game

ARTIFACTS: list[Tile] = [(c, e, t) for c in COLOURS for e in ERAS for t in TYPES]


def plain_split(rest: tuple[Tile, ...], rulings: int) -> tuple[int, tuple[tuple[Tile, ...], ...]]:
    """The best split as it was found before: every group of the first tile
    and any of the others tried, in the order of itertools.combinations."""
    if not rest:
        return 0, ()
    best = None
    first, others = rest[0], rest[1:]
    for n in range(len(others) + 1):
        for combo in itertools.combinations(range(len(others)), n):
            group = (first, *(others[i] for i in combo))
            if len(group) < (3 if rulings < 2 else 2) or share(group):
                score, groups = plain_split(tuple(t for i, t in enumerate(others) if i not in combo), rulings)
                score += set_points(len(group))
                if best is None or score > best[0]:
                    best = (score, (group, *groups))
    assert best is not None
    return best


@pytest.mark.parametrize("rulings", [1, 2])
def test_a_museums_best_split_is_the_one_every_group_tried_finds(rulings):
    draw = random.Random(36 + rulings)
    for _ in range(400):
        museum = draw.sample([*ARTIFACTS, "wild"], draw.randint(0, 8))
        if draw.random() < 0.5:  # (museums of one colour or era share much, and have many splits)
            museum = [t for t in ARTIFACTS if t[0] == "red" or t[1] == "modern"]
            museum = draw.sample(museum, min(len(museum), draw.randint(1, 8)))
        tiles = _sorted(museum)
        assert _best_split(tiles, rulings) == plain_split(tiles, rulings), tiles


@pytest.mark.parametrize("seats", [2, 3, 4, 5])
def test_the_seats_a_move_is_checked_against_are_the_phases_movers(seats):
    states, _, _ = random_game(b"movers" + bytes([seats]), seats, random.Random(seats))
    for state in states:
        phase = GAME.phase(state)
        assert _movers(state) == (phase.movers if phase else ())


def candidates(state: BluffState, seat: int, draw: random.Random) -> list[Move]:
    """The legal moves, and moves like them that are not (in every stage but bidding)."""
    moves: list[Move] = list(GAME.legal_moves(state, seat))
    dice = len(state.dice[seat])
    numbers = list(range(0, dice + 2))
    moves += [("reroll", tuple(draw.sample(numbers, draw.randint(0, len(numbers))))) for _ in range(10)]
    moves += [("reroll", (1, 1)), ("use",), ("keep",), ("place",), ("pass",), ("exhibit",), ("discard", "x", "y")]
    if state.won:
        pool = [*state.museum[seat], state.won[0][1]]
        for _ in range(10):
            tiles = draw.sample(pool, draw.randint(0, len(pool))) + draw.sample(ARTIFACTS, draw.randint(0, 1))
            moves += [("exhibit", tuple(tiles)), ("exhibit", _sorted(tiles)), ("exhibit", _sorted(tiles + tiles[:1]))]
        moves += [("discard", t) for t in [*pool, draw.choice(ARTIFACTS), "wild"]]
    return moves


def fill(state: BluffState, museum: tuple[Tile, ...]) -> tuple[Tile, ...]:
    """Six artifacts more for a museum, none of them won nor in it already."""
    return tuple(t for t in ARTIFACTS if t not in museum and all(t != won for _, won in state.won))[:6]


@pytest.mark.parametrize("seats", [2, 3, 4, 5])
def test_a_move_is_allowed_when_the_legal_moves_list_it(seats):
    draw = random.Random(seats)
    states, _, _ = random_game(b"allowed" + bytes([seats]), seats, random.Random(seats))
    full = [replace(s, exhibits=((("wild",),) * spaces(seats),) * seats) for s in states if s.won]  # (no space left)
    small = [replace(s, museum=tuple(m + fill(s, m) for m in s.museum)) for s in states if s.won]  # (no room)
    seen = set()
    for state in states + full + small:
        if state.stage == Stage.BIDDING:
            continue  # (tests/unit/test_bluff.py compares the bids)
        for seat in _movers(state):
            legal = GAME.legal_moves(state, seat)
            for move in candidates(state, seat, draw):
                allowed = move in legal
                assert GAME._allowed(state, seat, move) == allowed, (state, seat, move)
                seen.add((state.stage, move[0], allowed))
    for stage, verb in (("tools", "reroll"), ("acquire", "exhibit"), ("acquire", "discard"), ("acquire", "place")):
        assert {(stage, verb, True), (stage, verb, False)} <= seen  # (both answers were compared)


@pytest.mark.parametrize("seats", [2, 3, 4, 5])
def test_a_tile_won_can_only_be_placed_when_placing_it_is_its_only_move(seats):
    draw = random.Random(seats)
    states, _, _ = random_game(b"placed" + bytes([seats]), seats, random.Random(seats))
    full = [replace(s, exhibits=((("wild",),) * spaces(seats),) * seats) for s in states[::10]]  # (no space left)
    only = 0
    for state in states + full:
        for seat in range(seats):
            tile = draw.choice([*ARTIFACTS, *SPECIAL_NAMES])
            if tile in state.museum[seat]:
                continue
            placed_only = _acquisitions(state, seat, tile) == [("place",)]
            assert _only_place(state, seat, tile) == placed_only, (state, seat, tile)
            only += placed_only
    assert 0 < only < len(states + full) * seats  # (both answers were compared)


def test_a_pool_has_a_set_when_some_set_can_be_exhibited_from_it():
    draw = random.Random(36)
    found = 0
    for _ in range(2000):
        pool = draw.sample([*ARTIFACTS, *SPECIAL_NAMES], draw.randint(0, 9))
        assert _has_set(tuple(pool)) == bool(_sets(_sorted(pool))), pool
        found += _has_set(tuple(pool))
    assert 0 < found < 2000


@pytest.mark.parametrize("rulings", [1, 2])
def test_a_museums_points_are_those_of_its_best_split(rulings):
    draw = random.Random(360 + rulings)
    for _ in range(1500):
        museum = draw.sample([*ARTIFACTS, "wild"], draw.randint(0, 8))
        if draw.random() < 0.5:  # (museums of one colour or era share much, and have many splits)
            museum = draw.sample([t for t in ARTIFACTS if t[0] == "blue" or t[2] == "art"], draw.randint(0, 8))
        assert _split_points(tuple(museum), rulings) == best_partition(tuple(museum), rulings)[0], museum
