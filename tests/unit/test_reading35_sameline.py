"""A correction on the move's own line (issue 35, item 1), through ``Engine.ingest``.

One line that holds a move, then words that take it back, then a move ("bid
5 no wait, bid 6", "bid 3, actually bid 4") or what is left of one ("bid 5 -
no, make it 6": the move taken back gives its verb) is read as its last
move, and the answer says the first was taken back; two moves on a line with
nothing taking back between them ("bid 5 bid 6") stay a move badly written,
and neither is played.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock, last_id
from conftest import send as play
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_reading35_corrections import SEEDS, counted, fresh_engine, mover_and_moves, reply_body
from test_reading35_corrections import pure as _pure
from test_reading35_leftovers import spend_queens

pure = _pure  # the fixture

KINDS = ("pure-skill", "bid", "ice", "priority", "bluff")
# The forms on one line, each as "{first}" then "{second}"
WITHIN = (
    "{first} no wait, {second}",
    "{first}, actually {second}",
    "{first} - no, make it {second}",
    "{first}... scratch that, {second}",
    "{first} sorry, I meant {second}",
    "{first}; correction: {second}",
    "{first} oops, {second} instead",
)
# The same, the second move without its verb: the first gives it
VERBLESS = (
    "{first} - no, make it {rest}",
    "{first} no wait, {rest}",
    "{first}, actually {rest}",
    "{first}... scratch that, {rest}",
)


@pytest.mark.parametrize(
    "line",
    ["bid 5 no wait, bid 6", "bid 5, actually bid 6", "bid 5 - no, make it 6", "bid 5... scratch that, bid 6"],
)
def test_a_correction_on_the_moves_own_line_plays_the_corrected_bid(engine, clock, pure, line):
    before = last_id(engine)
    assert play(engine, clock, PLAYERS[0], line).code == "move"
    assert counted(engine, pure, 0) == ["bid 6"]
    body = reply_body(engine, PLAYERS[0], before)
    assert f"> {line} You took back bid 5 on this same line, so it was not played." in body
    assert "Your bid for Round 1 of 13 is in: bid 6." in body


def test_a_correction_on_the_line_in_bid_plays_the_corrected_bid(engine, clock):
    engine.new_game("bid", PLAYERS)
    player, seat, legal = mover_and_moves(engine, 1)
    first, second = [move for move in legal if move.startswith("bid ")][:2]
    assert play(engine, clock, player, f"{first}, actually {second}").code == "move"
    assert counted(engine, 1, seat) == [second]


def test_two_moves_on_a_line_with_nothing_taking_back_between_still_play_neither(engine, clock, pure):
    before = last_id(engine)
    assert play(engine, clock, PLAYERS[0], "bid 5 bid 6").code == "refused"
    assert counted(engine, pure, 0) == []
    assert "took back" not in reply_body(engine, PLAYERS[0], before)


def test_a_correction_on_the_line_that_cannot_be_played_plays_nothing_and_says_why(engine, clock):
    game = spend_queens(engine, clock)
    before = last_id(engine)
    assert play(engine, clock, PLAYERS[0], "bid K, actually bid Q").code == "refused"
    assert counted(engine, game, 0) == ["bid Q"]  # round 1's only: the round waits for a move
    body = reply_body(engine, PLAYERS[0], before)
    assert "You took back bid K on this same line, so it was not played." in body
    assert "You no longer hold the Queen" in body


def test_a_correction_on_the_line_asked_as_a_question_plays_nothing(engine, clock, pure):
    assert play(engine, clock, PLAYERS[0], "bid 5, actually bid 6?").code == "refused"
    assert counted(engine, pure, 0) == []


def test_a_line_ending_in_words_that_take_nothing_back_is_read_as_before(engine, clock, pure):
    assert play(engine, clock, PLAYERS[0], "bid 5 - good luck!").code == "move"
    assert play(engine, clock, PLAYERS[1], "bid 6 instead of 5").code == "move"
    assert counted(engine, pure, 0) == ["bid 5"]
    assert counted(engine, pure, 1) == ["bid 6"]


def test_a_correction_on_a_quoted_line_is_never_read(engine, clock, pure):
    assert play(engine, clock, PLAYERS[0], "bid 5\n\nOn Monday, Bob wrote:\n> bid 4 no wait, bid 6\n").code == "move"
    assert counted(engine, pure, 0) == ["bid 5"]


def test_a_line_correcting_itself_under_another_move_is_ambiguous(engine, clock, pure):
    """The line takes back only its own move: the move above it still stands beside its last."""
    assert play(engine, clock, PLAYERS[0], "bid 4\nbid 5 no wait, bid 6").code == "refused"
    assert counted(engine, pure, 0) == []


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_games_legal_moves_corrected_on_one_line(kind, data):
    """Two different legal moves of the seat to move on one line: with words
    taking back between them, the second counts (also written without the
    verb when it shares the first's); with none, neither; quoted, nothing
    of the line is read."""
    with tempfile.TemporaryDirectory() as root:
        clock = FakeClock()
        engine = fresh_engine(Path(root), clock, data.draw(st.sampled_from(SEEDS)))
        game = engine.new_game(kind, PLAYERS)
        player, seat, legal = mover_and_moves(engine, game)
        first, second = data.draw(st.lists(st.sampled_from(legal), min_size=2, max_size=2, unique=True))
        same_verb = " " in second and first.split(" ", 1)[0] == second.split(" ", 1)[0]
        shape = data.draw(
            st.sampled_from(
                ["corrected", "verbless", "plain", "quoted"] if same_verb else ["corrected", "plain", "quoted"]
            )
        )
        form = data.draw(st.sampled_from(VERBLESS if shape == "verbless" else WITHIN))
        line = form.format(first=first, second=second, rest=second.split(" ", 1)[-1])
        body = {
            "corrected": line,
            "verbless": line,
            "plain": f"{first} {second}",
            "quoted": f"Hello\n\nOn Monday, {player} wrote:\n> {line}\n",
        }[shape]
        play(engine, clock, player, body, game=game)
        expected = [second] if shape in ("corrected", "verbless") else []
        assert counted(engine, game, seat) == expected, body
