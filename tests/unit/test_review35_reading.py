"""Review of issue 35's reading (corrections, courtesies, "Moves you can make now"), through ``Engine.ingest``."""

from __future__ import annotations

import textwrap

import pytest
from conftest import PLAYERS, mails
from conftest import send as play

KINDS = ("pure-skill", "bid", "ice", "priority", "bluff")
MOVES_NOW = "Moves you can make now"


def mover(engine, game: int) -> tuple[str, int]:
    table = engine.table(game)
    seat = table.rules.phase(table.state).movers[0]
    return PLAYERS[seat], seat


def counted(engine, game: int, seat: int) -> list[str]:
    return [row["move"] for row in engine.store.moves(game) if row["seat"] == seat]


def rewrapped(body: str, width: int = 64) -> str:
    """The mail pasted back unmarked by a client that wraps long lines again, its list of moves
    wrapped so that the last move stands alone on a line ("pawn.", "pass.", "bid black 4.")."""
    out: list[str] = []
    for line in body.splitlines():
        if line.startswith(MOVES_NOW):
            head, _, last = line.rpartition(", ")
            out += [*textwrap.wrap(head + ",", width), last]
        else:
            out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("kind", KINDS)
def test_a_pasted_prompt_rewrapped_plays_no_move_from_its_list(engine, clock, kind):
    game = engine.new_game(kind, PLAYERS)
    player, seat = mover(engine, game)
    prompt = [m for m in mails(engine) if player in m["recipients"]][-1]["body"]
    assert MOVES_NOW in prompt
    play(engine, clock, player, "What does this mean?\n\n" + rewrapped(prompt))
    assert counted(engine, game, seat) == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_move_above_a_pasted_prompt_rewrapped_is_played(engine, clock, kind):
    game = engine.new_game(kind, PLAYERS)
    player, seat = mover(engine, game)
    table = engine.table(game)
    first = table.rules.move_text(table.rules.legal_moves(table.state, seat)[0])
    prompt = [m for m in mails(engine) if player in m["recipients"]][-1]["body"]
    play(engine, clock, player, first + "\n\n" + rewrapped(prompt))
    assert counted(engine, game, seat) == [first]


@pytest.mark.parametrize("second", ["actually bid Q", "Change my bid to Q", "scratch that, bid Q", "bid Q instead"])
def test_a_correction_to_a_spent_card_does_not_play_the_card_taken_back(engine, clock, second):
    game = engine.new_game("pure-skill", PLAYERS)
    for player in PLAYERS:
        play(engine, clock, player, "bid Q")  # round 1: everyone's queen is spent
    play(engine, clock, PLAYERS[1], "bid 3")
    play(engine, clock, PLAYERS[2], "bid 3")
    play(engine, clock, PLAYERS[0], "bid K\n" + second)  # the last mover takes back bid K
    assert counted(engine, game, 0) == ["bid Q"]
