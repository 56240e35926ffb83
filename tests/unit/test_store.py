"""games.db: one transaction per message (or tick, or new game), so a failure
half-way leaves no trace and the same message can be handled again."""

from __future__ import annotations

from datetime import timedelta

import pytest

from conftest import PLAYERS, body_of, make_mail
from referee.engine import Engine
from referee.store import Store
from referee.timeutil import iso

ALICE, BOB, CAROL = PLAYERS


class Boom(RuntimeError):
    pass


def everything(path) -> dict[str, list]:
    """Every row of every table, read through a separate connection: what is
    committed, not what one connection happens to see."""
    db = Store(path).db
    return {name: list(db[name].rows) for name in ("games", "seats", "phases", "moves",
                                                   "messages", "outbox")}  # fmt: skip


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
    raw = make_mail(ALICE, "bid 7", received=clock(), message_id="<m1@example.net>")

    def the_move_is_written():
        assert [m["move"] for m in engine.store.moves(1)] == ["bid 7"]

    calls = fail_on_template(engine, monkeypatch, "receipt", the_move_is_written)
    with pytest.raises(Boom):
        engine.ingest(raw)
    assert calls == ["receipt"]
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
    raw = make_mail(BOB, "bid 2", received=clock(), message_id="<m2@example.net>")

    def queue_mail(**row):
        raise Boom("disk full")

    monkeypatch.setattr(engine.store, "queue_mail", queue_mail)
    with pytest.raises(Boom):
        engine.ingest(raw)
    assert everything(config.database) == before
    monkeypatch.undo()
    assert engine.ingest(raw).code == "move"
    assert len(engine.store.messages()) == 1


def test_a_failure_while_announcing_a_resolved_round_undoes_the_last_bid(engine, clock, config,
                                                                         monkeypatch):  # fmt: skip
    engine.new_game("pure-skill", PLAYERS)
    engine.ingest(make_mail(ALICE, "bid 7", received=clock()))
    engine.ingest(make_mail(BOB, "bid 8", received=clock()))
    before = everything(config.database)
    raw = make_mail(CAROL, "bid 9", received=clock())
    fail_on_template(engine, monkeypatch, "pure-skill/round")
    with pytest.raises(Boom):
        engine.ingest(raw)
    assert everything(config.database) == before
    monkeypatch.undo()
    assert engine.ingest(raw).code == "move"
    assert engine.status(1)["phase"]["number"] == 2


def test_a_failing_tick_resolves_nothing_and_the_next_one_does(engine, clock, config,
                                                               monkeypatch):  # fmt: skip
    engine.new_game("pure-skill", PLAYERS)
    clock.advance(days=3)
    before = everything(config.database)
    fail_on_template(engine, monkeypatch, "pure-skill/round")
    with pytest.raises(Boom):
        engine.tick()
    assert everything(config.database) == before  # no random bids were kept
    monkeypatch.undo()
    assert engine.tick() == ["game 1 Round 1 of 13"]
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


def test_the_record_survives_reopening_the_file(engine, clock, config):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=5), name="Friday")
    engine.ingest(make_mail(ALICE, "bid 7", received=clock()))
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
    engine.ingest(make_mail(ALICE, "bid 7", received=received, message_id="<r@example.net>"))
    (move,) = engine.store.moves(1)
    assert move["message_key"] == "<r@example.net>"
    assert move["received_at"] == iso(received)
    (message,) = engine.store.messages()
    assert message["received_at"] == move["received_at"]
    assert message["sender"] == ALICE and message["game_id"] == 1
