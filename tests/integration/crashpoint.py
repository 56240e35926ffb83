"""Run the referee's command line and SIGKILL it at a chosen point:

    python crashpoint.py POINT N -- [referee arguments]

kills the process the N-th time it reaches POINT.  The points are those where
a crash tests the invariants of docs/design.md ("One transaction per entry
point"); each is reached by wrapping a referee function from outside, so the
referee itself carries no test hooks.  Just before the kill the launcher
appends "POINT N" to ./crashpoints.fired: the kill soak's proof that the
point was really reached.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from referee import cli
from referee.engine import Engine
from referee.engine.phases import Phases
from referee.mail.imap import ImapSource
from referee.store import Store

FIRED = Path("crashpoints.fired")

POINTS = {
    "in-transaction": "a message's transaction has made all its writes, not yet committed",
    "after-commit": "a message is committed, not yet filed on the IMAP server",
    "after-seen": "the batch's \\Seen STORE is done, its MOVE not sent",
    "after-move": "the batch is moved to processed, the last UID not yet recorded",
    "in-resolution": "a round is resolved and the next opened, not yet committed",
    "after-smtp": "the SMTP server accepted a mail, not yet marked sent",
}


class Countdown:
    def __init__(self, point: str, n: int):
        self.point, self.n, self.left = point, n, n

    def reached(self) -> None:
        self.left -= 1
        if self.left == 0:
            with FIRED.open("a") as fired:
                fired.write(f"{self.point} {self.n}\n")
            os.kill(os.getpid(), signal.SIGKILL)


def arm(point: str, countdown: Countdown) -> None:
    """Wrap the one referee function whose call marks ``point``."""
    if point == "in-transaction":
        record = Engine._record  # the last write of a message's transaction

        def _record(self, *args, **kwargs):
            record(self, *args, **kwargs)
            countdown.reached()

        Engine._record = _record
    elif point == "after-commit":
        ingest = Engine.ingest

        def _ingest(self, *args, **kwargs):
            outcome = ingest(self, *args, **kwargs)
            if outcome.code != "duplicate":  # a duplicate commits nothing
                countdown.reached()
            return outcome

        Engine.ingest = _ingest
    elif point in ("after-seen", "after-move"):
        command = ImapSource._command  # the source's every IMAP command, named by `what`

        async def _command(self, call, what, **options):
            if what == "MOVE" and point == "after-seen":
                countdown.reached()
            reply = await command(self, call, what, **options)
            if what == "MOVE" and point == "after-move":
                countdown.reached()
            return reply

        ImapSource._command = _command
    elif point == "in-resolution":
        resolve = Phases._resolve

        def _resolve(self, *args, **kwargs):
            resolve(self, *args, **kwargs)
            countdown.reached()

        Phases._resolve = _resolve
    elif point == "after-smtp":
        mark_sent = Store.mark_sent  # called only once the server accepted the mail

        def _mark_sent(self, *args, **kwargs):
            countdown.reached()
            mark_sent(self, *args, **kwargs)

        Store.mark_sent = _mark_sent
    else:
        raise SystemExit(f"crashpoint: unknown point {point!r}; the points are {', '.join(POINTS)}")


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[2] != "--" or not argv[1].isdigit() or int(argv[1]) < 1:
        raise SystemExit(__doc__)
    point, n = argv[0], int(argv[1])
    arm(point, Countdown(point, n))
    return cli.main(argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
