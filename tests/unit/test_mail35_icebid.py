"""Mail a player can play from (issue 35, item 4), Ice Ice Baby and Bid!:
whole games by mail through ``Engine.ingest``, every mail a player gets
read as the player reads it.

Ice: a prompt says what is on offer, what the player can bid from, what
passing costs and brings, and glosses L, M, S; the final scoring is in
words.  Bid!: the prompt says what coins are for; a coin tie-break says
what is at stake and what coins cost; a result adds up two-tile bids and
says why the winner won; the game's history names everyone.  Bluff: the
Tools prompt says what "Tools" is."""

from __future__ import annotations

import re

import pytest
from conftest import PLAYERS
from test_notify import Played

ALICE = PLAYERS[0]
_PILE = r"(?:[LMS]-\w+(?: [LMS]-\w+)*|nothing)"


def _squeezed(body: str) -> str:
    return " ".join(body.split())


def _listed(body: str) -> list[str]:
    return re.search(r"Moves you can make now(?: \(the first \d+\))?: (.*?)\.(?: |$)", _squeezed(body))[1].split(", ")


def _seat_lines(body: str) -> dict[str, dict[str, str]]:
    """The board's rows, by player: "active" and "now" as shown."""
    rows = {}
    for name, block in re.findall(
        r"^\d\. (\S+?)(?:,[^:]*)?: \d+ points? if the game ended now\n((?:   .*\n)+)", body, re.M
    ):
        rows[name] = dict(re.findall(r"^   (\w+): +(.*)$", block, re.M))
    return rows


@pytest.fixture(scope="module")
def ice(tmp_path_factory) -> Played:
    return Played(tmp_path_factory.mktemp("ice"), "ice")


@pytest.fixture(scope="module")
def bid(tmp_path_factory) -> Played:
    return Played(tmp_path_factory.mktemp("bid"), "bid")


@pytest.fixture(scope="module")
def bluff(tmp_path_factory) -> Played:
    return Played(tmp_path_factory.mktemp("bluff"), "bluff", draw="bluff6")  # rerolls with Tools in rounds 3 to 5


def _prompts(played: Played, player: str, wanted: str) -> list[dict]:
    """The prompts ``player`` got whose Subject holds ``wanted`` (a turn's, or a sealed auction's)."""
    opened = re.compile(r"^.* of game \d+(?:: it is your turn| is open)\.$", re.M)
    return [m for m in played.box.to(player) if opened.search(m["body"]) and wanted in m["subject"]]


# -- Ice Ice Baby ------------------------------------------------------------------


def test_an_ice_bidding_prompt_says_what_is_on_offer_what_you_bid_from_and_what_passing_does(ice: Played):
    checked = 0
    for player in PLAYERS:
        for mail in _prompts(ice, player, "your turn, "):
            body = mail["body"]
            lot = re.search(rf"^Auction area \(auction \d+\): ({_PILE})$", body, re.M)[1]
            assert f"On offer: {lot}, all to the winner of this auction." in body
            rows = _seat_lines(body)
            mine = rows[player]
            assert f"Yours to bid from (your active area): {mine['active']}." in body
            assert "(L, M, S: large, medium, small." in body
            if "Everyone else passed without bidding" in body:
                continue
            passed = {
                int(m[1]): name for name, row in rows.items() if (m := re.match(r"passed, card (\d+)", row["now"]))
            }
            # I9: a bid passed on goes to the nearest passer down the cards who bid (test_review35_mail)
            bidders = [card for card, name in passed.items() if "without a bid" not in rows[name]["now"]]
            card = len(passed) + 1
            told = re.search(r"If you pass, you take card (\d+)(.*?)\. ", _squeezed(body))
            assert int(told[1]) == card
            own = re.match(rf"bid ({_PILE})", mine["now"])
            if own is None:
                assert (
                    told[2] == ", without a bid: you give nothing and get nothing (only a passer who bid is paid a bid)"
                )
            elif not bidders:
                assert (
                    f"with your bid {own[1]} on it: that bid goes to the dead area once the auction is won" in told[2]
                )
            else:
                below = max(bidders)
                assert f"with your bid {own[1]} on it: that bid goes to {passed[below]} (card {below})" in told[2]
            checked += 1
    assert checked > 20


def test_an_ice_prompt_lists_its_moves_once(ice: Played):
    """The moves the player can make are listed once, not again as examples (unless the list is cut short)."""
    for player in PLAYERS:
        for mail in _prompts(ice, player, ""):
            body = mail["body"]
            assert _listed(body)
            assert ("for example:" in body) == ("Moves you can make now (the first" in body), mail["subject"]


def test_an_ice_scoring_offer_names_the_players_active_area_and_says_what_uniform_means(ice: Played):
    offers = [(player, mail) for player in PLAYERS for mail in _prompts(ice, player, "score a tree?")]
    assert offers
    for player, mail in offers:
        body = mail["body"]
        assert f"Your active area: {_seat_lines(body)[player]['active']} (L, M, S: large, medium, small)." in body
        assert "A uniform tree (all one colour) is worth 7 points at the end, a mixed one 5." in _squeezed(body)


def test_the_ice_final_scoring_says_in_words_where_each_players_points_come_from(ice: Played):
    (final,) = [m for m in ice.box.to(ALICE) if "Game over" in m["subject"]]
    body = final["body"]
    scoring = body.split("Final scoring:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(scoring) == len(PLAYERS)
    totals = []
    for line, player in zip(scoring, PLAYERS, strict=True):
        said = re.fullmatch(rf"  {re.escape(player)} +(\d+) points?: (.*)", line)
        assert said, line
        parts = re.findall(r"\((\d+)\)", said[2])
        assert sum(map(int, parts)) == int(said[1]), line  # the parts add up to the total
        assert " x " not in line and "single" not in line
        totals.append(int(said[1]))
    tied = totals.count(max(totals)) > 1
    assert ("A tie on points is broken by" in body) == tied


# -- Bid! ----------------------------------------------------------------------------


def test_a_bid_prompt_says_what_coins_and_the_pawn_are_for_and_lists_the_moves_once(bid: Played):
    prompts = _prompts(bid, ALICE, "")
    assert prompts
    for mail in prompts:
        body = mail["body"]
        assert re.search(
            r"^Your tiles: .*; your coins: \d+ \((they break a tie for the highest bid|no tie-break by coins in this"
            r" auction: the Ace of Crowns)\)",  # (under the Ace of Crowns: test_review35_mail)
            body,
            re.M,
        )
        if "your pawn: yours to play" in body:
            assert "your pawn: yours to play (once a game)" in body
            assert 'Or play your pawn ("pawn"): this auction is cancelled' in body
        assert "for example:" not in body and _listed(body)


_FACES = {"null": 0, "ace": 1, **{str(n): n for n in range(2, 6)}}


def _bid_values(body: str) -> list[int]:
    """Each player's bid in a result's table of bids, as a number (null 0, ace 1)."""
    table = body.split("The bids:\n", 1)[1]
    lines = re.findall(r"^  \S+ +(\S+(?: \+ \S+)*(?: = \d+)?)", table, re.M)[: len(PLAYERS)]
    return [sum(_FACES[tile] for tile in line.split(" = ")[0].split(" + ")) for line in lines]


def test_a_coin_tie_break_says_what_is_at_stake_and_what_the_coins_cost(bid: Played):
    mails = bid.box.to(ALICE)
    coins = _prompts(bid, ALICE, ": coin tie-break: ")
    assert coins
    for mail in coins:
        body = mail["body"]
        label = re.search(r"\] (Auction [^:]+: coin tie-break): ", mail["subject"])[1]
        (result,) = [m for m in mails if f"\n{label} of game 1 is resolved." in "\n" + m["body"]]
        points = int(re.search(r"The winner takes (\d+) points?", result["body"])[1])
        assert f"bid coins for {points} point" in mail["subject"]
        assert f"The tied bids were {max(_bid_values(result['body']))} each. At stake: {points} point" in body
        assert "every coin bid goes to the bank, the loser's too" in _squeezed(body)


def test_a_bid_result_adds_up_each_bid_and_says_why_the_winner_won(bid: Played):
    results = [m for m in bid.box.to(ALICE) if " is resolved." in m["body"] and "The bids:\n" in m["body"]]
    doubles = 0
    for mail in results:
        body = mail["body"]
        values = _bid_values(body)
        for line in re.findall(r"^  \S+ +(\S+ \+ .*)$", body.split("The bids:\n", 1)[1], re.M):
            said = re.match(r"(\S+) \+ (\S+) = (\d+)", line)  # a two-tile bid, added up
            assert said and int(said[3]) == _FACES[said[1]] + _FACES[said[2]], line
            doubles += 1
        won = re.search(r"^\S+ wins the auction (.*?): \d+ points?", body, re.M)
        if won and "Coin tie-break:" in body:
            assert won[1] == "(the most coins)"
        elif won:
            assert won[1] == f"with the highest bid, {max(values)}"
    assert doubles


def test_a_bid_games_history_names_everyone_and_every_bid(bid: Played):
    (final,) = [m for m in bid.box.to(ALICE) if "Game over" in m["subject"]]
    history = re.findall(r"^(Auction .*?): ((?:bids|coins|cancelled) .*)$", final["body"], re.M)
    assert history
    assert not re.search(r"\bseat \d+ [+-]", final["body"])
    for label, line in history:
        line = re.sub(r"; the next roll's Ace of Arms: \S+ \+\d+(?:, \S+ \+\d+)*$", "", line)  # (test_review35_mail)
        if line.startswith("cancelled by "):
            assert re.fullmatch(r"cancelled by \S+'s (pawn|reroll)", line)
        elif line.startswith("coins "):
            assert "coin tie-break" in label and re.search(r"; (\S+ \+\d+|no winner)$", line)
        else:
            assert all(f"{player} " in line for player in PLAYERS), line
            assert re.search(r"; (tied|\S+ \+\d+|no winner|Ace of Crowns, tied: .* -\d+ each)$", line), line


# -- Bluff Auction ------------------------------------------------------------------


def test_the_tools_prompt_says_what_tools_means(bluff: Played):
    tools = [m for player in PLAYERS for m in _prompts(bluff, player, "reroll with your Tools?")]
    assert tools
    for mail in tools:
        body = _squeezed(mail["body"])
        assert (
            '("Tools" is the step before the bidding where players who own Tool tiles may roll some of their dice'
            " again, in secret.)" in body
        )
        assert 'name them by their numbers above ("reroll 1 3"), or say "keep" to keep them all.' in body
