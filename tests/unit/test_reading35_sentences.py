"""Emoji as phones send them, and moves written out in a sentence, read through ``Engine.ingest``.

A phone sends a suit as "♥️" (the suit and a variation selector), a thumbs-up with a skin tone, a digit as a
keycap ("3️⃣"): none of that dressing may break a move.  A line that names exactly one legal move in words
("Going with the 10 of hearts this round.") is answered with that move offered, never played; a line that
names two moves is offered neither.
"""

from __future__ import annotations

import pytest
from conftest import PLAYERS, Mailbox, send
from test_ingest_bid import AUCTION

from referee.rules import GAMES
from referee.rules.pure_skill import SUITS

ALICE = PLAYERS[0]
SYMBOLS = {"hearts": "\u2665\ufe0f", "diamonds": "\u2666\ufe0f", "clubs": "\u2663\ufe0f"}  # as a phone sends them
DRESSED = ["\U0001f44d\U0001f3fd", "\u270c\ufe0f", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\u2764\ufe0f"]


def first_mover(engine) -> tuple[str, str]:
    """The address of a player who owes a move in game 1, and their first legal move's text."""
    table = engine.table(1)
    address = engine.status(1)["phase"]["waiting_for"][0]
    seat = table.seat_of(address)
    return address, table.rules.move_text(table.rules.legal_moves(table.state, seat)[0])


def moves_made(engine) -> list[str]:
    return [row["move"] for row in engine.store.moves(1)]


def refusal_to(box: Mailbox, address: str) -> str:
    (mail,) = [m for m in box.new() if m["to"] == address]
    return mail["body"]


# -- emoji ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line", ["bid 10 {suit}", "Bid: 10 {suit}", "bid 10{suit}", "bid {suit}10", "bid \U0001f51f {suit}"]
)
def test_a_suit_with_the_variation_selector_plays_the_card(engine, clock, line):
    engine.new_game("pure-skill", PLAYERS)
    suit = SUITS[engine.table(1).seat_of(ALICE)]
    assert send(engine, clock, ALICE, line.format(suit=SYMBOLS[suit])).code == "move"
    assert moves_made(engine) == ["bid 10"]


def test_another_players_suit_with_the_variation_selector_is_refused_for_its_suit(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    suit = SUITS[engine.table(1).seat_of(ALICE)]
    other = next(s for s in SUITS if s != suit)
    box = Mailbox(engine)
    box.new()
    assert send(engine, clock, ALICE, f"bid 10 {SYMBOLS[other]}").code == "refused"
    assert f"the {other} are not yours" in refusal_to(box, ALICE)
    assert moves_made(engine) == []


@pytest.mark.parametrize("kind", sorted(GAMES))
@pytest.mark.parametrize("emoji", DRESSED)
def test_a_dressed_emoji_beside_a_move_leaves_the_move_in_every_game(engine, clock, kind, emoji):
    engine.new_game(kind, PLAYERS)
    address, move = first_mover(engine)
    assert send(engine, clock, address, f"{move} {emoji}").code == "move"
    assert moves_made(engine) == [move]


def test_a_keycap_digit_is_the_digit(engine, clock):
    engine.new_game("bid", PLAYERS)
    assert send(engine, clock, ALICE, "bid 3\ufe0f\u20e3", subject=AUCTION).code == "move"
    assert moves_made(engine) == ["bid 3"]
