"""The sender's SMTP transaction (referee.mail.smtp._transact) says to a
server what aiosmtplib's sendmail says, and raises what it raises: the same
MAIL, RCPT and DATA lines and bytes, the same RSET after a refusal, for
mail with CRLF line ends, with lone ones, and refused by the server in
each of its ways (issue 36, item 1: the wire's CPU)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import aiosmtplib
import pytest
from aiosmtpd.controller import Controller
from mailstack import free_port

from referee.mail.smtp import _transact

SENDER = "referee@example.org"


class Recorder:
    """Every command the server is given that the sender chooses, and how it
    answered; refuses the addresses named so, with their codes."""

    def __init__(self, refuse: dict[str, str]):
        self.refuse, self.said = refuse, []

    async def handle_MAIL(self, server, session, envelope, address, options):
        self.said.append(("MAIL", address, tuple(options)))
        if address in self.refuse:
            return self.refuse[address]
        envelope.mail_from, envelope.mail_options = address, options
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, options):
        self.said.append(("RCPT", address, tuple(options)))
        if address in self.refuse:
            return self.refuse[address]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.said.append(("DATA", bytes(envelope.original_content)))
        return self.refuse.get("DATA", "250 OK")

    async def handle_RSET(self, server, session, envelope):
        self.said.append(("RSET",))
        return "250 OK"


COMPOSED = b"From: referee@example.org\r\nSubject: Your move\r\n\r\nA line.\r\n.A line with a dot first.\r\n"
LONE_ENDS = b"Subject: lone\n\nA line\rand another\n.dot\r\nand no end"
CASES: list[tuple[str, list[str], bytes, dict[str, str]]] = [
    ("composed", ["alice@example.org"], COMPOSED, {}),
    ("lone line ends", ["alice@example.org"], LONE_ENDS, {}),
    ("one of two refused", ["alice@example.org", "bob@example.org"], COMPOSED, {"bob@example.org": "550 no"}),
    (
        "all refused",
        ["alice@example.org", "bob@example.org"],
        COMPOSED,
        {"alice@example.org": "550 no", "bob@example.org": "451 later"},
    ),
    ("sender refused", ["alice@example.org"], COMPOSED, {SENDER: "553 not you"}),
    ("data refused", ["alice@example.org"], COMPOSED, {"DATA": "554 spam"}),
    ("no such address", ["alice@example.org\r\nRCPT TO:<eve@example.org>"], COMPOSED, {}),
    ("an address that cannot be written", ["alice@example.org", "a b@example.org"], COMPOSED, {}),
    ("an address the server cannot take", ["jöhn@example.org"], COMPOSED, {}),
]


async def _session(port: int, send: Callable[[aiosmtplib.SMTP], Awaitable[object]]) -> list[str]:
    client = aiosmtplib.SMTP(
        hostname="127.0.0.1", port=port, local_hostname="example.org", start_tls=False
    )  # as SmtpSender
    await client.connect()
    outcomes = []
    for mail in (send, lambda client: client.sendmail(SENDER, ["carol@example.org"], COMPOSED)):  # and the next
        try:
            await mail(client)
            outcomes.append("sent")
        except (aiosmtplib.SMTPException, ValueError) as error:
            outcomes.append(f"{type(error).__name__}: {error}")
    await client.quit()
    return outcomes


def _talk(recorder: Recorder, send: Callable[[aiosmtplib.SMTP], Awaitable[object]]) -> tuple[list[str], list]:
    controller = Controller(recorder, hostname="127.0.0.1", port=free_port(), enable_SMTPUTF8=False)
    controller.start()
    try:
        outcome = asyncio.run(_session(controller.port, send))
    finally:
        controller.stop()
    return outcome, recorder.said


@pytest.mark.parametrize(("case", "recipients", "raw", "refuse"), CASES, ids=[case[0] for case in CASES])
def test_a_mail_is_sent_and_refused_as_sendmail_sends_it(
    case: str, recipients: list[str], raw: bytes, refuse: dict[str, str]
) -> None:
    utf8 = not all(address.isascii() for address in (SENDER, *recipients))  # as the sender asks
    options = ["SMTPUTF8"] if utf8 else None
    for _ in range(2):  # the second time, with the addresses read before (and an address refused each time)
        theirs = _talk(Recorder(refuse), lambda client: client.sendmail(SENDER, recipients, raw, mail_options=options))
        ours = _talk(Recorder(refuse), lambda client: _transact(client, SENDER, recipients, raw, utf8))
        assert ours == theirs
    assert theirs[0][0] == "sent" or case not in ("composed", "lone line ends", "one of two refused")
