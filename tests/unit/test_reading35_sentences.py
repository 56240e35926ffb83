"""Emoji as phones send them, and moves written out in a sentence, read through ``Engine.ingest``.

A phone sends a suit as "♥️" (the suit and a variation selector), a thumbs-up with a skin tone, a digit as a
keycap ("3️⃣"): none of that dressing may break a move.  A line that names exactly one legal move in words
("Going with the 10 of hearts this round.") is answered with that move offered, never played; a line that
names two moves is offered neither.
"""

from __future__ import annotations

import pytest
from conftest import PLAYERS, Mailbox, answer, send
from hypothesis import given
from hypothesis import strategies as st
from test_ingest_bid import AUCTION, _tie_with_carol, is_prompt, seed_where
from test_reading import PROPERTY, positions

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


def test_a_keycap_digit_is_the_digit(engine, clock, seeds):
    seeds.fixed = seed_where(lambda state, seed: not state.ace("suns"))  # a bid of one tile
    engine.new_game("bid", PLAYERS)
    assert send(engine, clock, ALICE, "bid 3\ufe0f\u20e3", subject=AUCTION).code == "move"
    assert moves_made(engine) == ["bid 3"]


# -- moves written out in a sentence --------------------------------------------------


@pytest.mark.parametrize(
    ("line", "meant"),
    [
        ("Going with the 10 of {suit} this round.", "bid 10"),
        ("I'll go with the king", "bid K"),
    ],
)
def test_a_sentence_naming_one_card_is_answered_with_that_card_offered(engine, clock, line, meant):
    engine.new_game("pure-skill", PLAYERS)
    suit = SUITS[engine.table(1).seat_of(ALICE)]
    box = Mailbox(engine)
    box.new()
    assert send(engine, clock, ALICE, line.format(suit=suit)).code == "refused"
    assert f"Did you mean `{meant}`?" in refusal_to(box, ALICE)
    assert moves_made(engine) == []  # offered, not played


@pytest.mark.parametrize("line", ["bid 7, then 8 next round", "Going with the 10 of {other} this round.", "7 or 8?"])
def test_a_sentence_naming_two_cards_or_anothers_card_gets_no_offer(engine, clock, line):
    engine.new_game("pure-skill", PLAYERS)
    suit = SUITS[engine.table(1).seat_of(ALICE)]
    box = Mailbox(engine)
    box.new()
    assert send(engine, clock, ALICE, line.format(other=next(s for s in SUITS if s != suit))).code == "refused"
    assert "Did you mean" not in refusal_to(box, ALICE)
    assert moves_made(engine) == []


@pytest.mark.parametrize("line", ["Actually, make that bid 9. Sorry!", "Make it bid 9"])
def test_a_correction_of_nothing_in_a_sentence_plays_its_move(engine, clock, line):
    """The correcting words alone (no move above them to take back) leave a
    move the grammar reads without doubt: it is played, not offered."""
    engine.new_game("pure-skill", PLAYERS)
    box = Mailbox(engine)
    box.new()
    assert send(engine, clock, ALICE, line).code == "move"
    assert [m["move"] for m in engine.store.moves(1, 1) if m["source"] == "mail"] == ["bid 9"]


def test_make_it_bid_in_bid_plays_the_tile(engine, clock, seeds):
    seeds.fixed = seed_where(lambda state, seed: not state.ace("suns"))  # a bid of one tile
    engine.new_game("bid", PLAYERS)
    box = Mailbox(engine)
    box.new()
    assert send(engine, clock, ALICE, "Make it bid 4", subject=AUCTION).code == "move"


@pytest.mark.parametrize("line", ["bid 3 and 5", "I'll bid 3 & 5 please"])
def test_two_tiles_with_and_in_a_two_tile_auction_offer_the_pair(engine, clock, seeds, line):
    seeds.fixed = seed_where(lambda state, seed: state.ace("suns"))
    engine.new_game("bid", PLAYERS)
    box = Mailbox(engine)
    prompt = next(m for m in box.to(ALICE) if is_prompt(m))
    box.new()
    assert answer(engine, clock, prompt, line).code == "refused"
    assert "Did you mean `bid 3 5`?" in refusal_to(box, ALICE)
    assert moves_made(engine) == []


def test_two_tiles_with_and_in_a_one_tile_auction_offer_neither(engine, clock, seeds):
    seeds.fixed = seed_where(lambda state, seed: not state.ace("suns"))
    engine.new_game("bid", PLAYERS)
    box = Mailbox(engine)
    box.new()
    assert send(engine, clock, ALICE, "bid 3 and 5", subject=AUCTION).code == "refused"
    assert "Did you mean" not in refusal_to(box, ALICE)


@pytest.mark.parametrize("line", ["I'll put in 1 coin", "I'll put in one coin.", "1 coin from me"])
def test_coins_put_in_a_sentence_at_a_tie_break_are_offered(engine, clock, seeds, line):
    box = _tie_with_carol(engine, clock, seeds)
    prompt = next(m for m in box.to(ALICE) if is_prompt(m) and "coin tie-break" in m["subject"])
    box.new()
    assert answer(engine, clock, prompt, line).code == "refused"
    assert "Did you mean `coins 1`?" in refusal_to(box, ALICE)
    assert engine.store.final_moves(1, engine.table(1).phases[-1]["number"]) == {}


# Two moves put side by side, never joined into one ("1, 2" is one Bluff reroll of two dice)
SENTENCES = ["Going with {a}, or maybe {b}", "{a} or {b}", "I'll go with {a}. Or {b}?", "Either {a} or {b} this round"]


@PROPERTY
@given(st.data(), positions())
def test_a_sentence_naming_two_legal_moves_gets_no_suggestion(data, position):
    game, state, seat, first = position
    others = [move for move in game.legal_moves(state, seat) if move != first]
    if not others:
        return
    second = data.draw(st.sampled_from(others))
    a, b = game.move_text(first), game.move_text(second)
    for words in ({"a": a, "b": b}, {"a": a.partition(" ")[2] or a, "b": b.partition(" ")[2] or b}):
        line = data.draw(st.sampled_from(SENTENCES)).format(**words)
        assert game.suggest(state, seat, line) is None, line
