"""Mail a player can play from (issue 35, item 4): whole games of Bluff
Auction and Bid! played by mail through ``Engine.ingest``, every mail a
player gets read as the player reads it.

Bluff: a seat's dice are listed by colour alone, so "2 blue" can never be
read as two blue dice, and an auction's result says what each bid's limit
was and why the winner won.  Bid!: the prompt says how the points on offer
come from the dice."""

from __future__ import annotations

import random
import re

import pytest
from conftest import PLAYERS
from test_notify import Played

COLOURS = "purple|black|red|yellow|blue|green"
_OWN_DICE = re.compile(rf"^ *Your (\d+) dic?e (?:for round \d+|\(only you see them\)): ((?:{COLOURS}|, )+)\.$", re.M)
_AUCTION = re.compile(rf"^(?:{COLOURS.title()}): .*$", re.M)


class LowBids(random.Random):
    """Mostly the low bids, so that some auctions are won (a bid within the dice)."""

    def choice(self, seq):  # type: ignore[override]
        low = [m for m in seq if m[0] in ("bid", "move") and m[-1] <= 3]
        return super().choice(low if low and self.random() < 0.9 else seq)


class PlayedLow(Played):
    def play(self, choose: random.Random) -> None:
        super().play(LowBids("bluff low"))


@pytest.fixture(scope="module")
def bluff(tmp_path_factory) -> Played:
    return PlayedLow(tmp_path_factory.mktemp("bluff"), "bluff")


@pytest.fixture(scope="module")
def bid(tmp_path_factory) -> Played:
    return Played(tmp_path_factory.mktemp("bid"), "bid")


def test_a_players_dice_are_listed_by_colour_never_as_counts(bluff: Played):
    for player in PLAYERS:
        listed = [match for mail in bluff.box.to(player) for match in _OWN_DICE.findall(mail["body"])]
        assert len(listed) > 9, player  # every round's roll, and every prompt
        for count, faces in listed:
            assert len(faces.split(", ")) == int(count)  # one colour a die, no number before it
        for mail in bluff.box.to(player):  # nowhere a die number reads as a count ("1 blue, 2 purple")
            assert not re.search(rf"\b\d ({COLOURS}), \d ({COLOURS})\b", mail["body"]), mail["subject"]


def test_an_auctions_result_says_each_bids_limit_and_why_the_winner_won(bluff: Played):
    mails = [m for m in bluff.box.to(PLAYERS[0]) if "The purple dice:" in m["body"] and "Game over" not in m["subject"]]
    assert mails
    lines = [line for mail in mails for line in _AUCTION.findall(mail["body"])]
    for mail in mails:
        assert "values:" not in mail["body"]
        assert "A bid's limit is those dice plus its bidder's own virtual\ndice" in mail["body"]
    won = [line for line in lines if " nobody wins " not in line and " wins " in line]
    assert won, "no auction was won: the game shows no winner's line"
    for line in won:
        assert re.search(r"wins .+ with a bid of \d+, the highest bid within its limit \(limits?: \d+ for ", line)
    for line in lines:
        assert line in won or "every bid was over its limit (limit" in line or "no bids" in line, line


def test_bids_prompt_says_how_the_points_on_offer_come_from_the_dice(bid: Played):
    prompts = [m for m in bid.box.to(PLAYERS[0]) if "Dice: Suns" in m["body"] and " is open." in m["body"]]
    assert prompts
    explained = 0
    for mail in prompts:
        body = mail["body"]
        points = int(re.search(r"The winner takes (\d+) points?", body)[1])
        faces = re.search(r"Dice: Suns (\w+), Moons (\w+), Crowns (\w+), Arms (\w+)\.", body).groups()
        scoring = [int(f) for f in faces if f.isdigit() and int(f) >= 2]
        doubled = faces[0] == "ACE"
        assert points == sum(scoring) * (2 if doubled else 1)
        if scoring:
            said = re.search(
                r"\(Points: the dice showing 2 to 5 added up, ([\d +=]+?)(, doubled by the Ace of Suns)?;", body
            )
            assert said, body
            assert said[1].split(" = ")[0] == " + ".join(map(str, scoring))
            assert bool(said[2]) == doubled
            explained += 1
        if "coins" not in mail["subject"]:
            assert "The highest bid wins" in body  # what a bid is and what it costs
    assert explained


def test_a_bidding_prompt_says_what_the_players_own_dice_make_sure_of(bluff: Played):
    prompts = [
        m
        for m in bluff.box.to(PLAYERS[0])
        if m["subject"].endswith("your turn to bid") and not m["subject"].startswith("Re:")
    ]
    assert prompts
    for mail in prompts:
        body = mail["body"]
        own = _OWN_DICE.search(body)[2].split(", ")
        community = re.search(r"^Community dice \(everyone's\): (.+)\.$", body, re.M)
        counted = own + (community[1].split(", ") if community else [])
        sure = re.search(r"others' dice only add\): (.+)\.$", body, re.M)[1]
        for track, limit in (part.split(" ") for part in sure.split(", ")):
            mine = counted.count(track) if track != "purple" else 0
            # (and the player's own virtual dice: test_review35_mail)
            assert int(limit) >= counted.count("purple") + mine, (track, body)
