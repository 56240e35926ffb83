"""Review of reading's kept answers (round 38): correction leads that open
with the same word as longer ones ("make it"/"make that", "change to"/
"change that to", "no"/"nope", "i mean"/"i mean to") still take their
longest lead; case and full-width letters read alike; and a line of 255,
256 or 257 characters (the longest kept is 256) cleans as it did.  The
expected readings are those of the code before the round (d5bc4d0)."""

from __future__ import annotations

import pytest

from referee.rules.reading import clean, correction, move_lines

VERBS = {"bid": "bid", "play": "bid", "move": "move"}
READINGS = [  # line, correction, move_lines: as d5bc4d0 read them
    ("I mean to bid 6", "bid 6", ["bid 6"]),
    ("i mean, bid 6", "bid 6", ["bid 6"]),
    ("change to bid 5", "bid 5", ["bid 5"]),
    ("change that to bid 5", "bid 5", ["bid 5"]),
    ("let me change that to bid 5", "bid 5", ["bid 5"]),
    ("make it bid 9", "bid 9", ["bid 9"]),
    ("make that bid 9", "bid 9", ["bid 9"]),
    ("nope, bid 3", "bid 3", ["bid 3"]),
    ("no - bid 3", "bid 3", ["bid 3"]),
    ("No: bid 3", "bid 3", ["bid 3"]),
    ("nope bid 3", None, ["nope bid 3"]),
    ("on second thoughts bid 2", "bid 2", ["bid 2"]),
    ("second thoughts: bid 2", "bid 2", ["bid 2"]),
    ("ignore the above, bid 8", "bid 8", ["bid 8"]),
    ("ignore that bid 8", "bid 8", ["bid 8"]),
    ("MAKE IT BID 4", "BID 4", ["bid 4"]),
    ("Ｍａｋｅ ｉｔ bid 4", "bid 4", ["bid 4"]),
    ("change my move to bid 6", "bid 6", ["bid 6"]),
    ("change my bid to", None, ["change my bid to"]),
    ("scratch that, bid 1 sorry", "bid 1", ["bid 1"]),
]


@pytest.mark.parametrize("rounds", [1, 3])
def test_leads_sharing_a_first_word_read_as_before_however_often_read(rounds):
    for _ in range(rounds):
        for line, corrected, moves in READINGS:
            assert correction(line, VERBS) == corrected, line
            assert move_lines(line, VERBS) == moves, line


@pytest.mark.parametrize("length", [255, 256, 257])
def test_a_line_about_the_longest_kept_cleans_as_before(length):
    line = "Bid  6\u200b " + "y" * (length - 8)
    assert len(line) == length
    for _ in range(2):
        assert clean(line) == "Bid 6 " + "y" * (length - 8)
        assert clean("ﬁ" * length) == "fi" * length  # (NFKC: twice as long once cleaned)
