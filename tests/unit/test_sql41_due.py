"""Fewer statements a message (issue 36): what falls due next is asked again
only when a table it is read from was written (Timers.due_stamp), and
answers the Store keeps (a game's row, the players' zones, the open offers)
are read afresh after any write that may change them, a rollback or
another process's commit.  Each test fails if an answer could go stale."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import PLAYERS, seat_address
from test_sql36_batch import traced

from referee.engine import Engine
from referee.engine.timers import NEXT_DUE_READS
from referee.store import _OPEN_OFFERS_AT_ONCE, _ZONES_AT_ONCE, GameState, Notify, OfferKind, Store
from referee.tables import Tables


@pytest.fixture
def pure(engine):
    return engine.new_game("pure-skill", PLAYERS)


def _move(engine: Engine, player: str, text: str, game: int = 1) -> bytes:
    return (
        f"From: {player}\r\nTo: {seat_address(engine, player, game)}\r\nSubject: move\r\n"
        f"Message-ID: <{player.split('@')[0]}.{text.replace(' ', '')}.{game}@client.example>\r\n\r\n{text}\r\n"
    ).encode()


def _tables_read(store: Store, ask) -> set[str]:
    """The tables SQLite reads while ``ask`` runs (its authorizer sees every statement prepared)."""
    read: set[str] = set()

    def authorize(action, table, column, database, source):
        if action == sqlite3.SQLITE_READ and database == "main":
            read.add(table)
        return sqlite3.SQLITE_OK

    store._conn.set_authorizer(authorize)
    try:
        ask()
    finally:
        store._conn.set_authorizer(None)
    return read


def test_next_due_reads_no_table_its_stamp_does_not_watch(engine, pure):
    """Every kind of moment next_due knows has a row (a digest seat and
    reader, an offer, a stand-in's turn, an open game's sign-ups, a pause):
    the tables read, by the whole and for one game, are NEXT_DUE_READS's."""
    store = engine.store
    store.set_notify(pure, 0, Notify.DIGEST)
    store.add_watcher(pure, "reader@example.org", Notify.DIGEST, "2026-01-01T00:00:00Z", "t" * 16)
    store.set_reader_told(pure, "reader@example.org", 0, "2026-01-01T00:00:00Z")
    store.set_told(pure, [0], 0, "2026-01-01T00:00:00Z")
    store.add_offer(
        kind=OfferKind.WATCH,
        game_id=pure,
        address="o@example.org",
        made_at="2026-01-01T00:00:00Z",
        expires_at="2026-01-03T00:00:00Z",
    )
    store.add_delegation(game_id=pure, seat=1, address="d@example.org", since="2026-01-01", until="2026-01-09")
    opened = store.create_game(kind="pure-skill", seed="00", state=GameState.OPEN, deadline_seconds=60)
    for n in range(3):  # (its least players: its sign-up window runs)
        store.add_signup(opened, f"s{n}@example.org", "2026-01-01T00:00:00Z")
    paused = engine.new_game("pure-skill", ["x@example.org", "y@example.org", "z@example.org"])
    engine.pause(paused, "keeper@example.org")
    store.close_offer(1, "2026-01-02T00:00:00Z", "withdrawn")  # (the open offers are read afresh below)
    store.add_offer(kind=OfferKind.SEAT, game_id=pure, address="p@example.org", made_at="x", expires_at="2026-01-04")
    asked = (None, pure, opened, paused)
    read = _tables_read(store, lambda: [engine.next_due(game) for game in asked])
    assert {"seats", "phases", "offers", "delegations", "told", "watchers", "reader_told", "signups"} <= read
    assert read <= {*NEXT_DUE_READS, "json_each", "sqlite_master"}, read - set(NEXT_DUE_READS)  # (SQLite's own)


def test_the_due_stamp_changes_with_each_table_read_and_not_with_a_move_alone(engine, pure):
    store = engine.store
    stamp = engine.due_stamp()
    engine.ingest(_move(engine, PLAYERS[0], "bid 3"))  # (the phase waits for two more)
    assert engine.due_stamp() == stamp, "a move that completes nothing moves no moment"
    writes = [
        lambda: store.add_offer(kind=OfferKind.WATCH, game_id=pure, address="o@x.org", made_at="x", expires_at="y"),
        lambda: store.add_delegation(game_id=pure, seat=1, address="d@x.org", since="2026-01-01", until="2026-01-09"),
        lambda: store.set_told(pure, [0], 1),
        lambda: store.add_watcher(pure, "r@x.org", None, "2026-01-01T00:00:00Z", "u" * 16),
        lambda: store.set_reader_told(pure, "r@x.org", 1, "2026-01-01T00:00:00Z"),
        lambda: store.add_signup(pure, "s@x.org", "2026-01-01T00:00:00Z"),
        lambda: store.set_notify(pure, 2, Notify.DIGEST),
        lambda: store.update_phase(pure, 1, reminded_at="2026-01-01T00:00:00Z"),
    ]
    for write in writes:
        before = engine.due_stamp()
        write()
        assert engine.due_stamp() != before
    before = engine.due_stamp()
    with pytest.raises(RuntimeError), store.transaction():
        raise RuntimeError("undone")
    assert engine.due_stamp() != before, "a rollback may have undone any write read since"


def test_a_completed_round_s_new_moments_are_seen(engine, pure):
    """The third bid completes the round: a settle end, then a new phase."""
    engine.ingest(_move(engine, PLAYERS[0], "bid 3"))
    engine.ingest(_move(engine, PLAYERS[1], "bid 4"))
    stamp = engine.due_stamp()
    engine.ingest(_move(engine, PLAYERS[2], "bid 5"))
    assert engine.due_stamp() != stamp and len(engine.table(pure).phases) == 2


def test_a_game_s_row_is_read_afresh_after_a_write_and_another_process_s_commit(engine, pure, config):
    store = engine.store
    assert store.game(pure)["state"] == GameState.RUNNING
    with traced(store) as statements:
        again = store.game(pure)
    assert again == store.game(pure) and not [s for s in statements if "games" in s]
    again["options"]["mutated"] = True  # a caller's own copy
    assert "mutated" not in store.game(pure)["options"]
    store.finish_game(pure, "2026-01-02T00:00:00Z")
    assert store.game(pure)["state"] == GameState.FINISHED
    other = Store(config.database)
    other._write("update games set name = ? where id = ?", ["renamed", pure])
    assert store.game(pure)["name"] == "renamed"


def test_zones_are_read_at_once_while_few_and_one_by_one_beyond(engine):
    store = engine.store
    store.set_timezone("A@example.org", "Europe/Paris")
    assert store.timezone("a@example.org") == "Europe/Paris" and store.timezone("b@example.org") is None
    with traced(store) as statements:
        assert store.timezone("c@example.org") is None and store.timezone("A@EXAMPLE.ORG") == "Europe/Paris"
    assert not [s for s in statements if "players" in s]
    store.set_timezone("b@example.org", "Asia/Tokyo")
    assert store.timezone("b@example.org") == "Asia/Tokyo"
    for n in range(_ZONES_AT_ONCE + 1):
        store.set_timezone(f"p{n}@example.org", "UTC")
    assert store.timezone("p7@example.org") == "UTC" and store.timezone("b@example.org") == "Asia/Tokyo"
    assert store.timezone("nobody@example.org") is None


def test_open_offers_kept_answer_as_the_query_does(engine, pure):
    store = engine.store

    def offer(kind: OfferKind, game: int | None, n: int) -> int:
        return store.add_offer(kind=kind, game_id=game, seat=0, address=f"o{n}@x.org", made_at="x", expires_at=f"y{n}")

    ids = [offer(kind, game, n) for n, (kind, game) in enumerate([(OfferKind.SEAT, pure), (OfferKind.WATCH, 99)])]
    assert [o["id"] for o in store.open_offers()] == ids
    assert [o["id"] for o in store.open_offers(OfferKind.SEAT, pure)] == ids[:1]
    assert [o["id"] for o in store.open_offers(game_id=99)] == ids[1:]
    assert store.open_offers(OfferKind.WATCH, pure) == []
    store.close_offer(ids[0], "z", "declined")
    assert [o["id"] for o in store.open_offers(OfferKind.SEAT)] == []
    ids += [offer(OfferKind.WATCH, pure, n) for n in range(2, _OPEN_OFFERS_AT_ONCE + 3)]
    assert [o["id"] for o in store.open_offers(OfferKind.WATCH, pure)] == ids[2:]
    assert store.open_offers()[0]["detail"] == {}


def test_a_table_read_after_a_phase_closed_and_opened_is_as_a_fresh_read(engine, pure):
    for player, bid in zip(PLAYERS, ["bid 3", "bid 4", "bid 5"], strict=True):
        engine.ingest(_move(engine, player, bid))
        kept = engine.tables.table(pure)
        fresh = Tables(engine.store).table(pure)
        assert (kept.phases, kept.counted, kept.state) == (fresh.phases, fresh.counted, fresh.state)
    assert len(engine.tables.table(pure).phases) == 2


def test_a_move_by_a_seat_s_token_asks_for_no_offer_nor_observer(engine, pure):
    with traced(engine.store) as statements:
        assert engine.ingest(_move(engine, PLAYERS[0], "bid 3")).code == "move"
    assert not [s for s in statements if "from [offers]" in s or "from [watchers]" in s], statements
