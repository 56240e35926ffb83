"""Benchmark: how soon `run --once` and `serve` stop after SIGTERM while
they read a backlog of the most expensive mail there is (issue 29, item 1:
"a stop is honoured within a second even mid-mail").

A Maildir holds ``--mails`` mails of one of bench/reading.py's shapes
(``--shape``, "many blank lines" by default: the costliest at 5 MB), each
from a seat of a running game of Pure Skill, in reply to its prompt.  For
each command and trial, a fresh copy of that home is made, the referee is
started on it as a subprocess, and SIGTERM is sent at a random moment
``--from`` to ``--to`` seconds after its handler is in place (while it
reads the backlog).  Printed per command: the time from the signal to the
process's exit (median, 90th percentile, worst), the exit statuses, how
many mails the stopped run had handled, and whether a clean `run --once`
afterwards handled every mail exactly once (none lost, none doubled).
Asserts nothing.

Run from the top of the checkout:  python3 bench/stopping.py [--trials 10] [--mails 8]
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from reading import PLAYERS, SHAPES, Mail, label, parse_size

from referee.config import Config, MaildirSettings
from referee.engine import Engine
from referee.store import Store

COMMANDS = {"run --once": ["run", "--once"], "serve": ["serve"]}


def prepare(home: Path, shape: str, size: int, mails: int) -> None:
    """A referee home: its config, a game, and the backlog in Maildir/new."""
    box = home / "Maildir"
    for sub in ("new", "cur", "tmp"):
        (box / sub).mkdir(parents=True)
    (home / "referee.toml").write_text(
        '[referee]\naddress = "referee@example.org"\ndatabase = "games.db"\n'
        'secret_key = "bench"\n[maildir]\npath = "Maildir"\n'
    )
    config = Config(
        address="referee@example.org", database=home / "games.db", secret_key=b"bench", maildir=MaildirSettings(box)
    )
    engine = Engine(Store(config.database), config, lambda: datetime.now(UTC))
    engine.new_game("pure-skill", PLAYERS)
    token = engine.table(1).seats[0]["token"]
    prompt = [row for row in engine.store.outbox() if row["recipients"] == [PLAYERS[0]]][-1]
    engine.store.sync()
    engine.store.db.conn.close()
    raw = SHAPES[shape](Mail(token, prompt["message_id"]), size - 16)  # room for the numbered Message-ID
    stamp = int(time.time()) - 60
    for n in range(mails):  # distinct mails: each its own Message-ID
        mail = raw.replace(b"<bench@example.net>", f"<bench-{n}@example.net>".encode(), 1)
        (box / "new" / f"{stamp + n}.M{n}P1.bench").write_bytes(mail)


def handler_in_place(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


def handled(home: Path) -> list[str]:
    with sqlite3.connect(f"file:{home / 'games.db'}?mode=ro", uri=True) as db:
        return [row[0] for row in db.execute("select message_id from messages")]


def trial(template: Path, work: Path, argv: list[str], delay: float, mails: int) -> dict:
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(template, home)
    err = (home / "err").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "referee", "--config", "referee.toml", *argv],
        cwd=home,
        stdout=subprocess.DEVNULL,
        stderr=err,
    )
    while not handler_in_place(process.pid):
        time.sleep(0.001)
    time.sleep(delay)
    finished_first = process.poll() is not None
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    status = process.wait(120)
    took = time.monotonic() - sent
    err.close()
    by_stop = len(handled(home))
    subprocess.run(
        [sys.executable, "-m", "referee", "--config", "referee.toml", "run", "--once"],
        cwd=home,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    ids = handled(home)
    left = len(list((home / "Maildir" / "new").iterdir())) + len(list((home / "Maildir" / "cur").iterdir()))
    whole = sorted(ids) == sorted({f"<bench-{n}@example.net>" for n in range(mails)}) and left == 0
    return {"took": took, "status": status, "by_stop": by_stop, "whole": whole, "early": finished_first}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="many blank lines", help="a shape of bench/reading.py")
    parser.add_argument("--size", default="5M", help="each mail's size (default 5M)")
    parser.add_argument("--mails", type=int, default=8, help="mails in the backlog (default 8)")
    parser.add_argument("--trials", type=int, default=10, help="stops per command (default 10)")
    parser.add_argument("--from", dest="earliest", type=float, default=0.5, help="earliest signal, s (0.5)")
    parser.add_argument("--to", dest="latest", type=float, default=4.0, help="latest signal, s (4.0)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    size = parse_size(args.size)
    choose = random.Random(args.seed)
    print(
        f"SIGTERM {args.earliest}-{args.latest} s into a backlog of {args.mails} mails of "
        f"'{args.shape}' at {label(size)}; {args.trials} trials per command"
    )
    print(
        f"{'command':12} {'median s':>9} {'p90 s':>7} {'worst s':>8} {'statuses':>10} "
        f"{'handled by stop':>16} {'then whole':>11}"
    )
    with tempfile.TemporaryDirectory() as folder:
        template = Path(folder, "template")
        prepare(template, args.shape, size, args.mails)
        for name, argv in COMMANDS.items():
            results = [
                trial(template, Path(folder), argv, choose.uniform(args.earliest, args.latest), args.mails)
                for _ in range(args.trials)
            ]
            took = sorted(r["took"] for r in results)
            statuses = ",".join(sorted({str(r["status"]) for r in results}))
            counts = sorted(r["by_stop"] for r in results)
            whole = sum(r["whole"] for r in results)
            early = sum(r["early"] for r in results)
            print(
                f"{name:12} {statistics.median(took):9.2f} {took[int(len(took) * 0.9) - 1 if len(took) >= 10 else -1]:7.2f}"
                f" {took[-1]:8.2f} {statuses:>10} {f'{counts[0]}-{counts[-1]} of {args.mails}':>16}"
                f" {f'{whole} of {len(results)}':>11}" + (f"  ({early} ended before the signal)" if early else ""),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
