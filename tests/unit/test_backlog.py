"""A backlog of any size in bounded memory (issue 37): the runner lists what
is waiting, reads, handles and files it a batch at a time, bounded in count
and in bytes, in the order the server received it; a mail over the size
limit is never read whole; a mail that cannot be read is quarantined once;
and a mail that ends every pass (runs it out of memory, or is killed in) is
read alone, then quarantined, and holds up the mail behind it for a few
passes at most."""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import sqlite3
import subprocess
import sys
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, body_of, make_mail, reply
from hypothesis import given
from hypothesis import strategies as st
from test_runner import deliver, make_runner
from test_runner import maildir as _maildir

from referee import runner as runner_module
from referee.cli import main
from referee.engine import KEPT_EXCERPT, KEPT_HEADER, Engine
from referee.interrupt import Stopped
from referee.mail.source import EXCERPT, Waiting
from referee.runner import BATCH_BYTES, BATCH_MAIL, GIVE_UP_ENDED, GIVE_UP_FAILED, IN_FLIGHT, batches

ALICE, BOB, CAROL = PLAYERS
MB = 2**20
maildir = _maildir  # the fixture
T0 = datetime(2026, 11, 21, 11, 0, tzinfo=UTC)


def waiting(sizes: list[int]) -> list[Waiting]:
    return [Waiting(ref=str(n), received_at=T0 + timedelta(seconds=n), size=size) for n, size in enumerate(sizes)]


def cost(message: Waiting, max_size: int) -> int:
    return EXCERPT if message.size > max_size else message.size


def test_batches_are_bounded_in_count_and_in_bytes():
    assert [len(b) for b in batches(waiting([1000] * 500), 5 * MB)] == [BATCH_MAIL, BATCH_MAIL, 100]
    assert [len(b) for b in batches(waiting([MB] * 20), 5 * MB)] == [8, 8, 4]  # BATCH_BYTES of 1 MB mails
    # A mail over the limit costs its excerpt: 100 of 50 MB are read 64 at a time.
    assert [len(b) for b in batches(waiting([50 * MB] * 100), 5 * MB)] == [64, 36]
    # A message larger than BATCH_BYTES (a limit raised to 16 MB) is read alone.
    assert [len(b) for b in batches(waiting([1000, 12 * MB, 1000]), 16 * MB)] == [1, 1, 1]


@given(
    sizes=st.lists(st.integers(0, 40 * MB), max_size=600),
    max_size=st.integers(64 * 1024, 20 * MB),
    alone=st.sets(st.integers(0, 600), max_size=5),
)
def test_batches_keep_the_order_and_hold_at_most_a_batchs_bytes(sizes, max_size, alone):
    messages = waiting(sizes)
    cut = list(batches(messages, max_size, {str(n) for n in alone}))
    assert [m for batch in cut for m in batch] == messages  # every one, in order
    for batch in cut:
        held = sum(min(cost(m, max_size), max_size + 1) for m in batch)
        assert len(batch) <= BATCH_MAIL and (held <= BATCH_BYTES or len(batch) == 1)
        assert len(batch) == 1 or not any(int(m.ref) in alone for m in batch)


def test_the_excerpt_holds_all_the_engine_keeps_of_an_oversized_mail():
    assert KEPT_HEADER + len(b"\r\n\r\n") + KEPT_EXCERPT <= EXCERPT


def watch(runner) -> tuple[list[list[str]], list[tuple[list[str], bool, bool]]]:
    """What the runner has its source read (refs, batch by batch) and file
    (refs, quarantine, whether games.db was flushed first)."""
    source, store = runner.source, runner.engine.store
    read_batches, filed = [], []
    read, done = source.read, source.done

    async def reading(messages, handled=False):
        read_batches.append([m.ref for m in messages])
        return await read(messages, handled)

    async def filing(messages, quarantine=False):
        if messages:
            filed.append(([m.ref for m in messages], quarantine, not store.unsynced))
        await done(messages, quarantine)

    source.read, source.done = reading, filing
    return read_batches, filed


def test_a_backlog_is_read_handled_and_filed_a_batch_at_a_time_in_the_order_received(
    config, clock, maildir, monkeypatch
):
    monkeypatch.setattr(runner_module, "BATCH_MAIL", 2)
    engine, runner = make_runner(config, clock, maildir)
    for _ in range(2):
        engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=1))
    asyncio.run(runner.once())
    start = clock()
    # Game 1: Alice bids, Bob bids, Alice changes her mind, Carol's bid ends
    # the round; delivered to the Maildir last first, read in the order received.
    mails = [(ALICE, "bid 7", 1), (BOB, "bid 3", 2), (ALICE, "bid 2", 3), (CAROL, "bid 5", 4)]
    for player, text, minute in reversed(mails):
        deliver(maildir, reply(engine, player, text, game=1), start + timedelta(minutes=minute))
    for player in PLAYERS:
        deliver(maildir, reply(engine, player, "bid 6", game=2), start + timedelta(minutes=5))
    clock.advance(minutes=10)
    read_batches, filed = watch(runner)
    report = asyncio.run(runner.once())
    assert report.received == 7 and [len(batch) for batch in read_batches] == [2, 2, 2, 1]
    assert [refs for refs, _, _ in filed] == read_batches  # each batch filed before the next is read
    assert all(flushed and not quarantine for _, quarantine, flushed in filed)
    assert [m["move"] for m in engine.store.moves(1, phase=1)] == ["bid 7", "bid 3", "bid 2", "bid 5"]
    assert engine.store.final_moves(1, 1)[0]["move"] == "bid 2"  # the change of mind counted, before the round ended
    assert engine.status(1)["phase"]["number"] == engine.status(2)["phase"]["number"] == 2
    assert os.listdir(maildir / "new") == [] and engine.store.get_meta(IN_FLIGHT) is None


def test_a_mail_over_the_limit_is_read_only_in_part_and_answered_with_its_size(config, clock, maildir):
    engine, runner = make_runner(config, clock, maildir, max_message_size=512 * 1024)
    engine.new_game("pure-skill", PLAYERS)
    asyncio.run(runner.once())
    raw = reply(engine, ALICE, "bid 7\n" + "a photo\n" * (3 * MB // 8), message_id="<big@example.net>")
    deliver(maildir, raw, clock())
    held = []
    read = runner.source.read

    async def reading(messages, handled=False):
        got = await read(messages, handled)
        held.extend((len(m.raw), m.size) for m in got.messages)
        return got

    runner.source.read = reading
    sent = len(engine.store.outbox())
    asyncio.run(runner.once())
    assert held == [(EXCERPT, len(raw))]  # never the whole 3 MB
    (notice,) = engine.store.outbox()[sent:]
    assert f"{len(raw) // 1024} KB" in body_of(notice["raw"]) and engine.store.moves(1) == []
    (row,) = [m for m in engine.store.messages() if m["key"] == "<big@example.net>"]
    assert row["code"] == "refused" and raw.startswith(row["raw"]) and len(row["raw"]) < 1024 + KEPT_EXCERPT
    assert len(os.listdir(maildir / ".processed" / "cur")) == 1


@pytest.mark.parametrize(
    ("end", "give_up"), [(MemoryError, GIVE_UP_FAILED), (KeyboardInterrupt, GIVE_UP_ENDED)], ids=["memory", "killed"]
)
def test_a_mail_that_ends_every_pass_is_read_alone_then_quarantined_and_blocks_nothing(
    end, give_up, config, clock, maildir
):
    """Pass 1 ends in a batch of five, on the third mail: out of memory (a
    MemoryError, which the pass sees: it files the two it finished), or
    killed (KeyboardInterrupt stands for a kill -9, which it does not).  The
    next passes read that batch one mail at a time and end on the same mail,
    alone, until it has ended ``give_up`` of them: then the next quarantines
    it unread, handles the rest, and ``referee status`` lists it."""
    engine, runner = make_runner(config, clock, maildir)
    for _ in range(5):
        engine.new_game("pure-skill", PLAYERS)
    asyncio.run(runner.once())
    for game in range(1, 6):
        text = "bid 9\npoison" if game == 3 else "bid 9"
        deliver(maildir, reply(engine, ALICE, text, game=game), clock() + timedelta(seconds=game))
    clock.advance(minutes=1)
    ingest = engine.ingest
    poisoned = []

    def ending(raw, **kwargs):
        if b"poison" in raw:
            poisoned.append(1)
            raise end
        return ingest(raw, **kwargs)

    engine.ingest = ending
    read_batches, filed = watch(runner)
    with pytest.raises(end):
        asyncio.run(runner.once())
    (batch,) = read_batches
    assert len(batch) == 5 and engine.store.get_meta(IN_FLIGHT)
    assert filed == ([(batch[:2], False, True)] if end is MemoryError else [])  # only a pass that saw it files
    if end is MemoryError:
        assert "the last pass failed: the pass ran out of memory" in status_problems(engine)
    for _ in range(give_up):
        with pytest.raises(end):
            asyncio.run(runner.once())
        assert read_batches[-1] == [batch[2]]  # alone
    report = asyncio.run(runner.once())
    assert len(poisoned) == 1 + give_up and report.received == 3
    assert filed[-2:] == [([batch[2]], True, True), (batch[3:], False, True)]
    assert [len(engine.store.moves(game)) for game in range(1, 6)] == [1, 1, 0, 1, 1]
    assert os.listdir(maildir / "new") == [] and len(os.listdir(maildir / ".quarantine" / "cur")) == 1
    assert engine.store.get_meta(IN_FLIGHT) is None
    (failed,) = engine.store.failed_messages()
    assert failed["key"] == f"unread:{runner.source.name}:{batch[2]}"
    assert "quarantined" in status_problems(engine)


def status_problems(engine) -> str:
    return " ".join(engine.health()["problems"])


def test_a_stop_in_a_batch_is_no_mails_fault(config, clock, maildir):
    engine, runner = make_runner(config, clock, maildir)
    engine.new_game("pure-skill", PLAYERS)
    asyncio.run(runner.once())
    for n, player in enumerate(PLAYERS):
        deliver(maildir, reply(engine, player, "bid 5"), clock() + timedelta(seconds=n))
    ingest = engine.ingest
    calls = []

    def stopped_at_the_second(raw, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise Stopped("stopping")
        return ingest(raw, **kwargs)

    engine.ingest = stopped_at_the_second
    with pytest.raises(Stopped):
        asyncio.run(runner.once())
    assert engine.store.get_meta(IN_FLIGHT) is None  # no mail is suspected for it
    read_batches, _ = watch(runner)
    assert asyncio.run(runner.once()).received == 3 and len(read_batches) == 1  # one batch, as usual
    assert len(engine.store.moves(1)) == 3


def test_a_mail_that_cannot_be_read_is_quarantined_once_and_the_rest_handled(config, clock, maildir):
    engine, runner = make_runner(config, clock, maildir)
    engine.new_game("pure-skill", PLAYERS)
    asyncio.run(runner.once())
    for n, player in enumerate(PLAYERS):
        deliver(maildir, reply(engine, player, "bid 5"), clock() + timedelta(seconds=n))
    [bobs] = [name for name in os.listdir(maildir / "new") if b"bob@" in (maildir / "new" / name).read_bytes()]
    read = runner.source._read

    def failing(message, path):
        if message.ref == bobs:
            raise OSError(5, "Input/output error")
        return read(message, path)

    runner.source._read = failing
    assert asyncio.run(runner.once()).received == 3
    assert [m["seat"] for m in engine.store.moves(1)] == [0, 2]
    assert os.listdir(maildir / ".quarantine" / "cur") == [bobs + ":2,S"]
    (failed,) = engine.store.failed_messages()
    assert failed["key"] == f"unread:{runner.source.name}:{bobs}" and failed["detail"] == "could not be read"
    assert asyncio.run(runner.once()).received == 0


def test_a_pass_out_of_memory_is_one_line_status_1_and_noted_for_status(tmp_path, maildir, monkeypatch, capsys):
    deliver(maildir, make_mail("s@elsewhere.example.com", "help", subject="hello"), datetime.now(UTC))
    cfg = tmp_path / "referee.toml"
    cfg.write_text(
        f'[referee]\naddress = "referee@example.org"\ndatabase = "{tmp_path / "games.db"}"\n'
        f'[maildir]\npath = "{maildir}"\n'
    )

    def running_out(self, raw, received_at=None, size=None):
        raise MemoryError

    monkeypatch.setattr(Engine, "ingest", running_out)
    assert main(["--config", str(cfg), "run", "--once"]) == 1
    err = capsys.readouterr().err
    assert err == "referee: the pass ran out of memory: what it finished is filed; the next pass goes on\n"
    assert main(["--config", str(cfg), "status"]) == 0
    assert "the last pass failed: the pass ran out of memory" in capsys.readouterr().out


def test_the_daemon_logs_a_pass_out_of_memory_as_an_error_and_waits_it_out(config, clock, maildir, caplog):
    engine, runner = make_runner(config, clock, maildir)
    engine.new_game("pure-skill", PLAYERS)
    asyncio.run(runner.once())
    deliver(maildir, reply(engine, ALICE, "bid 7"), clock())
    ingest, tries = engine.ingest, []

    def out_of_memory_once(raw, **kwargs):
        tries.append(1)
        if len(tries) == 1:
            raise MemoryError
        return ingest(raw, **kwargs)

    engine.ingest = out_of_memory_once

    async def serve_until_logged() -> None:
        stop = asyncio.Event()
        handler = logging.Handler(logging.ERROR)
        handler.emit = lambda record: stop.set()  # type: ignore[method-assign]
        logging.getLogger("referee").addHandler(handler)
        try:
            await asyncio.wait_for(runner.serve(stop), 10)  # the daemon did not die of it
        finally:
            logging.getLogger("referee").removeHandler(handler)

    asyncio.run(serve_until_logged())
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.getMessage() == (
        "the pass ran out of memory: what it finished is filed; the next pass goes on; trying again in 1 s"
    )
    assert asyncio.run(runner.once()).received == 1 and len(engine.store.moves(1)) == 1


# -- under an address-space limit -------------------------------------------------

LIMIT = 200 * MB  # RLIMIT_AS of the run: a python with the referee loaded takes about 60 MB of it


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def test_a_backlog_larger_than_the_address_space_is_all_handled_in_one_run(tmp_path, maildir):
    """`referee run --once` with 200 MB of address space and 338 MB of mail
    waiting: 58 mails of 1 MB (under max_message_size: read and handled
    whole, 8 at a time) and 28 of 10 MB (over it: read in part).  Before
    issue 37 it read the whole backlog first, and died of MemoryError
    before it had filed a thing, every run."""
    start = datetime.now(UTC) - timedelta(hours=1)
    line = ("a long line " * 82 + "\r\n").encode()  # long lines: the least work to read a MB
    for n in range(86):
        body = ("help\r\n" + (line * (MB // len(line)) * (10 if n % 3 == 2 else 1)).decode()).rstrip()
        deliver(maildir, make_mail(f"s{n}@elsewhere.example.com", body, subject="hello"), start + timedelta(seconds=n))
    database = tmp_path / "games.db"
    cfg = tmp_path / "referee.toml"
    cfg.write_text(
        f'[referee]\naddress = "referee@example.org"\ndatabase = "{database}"\n[maildir]\npath = "{maildir}"\n'
    )
    run = subprocess.run(
        [sys.executable, "-m", "referee", "--config", str(cfg), "run", "--once"],
        capture_output=True,
        text=True,
        preexec_fn=limited,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(runner_module.__file__).parents[1])},
    )
    assert run.returncode == 0, run.stderr[-6000:]
    assert "received 86," in run.stdout
    assert os.listdir(maildir / "new") == [] and len(os.listdir(maildir / ".processed" / "cur")) == 86
    with closing(sqlite3.connect(database)) as db:
        assert db.execute("select count(*), count(distinct key) from messages").fetchone() == (86, 86)
