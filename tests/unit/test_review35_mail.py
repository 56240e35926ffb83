"""Review of issue 35's rewritten mail for Ice Ice Baby, Bid! and Bluff
Auction, read as players get it, through ``Engine.ingest``: what a prompt or
a result says must be what the game then does."""

from __future__ import annotations

import random
import re

import pytest
from conftest import PLAYERS, Seeds, last_id, mails, send
from test_notify import Played

from referee.demo import legal_moves
from referee.engine import Engine
from referee.rules.bluff import TRACKS, _virtual


@pytest.fixture
def seeds() -> Seeds:
    """Every game here from the same seed (the same deal, dice and draws)."""
    return Seeds(bytes(range(32)))


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
    before = last_id(engine)
    assert send(engine, clock, second, "pass").code == "move"
    # (the result, or, when a scoring round follows, the winner's offer with the auction at its top)
    result = _squeezed(" ".join(mail["body"] for mail in mails(engine, after=before)))
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


# -- Bluff Auction: the moves a prompt lists, read as listed ---------------------------------------


def _sensible(table, seat: int, choose: random.Random) -> str:
    """A move a player would make: in bidding, mostly a bid within what their
    own dice and the community's make sure of (so tiles are won, sets
    exhibited), or a pass; else any legal move."""
    rules, state = table.rules, table.state
    legal = rules.legal_moves(state, seat)
    if state.stage == "bidding":
        own = [*state.dice[seat], *state.community]
        within = [
            m
            for m in legal
            if m[0] == "pass"
            or (
                m[0] == "bid" and m[2] <= own.count("purple") + own.count(TRACKS[m[1]]) * (TRACKS[m[1]] != "purple") + 1
            )
        ]
        if within and choose.random() < 0.9:
            return rules.move_text(choose.choice(within))
    return rules.move_text(choose.choice(legal))


def test_every_bluff_prompt_lists_its_moves_so_each_reads_as_one(engine, clock):
    """A move to exhibit names its tiles with commas ("exhibit red ancient
    tool, yellow ancient tool, blue medieval tool"), and the list of moves
    was joined with commas too: "Moves you can make now: place, exhibit red
    ancient tool, yellow ancient tool, blue medieval tool." reads as four
    moves, two of them no move at all (as the demo's players, who read the
    list, read it)."""
    engine.new_game("bluff", PLAYERS)
    choose = random.Random(1)
    exhibits = 0
    for _ in range(3000):
        status = engine.status(1)
        if status["state"] != "running":
            break
        for mover in status["phase"]["waiting_for"]:
            table = engine.table(1)
            seat = table.seat_of(mover)
            legal = [table.rules.move_text(m) for m in table.rules.legal_moves(table.state, seat)]
            body = _newest(engine, mover)
            assert legal_moves(body) == legal[:20], body
            exhibits += any(move.startswith("exhibit") for move in legal)
            clock.advance(minutes=choose.randint(1, 30))
            assert send(engine, clock, mover, _sensible(table, seat, choose)).code == "move"
    assert engine.status(1)["state"] != "running" and exhibits


def test_a_refused_exhibit_is_answered_with_the_moves_each_read_as_one(engine, clock):
    """The answer to a move that cannot be played lists the moves as a prompt does."""
    engine.new_game("bluff", PLAYERS)
    choose = random.Random(1)
    legal: list[str] = []
    while not any(move.startswith("exhibit") for move in legal):
        assert engine.status(1)["state"] == "running"
        mover = engine.status(1)["phase"]["waiting_for"][0]
        table = engine.table(1)
        seat = table.seat_of(mover)
        legal = [table.rules.move_text(m) for m in table.rules.legal_moves(table.state, seat)]
        if not any(move.startswith("exhibit") for move in legal):
            clock.advance(minutes=choose.randint(1, 30))
            assert send(engine, clock, mover, _sensible(table, seat, choose)).code == "move"
    assert send(engine, clock, mover, "exhibit").code == "refused"
    assert legal_moves(_newest(engine, mover)) == legal


_SURE = re.compile(r"^Sure limits, from your dice.*?only add\): (.+?)\.$", re.M | re.S)


def test_a_bluff_bidding_prompts_sure_limits_count_the_players_own_virtual_dice(engine, clock):
    """A Weapon in the player's museum counts as a die of its colour for
    them, and the Virtual Purple Die as a purple one on every track (F10):
    the player is as sure of those as of their own dice, but the prompt's
    "sure limits" left them out (a player holding the Virtual Purple Die
    read "purple 0" where their limit could not be under 1)."""
    engine.new_game("bluff", PLAYERS)
    choose = random.Random(1)
    virtual = 0
    while engine.status(1)["state"] == "running":
        for mover in engine.status(1)["phase"]["waiting_for"]:
            table = engine.table(1)
            state, seat = table.state, table.seat_of(mover)
            if state.stage == "bidding":
                own = [*state.dice[seat], *state.community]
                expected = {
                    colour: own.count("purple") + own.count(colour) * (colour != "purple") + _virtual(state, seat, t)
                    for t, colour in enumerate(TRACKS)
                }
                virtual += any(_virtual(state, seat, t) for t in range(len(TRACKS)))
                said = _SURE.search(_newest(engine, mover))[1]
                shown = dict(part.split(" ") for part in " ".join(said.split()).split(", "))
                assert {track: int(n) for track, n in shown.items()} == expected, said
            clock.advance(minutes=choose.randint(1, 30))
            assert send(engine, clock, mover, _sensible(table, seat, choose)).code == "move"
    assert virtual  # (players held Weapons or the Virtual Purple Die while bidding)


# -- after the end, the points are the game's ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["ice", "bluff"])
def test_the_last_result_gives_the_points_not_the_points_if_the_game_ended_now(kind, tmp_path):
    """The result that ends the game showed the board as a turn's does:
    '29 points if the game ended now', of a game that had ended."""
    played = Played(tmp_path, kind)
    last = [m for m in played.box.to(PLAYERS[0]) if "game over" in m["subject"].lower()]
    assert last
    for mail in last:
        assert "if the game ended now" not in mail["body"], mail["subject"]


def test_a_bid_prompt_under_the_ace_of_crowns_does_not_say_coins_break_the_tie(bid: Played):
    """Under the Ace of Crowns a tie for the highest bid loses the points;
    no coins are bid. The prompt said so, and, two lines below, 'your coins:
    2 (they break a tie for the highest bid)'."""
    crowned = [m for m in bid.box.to(PLAYERS[0]) if "Ace of Crowns" in m["subject"] and "is open." in m["body"]]
    assert crowned
    for mail in crowned:
        assert "they break a tie for the highest bid" not in mail["body"]
        assert "no tie-break by coins in this auction: the Ace of Crowns" in mail["body"]
