"""games.db as a keeper meets it on a bad day: full, locked, damaged, from a
newer referee, or from an older one; backed up and restored.  The faults are
SQLite's own (its page limit gives the very error a full disk does; a second
connection holds the real write lock); the integration tests fill a real
file system and take write access away."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sqlite3
from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, reply

from referee import store as store_module
from referee.cli import main
from referee.config import MaildirSettings
from referee.engine import Engine
from referee.record import verify
from referee.runner import Runner, run_lock
from referee.site.public import game_record
from referee.site.render import Site
from referee.store import SCHEMA_VERSION, StorageFault, Store

ALICE, BOB, CAROL = PLAYERS
SCHEMAS = sorted((Path(__file__).parents[1] / "fixtures" / "schemas").glob("schema-*.sql"))


def fill_up(store: Store) -> None:
    """From now on games.db cannot grow: SQLite's "database or disk is full"."""
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count = {pages}")


def free_space(store: Store) -> None:
    store.db.execute("PRAGMA max_page_count = 1073741823")


def bids(engine: Engine, count: int) -> list[bytes]:
    """``count`` bids with long bodies (each needs new pages), alternating players."""
    padding = "\n\n" + "A word of explanation for my bid, at length. " * 60
    return [
        reply(engine, PLAYERS[i % 3], f"bid {i // 3 + 1}{padding}", message_id=f"<b{i}@example.org>")
        for i in range(count)
    ]


# -- a storage fault is no fault of the message ---------------------------------------


def test_a_full_disk_stops_the_message_and_records_nothing(engine):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    raws = bids(engine, 30)
    fill_up(engine.store)
    with pytest.raises(StorageFault, match=r"full.*free some space"):
        for raw in raws:
            engine.ingest(raw)
    handled = engine.store.messages()
    assert all(m["code"] == "move" for m in handled)  # none kept as failed
    free_space(engine.store)
    outcomes = [engine.ingest(raw).code for raw in raws]
    assert outcomes.count("duplicate") == len(handled)  # the ones before the fault, once
    assert all(m["code"] == "move" for m in engine.store.messages())
    assert len(engine.store.moves(1)) == len(raws)


def test_a_write_lock_held_too_long_is_a_storage_fault(config, clock, monkeypatch):
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 50)
    engine = Engine(Store(config.database), config, clock)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    raw = reply(engine, ALICE, "bid 5")
    keeper = sqlite3.connect(config.database, isolation_level=None)  # a keeper's sqlite3 session
    keeper.execute("BEGIN IMMEDIATE")
    with pytest.raises(StorageFault, match=r"locked.*write lock"):
        engine.ingest(raw)
    keeper.execute("ROLLBACK")
    assert engine.store.messages() == []
    assert engine.ingest(raw).code == "move"


def test_the_store_raises_storage_faults_and_nothing_else_of_sqlite_s(config, clock, monkeypatch):
    """Whatever the Store is asked, a fault of games.db or its disk comes out
    as a StorageFault (the code outside knows no other); a bug, such as a
    row written twice, stays the bug it is."""
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 50)
    store = Store(config.database)
    game = store.create_game(kind="pure-skill", seed="s", state="running", options={})
    keeper = sqlite3.connect(config.database, isolation_level=None)
    keeper.execute("BEGIN IMMEDIATE")
    try:
        for write in (
            lambda: store.set_meta("k", "v"),
            lambda: store.finish_game(game, "now"),
            lambda: store.add_signup(game, ALICE, "now"),
            lambda: store.sync(always=True),
        ):
            with pytest.raises(StorageFault, match=r"locked.*write lock"):
                write()
        with pytest.raises(StorageFault, match="locked"), store.transaction():
            pass
    finally:
        keeper.execute("ROLLBACK")
    fill_up(store)
    with pytest.raises(StorageFault, match=r"full.*free some space"), store.transaction():
        for i in range(200):
            store.set_meta(f"k{i}", "x" * 4000)
    free_space(store)
    assert store.get_meta("k0") is None  # the transaction undone, whole
    store.add_seat(game, 0, ALICE, False, "t")
    with pytest.raises(sqlite3.IntegrityError):
        store.add_seat(game, 0, BOB, False, "u")


def test_no_code_outside_the_store_turns_errors_into_storage_faults():
    """The store alone knows SQLite's errors: no caller converts them."""
    root = Path(store_module.__file__).parent
    converting = re.compile(r"storage_fault\(|_is_fault|is_storage_fault|sqlite3\.OperationalError")
    outside = [
        f"{path.relative_to(root)}:{n}"
        for path in sorted(root.rglob("*.py"))
        if path.name != "store.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if converting.search(line)
    ]
    assert outside == []


def maildir_runner(config, clock, box: Path) -> tuple[Engine, Runner]:
    for sub in ("new", "cur", "tmp"):
        (box / sub).mkdir(parents=True, exist_ok=True)
    config = replace(config, maildir=MaildirSettings(box))
    engine = Engine(Store(config.database), config, clock)
    return engine, Runner.from_config(config, engine)


def test_a_pass_that_meets_a_full_disk_quarantines_nothing_and_the_next_takes_every_bid(config, clock, tmp_path):
    box = tmp_path / "Maildir"
    engine, runner = maildir_runner(config, clock, box)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    asyncio.run(runner.once())  # the start mails go nowhere: no [smtp]
    for i, raw in enumerate(bids(engine, 24)):
        (box / "new" / f"{int(clock().timestamp())}.M{i}.test").write_bytes(raw)  # delivered now
    fill_up(engine.store)
    with pytest.raises(StorageFault, match="full"):
        asyncio.run(runner.once())
    assert not [p for p in box.rglob("*") if p.is_file() and "quarantine" in str(p)]
    assert len(list((box / "new").iterdir())) == 24  # every bid still waiting
    free_space(engine.store)
    report = asyncio.run(runner.once())
    assert report.received == 24 and len(engine.store.moves(1)) == 24
    assert not any(m["code"] == "failed" for m in engine.store.messages())


def test_the_command_line_says_a_storage_fault_in_one_line_with_status_3(config, tmp_path, capsys):
    cfg = tmp_path / "referee.toml"
    cfg.write_text(f'[referee]\naddress = "referee@example.org"\ndatabase = "{config.database}"\n')
    assert main(["--config", str(cfg), "new", "pure-skill", "--bots", "3"]) == 0
    with sqlite3.connect(config.database) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    capsys.readouterr()
    assert main(["--config", str(cfg), "status"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "newer referee" in err and "referee restore" in err


@pytest.mark.parametrize("free_kib, full", [(0, True), (12, True), (1000, True), (1030, False), (10**6, False)])
def test_a_disk_io_error_on_a_disk_with_next_to_no_room_says_the_disk_is_full(free_kib, full, tmp_path, monkeypatch):
    """SQLite calls a disk too full for the -shm file it makes on opening a
    "disk I/O error" (SQLITE_IOERR_SHMSIZE): with under a MiB free, it is
    said as what it is."""
    real = os.statvfs(tmp_path)
    blocks = free_kib * 1024 // real.f_frsize
    monkeypatch.setattr(
        os,
        "statvfs",
        lambda path: os.statvfs_result(
            (real.f_bsize, real.f_frsize, real.f_blocks, blocks, blocks, 100, 50, 50, 0, 255)
        ),
    )
    line = str(store_module.storage_fault(tmp_path / "games.db", sqlite3.OperationalError("disk I/O error")))
    if full:
        assert f"disk I/O error, with {free_kib} KiB free on its disk: the disk is full: free some space" in line
    else:
        assert "the disk failed a read or write: check the disk (dmesg)" in line


def test_a_disk_out_of_inodes_is_full_too(tmp_path, monkeypatch):
    real = os.statvfs(tmp_path)
    monkeypatch.setattr(
        os,
        "statvfs",
        lambda path: os.statvfs_result((real.f_bsize, real.f_frsize, real.f_blocks, 10**6, 10**6, 100, 0, 0, 0, 255)),
    )
    line = str(store_module.storage_fault(tmp_path / "games.db", sqlite3.OperationalError("disk I/O error")))
    assert "with no inode free on its disk: the disk is full" in line


# -- opening: damaged, too new, or older ---------------------------------------------


def test_a_games_db_from_a_newer_referee_is_refused_and_left_alone(config):
    Store(config.database).db.conn.close()
    with sqlite3.connect(config.database) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = config.database.read_bytes()
    with pytest.raises(StorageFault, match=f"version {SCHEMA_VERSION + 1}.*upgrade referee"):
        Store(config.database)
    assert config.database.read_bytes() == before


def damage_page(engine: Engine, config, where: str) -> None:
    """games.db with a hundred bytes overwritten: in its header, or on a table's page."""
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    engine.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.store.db.conn.close()
    data = bytearray(config.database.read_bytes())
    page = 4096
    start = 0 if where == "header" else page * 2  # the first page of a table's b-tree, past the schema
    data[start : start + 100] = b"\x99" * 100
    config.database.write_bytes(bytes(data))


# (No run checks every page when it opens games.db any more: that grew with
# the file.  `referee check` does, and an upgrade: test_growth36_history.)
@pytest.mark.parametrize("where", ["header", "a table page"])
def test_a_damaged_games_db_is_refused_with_how_to_restore(engine, config, where):
    damage_page(engine, config, where)
    with pytest.raises(StorageFault, match="restore the newest backup"):
        Store(config.database).check()  # (`referee check`; a damaged header: at opening)


def schema_of(path: Path) -> dict:
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("select name from sqlite_master where type = 'table'")]
        return {
            "columns": {t: sorted((c[1], c[2]) for c in db.execute(f"PRAGMA table_info([{t}])")) for t in tables},
            "indexes": sorted(
                r[0] for r in db.execute("select sql from sqlite_master where type = 'index' and sql is not null")
            ),
            "version": db.execute("PRAGMA user_version").fetchone()[0],
        }


@pytest.mark.parametrize("dump", SCHEMAS, ids=[p.stem for p in SCHEMAS])
def test_every_earlier_schema_is_brought_up_to_date_and_its_games_go_on(dump, config, clock, tmp_path):
    fresh = tmp_path / "fresh.db"
    Store(fresh).db.conn.close()
    with sqlite3.connect(config.database) as db:
        db.executescript(dump.read_text())
    games_before = sqlite3.connect(config.database).execute("select id, state, seed from games").fetchall()
    engine = Engine(Store(config.database), config, clock)
    assert schema_of(config.database) == schema_of(fresh)  # as if made today, version included
    assert [(g["id"], g["state"], g["seed"]) for g in engine.store.games()] == games_before
    finished = [g["id"] for g in engine.store.games("finished")]
    assert finished and all(verify(game_record(engine.table(g))).ok for g in finished)
    running = engine.store.games("running")[0]["id"]
    clock.advance(days=3650)  # past the fixtures' deadlines, dated 2026
    for _ in range(13):
        engine.tick()
        clock.advance(days=4)
    assert engine.store.game(running)["state"] == "finished"
    assert verify(game_record(engine.table(running))).ok
    Store(config.database)  # and opening it again changes nothing
    assert schema_of(config.database)["version"] == SCHEMA_VERSION


# (schema-10's referee ran on 2026-11-25 and extended the deadline it had slept through)
SLEPT_THROUGH = [p for p in SCHEMAS if "last_tick','2026-11-25" not in p.read_text()]


@pytest.mark.parametrize("dump", SLEPT_THROUGH, ids=[p.stem for p in SLEPT_THROUGH])
def test_an_earlier_games_db_keeps_the_outage_guard(dump, config, clock):
    """The referee, upgraded, first runs days after the old one last did: the
    deadline it slept through is extended, as with a games.db of today, not
    filled with random bids.  The oldest games.db has no note of when the
    referee last ran; the record says when it last worked."""
    with sqlite3.connect(config.database) as db:
        db.executescript(dump.read_text())
    config = replace(config, outage_gap=timedelta(hours=6), outage_grace=timedelta(hours=24))
    engine = Engine(Store(config.database), config, clock)
    running = engine.store.games("running")[0]["id"]
    phase = engine.status(running)["phase"]
    clock.now = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)  # days after its deadline, 2026-11-21
    done = engine.tick()
    assert done == [
        f"extended game {running} {phase['label']} to 2026-11-26T09:00:00Z: "
        f"the referee did not run from 2026-11-21T15:05:00Z to 2026-11-25T09:00:00Z"
        if "last_tick" in dump.read_text()
        # the record's last work: a's bid, handled 15:00
        else f"extended game {running} {phase['label']} to 2026-11-26T09:00:00Z: "
        f"the referee did not run from 2026-11-21T15:00:00Z to 2026-11-25T09:00:00Z"
    ]
    assert engine.status(running)["phase"]["number"] == phase["number"]  # nobody got a random bid
    assert not [m for m in engine.store.moves(running, phase["number"]) if m["source"] == "random"]


ONE_LINE_OUTCOMES = [  # before schema 3 (offers, of schema 5, has an outcome of its own)
    p for p in SCHEMAS if '"outcome" TEXT' in p.read_text().partition('CREATE TABLE "messages"')[2].partition(";")[0]
]


@pytest.mark.parametrize("dump", ONE_LINE_OUTCOMES, ids=[p.stem for p in ONE_LINE_OUTCOMES])
def test_an_earlier_games_db_keeps_what_became_of_each_message_as_code_and_detail(dump, config):
    """Schema 3 splits the one line of text ("refused: line 1: ...") into the
    outcome's code, which the store selects by, and its detail."""
    with sqlite3.connect(config.database) as db:
        db.executescript(dump.read_text())
        before = dict(db.execute("select key, outcome from messages").fetchall())
    store = Store(config.database)
    after = {m["key"]: m for m in store.messages()}
    assert {key: f"{m['code']}: {m['detail']}" for key, m in after.items()} == before
    assert all(m["code"] in ("move", "refused", "ignored", "failed") for m in after.values())
    assert {key for key in after if not store.seen(key)} == {
        key for key, m in after.items() if m["code"] in ("failed", "ignored")
    }
    assert [m["key"] for m in store.failed_messages()] == [key for key, m in after.items() if m["code"] == "failed"]


def test_the_last_schema_s_fixture_holds_every_kind_of_outcome(config):
    with sqlite3.connect(config.database) as db:
        db.executescript(SCHEMAS[-1].read_text())
    assert sorted({m["code"] for m in Store(config.database).messages()}) == ["failed", "ignored", "move", "refused"]


def test_a_migration_that_fails_leaves_games_db_as_it_was(config, monkeypatch):
    with sqlite3.connect(config.database) as db:
        db.executescript(SCHEMAS[0].read_text())
    before = schema_of(config.database)

    def half_done(db):
        store_module._schema_1(db)
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store_module, "MIGRATIONS", [half_done])
    with pytest.raises(StorageFault, match="disk"):
        Store(config.database)
    assert schema_of(config.database) == before


# -- backups -------------------------------------------------------------------------------


def cli(tmp_path: Path, database: Path, *args: str) -> int:
    cfg = tmp_path / "referee.toml"
    cfg.write_text(f'[referee]\naddress = "referee@example.org"\ndatabase = "{database}"\n')
    return main(["--config", str(cfg), *args])


def test_a_backup_taken_while_another_process_writes_is_whole_and_restores(engine, config, clock, tmp_path, capsys):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    engine.ingest(reply(engine, ALICE, "bid 5"))
    writer = sqlite3.connect(config.database, isolation_level=None)  # the daemon, mid-transaction
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("insert into meta (key, value) values ('uncommitted', 'x')")
    backup = tmp_path / "backups" / "games-1.db"
    backup.parent.mkdir()
    assert cli(tmp_path, config.database, "backup", str(backup)) == 0
    writer.execute("COMMIT")
    engine.ingest(reply(engine, BOB, "bid 6"))  # handled after the backup
    copy = sqlite3.connect(backup)
    assert copy.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # one self-contained file
    assert copy.execute("select count(*) from moves").fetchone()[0] == 1
    assert copy.execute("select count(*) from meta where key = 'uncommitted'").fetchone()[0] == 0
    copy.close()

    with run_lock(config.database):  # the daemon runs: no restore under it
        assert cli(tmp_path, config.database, "restore", str(backup)) == 2
    assert "holds" in capsys.readouterr().err
    engine.store.db.conn.close()
    capsys.readouterr()
    assert cli(tmp_path, config.database, "restore", str(backup)) == 0
    out = capsys.readouterr().out
    assert "`referee ingest` again" in out and ".replaced-" in out  # (a referee that reads no mailbox)
    restored = Store(config.database)
    assert len(restored.moves(1)) == 1
    kept = [p for p in tmp_path.iterdir() if ".replaced-" in p.name and not p.name.endswith(("-wal", "-shm"))]
    assert len(Store(kept[0]).moves(1)) == 2  # the replaced games.db, whole, beside it


def test_only_a_whole_backup_is_restored(engine, config, tmp_path, capsys):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    junk = tmp_path / "notes.db"
    junk.write_text("not a database at all, just words " * 200)
    before = config.database.read_bytes()
    assert cli(tmp_path, config.database, "restore", str(junk)) == 2
    assert "not a backup" in capsys.readouterr().err
    assert config.database.read_bytes() == before


@pytest.mark.parametrize(
    "target", ["games.db", "games.db-wal", "games.db-shm", "games.db.lock", "referee.toml", "existing.db"]
)
def test_a_backup_never_writes_over_a_file(engine, config, tmp_path, capsys, target):
    """Not games.db, its journal or lock, the config, nor any file that
    exists: one line says why, and every file stays as it was."""
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    engine.ingest(reply(engine, ALICE, "bid 5"))
    (tmp_path / "existing.db").write_bytes(b"last week's notes")
    cli(tmp_path, config.database, "status")  # writes the config cli() uses
    files = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    capsys.readouterr()
    assert cli(tmp_path, config.database, "backup", str(tmp_path / target)) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and ("own files" in err or "exists" in err), err
    assert {p: p.read_bytes() for p in files} == files
    assert len(Store(config.database).moves(1)) == 1


def _tampered(path: Path, sql: str) -> Path:
    with closing(sqlite3.connect(path)) as db:
        db.execute(sql)
        db.commit()
    return path


@pytest.mark.parametrize(
    "sql",
    [
        "create trigger publish after insert on moves begin update seats set address = token; end",
        "create view tokens as select token from seats",
        "create table spare (x)",
    ],
)
def test_a_backup_that_holds_more_than_a_games_db_is_refused_before_anything_moves(
    engine, config, tmp_path, capsys, sql
):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    backup = tmp_path / "backup.db"
    assert cli(tmp_path, config.database, "backup", str(backup)) == 0
    _tampered(backup, sql)
    engine.store.sync()
    before = config.database.read_bytes()
    capsys.readouterr()
    assert cli(tmp_path, config.database, "restore", str(backup)) == 2
    assert "holds what no games.db has" in capsys.readouterr().err
    assert config.database.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if ".replaced-" in p.name or ".restoring" in p.name]


def test_restore_takes_the_path_literally_and_never_games_db_itself(engine, config, tmp_path, capsys):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    plain, hashed = tmp_path / "new.db", tmp_path / "new.db#1"
    assert cli(tmp_path, config.database, "backup", str(plain)) == 0
    engine.ingest(reply(engine, ALICE, "bid 5"))
    assert cli(tmp_path, config.database, "backup", str(hashed)) == 0
    assert cli(tmp_path, config.database, "restore", str(config.database)) == 2
    assert "games.db itself" in capsys.readouterr().err
    engine.store.db.conn.close()
    assert cli(tmp_path, config.database, "restore", str(hashed)) == 0
    assert len(Store(config.database).moves(1)) == 1  # new.db#1's, not new.db's


def test_a_restore_that_cannot_finish_leaves_the_old_games_db_in_place(engine, config, tmp_path, capsys, monkeypatch):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    backup = tmp_path / "backup.db"
    assert cli(tmp_path, config.database, "backup", str(backup)) == 0
    engine.ingest(reply(engine, ALICE, "bid 5"))
    engine.store.db.conn.close()
    replace_file = os.replace

    def failing(source, target):
        if str(source).endswith(".restoring"):  # the backup's copy, renamed in
            raise OSError(5, "Input/output error")
        replace_file(source, target)

    monkeypatch.setattr("referee.cli.os.replace", failing)
    assert cli(tmp_path, config.database, "restore", str(backup)) == 2
    assert "cannot put" in capsys.readouterr().err
    assert len(Store(config.database).moves(1)) == 1  # the old games.db, whole, where it was
    assert not [p for p in tmp_path.iterdir() if ".replaced-" in p.name or ".restoring" in p.name]


# -- health ---------------------------------------------------------------------------------


def test_status_shows_trouble_at_a_glance(config, clock, tmp_path, capsys):
    box = tmp_path / "Maildir"
    engine, runner = maildir_runner(config, clock, box)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    asyncio.run(runner.once())
    cfg = tmp_path / "referee.toml"
    cfg.write_text(f'[referee]\naddress = "referee@example.org"\ndatabase = "{config.database}"\n')
    capsys.readouterr()
    main(["--config", str(cfg), "status"])
    out = capsys.readouterr().out
    assert "health: 3 mail(s) waiting" not in out and "last pass: 20" in out
    assert re.search(rf"^database: {re.escape(str(config.database))}, \d+\.\d MB$", out, re.MULTILINE)
    box.rename(tmp_path / "gone")  # the Maildir vanished: the next pass fails
    clock.advance(hours=2)
    with pytest.raises(Exception, match="Maildir"):
        asyncio.run(runner.once())
    main(["--config", str(cfg), "status"])
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("health: the last pass failed:") and "Maildir" in first
    assert "waiting over an hour" in first  # the start mails, queued with no [smtp] to send them
    main(["--config", str(cfg), "status", "--json"])
    health = json.loads(capsys.readouterr().out)["health"]
    assert health["last_fault"]["at"] > health["last_pass"]["at"] and health["outbox"]["queued"] > 0


def test_a_fault_games_db_could_not_take_is_shown_by_status_and_written_later(
    config, clock, tmp_path, capsys, monkeypatch
):
    """A keeper's sqlite3 session holds games.db's write lock: the pass
    fails, and games.db cannot take the note of why either.  `status` says
    so all the same (it reads the note kept beside games.db), and the next
    pass that goes through writes it into games.db."""
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 50)  # not 10 s: the same fault, sooner
    box = tmp_path / "Maildir"
    engine, runner = maildir_runner(config, clock, box)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    asyncio.run(runner.once())
    cfg = tmp_path / "referee.toml"
    cfg.write_text(f'[referee]\naddress = "referee@example.org"\ndatabase = "{config.database}"\n')

    def status() -> tuple[list[str], dict]:
        capsys.readouterr()
        main(["--config", str(cfg), "status"])
        lines = capsys.readouterr().out.splitlines()
        main(["--config", str(cfg), "status", "--json"])
        return lines, json.loads(capsys.readouterr().out)["health"]

    clock.advance(minutes=5)
    (box / "new" / f"{int(clock().timestamp())}.M1.test").write_bytes(reply(engine, ALICE, "bid 5"))
    keeper = sqlite3.connect(config.database, isolation_level=None)
    keeper.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StorageFault, match="locked"):
            asyncio.run(runner.once())
        lines, health = status()  # while the keeper still holds the lock
    finally:
        keeper.execute("ROLLBACK")
    assert lines[0].startswith("health: the last pass failed: ") and "locked" in lines[0]
    assert lines[2].startswith("last fault: 2026-11-21T12:05:00Z: ") and "locked" in lines[2]
    assert health["last_fault"]["at"] == "2026-11-21T12:05:00Z" and "locked" in health["last_fault"]["error"]

    clock.advance(minutes=5)
    assert asyncio.run(runner.once()).received == 1
    lines, health = status()
    assert "failed" not in lines[0] and lines[2].startswith("last fault: 2026-11-21T12:05:00Z: ")  # a fault gone by
    assert "kept_in" not in health["last_fault"]  # in games.db now
    assert "locked" in json.loads(engine.store.get_meta("last_fault"))["error"]
    assert runner.aside.read() is None


def test_a_site_folder_that_cannot_be_written_is_one_line_in_the_log(engine, config, tmp_path, caplog):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    blocker = tmp_path / "site"
    blocker.write_text("a file where the site's folder should be")
    Site(engine, blocker, config.templates).refresh()
    [record] = [r for r in caplog.records if "site" in r.getMessage()]
    assert "could not be written" in record.getMessage() and record.exc_info is None  # no traceback
    assert engine.status(1)["state"] == "running"


def test_serve_logs_a_storage_fault_as_one_line_and_goes_on(config, clock, tmp_path, caplog):
    box = tmp_path / "Maildir"
    engine, runner = maildir_runner(config, clock, box)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    asyncio.run(runner.once())
    for i, raw in enumerate(bids(engine, 24)):  # more than the pages games.db has free
        (box / "new" / f"{int(clock().timestamp())}.M{i}.test").write_bytes(raw)
    fill_up(engine.store)

    async def serve_until_the_fault_is_logged() -> None:
        stop = asyncio.Event()
        handler = logging.Handler(logging.ERROR)
        handler.emit = lambda record: stop.set()  # type: ignore[method-assign]
        logging.getLogger("referee").addHandler(handler)
        try:
            await asyncio.wait_for(runner.serve(stop), 10)
        finally:
            logging.getLogger("referee").removeHandler(handler)

    asyncio.run(serve_until_the_fault_is_logged())
    [line] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "full" in line.getMessage() and "trying again in 1 s" in line.getMessage()
    assert line.exc_info is None and len(list((box / "new").iterdir())) == 24  # none filed


def test_schema_4_moves_the_outage_deadline_changes_onto_the_games_record(config, clock):
    """Schema 3 kept the referee's deadline moves after an outage in
    deadline_changes; schema 4 makes them interventions on the game's
    record (by the referee), which status lists and verify checks."""
    with sqlite3.connect(config.database) as db:
        db.executescript(next(p for p in SCHEMAS if p.stem.startswith("schema-10-")).read_text())
        [before] = db.execute("select game_id, phase, old, new, reason, at from deadline_changes").fetchall()
    engine = Engine(Store(config.database), config, clock)
    game, phase, old, new, reason, at = before
    [moved] = engine.store.interventions(game)
    assert (moved["phase"], moved["at"], moved["act"], moved["by"], moved["why"], moved["detail"]) == (
        phase,
        at,
        "outage",
        None,
        reason,
        {"old": old, "new": new},
    )
    assert "deadline_changes" not in engine.store.db.table_names()
    assert [(i["act"], i["by"], i["new"]) for i in engine.status(game)["interventions"]] == [
        ("outage", "the referee", new)
    ]
    clock.advance(days=3650)
    for _ in range(13):
        engine.tick()
        clock.advance(days=4)
    verdict = verify(game_record(engine.table(game)))
    assert verdict.ok, verdict
