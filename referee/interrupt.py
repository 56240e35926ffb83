"""A stop signal that cuts short the reading of a mail.

`run` and `serve` hear SIGTERM and SIGINT through their event loop
(``referee.cli``), which runs its handler only between two steps that
wait.  Reading one mail never waits, and a hostile one up to the size
limit costs about a second of CPU (docs/design.md, "Linear time for every
mail"); a stop that came then would wait for it, and for the next mail's.
Reading is pure: it writes nothing and sends nothing (the mail's
transaction begins after it), so it can be given up at any moment, and the
mail, not filed, is read again by the next pass.  So while
``stop_signals_cut_reading_short`` is in force, a stop signal raises
Stopped inside a ``reading()`` block, and once one has come, every
``reading()`` begun after it raises Stopped at once.  The loop hears the
signal as before: the interpreter writes each signal to the loop's wakeup
file whatever Python handler it has (signal.set_wakeup_fd).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

_open = 0  # how many reading() blocks are open
_heard = False  # a stop signal came while stop_signals_cut_reading_short was in force


class Stopped(BaseException):
    """A stop signal cut a mail's reading short; nothing of it was kept.  A
    BaseException, as KeyboardInterrupt is, so no handler that keeps a mail
    a bug met takes it for one."""


@contextmanager
def reading() -> Iterator[None]:
    """A block that a stop signal may cut short at any moment: it must
    change nothing outside itself."""
    global _open
    if _heard:
        raise Stopped("stopping")
    _open += 1
    try:
        yield
    finally:
        _open -= 1


def cut_short(signum: int, frame: object) -> None:
    """A stop signal's Python-level handler: noted, and Stopped inside
    ``reading()``.  The loop's handler does the rest on its next turn."""
    global _heard
    _heard = True
    if _open:
        raise Stopped(signal.Signals(signum).name)


@contextmanager
def stop_signals_cut_reading_short(signums: Sequence[int]) -> Iterator[None]:
    """Inside a running loop that has handlers for ``signums``
    (``loop.add_signal_handler``): they cut reading short too."""
    global _heard
    _heard = False
    before = {signum: signal.getsignal(signum) for signum in signums}
    for signum in signums:
        signal.signal(signum, cut_short)
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        _heard = False
