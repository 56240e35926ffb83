"""A stream keyed by a seed given as a buffer of wider items (a memoryview of
an array of words, the array itself) draws as the stream of the seed's bytes:
HMAC keys by the bytes, and since round 43 the stream pads its seed itself,
where len() of such a buffer counts its items, not its bytes: a seed of ten
8-byte words (80 bytes, more than a block) was padded as a short key, not
hashed first, and every draw of the stream differed from 8cb20c4's."""

from __future__ import annotations

import hashlib
import hmac
import struct
from array import array

import pytest

from referee.rules import Rng


def _documented_words(seed: bytes, label: str, blocks: int) -> list[int]:
    """The stream's words as its module's docstring defines them."""
    key = hmac.new(seed, label.encode(), hashlib.sha256).digest()
    words: list[int] = []
    for counter in range(blocks):
        block = hmac.new(key, counter.to_bytes(8, "big"), hashlib.sha256).digest()
        words += struct.unpack(">4Q", block)
    return words


@pytest.mark.parametrize("items", [9, 10, 20, 64])  # (72 to 512 bytes: all longer than a block, no more than 64 items)
@pytest.mark.parametrize("given", [memoryview, lambda words: words], ids=["memoryview", "array"])
def test_review43_a_seed_of_wide_items_keys_the_stream_by_its_bytes(items, given):
    words = array("Q", range(7, 7 + items))
    seed = bytes(words)
    stream = Rng(given(words), "phase 4 resolve")
    drawn = [stream.randbelow(2**64) for _ in range(8)]
    assert drawn == _documented_words(seed, "phase 4 resolve", 2)
    by_bytes = Rng(seed, "phase 4 resolve")
    assert drawn == [by_bytes.randbelow(2**64) for _ in range(8)]
