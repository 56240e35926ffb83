"""Mail goes out while a backlog is read, and its sent marks are batched:
a real SMTP server (aiosmtpd) on loopback, a real Maildir, the fake clock."""

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest
from aiosmtpd.controller import Controller
from conftest import PLAYERS, reply
from test_runner import deliver, make_runner
from test_runner import maildir as _maildir
from test_sql36_batch import traced

from referee.config import Server
from referee.mail import smtp

maildir = _maildir  # the fixture

ALICE = PLAYERS[0]
WAIT = 30  # seconds a test waits for the server at most: it fails if the mail never comes


class Sink:
    """An SMTP server that takes every mail and records, in order, each it took."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.took_one = threading.Event()

    async def handle_DATA(self, server, session, envelope) -> str:
        self.events.append("taken")
        self.took_one.set()
        return "250 OK"


@contextmanager
def smtp_server(handler: object) -> Iterator[int]:
    """An aiosmtpd server on a free loopback port, answering with ``handler``: its port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(handler, hostname="127.0.0.1", port=port, ready_timeout=10)
    controller.start()
    try:
        yield port
    finally:
        controller.stop()


@pytest.fixture
def sink() -> Iterator[tuple[Sink, int]]:
    handler = Sink()
    with smtp_server(handler) as port:
        yield handler, port


def test_a_backlogs_first_receipts_reach_the_server_while_its_last_message_is_being_read(
    config, clock, maildir, sink, monkeypatch
):
    """The runner's thread does not yield while it reads a message: the
    receipts of the first two bids (a full batch, here of two) reach the
    SMTP server while the third is being read (its reading waits for one
    here), so sending keeps pace with reading rather than following it."""
    monkeypatch.setattr(smtp, "SEND_BATCH", 2)
    server, port = sink
    config = replace(config, smtp=Server(host="127.0.0.1", port=port, security="none"))
    engine, runner = make_runner(config, clock, maildir)
    for _ in range(3):
        engine.new_game("pure-skill", PLAYERS)
    asyncio.run(runner.once())  # the start mails and prompts
    for game in (1, 2, 3):
        deliver(maildir, reply(engine, ALICE, "bid 7", game=game), clock())
    server.events.clear()
    server.took_one.clear()
    ingest, reads = engine.ingest, []

    def reading(raw, **kwargs):
        reads.append(raw)
        if len(reads) == 3:  # the last: the server takes a receipt meanwhile, or never
            server.took_one.wait(WAIT)
        outcome = ingest(raw, **kwargs)
        server.events.append("read")
        return outcome

    engine.ingest = reading
    report = asyncio.run(runner.once())
    assert report.received == 3 and report.mail.sent == len([e for e in server.events if e == "taken"])
    last_read = len(server.events) - 1 - server.events[::-1].index("read")
    assert server.events.index("taken") < last_read  # a receipt taken before the last message was read
    assert not engine.store.outbox("queued")


def test_the_mails_sent_in_one_go_are_marked_sent_by_one_statement(config, clock, maildir, sink):
    """The sender marks the mails it sent together, one UPDATE for a batch
    (SEND_BATCH mails at most), not one per mail."""
    _server, port = sink
    config = replace(config, smtp=Server(host="127.0.0.1", port=port, security="none"))
    engine, runner = make_runner(config, clock, maildir)
    for _ in range(3):
        engine.new_game("pure-skill", PLAYERS)
    queued = len(engine.store.outbox("queued"))
    assert 1 < queued <= smtp.SEND_BATCH
    with traced(engine.store) as statements:
        drained = asyncio.run(runner.sender.drain())
    assert drained.sent == queued and not engine.store.outbox("queued")
    marks = [sql for sql in statements if sql.startswith("update outbox set state")]
    assert len(marks) == 1


def test_a_long_queue_goes_in_batches_each_marked_once(config, clock, maildir, sink, monkeypatch):
    """However many mails wait, at most SEND_BATCH are sent and not yet
    marked: a crash sends again that many at most."""
    monkeypatch.setattr(smtp, "SEND_BATCH", 4)
    _server, port = sink
    config = replace(config, smtp=Server(host="127.0.0.1", port=port, security="none"))
    engine, runner = make_runner(config, clock, maildir)
    for _ in range(3):
        engine.new_game("pure-skill", PLAYERS)
    queued = len(engine.store.outbox("queued"))
    with traced(engine.store) as statements:
        drained = asyncio.run(runner.sender.drain())
    assert drained.sent == queued
    marks = [sql for sql in statements if sql.startswith("update outbox set state")]
    assert len(marks) == -(-queued // 4)
