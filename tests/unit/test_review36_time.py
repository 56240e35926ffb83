"""Review of issue 36 (rv-time): the sender's thread and batches, what
tick/next_due read, and start-up without quick_check."""

import asyncio
import dataclasses
import importlib.util
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock, reply, send
from test_runner import deliver, make_runner
from test_runner import maildir as _maildir
from test_send36_overlap import smtp_server

from referee.cli import main
from referee.config import Server
from referee.engine import Engine
from referee.mail import smtp
from referee.runner import cancel_and_wait
from referee.store import GameState, Notify, Store

maildir = _maildir  # the fixture


class Picky:
    """An SMTP server that answers each mail by its order: ``plan`` maps the
    n-th DATA (from 1) to a reply ('250', '451 ...', '554 ...', 'drop', or 'hold')."""

    def __init__(self) -> None:
        self.plan: dict[int, str] = {}
        self.n = 0
        self.taken: list[str] = []
        self.holding = threading.Event()
        self.release = threading.Event()

    async def handle_DATA(self, server, session, envelope) -> str:
        self.n += 1
        said = self.plan.get(self.n, "250 OK")
        if said == "drop":
            server.transport.close()  # the connection goes, mid-transaction
            return "421 bye"
        if said == "hold":
            self.holding.set()
            while not self.release.is_set():
                await asyncio.sleep(0.01)
            said = "250 OK"
        if said.startswith("250"):
            msgid = next(
                (
                    line.split(":", 1)[1].strip()
                    for line in envelope.content.decode().splitlines()
                    if line.lower().startswith("message-id:")
                ),
                "",
            )
            self.taken.append(msgid)
        return said


@pytest.fixture
def picky() -> Iterator[tuple[Picky, int]]:
    handler = Picky()
    with smtp_server(handler) as port:
        try:
            yield handler, port
        finally:
            handler.release.set()  # (a mail held back must not keep the server from stopping)


def _setup(config, clock, maildir, port, games=3):
    config = replace(config, smtp=Server(host="127.0.0.1", port=port, security="none"))
    engine, runner = make_runner(config, clock, maildir)
    for _ in range(games):
        engine.new_game("pure-skill", PLAYERS)
    return engine, runner


_BEFORE: set[str] = set()  # this process's children as the test began


@pytest.fixture(autouse=True)
def children_before() -> None:
    _BEFORE.clear()
    _BEFORE.update(_children())


def _senders() -> list[str]:
    """This process's children started since the test began, running or
    ended and not waited for: a sending process (smtp._Wire) left behind
    after its drain ended would be one.  (Those of earlier tests, such as
    Dovecot's, are not the test's.)"""
    return [pid for pid in _children() if pid not in _BEFORE]


def _children(pid: int | str = "self") -> list[str]:
    """A process's children (this one's by default), by the kernel's list of each of its threads'."""
    found: list[str] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with suppress(FileNotFoundError):  # (a thread that ended meanwhile: a server's, say)
            found += (task / "children").read_text().split()
    return found


@pytest.mark.parametrize("size", [1, 4, 20])
def test_refused_and_deferred_mails_mid_batch_are_marked_each_as_the_server_said(
    config, clock, maildir, picky, monkeypatch, size
):
    monkeypatch.setattr(smtp, "SEND_BATCH", size)
    server, port = picky
    engine, runner = _setup(config, clock, maildir, port)
    queued = engine.store.outbox("queued")
    assert len(queued) >= 6
    server.plan = {2: "451 try later", 5: "554 no such user"}
    drained = asyncio.run(runner.sender.drain())
    rows = {row["id"]: row for row in engine.store.outbox(None)}
    ids = [row["id"] for row in queued]
    assert rows[ids[1]]["state"] == "queued" and rows[ids[1]]["attempts"] == 1
    assert rows[ids[4]]["state"] == "failed"
    others = [i for n, i in enumerate(ids) if n not in (1, 4)]
    assert all(rows[i]["state"] == "sent" for i in others)
    assert sorted(server.taken) == sorted(rows[i]["message_id"] for i in others)
    assert (drained.sent, drained.deferred, drained.failed) == (len(others), 1, 1)
    assert not _senders()


@pytest.mark.parametrize("size", [1, 4, 20])
def test_a_server_dropping_mid_batch_leaves_the_rest_queued_and_the_taken_ones_marked(
    config, clock, maildir, picky, monkeypatch, size
):
    monkeypatch.setattr(smtp, "SEND_BATCH", size)
    server, port = picky
    engine, runner = _setup(config, clock, maildir, port)
    queued = engine.store.outbox("queued")
    server.plan = {3: "drop"}
    with pytest.raises(smtp.SmtpUnreachable):
        asyncio.run(runner.sender.drain())
    rows = {row["id"]: row for row in engine.store.outbox(None)}
    ids = [row["id"] for row in queued]
    assert [rows[i]["state"] for i in ids[:2]] == ["sent", "sent"]
    assert rows[ids[2]]["state"] == "queued" and rows[ids[2]]["attempts"] == 1
    assert all(rows[i]["state"] == "queued" and rows[i]["attempts"] == 0 for i in ids[3:])
    assert not _senders()


@pytest.mark.parametrize("size", [1, 4, 20])
def test_a_stop_mid_batch_marks_what_was_taken_and_ends_the_thread(config, clock, maildir, picky, monkeypatch, size):
    monkeypatch.setattr(smtp, "SEND_BATCH", size)
    server, port = picky
    engine, runner = _setup(config, clock, maildir, port)
    queued = engine.store.outbox("queued")
    server.plan = {3: "hold"}

    async def go() -> None:
        task = asyncio.ensure_future(runner.sender.drain())
        while not server.holding.is_set():
            await asyncio.sleep(0.01)

        async def later() -> None:
            await asyncio.sleep(0.3)
            server.release.set()

        releasing = asyncio.ensure_future(later())
        await cancel_and_wait(task)
        await releasing

    asyncio.run(go())
    rows = {row["id"]: row for row in engine.store.outbox(None)}
    ids = [row["id"] for row in queued]
    assert [rows[i]["state"] for i in ids[:3]] == ["sent"] * 3
    assert all(rows[i]["state"] == "queued" for i in ids[3:])
    assert sorted(server.taken) == sorted(rows[i]["message_id"] for i in ids[:3])
    assert not _senders()


# -- tick and next_due against 9688ff8's, which read every open phase --------


def _old_timers_class():
    """9688ff8's Timers (every open phase read), for comparison."""

    here = Path(__file__).resolve().parents[2]
    source = subprocess.run(
        ["git", "-C", str(here), "show", "9688ff8:referee/engine/timers.py"], capture_output=True, text=True, check=True
    ).stdout
    spec = importlib.util.spec_from_loader("old_timers_9688ff8", loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_timers_9688ff8"] = module
    exec(compile(source, "old_timers.py", "exec"), module.__dict__)
    return module.Timers


def _old(engine):
    """``engine`` with 9688ff8's Timers, and its reads of every running game and seat for digests."""
    new = engine.timers
    fields = {f.name: getattr(new, f.name) for f in dataclasses.fields(new)}
    engine.timers = _old_timers_class()(**fields)
    store = engine.store
    store.games_read_by_digest = lambda *_: store.games(GameState.RUNNING)
    store.digest_seats = lambda default: store._read(OLD_DIGEST_SEATS, [GameState.RUNNING, default, Notify.DIGEST])
    return engine


OLD_DIGEST_SEATS = """select s.game_id, s.seat, coalesce(t.through, 0) as through, t.digest_at, g.created_at,
                    (select p.resolved_at from phases p where p.game_id = s.game_id
                     and p.number = coalesce(t.through, 0) + 1) as untold_at
             from seats s join games g on g.id = s.game_id
             left join told t on t.game_id = s.game_id and t.seat = s.seat
             where g.state = ? and s.bot = 0 and s.address is not null
             and coalesce(s.notify, g.notify, ?) = ?
             order by s.game_id, s.seat"""


def _twins(tmp_path, config, seeds, **changes):
    out = []
    for name in ("new", "old"):
        (tmp_path / name).mkdir()
        c = replace(config, database=tmp_path / name / "games.db", **changes)
        clock = FakeClock()
        out.append((Engine(Store(c.database), c, clock, seeds), clock))
    _old(out[1][0])
    return out


def _mail(engine):
    return [(m["recipients"], m["subject"]) for m in engine.store.outbox(None)]


def test_tick_and_next_due_do_as_9688ff8_did_with_many_games_only_some_due(tmp_path, config, seeds):
    seeds.fixed = bytes(range(64))
    twins = _twins(
        tmp_path,
        config,
        seeds,
        reminder=timedelta(hours=20),
        outage_gap=timedelta(hours=6),
        outage_grace=timedelta(hours=12),
        settle=timedelta(minutes=30),
    )
    lengths = [1, 3, 30, 50, 72, 100, 7, 44, 90, 26]
    for engine, _clock in twins:
        for hours in lengths:
            engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=hours))
        engine.tick()
    log: list[list] = [[], []]

    def step(hours: float, act=None) -> None:
        for n, (engine, clock) in enumerate(twins):
            clock.advance(hours=hours)
            if act:
                act(engine, clock)
            log[n].append(sorted(engine.tick()))
            log[n].append(min(engine.next_due(), default=None))
        assert log[0] == log[1]

    def everyone_moves(game):
        def act(engine, clock):
            for who in PLAYERS:
                send(engine, clock, who, "bid 3", game=game)

        return act

    def pause(game, until_hours=None):
        def act(engine, clock):
            until = clock() + timedelta(hours=until_hours) if until_hours else None
            engine.pause(game, "keeper@example.org", "a break", until=until)

        return act

    step(0.5, everyone_moves(4))  # a settle window opens in game 4
    step(0.2, pause(5, until_hours=30))
    step(0.1, pause(6))
    for _ in range(30):
        step(1)
    step(0.5, everyone_moves(8))
    for _ in range(10):
        step(1)
    step(9)  # an outage: deadlines slept through
    for _ in range(60):
        step(2)
    step(0, lambda engine, clock: engine.resume(6, "keeper@example.org"))
    for _ in range(40):
        step(3)
    assert _mail(twins[0][0]) == _mail(twins[1][0])


@pytest.mark.parametrize("lists_digest,club", [(False, False), (True, False), (True, True), (False, True)])
def test_digests_go_as_9688ff8_sent_them_to_seats_lists_and_observers_at_digest(
    tmp_path, config, seeds, lists_digest, club
):

    seeds.fixed = bytes(range(64))
    twins = _twins(
        tmp_path,
        config,
        seeds,
        announce_notify=Notify.DIGEST if lists_digest else Notify.TURNS,
        notify=Notify.DIGEST if club else config.notify,
        announce_to=("club@example.org",) if club else (),
    )
    for engine, _clock in twins:
        engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=5))  # 1: alice at DIGEST (her own)
        engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=7), notify=Notify.DIGEST)  # 2: the game's
        engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=3), announce_to=["list@example.org"])  # 3
        engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=4))  # 4: an observer at DIGEST
        engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=6))  # 5: an observer at the default
        engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=2))  # 6: nothing at DIGEST
        engine.store.set_notify(1, 0, Notify.DIGEST)
        engine.store.add_watcher(4, "dan@example.org", Notify.DIGEST, engine.store.game(4)["created_at"], "tok4")
        engine.store.add_watcher(5, "eve@example.org", None, engine.store.game(5)["created_at"], "tok5")
        engine.tick()
    log: list[list] = [[], []]
    for _ in range(24 * 5):
        for n, (engine, clock) in enumerate(twins):
            clock.advance(hours=1)
            log[n].append(sorted(engine.tick()))
            log[n].append(min(engine.next_due(), default=None))
            log[n].append(sorted(engine.next_due(g) for g in range(1, 7)))
        assert log[0] == log[1]
    assert _mail(twins[0][0]) == _mail(twins[1][0])


# -- start-up without quick_check: a damaged games.db ------------------------


def _damage(engine, config, table: str) -> None:
    """A hundred bytes overwritten on the first page of ``table``'s b-tree (one no pass reads)."""
    engine.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    root = engine.store.db.execute("select rootpage from sqlite_master where name = ?", [table]).fetchone()[0]
    engine.store.db.conn.close()
    data = bytearray(config.database.read_bytes())
    at = (root - 1) * 4096
    data[at : at + 100] = b"\x99" * 100
    config.database.write_bytes(bytes(data))


def _cli(tmp_path, database) -> str:
    cfg = tmp_path / "referee.toml"
    cfg.write_text(f'[referee]\naddress = "referee@example.org"\ndatabase = "{database}"\n')
    return str(cfg)


def test_a_backup_of_a_damaged_games_db_says_games_db_is_damaged_not_the_copy(engine, config, tmp_path, capsys):
    """Before 1234ecb every start checked games.db, so `referee backup` of a
    damaged one said so (exit 3, games.db named).  Now the damage is met while
    copying: the keeper must still be told that games.db is the damaged file,
    not that the backup could not be written or that the copy is damaged."""
    for _ in range(3):
        engine.new_game("pure-skill", PLAYERS)
    _damage(engine, config, "results")
    cfg = _cli(tmp_path, config.database)
    target = tmp_path / "backup.db"
    assert main(["--config", cfg, "backup", str(target)]) == 3
    err = capsys.readouterr().err
    assert f"{config.database}: " in err and "damaged" in err and "restore the newest backup" in err
    assert str(target) not in err and not target.exists()


def test_referee_check_of_a_games_db_that_is_not_there_says_so_and_makes_none(tmp_path, capsys):
    """A config naming the wrong games.db (a typo, another folder): `referee
    check` must not make an empty one there and report it undamaged."""
    missing = tmp_path / "elsewhere" / "games.db"
    missing.parent.mkdir()
    assert main(["--config", _cli(tmp_path, missing), "check"]) == 2
    assert "no damage found" not in capsys.readouterr().out
    assert not missing.exists()


@pytest.mark.parametrize("drop_at", [1, 3, 7])
def test_a_pass_whose_server_drops_mid_backlog_loses_and_doubles_no_mail(
    config, clock, maildir, picky, monkeypatch, drop_at
):
    """Through the runner: a backlog read while the server drops the
    connection at the ``drop_at``-th mail; the pass says so, every message
    is handled, and the next passes send each mail the server did not take,
    once, and none it took again."""
    monkeypatch.setattr(smtp, "SEND_BATCH", 2)
    server, port = picky
    engine, runner = _setup(config, clock, maildir, port)
    asyncio.run(runner.once())  # the start mails and prompts
    before = len(server.taken)
    for game in (1, 2, 3):
        for who in PLAYERS:
            deliver(maildir, reply(engine, who, "bid 4", game=game), clock())
    server.plan = {before + drop_at: "drop"}
    with pytest.raises(smtp.SmtpUnreachable):
        asyncio.run(runner.once())
    assert not list((maildir / "new").iterdir())  # every message handled
    assert not _senders()
    for _ in range(3):
        clock.advance(minutes=5)
        asyncio.run(runner.once())
    rows = engine.store.outbox(None)
    assert all(row["state"] == "sent" for row in rows)
    assert sorted(server.taken) == sorted(row["message_id"] for row in rows)  # each once
    assert not _senders()
