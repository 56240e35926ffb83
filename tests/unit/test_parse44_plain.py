"""parse reads a field as plain text by str's own scans (issue 36): what
they tell is what the expressions they stand for tell, on any text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.mail.parse import _LINE_BREAK, _plain_text, _unfolded

# What parse told plain text by before issue 36's change: printable ASCII and tabs, no "=?" anywhere.
_PLAIN_TEXT = re.compile(r"(?:(?!=\?)[\t\x20-\x7e])*")

# ASCII of every kind (controls, DEL, tabs, line breaks), an encoded word's "=?" drawn often, and some beyond ASCII.
PIECES = [chr(c) for c in range(0, 0x80)] + ["=?", "=", "?", "\t", "\r\n", "é", "\u2028"] * 4
ANY = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@settings(max_examples=500, deadline=None)
@given(text=ANY)
def test_plain_text_is_what_the_expression_matches(text):
    assert _plain_text(text) == bool(_PLAIN_TEXT.fullmatch(text))


@settings(max_examples=300, deadline=None)
@given(text=ANY)
def test_a_value_unfolded_has_no_line_break_and_nothing_else_taken(text):
    assert _unfolded(text) == _LINE_BREAK.sub("", text)


def test_the_edges_of_plain_text():
    assert _plain_text("") and _plain_text("a\tb") and _plain_text("~ !")
    assert not _plain_text("=?utf-8?q?x?=") and not _plain_text("a\x7f") and not _plain_text("a\x1f")
    assert not _plain_text("caf\u00e9") and not _plain_text("a\nb")
