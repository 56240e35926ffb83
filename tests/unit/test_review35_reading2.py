"""Review of issue 35's reading, second pass: the seams of corrections across lines and of courtesies, through
``Engine.ingest``.

A correction without its verb that the game cannot play ("make it Q", the queen spent; "make it 2" under
"bid purple 1", which needs a colour; "make it blue" under "play 1 on red") still asks for another move: it takes
the move above it back, as "actually bid Q" does, and the mail makes none, where the move taken back was played
(final, in a game of turns).  A name signed under a sign-off that happens to be a card ("Saludos, / Jack") is a
signature, not a move to offer.
"""

from __future__ import annotations

import pytest
from conftest import PLAYERS, last_id, mails
from conftest import send as play
from test_reading35_corrections import counted, mover_and_moves, reply_body
from test_reading35_leftovers import spend_queens


@pytest.mark.parametrize("second", ["make it Q", "no wait, Q", "Actually, make that Q. Sorry!", "Q instead"])
def test_a_correction_without_the_verb_to_a_spent_card_does_not_play_the_card_taken_back(engine, clock, second):
    game = spend_queens(engine, clock)  # seat 0 the last to move: its move resolves the round
    before = last_id(engine)
    play(engine, clock, PLAYERS[0], "bid K\n" + second)
    assert counted(engine, game, 0) == ["bid Q"]  # round 1's only: round 2 waits for a move
    body = reply_body(engine, PLAYERS[0], before)
    assert f'Taken back by line 2 ("{second}"), so bid K was not played.' in body
    assert "You no longer hold the Queen" in body


def a_word_changed(kind: str, legal: list[str]) -> tuple[str, str]:
    """The first legal move, and one word of another legal move that differs from it: "bid purple 1" and "2",
    "play 1 on red" and "blue"."""
    first = legal[0].split()
    for move in legal[1:]:
        words = move.split()
        changed = [at for at, (was, now) in enumerate(zip(first, words)) if was != now]
        if len(words) == len(first) and len(changed) == 1 and changed[0] != (1 if kind == "priority" else 2):
            return legal[0], words[changed[0]]
    raise AssertionError(legal)


@pytest.mark.parametrize("kind", ["bluff", "priority"])
@pytest.mark.parametrize("form", ["make it {word}", "actually {word}", "no wait, {word}", "{word} instead"])
def test_a_correction_of_one_word_of_a_turns_move_takes_it_back(engine, clock, kind, form):
    game = engine.new_game(kind, PLAYERS)
    player, seat, legal = mover_and_moves(engine, game)
    first, word = a_word_changed(kind, legal)
    second = form.format(word=word)
    before = last_id(engine)
    play(engine, clock, player, f"{first}\n{second}")
    assert counted(engine, game, seat) == []  # moves in turn are final: the move taken back must not be one
    assert f'Taken back by line 2 ("{second}"), so {first} was not played.' in reply_body(engine, player, before)


@pytest.mark.parametrize("kind", ["pure-skill", "bluff", "priority"])
@pytest.mark.parametrize(
    "line", ["Wait, I", "sorry, 1 more thing", "Make it count!", "Sorry x", "Actually, 2 things", "I mean it"]
)
def test_a_line_of_a_correcting_word_and_a_number_or_a_letter_takes_nothing_back(engine, clock, kind, line):
    game = engine.new_game(kind, PLAYERS)
    player, seat, legal = mover_and_moves(engine, game)
    before = last_id(engine)
    play(engine, clock, player, f"{legal[0]}\n{line}")
    assert counted(engine, game, seat) == [legal[0]]
    assert "Taken back" not in reply_body(engine, player, before)


@pytest.mark.parametrize(
    ("kind", "signature"),
    [
        ("pure-skill", "Saludos,\nJack"),
        ("pure-skill", "Thanks!\nK"),
        ("pure-skill", "Love,\nQ"),
        ("bid", "Cheers,\nAce"),
    ],
)
def test_a_name_signed_under_a_sign_off_that_is_also_a_card_is_offered_no_move(engine, clock, kind, signature):
    game = engine.new_game(kind, PLAYERS)
    player, seat, legal = mover_and_moves(engine, game)
    move = next(move for move in legal if move.startswith("bid "))
    before = last_id(engine)
    assert play(engine, clock, player, f"{move}\n\n{signature}").code == "move"
    assert counted(engine, game, seat) == [move]
    body = reply_body(engine, player, before)
    assert "Did you mean" not in body and "neither a command nor a move" not in body


def test_a_card_alone_under_a_move_is_still_offered(engine, clock):
    game = engine.new_game("pure-skill", PLAYERS)
    before = last_id(engine)
    play(engine, clock, PLAYERS[0], "bid 5\nK")
    assert counted(engine, game, 0) == ["bid 5"]
    assert "Did you mean `bid K`?" in reply_body(engine, PLAYERS[0], before)


@pytest.mark.parametrize("second", ["Actually 6, not 5", "bid 6, not 5", "No wait: bid 6, not the 5"])
def test_a_correction_that_names_the_move_it_takes_back_after_not_plays_the_new_one(engine, clock, second):
    game = spend_queens(engine, clock)  # seat 0 the last to move: its move resolves the round
    before = last_id(engine)
    play(engine, clock, PLAYERS[0], "bid 5\n" + second)
    assert counted(engine, game, 0) == ["bid Q", "bid 6"]
    told = " ".join(" ".join(mail["body"].split()) for mail in mails(engine, PLAYERS[0], before))  # with the round's
    assert f'Taken back by line 2 ("{second}"), so bid 5 was not played.' in told


@pytest.mark.parametrize("second", ["7, not sure", "Thanks, not long now", "2 is not enough"])
def test_a_not_that_takes_nothing_back_leaves_the_move(engine, clock, second):
    game = engine.new_game("pure-skill", PLAYERS)
    before = last_id(engine)
    play(engine, clock, PLAYERS[0], "bid 5\n" + second)
    assert counted(engine, game, 0) == ["bid 5"]
    assert "Taken back" not in reply_body(engine, PLAYERS[0], before)


@pytest.mark.parametrize("second", ["P.S. make it 6", "PS: actually bid 6", "PS - no wait, 6", "p.s. bid 6 instead"])
def test_a_correction_in_a_postscript_plays_the_corrected_bid(engine, clock, second):
    game = engine.new_game("pure-skill", PLAYERS)
    before = last_id(engine)
    assert play(engine, clock, PLAYERS[0], "bid 5\n" + second).code == "move"
    assert counted(engine, game, 0) == ["bid 6"]
    assert f'Taken back by line 2 ("{second}"), so bid 5 was not played.' in reply_body(engine, PLAYERS[0], before)


def test_a_postscript_of_thanks_takes_nothing_back(engine, clock):
    game = engine.new_game("pure-skill", PLAYERS)
    play(engine, clock, PLAYERS[0], "bid 5\nPS: thanks for running this")
    assert counted(engine, game, 0) == ["bid 5"]


@pytest.mark.parametrize(
    ("kind", "greeting", "sign_off"),
    [
        ("bluff", "Hi all,", "Keep well,\nAnn"),  # "keep" is a move of Bluff's rerolls
        ("bluff", "Hello,", "Keep safe!\nAnn"),
        ("ice", "Moin moin,", "Bis dann\nAnn"),
        ("bid", "Hej hej!", "Mvh\nAnn"),
        ("priority", "Hej!", "Med vänliga hälsningar,\nAnn"),
    ],
)
def test_more_courtesies_around_a_move_get_no_answer_of_their_own(engine, clock, kind, greeting, sign_off):
    game = engine.new_game(kind, PLAYERS)
    player, seat, legal = mover_and_moves(engine, game)
    before = last_id(engine)
    play(engine, clock, player, f"{greeting}\n{legal[0]}\n\n{sign_off}")
    assert counted(engine, game, seat) == [legal[0]]
    assert "Not done" not in reply_body(engine, player, before)
