"""Issue 36 item 5: a museum's points are found without trying the groups
that lie within a larger one; they are still those of the best split."""

from __future__ import annotations

import random

import pytest
from test_replay36_bluff import ARTIFACTS, plain_split

from referee.rules.bluff import COLOURS, ERAS, Tile, _sorted, _split_points, best_partition


def museums(seed: int, count: int) -> list[tuple[Tile, ...]]:
    """Museums of up to eight tiles, most of them drawn from a few colours and
    eras, so that groups nest (two red tiles both ancient: the red group lies
    within the ancient one) and overlap."""
    draw = random.Random(seed)
    found = []
    for _ in range(count):
        pool: list[Tile] = [*ARTIFACTS, "wild"]
        if draw.random() < 0.7:
            colours, eras = draw.sample(COLOURS, draw.randint(1, 3)), draw.sample(ERAS, draw.randint(1, 2))
            pool = [t for t in ARTIFACTS if t[0] in colours and t[1] in eras] + ["wild"] * (draw.random() < 0.3)
        found.append(_sorted(draw.sample(pool, min(len(pool), draw.randint(0, 8)))))
    return found


@pytest.mark.parametrize("rulings", [1, 2])
def test_a_museums_points_are_those_of_the_best_of_every_split(rulings):
    for museum in museums(41 + rulings, 500):
        assert _split_points(museum, rulings) == plain_split(museum, rulings)[0], museum


@pytest.mark.parametrize("rulings", [1, 2])
def test_the_split_a_museum_shows_is_the_first_best_of_every_split(rulings):
    for museum in museums(4100 + rulings, 300):
        assert best_partition(museum, rulings) == plain_split(museum, rulings), museum
