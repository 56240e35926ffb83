"""The sending process (smtp._Wire): mail goes out from a process of its
own, forked for each drain.  What a keeper could meet: a stop sent to the
whole process group (a terminal's Ctrl-C, a service manager's SIGTERM), the
referee killed, the sending process killed alone.  None may lose a mail, and
none may leave a sender behind."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_review36_time import _children, _senders, _setup
from test_review36_time import children_before as _children_before
from test_review36_time import maildir as _maildir
from test_review36_time import picky as _picky

from referee.mail import smtp
from referee.runner import cancel_and_wait

maildir, picky, children_before = _maildir, _picky, _children_before  # the fixtures (the last: of every test)


def _wait(condition, seconds: float = 10.0) -> None:
    ends = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < ends, "waited too long"
        time.sleep(0.01)


@pytest.fixture
def interruptible() -> Iterator[None]:
    """SIGINT as a terminal's process has it (Python's KeyboardInterrupt):
    a shell's background job, as CI's may be, starts with it ignored, and
    a fork keeps that."""
    was = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, was)


def _held(server) -> bool:
    return server.holding.is_set()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_sent_to_the_whole_group_does_not_cut_the_mail_in_hand(
    config,
    clock,
    maildir,
    picky,
    monkeypatch,
    stop,
    interruptible,
):
    """A service manager sends SIGTERM (a terminal Ctrl-C's SIGINT) to every
    process of the referee's group: the sending process leaves the stop to
    the referee, so the mail the server holds is taken and marked sent,
    and the batch goes on."""
    monkeypatch.setattr(smtp, "SEND_BATCH", 20)
    server, port = picky
    engine, runner = _setup(config, clock, maildir, port)
    queued = engine.store.outbox("queued")
    server.plan = {2: "hold"}

    async def go() -> smtp.Drained:
        task = asyncio.ensure_future(runner.sender.drain())
        while not server.holding.is_set():
            await asyncio.sleep(0.01)
        (sender,) = _senders()
        os.kill(int(sender), stop)
        await asyncio.sleep(0.2)  # (time for a stop to kill it, had it not been ignored)
        server.release.set()
        return await task

    drained = asyncio.run(go())
    rows = engine.store.outbox(None)
    assert drained.sent == len(queued)
    assert all(row["state"] == "sent" for row in rows)
    assert sorted(server.taken) == sorted(row["message_id"] for row in rows)  # each once
    assert not _senders()


def test_a_sending_process_killed_mid_batch_costs_no_mail(config, clock, maildir, picky, monkeypatch):
    """The sending process killed alone (the kernel's OOM killer, a keeper's
    kill) while the server holds its third mail: the drain says the server
    is unreachable, marks the two it reported sent, and the next drain
    sends the rest: none is lost, and none goes twice but the mail in hand
    (a server that took it as the connection went)."""
    monkeypatch.setattr(smtp, "SEND_BATCH", 4)
    server, port = picky
    engine, runner = _setup(config, clock, maildir, port)
    queued = engine.store.outbox("queued")
    assert len(queued) > 4
    server.plan = {3: "hold"}

    async def go() -> None:
        task = asyncio.ensure_future(runner.sender.drain())
        while not server.holding.is_set():
            await asyncio.sleep(0.01)
        (sender,) = _senders()
        os.kill(int(sender), signal.SIGKILL)
        with pytest.raises(smtp.SmtpUnreachable, match="ended unexpectedly"):
            await task
        server.release.set()

    asyncio.run(go())
    assert not _senders()
    rows = {row["id"]: row for row in engine.store.outbox(None)}
    assert [rows[row["id"]]["state"] for row in queued[:4]] == ["sent", "sent", "queued", "queued"]
    asyncio.run(runner.sender.drain())
    rows = {row["id"]: row for row in engine.store.outbox(None)}
    assert all(row["state"] == "sent" for row in rows.values())
    taken = [m for m in server.taken if m]
    assert set(taken) == {row["message_id"] for row in rows.values()}
    assert {m for m in taken if taken.count(m) > 1} <= {queued[2]["message_id"]}  # (if the server kept it)


_DRAIN = """
import asyncio, sys
from datetime import UTC, datetime
from referee.config import Server
from referee.mail.smtp import SmtpSender
from referee.store import Store

store = Store(sys.argv[1])
server = Server(host="127.0.0.1", port=int(sys.argv[2]), security="none")
asyncio.run(SmtpSender(server, "referee@example.org", store, lambda: datetime(2100, 1, 1, tzinfo=UTC)).drain())
"""


def test_the_sending_process_does_not_outlive_a_referee_killed(config, clock, maildir, picky, tmp_path):
    """kill -9 of the referee while the server holds a mail: its sending
    process ends with it, and sends nothing more (the next run sends what
    was not marked; a sender left behind would send it too, and hold the
    run lock)."""
    server, port = picky
    engine, _ = _setup(config, clock, maildir, port)
    queued = engine.store.outbox("queued")
    engine.store.sync(always=True)  # (the queued mail is committed: the referee below reads it)
    server.plan = {1: "hold"}
    code = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [code, os.environ.get("PYTHONPATH")]))}
    referee = subprocess.Popen([sys.executable, "-c", _DRAIN, str(config.database), str(port)], env=env)
    try:
        _wait(lambda: _held(server) or referee.poll() is not None)
        assert referee.poll() is None, "the drain ended before the server held its first mail"
        (sender,) = _children(referee.pid)
        referee.kill()
        referee.wait()
        _wait(lambda: _ended(sender), seconds=5)
    finally:
        referee.kill()
        server.release.set()
    time.sleep(0.2)
    assert len(server.taken) <= 1  # the mail held, and none begun after
    assert len(queued) > 1


def _ended(pid: str) -> bool:
    """Whether a process is gone, or dead and not yet reaped by whoever adopted it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def test_a_sending_process_lost_between_batches_ends_the_drain_and_costs_no_mail(
    config, clock, maildir, picky, monkeypatch
):
    """The sending process dies while it waits for its next batch (the
    reading has not filled one yet): the next batch finds it gone, and the
    drain says the server is unreachable instead of waiting for it for
    ever; the mail stays queued for the next drain."""
    server, port = picky
    engine, runner = _setup(config, clock, maildir, port)
    queued = engine.store.outbox("queued")
    monkeypatch.setattr(smtp, "SEND_BATCH", len(queued) - 1)  # a full batch, then one mail waits for the reading

    async def go() -> None:
        feed = smtp.Feed()
        task = asyncio.ensure_future(runner.sender.drain(feed))
        while len(engine.store.outbox("sent")) < len(queued) - 1:
            await asyncio.sleep(0.01)
        (sender,) = _senders()
        os.kill(int(sender), signal.SIGKILL)
        while not _ended(sender):
            await asyncio.sleep(0.01)
        feed.close()  # the reading is over: the last mail goes
        with pytest.raises(smtp.SmtpUnreachable, match="ended unexpectedly"):
            await asyncio.wait_for(task, 10)

    asyncio.run(go())
    assert not _senders()
    assert [row["state"] for row in engine.store.outbox(None)].count("queued") == 1
    asyncio.run(runner.sender.drain())
    rows = engine.store.outbox(None)
    assert all(row["state"] == "sent" for row in rows)
    assert sorted(server.taken) == sorted(row["message_id"] for row in rows)  # each once


def test_a_stop_that_waited_its_grace_ends_the_sending_process_at_once(config, clock, maildir, picky, monkeypatch):
    """A stop while the server holds a mail past STOP_GRACE: the drain ends
    soon after the grace (the sending process is ended, its connection and
    the mail in hand with it), that mail stays queued, and the next drain
    sends it."""
    monkeypatch.setattr(smtp, "STOP_GRACE", 0.2)
    server, port = picky
    engine, runner = _setup(config, clock, maildir, port)
    server.plan = {2: "hold"}

    async def go() -> float:
        task = asyncio.ensure_future(runner.sender.drain())
        while not server.holding.is_set():
            await asyncio.sleep(0.01)
        stopped = time.monotonic()
        await cancel_and_wait(task)
        return time.monotonic() - stopped

    took = asyncio.run(go())
    assert took < smtp.ENDING / 2  # not the held mail's time, nor the wait for a process that will not end
    assert not _senders()
    rows = engine.store.outbox(None)
    assert [row["state"] for row in rows].count("sent") == 1  # the first mail, taken before the hold
    server.release.set()
    asyncio.run(runner.sender.drain())
    rows = engine.store.outbox(None)
    assert all(row["state"] == "sent" for row in rows)
    assert {m for m in server.taken if m} == {row["message_id"] for row in rows}


async def _slow_to_end(sender, pipe) -> None:
    """A sending process (smtp._serve's stand-in, forked with the test's
    module) that says each mail sent, says its batch's end a while after
    the last one, and dies after the first mail of its second batch."""
    batches = 0
    while (message := pipe.recv())[0] == "give":
        batches += 1
        for index, _ in enumerate(message[1]):
            pipe.send(("mail", [(index, smtp.Said.SENT.value, "", 250)]))
            if batches == 2:
                os._exit(1)
        await asyncio.sleep(0.3)
        pipe.send(("ended", None))


def test_a_batch_is_given_only_once_the_one_before_has_ended(config, clock, maildir, picky, monkeypatch):
    """The reading wakes the drain between a batch's last mail and its end:
    the next batch waits for that end, which is the batch's own.  (Given
    at once, the late end was taken for the next batch's, and a process
    lost in that batch then left the drain waiting for ever.)"""
    _, port = picky
    engine, runner = _setup(config, clock, maildir, port)
    queued = engine.store.outbox("queued")
    monkeypatch.setattr(smtp, "SEND_BATCH", 2)
    monkeypatch.setattr(smtp, "_serve", _slow_to_end)  # (the forked process runs the module as patched)

    async def go() -> None:
        feed = smtp.Feed()
        task = asyncio.ensure_future(runner.sender.drain(feed))
        gives_up = time.monotonic() + 10
        while not task.done() and time.monotonic() < gives_up:
            feed.added()  # the reading, queueing mail as it goes
            await asyncio.sleep(0.02)
        assert task.done(), "the drain still waits"
        with pytest.raises(smtp.SmtpUnreachable, match="ended unexpectedly"):
            await task

    asyncio.run(go())
    assert not _senders()
    states = {row["id"]: row["state"] for row in engine.store.outbox(None)}
    assert [states[row["id"]] for row in queued[:4]] == ["sent", "sent", "sent", "queued"]
