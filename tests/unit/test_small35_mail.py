"""Issue 35's smaller points about the referee's mail: a short settle
window's close told to the second; receipts threaded under the mail they
answer; a move sent to the wrong game's mail pointed at the game it fits."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from conftest import PLAYERS, last_id, mails
from conftest import send as play
from test_commands import answers_in

ALICE, BOB, CAROL = PLAYERS


@pytest.mark.parametrize(
    ("settle", "shown"), [(timedelta(seconds=20), r"\d\d:\d\d:\d\d"), (timedelta(minutes=30), r"\d\d:\d\d")]
)
def test_a_short_settle_window_is_told_to_the_second(engine, clock, settle, shown):
    engine.new_game("pure-skill", PLAYERS, settle=settle)
    clock.advance(seconds=7)  # (the last move lands inside a minute)
    play(engine, clock, ALICE, "bid 4")
    play(engine, clock, BOB, "bid 5")
    before = last_id(engine)
    play(engine, clock, CAROL, "bid 6")
    ((_, text),) = answers_in(mails(engine, after=before)[0]["body"])
    closes = re.search(r"closes at \d{4}-\d\d-\d\d (\S+) UTC", " ".join(text.split()))
    assert closes and re.fullmatch(shown, closes[1]), text
    if settle < timedelta(minutes=1):
        assert closes[1] == (clock() + settle).strftime("%H:%M:%S")


def thread_of(mail: dict) -> tuple[str, list[str]]:
    return str(mail["message"]["In-Reply-To"]), str(mail["message"]["References"]).split()


@pytest.mark.parametrize("references", [True, False])  # (some clients send In-Reply-To alone)
def test_answers_and_receipts_thread_under_the_players_mail(engine, clock, references):
    engine.new_game("pure-skill", PLAYERS)
    prompts = {m["recipients"][0]: m["message"]["Message-ID"] for m in mails(engine)}
    for who, card in ((ALICE, 4), (BOB, 5), (CAROL, 6)):
        thread = {"In-Reply-To": prompts[who], **({"References": prompts[who]} if references else {})}
        before = last_id(engine)
        play(engine, clock, who, f"bid {card}", message_id=f"<m{card}@client.example.net>", headers=thread)
        # the answer on its own (alice, bob), or as the receipt at the top of the round's result (carol)
        (answer,) = [
            m for m in mails(engine, after=before) if f"> bid {card}" in m["body"] and m["recipients"] == [who]
        ]
        assert thread_of(answer) == (f"<m{card}@client.example.net>", [prompts[who], f"<m{card}@client.example.net>"])


HINT = "It looks like a move of your game 2 (Bid!): send it in reply to that game's mail."


def test_a_move_sent_to_the_wrong_games_mail_is_pointed_at_the_game_it_fits(engine, clock):
    auction = engine.new_game("priority", PLAYERS)
    bid = engine.new_game("bid", PLAYERS)
    for who in PLAYERS:  # (to the first mover "pawn" is no Auction move; to the others, not their turn)
        before = last_id(engine)
        assert play(engine, clock, who, "pawn\nfrobnicate", game=auction).code == "refused"
        ((_, text), (_, other)) = answers_in(mails(engine, after=before)[0]["body"])
        assert HINT in " ".join(text.split()) and "game 2" not in other
    assert engine.store.moves(auction) == [] and engine.store.moves(bid) == []


def test_no_hint_without_a_game_the_line_fits(engine, clock):
    engine.new_game("priority", PLAYERS)
    before = last_id(engine)
    play(engine, clock, ALICE, "bid 5")
    ((_, text),) = answers_in(mails(engine, after=before)[0]["body"])
    assert text.startswith("Not done: ") and "looks like a move" not in text  # (out of turn, or no move of this game)
