"""A game's own random stream, derived from its secret seed.

Every random event of a game (a prize draw, a shuffle, a timeout bid) reads
from a stream named by a label such as ``"phase 4 resolve"``.  The stream is
HMAC-SHA256 in counter mode, so anyone holding the seed can recompute every
draw with a few lines of code in any language:

    key    = HMAC-SHA256(seed, label)                     # 32 bytes
    block  = HMAC-SHA256(key, counter as 8 bytes big-endian), counter = 0, 1, ...
    word   = the next 8 bytes of the concatenated blocks, big-endian
    randbelow(n): draw words until word < 2**64 - (2**64 mod n); return word mod n

No global state: two streams with the same seed and label are identical.
"""

from __future__ import annotations

import hmac
import struct
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

_WORD = 2**64
_WORDS = struct.Struct(">4Q")  # a block of 32 bytes: four words, big-endian


class Rng:
    """A deterministic stream of uniform random choices."""

    def __init__(self, seed: bytes, label: str):
        self.label = label
        self._seed = seed
        self._key: bytes | None = None  # made at the first draw: most phases' resolves draw nothing
        self._counter = 0
        self._words: list[int] = []  # the current block's words not yet drawn, the next last

    def _word(self) -> int:
        # (hmac.digest: OpenSSL's one-shot HMAC, the same bytes as hmac.new(...).digest() at a third of
        # the cost; a replay draws tens of thousands of words)
        if not self._words:
            if self._key is None:
                self._key = hmac.digest(self._seed, self.label.encode(), "sha256")
            block = hmac.digest(self._key, self._counter.to_bytes(8, "big"), "sha256")
            self._counter += 1
            self._words = list(reversed(_WORDS.unpack(block)))
        return self._words.pop()

    def __copy__(self) -> Rng:
        """A stream at the same point, apart from this one: the undrawn words
        are popped from their list, which a shallow copy would share."""
        twin = object.__new__(Rng)
        twin.__dict__.update(self.__dict__, _words=list(self._words))
        return twin

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``range(n)``, without modulo bias."""
        if not 0 < n <= _WORD:
            raise ValueError("randbelow needs a bound from 1 to 2**64")
        limit = _WORD - _WORD % n
        while True:
            word = self._word()
            if word < limit:
                return word % n

    def choice(self, items: Sequence[T]) -> T:
        """A uniform pick from a non-empty sequence (order matters: sort sets first)."""
        return items[self.randbelow(len(items))]

    def shuffled(self, items: Sequence[T]) -> list[T]:
        """A uniformly shuffled copy (Fisher-Yates, drawing from the end)."""
        out = list(items)
        for i in range(len(out) - 1, 0, -1):
            j = self.randbelow(i + 1)
            out[i], out[j] = out[j], out[i]
        return out
