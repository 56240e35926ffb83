"""Sending keeps pace with reading: while a backlog is read, the reading
waits for the wire once it is a whole batch ahead (smtp.Feed.ahead), so a
slow mail server gets the mail as the moves come, not after the last; and
a server that goes away meanwhile never leaves the reading waiting.  A real
SMTP server (aiosmtpd) on loopback, a real Maildir, the fake clock."""

import asyncio
from dataclasses import replace

import pytest
from conftest import PLAYERS, reply
from test_runner import deliver, make_runner
from test_runner import maildir as _maildir
from test_send36_overlap import smtp_server

from referee.config import Server
from referee.mail import smtp

maildir = _maildir  # the fixture

ALICE = PLAYERS[0]
GAMES = 12
BATCH = 2  # smtp.SEND_BATCH here: small, so that a dozen receipts are many batches
WAIT = 60  # seconds a pass may take at most: it fails if the reading waits for good


class SlowSink:
    """An SMTP server that takes a mail in ``delay`` seconds (as one that
    delivers each as it takes it), recording in order each mail it took;
    with ``drop_after``, it closes the connection as it is given the mail
    after that many."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.delay = 0.0
        self.drop_after: int | None = None

    async def handle_DATA(self, server, session, envelope) -> str:
        if self.drop_after is not None and self.events.count("taken") >= self.drop_after:
            server.transport.close()
            return "421 going away"
        await asyncio.sleep(self.delay)
        self.events.append("taken")
        return "250 OK"


def backlog(config, clock, maildir, sink: SlowSink, port: int, monkeypatch):
    """A runner on the sink, and a bid of Alice's in each of GAMES games
    waiting in its Maildir (each is a move, and queues her receipt); each
    message read is recorded in the sink's events, as it is read, and the
    sink takes 50 ms a mail from now on."""
    monkeypatch.setattr(smtp, "SEND_BATCH", BATCH)
    config = replace(config, smtp=Server(host="127.0.0.1", port=port, security="none"))
    engine, runner = make_runner(config, clock, maildir)
    for _ in range(GAMES):
        engine.new_game("pure-skill", PLAYERS)
    asyncio.run(runner.once())  # the start mails and prompts
    for game in range(1, GAMES + 1):
        deliver(maildir, reply(engine, ALICE, f"bid {game % 13 + 1}", game=game), clock())
    sink.events.clear()
    sink.delay = 0.05
    ingest = engine.ingest

    def reading(raw, **kwargs):
        sink.events.append("read")
        return ingest(raw, **kwargs)

    engine.ingest = reading
    return engine, runner


def test_a_slow_server_gets_the_receipts_as_the_moves_are_read(config, clock, maildir, monkeypatch):
    """Without the wait, the dozen messages were read in a few milliseconds
    each while the server took 50 ms a mail: the reading was the whole
    backlog ahead when it ended, and every receipt went out after it."""
    sink = SlowSink()
    with smtp_server(sink) as port:
        engine, runner = backlog(config, clock, maildir, sink, port, monkeypatch)
        report = asyncio.run(asyncio.wait_for(runner.once(), WAIT))
    assert report.received == GAMES and report.mail.sent == GAMES
    read = taken = 0
    for event in sink.events:
        read, taken = read + (event == "read"), taken + (event == "taken")
        # A batch in the wire's hands, another waiting, and the message that queued it.
        assert read - taken <= 2 * BATCH + 1, sink.events
    assert not engine.store.outbox("queued")


def test_a_server_gone_while_the_reading_waits_on_it_leaves_every_move_read_and_the_mail_queued(
    config, clock, maildir, monkeypatch
):
    sink = SlowSink()
    with smtp_server(sink) as port:
        engine, runner = backlog(config, clock, maildir, sink, port, monkeypatch)
        sink.drop_after = BATCH
        with pytest.raises(smtp.SmtpUnreachable):
            asyncio.run(asyncio.wait_for(runner.once(), WAIT))
    assert sink.events.count("read") == GAMES
    moves = engine.store.db.execute("select count(*) from moves where seat = 0").fetchone()[0]
    assert moves == GAMES  # each bid counts, the sending stopped or not
    queued = engine.store.outbox("queued")
    assert len(queued) == GAMES - BATCH  # the receipts the server did not take wait for the next pass
