"""Benchmark: one `referee run --once` over a backlog, its peak memory and throughput.

One command; it starts a real Dovecot on loopback itself (as the
integration tests do) and makes a local Maildir.  For each source (IMAP and
Maildir) and each backlog below, it fills the referee's inbox, runs one
``referee run --once`` as a process of its own (a fresh games.db, no SMTP
server: answers stay queued) and prints, from the kernel's accounting of
that process (VmHWM and VmPeak), its peak RSS and address space, and the
pass's wall time, mails a second and MB a second, and whether every mail
left the inbox.

The backlogs: 100, 1,000 and 10,000 small mails (strangers asking for
help, under 1 KB each); 100 and 1,000 mails of 1 MB (a help line and a
1 MB attachment); the issue's flood, 1,000 mails of 1 MB and 10,000 small
ones; 50 mails just under max_message_size (5 MB), the largest read whole;
and 20 mails of 20 MB, over it, which are answered from their headers.  Peak RSS should be flat across them: the
pass reads mail in batches bounded in count and in bytes (referee.runner).

The mail is made once: for IMAP it is delivered into stock folders (written
into Dovecot's maildir, as a delivery agent does) and copied into the INBOX
for each backlog (Dovecot links the files), for Maildir the stock files are
linked into new/.  Asserts nothing.

Run from the top of the checkout (needs dovecot-imapd):
    python3 bench/backlog.py [--sources imap,maildir] [--only NAME] [--code DIR]

``--code DIR`` runs the referee of another checkout (say a worktree of an
older commit) for the pass, to compare.
"""

from __future__ import annotations

import argparse
import base64
import imaplib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "integration"))

from mailstack import NOBODY, Dovecot  # the test suite's real server

REFEREE, PASSWORD = "referee@example.org", "secret"
MB = 2**20
HERE = Path(__file__).resolve().parent.parent

# name -> [(stock, how many)]
BACKLOGS: dict[str, list[tuple[str, int]]] = {
    "100 small": [("small", 100)],
    "1,000 small": [("small", 1_000)],
    "10,000 small": [("small", 10_000)],
    "100 of 1 MB": [("large", 100)],
    "1,000 of 1 MB": [("large", 1_000)],
    "1,000 of 1 MB + 10,000 small": [("large", 1_000), ("small", 10_000)],
    "50 of 5 MB (just under the limit)": [("limit", 50)],
    "20 of 20 MB (oversized)": [("huge", 20)],
}
STOCK = {"small": 10_000, "large": 1_000, "limit": 50, "huge": 20}
SIZES = {"large": MB, "limit": 5 * MB - 4096, "huge": 20 * MB}  # max_message_size is 5 MB (5 * 2**20 bytes)


def small(n: int) -> bytes:
    return (
        f"From: stranger{n}@elsewhere.example.com\r\nTo: {REFEREE}\r\nSubject: hello\r\n"
        f"Message-ID: <small-{n}@bench.invalid>\r\nDate: Mon, 1 Jan 2024 00:00:00 +0000\r\n\r\nhelp\r\n"
    ).encode()


def attached(kind: str, n: int, size: int, chooser: random.Random) -> bytes:
    """A help line and an attachment of random bytes, base64: ``size`` bytes in all."""
    head = (
        f"From: sender{n}@elsewhere.example.com\r\nTo: {REFEREE}\r\nSubject: a file\r\n"
        f"Message-ID: <{kind}-{n}@bench.invalid>\r\nDate: Mon, 1 Jan 2024 00:00:00 +0000\r\n"
        'MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n'
        "--b\r\nContent-Type: text/plain\r\n\r\nhelp\r\n"
        "--b\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n"
    ).encode()
    tail = b"\r\n--b--\r\n"
    room = (size - len(head) - len(tail)) // 78 * 57  # raw bytes that fill the rest as 76-column lines
    body = base64.encodebytes(chooser.randbytes(room)).replace(b"\n", b"\r\n")
    raw = head + body + tail
    return raw + b" " * (size - len(raw)) if len(raw) < size else raw


def make(kind: str, n: int, chooser: random.Random) -> bytes:
    if kind == "small":
        return small(n)
    return attached(kind, n, SIZES[kind], chooser)


# `python -m referee ARGS` that writes its peak RSS and address space (VmHWM and
# VmPeak: of its own memory since exec; the kernel's ru_maxrss would count this
# big parent's too) to a file as it exits
LAUNCHER = """\
import atexit, runpy, sys
peak = sys.argv.pop(1)
def note():
    with open("/proc/self/status") as status, open(peak, "w") as out:
        out.write(" ".join(line.split()[1] for line in status if line.startswith(("VmPeak:", "VmHWM:"))))
atexit.register(note)
runpy.run_module("referee", run_name="__main__")
"""


def run_pass(cwd: Path, env: dict[str, str]) -> tuple[int, float, int, int, str]:
    """One `referee run --once` in ``cwd``: its exit status, wall time, peak
    RSS and address space (bytes), and stderr's tail."""
    argv = [sys.executable, "-c", LAUNCHER, str(cwd / "peak"), "--config", "referee.toml", "run", "--once"]
    with open(cwd / "run.err", "wb") as err, open(cwd / "run.out", "wb") as out:
        started = time.monotonic()
        status = subprocess.run(argv, cwd=cwd, stdout=out, stderr=err, env=env, check=False).returncode
        took = time.monotonic() - started
    tail = (cwd / "run.err").read_text(errors="replace").strip().splitlines()[-1:]
    vsz, rss = (int(kb) * 1024 for kb in (cwd / "peak").read_text().split()) if (cwd / "peak").exists() else (0, 0)
    return status, took, rss, vsz, (tail[0][:100] if tail else "")


def received(cwd: Path) -> int | None:
    for line in (cwd / "run.out").read_text(errors="replace").splitlines():
        if line.startswith("received "):
            return int(line.split()[1].rstrip(","))
    return None


class ImapBacklog:
    def __init__(self, root: Path, chooser: random.Random):
        self.dovecot = Dovecot()
        self.dovecot.add_user(REFEREE, PASSWORD, wait=False)
        self.dovecot.start()
        started = time.monotonic()
        conn = self.connect()
        for kind, count in STOCK.items():
            conn.create(f"stock-{kind}")
            conn.select(f"stock-{kind}")  # Dovecot makes the folder's maildir
            folder = self.dovecot.maildir(REFEREE) / f".stock-{kind}" / "new"
            moment = int(time.time()) - 86_400
            for n in range(count):  # as a delivery agent writes (an APPEND costs Dovecot an fsync)
                path = folder / f"{moment + n // 100}.M{n}P{os.getpid()}.stock"
                path.write_bytes(make(kind, n, chooser))
                os.utime(path, (moment + n // 100, moment + n // 100))  # INTERNALDATE
                if os.geteuid() == 0:
                    os.chown(path, NOBODY, NOBODY)
            conn.select(f"stock-{kind}", readonly=True)  # Dovecot reads the folder in
        conn.logout()
        print(f"IMAP: the stock delivered in {time.monotonic() - started:.0f} s", flush=True)

    def connect(self) -> imaplib.IMAP4:
        conn = imaplib.IMAP4("127.0.0.1", self.dovecot.imap_port, timeout=300)
        conn.login(REFEREE, PASSWORD)
        return conn

    def config(self) -> str:
        return (
            f'[imap]\nhost = "127.0.0.1"\nport = {self.dovecot.imap_port}\nsecurity = "none"\n'
            f'username = "{REFEREE}"\npassword = "{PASSWORD}"\n'
        )

    def fill(self, parts: list[tuple[str, int]]) -> None:
        conn = self.connect()
        for folder in ("processed", "quarantine"):
            conn.delete(folder)  # NO if it is not there: fine
        for kind, count in parts:
            conn.select(f"stock-{kind}", readonly=True)
            typ, data = conn.uid("COPY", f"1:{count}", "INBOX")
            assert typ == "OK", data
        conn.logout()

    def left(self) -> int:
        conn = self.connect()
        _, data = conn.select("INBOX", readonly=True)
        conn.logout()
        return int(data[0])

    def close(self) -> None:
        self.dovecot.close()


class MaildirBacklog:
    def __init__(self, root: Path, chooser: random.Random):
        self.root = root
        self.stock = root / "stock"
        started = time.monotonic()
        for kind, count in STOCK.items():
            (self.stock / kind).mkdir(parents=True)
            for n in range(count):
                (self.stock / kind / str(n)).write_bytes(make(kind, n, chooser))
        self.box = root / "Maildir"
        print(f"Maildir: the stock written in {time.monotonic() - started:.0f} s", flush=True)

    def config(self) -> str:
        return f'[maildir]\npath = "{self.box}"\n'

    def fill(self, parts: list[tuple[str, int]]) -> None:
        shutil.rmtree(self.box, ignore_errors=True)
        for sub in ("tmp", "new", "cur"):
            (self.box / sub).mkdir(parents=True)
        moment, serial = int(time.time()) - 86_400, 0
        for kind, count in parts:
            for n in range(count):
                serial += 1  # a delivery agent's name: the delivery time first
                name = f"{moment + serial // 1000}.M{serial % 1000}P{os.getpid()}Q{serial}.bench"
                os.link(self.stock / kind / str(n), self.box / "new" / name)

    def left(self) -> int:
        return len(os.listdir(self.box / "new")) + len(os.listdir(self.box / "cur"))

    def close(self) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", default="imap,maildir")
    parser.add_argument("--only", action="append", help="a backlog's name (repeatable); default: all")
    parser.add_argument("--code", type=Path, default=HERE, help="the checkout whose referee runs the pass")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(args.code.resolve()), "PYTHONUNBUFFERED": "1"}
    head = subprocess.run(["git", "-C", str(args.code), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(
        f"referee from {args.code} ({head.stdout.strip() or '?'}); one `run --once` a backlog, fresh games.db; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    chooser = random.Random(37)
    sizes = {kind: len(make(kind, 0, random.Random(0))) for kind in STOCK}
    backlogs = {name: parts for name, parts in BACKLOGS.items() if not args.only or name in args.only}
    with tempfile.TemporaryDirectory(prefix="referee-backlog-") as folder:
        root = Path(folder)
        for source in args.sources.split(","):
            box = (ImapBacklog if source == "imap" else MaildirBacklog)(root / source, chooser)
            try:
                print(
                    f"{'source':8} {'backlog':30} {'MB':>6} {'status':>6} {'received':>8} {'left':>5} "
                    f"{'time s':>7} {'mails/s':>8} {'MB/s':>6} {'peak RSS MiB':>12} {'VSZ MiB':>7}"
                )
                for name, parts in backlogs.items():
                    box.fill(parts)
                    mails = sum(count for _, count in parts)
                    size = sum(count * sizes[kind] for kind, count in parts) / MB
                    home = root / f"home-{source}"
                    shutil.rmtree(home, ignore_errors=True)
                    home.mkdir()
                    (home / "referee.toml").write_text(
                        f'[referee]\naddress = "{REFEREE}"\ndatabase = "games.db"\n\n{box.config()}'
                    )
                    status, took, rss, vsz, tail = run_pass(home, env)
                    print(
                        f"{source:8} {name:30} {size:6.0f} {status:6} {received(home) or 0:8} {box.left():5} "
                        f"{took:7.1f} {mails / took:8.0f} {size / took:6.1f} {rss / MB:12.0f} {vsz / MB:7.0f}"
                        + (f"  ({tail})" if status else ""),
                        flush=True,
                    )
                    shutil.rmtree(home, ignore_errors=True)
            finally:
                box.close()
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
