"""The reading cache of Tables (referee/tables.py) is bounded, by games and
by phases in all, and what it serves is what a fresh read gives."""

from __future__ import annotations

import pytest
from conftest import PLAYERS, FakeClock, reply

import referee.tables
from referee.config import Config
from referee.engine import Engine
from referee.store import Store
from referee.tables import Table, Tables

GAMES = 6
ROUNDS = 3  # resolved in each game: each game's record has ROUNDS + 1 phases (the last open)


@pytest.fixture
def played(tmp_path) -> Engine:
    clock = FakeClock()
    engine = Engine(
        Store(tmp_path / "games.db"),
        Config(address="referee@example.org", secret_key=b"k"),
        clock,
    )
    for _ in range(GAMES):
        game = engine.new_game("pure-skill", PLAYERS)
        for round_ in range(1, ROUNDS + 1):
            for player in PLAYERS:
                outcome = engine.ingest(
                    reply(
                        engine,
                        player,
                        f"bid {14 - round_}",
                        game=game,
                        received=clock.now,
                    )
                )
                assert outcome.code == "move", outcome
    return engine


def phases_kept(tables: Tables) -> tuple[int, int]:
    """The phases the two caches hold: the last reads', the replays'."""
    return (
        sum(len(kept[2]) for kept in tables._tables.values()),
        sum(len(kept[1]) for kept in tables._replays.values()),
    )


def same(a: Table, b: Table) -> bool:
    return (
        a.state == b.state
        and a.phases == b.phases
        and a.counted == b.counted
        and [(s.number, s.moves, s.events) for s in a.replay.steps]
        == [(s.number, s.moves, s.events) for s in b.replay.steps]
    )


def test_the_cache_keeps_at_most_its_games(played, monkeypatch):
    monkeypatch.setattr(referee.tables, "_REPLAYS_KEPT", 4)
    monkeypatch.setattr(referee.tables, "_PHASES_KEPT", 10_000)
    tables = Tables(played.store)
    for _ in range(2):
        for game in range(1, GAMES + 1):
            table = tables.table(game)
            assert len(tables._tables) <= 4 and len(tables._replays) <= 4
            assert same(table, Tables(played.store).table(game))
    assert list(tables._tables) == [3, 4, 5, 6]  # the least recently read went first


def test_the_cache_keeps_at_most_its_phases_in_all(played, monkeypatch):
    monkeypatch.setattr(referee.tables, "_PHASES_KEPT", 10)  # two games of 4 phases (3 resolved), not three
    tables = Tables(played.store)
    for _ in range(2):
        for game in range(1, GAMES + 1):
            table = tables.table(game)
            assert phases_kept(tables)[0] <= 10 and phases_kept(tables)[1] <= 10
            assert same(table, Tables(played.store).table(game))
    assert list(tables._tables) == [5, 6]
    assert list(tables._replays) == [4, 5, 6]  # 3 resolved phases each


def test_a_game_longer_than_the_bound_is_still_kept_while_it_is_read(played, monkeypatch):
    monkeypatch.setattr(referee.tables, "_PHASES_KEPT", 2)
    tables = Tables(played.store)
    first = tables.table(1)
    assert list(tables._tables) == [1] and list(tables._replays) == [1]
    assert tables.table(1) is first  # the next read of the same record is served from the cache
    tables.table(2)
    assert list(tables._tables) == [2] and list(tables._replays) == [2]


def test_a_game_forgotten_and_moved_on_is_read_right(played, monkeypatch):
    """A game read, forgotten by the cache while others are read, then moved
    on: its next read replays it from the seed and agrees with a fresh one."""
    monkeypatch.setattr(referee.tables, "_PHASES_KEPT", 5)
    tables = played.tables
    tables.table(1)
    for game in range(2, GAMES + 1):
        tables.table(game)
    assert 1 not in tables._tables and 1 not in tables._replays
    for player in PLAYERS:
        played.ingest(
            reply(
                played,
                player,
                f"bid {14 - ROUNDS - 1}",
                game=1,
                received=played.clock(),
            )
        )
    table = tables.table(1)
    assert len(table.replay.steps) == ROUNDS + 1
    assert same(table, Tables(played.store).table(1))
