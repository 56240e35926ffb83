"""Review 37 (batch): a backlog handled in shared transactions (Store.batch,
Runner._ingest_some) ends as the same backlog handled a commit a message:
the same moves, outcomes, acts and mail, whatever keeper commands, seat
changes, catch-ups, bugs, faults and stops fall among the messages of one
transaction; no mail goes out that games.db does not hold committed, none
twice; every read of a game (Tables' cache, re-read table by table) is what
a fresh read gives; a daemon sees a keeper's commands from another process."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
from dataclasses import replace
from email import message_from_bytes

import pytest
from conftest import PLAYERS, Mailbox, Seeds, examples, make_mail, reply
from test_runner import deliver, make_runner
from test_runner import maildir as _maildir
from test_send36_overlap import smtp_server
from test_sql36_batch import bid_backlog

import referee.engine as engine_module
import referee.runner
import referee.tables as tables_module
from referee.config import MaildirSettings, Server
from referee.engine import Engine
from referee.engine.keeping import SHELL
from referee.interrupt import Stopped
from referee.mail import smtp
from referee.mail.tokens import keeper_token, seat_token, token_address
from referee.runner import Runner
from referee.store import StorageFault, Store

ALICE, BOB, CAROL = PLAYERS
KEEPER = "keeper@example.org"
maildir = _maildir


def _engine(config, clock, box):
    config = replace(config, keepers=(KEEPER,), maildir=MaildirSettings(box))
    engine = Engine(Store(config.database), config, clock, Seeds(b"\x07" * 64))
    return engine, Runner.from_config(config, engine)


def _keeper(engine, clock, body):
    to = token_address(engine.config.address, keeper_token(engine.key, KEEPER))
    return make_mail(KEEPER, body, to=to, subject="Re: [keeper] orders", received=clock())


def _outcome(engine) -> dict:
    store = engine.store
    return {
        "moves": [(m["game_id"], m["phase"], m["seat"], m["move"]) for g in (1, 2, 3) for m in store.moves(g)],
        "codes": [(m["sender"], m["code"], m["detail"]) for m in store.messages()],
        "acts": [(i["game_id"], i["act"]) for g in (1, 2, 3) for i in store.interventions(g)],
        "mail": [(tuple(m["recipients"]), m["subject"]) for m in store.outbox(None)],
        "phases": [
            (p["game_id"], p["number"], p["deadline"], p["resolved_at"]) for g in (1, 2, 3) for p in store.phases(g)
        ],
    }


def _play(config, clock, box, script, monkeypatch, most):
    monkeypatch.setattr(referee.runner, "MESSAGES_A_COMMIT", most)
    engine, runner = _engine(config, clock, box)
    for _ in range(3):
        engine.new_game("pure-skill", PLAYERS)
    asyncio.run(runner.once())
    for make in script:
        clock.advance(seconds=1)
        deliver(box, make(engine, clock), clock())
    asyncio.run(runner.once())
    return _outcome(engine)


SCRIPT = [
    lambda e, c: _keeper(e, c, "PAUSE 1 for 1m"),
    lambda e, c: reply(e, ALICE, "bid 7", game=1, received=c()),
    lambda e, c: reply(e, BOB, "bid 6", game=2, received=c()),
    lambda e, c: _keeper(e, c, "REPLACE 2 bob@example.org <dora@example.net> moved"),
    lambda e, c: reply(e, BOB, "bid 5", game=2, received=c()),
    lambda e, c: _keeper(e, c, "RESUME 1"),
    lambda e, c: reply(e, CAROL, "bid 3", game=1, received=c()),
    lambda e, c: _keeper(e, c, "PAUSE 3"),
    lambda e, c: reply(e, ALICE, "bid 2", game=3, received=c()),
    lambda e, c: reply(e, BOB, "bid 4", game=1, received=c()),
    lambda e, c: reply(e, ALICE, "bid 9", game=2, received=c()),
    lambda e, c: reply(e, CAROL, "bid 1", game=2, received=c()),
]


def _later(make, **delta):
    def made(engine, clock):
        clock.advance(**delta)
        return make(engine, clock)

    return made


SCRIPT_OVER_DAYS = [
    lambda e, c: _keeper(e, c, "PAUSE 1 for 2h"),
    lambda e, c: reply(e, ALICE, "bid 7", game=1, received=c()),
    _later(lambda e, c: reply(e, BOB, "bid 6", game=1, received=c()), hours=3),
    lambda e, c: reply(e, ALICE, "bid 6", game=2, received=c()),
    _later(lambda e, c: reply(e, CAROL, "bid 2", game=2, received=c()), days=3),
    lambda e, c: _keeper(e, c, "EXTEND 3 1d"),
    _later(lambda e, c: reply(e, ALICE, "bid 5", game=3, received=c()), days=1),
    _later(lambda e, c: reply(e, BOB, "bid 5", game=3, received=c()), days=2, hours=1),
    lambda e, c: _keeper(e, c, "REPLACE 1 carol@example.org <dora@example.net> moved"),
    lambda e, c: reply(e, CAROL, "bid 4", game=1, received=c()),
    _later(lambda e, c: reply(e, ALICE, "bid 1", game=1, received=c()), days=4),
    lambda e, c: reply(e, BOB, "bid 1", game=2, received=c()),
]


@pytest.mark.parametrize("script", [SCRIPT, SCRIPT_OVER_DAYS], ids=["moments", "days"])
def test_a_backlog_in_shared_transactions_ends_as_with_a_commit_a_message(config, clock, tmp_path, monkeypatch, script):
    _assert_alike_with_a_commit_a_message(config, clock, tmp_path, monkeypatch, script)


def _assert_alike_with_a_commit_a_message(config, clock, tmp_path, monkeypatch, script) -> None:
    """``script`` played twice from the same start, with a commit a message
    and in shared transactions of 20: every outcome _play reports is the same."""
    results = []
    for most in (1, 20):
        box = tmp_path / f"box{most}"
        for sub in ("new", "cur", "tmp"):
            (box / sub).mkdir(parents=True)
        run_config = replace(config, database=tmp_path / f"games{most}.db")
        results.append(_play(run_config, type(clock)(clock()), box, script, monkeypatch, most))
    one, shared = results
    for key in one:
        assert shared[key] == one[key], key


# -- mail sent while a backlog is read in shared transactions ---------------


class Witness:
    """An SMTP server that notes each mail it takes, and whether games.db
    (read by a connection of its own) held the mail's row, committed, then."""

    def __init__(self, database) -> None:
        self.database = database
        self.taken: list[tuple[str, bool]] = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope) -> str:
        message_id = message_from_bytes(envelope.content)["Message-ID"]
        with sqlite3.connect(self.database) as conn:
            row = conn.execute("select id from outbox where message_id = ?", [message_id]).fetchone()
        with self.lock:
            self.taken.append((message_id, row is not None))
        return "250 OK"


GAMES = 16


@pytest.mark.parametrize("small", [False, True], ids=["batch20", "batch4"])
def test_no_mail_of_a_message_undone_in_a_shared_transaction_is_sent_and_none_twice(
    config, clock, maildir, monkeypatch, small
):
    if small:
        monkeypatch.setattr(smtp, "SEND_BATCH", 4)
    witness = Witness(config.database)
    with smtp_server(witness) as port:
        config = replace(config, smtp=Server(host="127.0.0.1", port=port, security="none"))
        engine, runner = bid_backlog(config, clock, maildir, games=GAMES)
        handle, ingest, seen = engine_module.Desk.handle, engine.ingest, []

        def buggy(desk):
            outcome = handle(desk)
            if outcome.game_id == 5:
                raise RuntimeError("a bug, after the move and its receipt were written")
            return outcome

        def failing(raw, **kwargs):
            seen.append(raw)
            if len(seen) == 11:
                raise StorageFault("games.db: disk I/O error")
            return ingest(raw, **kwargs)

        monkeypatch.setattr(engine_module.Desk, "handle", buggy)
        engine.ingest = failing
        with pytest.raises(StorageFault):
            asyncio.run(runner.once())
        engine.ingest = ingest
        report = asyncio.run(runner.once())
        assert report.received >= GAMES - 10
    taken = witness.taken
    assert all(committed for _, committed in taken), [t for t in taken if not t[1]]
    ids = [message_id for message_id, _ in taken]
    assert len(ids) == len(set(ids))  # none twice
    rows = {m["message_id"]: m["state"] for m in engine.store.outbox(None)}
    assert set(ids) <= set(rows)  # none that games.db does not hold
    assert all(state == "sent" for state in rows.values()), rows
    moves = sorted(m["game_id"] for g in range(1, GAMES + 1) for m in engine.store.moves(g))
    assert moves == [g for g in range(1, GAMES + 1) if g != 5]


# -- a game read again in a shared transaction is the game as a fresh read has it


def _same_as_fresh(monkeypatch) -> list[int]:
    """Every Tables.table read is checked against a read with no cache."""
    table, checked = tables_module.Tables.table, []

    def checking(self, game_id):
        got = table(self, game_id)
        fresh = table(tables_module.Tables(self.store), game_id)
        for name in ("row", "seats", "phases", "counted", "interventions"):
            assert getattr(got, name) == getattr(fresh, name), (game_id, name)
        assert got.digest() == fresh.digest(), game_id
        if got.open_phase:
            assert got.waiting_for(got.open_phase) == fresh.waiting_for(fresh.open_phase)
        checked.append(game_id)
        return got

    monkeypatch.setattr(tables_module.Tables, "table", checking)
    return checked


ORDERS = [
    "EXTEND 1 1h",
    "PAUSE 1",
    "SAY 1 hello",
    "RESUME 1",
    "REPLACE 1 carol@example.org <dora@example.net> moved",
    "EXTEND 2 2h",
    "PAUSE 2 for 1m",
]


@pytest.mark.parametrize("undone", [False, True], ids=["kept", "some-undone"])
def test_reads_in_shared_transactions_match_a_fresh_read(config, clock, maildir, monkeypatch, undone):
    checked = _same_as_fresh(monkeypatch)
    engine, runner = _engine(config, clock, maildir)
    if undone:  # every third message meets a bug once its work is written: its savepoint is undone
        handle, count = engine_module.Desk.handle, iter(range(10**6))

        def buggy(desk):
            outcome = handle(desk)
            if next(count) % 3 == 1:
                engine.table(1), engine.table(2)  # read (and kept) with the work about to be undone
                raise RuntimeError("a bug, after the work was written")
            return outcome

        monkeypatch.setattr(engine_module.Desk, "handle", buggy)
    engine.new_game("priority", PLAYERS, options={"turn_limit": 3})
    engine.new_game("pure-skill", PLAYERS)
    box = Mailbox(engine)
    asyncio.run(runner.once())
    for turn in range(40):
        if engine.status(1)["state"] != "running":
            break
        clock.advance(seconds=30)
        waiting = engine.status(1)["phase"]["waiting_for"]
        if ORDERS and turn % 2 == 0:
            deliver(maildir, _keeper(engine, clock, ORDERS.pop(0)), clock())
        for who in waiting:
            prompts = [m for m in box.to(who) if m["subject"].startswith("[priority")]
            moves = examples(prompts[-1]["body"]) if prompts else []
            if moves and "dora" not in who:
                deliver(maildir, reply(engine, who, moves[0], game=1, received=clock()), clock())
        for who in (ALICE, BOB, CAROL):
            deliver(maildir, reply(engine, who, f"bid {turn % 13 + 1}", game=2, received=clock()), clock())
        asyncio.run(runner.once())
        if turn % 5 == 4:
            clock.advance(days=2)
            asyncio.run(runner.once())
    assert len(checked) > 50


@pytest.mark.parametrize("error", [Stopped, MemoryError, KeyboardInterrupt, OSError], ids=lambda e: e.__name__)
def test_a_pass_cut_short_mid_transaction_loses_and_doubles_no_move_nor_mail(
    config, clock, maildir, monkeypatch, error
):
    witness = Witness(config.database)
    with smtp_server(witness) as port:
        config = replace(config, smtp=Server(host="127.0.0.1", port=port, security="none"))
        engine, runner = bid_backlog(config, clock, maildir, games=GAMES)
        handle = engine_module.Desk.handle

        def cut(desk):
            outcome = handle(desk)
            if outcome.game_id == 6:
                raise error("cut short, after the move and its receipt were written")
            return outcome

        monkeypatch.setattr(engine_module.Desk, "handle", cut)
        done, filed_early = runner.source.done, []

        async def watching_done(messages, quarantine=False):  # filed only once committed and flushed
            if messages:
                filed_early.append(engine.store.unsynced or engine.store._conn.in_transaction)
            await done(messages, quarantine)

        runner.source.done = watching_done
        with pytest.raises(error):
            asyncio.run(runner.once())
        monkeypatch.setattr(engine_module.Desk, "handle", handle)
        for _ in range(3):
            asyncio.run(runner.once())
    ids = [message_id for message_id, _ in witness.taken]
    assert all(committed for _, committed in witness.taken)
    assert filed_early and not any(filed_early)
    assert len(ids) == len(set(ids))
    rows = {m["message_id"]: m["state"] for m in engine.store.outbox(None)}
    assert set(ids) <= set(rows) and all(state == "sent" for state in rows.values()), rows
    moves = sorted(m["game_id"] for g in range(1, GAMES + 1) for m in engine.store.moves(g))
    assert moves == list(range(1, GAMES + 1))
    receipts = [m for m in engine.store.outbox(None) if m["recipients"] == [ALICE]]
    per_game: dict = {}
    for m in receipts:
        per_game[m["game_id"]] = per_game.get(m["game_id"], 0) + 1
    assert len(set(per_game.values())) == 1, per_game  # each game's bid answered alike, once


# -- a daemon's caches and a keeper's command from another process ----------


def test_a_daemon_sees_the_keepers_commands_from_another_process_between_passes(config, clock, maildir):
    engine, runner = make_runner(config, clock, maildir)
    engine.new_game("pure-skill", PLAYERS)
    engine.new_game("pure-skill", PLAYERS)
    asyncio.run(runner.once())
    old_bob = reply(engine, BOB, "bid 5", game=2, received=clock())
    # the daemon has read both games, their seats and the pauses (none) and kept them
    assert engine.store.paused() == {} and engine.table(1).open_phase
    shell = Engine(Store(config.database), engine.config, clock)
    shell.pause(1, SHELL, "snow")
    shell.replace(2, BOB, "dora@example.net", SHELL, "moved")
    clock.advance(seconds=5)
    deliver(maildir, reply(engine, ALICE, "bid 7", game=1, received=clock()), clock())
    deliver(maildir, old_bob, clock())
    asyncio.run(runner.once())
    assert set(engine.store.paused()) == {1}
    codes = [m["code"] for m in engine.store.messages()][-2:]
    assert codes[1] != "move", codes  # Bob's seat is Dora's now: his old reply address is no seat of his
    assert [m["seat"] for m in engine.store.moves(2)] == []
    clock.advance(days=4)
    asyncio.run(runner.once())
    assert set(engine.store.paused()) == {1}
    assert engine.status(1)["phase"]["number"] == 1  # paused: no deadline passes
    shell.resume(1, SHELL)
    clock.advance(days=30)
    asyncio.run(runner.once())
    assert engine.status(1)["phase"]["number"] > 1


# -- random backlogs: shared transactions against a commit a message ---------


def _random_script(seed: int) -> list:
    pick = random.Random(seed)
    script = []
    for _ in range(28):
        game = pick.randint(1, 3)
        who = pick.choice(PLAYERS)
        roll = pick.random()
        if roll < 0.45:
            text, keeper = f"bid {pick.randint(1, 13)}", False
        elif roll < 0.6:
            text, keeper = pick.choice(["AWAY 2d", "BACK", "NOTIFY DIGEST", "TELL ALL hi", "RESIGN", "hello?"]), False
        else:
            keeper = True
            text = pick.choice(
                [f"PAUSE {game}", f"RESUME {game}", f"EXTEND {game} 1d", f"PAUSE {game} for 2h", f"SAY {game} hi"]
            )
        delta = pick.choice([{"seconds": 1}] * 6 + [{"hours": 3}, {"days": 2}, {"days": 4}])

        def make(e, c, game=game, who=who, text=text, keeper=keeper, delta=delta):
            c.advance(**delta)
            return _keeper(e, c, text) if keeper else reply(e, who, text, game=game, received=c())

        script.append(make)
    return script


@pytest.mark.parametrize("seed", range(8))
def test_random_backlogs_end_alike_in_shared_transactions(config, clock, tmp_path, monkeypatch, seed):
    _assert_alike_with_a_commit_a_message(config, clock, tmp_path, monkeypatch, _random_script(seed))


# -- an address change confirmed, and the old and new reply addresses, in one transaction

NEW = "alice@example.net"


def _address_change_backlog(config, clock, box, monkeypatch, most) -> dict:
    monkeypatch.setattr(referee.runner, "MESSAGES_A_COMMIT", most)
    engine, runner = _engine(config, clock, box)
    engine.new_game("pure-skill", PLAYERS)
    mailbox = Mailbox(engine)
    asyncio.run(runner.once())
    old = token_address(engine.config.address, engine.table(1).seats[0]["token"])
    deliver(box, reply(engine, ALICE, f"ADDRESS {NEW}", received=clock()), clock())
    asyncio.run(runner.once())
    [offer] = [m for m in mailbox.to(NEW) if "Confirm your new address" in m["subject"]]
    new = token_address(engine.config.address, seat_token(engine.key, 1, 0, NEW, 1))
    thread = {"In-Reply-To": offer["message_id"], "References": offer["message_id"]}
    backlog = [
        make_mail(NEW, "bid 2", to=new, received=clock()),  # before the change: no seat's address yet
        make_mail(NEW, "", to=offer["reply_to"], headers=thread, subject=f"Re: {offer['subject']}", received=clock()),
        make_mail(ALICE, "bid 3", to=old, received=clock()),  # the old reply address no longer counts
        make_mail(NEW, "bid 9", to=new, received=clock()),  # the new one does
        reply(engine, BOB, "bid 4", received=clock()),
        make_mail(NEW, "bid 8", to=old, received=clock()),
    ]
    for raw in backlog:
        clock.advance(seconds=1)
        deliver(box, raw, clock())
    asyncio.run(runner.once())
    return _outcome(engine)


def test_an_address_change_and_the_mail_after_it_in_one_transaction_end_as_with_a_commit_each(
    config, clock, tmp_path, monkeypatch
):
    results = []
    for most in (1, 20):
        box = tmp_path / f"box{most}"
        for sub in ("new", "cur", "tmp"):
            (box / sub).mkdir(parents=True)
        run_config = replace(config, database=tmp_path / f"games{most}.db")
        results.append(_address_change_backlog(run_config, type(clock)(clock()), box, monkeypatch, most))
    one, shared = results
    assert [code for _, code, _ in one["codes"][-6:]] == ["refused", "done", "refused", "move", "move", "refused"]
    for key in one:
        assert shared[key] == one[key], key
