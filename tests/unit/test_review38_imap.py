"""Review of the IMAP client's own FETCH reading (round 38): an answer
read by referee.mail.imap's protocol gives the same lines as aioimaplib's
own, however the server's bytes are cut into chunks, when the answer holds
what a count of parentheses could trip on: literals with unbalanced
parentheses and lines that look like FETCH lines, a quoted string with a
parenthesis of its own, FLAGS after a literal, an unsolicited EXISTS between
two messages, and several literals in one message."""

from __future__ import annotations

import asyncio
import random

import aioimaplib
import pytest

from referee.mail.imap import _Protocol

BODIES = [
    b"Subject: (((\r\n\r\nbid 7\r\n",
    b"Subject: )\r\n\r\n* 2 FETCH (UID 7 BODY[] {3}\r\n)))\r\n",
    b")",
    b"",
    b"(\r\n* 9 FETCH (\r\n",
]


def answer(tag: str) -> bytes:
    parts = []
    for number, body in enumerate(BODIES, 1):
        parts.append(
            b"* %d FETCH (UID %d RFC822.SIZE %d BODY[] {%d}\r\n%s" % (number, 50 + number, len(body), len(body), body)
        )
        if number % 2:
            parts.append(b" BODY[HEADER] {2}\r\n()")
        parts.append(b' ENVELOPE (NIL "a ( subject" NIL) FLAGS (\\Seen))\r\n' if number == 3 else b" FLAGS ())\r\n")
        if number == 2:
            parts.append(b"* 9 EXISTS\r\n")
    return b"".join(parts) + tag.encode() + b" OK Fetch completed.\r\n"


class _Wire:
    def write(self, data: bytes) -> None:
        pass


def read(protocol_class: type, cuts: random.Random) -> tuple[str, list[bytes]]:
    async def reading() -> aioimaplib.Response:
        protocol = protocol_class(asyncio.get_running_loop(), None)
        protocol.transport, protocol.state = _Wire(), aioimaplib.SELECTED
        fetching = asyncio.ensure_future(protocol.fetch("51:55", "(UID BODY.PEEK[])", by_uid=True, timeout=60))
        await asyncio.sleep(0)
        data = answer(protocol.pending_async_commands["FETCH"].tag)
        at = 0
        while at < len(data):
            step = cuts.choice((1, 2, 3, 5, 8, 13, 40))
            protocol.data_received(data[at : at + step])
            at += step
        return await asyncio.wait_for(fetching, 5)

    response = asyncio.run(reading())
    return response.result, [bytes(line) for line in response.lines]


@pytest.mark.parametrize("seed", range(12))
def test_a_tricky_fetch_answer_cut_anywhere_reads_as_aioimaplib_reads_it(seed):
    ours = read(_Protocol, random.Random(seed))
    theirs = read(aioimaplib.IMAP4ClientProtocol, random.Random(seed))
    assert ours == theirs
    assert ours[0] == "OK"
    assert [line for line in ours[1] if line in BODIES[:3]] == BODIES[:3]
