"""The game's random stream: deterministic, uniform, and checkable by outsiders."""

from __future__ import annotations

import hashlib
import hmac
import random
from collections import Counter
from itertools import permutations

import pytest

from referee.rules import Rng
from referee.rules.pure_skill import PureSkill


def draws(rng: Rng, n: int, count: int = 50) -> list[int]:
    return [rng.randbelow(n) for _ in range(count)]


# --- an outsider's implementation, written from rng.py's module docstring alone ----


def reference_bytes(seed: bytes, label: str):
    """key = HMAC-SHA256(seed, label); blocks HMAC-SHA256(key, counter as 8 bytes BE)."""
    key = hmac.new(seed, label.encode("utf-8"), hashlib.sha256).digest()
    counter = 0
    while True:
        yield from hmac.new(key, counter.to_bytes(8, "big"), hashlib.sha256).digest()
        counter += 1


class Reference:
    def __init__(self, seed: bytes, label: str):
        self.stream = reference_bytes(seed, label)
        self.rejected = 0

    def word(self) -> int:
        return int.from_bytes(bytes(next(self.stream) for _ in range(8)), "big")

    def randbelow(self, n: int) -> int:
        while True:
            word = self.word()
            if word < 2**64 - (2**64 % n):
                return word % n
            self.rejected += 1


@pytest.mark.parametrize(
    ("seed", "label"),
    [(b"seed", "setup"), (bytes(range(32)), "phase 4 resolve"), (b"\xff" * 32, "phase 1 random seat 2")],
)
def test_the_documented_algorithm_gives_the_same_first_50_draws_of_randbelow_13(seed, label):
    reference = Reference(seed, label)
    assert draws(Rng(seed, label), 13) == [reference.randbelow(13) for _ in range(50)]


def test_the_documented_algorithm_agrees_where_words_are_rejected():
    n = 2**63 + 1  # about half of all words fall above the limit and are redrawn
    reference = Reference(b"seed", "setup")
    expected = [reference.randbelow(n) for _ in range(50)]
    assert reference.rejected > 0
    assert draws(Rng(b"seed", "setup"), n) == expected


def test_an_outsider_can_recompute_every_prize_of_a_game_from_the_seed():
    """docs/rules-api.md: round 1's prize from "setup", round k+1's from "phase k resolve",
    uniform over the undrawn spades in sorted order."""
    game, seed = PureSkill(), bytes(range(32))
    state = game.setup(3, Rng(seed, "setup"), {})
    prizes = [state.prize]
    for n in range(1, 13):
        moves = {seat: game.legal_moves(state, seat)[0] for seat in range(3)}
        state, _ = game.resolve(state, moves, Rng(seed, f"phase {n} resolve"))
        prizes.append(state.prize)
    undrawn, expected = list(range(1, 14)), []
    for label in ["setup", *(f"phase {n} resolve" for n in range(1, 13))]:
        expected.append(undrawn.pop(Reference(seed, label).randbelow(len(undrawn))))
    assert prizes == expected


# --- determinism -----------------------------------------------------------------


def test_the_same_seed_and_label_give_the_same_stream():
    assert draws(Rng(b"seed", "setup"), 1000) == draws(Rng(b"seed", "setup"), 1000)


def test_the_stream_ignores_the_global_random_module():
    random.seed(1)
    first = draws(Rng(b"seed", "setup"), 1000)
    random.seed(2)
    random.random()
    assert draws(Rng(b"seed", "setup"), 1000) == first


def test_different_labels_give_different_streams():
    labels = ["setup", "phase 1 resolve", "phase 2 resolve", "phase 1 random seat 0", "phase 2 random seat 0"]
    assert len({tuple(draws(Rng(b"seed", label), 1000)) for label in labels}) == len(labels)


def test_different_seeds_give_different_streams():
    seeds = [b"a", b"b", bytes(32), bytes(31) + b"\x01"]
    assert len({tuple(draws(Rng(seed, "setup"), 1000)) for seed in seeds}) == len(seeds)


# --- randbelow -----------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 7, 13, 52])
def test_randbelow_stays_in_range_and_hits_every_value(n):
    values = draws(Rng(b"seed", f"n={n}"), n, count=40 * n)
    assert set(values) == set(range(n))


def test_randbelow_of_one_is_always_zero():
    assert set(draws(Rng(b"seed", "one"), 1, count=100)) == {0}


@pytest.mark.parametrize("n", [0, -1])
def test_randbelow_of_zero_or_less_raises(n):
    with pytest.raises(ValueError):
        Rng(b"seed", "setup").randbelow(n)


def test_choice_picks_every_item_of_a_sequence():
    items = ["x", "y", "z"]
    assert {Rng(b"seed", f"c{i}").choice(items) for i in range(100)} == set(items)


# --- shuffled ----------------------------------------------------------------------


def test_shuffled_is_a_permutation_and_leaves_the_input_alone():
    items = list(range(20))
    shuffled = Rng(b"seed", "deck").shuffled(items)
    assert sorted(shuffled) == items
    assert items == list(range(20))


def test_shuffled_is_deterministic():
    assert Rng(b"seed", "deck").shuffled(range(20)) == Rng(b"seed", "deck").shuffled(range(20))


def test_shuffled_reaches_every_order_about_equally_often():
    counts = Counter(tuple(Rng(b"seed", f"s{i}").shuffled("abc")) for i in range(3000))
    assert set(counts) == set(permutations("abc"))
    assert all(400 <= count <= 600 for count in counts.values())  # 500 expected, sd ~20


def test_randbelow_beyond_one_word_raises_instead_of_looping_forever():
    with pytest.raises(ValueError):
        Rng(b"seed", "label").randbelow(2**64 + 1)
    assert Rng(b"seed", "label").randbelow(2**64) < 2**64
