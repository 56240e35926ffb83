"""The last reading gaps of issue 35's corrections, through ``Engine.ingest``.

A correction that asks for a move that cannot be played ("actually bid Q",
the queen spent) still takes back the move above it, and the mail makes no
move; a line that only opens with a correcting word ("Sorry, I'm late")
takes back nothing.  A correction without the verb ("make it 6" under "bid
5") is read with the verb of the move it corrects, and played when that is
a legal move.
"""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock, last_id
from conftest import send as play
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_reading35_corrections import SEEDS, counted, fresh_engine, mover_and_moves, reply_body
from test_reading35_corrections import pure as _pure

pure = _pure  # the fixture

KINDS = ("pure-skill", "bid", "ice", "priority", "bluff")
COURTESIES = (
    "Actually, thanks for running this!",
    "Sorry, I'm late",
    "Oops, forgot to say hi",
    "Sorry for the delay, busy week",
    "No worries if this is late",
    "Wait, is it my turn already?",
    "Actually, have a great weekend all",
    "Sorry, 2 minutes late",  # a number after the correcting word: Auction reads a line opening with one as a move
    "Oops, one more thing: thanks!",
)
# Corrections without the verb, each as "{rest}": the move corrected gives them its verb
VERBLESS = (
    "make it {rest}",
    "no wait, {rest}",
    "actually {rest}",
    "Change it to {rest}",
    "Actually, make that {rest}. Sorry!",
    "scratch that, {rest}",
    "sorry, I meant {rest}",
    "{rest} instead",
)


def spend_queens(engine, clock) -> int:
    """A Pure Skill game in round 2, everyone's queen spent and seat 0 the last to move."""
    game = engine.new_game("pure-skill", PLAYERS)
    for player in PLAYERS:
        play(engine, clock, player, "bid Q")
    play(engine, clock, PLAYERS[1], "bid 3")
    play(engine, clock, PLAYERS[2], "bid 3")
    return game


def test_a_correction_that_cannot_be_played_takes_back_the_move_above_and_makes_none(engine, clock):
    game = spend_queens(engine, clock)
    before = last_id(engine)
    play(engine, clock, PLAYERS[0], "bid K\nactually bid Q")
    assert counted(engine, game, 0) == ["bid Q"]  # round 1's only: the round waits for a move
    body = reply_body(engine, PLAYERS[0], before)
    assert 'Taken back by line 2 ("actually bid Q"), so bid K was not played.' in body
    assert "actually bid Q" in body.split("so bid K was not played.")[1]  # the correction's own refusal
    assert "You no longer hold the Queen" in body and "Moves you can make now: bid A" in body
    assert play(engine, clock, PLAYERS[0], "bid K").code == "move"  # the move is still the player's to make
    assert counted(engine, game, 0) == ["bid Q", "bid K"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("courtesy", COURTESIES)
def test_a_courtesy_opening_with_a_correcting_word_takes_nothing_back(engine, clock, kind, courtesy):
    game = engine.new_game(kind, PLAYERS)
    player, seat, legal = mover_and_moves(engine, game)
    before = last_id(engine)
    assert play(engine, clock, player, f"{legal[0]}\n{courtesy}").code in ("move", "replaced")
    assert counted(engine, game, seat) == [legal[0]]
    assert "Taken back" not in reply_body(engine, player, before)


@pytest.mark.parametrize("form", VERBLESS)
def test_a_correction_without_the_verb_plays_the_bid_it_names(engine, clock, pure, form):
    line = form.format(rest="6")
    before = last_id(engine)
    assert play(engine, clock, PLAYERS[0], f"bid 5\n{line}").code == "move"
    assert counted(engine, pure, 0) == ["bid 6"]
    body = reply_body(engine, PLAYERS[0], before)
    assert f'Taken back by line 2 ("{line}"), so bid 5 was not played.' in body
    assert f"> {line} Your bid for Round 1 of 13 is in: bid 6" in body  # the player's own line, and what it played


def test_a_correction_without_the_verb_read_only_with_doubt_takes_back_and_is_offered(engine, clock, pure):
    before = last_id(engine)
    play(engine, clock, PLAYERS[0], "bid 5\nmake that a 6")
    assert counted(engine, pure, 0) == []
    body = reply_body(engine, PLAYERS[0], before)
    assert 'Taken back by line 2 ("make that a 6"), so bid 5 was not played.' in body
    assert "Did you mean `bid 6`?" in body


def test_a_correction_without_the_verb_asked_as_a_question_is_offered_not_played(engine, clock, pure):
    before = last_id(engine)
    play(engine, clock, PLAYERS[0], "bid 5\nactually 6?")
    assert counted(engine, pure, 0) == []
    body = reply_body(engine, PLAYERS[0], before)
    assert 'Taken back by line 2 ("actually 6?"), so bid 5 was not played.' in body
    assert "That is a question, so nothing was played. To play bid 6" in body


def test_a_correction_without_the_verb_in_a_quote_is_never_read(engine, clock, pure):
    assert play(engine, clock, PLAYERS[0], "bid 5\n\nOn Monday, Bob wrote:\n> make it 6\n").code == "move"
    assert counted(engine, pure, 0) == ["bid 5"]


def _same_verb_pairs(legal: list[str]) -> list[tuple[str, str]]:
    """Two different legal moves with the same verb and something after it."""
    return [
        (first, second)
        for first in legal
        for second in legal
        if first != second and " " in second and first.split(" ", 1)[0] == second.split(" ", 1)[0]
    ]


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_games_legal_moves_corrected_without_the_verb(kind, data):
    """Two legal moves of one verb: the second written without its verb in a
    correction under the first, the second counts; the correction quoted,
    the first."""
    with tempfile.TemporaryDirectory() as root:
        clock = FakeClock()
        engine = fresh_engine(Path(root), clock, data.draw(st.sampled_from(SEEDS)))
        game = engine.new_game(kind, PLAYERS)
        for _ in range(data.draw(st.integers(0, 2))):  # a few states: rounds played at random
            table = engine.table(game)
            phase = table.rules.phase(table.state)
            if phase is None:
                break
            for seat in phase.movers:
                legal = [table.rules.move_text(m) for m in table.rules.legal_moves(table.state, seat)]
                play(engine, clock, PLAYERS[seat], data.draw(st.sampled_from(legal)), game=game)
                table = engine.table(game)
            clock.advance(hours=1)
            engine.tick()
        if engine.table(game).rules.phase(engine.table(game).state) is None:
            return
        player, seat, legal = mover_and_moves(engine, game)
        pairs = _same_verb_pairs(legal)
        if not pairs:
            return
        first, second = data.draw(st.sampled_from(pairs))
        rest = second.split(" ", 1)[1]
        form = data.draw(st.sampled_from(VERBLESS)).format(rest=rest)
        quoted = data.draw(st.booleans())
        body = f"{first}\n\nOn Monday, {player} wrote:\n> {form}\n" if quoted else f"{first}\n{form}"
        done = len(counted(engine, game, seat))
        play(engine, clock, player, body, game=game)
        assert counted(engine, game, seat)[done:] == [first if quoted else second], body


def test_a_move_after_a_short_settle_window_is_told_when_it_closed_to_the_second(engine, clock):
    engine.new_game("pure-skill", PLAYERS, settle=timedelta(seconds=20))
    clock.advance(seconds=7)  # (the window closes inside a minute)
    for player in PLAYERS:
        play(engine, clock, player, "bid 4")
    closed = clock() + timedelta(seconds=20)
    clock.advance(seconds=25)  # past the close, before the round is resolved
    before = last_id(engine)
    play(engine, clock, PLAYERS[0], "bid 5")
    body = reply_body(engine, PLAYERS[0], before)
    assert f"after Round 1 of 13 closed ({closed:%Y-%m-%d %H:%M:%S} UTC" in body, body
