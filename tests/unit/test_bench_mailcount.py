"""bench/mailcount.py counts what the outbox holds: one small game of a kind
played through it, and its table printed (issue 33, item 4)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from referee.store import Notify

BENCHES = Path(__file__).resolve().parents[2] / "bench"


def load_bench(name: str = "mailcount"):
    """A bench (``bench/<name>.py``) as a module (bench/ is no package, nor
    on the path: its file names are common words)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCHES / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


mailcount = load_bench()


@pytest.mark.parametrize(("kind", "people", "bots"), [("pure-skill", 3, 0), ("ice", 2, 1)])
def test_a_whole_game_counts_every_mail_each_player_got(kind, people, bots):
    game = mailcount.Game(kind, 0, Notify.EVERY, people, bots)
    played = game.play()
    table = game.table
    assert table.row["state"] == "finished"
    addresses = [f"player{n}@example.org" for n in range(people)]
    assert [seat.address for seat in played.seats] == addresses
    # and the club's list the bench has follow every game, at the players' level
    assert set(played.outbox) == {*addresses, mailcount.LIST}, "mail to someone who is no player (or none to one)"
    assert played.list_mails == played.outbox[mailcount.LIST] == len(table.phases) + 2  # the start, each phase, the end
    rows = game.engine.store.outbox(None)
    for seat in played.seats:
        assert seat.mails == sum(row["recipients"] == [seat.address] for row in rows)
        assert sum(seat.by_kind.values()) == seat.mails, "a mail the tally by template missed, or counted twice"
        assert seat.by_kind["start"] == seat.by_kind["final"] == 1
        assert seat.by_kind["prompt"] >= 1 and seat.by_kind["round"] >= 1
        # At EVERY each mail a player sends is answered: a move by its receipt, NOTIFY by its answer.
        assert seat.by_kind["receipt"] + seat.by_kind["answer"] == seat.sent > 0
        assert seat.own_moves == sum(seat.seat in row["movers"] for row in table.phases) > 0
        assert table.seats[seat.seat]["notify"] == Notify.EVERY.value, "the bench did not set the level"
    # Rounds and auctions are numbered from 1: the last phase's is how many there were.
    assert played.rounds == int(re.match(r"\D*(\d+)", table.phases[-1]["label"])[1]) > 1
    assert played.set_by == ("NOTIFY mail" if mailcount.notify_command() else "store")


def test_the_same_seed_plays_the_same_game_at_every_level():
    """So the levels' figures compare like with like."""
    first = mailcount.Game("pure-skill", 1, Notify.EVERY, 3, 0)
    second = mailcount.Game("pure-skill", 1, Notify.DIGEST, 3, 0)
    first.play()
    second.play()
    moves = [
        [(m["seat"], m["move"], m["source"]) for m in game.engine.store.moves(game.game)] for game in (first, second)
    ]
    assert moves[0] == moves[1]
    assert {source for _, _, source in moves[0]} >= {"mail", "random"}  # a move by mail, and one the deadline made


def test_the_table_shows_the_bound_at_turns(capsys, monkeypatch):
    monkeypatch.setattr(
        sys, "argv", ["mailcount.py", "--seeds", "1", "--kinds", "pure-skill", "--levels", "turns", "--detail"]
    )
    assert mailcount.main() == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("pure-skill"))
    assert row.split()[:3] == ["pure-skill", "3+0", "turns"]
    assert "/3" in row  # how many of the three players stayed within the bound
    assert "start 1" in out and "final 1" in out
