"""games.db: one transaction per message (or tick, or new game), so a failure
half-way leaves no trace and the same message can be handled again."""

from __future__ import annotations

import email
import gc
import os
import weakref
from dataclasses import replace
from datetime import timedelta

import pytest
from conftest import PLAYERS, body_of, reply

from referee.config import Config
from referee.engine import KEPT_EXCERPT, KEPT_HEADER, Engine
from referee.store import Store
from referee.timeutil import iso

ALICE, BOB, CAROL = PLAYERS


class Boom(RuntimeError):
    pass


def everything(path) -> dict[str, list]:
    """Every row of every table, read through a separate connection: what is
    committed, not what one connection happens to see.  A message that failed
    is kept (raw, unanswered) but is no effect of it, so it is left out."""
    db = Store(path).db
    tables = {name: list(db[name].rows) for name in ("games", "seats", "phases", "moves", "messages", "outbox")}
    tables["messages"] = [m for m in tables["messages"] if m["code"] != "failed"]
    return tables


def fail_on_template(engine: Engine, monkeypatch, template: str, check=None) -> list[str]:
    """Make rendering ``template`` raise (after ``check`` confirms how far we got)."""
    render, calls = engine.composer.render, []

    def failing(name, **context):
        if name == template:
            calls.append(name)
            if check:
                check()
            raise Boom(f"cannot render {name}")
        return render(name, **context)

    monkeypatch.setattr(engine.composer, "render", failing)
    return calls


def test_a_failure_after_the_move_is_written_leaves_no_trace(engine, clock, config, monkeypatch):
    engine.new_game("pure-skill", PLAYERS)
    before = everything(config.database)
    raw = reply(engine, ALICE, "bid 7", received=clock(), message_id="<m1@example.net>")

    def the_move_is_written():
        assert [m["move"] for m in engine.store.moves(1)] == ["bid 7"]

    calls = fail_on_template(engine, monkeypatch, "reply", the_move_is_written)
    assert engine.ingest(raw).code == "failed"
    assert calls == ["reply"]
    assert everything(config.database) == before
    assert engine.store.moves(1) == [] and not engine.store.seen("<m1@example.net>")

    monkeypatch.undo()
    assert engine.ingest(raw).code == "move"
    assert [m["move"] for m in engine.store.moves(1)] == ["bid 7"]
    receipts = [m for m in engine.store.outbox() if m["recipients"] == [ALICE]]
    assert "bid 7" in body_of(receipts[-1]["raw"])
    assert engine.ingest(raw).code == "duplicate"


def test_a_failure_queueing_the_reply_leaves_no_trace(engine, clock, config, monkeypatch):
    engine.new_game("pure-skill", PLAYERS)
    before = everything(config.database)
    raw = reply(engine, BOB, "bid 2", received=clock(), message_id="<m2@example.net>")

    def queue_mail(**row):
        raise Boom("disk full")

    monkeypatch.setattr(engine.store, "queue_mail", queue_mail)
    assert engine.ingest(raw).code == "failed"
    assert everything(config.database) == before
    monkeypatch.undo()
    assert engine.ingest(raw).code == "move"
    assert len(engine.store.messages()) == 1


def test_a_failure_while_announcing_a_resolved_round_undoes_the_last_bid(engine, clock, config, monkeypatch):
    engine.new_game("pure-skill", PLAYERS)
    engine.ingest(reply(engine, ALICE, "bid 7", received=clock()))
    engine.ingest(reply(engine, BOB, "bid 8", received=clock()))
    before = everything(config.database)
    raw = reply(engine, CAROL, "bid 9", received=clock())
    fail_on_template(engine, monkeypatch, "pure-skill/round")
    assert engine.ingest(raw).code == "failed"
    assert everything(config.database) == before
    monkeypatch.undo()
    assert engine.ingest(raw).code == "move"
    assert engine.status(1)["phase"]["number"] == 2


def test_a_failing_tick_resolves_nothing_and_the_next_one_does(engine, clock, config, monkeypatch):
    engine.new_game("pure-skill", PLAYERS)
    clock.advance(days=3)
    before = everything(config.database)
    fail_on_template(engine, monkeypatch, "pure-skill/round")
    with pytest.raises(Boom):
        engine.tick()
    assert everything(config.database) == before  # no random bids were kept
    monkeypatch.undo()
    assert engine.tick() == ["resolved game 1 Round 1 of 13"]
    assert {m["source"] for m in engine.store.final_moves(1, 1).values()} == {"random"}


def test_a_failing_new_game_leaves_no_game(engine, config, monkeypatch):
    fail_on_template(engine, monkeypatch, "pure-skill/prompt")
    with pytest.raises(Boom):
        engine.new_game("pure-skill", PLAYERS)
    assert all(rows == [] for rows in everything(config.database).values())
    monkeypatch.undo()
    game = engine.new_game("pure-skill", PLAYERS)
    assert engine.status(game)["state"] == "running"


def test_a_failing_resignation_changes_nothing(engine, config, monkeypatch):
    engine.new_game("pure-skill", PLAYERS)
    before = everything(config.database)
    fail_on_template(engine, monkeypatch, "left")
    with pytest.raises(Boom):
        engine.resign(1, ALICE)
    assert everything(config.database) == before
    assert engine.status(1)["players"][0]["bot"] is False


def test_a_failing_resignation_undoes_the_outage_guard_before_it_too(config, clock, monkeypatch):
    """`referee resign` is one transaction, the outage guard it runs first
    included: the deadline it moved and its notice go with the failure."""
    config = replace(config, outage_gap=timedelta(hours=6), outage_grace=timedelta(hours=24))
    engine = Engine(Store(config.database), config, clock)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=1))
    engine.tick()  # the referee last ran now
    clock.advance(days=1)  # and then not for a day, past the deadline
    before = everything(config.database)
    fail_on_template(engine, monkeypatch, "left")
    with pytest.raises(Boom):
        engine.resign(1, ALICE)
    assert everything(config.database) == before
    monkeypatch.undo()
    engine.resign(1, ALICE)
    assert engine.store.interventions(1) and engine.status(1)["players"][0]["bot"] is True


def test_a_restore_s_notices_go_out_all_or_none(engine, config, monkeypatch):
    engine.new_game("pure-skill", PLAYERS)
    before = everything(config.database)
    render, told = engine.composer.render, []

    def failing(name, **context):
        if name == "restored":
            told.append(name)
            if len(told) == 2:
                raise Boom("cannot render the second notice")
        return render(name, **context)

    monkeypatch.setattr(engine.composer, "render", failing)
    with pytest.raises(Boom):
        engine.announce_restore([1], None, 1)
    assert everything(config.database) == before
    monkeypatch.undo()
    assert engine.announce_restore([1], None, 1) == len(PLAYERS)


def test_the_record_survives_reopening_the_file(engine, clock, config):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=5), name="Friday")
    engine.ingest(reply(engine, ALICE, "bid 7", received=clock()))
    status = engine.status(1)
    again = Engine(Store(config.database), config, clock)
    assert again.status(1) == status
    assert again.store.final_moves(1, 1)[0]["move"] == "bid 7"
    assert len(again.store.outbox()) == len(engine.store.outbox())
    assert again.store.outbox()[0]["recipients"] == [ALICE]


def test_moves_carry_the_message_and_the_server_receipt_time(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    received = clock() + timedelta(minutes=3)
    clock.advance(hours=1)
    engine.ingest(reply(engine, ALICE, "bid 7", received=received, message_id="<r@example.net>"))
    (move,) = engine.store.moves(1)
    assert move["message_key"] == "<r@example.net>"
    assert move["received_at"] == iso(received)
    (message,) = engine.store.messages()
    assert message["received_at"] == move["received_at"]
    assert message["sender"] == ALICE and message["game_id"] == 1


def test_a_message_that_trips_a_bug_is_kept_unanswered_and_tried_again_later(engine, clock, monkeypatch, caplog):
    engine.new_game("pure-skill", PLAYERS)

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(engine.phases, "take_move", broken)
    raw = reply(engine, PLAYERS[0], "bid 7", message_id="<poison@example.net>")
    sent = len(engine.store.outbox())
    assert engine.ingest(raw).code == "failed"
    assert len(engine.store.outbox()) == sent  # a failed message is never answered
    assert "a bug" in caplog.text
    (row,) = [m for m in engine.store.messages() if m["key"] == "<poison@example.net>"]
    assert row["raw"] == raw and row["code"] == "failed"
    assert engine.store.moves(1) == []
    assert engine.ingest(raw).code == "failed"  # not taken as handled: tried again
    assert len(engine.store.outbox()) == sent
    assert engine.store.count_failed_messages() == 1
    monkeypatch.undo()
    assert engine.ingest(raw).code == "move"
    assert len([m for m in engine.store.messages() if m["key"] == "<poison@example.net>"]) == 1
    assert engine.store.count_failed_messages() == 0


def test_the_quarantine_is_counted_from_an_index_not_by_reading_every_mail(engine):
    """The runner asks after every pass (referee.engine.watch); messages.code
    comes after the whole mail in each row."""
    plan = engine.store.db.execute("EXPLAIN QUERY PLAN select count(*) from messages where code = 'failed'")
    assert "USING COVERING INDEX idx_messages_code" in " ".join(str(row) for row in plan.fetchall())


def test_a_reply_to_ids_with_encoded_line_breaks_stays_one_header(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    raw = reply(
        engine,
        PLAYERS[0],
        "hello",
        message_id="=?utf-8?q?<x=0D=0ABcc:_v@e>?=",
        headers={"References": "=?utf-8?q?<a@b>=0D=0ABcc:_evil@example.net?="},
    )
    assert engine.ingest(raw).code == "refused"
    answer = engine.store.outbox()[-1]
    headers = email.message_from_bytes(answer["raw"])
    assert headers.get_all("Bcc") is None
    assert headers["In-Reply-To"] is None  # no well-formed Message-ID to answer
    assert headers["References"] == "<a@b>"  # the one well-formed Message-ID in it


def test_an_oversized_mail_gets_one_notice_and_changes_nothing(engine, clock, config, monkeypatch):
    from dataclasses import replace as changed

    engine = Engine(engine.store, changed(config, max_message_size=2048), clock)
    engine.new_game("pure-skill", PLAYERS)
    sent = len(engine.store.outbox())
    raw = reply(engine, PLAYERS[0], "bid 7\n" + "a photo " * 1000, message_id="<big@example.net>")
    outcome = engine.ingest(raw)
    assert outcome.code == "refused" and "too large" in outcome.detail
    assert engine.store.moves(1) == []
    (notice,) = engine.store.outbox()[sent:]
    assert notice["recipients"] == [PLAYERS[0]]
    assert "plain-text" in body_of(notice["raw"]) and "KB" in body_of(notice["raw"])
    (row,) = [m for m in engine.store.messages() if m["key"] == "<big@example.net>"]
    assert raw.startswith(row["raw"]) and len(row["raw"]) < 1024 + KEPT_EXCERPT  # the whole stays on the server
    auto = reply(engine, PLAYERS[0], "x" * 5000, headers={"Auto-Submitted": "auto-replied"})
    assert engine.ingest(auto).code == "ignored"  # and automatic mail still gets silence
    assert len(engine.store.outbox()) == sent + 1


def test_sent_mail_keeps_only_its_headers_after_the_retention(engine, clock):
    """games.db does not grow by whole mails for ever: after keep_sent_mail
    (90 days by default) a sent mail keeps its headers, which is all a
    bounce needs to be matched to it; queued mail is never trimmed."""
    engine.new_game("pure-skill", PLAYERS)
    first = engine.store.outbox()[0]
    engine.store.mark_sent([first["id"]], iso(clock()))
    clock.advance(days=89)
    engine.tick()
    assert engine.store.outbox(None)[0]["raw"] == first["raw"]
    clock.advance(days=2)
    engine.tick()
    trimmed = engine.store.outbox(None)[0]["raw"]
    assert trimmed == first["raw"].split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"
    assert engine.store.sent_by_id(first["message_id"])["recipients"] == first["recipients"]
    assert all(m["raw"].split(b"\r\n\r\n", 1)[1].strip() for m in engine.store.outbox())  # queued: whole


def test_a_game_read_again_shows_what_another_process_changed(engine, clock, config):
    """Reads of a game are reused while its record is unchanged; a keeper's
    command in another process (another connection) is seen at once."""
    engine.new_game("pure-skill", PLAYERS)
    assert engine.table(1).human(1)
    keeper = Engine(Store(config.database), config, clock)
    keeper.resign(1, BOB)
    assert not engine.table(1).human(1)
    assert engine.ingest(reply(engine, ALICE, "bid 7")).code == "move"
    assert engine.table(1).waiting_for(engine.table(1).open_phase) == [2]  # bob's seat is a bot's now


def test_a_game_read_inside_a_transaction_that_failed_is_read_afresh(engine):
    engine.new_game("pure-skill", PLAYERS)
    phase = engine.table(1).open_phase["number"]
    with pytest.raises(Boom), engine.store.transaction():
        engine.store.add_move(
            game_id=1,
            phase=phase,
            seat=0,
            move="bid 7",
            source="mail",
            message_key=None,
            received_at=None,
            recorded_at=None,
        )
        assert engine.table(1).waiting_for(engine.table(1).open_phase) == [1, 2]
        raise Boom("undone")
    assert engine.table(1).waiting_for(engine.table(1).open_phase) == [0, 1, 2]


def test_a_game_read_in_parts_is_the_game_read_whole(engine, clock):
    """After its own writes the engine reads only a game's open phases again;
    at every step that read equals a read of the whole record from scratch."""
    from referee.tables import Tables

    engine.new_game("pure-skill", PLAYERS)
    for step in range(13):
        table = engine.table(1)
        if table.open_phase is None:
            break
        if step == 4:
            engine.resign(1, CAROL)  # a bot from this phase on
        for player in (ALICE, BOB):
            seat = PLAYERS.index(player)
            if engine.table(1).open_phase and seat in engine.table(1).waiting_for(engine.table(1).open_phase):
                legal = table.rules.legal_moves(engine.table(1).state, seat)
                engine.ingest(reply(engine, player, table.rules.move_text(legal[step % len(legal)])))
        clock.advance(days=4)
        engine.tick()  # carol's random bid, before she resigned
        parts, whole = engine.table(1), Tables(engine.store).table(1)
        assert (parts.row, parts.seats, parts.phases, parts.counted) == (
            whole.row,
            whole.seats,
            whole.phases,
            whole.counted,
        )
        assert parts.state == whole.state


def test_a_store_let_go_is_freed_and_its_connection_closed(tmp_path):
    """A process that opens games.db again and again (the command line run
    in-process, as the tests do; a keeper's script) keeps none of them: the
    Store, its connection, its files and its page cache go with the last
    reference, even after it wrote to a game's record (which its triggers
    count through a callback the connection holds)."""
    path = tmp_path / "games.db"
    engine = Engine(Store(path), Config(address="referee@example.org", database=path, reminder=None))
    game_id = engine.new_game("pure-skill", PLAYERS)
    store = engine.store
    assert store.record_stamp(game_id)[2] > 0  # the callback counted the game's writes
    gone = weakref.ref(store)
    del engine, store
    gc.collect()
    assert gone() is None
    open_files = [os.path.realpath(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")]
    assert not [name for name in open_files if name.startswith(str(path))]  # games.db, -wal, -shm


def test_an_oversized_mail_with_no_blank_line_is_kept_as_a_bounded_excerpt(engine, clock, config):
    """Five such 10 MB mails added 50 MB to games.db: now 64 KB each at most."""
    from dataclasses import replace as changed

    engine = Engine(engine.store, changed(config, max_message_size=2048), clock)
    raw = b"From: x@example.net\r\nSubject: big\r\nX-Filler: " + b"y" * 3_000_000
    engine.ingest(raw)
    (row,) = engine.store.messages()
    assert len(row["raw"]) == KEPT_HEADER and raw.startswith(row["raw"])


def test_handled_mail_keeps_only_its_headers_after_keep_received_mail(engine, clock, config):
    from dataclasses import replace as changed

    engine = Engine(engine.store, changed(config, keep_received_mail=timedelta(days=90)), clock)
    engine.new_game("pure-skill", PLAYERS)
    engine.ingest(reply(engine, PLAYERS[0], "bid 7\n\n" + "why I bid so " * 200, message_id="<old@example.net>"))
    clock.advance(days=30)
    engine.ingest(reply(engine, PLAYERS[1], "bid 6\n\n" + "and I " * 200, message_id="<new@example.net>"))
    clock.advance(days=61)
    engine.tick()
    rows = {m["key"]: m["raw"] for m in engine.store.messages()}
    assert rows["<old@example.net>"].endswith(b"\r\n\r\n") and b"why I bid" not in rows["<old@example.net>"]
    assert b"and I and I" in rows["<new@example.net>"]  # handled 61 days ago: whole
    assert engine.store.moves(1)[0]["move"] == "bid 7"  # the record keeps the move
    clock.advance(days=30)
    engine.tick()
    assert b"and I" not in {m["key"]: m["raw"] for m in engine.store.messages()}["<new@example.net>"]


def test_the_store_reads_and_writes_one_way():
    """Rows go in and out by plain SQL, through the Store's own helpers;
    sqlite-utils' table API makes the schema (MIGRATIONS) and nothing else."""
    import inspect
    import re

    from referee import store as store_module

    source = inspect.getsource(store_module.Store)
    assert not re.search(r"\.db(\.table\(|\[|\.query\(|\.insert|\.upsert)", source)


def test_an_interrupt_as_the_transaction_begins_leaves_no_transaction_open(tmp_path):
    """A signal's KeyboardInterrupt (or any exception) that comes as BEGIN
    IMMEDIATE returns, before the body runs, must not leave the write lock
    held and a transaction open that every later write would join uncommitted
    (and sync() would "flush", and the sender read from)."""
    store = Store(tmp_path / "games.db")
    execute = store._execute

    def interrupted(sql, args=()):
        cursor = execute(sql, args)
        if sql == "BEGIN IMMEDIATE":
            raise KeyboardInterrupt
        return cursor

    store._execute = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt), store.transaction():
        store.set_meta("never", "1")
    store._execute = execute  # type: ignore[method-assign]
    assert not store._conn.in_transaction
    store.set_meta("later", "1")
    assert Store(tmp_path / "games.db").get_meta("later") == "1"  # committed, seen by another connection
