"""Review of issue 34 (games for a club) around the record: schema 6's
migration and its ``results``, ``verify`` of games begun by sign-up, and
backup and restore of what the new features keep."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import FakeClock

from referee.engine import Engine
from referee.site.public import game_record
from referee.standings import _replayed, standings
from referee.store import Store
from referee.tables import Tables

SCHEMAS = sorted((Path(__file__).parents[1] / "fixtures" / "schemas").glob("schema-*.sql"))
NEW_COLUMNS = {
    "games": {"press", "announce_to", "awards"},
    "signups": {"start"},
    "watchers": {"game_id", "address", "notify", "since", "token"},
    "reader_told": {"game_id", "address", "through", "digest_at"},
    "press": {"id", "game_id", "seat", "at", "recipients", "signed"},
    "press_tokens": {"token", "game_id", "seat", "to_seat", "signed", "press_id"},
    "results": {"game_id", "seat", "score", "place", "won"},
}


def _strip(rows: list[dict]) -> list[dict]:
    return sorted(({k: row[k] for k in ("game_id", "seat", "score", "place", "won")} for row in rows), key=str)


@pytest.mark.parametrize("dump", SCHEMAS, ids=[p.stem for p in SCHEMAS])
def test_every_fixture_gains_schema_6_and_its_finished_games_their_results_by_replay(dump, config, clock):
    with sqlite3.connect(config.database) as db:
        db.executescript(dump.read_text())
    engine = Engine(Store(config.database), config, clock)
    with sqlite3.connect(config.database) as db:
        for table, columns in NEW_COLUMNS.items():
            have = {row[1] for row in db.execute(f"PRAGMA table_info([{table}])")}
            assert columns <= have, (table, columns - have)
    finished = [g["id"] for g in engine.store.games("finished")]
    assert finished
    stored = engine.store.results()
    replayed = [row for game in finished for row in _replayed(engine.table(game))]
    assert stored and _strip(stored) == _strip(replayed)
    for game in finished:  # the winner the record names is the one results name
        record = game_record(engine.table(game))
        won = [row for row in stored if row["game_id"] == game and row["won"]]
        names = {p["seat"]: p["name"] for p in record["players"]}
        assert [names[row["seat"]] for row in won] == ([record["winner"]] if record["winner"] else [])
    assert engine.store.unscored() == ([], 0)


def _finished_game(engine: Engine, clock: FakeClock, kind: str = "pure-skill") -> int:
    """A game of ``kind`` played to its end by three bots."""
    game = engine.new_game(kind, [], bots=3)
    for _ in range(200):
        if engine.store.game(game)["state"] == "finished":
            return game
        clock.advance(days=2)
        engine.tick()
    raise AssertionError("the game did not end")


@pytest.mark.parametrize("how", ["kind no longer installed", "record that no longer replays"])
def test_an_old_finished_game_that_cannot_be_replayed_does_not_stop_the_referee(how, config, clock, caplog):
    """A games.db whose game finished before schema 6 kept results: the
    rooms fill its results by replay when they are built.  A game that
    cannot be replayed (its kind's plugin removed, its record damaged) is
    left out, said in the log; the referee still starts, and its other
    games, the site's standings and STANDINGS go on."""
    engine = Engine(Store(config.database), config, clock)
    broken, good = _finished_game(engine, clock), _finished_game(engine, clock)
    running = engine.new_game("pure-skill", ["ann@example.org", "ben@example.org"], bots=1)
    with sqlite3.connect(config.database) as db:
        db.execute("delete from results")
        if how == "kind no longer installed":
            db.execute("update games set kind = 'gone' where id = ?", [broken])
        else:
            db.execute("delete from moves where game_id = ? and phase = 1 and seat = 0", [broken])
    engine.store.db.conn.close()
    engine = Engine(Store(config.database), config, clock)  # raised: KeyError / ReplayError
    assert {row["game_id"] for row in engine.store.results()} == {good}
    assert f"game {broken}" in caplog.text
    assert standings(engine.store, Tables(engine.store)).games == 1
    assert engine.store.game(running)["state"] == "running"
    engine.tick()
