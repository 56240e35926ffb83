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
Stopped inside a ``reading(parse, ...)`` call, and once one has come,
every ``reading()`` begun after it raises Stopped at once.  The loop hears the
signal as before: the interpreter writes each signal to the loop's wakeup
file whatever Python handler it has (signal.set_wakeup_fd).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_heard = False  # a stop signal came while stop_signals_cut_reading_short was in force


class Stopped(BaseException):
    """A stop signal cut a mail's reading short; nothing of it was kept.  A
    BaseException, as KeyboardInterrupt is, so no handler that keeps a mail
    a bug met takes it for one."""


def reading(function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``function(*args, **kwargs)``, which a stop signal may cut short at
    any moment: it must change nothing outside itself."""
    if _heard:
        raise Stopped("stopping")
    return function(*args, **kwargs)


def cut_short(signum: int, frame: FrameType | None) -> None:
    """A stop signal's Python-level handler: noted, and Stopped if it runs
    inside ``reading()``.  The loop's handler does the rest on its next turn.

    Inside is where the interrupted frame is, not a count of the readings
    begun and ended: the handler runs between two bytecodes, and a count's
    update and the step it stands for are never one (a contextmanager's
    ``__enter__`` returns, or its ``__exit__`` begins, with the count still
    up, and Stopped raised there leaves it up: a later signal would raise
    Stopped outside, in a transaction or while the loop closes)."""
    global _heard
    _heard = True
    while frame is not None:
        if frame.f_code is reading.__code__:
            raise Stopped(signal.Signals(signum).name)
        frame = frame.f_back


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
