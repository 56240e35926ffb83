"""Review of issue 34 played as a club of people does: what each person
reads, and what they can do with what they read."""

from __future__ import annotations

import pytest
from conftest import PLAYERS, Mailbox, send

from referee.engine import Engine

ALICE, BOB, CAROL = PLAYERS


@pytest.fixture
def box(engine: Engine) -> Mailbox:
    return Mailbox(engine)


def said(box: Mailbox, to: str) -> str:
    return " ".join(box.to(to)[-1]["body"].split())


def test_tell_names_a_player_as_the_writer_s_own_game_mail_shows_them_by_address(engine, clock, box):
    engine.new_game("bid", PLAYERS)
    assert f"2. {BOB}" in box.to(ALICE)[0]["body"]  # how alice's start mail names bob
    assert send(engine, clock, ALICE, f"TELL {BOB} Shall we share the Suns?").code == "done"
    assert send(engine, clock, ALICE, f"TELL <{CAROL.upper()}> hello").code == "done"
    [to_bob] = [m for m in box.to(BOB) if "writes to you" in m["subject"]]
    assert "Shall we share the Suns?" in to_bob["body"] and ALICE not in to_bob["body"]
    assert [m for m in box.to(CAROL) if "writes to you" in m["subject"]]
    assert send(engine, clock, ALICE, f"TELL {ALICE} hi").code == "refused"
    assert "That is your own seat" in said(box, ALICE)
