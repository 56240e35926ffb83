"""Greetings, thanks and sign-offs beside a move (issue 35, item 3): no answer
of their own, while a line that is really not understood still gets one."""

from __future__ import annotations

import pytest
from conftest import PLAYERS, last_id, mails
from conftest import send as play
from test_commands import answers_in

ALICE = PLAYERS[0]
LEFT_ALONE = "Not done: not a command or a move, so I left it alone."

# (the lines around "bid 7", as people write them)
AROUND = [
    ("Hi ref,", "Cheers,\nCarol"),
    ("Hello referee!", "Thanks!"),
    ("Dear Referee,", "Best,\nAlice Smith"),
    ("Good morning all", "Kind regards,\nAlice"),
    ("Hey there", "Regards"),
    ("Hi Bob,", "Thank you very much!\nAl B."),
    ("Hola", "Gracias, Alice"),
    ("Hallo Bob", "Viele Grüße\nAlice"),
    ("Bonjour", "Merci beaucoup"),
    ("", "Thanks, good luck everyone!"),
    ("Hi,", "Cheers 😊"),
    ("", "Best regards,\n\nAlice\n\nSent from my iPhone"),
]


def reply_to_move(engine, clock, body: str) -> list[tuple[str, str]]:
    before = last_id(engine)
    play(engine, clock, ALICE, body)
    (mail,) = mails(engine, after=before)
    return answers_in(mail["body"])


@pytest.mark.parametrize(("greeting", "sign_off"), AROUND)
def test_courtesies_around_a_move_get_no_answer_of_their_own(engine, clock, greeting, sign_off):
    game = engine.new_game("pure-skill", PLAYERS)
    pairs = reply_to_move(engine, clock, f"{greeting}\n\nbid 7\n\n{sign_off}")
    assert [line for line, _ in pairs] == ["bid 7"]
    assert "Your bid for Round 1 of 13 is in: bid 7." in pairs[0][1]
    assert [m["move"] for m in engine.store.moves(game)] == ["bid 7"]


def test_a_line_not_understood_beside_courtesies_is_still_answered(engine, clock):
    game = engine.new_game("pure-skill", PLAYERS)
    pairs = reply_to_move(engine, clock, "Hi ref,\nfrobnicate the dice\nbid 7\nThanks, can you explain\nCheers,\nCarol")
    assert [line for line, _ in pairs] == ["frobnicate the dice", "bid 7", "Thanks, can you explain"]
    assert pairs[0][1].startswith(LEFT_ALONE) and pairs[2][1].startswith(LEFT_ALONE)
    assert [m["move"] for m in engine.store.moves(game)] == ["bid 7"]


def test_a_name_is_a_signature_only_under_a_sign_off_at_the_end(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    # "Frobnicate" after a greeting is no signature; a capitalised word after "Cheers" closing the mail is
    pairs = reply_to_move(engine, clock, "Hi,\nFrobnicate\nbid 7\nCheers\nCarol")
    assert [line for line, _ in pairs] == ["Frobnicate", "bid 7"]
    assert pairs[0][1].startswith(LEFT_ALONE)


def test_courtesies_beside_a_command_get_no_answer_of_their_own(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    pairs = reply_to_move(engine, clock, "Hello,\nstatus\nThanks!")
    assert [line for line, _ in pairs] == ["status"]


def test_a_mail_of_courtesies_alone_is_still_told_the_moves(engine, clock):
    game = engine.new_game("pure-skill", PLAYERS)
    pairs = reply_to_move(engine, clock, "Hi ref,\nThanks!\nCarol")
    assert [line for line, _ in pairs][:2] == ["Hi ref,", "Thanks!"]
    assert "Moves you can make now: bid A, bid 2," in pairs[0][1]
    assert engine.store.moves(game) == []
