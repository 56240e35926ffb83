"""The serve log (issue 35, item 6): seats numbered from 1 as every mail numbers
them, and without aioimaplib's INFO chatter."""

from __future__ import annotations

import logging

from conftest import PLAYERS
from conftest import send as play
from test_cli import cfg as _cfg
from test_cli import run as _run

from referee.engine import Engine

cfg, run = _cfg, _run  # the fixtures
ALICE, BOB, CAROL = PLAYERS


def test_the_log_numbers_seats_from_one(engine: Engine, clock, caplog):
    caplog.set_level(logging.INFO, logger="referee")
    engine.new_game("pure-skill", PLAYERS)
    play(engine, clock, ALICE, "bid 4")
    play(engine, clock, CAROL, "bid 6")
    engine.resign(1, BOB)
    accepted = [r.getMessage() for r in caplog.records if "move accepted" in r.getMessage()]
    assert [line.rsplit(" ", 1)[1] for line in accepted] == ["1", "3"]
    assert "game 1: seat 2 is now a bot" in caplog.messages


def test_aioimaplib_says_only_what_goes_wrong_unless_asked(run):
    imap = logging.getLogger("aioimaplib")
    try:
        for verbose, level in (([], logging.WARNING), (["-v"], logging.WARNING), (["-v", "-v"], logging.DEBUG)):
            imap.setLevel(logging.NOTSET)
            run(*verbose, "status")
            assert imap.getEffectiveLevel() == level
    finally:
        imap.setLevel(logging.NOTSET)
