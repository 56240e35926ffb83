"""F20: the token a player names is the token that moves, wherever the
number stands.  A number written after the track a token leaves (and before
the track it goes to) names the token; a number after the track it goes to
is the new bid.  "move purple 3 to red" names the token of 3 and gives no
bid: it must be refused, never read as "move my other token to red at 3"."""

from __future__ import annotations

from dataclasses import replace

import pytest

from referee.record import setup_rng
from referee.rules import MoveError
from referee.rules.bluff import TRACKS, BluffAuction

GAME = BluffAuction()
A, B = 0, 1
PURPLE, RED = TRACKS.index("purple"), TRACKS.index("red")


def bidding(bids: tuple, turn: int = B, **changes):
    """A 2-player game in its bidding, every die black, B to move."""
    state = GAME.setup(2, setup_rng(b"bluff token position"), {})
    state = replace(
        state, stage="bidding", turn=turn, passes=0, dice=tuple(("black",) * len(d) for d in state.dice), community=()
    )
    return replace(state, bids=(bids, (), (), (), (), ()), placed=len(bids), tokens=(2, 2), **changes)


# B bid purple 1, A 2, B 3: B's 3 is the high bid (locked in), its 1 may move.
LOCKED = ((B, 1, 1, False), (A, 2, 2, False), (B, 3, 3, False))
# B bid purple 1, A 2, B 3, A 4: both of B's tokens may move.
BOTH = (*LOCKED, (A, 4, 4, False))


@pytest.mark.parametrize("text", ["move purple 3 to red", "move purple 3 red", "Move my purple 3 token to red."])
def test_a_move_naming_the_locked_high_token_without_a_bid_moves_nothing(text):
    state = bidding(LOCKED)
    with pytest.raises(MoveError) as refused:
        GAME.read_move(state, B, text)
    assert "move purple 1" not in str(refused.value)  # not read as the other token, at 3


@pytest.mark.parametrize("text", ["move purple 3 to red", "move purple 3 red"])
def test_a_move_naming_a_token_without_a_bid_is_not_called_a_bid_of_that_value(text):
    """With two movable tokens the refusal must not quote the player's token
    value back as the bid ("'move purple to red 3' is ambiguous")."""
    state = bidding(BOTH)
    with pytest.raises(MoveError) as refused:
        GAME.read_move(state, B, text)
    assert "to red 3" not in str(refused.value)
    assert "bid" in str(refused.value)


def test_a_number_after_the_target_track_is_still_the_bid():
    state = bidding(LOCKED)
    assert GAME.read_move(state, B, "move purple to red 3") == ("move", PURPLE, 1, RED, 3)
    assert GAME.read_move(state, B, "move purple 1 to red 3") == ("move", PURPLE, 1, RED, 3)
    assert GAME.read_move(state, B, "move 1 from purple to red 3") == ("move", PURPLE, 1, RED, 3)
    state = bidding(BOTH)
    assert GAME.read_move(state, B, "move purple 3 to red 1") == ("move", PURPLE, 3, RED, 1)
