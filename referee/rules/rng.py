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

import functools
import hashlib
import struct
from collections.abc import Sequence
from typing import Any, TypeVar

T = TypeVar("T")

_WORD = 2**64
_WORDS = struct.Struct(">4Q")  # a block of 32 bytes: four words, big-endian
# randbelow's limit for a bound (an int), worked out once: the limit is a big-int sum, and a replay draws
# tens of thousands of times from a few bounds (a die's 6, a stack's size).  Bounded, as the bounds are not.
_LIMITS: dict[int, int] = {}

# HMAC-SHA256 (RFC 2104) by its definition: SHA256((K ^ opad) + SHA256((K ^ ipad) + message)), the key
# padded to 64 bytes.  A key's two padded blocks are hashed once (_pads), and each message then costs a
# copy of each hash and its update: 0.6 us against OpenSSL's one-shot HMAC's 1.6 (which sets the key up
# again at every call).  A stream's blocks share its key, and every stream of a game is keyed by its seed.
_IPAD = bytes(byte ^ 0x36 for byte in range(256))  # (bytes.translate tables: a byte to the byte xor the pad)
_OPAD = bytes(byte ^ 0x5C for byte in range(256))
_Pads = tuple[Any, Any]  # a key's inner and outer hashes, of its padded blocks (never updated: copied)


def _pads(key: bytes) -> _Pads:
    # Its bytes first: a buffer's len counts its items (a memoryview of 8-byte words), and HMAC its bytes.
    key = bytes(key)  # (a bytes key itself, not copied)
    if len(key) > 64:  # (RFC 2104: a key longer than a block is hashed first)
        key = hashlib.sha256(key).digest()
    block = key.ljust(64, b"\0")
    return hashlib.sha256(block.translate(_IPAD)), hashlib.sha256(block.translate(_OPAD))


_seed_pads = functools.lru_cache(maxsize=64)(_pads)  # (a game's every stream is keyed by its seed)


def _hmac(pads: _Pads, message: bytes) -> bytes:
    inner = pads[0].copy()
    inner.update(message)
    outer = pads[1].copy()
    outer.update(inner.digest())
    return outer.digest()


class Rng:
    """A deterministic stream of uniform random choices."""

    # (slots: a replay makes a stream for every phase's resolve, most of which draw nothing)
    __slots__ = ("_counter", "_key", "_seed", "_words", "label")

    def __init__(self, seed: bytes, label: str):
        self.label = label
        self._seed = seed
        self._key: _Pads | None = None  # the key's pads, made at the first draw: most resolves draw nothing
        self._counter = 0
        self._words: list[int] = []  # the current block's words not yet drawn, the next last

    def _word(self) -> int:
        if not self._words:
            if self._key is None:
                seed = self._seed
                seed_pads = _seed_pads(seed) if type(seed) is bytes else _pads(seed)
                self._key = _pads(_hmac(seed_pads, self.label.encode()))
            block = _hmac(self._key, self._counter.to_bytes(8, "big"))
            self._counter += 1
            self._words = list(reversed(_WORDS.unpack(block)))
        return self._words.pop()

    def __getstate__(self) -> tuple[bytes, str, int, list[int]]:
        """A copy's or a pickle's: the stream's place, without the key's hashes (made again at its next block)."""
        return self._seed, self.label, self._counter, list(self._words)

    def __setstate__(self, state: tuple[bytes, str, int, list[int]]) -> None:
        self._seed, self.label, self._counter, self._words = state
        self._key = None

    def __copy__(self) -> Rng:
        """A stream at the same point, apart from this one: the undrawn words
        are popped from their list, which a shallow copy would share."""
        twin = object.__new__(Rng)
        twin.label, twin._seed, twin._key, twin._counter = self.label, self._seed, self._key, self._counter
        twin._words = list(self._words)  # (the key's hashes are shared: they are only ever copied)
        return twin

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``range(n)``, without modulo bias."""
        limit = _LIMITS.get(n) if type(n) is int else None  # (an int's own: 6.0 and True keep their sums)
        if limit is None:
            if not 0 < n <= _WORD:
                raise ValueError("randbelow needs a bound from 1 to 2**64")
            limit = _WORD - _WORD % n
            if type(n) is int and len(_LIMITS) < 1024:
                _LIMITS[n] = limit
        while True:
            words = self._words  # (the block's next word at hand, else the next block's: _word)
            word = words.pop() if words else self._word()
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
