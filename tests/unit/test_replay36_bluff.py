"""Issue 36, full renders: Bluff Auction's replay does less work for the
same answers.  Each faster way is held equal to the plain way it replaced."""

from __future__ import annotations

import itertools
import random

import pytest
from test_bluff import GAME
from test_bluff import random_game as _random_game

from referee.rules.bluff import (
    COLOURS,
    ERAS,
    TYPES,
    Tile,
    _best_split,
    _movers,
    _sorted,
    set_points,
    share,
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
