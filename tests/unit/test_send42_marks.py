"""A backlog's mail is marked sent a batch at a time while it is read, not
at each message read: a real SMTP server (aiosmtpd) on loopback, a real
Maildir, the fake clock."""

import asyncio
from dataclasses import replace

from test_runner import maildir as _maildir
from test_send36_overlap import sink as _sink
from test_sql36_batch import bid_backlog, traced

from referee.config import Server
from referee.mail import smtp

maildir = _maildir  # the fixture
sink = _sink  # the fixture

GAMES = 40  # (a backlog long enough that messages are read while a batch is on the wire)


def test_a_backlog_read_while_sending_marks_each_batch_sent_once(config, clock, maildir, sink, monkeypatch):
    """Each message read wakes the sender, whose batch is then still on the
    wire: its marks wait for the batch's end, one UPDATE for all of it
    (issue 36: one mark_sent per batch), and every mail is marked."""
    monkeypatch.setattr(smtp, "SEND_BATCH", 4)
    _server, port = sink
    config = replace(config, smtp=Server(host="127.0.0.1", port=port, security="none"))
    engine, runner = bid_backlog(config, clock, maildir, games=GAMES)
    with traced(engine.store) as statements:
        report = asyncio.run(runner.once())
    assert report.received == GAMES
    sent = report.mail.sent
    assert sent >= GAMES and not engine.store.outbox("queued")  # a receipt a bid at least, all marked sent
    marks = [sql for sql in statements if sql.startswith("update outbox set state")]
    assert len(marks) <= -(-sent // smtp.SEND_BATCH) + 1, f"{len(marks)} marks for {sent} mails"
