"""While the wire's thread sends, the GIL changes hands quickly, and the
process's switch interval is what it was once the drain is over: a real SMTP
server (aiosmtpd) on loopback, the fake clock."""

import asyncio
import sys
from dataclasses import replace

from conftest import PLAYERS
from test_runner import maildir as _maildir
from test_runner import make_runner
from test_send36_overlap import smtp_server

from referee.config import Server
from referee.mail import smtp

maildir = _maildir  # the fixture


class Watching:
    """An SMTP server that takes every mail and notes the switch interval as it does."""

    def __init__(self) -> None:
        self.intervals: list[float] = []

    async def handle_DATA(self, server, session, envelope) -> str:
        self.intervals.append(sys.getswitchinterval())
        return "250 OK"


def test_mail_goes_out_with_quick_gil_switches_and_the_interval_is_restored_after(config, clock, maildir):
    """The runner's thread, busy reading, lets the wire's thread have the
    GIL within SWITCH_WHILE_SENDING rather than the default 5 ms at each
    reply of the server; the process's own setting comes back after."""
    handler, before = Watching(), sys.getswitchinterval()
    assert before > smtp.SWITCH_WHILE_SENDING
    with smtp_server(handler) as port:
        config = replace(config, smtp=Server(host="127.0.0.1", port=port, security="none"))
        engine, runner = make_runner(config, clock, maildir)
        engine.new_game("pure-skill", PLAYERS)
        drained = asyncio.run(runner.sender.drain())
    assert drained.sent == len(handler.intervals) > 0
    assert set(handler.intervals) == {smtp.SWITCH_WHILE_SENDING}
    assert sys.getswitchinterval() == before


def test_an_interval_shorter_already_is_kept_while_sending(config, clock, maildir):
    """A process that asked for quicker switches itself keeps them."""
    handler, before = Watching(), sys.getswitchinterval()
    sys.setswitchinterval(smtp.SWITCH_WHILE_SENDING / 2)
    shorter = sys.getswitchinterval()  # (in whole microseconds: not quite what was set)
    try:
        with smtp_server(handler) as port:
            config = replace(config, smtp=Server(host="127.0.0.1", port=port, security="none"))
            engine, runner = make_runner(config, clock, maildir)
            engine.new_game("pure-skill", PLAYERS)
            asyncio.run(runner.sender.drain())
        assert handler.intervals and set(handler.intervals) == {shorter}
        assert sys.getswitchinterval() == shorter
    finally:
        sys.setswitchinterval(before)
