"""Corrections in one mail (issue 35, item 1), through ``Engine.ingest``.

A later line that says it corrects a move above it ("actually bid 6", "bid 6
instead", "change my bid to 6") makes the corrected move the one that
counts, and the reply names the line taken back; two different moves with no
correction between them make neither; a correction in quoted text is never
read.  Every game reads corrections through the shared grammar, so the
property test runs over every game's legal moves.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock, Seeds, last_id, mails
from conftest import send as play
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.config import Config
from referee.engine import Engine
from referee.store import Store

KINDS = ("pure-skill", "bid", "ice", "priority", "bluff")
SEEDS = tuple(bytes([n]) * 64 for n in range(1, 6))

# Each form as "{move}" written in it: the lead-ins and the tails the issue names, and their kin
CORRECTIONS = (
    "no wait, make it {move}",
    "No wait, {move}",
    "actually {move}",
    "Actually, {move}",
    "Actually, make that {move}. Sorry!",
    "{move} instead",
    "{move} instead of that",
    "Change my move to {move}",
    "change it to {move}",
    "make that {move}",
    "Make it {move}",
    "scratch that, {move}",
    "Scratch that - {move}",
    "sorry, I meant {move}",
    "Sorry, I meant to say {move}",
    "Correction: {move}",
    "oops, {move}",
    "No, {move}",
    "On second thought, {move}",
    "wait, {move}",
    "my mistake, {move}",
    "I changed my mind, {move}",
)


def fresh_engine(root: Path, clock: FakeClock, seed: bytes) -> Engine:
    config = Config(
        address="referee@example.org",
        database=root / "games.db",
        reminder=None,
        outage_gap=None,
        replies_per_hour=10**6,
    )
    return Engine(Store(config.database), config, clock, Seeds(seed))


def mover_and_moves(engine: Engine, game: int) -> tuple[str, int, list[str]]:
    """The first seat to move in the open phase: its address, seat, and legal moves as text."""
    table = engine.table(game)
    seat = table.rules.phase(table.state).movers[0]
    rules = table.rules
    return PLAYERS[seat], seat, [rules.move_text(m) for m in rules.legal_moves(table.state, seat)]


def counted(engine: Engine, game: int, seat: int) -> list[str]:
    return [row["move"] for row in engine.store.moves(game) if row["seat"] == seat]


def reply_body(engine: Engine, to: str, after: int) -> str:
    (mail,) = [m for m in mails(engine, after=after) if m["recipients"] == [to] and m["subject"].startswith("Re:")]
    return " ".join(mail["body"].split())


@pytest.fixture
def pure(engine):
    engine.new_game("pure-skill", PLAYERS)
    return 1


@pytest.mark.parametrize("form", CORRECTIONS)
def test_a_correction_in_pure_skill_plays_the_corrected_bid(engine, clock, pure, form):
    before = last_id(engine)
    outcome = play(engine, clock, PLAYERS[0], "bid 5\n" + form.format(move="bid 6"))
    assert outcome.code == "move"
    assert counted(engine, pure, 0) == ["bid 6"]
    body = reply_body(engine, PLAYERS[0], before)
    assert 'Taken back by line 2 ("' in body and "so bid 5 was not played" in body
    assert "is in: bid 6" in body


@pytest.mark.parametrize(
    "body",
    [
        "{first}\nno wait, make it {second}",
        "{first}\nactually {second}",
        "{first}\n{second} instead",
        "{first}\nChange my bid to {tiles}",
        "{first}\nscratch that, {second}",
        "Hi,\n{first}\nsorry, I meant {second}\nCheers",
        "{first}\ncorrection: {second}",
    ],
)
def test_the_issues_corrections_in_bid_play_the_corrected_bid(engine, clock, body):
    engine.new_game("bid", PLAYERS)  # an auction of one tile or two: bids of its size
    player, seat, legal = mover_and_moves(engine, 1)
    first, second = [move for move in legal if move.startswith("bid ")][:2]
    play(engine, clock, player, body.format(first=first, second=second, tiles=second.removeprefix("bid ")))
    assert counted(engine, 1, seat) == [second]


def test_a_correction_in_a_turn_game_plays_the_corrected_card_and_names_the_line_taken_back(engine, clock):
    engine.new_game("priority", PLAYERS)
    player, seat, legal = mover_and_moves(engine, 1)
    first, second = legal[0], legal[-1]
    before = last_id(engine)
    assert play(engine, clock, player, f"{first}\nno wait, make it {second}").code == "move"
    assert counted(engine, 1, seat) == [second]  # moves in turn are final: the one taken back never was
    assert f'Taken back by line 2 ("no wait, make it {second}"), so {first} was not played.' in reply_body(
        engine, player, before
    )


def test_two_moves_without_a_correction_still_make_neither(engine, clock, pure):
    assert play(engine, clock, PLAYERS[0], "bid 5\nbid 6").code == "refused"
    assert counted(engine, pure, 0) == []


def test_a_correction_takes_back_every_move_above_it_but_a_move_below_it_is_ambiguous(engine, clock, pure):
    assert play(engine, clock, PLAYERS[0], "bid 5\nbid 7\nactually bid 6").code == "move"
    assert counted(engine, pure, 0) == ["bid 6"]
    assert play(engine, clock, PLAYERS[1], "bid 5\nactually bid 6\nbid 7").code == "refused"
    assert counted(engine, pure, 1) == []


def test_a_correction_to_the_same_move_counts_once(engine, clock, pure):
    assert play(engine, clock, PLAYERS[0], "bid 5\nactually bid 5").code == "move"
    assert counted(engine, pure, 0) == ["bid 5"]


def test_a_correction_in_quoted_text_is_never_read(engine, clock, pure):
    body = "bid 5\n\nOn Mon, Bob wrote:\n> bid 4\n> actually bid 6\n"
    assert play(engine, clock, PLAYERS[0], body).code == "move"
    assert counted(engine, pure, 0) == ["bid 5"]


def test_a_correcting_word_alone_is_no_correction(engine, clock, pure):
    assert play(engine, clock, PLAYERS[0], "bid 5\nSorry for the late reply").code == "move"
    assert counted(engine, pure, 0) == ["bid 5"]  # (a correction on the move's own line: test_reading35_sameline)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_games_legal_moves_corrected_plain_and_quoted(kind, data):
    """Two different legal moves of the seat to move: corrected, the second
    counts; plain, neither; the correction quoted under the first, the first."""
    with tempfile.TemporaryDirectory() as root:
        clock = FakeClock()
        seed = data.draw(st.sampled_from(SEEDS))  # the game's seed drawn as the rest, so a failure replays
        engine = fresh_engine(Path(root), clock, seed)
        game = engine.new_game(kind, PLAYERS)
        player, seat, legal = mover_and_moves(engine, game)
        first, second = data.draw(st.lists(st.sampled_from(legal), min_size=2, max_size=2, unique=True))
        shape = data.draw(st.sampled_from(["corrected", "plain", "quoted"]))
        form = data.draw(st.sampled_from(CORRECTIONS)).format(move=second)
        body = {
            "corrected": f"{first}\n{form}",
            "plain": f"{first}\n{second}",
            "quoted": f"{first}\n\nOn Monday, {player} wrote:\n> {form}\n",
        }[shape]
        play(engine, clock, player, body, game=game)
        expected = {"corrected": [second], "plain": [], "quoted": [first]}[shape]
        assert counted(engine, game, seat) == expected, body
