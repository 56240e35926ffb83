"""The ``referee`` command's entry point (``referee.cli`` is the command).

It starts noting SIGTERM and SIGINT before the imports, which take a few
tenths of a second: a daemon stopped while it starts then stops cleanly,
with a log line, instead of being killed outright.  ``run`` and ``serve``
act on a noted signal as soon as they can; every other command ends as it
would have (``default_signals``).
"""

from __future__ import annotations

import signal

stopped_by: list[int] = []  # the stop signals received while starting, in order


def note(signum: int, frame: object) -> None:
    stopped_by.append(signum)


def main() -> int:
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, note)
    from referee.cli import main as cli_main

    return cli_main()


def default_signals() -> None:
    """For a command that need not stop cleanly: the usual handling again,
    and an exit now if a signal came while it started."""
    if stopped_by:
        raise SystemExit(128 + stopped_by[0])
    for signum, usual in ((signal.SIGTERM, signal.SIG_DFL), (signal.SIGINT, signal.default_int_handler)):
        if signal.getsignal(signum) is note:
            signal.signal(signum, usual)
