"""The long kill soak: thousands of players' mails, dozens of SIGKILLs of
`run --once` and `serve`, at random and at every crash point, then every
check of tests/integration/killsoak.py (the suite's test_kill_soak.py is the
short one).  It starts its own Dovecot (IMAP, LMTP) and SMTP sink on
loopback, as the integration tests do, and prints its figures: mails, kills
by point and program, how many landed, duplicates delivered, violations and
wall time.  Exit status 1 if there was a violation.

Run from the top of the checkout (needs dovecot-imapd and dovecot-lmtpd):
    python3 bench/soak.py [--seed 1] [--games 40] [--mails 5000] [--kills 60] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "integration"))

from killsoak import Soak  # the suite's soak
from mailstack import Dovecot, MailStack  # the suite's real servers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--games", type=int, default=40, help="Games of Pure Skill, 3 players each")
    parser.add_argument("--mails", type=int, default=5000, help="players' mails in all (at least 36 a game)")
    parser.add_argument("--kills", type=int, default=60, help="SIGKILLs that land (a third at crash points)")
    parser.add_argument("--keep", type=Path, help="keep the referee's home (games.db, logs, site, Dovecot) here")
    args = parser.parse_args()
    home = args.keep or Path(tempfile.mkdtemp(prefix="referee-soak-"))
    home.mkdir(parents=True, exist_ok=True)
    dovecot = Dovecot(root=args.keep / "dovecot" if args.keep else None)  # kept: its mail and log too
    MailStack.provision(dovecot, 1)  # before start: no wait
    dovecot.start()
    stack = MailStack(dovecot)
    stack.start()
    try:
        report = Soak(stack, home, seed=args.seed, games=args.games, mails=args.mails, kills=args.kills).run()
    finally:
        stack.stop()
        dovecot.close()
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    print(report.summary())
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
