"""Review of the quick GIL switches while a wire sends (round 38): the
process's own switch interval comes back however the sending ends: a
server that cannot be reached, a drain cancelled mid-mail, two drains at
once (the last to end restores it)."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from dataclasses import replace

import pytest
from conftest import PLAYERS
from test_runner import maildir as _maildir
from test_runner import make_runner
from test_send36_overlap import smtp_server

from referee.config import Server
from referee.mail import smtp
from referee.mail.smtp import SmtpUnreachable

maildir = _maildir  # the fixture


@pytest.fixture(autouse=True)
def interval():
    """The process's own interval, longer than the sending one; set back after each test, so none hides another's failure."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(before)


def free_port() -> int:
    """A loopback port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Stalling:
    """An SMTP server that holds every mail's DATA until it is let go."""

    def __init__(self) -> None:
        self.holding, self.go = threading.Event(), threading.Event()

    async def handle_DATA(self, server, session, envelope) -> str:
        self.holding.set()
        while not self.go.is_set():
            await asyncio.sleep(0.01)
        return "250 OK"


def sender_to(config, clock, maildir, port: int):
    config = replace(config, smtp=Server(host="127.0.0.1", port=port, security="none"))
    engine, runner = make_runner(config, clock, maildir)
    engine.new_game("pure-skill", PLAYERS)
    return runner.sender


def test_the_interval_comes_back_when_the_server_cannot_be_reached(config, clock, maildir):
    before = sys.getswitchinterval()
    sender = sender_to(config, clock, maildir, free_port())
    with pytest.raises(SmtpUnreachable):
        asyncio.run(sender.drain())
    assert sys.getswitchinterval() == before


def test_the_interval_comes_back_when_a_drain_is_cancelled_mid_mail(config, clock, maildir):
    before, handler = sys.getswitchinterval(), Stalling()

    async def cancelled_mid_mail(sender) -> None:
        draining = asyncio.ensure_future(sender.drain())
        while not handler.holding.is_set():
            await asyncio.sleep(0.01)
        assert sys.getswitchinterval() == smtp.SWITCH_WHILE_SENDING  # (the wire is open)
        draining.cancel()
        handler.go.set()
        with pytest.raises(asyncio.CancelledError):
            await draining

    with smtp_server(handler) as port:
        asyncio.run(asyncio.wait_for(cancelled_mid_mail(sender_to(config, clock, maildir, port)), 20))
    assert sys.getswitchinterval() == before


def test_two_drains_at_once_keep_quick_switches_until_the_last_ends(config, clock, maildir, tmp_path):
    before, first, second = sys.getswitchinterval(), Stalling(), Stalling()
    (tmp_path / "two").mkdir()

    def drain(config, maildir, port: int) -> None:  # (a runner of its own, on a thread of its own: games.db's)
        asyncio.run(sender_to(config, clock, maildir, port).drain())

    with smtp_server(first) as port_one, smtp_server(second) as port_two:
        threads = [
            threading.Thread(target=drain, args=(config, maildir, port_one)),
            threading.Thread(
                target=drain, args=(replace(config, database=tmp_path / "two.db"), tmp_path / "two", port_two)
            ),
        ]
        for thread in threads:
            thread.start()
        assert first.holding.wait(10) and second.holding.wait(10)
        first.go.set()
        threads[0].join(10)
        assert not threads[0].is_alive()
        assert sys.getswitchinterval() == smtp.SWITCH_WHILE_SENDING  # (the second still sends)
        second.go.set()
        threads[1].join(10)
    assert not threads[1].is_alive()
    assert sys.getswitchinterval() == before
