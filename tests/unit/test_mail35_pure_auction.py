"""Mail a player can play from (issue 35, item 4), for Pure Skill and
Auction: whole games played by mail through ``Engine.ingest``, every mail
a player gets read as the player reads it.

Pure Skill: a prompt says how the prize is won and what the others can
still bid (every bid is shown when its round resolves, so that is the
table's knowledge); a result says who took the prize with what card, or
who tied.  Auction: a prompt says how the item is won, for the reader's own
colour; a tally says which total wins; the final mail gives each round's
tally, not every turn."""

from __future__ import annotations

import re

import pytest
from conftest import PLAYERS
from test_notify import Played

ALICE = PLAYERS[0]
CARDS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
_BID = re.compile(r"^  (\S+@\S+) +(\S+)(?: +\(.*\))?$", re.M)


@pytest.fixture(scope="module")
def pure(tmp_path_factory) -> Played:
    return Played(tmp_path_factory.mktemp("pure"), "pure-skill")


@pytest.fixture(scope="module")
def auction(tmp_path_factory) -> Played:
    return Played(tmp_path_factory.mktemp("auction"), "priority")


def _is_prompt(mail: dict) -> bool:
    return ": the prize is the " in mail["subject"] and not mail["subject"].startswith("Re:")


def _is_result(mail: dict) -> bool:
    return " is resolved." in mail["body"] and not mail["subject"].startswith("Re:")


def test_a_pure_skill_prompt_says_how_the_prize_is_won_and_what_the_others_can_still_bid(pure: Played):
    for player in PLAYERS:
        bid: dict[str, list[str]] = {address: [] for address in PLAYERS}  # what the player was shown bid
        prompts = 0
        for mail in pure.box.to(player):
            body = mail["body"]
            if _is_result(mail):
                for address, card in _BID.findall(body.split("The bids:")[1].split("\n\n")[0]):
                    bid[address].append(card)
            elif _is_prompt(mail):
                prompts += 1
                said = " ".join(body.split())
                assert re.search(r"The prize: the \w+ of spades.*, worth \d+ points?\. The single highest bid", said)
                assert "if the highest bid is tied, the prize is discarded" in said
                hand = re.search(r"^Your hand \(\w+\): (.+)$", body, re.M)[1].split()
                assert hand == [c for c in CARDS if c not in bid[player]]
                others = re.search(r"not bid yet \(every bid is shown after its round\):\n((?:  .+\n)+)", body)[1]
                listed = {line.split()[0]: line.split()[2:] for line in others.splitlines()}
                assert set(listed) == set(PLAYERS) - {player}  # the others, never the reader again
                for address, cards in listed.items():
                    assert cards == [c for c in CARDS if c not in bid[address]], (address, mail["subject"])
        assert prompts >= 12, player  # the 13th round's bid is everyone's last card


def test_a_pure_skill_result_says_who_took_the_prize_with_what_or_who_tied(pure: Played):
    results = [mail for mail in pure.box.to(ALICE) if _is_result(mail)]
    assert len(results) == 13
    kinds = set()
    for mail in results:
        body = mail["body"]
        bids = dict(_BID.findall(body.split("The bids:")[1].split("\n\n")[0]))
        top = max(bids.values(), key=CARDS.index)
        highest = [address for address, card in bids.items() if card == top]
        said = " ".join(body.split())
        if len(highest) == 1:
            kinds.add("won")
            assert re.search(rf"{highest[0]} takes the \w+ of spades with the \w+, the single highest bid: \d+ p", said)
            assert "with the " + {"A": "Ace", "J": "Jack", "Q": "Queen", "K": "King"}.get(top, top) + "," in said
        else:
            kinds.add("tied")
            named = ", ".join(highest[:-1]) + " and " + highest[-1]  # in seating order
            assert f" {named} tied for the highest bid with the " in said, said
            assert "nobody takes the prize: it is discarded" in said
    assert kinds == {"won", "tied"}


def test_pure_skills_final_mail_says_the_winners_total_and_the_others(pure: Played):
    final = pure.box.to(ALICE)[-1]
    assert "Game over" in final["subject"]
    said = " ".join(final["body"].split())
    scores = {m[0]: int(m[1]) for m in re.findall(r"^  (\S+@\S+) +(\d+)$", final["body"].split("Totals:")[1], re.M)}
    winner = max(scores, key=scores.__getitem__)
    others = ", ".join(f"{address} {scores[address]}" for address in PLAYERS if address != winner)
    assert f"{winner} wins with {scores[winner]} points, the single highest total ({others})." in said
    assert "random bid at the deadline" not in said  # the marks' key, only where a mark is


def _colour(body: str) -> str:
    return re.search(r"^Your colour: (\w+)\.", body, re.M)[1]


def test_an_auction_prompt_says_how_the_reader_takes_the_item_and_lists_each_board_in_words(auction: Played):
    for player in PLAYERS:
        prompts = [
            m
            for m in auction.box.to(player)
            if re.search(r": your turn, the item is worth \d+$", m["subject"]) and not m["subject"].startswith("Re:")
        ]
        assert prompts, player
        for mail in prompts:
            body = mail["body"]
            colour = _colour(body)
            said = " ".join(body.split())
            assert f"You take the item if {colour}, your colour, has the single lowest total" in said
            assert not re.search(r"^   board: ", body, re.M)  # the table says where the cards are in words
            boards = re.findall(r"^   (cards on [a-z, ]+|no cards on the board); (\d+) in hand", body, re.M)
            assert len(boards) == len(PLAYERS)
            legal = re.search(r"^Moves you can make now: (.+)\.$", body, re.M)[1].split(", ")
            assert "for example" not in body  # every move is listed once, no examples besides
            assert "Reply with one line: one of the moves below." in body
            assert legal


def test_an_auctions_tally_says_which_total_wins_and_what_each_player_won(auction: Played):
    results = [
        m
        for m in auction.box.to(ALICE)
        if "cards are shown and added up by colour" in m["body"] and "Game over" not in m["subject"]
    ]
    assert len(results) == auction.rounds
    for mail in results:
        body = mail["body"]
        totals = dict(
            (colour, int(total))
            for colour, total in re.findall(
                r"(\w+) (\d+)", re.search(r"Totals \(the single lowest wins\): (.+)\.", body)[1]
            )
        )
        lowest = min(totals.values())
        at_lowest = [colour for colour, total in totals.items() if total == lowest]
        if len(at_lowest) == 1:
            assert re.search(
                rf"^{at_lowest[0].capitalize()} has the lowest total: \S+ is {at_lowest[0]} and wins", body, re.M
            )
            assert re.search(r"^\d\. \S+, \w+: \d+ points? \(won items? worth \d+(?: \+ \d+)*\)$", body, re.M)
        else:
            assert " tie for the lowest total: the item worth " in body
        assert not re.search(r"points? \(\d", body)  # what a number in brackets is, said


def test_an_auctions_final_mail_gives_each_rounds_tally_and_the_winners_items(auction: Played):
    final = auction.box.to(ALICE)[-1]
    body = final["body"]
    assert "Game over" in final["subject"]
    winner = re.search(r"^(\S+) wins with (\d+) points?, from items worth ([\d + ]+)\.$", body, re.M)
    assert winner, body
    assert int(winner[2]) == sum(int(item) for item in winner[3].split(" + "))
    assert len(re.findall(r"^Round \d+ of \d+:$", body, re.M)) == auction.rounds
    assert "plays a card face down" not in body  # each round's tally, not every turn
    assert "A bot never wins" not in body  # no bot plays here
