"""The cheap reading of plain header fields (issue 36) gives exactly what
the standard library's header registry gives: each rule by which
referee.mail.parse returns a field's text as it is, without the registry's
parse, is checked against that parse, on any value the rule lets through."""

from __future__ import annotations

from email.policy import default
from email.utils import getaddresses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.mail.parse import _PLAIN_ADDRESSES, _TAMED, _plain_list_addresses, _plain_text, _reads_as_itself

# Printable ASCII and tabs, with the characters that make a field structured
# (and an encoded word's "=?") drawn often.
PLAIN = st.text(st.sampled_from([chr(c) for c in range(0x20, 0x7F)] + list('\t <>@.,;:"()[]\\=?') * 3), max_size=60)
ATEXT = st.text(st.sampled_from("abzAZ09!#$%&'*+/=?^_`{|}~-"), min_size=1, max_size=6)
DOT_ATOM = st.lists(ATEXT, min_size=1, max_size=3).map(".".join)
ADDRESS = st.builds(lambda left, right: f"{left}@{right}", DOT_ATOM, DOT_ATOM)
SPACE = st.sampled_from(["", " ", "  ", "\t"])
NAMED = st.builds(
    lambda name, space, address: f"{name}{space}<{address}>",
    st.text(st.sampled_from("abcXYZ019 \t"), max_size=10).filter(lambda n: n[:1].isalnum()),
    SPACE,
    ADDRESS,
)
ADDRESS_LIST = st.lists(
    st.builds(lambda before, one, after: before + one + after, SPACE, ADDRESS | NAMED, SPACE), min_size=1, max_size=3
).map(",".join)
FIELDS = ["subject", "in-reply-to", "references", "received", "delivered-to", "x-original-to", "message-id"]
FIELDS += ["content-transfer-encoding", "content-disposition", "mime-version", "to", "cc", "from", "date"]


def registry(name: str, value: str) -> str:
    """The field as the registry reads it; "" where it fails, as the tamed policy reads such a field."""
    try:
        return str(default.header_fetch_parse(name, value))
    except Exception:  # noqa: BLE001 - any failure of the registry's
        return ""


@pytest.mark.parametrize("name", FIELDS)
@settings(max_examples=120, deadline=None)
@given(value=PLAIN | ADDRESS_LIST | ADDRESS.map(lambda a: f"<{a}>") | st.sampled_from(["k6>a(F5f", "a;b", "x\t(y"]))
def test_a_plain_field_read_as_it_is_reads_as_the_registry_reads_it(name, value):
    if _plain_text(value) and _reads_as_itself(name, value):
        assert registry(name, value) == value
    assert _TAMED.header_fetch_parse(name, value) == registry(name, value)


@pytest.mark.parametrize("name", FIELDS)
@settings(max_examples=40, deadline=None)
@given(value=PLAIN | ADDRESS_LIST)
def test_a_folded_plain_field_reads_unfolded_as_the_registry_reads_it(name, value):
    folded = value.replace(" ", "\r\n ", 1)
    assert _TAMED.header_fetch_parse(name, folded) == registry(name, folded)


@pytest.mark.parametrize("name", ["to", "cc"])
@settings(max_examples=400, deadline=None)
@given(value=ADDRESS_LIST | PLAIN)
def test_a_plain_address_list_names_the_addresses_the_registry_finds(name, value):
    if _PLAIN_ADDRESSES.fullmatch(value):
        assert getaddresses([value]) and [a for _, a in getaddresses([value])] == [
            a for _, a in getaddresses([registry(name, value)])
        ]


@settings(max_examples=400, deadline=None)
@given(values=st.lists(ADDRESS_LIST | PLAIN, min_size=1, max_size=4))
def test_plain_address_lists_are_cut_into_the_addresses_getaddresses_finds(values):
    if all(_PLAIN_ADDRESSES.fullmatch(value) for value in values):
        cut = [address for value in values for address in _plain_list_addresses(value)]
        assert cut == [address for _, address in getaddresses(values) if "@" in address]


def test_fields_that_are_not_plain_go_through_the_registry():
    for name, value in [
        ("subject", "=?utf-8?q?caf=C3=A9?= bid 5"),  # an encoded word: decoded
        ("message-id", "<a@b> (a comment)"),
        ("content-transfer-encoding", '"base64"'),
        ("to", '"Referee, the" <r@example.org>'),
    ]:
        assert not (_plain_text(value) and _reads_as_itself(name, value))
        assert _TAMED.header_fetch_parse(name, value) == registry(name, value)
    assert _TAMED.header_fetch_parse("subject", "=?utf-8?q?caf=C3=A9?= bid 5") == "café bid 5"
