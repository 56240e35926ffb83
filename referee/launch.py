"""The ``referee`` command's entry point (``referee.cli`` is the command).

Its first statement notes SIGTERM and SIGINT, before the imports, which
take a few tenths of a second: a daemon stopped while it starts then stops
cleanly, with a log line and exit status 0, instead of being killed
outright.  ``run`` and ``serve`` act on a noted signal as soon as they can;
every other command ends as it would have (``default_signals``).

This module imports nothing but ``_signal`` (the C module ``signal``
wraps, loaded with the interpreter: ``signal`` would import enum first),
so the handler is in place as soon as any of the referee's code runs.
What comes before is the interpreter's own start-up (docs/operations.md
measures it): a SIGTERM then ends the process as it ends any program,
before it has opened a file.
"""

TYPE_CHECKING = False  # typing's, without importing typing; mypy reads it as True

if TYPE_CHECKING:  # typeshed has no stub for _signal: signal's, which re-exports it, serves
    import signal as _signal
else:
    import _signal

STOP_SIGNALS = (_signal.SIGTERM, _signal.SIGINT)  # a clean stop for `run` and `serve`
stopped_by: list[int] = []  # the stop signals received while starting, in order


def note(signum: int, frame: object) -> None:
    stopped_by.append(signum)


def main() -> int:
    for signum in STOP_SIGNALS:
        _signal.signal(signum, note)
    from referee.cli import main as cli_main

    return cli_main()


def default_signals() -> None:
    """For a command that need not stop cleanly: the usual handling again,
    and an exit now if a signal came while it started."""
    if stopped_by:
        raise SystemExit(128 + stopped_by[0])
    for signum, usual in ((_signal.SIGTERM, _signal.SIG_DFL), (_signal.SIGINT, _signal.default_int_handler)):
        if _signal.getsignal(signum) is note:
            _signal.signal(signum, usual)
