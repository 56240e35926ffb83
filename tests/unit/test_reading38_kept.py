"""A line reads the same however often it is read, and however long it is
(reading.clean keeps its answers for short lines only; the correction leads
are looked up by their first word)."""

from __future__ import annotations

from referee.rules.reading import clean, correction, move_lines

VERBS = {"bid": "bid", "play": "bid"}


def test_a_line_read_again_reads_the_same():
    for _ in range(3):
        assert move_lines("No wait, make it bid 6", VERBS) == ["bid 6"]
        assert move_lines("  *Bid*   K!  ", VERBS) == ["bid K"]


def test_every_kind_of_lead_still_takes_back():
    assert correction("change my bid to 9", VERBS) == "bid 9"
    assert correction("on second thought, bid 4", VERBS) == "bid 4"
    assert correction("no, bid 6", VERBS) == "bid 6"
    assert correction("no coins", VERBS) is None  # "no" leads only before a comma, "!" or a dash
    assert correction("scratch that", VERBS) is None  # a lead with nothing after it


def test_a_long_line_reads_as_a_short_one_does():
    short = "Bid   K,  please"
    long = short + " " + "and many thanks for the game " * 12  # over the length whose reading is kept
    assert len(long) > 256
    assert clean(long).startswith(clean(short))
    assert clean(long) == clean(long)
    assert " ".join(long.split()) == clean(long)
