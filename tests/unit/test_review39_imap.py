"""Review of round 39's parse of what an IMAP server sends
(referee.mail.imap._Protocol._handle_responses, which goes through a chunk
by offsets where aioimaplib's called itself on a copy of the rest): each
line goes to the line handler with the same command as aioimaplib gives it,
in the same order, and what is left for the next chunk (a line cut short, a
command whose literal or data is still coming) is the same, for answers of
every kind (untagged and tagged lines, continuations, empty lines, BYE,
literals of every size, {0} and one without a command before it) however
they are cut into chunks, at every byte too."""

from __future__ import annotations

import asyncio
from typing import Any

import aioimaplib
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.mail.imap import _Protocol


class _Parenthesised(aioimaplib.Command):
    """A command that waits for data while its lines' parentheses are open, as a FETCH does."""

    def wait_data(self) -> bool:
        said = b"".join(line for line in self.response.lines if isinstance(line, bytes | bytearray))
        return self.wait_literal_data() or said.count(b"(") != said.count(b")")


def _command(command: aioimaplib.Command | None) -> Any:
    if command is None:
        return None
    lines = [bytes(line) for line in command.response.lines]
    return command.name, lines, bytes(command._resp_literal_data), command._expected_size


def _read(protocol_class: type, chunks: list[bytes]) -> list[Any]:
    """What ``protocol_class`` hands its line handler, and keeps after each chunk."""

    async def reading() -> list[Any]:
        protocol = protocol_class(asyncio.get_running_loop(), None)
        protocol.state = aioimaplib.SELECTED
        seen: list[Any] = []

        def handle(line: bytes, current: aioimaplib.Command | None) -> aioimaplib.Command | None:
            seen.append((bytes(line), _command(current)))
            if not line:
                return None
            if current is not None:
                current.append_to_resp(line)
                return current
            if line.startswith(b"*"):
                command = _Parenthesised(line[:12].decode("latin-1"), "A1")
                command.append_to_resp(line)
                return command
            return None

        protocol._handle_line = handle
        for chunk in chunks:
            protocol.data_received(chunk)
            seen.append(("kept", bytes(protocol.incomplete_line), _command(protocol.current_command)))
        return seen

    return asyncio.run(reading())


literal = st.binary(max_size=12).map(lambda data: data.replace(b"x", b"\r\n"))
line = st.binary(max_size=10).map(lambda data: data.replace(b"\r", b"").replace(b"\n", b""))
ANSWERS = st.one_of(
    st.sampled_from([b"\r\n", b"+ idling\r\n", b"* BYE going\r\n", b"A1 OK done\r\n", b"* 4 FETCH (UID 5\r\n"]),
    line.map(lambda text: b"* 1 EXISTS " + text + b"\r\n"),
    literal.map(lambda data: b"* 2 FETCH (UID 3 BODY[] {%d}\r\n%s FLAGS (\\Seen))\r\n" % (len(data), data)),
    literal.map(lambda data: b"* 2 FETCH (BODY[] {%d}\r\n%s\r\n FLAGS ()))\r\n" % (len(data), data)),
    literal.map(lambda data: b"{%d}\r\n%s\r\n" % (len(data), data)),  # (no command before it: aioimaplib's NIL)
)


@settings(max_examples=400, deadline=None)
@given(answers=st.lists(ANSWERS, max_size=12), data=st.data())
def test_review39_answers_cut_anywhere_are_read_as_aioimaplib_reads_them(answers, data):
    stream = b"".join(answers)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(stream)), max_size=8))))
    chunks = [stream[start:end] for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    assert _read(_Protocol, chunks) == _read(aioimaplib.IMAP4ClientProtocol, chunks)


def test_review39_an_answer_read_a_byte_at_a_time_is_read_as_aioimaplib_reads_it():
    stream = b"* 1 FETCH (UID 1 BODY[] {5}\r\na\r\nb)\r\n\r\n+ go\r\n{0}\r\n\r\n* 2 FETCH (BODY[] {3}\r\n(((\r\n))))\r\nA1 OK x\r\n"
    for size in (1, 2, 3, 5):
        chunks = [stream[start : start + size] for start in range(0, len(stream), size)]
        assert _read(_Protocol, chunks) == _read(aioimaplib.IMAP4ClientProtocol, chunks)
