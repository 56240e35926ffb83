"""Review of round 39's Bluff reading (bluff._bid_or_pass: a bidding turn's
bid from hand or pass read from its line alone, once): every line, in every
bidding turn of random games by either edition of the rulings, with tokens
moved as often as they may be, reads as the same move, or is refused with
the same words, as it does with nothing kept (the line read with the
state, as BluffAuction._read reads every other move)."""

from __future__ import annotations

import random

import pytest

from referee.record import resolve_rng, setup_rng
from referee.rules import bluff
from referee.rules.api import MoveError
from referee.rules.bluff import BluffAuction, Stage

GAME = BluffAuction()
LINES = [
    "pass",
    "Pass.",
    "PASS please",
    "pass it on",
    "pass pass",
    "bid",
    "bid red",
    "bid red 3",
    "Bid RED three",
    "I bid red 4!",
    "bid: red 4",
    "bid red 3 blue",
    "bid 3 3 red",
    "bid nonsense 4",
    "bid red 0",
    "bid red 99",
    "move red to blue 5",
    "move red 3 to blue 5",
    "move red to blue",
    "keep",
    "",
]


def _reading(state, seat: int, line: str) -> str:
    try:
        return repr(GAME.parse_move(state, seat, line))
    except MoveError as refusal:
        return f"refused: {refusal}"


@pytest.mark.parametrize("rulings", [1, 2])
def test_review39_a_bidding_line_reads_as_it_does_with_nothing_kept(rulings, monkeypatch):
    read = 0
    for number in range(3):
        chooser, seed = random.Random(number), bytes([number, rulings]) * 16
        state = GAME.setup(2 + number, setup_rng(seed), {"rulings": rulings})
        step = 0
        while (phase := GAME.phase(state)) is not None:
            if state.stage == Stage.BIDDING:
                for seat in range(state.seats):
                    lines = LINES + [GAME.move_text(move) for move in GAME.legal_moves(state, seat)[:8]]
                    kept = [_reading(state, seat, line) for line in lines]
                    with monkeypatch.context() as patched:
                        patched.setattr(bluff, "_bid_or_pass", lambda line: None)  # (read with the state)
                        assert kept == [_reading(state, seat, line) for line in lines]
                    read += len(lines)
            moves = {}
            for seat in phase.movers:
                legal = GAME.legal_moves(state, seat)
                tokens = [move for move in legal if move[0] == "move"]
                moves[seat] = chooser.choice(tokens if tokens and chooser.random() < 0.7 else legal)
            step += 1
            state, _ = GAME.resolve(state, moves, resolve_rng(seed, step))
    assert read > 1000
