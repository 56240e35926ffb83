"""A multipart split by referee.mail.parse's own scan of its boundary lines
is the very tree the standard library's parser makes of it (issue 36, item
1: the parser compiles a regular expression for each mail's boundary), and
anything not plainly well-formed is left to the standard library."""

from __future__ import annotations

import email.feedparser
from datetime import UTC, datetime
from email.message import Message
from email.parser import BytesParser
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.mail import parse as parse_module
from referee.mail.parse import _TAMED, _plain_multipart, parse

FIXTURES = Path(__file__).parent.parent / "fixtures"
CLIENT_MAILS = sorted((FIXTURES / "mail").glob("*.eml"))
HOSTILE_MAILS = sorted((FIXTURES / "fuzz").glob("*.eml"))


def tree(message: Message) -> list[tuple]:
    """Everything the parser decides about each part, in order."""
    return [
        (
            type(part).__name__,
            list(part.raw_items()),
            part.get_unixfrom(),
            part.get_default_type(),
            part.preamble,
            part.epilogue,
            [type(defect).__name__ for defect in part.defects],
            part.is_multipart(),
            None if part.is_multipart() else part._payload,
            getattr(part, "from_fields", None),
        )
        for part in message.walk()
    ]


def standard(raw: bytes) -> Message:
    return BytesParser(policy=_TAMED).parsebytes(raw)


def assert_same_or_left(raw: bytes) -> bool:
    """The split tree equals the standard library's; True if it was split."""
    split = _plain_multipart(raw)
    if split is not None:
        assert tree(split) == tree(standard(raw))
    return split is not None


def test_client_mails_in_parts_are_split_as_the_standard_library_parses_them():
    split = [path.name for path in CLIENT_MAILS + HOSTILE_MAILS if assert_same_or_left(path.read_bytes())]
    assert len(split) >= 50  # the split is what people's mail takes (54 of the fixtures in parts)


def test_a_reply_in_text_and_html_is_read_as_before_without_compiling_its_boundary(monkeypatch):
    raw = (FIXTURES / "mail" / "gmail-web.eml").read_bytes()
    before = parse(raw, datetime(2026, 1, 1, tzinfo=UTC))
    compiled: list[str] = []
    real_compile = email.feedparser.re.compile

    def counting_compile(pattern, *args):
        compiled.append(pattern)
        return real_compile(pattern, *args)

    monkeypatch.setattr(email.feedparser.re, "compile", counting_compile)
    again = parse(raw, datetime(2026, 1, 1, tzinfo=UTC))
    assert again.text == before.text and tree(again.headers) == tree(before.headers)
    assert not [pattern for pattern in compiled if "(?P<sep>" in pattern]


_NEWLINES = st.sampled_from(["\r\n", "\n", "\r"])
_BOUNDARY = st.sampled_from(["b1", "==abc==", "x.y", "a b", "-", "----=_Part_1", "(z)"])
_TYPES = st.sampled_from(
    [
        "text/plain",
        'text/plain; charset="utf-8"',
        "text/html",
        "application/octet-stream",
        "text/plain",
        "text/html; charset=iso-8859-1",
        "multipart/alternative; boundary=inner",
        "message/rfc822",
        "text/plain; format=flowed",
    ]
)


@st.composite
def multipart_mails(draw) -> bytes:
    """Mails in parts, well-formed and not: boundary-like lines, spaces after
    a boundary, two boundaries in a row, a missing close, nested parts."""
    eol = draw(_NEWLINES)
    boundary = draw(_BOUNDARY)
    top = draw(st.sampled_from(["multipart/alternative"] * 4 + ["multipart/mixed", "multipart/digest", "text/plain"]))
    head = [f"From: a@example.org{eol}", f'Content-Type: {top}; boundary="{boundary}"{eol}']
    if draw(st.integers(0, 5)) == 0:
        head.append(f"Content-Transfer-Encoding: {draw(st.sampled_from(['7bit', 'base64', '8bit']))}{eol}")
    odd_words = [f"--{boundary}", f"--{boundary}--", f"--{boundary} ", f"--{boundary}--\t"]
    words = st.sampled_from(["hello", "", f"--{boundary}x", "--inner", "> quote", "=", " --", "From x"] * 4 + odd_words)
    lines = draw(st.lists(words, max_size=3))
    for _ in range(draw(st.integers(0, 4))):
        separator = f"--{boundary}" + draw(st.sampled_from(["", "", "", " ", "\t ", "--x"]))
        lines.append(separator)
        if draw(st.integers(0, 4)):
            lines.append(f"Content-Type: {draw(_TYPES)}")
            if draw(st.booleans()):
                lines.append("Content-Transfer-Encoding: quoted-printable")
            lines.append(draw(st.sampled_from(["", "", "", "not a header"])))
        lines += draw(st.lists(words, min_size=1, max_size=4))
    if draw(st.integers(0, 5)):
        lines.append(f"--{boundary}--" + draw(st.sampled_from(["", "", "  ", "x"])))
        lines += draw(st.lists(words, max_size=2))
    body = eol.join(lines) + draw(st.sampled_from(["", eol]))
    return ("".join(head) + eol + body).encode()


@settings(max_examples=600, deadline=None)
@given(multipart_mails())
def test_generated_mails_in_parts_are_split_as_the_standard_library_parses_them(raw):
    assert_same_or_left(raw)


def test_a_plain_reply_in_parts_is_split():
    raw = (
        b'Content-Type: multipart/alternative; boundary="b"\r\n\r\npreamble\r\n--b\r\n'
        b"Content-Type: text/plain\r\n\r\n3\r\n--b\r\nContent-Type: text/html\r\n\r\n<p>3</p>\r\n--b--\r\n"
    )
    assert assert_same_or_left(raw)


def test_an_envelope_line_ending_a_part_header_section_is_left_to_the_standard_library():
    raw = b'Content-Type: multipart/alternative; boundary="b1"\r\n\r\n--b1\r\nFrom x\r\nFrom x\r\n--b1--'
    assert not assert_same_or_left(raw)
    assert standard(raw).get_payload(0).get_payload() == "From x"  # the parser takes it for the body's first line


def test_too_many_parts_are_left_to_the_standard_library_and_refused():
    raw = b'Content-Type: multipart/mixed; boundary="b"\n\n' + b"--b\n\nx\n" * 250 + b"--b--\n"
    assert _plain_multipart(raw) is None
    assert parse_module._parse_tamed(raw, raw.split(b"\n\n")[0]) is None


@st.composite
def well_formed_mails(draw) -> bytes:
    """Mails in parts as clients write them, with lines that look like a
    boundary and are not, any line breaks, a preamble and an epilogue or not."""
    eol = draw(_NEWLINES)
    boundary = draw(_BOUNDARY)
    text = st.lists(
        st.sampled_from(
            ["hello", "", f"--{boundary}x", f"-{boundary}", f" --{boundary}", "=20", "From x", "é"]
            + ["\x0c", f"x\x0c--{boundary}", f"\x1c--{boundary}--"],
        ),
        max_size=4,
    )
    lines = ["From: a@example.org", f'Content-Type: multipart/mixed; boundary="{boundary}"', ""]
    lines += draw(text)
    for _ in range(draw(st.integers(1, 4))):
        lines.append(f"--{boundary}" + draw(st.sampled_from(["", "", " ", "\t"])))
        lines += [f"Content-Type: {draw(_TYPES)}", ""] if draw(st.integers(0, 5)) else [""]
        lines += draw(text)
    lines.append(f"--{boundary}--" + draw(st.sampled_from(["", " "])))
    lines += draw(text)
    return (eol.join(lines) + draw(st.sampled_from(["", eol]))).encode("utf-8")


@settings(max_examples=400, deadline=None)
@given(well_formed_mails())
def test_well_formed_mails_in_parts_are_split_as_the_standard_library_parses_them(raw):
    assert_same_or_left(raw)
