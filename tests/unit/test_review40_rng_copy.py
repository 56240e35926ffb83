"""A copy of a random stream (copy.copy) draws what the stream itself would
draw from that point, and apart from it: since round 40 the stream keeps
its block's undrawn words in a list it pops from, which a shallow copy
would share with the original (each then skipping the words the other
drew), where the bytes buffer it kept before was never changed in place."""

from __future__ import annotations

import copy
import pickle

import pytest

from referee.rules import Rng


@pytest.mark.parametrize("drawn", [0, 1, 3, 4, 5])  # (four words a block: before, inside and at its end)
@pytest.mark.parametrize("duplicate", [copy.copy, copy.deepcopy, lambda s: pickle.loads(pickle.dumps(s))])
def test_review40_a_copied_stream_draws_as_the_stream_would_and_apart_from_it(drawn, duplicate):
    stream = Rng(b"\x07" * 32, "phase 4 resolve")
    for _ in range(drawn):
        stream.randbelow(6)
    twin = duplicate(stream)
    by_twin = [twin.randbelow(1000) for _ in range(9)]
    by_stream = [stream.randbelow(1000) for _ in range(9)]
    fresh = Rng(b"\x07" * 32, "phase 4 resolve")
    for _ in range(drawn):
        fresh.randbelow(6)
    assert by_twin == by_stream == [fresh.randbelow(1000) for _ in range(9)]
