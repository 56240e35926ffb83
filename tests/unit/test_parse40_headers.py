"""A part's header section read by referee.mail.parse's own loop is what the
standard library's parser makes of it, field for field, or is left to it
where the parser notes a defect (issue 36, item 1: the parser's feeding
machinery cost a reply's three header sections a third of its parsing)."""

from __future__ import annotations

from email.message import EmailMessage
from email.parser import Parser

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.mail.parse import _TAMED, _header_section, _lines, _TamedMessage

_LINES = st.sampled_from(
    [
        "Content-Type: text/plain; charset=utf-8",
        "Content-Transfer-Encoding: quoted-printable",
        "Subject:  two  blanks ",
        "X-Empty:",
        "From: Alice <alice@example.org>",
        "From alice@example.org Fri Nov 27 18:00:00 2026",
        " folded on",
        "\tfolded by a tab",
        ": no name",
        "Odd!Name~: value",
        "Subject: caf\udcc3\udca9",  # (raw UTF-8, as BytesParser's surrogateescape reads it)
    ]
)


def standard(text: str) -> _TamedMessage:
    part = Parser(_TamedMessage, policy=_TAMED).parsestr(text, headersonly=True)
    part._payload = None
    return part


def fields(part: _TamedMessage) -> tuple:
    return (list(part.raw_items()), part.get_unixfrom(), part.from_fields, part._payload, part.get_default_type())


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINES, max_size=6), st.sampled_from(["\r\n", "\n", "\r"]), st.sampled_from(["", "body"]))
def test_a_header_section_is_read_as_the_standard_library_reads_it(lines, eol, body):
    text = "".join(line + eol for line in lines) + (eol + body if body else "")
    cut = _lines(text)
    read = _header_section(cut, 0, len(cut))
    parsed = standard("".join(cut[: len(lines)]))
    if read is None:  # left to the standard library: only where it notes a defect, or moves a line
        assert parsed.defects or any(line.startswith("From ") for line in lines[1:])
        return
    part, body_start = read
    assert not parsed.defects
    assert fields(part) == fields(parsed)
    assert body_start == len(lines) + (1 if body else 0)


def test_a_first_continuation_or_a_nameless_field_is_left_to_the_standard_library():
    for section in (" folded\r\nSubject: x\r\n\r\n", "Subject: x\r\n: nameless\r\n\r\n"):
        cut = _lines(section)
        assert standard("".join(cut[:-1])).defects
        assert _header_section(cut, 0, len(cut)) is None


_CONTENT_TYPES = st.sampled_from(
    [
        'text/plain; charset="utf-8"',
        "text/plain; charset=UTF-8; format=flowed; delsp=yes",
        'multipart/alternative; boundary="000000000000b1c2d3"',
        "multipart/mixed;\r\n boundary=----=_Part_1",
        "text/html; name*0*=utf-8''caf%C3%A9; name*1=.html",
        "text/plain; charset",
        'text/plain; a="b;c"; ; =x',
        "",
    ]
)


@settings(max_examples=200, deadline=None)
@given(_CONTENT_TYPES, st.sampled_from(["content-type", "content-disposition", "x-other"]))
def test_a_field_s_parameters_read_once_are_those_the_standard_library_reads(value, name):
    for _ in range(2):  # (the second time from what was kept)
        part = _header_section(_lines(f"{name}: {value}\r\n\r\n"), 0, 2)
        assert part is not None
        ours = part[0]
        theirs = Parser(EmailMessage, policy=_TAMED).parsestr(f"{name}: {value}\r\n", headersonly=True)
        for header in (name, "content-type", "missing"):
            assert ours.get_params(header=header) == theirs.get_params(header=header)
            assert ours.get_param("charset", header=header) == theirs.get_param("charset", header=header)
        assert ours.get_boundary() == theirs.get_boundary()
        assert ours.get_content_charset() == theirs.get_content_charset()
        assert ours.get_filename() == theirs.get_filename()
