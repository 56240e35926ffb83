"""A long daemon: `referee serve` for an hour with a few hundred games of
every kind and steady mail, watched for growth.

It starts its own Dovecot (IMAP, LMTP) and SMTP sink on 127.0.0.1, as the
integration tests do (tests/integration/mailstack.py), creates ``--games``
games of all five kinds with deadlines of minutes (so deadlines fall, and
missed moves are filled at random, all through the run), starts ``referee
serve`` as a subprocess and delivers mail into the referee's INBOX over
LMTP at a steady ``--rate``: players answering their prompts with legal
moves (worked out from games.db through the referee's own Tables, sent to
their seat's reply address in answer to the last mail the SMTP sink took
for them; now and then a change of mind; a share of seats never answer),
and junk (HELP, STATUS, forged mail, bounces of the referee's own mail,
auto-replies, mail from strangers).  A finished game's players JOIN a new
one of its kind by mail, and the keeper starts games (`referee new`) when
fewer than nine in ten of ``--games`` are running, so the load holds.

Every ``--interval`` seconds it prints a row: the serve process's RSS
(/proc/PID/status), its open file descriptors (/proc/PID/fd; the fewest of
five looks a fifth of a second apart, leaving out its connection to the
SMTP server, which lives for one drain, and is the drain's sending
process's since that is a process of its own), its IMAP connections (its
established TCP connections to Dovecot's IMAP port, from /proc/PID/net/tcp)
and Dovecot's own count (`doveadm who`), its CPU, and mails handled and
sent so far.  At the end: the growth from the sample at ``--warmup``
minutes to the last, and a verdict (RSS growth under 5 MB, file
descriptors and IMAP connections flat) as PASS or FAIL on the last line.
Asserts nothing: the exit status is 0 either way (2 if the run itself
broke).  Dovecot, the SMTP sink and serve are stopped at the end, on
Ctrl-C, SIGTERM or an error.

With ``--tracemalloc DIR`` (to find what grows; it slows serve and adds
the traces to its RSS, so the table's figures are not the daemon's), serve
is started through a launcher that traces Python's allocations and, every
``--interval`` seconds, writes a snapshot into DIR (snapshot-MMM.pickle)
with the gc's object counts by type, the traced total and glibc's malloc
figures (stats-MMM.json); at the end the report adds what grew between the
warm-up snapshot and the last, by traceback and by type.  The referee
carries no bench hooks: the launcher does it all from outside.
``--compare DIR`` prints that comparison again from a kept DIR (``--warmup``
picks the first snapshot), without running anything.

Run from the top of the checkout (needs dovecot-imapd and dovecot-lmtpd):
    python3 bench/daemon.py [--minutes 60] [--games 300] [--rate 2] [--interval 60] [--warmup 10] [--keep DIR]
                            [--tracemalloc DIR]
A quick smoke run:  python3 bench/daemon.py --minutes 3 --games 20
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import re
import shutil
import signal
import smtplib
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter, deque
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import make_msgid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "integration"))

from mailstack import Dovecot, MailStack, SentMail  # the suite's real servers
from referee_helpers import Referee  # the suite's referee home

import referee
import referee.tables
from referee.mail.tokens import token_address
from referee.rules import get_game
from referee.rules.rng import Rng
from referee.store import Store
from referee.tables import Tables
from referee.timeutil import from_iso

CODE = Path(referee.__file__).resolve().parents[1]  # the referee serve runs: this one
KINDS = ("pure-skill", "bid", "ice", "priority", "bluff")
PLAYERS = "players.example.net"  # no Dovecot users: the SMTP sink takes their mail and drops it
STRANGERS = "elsewhere.example.com"
MB = 1_000_000
RSS_LIMIT = 5 * MB
SKIP = 0.15  # the share of prompts a player never answers: the deadline fills the move at random
CHANGE = 0.10  # the share of sealed moves followed by a change of mind
JUNK = {"help": 3, "status": 3, "forged-token": 2, "forged-from": 2, "bounce": 2, "auto-reply": 1, "stranger": 2}
CONFIG = {  # added to the suite's referee.toml: a site, answers for all, short default deadlines
    "[referee]\n": '[referee]\nname = "Referee"\nsite_dir = "site"\nreplies_per_hour = 100000\n'
    'keep_sent_mail = "20m"\n',
}
DEFAULTS = '\n[defaults]\ndeadline = "4m"\nturn_deadline = "2m"\ndecision_deadline = "1m"\nreminder = "45s"\n'


# -- the referee's mail out, as the SMTP sink takes it ---------------------------------


class Caught:
    """Stands in for MailStack.sent: counts what the sink took and keeps, per
    player, only the last mail to them (the one a player answers) and a few
    hundred recent mails (for bounces), so an hour's mail does not pile up
    in this process."""

    def __init__(self) -> None:
        self.count = 0
        self.last: dict[str, tuple[str, str]] = {}  # player -> (Message-ID, Subject) of the last mail to them
        self.recent: deque[tuple[str, str, str]] = deque(maxlen=500)  # (Message-ID, player, Subject)
        self.lock = threading.Lock()

    def append(self, mail: SentMail) -> None:  # the sink's thread
        message_id = str(mail.message["Message-ID"] or "")
        subject = " ".join(str(mail.message["Subject"] or "").split())
        with self.lock:
            self.count += 1
            for rcpt in mail.rcpt_tos:
                self.last[rcpt.lower()] = (message_id, subject)
                self.recent.append((message_id, rcpt.lower(), subject))

    def last_to(self, player: str) -> tuple[str, str] | None:
        with self.lock:
            return self.last.get(player.lower())

    def some_recent(self, chooser: random.Random) -> tuple[str, str, str] | None:
        with self.lock:
            return chooser.choice(self.recent) if self.recent else None


# -- the serve process, seen from outside -------------------------------------------------


@dataclass
class Sample:
    minute: float
    rss: int  # bytes
    fds: int  # open file descriptors, less the SMTP connection of a drain
    imap: int  # established TCP connections to Dovecot's IMAP port
    dovecot: int  # Dovecot's imap sessions of the referee's user (doveadm who), -1 if unknown
    smtp: int  # connections to the SMTP sink (one while a drain runs)
    cpu: float  # share of one core since the last sample
    handled: int
    sent: int
    queued: int
    running: int
    finished: int
    by_mail: int
    filled: int
    delivered: int


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int) -> float:
    """A process's CPU so far, its own and its children's that it has waited
    for (the referee's sending processes, smtp._Wire: each is waited for as
    its drain ends)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return sum(int(field) for field in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime, stime, cutime, cstime


def connections(pid: int) -> tuple[int, dict[int, int]]:
    """The process's open file descriptors, and its established TCP
    connections by remote port (its sockets' inodes looked up in
    /proc/PID/net/tcp and tcp6)."""
    inodes, fds = set(), 0
    for fd in os.scandir(f"/proc/{pid}/fd"):
        fds += 1
        try:
            target = os.readlink(fd.path)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports: Counter[int] = Counter()
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "01" and fields[9] in inodes:  # ESTABLISHED, ours
                ports[int(fields[2].rpartition(":")[2], 16)] += 1
    return fds, ports


def children(pid: int) -> list[int]:
    """The process's children now (a drain's sending process, smtp._Wire)."""
    found: list[int] = []
    with contextlib.suppress(OSError):  # (the process gone)
        for task in os.scandir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):  # (a thread that ended meanwhile)
                found += [int(child) for child in Path(task.path, "children").read_text().split()]
    return found


def dovecot_sessions(dovecot: Dovecot, user: str) -> int:
    """Dovecot's view: the user's IMAP sessions, by `doveadm who`."""
    doveadm = shutil.which("doveadm") or "/usr/bin/doveadm"
    try:
        out = subprocess.run(
            [doveadm, "-c", str(dovecot.conf), "who", "-1"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return -1
    return sum(1 for line in out.splitlines()[1:] if line.split()[:2] == [user, "imap"])


class Watch:
    """Samples the serve process and games.db."""

    def __init__(self, pid: int, dovecot: Dovecot, stack: MailStack, database: Path):
        self.pid, self.dovecot, self.stack = pid, dovecot, stack
        self.db = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
        self.started = time.monotonic()
        self.last_cpu, self.last_at = cpu_seconds(pid), time.monotonic()

    def sample(self, delivered: int) -> Sample:
        fds, imap, smtp = [], [], []
        for look in range(5):  # the fewest of five looks: a drain's SMTP connection comes and goes
            if look:
                time.sleep(0.2)
            count, ports = connections(self.pid)
            sending = []  # (a drain's sending process)
            for child in children(self.pid):
                with contextlib.suppress(OSError):  # (it ended meanwhile)
                    sending.append(connections(child)[1])
            smtp.append(ports[self.stack.smtp_port] + sum(theirs[self.stack.smtp_port] for theirs in sending))
            fds.append(count - ports[self.stack.smtp_port])
            imap.append(ports[self.dovecot.imap_port])
        now, cpu = time.monotonic(), cpu_seconds(self.pid)
        share = (cpu - self.last_cpu) / max(now - self.last_at, 1e-9)
        self.last_cpu, self.last_at = cpu, now
        db = self.db
        states = dict(db.execute("select state, count(*) from games group by state").fetchall())
        sources = dict(db.execute("select source, count(*) from moves group by source").fetchall())
        outbox = dict(db.execute("select state, count(*) from outbox group by state").fetchall())
        return Sample(
            minute=(now - self.started) / 60,
            rss=rss_bytes(self.pid),
            fds=min(fds),
            imap=min(imap),
            dovecot=dovecot_sessions(self.dovecot, self.stack.referee),
            smtp=max(smtp),
            cpu=share,
            handled=db.execute("select count(*) from messages").fetchone()[0],
            sent=outbox.get("sent", 0),
            queued=outbox.get("queued", 0),
            running=states.get("running", 0),
            finished=states.get("finished", 0),
            by_mail=sources.get("mail", 0),
            filled=sources.get("random", 0),
            delivered=delivered,
        )

    def close(self) -> None:
        self.db.close()


HEADER = (
    f"{'min':>5} {'RSS MB':>7} {'fds':>4} {'imap':>4} {'dove':>4} {'smtp':>4} {'cpu%':>5} "
    f"{'handled':>7} {'sent':>6} {'queued':>6} {'running':>7} {'done':>5} {'by mail':>7} {'filled':>6} "
    f"{'in':>6}"
)


def row(s: Sample) -> str:
    return (
        f"{s.minute:5.1f} {s.rss / MB:7.1f} {s.fds:4} {s.imap:4} {s.dovecot:4} {s.smtp:4} {s.cpu * 100:5.1f} "
        f"{s.handled:7} {s.sent:6} {s.queued:6} {s.running:7} {s.finished:5} {s.by_mail:7} {s.filled:6} "
        f"{s.delivered:6}"
    )


# -- what grows inside serve (--tracemalloc) ----------------------------------------------

LAUNCHER = r"""
# `python -m referee ARGS`, with tracemalloc on (BENCH_TRACE_FRAMES frames, 16
# unless set; 0: off) and, at the first wait between passes once INTERVAL
# seconds have gone by, a snapshot and the process's memory figures written
# into DIR: between passes, so what a pass holds for a moment is not counted.
import signal, sys
from referee import launch
for signum in (signal.SIGTERM, signal.SIGINT):
    signal.signal(signum, launch.note)
import asyncio.tasks, ctypes, gc, json, os, re, tempfile, threading, time, tracemalloc
from collections import Counter
from pathlib import Path
from referee.runner import Runner
out, interval, argv = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
frames = int(os.environ.get("BENCH_TRACE_FRAMES", "16"))
if frames:
    tracemalloc.start(frames)
started = time.monotonic()
due = [started + interval]

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

def mallinfo():
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = MallInfo2
        info = libc.mallinfo2()
        return {name: getattr(info, name) for name, _ in MallInfo2._fields_}
    except (OSError, AttributeError):
        return {}

def sqlite_memory():
    try:
        lib = ctypes.CDLL("libsqlite3.so.0")
        lib.sqlite3_memory_used.restype = ctypes.c_int64
        return lib.sqlite3_memory_used()
    except (OSError, AttributeError):
        return -1

def pymalloc():
    # sys._debugmallocstats writes to the C stderr: caught in a file for a moment (between passes: no log line then)
    with tempfile.TemporaryFile() as caught:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(caught.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        caught.seek(0)
        text = caught.read().decode("ascii", "replace")
    figures = {}
    for key, pattern in (("arenas", r"# arenas allocated current\s*=\s*([\d,]+)"),
                         ("in_blocks", r"# bytes in allocated blocks\s*=\s*([\d,]+)"),
                         ("free_blocks", r"# bytes in available blocks\s*=\s*([\d,]+)"),
                         ("total", r"\nTotal\s*=\s*([\d,]+)")):
        match = re.search(pattern, text)
        figures[key] = int(match[1].replace(",", "")) if match else -1
    return figures

def rss():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0

def dump():
    minute = (time.monotonic() - started) / 60
    if frames:
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<string>")])
        snapshot.dump(str(out / f"snapshot-{minute:05.1f}.pickle"))
    objects = gc.get_objects()
    types = Counter(type(o).__qualname__ for o in objects)
    del objects
    stats = {"minute": minute, "rss": rss(), "traced": tracemalloc.get_traced_memory()[0],
             "objects": sum(types.values()), "types": dict(types.most_common(300)), "gc_counts": gc.get_count(),
             "garbage": len(gc.garbage), "threads": threading.active_count(),
             "tasks": len(asyncio.tasks._all_tasks) if hasattr(asyncio.tasks, "_all_tasks") else -1,
             "mallinfo": mallinfo(), "sqlite": sqlite_memory(), "pymalloc": pymalloc()}
    (out / f"stats-{minute:05.1f}.json").write_text(json.dumps(stats))

wait = Runner._wait

async def waiting(self, seconds, stop):
    if time.monotonic() >= due[0]:
        due[0] += interval * max(1, (time.monotonic() - due[0]) // interval + 1)
        try:
            dump()
        except Exception as error:  # noqa: BLE001
            print(f"bench snapshot failed: {error!r}", file=sys.stderr, flush=True)
    return await wait(self, seconds, stop)

Runner._wait = waiting
from referee.cli import main
sys.exit(main(argv))
"""


def compare(trace: Path, warmup: float, top: int = 25) -> None:
    """What grew inside serve between the snapshot nearest ``warmup``
    minutes and the last: the process's memory by who holds it (Python's
    traced blocks, pymalloc's arenas, glibc's malloc, SQLite), objects by
    type (gc), and the traced growth by traceback (tracemalloc)."""

    def minute(path: Path) -> float:
        return float(path.stem.partition("-")[2])

    stats = {minute(path): json.loads(path.read_text()) for path in sorted(trace.glob("stats-*.json"))}
    if len(stats) < 2:
        print(f"--tracemalloc: fewer than two samples in {trace}")
        return
    first = min(stats, key=lambda m: abs(m - warmup))
    last = max(stats)
    print(f"--tracemalloc: what grew inside serve from minute {first:.1f} to {last:.1f} (MB)")
    for data in stats.values():
        mall, py = data.get("mallinfo") or {}, data.get("pymalloc") or {}
        print(
            f"  minute {data['minute']:5.1f}: RSS {data['rss'] / MB:6.1f}, traced {data['traced'] / MB:5.1f}, "
            f"pymalloc arenas {py.get('arenas', -1)} (blocks in use {py.get('in_blocks', 0) / MB:5.1f}, free "
            f"{py.get('free_blocks', 0) / MB:5.1f}), malloc in use {mall.get('uordblks', 0) / MB:6.1f}, free "
            f"{mall.get('fordblks', 0) / MB:5.1f}, mmapped {mall.get('hblkhd', 0) / MB:5.1f}, SQLite "
            f"{data.get('sqlite', -1) / MB:5.1f}; objects {data['objects']}, tasks {data['tasks']}, "
            f"threads {data['threads']}"
        )
    types = Counter(stats[last]["types"])
    types.subtract(stats[first]["types"])
    print(
        "  objects by type, the most grown: "
        + ", ".join(f"{name} {n:+d}" for name, n in types.most_common(15) if n > 0)
    )
    snaps = {minute(path): path for path in trace.glob("snapshot-*.pickle")}
    if first not in snaps or last not in snaps:
        return
    gc.collect()
    old, new = tracemalloc.Snapshot.load(str(snaps[first])), tracemalloc.Snapshot.load(str(snaps[last]))
    diffs = new.compare_to(old, "traceback")
    growth = sum(d.size_diff for d in diffs)
    print(f"  traced growth {growth / MB:+.2f} MB in {len(diffs)} tracebacks; the largest:")
    for diff in diffs[:top]:
        frames = [
            f"{f.filename.rpartition('/site-packages/')[2].replace(str(CODE) + '/', '')}:{f.lineno}"
            for f in reversed(diff.traceback)
        ]  # the most recent call first
        print(f"  {diff.size_diff / 1000:+9.1f} kB {diff.count_diff:+7d} blocks  {' < '.join(frames[:7])}")
    print("  by file:")
    for diff in new.compare_to(old, "filename")[:12]:
        print(f"  {diff.size_diff / 1000:+9.1f} kB {diff.count_diff:+7d} blocks  {diff.traceback[0].filename}")


# -- the players --------------------------------------------------------------------------


@dataclass
class Pending:
    """A seat's answer to a phase's prompt, due at ``due`` (monotonic)."""

    game: int
    phase: int
    seat: int
    due: float
    deadline: datetime
    again: bool = False  # a change of mind: the seat has moved already


class Players:
    """Every game's players: they see a phase open (games.db), think a
    while, and mail a legal move to their seat's reply address in answer to
    the referee's last mail to them; a share never answer."""

    def __init__(self, stack: MailStack, caught: Caught, database: Path, chooser: random.Random):
        self.stack, self.caught, self.chooser = stack, caught, chooser
        self.db = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
        referee.tables._REPLAYS_KEPT = 100_000  # this process's reading cache: every game, so reads stay cheap
        referee.tables._PHASES_KEPT = 10**9
        self.tables = Tables(Store(database))
        self.seen: set[tuple[int, int, int]] = set()  # (game, phase, seat) prompts taken note of
        self.pending: list[Pending] = []
        self.addresses: set[str] = set()
        self.joined: set[int] = set()  # finished games whose players have asked for a new one
        self.counts: Counter[str] = Counter()

    def look(self) -> None:
        """Note the phases that opened since the last look, and when each
        waiting seat will answer (if it will)."""
        now, wall = time.monotonic(), datetime.now(UTC)
        open_phases = self.db.execute(
            "select p.game_id, p.number, p.movers, p.sealed, p.deadline from phases p join games g on g.id = p.game_id"
            " where p.resolved_at is null and g.state = 'running'"
        ).fetchall()
        humans = {}
        for game, seat, address, _token in self.db.execute(
            "select s.game_id, s.seat, s.address, s.token from seats s join games g on g.id = s.game_id"
            " where g.state = 'running' and s.address is not null and s.bot_since_phase is null"
        ):
            humans[game, seat] = address
            self.addresses.add(address)
        for game, number, movers, _sealed, deadline in open_phases:
            moved = {
                seat
                for (seat,) in self.db.execute(
                    "select distinct seat from moves where game_id = ? and phase = ?", (game, number)
                )
            }
            for seat in json.loads(movers):
                if (game, number, seat) in self.seen or seat in moved or (game, seat) not in humans:
                    continue
                self.seen.add((game, number, seat))
                if self.chooser.random() < SKIP:
                    self.counts["left to the deadline"] += 1
                    continue
                closes = from_iso(deadline)
                left = (closes - wall).total_seconds()
                self.pending.append(
                    Pending(game, number, seat, now + self.chooser.uniform(2, max(3, 0.8 * left)), closes)
                )

    def next_move(self) -> tuple[str, str, bytes] | None:
        """The next answer due: (sender, recipient, mail), or None."""
        now, wall = time.monotonic(), datetime.now(UTC)
        self.pending.sort(key=lambda p: p.due)
        while self.pending and self.pending[0].due <= now:
            answer = self.pending.pop(0)
            if (answer.deadline - wall).total_seconds() < 3:
                self.counts["too late to answer"] += 1
                continue
            mail = self._answer(answer)
            if mail:
                return mail
        return None

    def _answer(self, answer: Pending) -> tuple[str, str, bytes] | None:
        table = self.tables.table(answer.game)
        phase = table.open_phase
        if phase is None or phase["number"] != answer.phase:
            self.counts["phase closed before the answer"] += 1
            return None
        if (answer.seat not in table.waiting_for(phase)) != answer.again or not table.human(answer.seat):
            self.counts["no longer owed"] += 1
            return None
        rules, state = table.rules, table.state
        if self.chooser.random() < 0.7:
            move = rules.random_move(state, answer.seat, Rng(self.chooser.randbytes(16), "bench"))
        else:
            move = self.chooser.choice(rules.legal_moves(state, answer.seat))
        if phase["sealed"] and not answer.again and self.chooser.random() < CHANGE:
            self.pending.append(
                Pending(
                    answer.game,
                    answer.phase,
                    answer.seat,
                    answer.due + self.chooser.uniform(5, 40),
                    answer.deadline,
                    again=True,
                )
            )
        self.counts["change of mind" if answer.again else "move"] += 1
        return self.reply(table, answer.seat, rules.move_text(move))

    def reply(self, table, seat: int, text: str) -> tuple[str, str, bytes]:
        """``text`` from the seat's player to its reply address, in answer to
        the last mail the referee sent them (when it was about this game)."""
        player, to = table.seats[seat]["address"], token_address(self.stack.referee, table.seats[seat]["token"])
        last = self.caught.last_to(player)
        headers = {"Message-ID": make_msgid(domain=PLAYERS)}
        if last and table.tag() in last[1]:
            subject = f"Re: {last[1]}"
            headers.update({"In-Reply-To": last[0], "References": last[0]})
        else:
            subject = f"Re: {table.tag(seat)} your move"
        return player, to, self.stack.compose(player, to, subject, f"{text}\n", headers)

    def joins(self) -> list[tuple[str, str, bytes]]:
        """A JOIN of the same kind from each player of every game finished
        since the last look."""
        mails = []
        for game, kind in self.db.execute("select id, kind from games where state = 'finished'").fetchall():
            if game in self.joined:
                continue
            self.joined.add(game)
            for (address,) in self.db.execute(
                "select address from seats where game_id = ? and address is not null and bot_since_phase is null",
                (game,),
            ):
                raw = self.stack.compose(
                    address,
                    self.stack.referee,
                    "another game",
                    f"JOIN {kind}\n",
                    {"Message-ID": make_msgid(domain=PLAYERS)},
                )
                mails.append((address, self.stack.referee, raw))
        self.counts["join"] += len(mails)
        return mails

    def running(self) -> int:
        return self.db.execute("select count(*) from games where state = 'running'").fetchone()[0]

    def junk(self) -> tuple[str, str, bytes] | None:
        """One piece of junk: mail that moves nothing."""
        kind = self.chooser.choices(list(JUNK), weights=list(JUNK.values()))[0]
        referee_address, compose = self.stack.referee, self.stack.compose
        stranger = f"someone{self.chooser.randrange(10**6)}@{STRANGERS}"
        seats = self.db.execute(
            "select s.game_id, s.seat, s.address, s.token from seats s join games g "
            "on g.id = s.game_id where g.state = 'running' and s.address is not null "
            "order by random() limit 1"
        ).fetchall()
        if not seats and kind != "stranger":
            return None
        game, _seat, player, token = seats[0] if seats else (0, 0, stranger, "")
        headers = {"Message-ID": make_msgid(domain=PLAYERS)}
        self.counts[kind] += 1
        if kind == "help":
            return player, referee_address, compose(player, referee_address, "help", "HELP\n", headers)
        if kind == "status":
            to = token_address(referee_address, token)
            return player, to, compose(player, to, "status?", "STATUS\n", headers)
        if kind == "forged-token":  # the seat's token, another From: its owner is told
            to = token_address(referee_address, token)
            return stranger, to, compose(stranger, to, "Re: your move", "bid 5\n", headers)
        if kind == "forged-from":  # the seat's From, no token: changes nothing
            return player, referee_address, compose(player, referee_address, f"game {game}", "bid 5\npass\n", headers)
        if kind == "bounce":
            return self._bounce()
        if kind == "auto-reply":
            headers.update({"Auto-Submitted": "auto-replied", "X-Autoreply": "yes"})
            return (
                player,
                referee_address,
                compose(player, referee_address, "Out of office", "I am away until Monday.\n", headers),
            )
        return (
            stranger,
            referee_address,
            compose(stranger, referee_address, "hello", "Hello, what is this? Can I play?\n", headers),
        )

    def _bounce(self) -> tuple[str, str, bytes] | None:
        """A delivery status notification for a recent mail of the referee's."""
        recent = self.caught.some_recent(self.chooser)
        if recent is None:
            return None
        message_id, player, subject = recent
        boundary = f"bounce{self.chooser.randrange(10**9)}"
        daemon = f"MAILER-DAEMON@{PLAYERS}"
        raw = (
            f"From: Mail Delivery System <{daemon}>\r\nTo: {self.stack.referee}\r\n"
            f"Subject: Undelivered Mail Returned to Sender\r\nMessage-ID: {make_msgid(domain=PLAYERS)}\r\n"
            f"Auto-Submitted: auto-replied\r\nMIME-Version: 1.0\r\n"
            f'Content-Type: multipart/report; report-type=delivery-status; boundary="{boundary}"\r\n\r\n'
            f"--{boundary}\r\nContent-Type: text/plain\r\n\r\nThe mail could not be delivered.\r\n"
            f"--{boundary}\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; {PLAYERS}\r\n\r\n"
            f"Final-Recipient: rfc822; {player}\r\nAction: failed\r\nStatus: 5.2.2\r\n"
            f"Diagnostic-Code: smtp; 552 5.2.2 mailbox full\r\n\r\n"
            f"--{boundary}\r\nContent-Type: text/rfc822-headers\r\n\r\nFrom: {self.stack.referee}\r\n"
            f"To: {player}\r\nSubject: {subject}\r\nMessage-ID: {message_id}\r\n\r\n--{boundary}--\r\n"
        )
        return "", self.stack.referee, raw.encode()

    def close(self) -> None:
        self.db.close()


class Lmtp:
    """Delivery into Dovecot over one LMTP connection, made again if it drops."""

    def __init__(self, dovecot: Dovecot):
        self.dovecot, self.conn = dovecot, None
        self.delivered = 0

    def deliver(self, sender: str, to: str, raw: bytes) -> None:
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = smtplib.LMTP(
                        self.dovecot.host, self.dovecot.lmtp_port, local_hostname=PLAYERS, timeout=30
                    )
                self.conn.sendmail(sender, [to], raw)
                self.delivered += 1
                return
            except (smtplib.SMTPServerDisconnected, OSError):
                self.conn = None
                if attempt:
                    raise

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.quit()
            except (smtplib.SMTPException, OSError):
                pass


# -- the run ------------------------------------------------------------------------------


def game_args(kind: str, players: list[str], chooser: random.Random) -> list[str]:
    """`referee new` arguments for a game of ``kind``: deadlines of minutes."""
    args = [kind, *[x for p in players for x in ("--player", p)]]
    rules = get_game(kind)
    if len(players) < rules.max_seats and chooser.random() < 0.1:
        args += ["--bots", "1"]
    if kind in ("pure-skill", "bid"):
        args += ["--deadline", f"{chooser.choice((3, 4, 5, 6))}m", "--turn-deadline", "2m", "--decision-deadline", "1m"]
    else:
        args += [
            "--deadline",
            "4m",
            "--turn-deadline",
            f"{chooser.choice((60, 90, 120, 180))}s",
            "--decision-deadline",
            "60s",
        ]
    if chooser.random() < 0.2:
        args += ["--settle", "20s"]
    return args


class Run:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.chooser = random.Random(args.seed)
        self.home = args.keep or Path(tempfile.mkdtemp(prefix="referee-daemon-"))
        self.home.mkdir(parents=True, exist_ok=True)
        self.dovecot: Dovecot | None = None
        self.stack: MailStack | None = None
        self.serve: subprocess.Popen | None = None
        self.watch: Watch | None = None
        self.players: Players | None = None
        self.lmtp: Lmtp | None = None
        self.serial = 0
        self.samples: list[Sample] = []

    # -- setting up, and taking down ----------------------------------------------

    def start(self) -> None:
        self.dovecot = Dovecot(root=self.home / "dovecot" if self.args.keep else None)
        MailStack.provision(self.dovecot, 1)  # before start: no wait
        self.dovecot.start()
        self.stack = MailStack(self.dovecot)
        self.caught = Caught()
        self.stack.sent = self.caught  # type: ignore[assignment]
        self.stack.start()
        self.referee = Referee(self.stack, self.home, extra=DEFAULTS)
        text = self.referee.cfg.read_text()
        for old, new in CONFIG.items():
            text = text.replace(old, new, 1)
        self.referee.cfg.write_text(text)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CODE), os.environ.get("PYTHONPATH")]))
        started = time.monotonic()
        for number in range(self.args.games):
            self.new_game(KINDS[number % len(KINDS)])
        print(
            f"{self.args.games} games created in {time.monotonic() - started:.0f} s "
            f"({', '.join(KINDS)}); starting referee serve",
            flush=True,
        )
        self.players = Players(self.stack, self.caught, self.referee.db, self.chooser)
        self.lmtp = Lmtp(self.dovecot)
        self.start_serve()

    def new_game(self, kind: str) -> None:
        """The keeper's `referee new` (in this process, as the tests run the CLI)."""
        rules = get_game(kind)
        count = self.chooser.randint(rules.min_seats, min(rules.max_seats, 5))
        players = []
        for _ in range(count):
            self.serial += 1
            players.append(f"p{self.serial}@{PLAYERS}")
        result = self.referee.cli("new", *game_args(kind, players, self.chooser))
        if result.status != 0:
            raise RuntimeError(f"referee new {kind} failed: {result.err}")

    def start_serve(self) -> None:
        err = self.home / "serve.err"
        argv = self.referee.command("serve")
        if self.args.tracemalloc:
            self.args.tracemalloc.mkdir(parents=True, exist_ok=True)
            argv = [argv[0], "-c", LAUNCHER, str(self.args.tracemalloc), str(self.args.interval), *argv[3:]]
        with open(self.home / "serve.out", "wb") as out, open(err, "wb") as errors:
            self.serve = subprocess.Popen(
                argv, cwd=self.home, stdout=out, stderr=errors, env={**os.environ, "PYTHONUNBUFFERED": "1"}
            )
        deadline = time.monotonic() + 120
        while "serving; stop with SIGTERM" not in err.read_text(errors="replace"):
            if self.serve.poll() is not None:
                raise RuntimeError(f"referee serve exited with status {self.serve.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"referee serve did not start in 120 s:\n{self.log_tail()}")
            time.sleep(0.1)
        self.watch = Watch(self.serve.pid, self.dovecot, self.stack, self.referee.db)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join((self.home / "serve.err").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        """Everything this run started, whatever state it is in."""
        status = None
        if self.serve is not None:
            if self.serve.poll() is None:
                self.serve.terminate()
            try:
                status = self.serve.wait(30)
            except subprocess.TimeoutExpired:
                self.serve.kill()
                self.serve.wait()
        for closing in (self.watch, self.players, self.lmtp):
            if closing is not None:
                closing.close()
        if self.stack is not None:
            self.stack.stop()
        if self.dovecot is not None:
            self.dovecot.close()
        self.stopped_with = status

    # -- the hour -----------------------------------------------------------------

    def run(self) -> None:
        args, players = self.args, self.players
        start = time.monotonic()
        end = start + args.minutes * 60
        next_sample = start
        next_mail = start
        next_look = start
        next_churn = start + 30
        extra: deque[tuple[str, str, bytes]] = deque()  # JOINs waiting their turn
        junk_next = False  # whether the next mail is junk: a share of the mail delivered
        print(HEADER, flush=True)
        while True:
            now = time.monotonic()
            if self.serve.poll() is not None:
                raise RuntimeError(f"referee serve exited with status {self.serve.returncode}:\n{self.log_tail()}")
            if now >= next_sample or now >= end:
                sample = self.watch.sample(self.lmtp.delivered)
                self.samples.append(sample)
                print(row(sample), flush=True)
                next_sample += args.interval
                if now >= end:
                    break
                continue
            if now >= next_look:
                players.look()
                next_look = now + 5
            if now >= next_churn:
                extra.extend(players.joins())
                missing = int(0.9 * args.games) - players.running()
                for _ in range(min(missing, 5)):
                    self.new_game(self.chooser.choice(KINDS))
                    players.counts["keeper's new game"] += 1
                next_churn = now + 30
            if now >= next_mail:
                if extra:
                    mail = extra.popleft()
                elif junk_next:
                    mail = players.junk()
                else:
                    mail = players.next_move()
                if mail:
                    self.lmtp.deliver(*mail)
                    junk_next = self.chooser.random() < args.junk
                    next_mail = max(next_mail + 1 / args.rate, now - 1)  # steady: no burst after a stall
                else:  # no answer due yet: look again soon
                    next_mail = now + 0.25
            time.sleep(max(0.0, min(next_mail, next_sample, next_look, end) - time.monotonic()))

    def report(self) -> None:
        args, samples = self.args, self.samples
        print(
            f"mail delivered: {self.lmtp.delivered}; "
            + ", ".join(f"{k} {v}" for k, v in sorted(self.players.counts.items()))
        )
        print(f"mail the SMTP sink took from the referee: {self.caught.count}")
        err = (self.home / "serve.err").read_text(errors="replace")
        levels = Counter(match[1] for match in re.finditer(r"^\S+ \S+ (WARNING|ERROR|CRITICAL) ", err, re.MULTILINE))
        warnings = Counter(
            re.sub(r"<[^>]*>|\S+@\S+|\d+(\.\d+)*", "N", line.split(" ", 4)[-1])
            for line in err.splitlines()
            if " WARNING " in line
        )
        troubles = [
            line for line in err.splitlines() if " ERROR " in line or " CRITICAL " in line or "Traceback" in line
        ]
        print(
            f"serve stopped with status {self.stopped_with}; its log: {levels['WARNING']} warnings, "
            f"{levels['ERROR'] + levels['CRITICAL']} errors, {err.count('Traceback')} tracebacks"
            + "".join(f"\n  {n} x {text[:150]}" for text, n in warnings.most_common(6))
            + "".join(f"\n  {line[:200]}" for line in troubles[:10])
        )
        if len(samples) < 2:
            print("FAIL: too few samples to judge")
            return
        warmup = min(args.warmup, args.minutes / 3)
        base = next((s for s in samples if s.minute >= warmup - 0.05), samples[-1])
        last = samples[-1]
        after = [s for s in samples if s.minute >= base.minute]
        rss = last.rss - base.rss
        print(
            f"growth from minute {base.minute:.1f} (after warm-up) to minute {last.minute:.1f}: "
            f"RSS {rss / MB:+.2f} MB ({base.rss / MB:.1f} -> {last.rss / MB:.1f}; highest after warm-up "
            f"{max(s.rss for s in after) / MB:.1f}), fds {last.fds - base.fds:+d} ({base.fds} -> {last.fds}), "
            f"IMAP connections {last.imap - base.imap:+d} ({base.imap} -> {last.imap}; Dovecot says "
            f"{base.dovecot} -> {last.dovecot})"
        )
        verdicts = [
            ("RSS growth under 5 MB", rss < RSS_LIMIT),
            ("fds flat", last.fds <= base.fds),
            ("IMAP connections flat", last.imap <= base.imap and last.imap <= 1),
            ("serve stopped cleanly", self.stopped_with == 0),
        ]
        failed = [name for name, ok in verdicts if not ok]
        if args.tracemalloc:
            compare(args.tracemalloc, base.minute)
        print(
            ("PASS: " if not failed else "FAIL: ")
            + "; ".join(f"{name}{'' if ok else ' (NOT)'}" for name, ok in verdicts)
        )


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60, help="how long serve runs")
    parser.add_argument("--games", type=int, default=300, help="games at the start (all five kinds)")
    parser.add_argument("--rate", type=float, default=2.0, help="mails delivered a second")
    parser.add_argument("--junk", type=float, default=0.1, help="the share of mail that is junk")
    parser.add_argument("--interval", type=float, default=60, help="seconds between samples")
    parser.add_argument(
        "--warmup",
        type=float,
        default=10,
        help="minutes of warm-up: growth is counted from the sample then (at most a third of the run)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep the referee's home (games.db, serve's log, site, Dovecot) here")
    parser.add_argument(
        "--tracemalloc",
        type=Path,
        metavar="DIR",
        help="trace serve's allocations, a snapshot into DIR every --interval (slows serve, adds to its RSS)",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="DIR",
        help="print what grew between a kept --tracemalloc DIR's snapshots, and run nothing",
    )
    args = parser.parse_args()
    if args.compare:
        compare(args.compare, args.warmup)
        return 0
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even started in the background, where it is ignored
    run = Run(args)
    broke = None
    try:
        run.start()
        run.run()
    except KeyboardInterrupt as stop:
        broke = f"stopped early ({str(stop) or 'Ctrl-C'})"
    except Exception as error:  # noqa: BLE001 - reported, and everything still stopped
        broke = f"the run broke: {error!r}"
    finally:
        run.stop()
    try:
        if broke:
            print(broke, flush=True)
        if run.players is not None and run.lmtp is not None:
            run.report()
        else:
            print("FAIL: the run never started")
    finally:
        if not args.keep:
            shutil.rmtree(run.home, ignore_errors=True)
    return 2 if broke and not run.samples else 0


if __name__ == "__main__":
    sys.exit(main())
