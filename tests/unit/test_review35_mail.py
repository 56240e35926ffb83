"""Review of issue 35's rewritten mail for Ice Ice Baby, Bid! and Bluff
Auction, read as players get it, through ``Engine.ingest``: what a prompt or
a result says must be what the game then does."""

from __future__ import annotations

import re

import pytest
from conftest import PLAYERS, mails, send
from test_notify import Played

from referee.engine import Engine


def _squeezed(body: str) -> str:
    return " ".join(body.split())


def _newest(engine: Engine, player: str) -> str:
    return mails(engine, to=player)[-1]["body"]


def _legal(engine: Engine, player: str) -> list[str]:
    table = engine.table(1)
    seat = table.seat_of(player)
    return [table.rules.move_text(m) for m in table.rules.legal_moves(table.state, seat)]


def _mover(engine: Engine) -> str:
    (mover,) = engine.status(1)["phase"]["waiting_for"]
    return mover


# -- Ice Ice Baby: what passing does (ruling I9: a passer who never bid is no bidding player) --------


def test_an_ice_prompt_says_what_passing_brings_as_the_auction_then_pays(engine, clock):
    """A passer without a bid is paid nothing, and a bid passed on skips
    them: the prompt said the first "gets the bid of the next player to
    pass" and told the next "that bid goes to <the first> (card 1)", while
    the auction put that bid in the dead area."""
    engine.new_game("ice", PLAYERS)
    first = _mover(engine)
    told_first = _squeezed(_newest(engine, first))
    assert "If you pass, you take card 1, without a bid" in told_first
    assert send(engine, clock, first, "pass").code == "move"
    second = _mover(engine)
    one = next(move for move in _legal(engine, second) if move.count("-") == 1)  # a bid of one pyramid
    assert send(engine, clock, second, one).code == "move"
    third = _mover(engine)
    two = next(move for move in _legal(engine, third) if move.count("-") == 2)
    assert send(engine, clock, third, two).code == "move"
    assert _mover(engine) == second  # three pyramids beat two
    told_second = _squeezed(_newest(engine, second))
    assert send(engine, clock, second, "pass").code == "move"
    result = _squeezed(_newest(engine, first))
    assert f"{third} wins the auction" in result
    bid = one.removeprefix("bid ")
    assert f"{second}'s bid {bid} goes to the dead area." in result  # I9: the first passer never bid
    assert f"goes to {first}" not in result  # so the first passer is paid nothing
    # ... as each prompt said
    assert f"with your bid {bid} on it: that bid goes to the dead area once the auction is won" in told_second
    assert "you get the bid of the next player to pass" not in told_first
    assert "If you pass, you take card 1, without a bid: you give nothing and get nothing" in told_first


# -- Bid!: the game-over history adds up -----------------------------------------------------------


@pytest.fixture(scope="module")
def bid(tmp_path_factory) -> Played:
    return Played(tmp_path_factory.mktemp("bid"), "bid")


def test_the_bid_history_adds_up_to_the_final_points_ace_of_arms_included(bid: Played):
    """The Ace of Arms pays 5 (10 under the Ace of Suns) to each player whose
    tiles total 16 or more: the game-over history left those points out, so
    the winner's 101 points read as 76 auction by auction."""
    (final,) = [m for m in bid.box.to(PLAYERS[0]) if "Game over" in m["subject"]]
    body = final["body"]
    history = body.split("\nStandings:\n")[0]
    standings = body.split("\nStandings:\n")[1]
    arms = 0
    for player in PLAYERS:
        said = 0
        for line in history.splitlines():
            said += sum(int(n) for n in re.findall(rf"{re.escape(player)} \+(\d+)", line))
            crowned = re.search(r"Ace of Crowns, tied: (.*) -(\d+) each", line)
            if crowned and player in crowned[1]:
                said -= int(crowned[2])
        arms += len(re.findall(rf"Ace of Arms: [^;\n]*{re.escape(player)} \+", history))
        points = int(re.search(rf"^  {re.escape(player)} +(\d+) points?", standings, re.M)[1])
        assert said == points, (player, said, points)
    assert arms  # (the game has Ace of Arms bonuses, which the history now names)
