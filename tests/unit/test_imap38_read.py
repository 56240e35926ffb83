"""referee.mail.imap reads a FETCH answer as aioimaplib does, at a cost
that does not grow with the batch (issue 36): its protocol (_Protocol,
_Fetch) keeps its count of a message's parentheses as the lines come, and
makes no debug text of the data unless it is logged."""

from __future__ import annotations

import asyncio
import logging

import aioimaplib
import pytest

from referee.mail.imap import _fetched, _Protocol

# Bodies that a count of parentheses could trip on: unbalanced ones, a
# line that looks like a FETCH line, and a message ending without CRLF.
BODIES = [
    b"From: alice@example.org\r\nSubject: Re: (move\r\n\r\nbid 7 :-(\r\n",
    b"From: bob@example.org\r\nSubject: ))\r\n\r\n* 3 FETCH (UID 9 BODY[] {2}\r\nbid K",
    b"From: carol@example.org\r\n\r\n" + b"> quoted (line) of the prompt\r\n" * 20,
]


def answer(tag: str, count: int) -> bytes:
    """A server's answer to ``UID FETCH`` of ``count`` messages: each with its
    UID before the literal, some with their FLAGS after it."""
    parts = []
    for number in range(1, count + 1):
        body = BODIES[number % len(BODIES)]
        flags = b" FLAGS (\\Seen)" if number % 2 else b""
        parts.append(b"* %d FETCH (UID %d BODY[] {%d}\r\n%s%s)\r\n" % (number, 100 + number, len(body), body, flags))
    return b"".join(parts) + tag.encode() + b" OK Fetch completed.\r\n"


class _Wire:
    def write(self, data: bytes) -> None:  # (the command sent: not looked at)
        pass


def read(protocol_class: type, data_of: type = bytes, count: int = 40, chunk: int = 4096) -> aioimaplib.Response:
    """The response a protocol makes of ``answer``, received ``chunk`` bytes at a time."""

    async def reading() -> aioimaplib.Response:
        protocol = protocol_class(asyncio.get_running_loop(), None)
        protocol.transport, protocol.state = _Wire(), aioimaplib.SELECTED
        fetching = asyncio.ensure_future(protocol.fetch("101:140", "(UID BODY.PEEK[])", by_uid=True, timeout=60))
        await asyncio.sleep(0)  # the command is sent
        data = answer(protocol.pending_async_commands["FETCH"].tag, count)
        for start in range(0, len(data), chunk):
            protocol.data_received(data_of(data[start : start + chunk]))
        return await fetching

    return asyncio.run(reading())


@pytest.mark.parametrize("chunk", [1, 7, 64, 4096, 1 << 20])
def test_a_fetch_answer_is_read_as_aioimaplib_reads_it_however_it_arrives(chunk):
    ours, theirs = read(_Protocol, chunk=chunk), read(aioimaplib.IMAP4ClientProtocol, chunk=chunk)
    assert ours.result == theirs.result == "OK"
    assert [bytes(line) for line in ours.lines] == [bytes(line) for line in theirs.lines]
    bodies = _fetched(ours.lines)
    assert bodies == {str(100 + n): BODIES[n % len(BODIES)] for n in range(1, 41)}


class _Untouchable(bytes):
    """Data that fails the test if anything makes text of it."""

    def __str__(self) -> str:
        raise AssertionError("the data was made into text")

    __repr__ = __str__


def test_the_data_received_is_not_made_into_text_unless_debug_is_logged(caplog):
    caplog.set_level(logging.INFO, logger="aioimaplib.aioimaplib")
    assert read(_Protocol, data_of=_Untouchable).result == "OK"


def test_the_data_received_is_still_logged_at_debug(caplog):
    caplog.set_level(logging.DEBUG, logger="aioimaplib.aioimaplib")
    read(_Protocol, count=1, chunk=1 << 20)
    assert any(r.getMessage().startswith("Received : b'* 1 FETCH (UID 101") for r in caplog.records)
