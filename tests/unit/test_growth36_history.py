"""No work that grows with history (issue 36, item 4): a tick with nothing
due reads no phase, the outbox's old mail is read once, a sender's last
mails are found by index, and no start checks every page of games.db
(`referee check` and an upgrade do).  Counts and query plans, never times."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS
from test_sql36_batch import traced
from test_storage import damage_page

from referee import store as store_module
from referee.cli import main
from referee.engine import Engine
from referee.store import SCHEMA_VERSION, StorageFault, Store

OLD = "2026-01-01T00:00:00Z"


def plans_of(store: Store, work: Callable[[], object]) -> list[str]:
    """The query plan of every statement ``work`` runs, one line each step."""
    with traced(store) as statements:
        work()
    planned = [s for s in statements if s.lstrip().lower().startswith(("select", "update", "with"))]
    with sqlite3.connect(store.path) as reader:
        return [row[3] for sql in planned for row in reader.execute(f"explain query plan {sql}")]


def decoded(monkeypatch, what: str = "_decode_phase") -> list[int]:
    """A count of the rows the store hands out (of phases, or with
    ``_decode_game`` of games), kept up to date."""
    count = [0]
    decode = getattr(store_module, what)

    def counting(row):
        count[0] += 1
        return decode(row)

    monkeypatch.setattr(store_module, what, counting)
    return count


@pytest.fixture
def many(config, clock) -> Engine:
    """200 running games, their deadlines 3 days off, reminders a day before."""
    config = replace(config, reminder=timedelta(days=1), outage_gap=timedelta(hours=6))
    engine = Engine(Store(config.database), config, clock)
    for _ in range(200):
        engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    engine.tick()
    return engine


def test_a_tick_with_nothing_due_reads_no_phase_of_200_games(many, clock, monkeypatch):
    clock.advance(hours=1)
    phases, games = decoded(monkeypatch), decoded(monkeypatch, "_decode_game")
    plans = plans_of(many.store, many.tick)
    assert phases[0] == 0
    assert games[0] == 0  # (no reader of any gets a digest: no game is looked at for one)
    # Every phase, mail, message and pause read is found by index (the hour's trim of old messages included).
    history = ("phases", "outbox", "messages", "interventions")
    assert not [p for p in plans if p.startswith("SCAN") and any(table in p for table in history)]


def test_the_next_thing_due_of_200_games_reads_three_phases(many, monkeypatch):
    count = decoded(monkeypatch)
    many.next_due()
    assert count[0] <= 3  # the first deadline, settle end and reminder


def every_moment(engine: Engine) -> datetime:
    """The first moment tick() has work for, from every open phase read (as
    next_due did before it read by index): the games paused left out."""
    paused = engine.store.paused()
    moments = [
        moment
        for phase in engine.store.open_phases()
        if phase["game_id"] not in paused
        for moment in engine.timers._phase_moments(phase)
    ]
    return min(moments)


def test_the_next_thing_due_is_the_first_deadline_or_reminder_of_a_game_not_paused(config, clock):
    config = replace(config, reminder=timedelta(days=1))
    engine = Engine(Store(config.database), config, clock)
    for hours in range(30, 60):  # a reminder only for a phase of 48 hours or more: its first at 24h
        engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=hours))
    first = min(engine.next_due())
    assert first == every_moment(engine) == clock() + timedelta(hours=24)
    engine.pause(19, "keeper", "a break")  # the 48-hour game: the 49-hour one's reminder is next
    assert min(engine.next_due()) == every_moment(engine) == clock() + timedelta(hours=25)
    for game in range(1, 7):  # the games of 30 to 35 hours: the 36-hour one's deadline is later
        engine.pause(game, "keeper", "a break", until=clock() + timedelta(days=5))
    assert min(engine.next_due()) == every_moment(engine) == clock() + timedelta(hours=25)
    clock.advance(hours=25)
    assert any("reminded" in line for line in engine.tick())  # the 49-hour game's, due now
    assert min(engine.next_due()) == every_moment(engine) == clock() + timedelta(hours=1)  # the 50-hour one's


# -- the outbox ---------------------------------------------------------------------


def add_sent(store: Store, count: int, at: str, to: str = "reader@example.org") -> None:
    raw = b"From: referee@example.org\r\nSubject: old\r\n\r\n" + b"a line of an old mail\r\n" * 10
    store.db.conn.executemany(
        "insert into outbox (message_id, game_id, recipients, subject, raw, created_at, state, attempts,"
        " sent_at, answers, budget) values (?, 1, ?, 'old', ?, ?, 'sent', 1, ?, null, 'player')",
        [(f"<old-{at}-{n}@example.org>", json.dumps([to]), raw, at, at) for n in range(count)],
    )
    store.db.conn.commit()


def whole(store: Store) -> int:
    return store._value("select count(*) from outbox where length(raw) > instr(raw, X'0D0A0D0A') + 3")


def test_old_sent_mail_is_trimmed_once_and_never_read_again(engine):
    engine.new_game("pure-skill", PLAYERS)
    store = engine.store
    add_sent(store, 50, OLD)
    assert store.forget_sent_bodies("2026-02-01T00:00:00Z") == 50
    # A mail older than the last cut, whole (as no referee leaves one): the
    # next pass does not look back so far, so it stays as it is.
    add_sent(store, 1, "2026-01-15T00:00:00Z")
    add_sent(store, 3, "2026-02-15T00:00:00Z")
    before = whole(store)
    plans = plans_of(store, lambda: store.forget_sent_bodies("2026-03-01T00:00:00Z"))
    assert whole(store) == before - 3
    assert store.forget_sent_bodies("2026-02-20T00:00:00Z") == 0  # a cut before the last: nothing
    assert any("USING INDEX idx_outbox_sent_or_queued" in p for p in plans)
    assert not [p for p in plans if p.startswith("SCAN") and "outbox" in p]


def test_a_sender_s_last_mails_are_found_by_index_among_many(engine):
    engine.new_game("pure-skill", PLAYERS)
    add_sent(engine.store, 200, OLD, to=PLAYERS[0])
    add_sent(engine.store, 200, OLD, to="reader@example.org")
    found: list = []
    plans = plans_of(engine.store, lambda: found.extend(engine.store.last_sent_to(PLAYERS[0], 3)))
    assert [m["recipients"] for m in found] == [[PLAYERS[0]]] * 3
    assert found[0]["id"] > found[1]["id"] > found[2]["id"]
    assert [p for p in plans if "outbox" in p] == ["SEARCH outbox USING INDEX idx_outbox_recipients (recipients=?)"]


# -- opening games.db, and checking it ----------------------------------------------


def test_no_start_checks_every_page(engine, config, clock, monkeypatch):
    engine.new_game("pure-skill", PLAYERS)
    checks = []
    monkeypatch.setattr(store_module, "damage", lambda db: checks.append(db) or "")
    Engine(Store(config.database), config, clock).tick()
    assert checks == []


def cli_config(tmp_path: Path, database: Path) -> str:
    cfg = tmp_path / "referee.toml"
    cfg.write_text(f'[referee]\naddress = "referee@example.org"\ndatabase = "{database}"\n')
    return str(cfg)


def test_referee_check_finds_a_damaged_page_and_says_to_restore(engine, config, tmp_path, capsys):
    cfg = cli_config(tmp_path, config.database)
    engine.new_game("pure-skill", PLAYERS)
    assert main(["--config", cfg, "check"]) == 0
    assert "no damage found" in capsys.readouterr().out
    damage_page(engine, config, "a table page")
    Store(config.database)  # a start reads no page it does not need
    assert main(["--config", cfg, "check"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "damaged" in err and "restore the newest backup" in err


def test_an_upgrade_refuses_a_damaged_games_db_and_leaves_it_alone(engine, config):
    damage_page(engine, config, "a table page")
    with sqlite3.connect(config.database) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    before = config.database.read_bytes()
    with pytest.raises(StorageFault, match=r"damaged.*restore the newest backup"):
        Store(config.database)
    assert config.database.read_bytes() == before


def test_a_message_finds_the_games_lists_without_reading_every_game(many):
    plans = plans_of(many.store, many.store.lists)
    assert plans == ["SCAN games USING COVERING INDEX idx_games_lists"]  # (the games with lists alone)
