"""What a sentence is offered (issue 35, item 2), through ``Engine.ingest``: a count of coins or points is never
offered as a card or a tile ("I'll put in 1 coin" is not Bid!'s ace, "round 3" not the 3), and an Ice Ice Baby pyramid named by its
size and colour ("I'll take the medium yellow one.") is offered, never a pyramid that only comes close."""

from __future__ import annotations

import pytest
from conftest import PLAYERS, Mailbox, send
from hypothesis import given
from hypothesis import strategies as st
from test_ingest_bid import AUCTION, seed_where
from test_ingest_ice import AUCTION as ICE_AUCTION
from test_ingest_ice import first_turn
from test_reading import PROPERTY, positions
from test_reading35_sentences import moves_made, refusal_to

from referee.rules.ice import COLOURS, SIZE_NAME

ALICE = PLAYERS[0]
COUNTS = ["I'll put in 1 coin", "I'll put in one coin.", "1 coin from me", "2 coins", "I'll spend two coins", "1 point"]


# -- a count is not a card or a tile ------------------------------------------------


@pytest.mark.parametrize("line", COUNTS)
def test_a_count_of_coins_while_bidding_tiles_is_offered_no_tile(engine, clock, seeds, line):
    seeds.fixed = seed_where(lambda state, seed: not state.ace("suns"))  # a bid of one tile, any tile legal
    engine.new_game("bid", PLAYERS)
    box = Mailbox(engine)
    box.new()
    assert send(engine, clock, ALICE, line, subject=AUCTION).code == "refused"
    reply = refusal_to(box, ALICE)
    assert "Did you mean" not in reply, reply
    assert moves_made(engine) == []


# A number that counts something, or numbers a round, in a sentence about something else than a card
FALSE_FRIENDS = [*COUNTS, "3 cards left", "I'll put in 2 tiles", "round 3", "Round 3 of 13", "see you in game #2"]


@pytest.mark.parametrize("line", FALSE_FRIENDS)
def test_a_count_or_a_rounds_number_in_pure_skill_is_offered_no_card(engine, clock, line):
    engine.new_game("pure-skill", PLAYERS)
    box = Mailbox(engine)
    box.new()
    assert send(engine, clock, ALICE, line).code == "refused"
    assert "Did you mean" not in refusal_to(box, ALICE)
    assert moves_made(engine) == []


@PROPERTY
@given(st.data(), positions())
def test_a_count_is_offered_only_as_a_move_that_counts_it(data, position):
    """In every game and phase: "I'll put in N coins" is offered as nothing, or as the coin move of N."""
    game, state, seat, _ = position
    count = data.draw(st.integers(0, 12))
    noun = data.draw(st.sampled_from(["coin", "coins", "point", "points", "cards", "tiles", "pyramids"]))
    line = data.draw(st.sampled_from(["I'll put in {n} {noun}", "{n} {noun}", "Going with {n} {noun} this round"]))
    offered = game.suggest(state, seat, line.format(n=count, noun=noun))
    assert offered in (None, f"coins {count}") and (offered is None or noun.startswith("coin")), offered
    assert (
        game.suggest(state, seat, data.draw(st.sampled_from(["round {n}", "Round {n} of 13"])).format(n=count)) is None
    )


# -- a pyramid by size and colour ----------------------------------------------------


@pytest.mark.parametrize(
    "sentence", ["I'll take the {size} {colour} one.", "the {colour} {size} please", "{S} {colour}"]
)
def test_a_pyramid_named_by_size_and_colour_is_offered(engine, clock, seeds, sentence):
    mover, box = first_turn(engine, clock, seeds)
    table = engine.table(1)
    held = table.state.active[table.state.turn]
    for colour, size in held:  # one pyramid of each size at the start
        line = sentence.format(size=SIZE_NAME[size], S=SIZE_NAME[size][0].upper(), colour=colour)
        assert send(engine, clock, mover, line, subject=ICE_AUCTION).code == "refused"
        assert f"Did you mean `bid {SIZE_NAME[size][0].upper()}-{colour}`?" in refusal_to(box, mover), line
    assert moves_made(engine) == []


def test_a_pyramid_not_held_or_two_that_fit_are_not_offered(engine, clock, seeds):
    mover, box = first_turn(engine, clock, seeds)
    table = engine.table(1)
    held = table.state.active[table.state.turn]
    (colour, size), *_ = held
    other = next(c for c in COLOURS if c != colour)
    shared = next(c for c, _ in held if sum(c == d for d, _ in held) > 1)  # a colour of two held pyramids
    for line in [f"I'll take the {SIZE_NAME[size]} {other} one.", f"I'll take the {shared} one."]:
        assert send(engine, clock, mover, line, subject=ICE_AUCTION).code == "refused"
        assert "Did you mean" not in refusal_to(box, mover), line
    assert moves_made(engine) == []
