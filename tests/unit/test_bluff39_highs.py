"""Bluff Auction: each track's high bid stays the highest of its bids (the
later of two equal: F12) all through bidding, when tokens are placed from
hand and when overbid tokens move between tracks (bluff._keep_highs works
the highs of a bid out from those before it)."""

from __future__ import annotations

import random

from referee.record import resolve_rng, setup_rng
from referee.rules.bluff import TRACKS, BluffAuction, Stage

GAME = BluffAuction()


def _highest(bids):
    return max(bids, key=lambda b: (b[1], b[2])) if bids else None


def test_the_high_bid_is_the_highest_after_every_bid_and_every_token_moved():
    moved = 0
    for number in range(6):
        chooser = random.Random(number)
        seed = bytes([number]) * 32
        state = GAME.setup(2 + number % 4, setup_rng(seed), {})
        step = 0
        while GAME.phase(state) is not None:
            phase = GAME.phase(state)
            moves = {seat: chooser.choice(GAME.legal_moves(state, seat)) for seat in phase.movers}
            moved += sum(move[0] == "move" for move in moves.values())
            step += 1
            state, _ = GAME.resolve(state, moves, resolve_rng(seed, step))
            if state.stage == Stage.BIDDING:
                assert [state.high(t) for t in range(len(TRACKS))] == [_highest(bids) for bids in state.bids]
    assert moved > 10  # (tokens did move: the highs of the tracks they left were worked out again)
