"""Greetings, thanks and sign-offs in other languages beside a move (issue 35, item 3): no answer of their own,
and the name signed under them none either; while no move and no command is ever taken for a courtesy."""

from __future__ import annotations

import pytest
from conftest import PLAYERS
from hypothesis import given
from hypothesis import strategies as st
from test_reading import PROPERTY, positions
from test_small35_pleasantries import LEFT_ALONE, reply_to_move

from referee.desk import COMMANDS
from referee.rules import reading

# (the lines around "bid 7", as people write them in each language)
AROUND = [
    ("Bonjour,", "Merci et bonne journée,\nAlice"),  # fr
    ("Salut à tous", "Cordialement\nAlice Martin"),
    ("Hola,", "¡Gracias!\nCarol"),  # es
    ("Buenos días", "Un saludo,\nCarol"),
    ("Hoi,", "Groetjes,\nAlice"),  # nl
    ("Beste referee,", "Met vriendelijke groet,\nAlice"),
    ("Guten Morgen!", "LG Alice"),  # de
    ("Liebe Alle,", "Mit freundlichen Grüßen\nAlice"),
    ("Ciao a tutti", "Grazie mille!\nAlice"),  # it
    ("Buongiorno", "Cordiali saluti,\nAlice"),
    ("Olá,", "Obrigada!\nAlice"),  # pt
    ("Bom dia", "Abraços,\nAlice"),
]


@pytest.mark.parametrize(("greeting", "sign_off"), AROUND)
def test_courtesies_in_other_languages_around_a_move_get_no_answer_of_their_own(engine, clock, greeting, sign_off):
    game = engine.new_game("pure-skill", PLAYERS)
    pairs = reply_to_move(engine, clock, f"{greeting}\n\nbid 7\n\n{sign_off}")
    assert [line for line, _ in pairs] == ["bid 7"]
    assert "Your bid for Round 1 of 13 is in: bid 7." in pairs[0][1]
    assert [m["move"] for m in engine.store.moves(game)] == ["bid 7"]


def test_a_word_that_is_no_courtesy_beside_foreign_courtesies_is_still_answered(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    pairs = reply_to_move(engine, clock, "Hoi,\nfrobnicate de dobbelstenen\nbid 7\nGroetjes,\nAlice")
    assert [line for line, _ in pairs] == ["frobnicate de dobbelstenen", "bid 7"]
    assert pairs[0][1].startswith(LEFT_ALONE)


def test_a_name_under_a_greeting_is_no_signature(engine, clock):
    """Only a sign-off signs: a capitalised word closing a mail under "Guten Morgen!" is still answered."""
    engine.new_game("pure-skill", PLAYERS)
    pairs = reply_to_move(engine, clock, "bid 7\nGuten Morgen!\nFrobnicate")
    assert [line for line, _ in pairs] == ["bid 7", "Frobnicate"]
    assert pairs[1][1].startswith(LEFT_ALONE)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("LG Alice", reading.Courtesy.SIGN_OFF),
        ("Liebe Grüße", reading.Courtesy.SIGN_OFF),
        ("Liebe Alice,", reading.Courtesy.GREETING),
        ("Guten Morgen!", reading.Courtesy.GREETING),
        ("Dank je wel", reading.Courtesy.SIGN_OFF),
        ("¡Gracias!", reading.Courtesy.SIGN_OFF),
        ("Thanks, can you explain", None),
        ("Bonjour, je ne comprends pas", None),
    ],
)
def test_what_a_line_of_courtesy_does(line, kind):
    assert reading.courtesy(line) is kind


# A move or a command dressed as people type them
DRESSINGS = [str, str.capitalize, str.upper, str.lower, lambda text: f"{text}!", lambda text: f"{text},"]


@PROPERTY
@given(st.data(), positions())
def test_no_legal_move_is_a_courtesy(data, position):
    game, _, _, move = position
    text = game.move_text(move)
    argument = text.partition(" ")[2]  # the verb left out: "K", "M-yellow", "1 on red"
    said = data.draw(st.sampled_from([text, argument] if argument else [text]))
    assert reading.courtesy(data.draw(st.sampled_from(DRESSINGS))(said)) is None


@pytest.mark.parametrize("word", sorted(word for entry in COMMANDS.entries for word in entry.words))
def test_no_command_is_a_courtesy(word):
    for dressing in DRESSINGS:
        for line in (word, f"{word} please", f"{word} 7", f"{word} pure-skill"):
            assert reading.courtesy(dressing(line)) is None, dressing(line)
