"""Power cuts, the long version: at least a hundred of them over games of
all five kinds, with deadlines falling during the run, and then the checks.

It starts its own Dovecot (IMAP, LMTP) and SMTP sink on 127.0.0.1, as the
integration tests do (tests/integration/mailstack.py), builds the power-cut
shim (tests/integration/powercut.py: under it, each fsync of games.db or
its journal keeps a copy of what the disk is sure to hold) and creates
``--games`` games of all five kinds with deadlines of seconds to a minute,
so deadlines fall, and missed moves are filled at random, all through the
run.  Players read their mail as the SMTP sink takes it: told of a phase
they move in (a mail whose Message-ID names the phase), they answer it
with a legal move (worked out from games.db through the referee's own
Tables, on a read-only connection), by LMTP into the referee's INBOX, in
reply to that mail; some change their minds in a sealed round, some answer
in the last seconds before the deadline (or just after), some never answer.

The referee runs as `serve` and as `run --once` subprocesses under the
shim, SIGKILLed at random moments, some aimed: just after a deadline or a
settle time ends (mid-resolution), just after a player's mail lands
(mid-pass), just after the SMTP sink took a mail (mid-send), or at one of
tests/integration/crashpoint.py's points.  Each kill is a power cut
(powercut.cut: games.db and its journal become their last flushed copies, a
file never flushed disappears), followed by `referee status` under the shim,
the first to open games.db again.  This process never writes games.db and
closes its read-only connection before every kill.  After ``--cuts`` cuts a
clean `serve` plays on (players still answering) until every game is over
or ``--play-minutes`` pass, then clean `run --once` passes until quiet.

The checks, each printed with its counts, per kind of game:

1. every mail the SMTP sink took is known to games.db's outbox under its
   Message-ID;
2. no two mails taken under different Message-IDs are the same mail (same
   recipients, subject and bytes but for Date and Message-ID), and no
   player's mail is answered under two Message-IDs: nothing was sent again
   under a new Message-ID;
3. no in-time reply was refused: every answer refusing a move for its
   timing ("after the deadline", "before ... opened", "after ... closed",
   "which is over") is for a mail the server received after that phase's
   deadline, or after it closed by the rules (pure-skill.md R6: once every
   mover has moved, the settle time after the last of those moves
   received), by games.db's final record, or in the very second a phase
   without a settle time closed but delivered after the mail that closed
   it (R6: the round ends as the last bid arrives; receipt times are whole
   seconds); or for a mail that came after the fetch of the pass that
   resolved the phase (the race R8 allows: a mail in time counts "as long
   as the round has not yet been resolved").  Each referee run logs what
   every IMAP fetch gave (a launcher wraps the referee's ImapSource.fetch
   from outside, as crashpoint.py does) and each phase it resolved; the
   resolution that stands is the last one logged (the record's resolved_at
   is the moment the phase became due, not when a run resolved it), so a
   mail the run that resolved the phase had in hand before is never
   excused, whatever came between (a cut, or nothing);
4. no move lost or doubled: every mail a player sent was handled; each that
   was in time by the final record is in games.db's moves once, for its
   game, phase, seat and move (or a later mail of the seat in the phase
   is: superseded), or was refused under the same excuse as in 3; no mail
   is counted twice, and none that was late counts.  Phases whose recorded
   closes_at is not R6's close are noted;
5. every finished game's record verifies (`referee render --dir X --force`,
   then `referee verify X/games/N/record.json`, whose last line is the
   verdict), and every record digest a player received (start, result and
   final mails: at the start, after each phase, at the end) is the one
   games.db's final record gives.

Then the games finished per kind, the cuts (where they landed, what became
of games.db's files), the time taken, and PASS or FAIL; the exit status is
1 if any check failed (the referee's home is then kept, and named), 2 if the
run itself broke, 0 otherwise.  Dovecot, the SMTP sink and the referee are
stopped at the end, on Ctrl-C, SIGTERM or an error.

Run from the top of the checkout (needs dovecot-imapd, dovecot-lmtpd, gcc):
    python3 bench/powercut.py [--cuts 100] [--games 50] [--seed 1] [--play-minutes 20] [--keep DIR]
A smoke run:  python3 bench/powercut.py --cuts 8 --games 10 --play-minutes 2
The checks again on a kept home:  python3 bench/powercut.py --recheck DIR
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email import message_from_bytes, policy
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests" / "integration"
sys.path.insert(0, str(HERE.parent))  # bench.daemon
sys.path.insert(0, str(TESTS))  # before bench/: `powercut` is the suite's shim, not this file

import powercut  # noqa: E402
import sqlite_utils  # noqa: E402
from crashpoint import FIRED, POINTS  # noqa: E402
from mailstack import Dovecot, MailStack, SentMail  # noqa: E402
from referee_helpers import Referee  # noqa: E402

import referee  # noqa: E402
import referee.tables  # noqa: E402
from bench.daemon import KINDS, PLAYERS, Lmtp  # noqa: E402
from referee.record import mail_digests, short_digest  # noqa: E402
from referee.rules.rng import Rng  # noqa: E402
from referee.store import RECORD_TABLES, Store, _Kept  # noqa: E402
from referee.tables import Tables  # noqa: E402
from referee.timeutil import from_iso, iso  # noqa: E402

assert Path(powercut.__file__).resolve().parent == TESTS, powercut.__file__

CODE = Path(referee.__file__).resolve().parents[1]  # the referee the subprocesses run: this one
CONFIG = {"[referee]\n": '[referee]\nname = "Referee"\nreplies_per_hour = 100000\n'}
DEFAULTS = '\n[defaults]\nreminder = "5s"\n'  # a reminder in a phase's last 5 s: more mail near deadlines
SKIP = 0.10  # the share of prompts never answered: the deadline fills the move at random
NEAR = 0.10  # the share answered in the last seconds before the deadline, or just after it
CHANGE = 0.12  # the share of sealed moves followed by a change of mind
TAGGED = re.compile(r"\.g(\d+)p(\d+)@[^>]*>\s*$")  # a game's Message-ID names its phase (tokens.phase_tag)
AIMS = {"random": 30, "deadline": 25, "delivery": 15, "sink": 15, "point": 15}  # how kills are aimed, by weight
RUN_CAP = 12.0  # seconds a referee run is given before the kill comes anyway
TIMING = [  # the refusals for a move's timing (referee/engine/phases.py _check_timing, _check_thread)
    ("after the deadline", re.compile(r"Your mail reached the server at (\S+), after the deadline of (.+?) \(")),
    ("before it opened", re.compile(r"Your mail reached the server at (\S+), before (.+?) opened;")),
    ("after it closed", re.compile(r"Your mail reached the server at (\S+), after (.+?) closed \(")),
    ("which is over", re.compile(r"Your mail answers the referee's mail about (.+?), which is over\.")),
]
REFUSAL = re.compile(r"Not done: (.+?)(?: Moves you can make now| Did you mean| Nothing was changed|$)")
RESOLVED = re.compile(r"^game (\d+) (.+) resolved$")
LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (\w+) (\S+) (.*)$")  # time, level, logger, text
LANDED = [  # what the referee logged last before a kill, and what it was doing then
    ("mid-send", re.compile(r"^sent mail ")),
    ("mid-resolution", re.compile(r"^game \d+ .* resolved$|^game \d+ finished$")),
    ("mid-pass", re.compile(r"^message \S+ from |^game \d+ .*: move accepted|^fetched ")),
]


class BenchError(Exception):
    """The bench cannot go on."""


def now_wall() -> datetime:
    return datetime.now(UTC)


# -- the referee's mail out, as the SMTP sink takes it ---------------------------------


@dataclass
class Out:
    """One mail the SMTP sink took."""

    message_id: str
    rcpts: tuple[str, ...]
    subject: str
    in_reply_to: str
    reply_to: str
    game: int | None  # by the phase tag of its Message-ID
    phase: int | None
    raw: bytes
    at: datetime  # when the sink took it


class Sink:
    """Stands in for MailStack.sent: keeps what the checks need of every mail
    the SMTP sink took (not its parsed form, which would pile up)."""

    def __init__(self) -> None:
        self.mails: list[Out] = []
        self.lock = threading.Lock()

    def append(self, mail: SentMail) -> None:  # the sink's thread
        message = mail.message
        message_id = " ".join(str(message["Message-ID"] or "").split())
        tag = TAGGED.search(message_id)
        out = Out(
            message_id,
            tuple(r.lower() for r in mail.rcpt_tos),
            " ".join(str(message["Subject"] or "").split()),
            " ".join(str(message["In-Reply-To"] or "").split()),
            str(message["Reply-To"] or ""),
            int(tag[1]) if tag else None,
            int(tag[2]) if tag else None,
            mail.raw,
            now_wall(),
        )
        with self.lock:
            self.mails.append(out)

    def __len__(self) -> int:
        return len(self.mails)

    def since(self, start: int) -> list[Out]:
        with self.lock:
            return self.mails[start:]


# -- games.db, read-only --------------------------------------------------------------


class ReadOnlyStore(Store):
    """games.db through a read-only connection: the Store's readers, for the
    referee's own Tables, and nothing that writes (the bench never writes
    games.db: a write of its own would flush unseen by the shim)."""

    def __init__(self, path: Path):
        self.path = path
        self._rollbacks = 0
        self._record_writes: dict[int, list[int]] = {}
        self._table_writes = [0] * len(RECORD_TABLES)
        self.db = sqlite_utils.Database(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30))
        self._conn = self.db.conn  # (what the Store's readers run their statements on)
        self._nested = 0
        self._holding_lock, self._held_version = False, None  # (no transaction: it never writes)
        self._kept = _Kept()


class Reader:
    """games.db as the players and the bench read it: open between cuts,
    closed before every kill (no connection of this process may see games.db
    across a cut).  The replays are kept across connections (Tables checks
    each against the record before it uses it); the Tables, keyed by
    SQLite's data_version, are not."""

    def __init__(self, path: Path):
        self.path = path
        self.store: ReadOnlyStore | None = None
        self.tables: Tables | None = None
        self.replays = referee.tables._Kept(records_at=1)  # (Tables' own kind of cache)
        referee.tables._REPLAYS_KEPT = 100_000  # every game's replay, so reads stay cheap
        referee.tables._PHASES_KEPT = 10**9

    def open(self) -> None:
        if self.store is None:
            self.store = ReadOnlyStore(self.path)
            self.tables = Tables(self.store)
            self.tables._replays = self.replays

    def close(self) -> None:
        if self.store is not None:
            self.store.db.conn.close()
            self.store = self.tables = None

    def table(self, game: int):
        self.open()
        return self.tables.table(game)

    def query(self, sql: str, args: tuple = ()) -> list[tuple]:
        self.open()
        return self.store.db.conn.execute(sql, args).fetchall()


# -- the players ------------------------------------------------------------------------


@dataclass
class Sent:
    """One mail a player sent: a move for a phase, in reply to a mail about it."""

    n: int
    message_id: str
    game: int
    phase: int
    seat: int
    player: str
    move: str
    kind: str  # move, change (of mind), near (the deadline)
    answers: str  # the Message-ID of the referee's mail it replies to
    delivered: datetime  # when the LMTP server had it
    run: int  # the referee runs launched by then


@dataclass(order=True)
class Due:
    at: float  # monotonic
    n: int
    game: int = field(compare=False)
    phase: int = field(compare=False)
    seat: int = field(compare=False)
    player: str = field(compare=False)
    move: str = field(compare=False)
    kind: str = field(compare=False)


class Players:
    """Every game's players: told of a phase they move in by a mail the sink
    took, they answer it (or not) with a legal move, in reply to that mail."""

    def __init__(self, sink: Sink, lmtp: Lmtp, chooser: random.Random, seed: int, runs: list):
        self.sink, self.lmtp, self.chooser, self.seed, self.runs = sink, lmtp, chooser, seed, runs
        self.seats: dict[str, tuple[int, int]] = {}  # player -> (game, seat)
        self.read = 0  # sink mails read
        self.told: dict[tuple[int, int, str], Out] = {}  # (game, phase, player) -> the last mail about it
        self.fresh: list[tuple[int, int, str]] = []
        self.planned: set[tuple[int, int, int]] = set()  # (game, phase, seat) answered or left alone
        self.due: list[Due] = []
        self.sent: list[Sent] = []
        self.counts: Counter[str] = Counter()
        self.anomalies: list[str] = []
        self.serial = 0

    def step(self, reader: Reader) -> int:
        """Read the new mail, plan answers, send those due; how many were sent."""
        self.absorb()
        self.plan(reader)
        return self.send_due(reader)

    def absorb(self) -> None:
        new = self.sink.since(self.read)
        self.read += len(new)
        for mail in new:
            if mail.game is None:
                continue
            for player in mail.rcpts:
                if player in self.seats:
                    key = (mail.game, mail.phase, player)
                    if key not in self.told:
                        self.fresh.append(key)
                    self.told[key] = mail

    def plan(self, reader: Reader) -> None:
        fresh, self.fresh = self.fresh, []
        for game, number, player in fresh:
            seat = self.seats[player][1]
            if self.seats[player][0] != game or (game, number, seat) in self.planned:
                continue
            table = reader.table(game)
            phase = table.open_phase
            if phase is None or table.row["state"] != "running" or phase["number"] > number:
                continue  # over already: told too late to answer
            if phase["number"] < number:  # mail is sent only once what it says is flushed
                self.anomalies.append(
                    f"game {game}: told of phase {number}, games.db's open phase is {phase['number']}"
                )
                continue
            self.planned.add((game, number, seat))
            if seat not in phase["movers"] or not table.human(seat) or seat in table.counted.get(number, {}):
                continue
            left = (from_iso(phase["deadline"]) - now_wall()).total_seconds()
            roll, at = self.chooser.random(), time.monotonic()
            if roll < SKIP:
                self.counts["left to the deadline"] += 1
                continue
            if roll < SKIP + NEAR:
                self.queue(at + left + self.chooser.uniform(-2.5, 1.5), table, number, seat, player, "near")
                continue
            if phase["sealed"]:
                first = self.chooser.uniform(0.5, max(1.0, min(8.0, 0.5 * left)))
            else:
                first = self.chooser.uniform(0.2, min(2.0, max(0.5, 0.4 * left)))
            self.queue(at + first, table, number, seat, player, "move")
            if phase["sealed"] and self.chooser.random() < CHANGE:
                later = self.chooser.uniform(first + 0.5, max(first + 1.0, 0.9 * left))
                self.queue(at + later, table, number, seat, player, "change")

    def queue(self, at: float, table, number: int, seat: int, player: str, kind: str) -> None:
        rules, state = table.rules, table.state
        if self.chooser.random() < 0.7:
            move = rules.random_move(state, seat, Rng(self.chooser.randbytes(16), "bench"))
        else:
            move = self.chooser.choice(rules.legal_moves(state, seat))
        self.serial += 1
        heapq.heappush(self.due, Due(at, self.serial, table.id, number, seat, player, rules.move_text(move), kind))

    def send_due(self, reader: Reader) -> int:
        sent = 0
        while self.due and self.due[0].at <= time.monotonic() and sent < 20:
            answer = heapq.heappop(self.due)
            table = reader.table(answer.game)
            phase = table.open_phase
            if table.row["state"] != "running":
                self.counts["game over before the answer"] += 1
                continue
            if answer.kind != "near" and (phase is None or phase["number"] != answer.phase):
                self.counts["phase over before the answer"] += 1
                continue
            self.send(answer)
            sent += 1
        return sent

    def send(self, answer: Due) -> None:
        about = self.told[answer.game, answer.phase, answer.player]
        message_id = f"<b{answer.n}.g{answer.game}p{answer.phase}s{answer.seat}.{self.seed}@{PLAYERS}>"
        subject = about.subject if about.subject.lower().startswith("re:") else f"Re: {about.subject}"
        raw = compose(answer.player, about.reply_to, subject, answer.move, message_id, about.message_id)
        self.lmtp.deliver(answer.player, about.reply_to, raw)
        self.sent.append(
            Sent(
                answer.n,
                message_id,
                answer.game,
                answer.phase,
                answer.seat,
                answer.player,
                answer.move,
                answer.kind,
                about.message_id,
                now_wall(),
                len(self.runs),
            )
        )
        self.counts[answer.kind] += 1


def compose(sender: str, to: str, subject: str, text: str, message_id: str, answers: str) -> bytes:
    """A plain reply as a mail client writes it (CRLF)."""
    date = now_wall().strftime("%a, %d %b %Y %H:%M:%S +0000")
    return (
        f"From: {sender}\r\nTo: {to}\r\nSubject: {subject}\r\nDate: {date}\r\nMessage-ID: {message_id}\r\n"
        f"In-Reply-To: {answers}\r\nReferences: {answers}\r\nMIME-Version: 1.0\r\n"
        f"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n{text}\r\n"
    ).encode()


# -- the referee's runs -----------------------------------------------------------------


@dataclass
class Run:
    """One referee process."""

    n: int
    program: str  # once, serve
    aim: str  # random, deadline, delivery, sink, point, clean
    point: str | None
    process: subprocess.Popen
    launched: datetime
    started: float  # monotonic
    ended: datetime | None = None
    status: int | None = None
    killed: bool = False  # SIGKILLed by the bench (or by its crash point)
    fired: bool = False  # its crash point was reached
    landed: str = ""  # what it was doing when killed, by its log

    @property
    def name(self) -> str:
        return f"{self.n:04d}-{self.program}-{self.point or self.aim}"


def game_args(kind: str, players: list[str], chooser: random.Random) -> list[str]:
    """`referee new` arguments: deadlines of seconds to a minute."""
    args = [kind, *[x for p in players for x in ("--player", p)]]
    if kind in ("pure-skill", "bid"):  # sealed rounds (Bid!'s, twice as many, shorter)
        args += ["--deadline", f"{chooser.choice((20, 30, 45, 60) if kind == 'pure-skill' else (15, 20, 30))}s"]
        if chooser.random() < 0.25:
            args += ["--settle", f"{chooser.choice((3, 5, 8))}s"]
    else:  # turns, and decisions inside a resolution
        args += [
            "--deadline",
            "60s",
            "--turn-deadline",
            f"{chooser.choice((6, 10, 15, 20))}s",
            "--decision-deadline",
            f"{chooser.choice((6, 10, 15))}s",
        ]
    if kind == "ice" and chooser.random() < 0.5:
        args += ["--option", "short=true"]
    return args


SEATS = {"pure-skill": (3, 3), "bid": (3, 3), "ice": (2, 3), "priority": (3, 3), "bluff": (2, 3)}

LAUNCHER = r"""
# `python -m referee ARGS` (or crashpoint.py's, with --point DIR POINT N --),
# and each IMAP fetch logged with the Message-IDs it gave: which mail the
# referee had in hand before it resolved a phase (check 3).  From outside,
# as crashpoint.py wraps: the referee carries no bench hooks.
import signal, sys
from referee import launch
for signum in (signal.SIGTERM, signal.SIGINT):
    signal.signal(signum, launch.note)
import logging, re
from referee.mail.imap import ImapSource
log = logging.getLogger("referee.bench")
fetch = ImapSource.fetch
ID = re.compile(rb"^Message-ID:[ \t]*(<[^>\r\n]*>)", re.I | re.M)
async def fetched(self):
    messages = await fetch(self)
    ids = [(ID.search(m.raw.split(b"\r\n\r\n", 1)[0]) or [b"", b"-"])[1].decode("ascii", "replace") for m in messages]
    log.info("fetched %d: %s", len(ids), " ".join(ids))
    return messages
ImapSource.fetch = fetched
argv = sys.argv[1:]
if argv[:1] == ["--point"]:
    sys.path.insert(0, argv[1])
    import crashpoint
    sys.exit(crashpoint.main(argv[2:]))
from referee.cli import main
sys.exit(main(argv))
"""

CREATE = r"""
import contextlib, io, json, sys
from referee.cli import main
config = sys.argv[1]
for args in json.loads(sys.stdin.read()):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["--config", config, "new", *args])
    if status != 0:
        sys.exit(f"referee new {' '.join(args)}: exit status {status}")
    print(out.getvalue().splitlines()[-1], flush=True)
"""


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.chooser = random.Random(args.seed)
        self.home = args.keep or Path(tempfile.mkdtemp(prefix="referee-powercut-"))
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "logs").mkdir(exist_ok=True)
        self.dovecot: Dovecot | None = None
        self.stack: MailStack | None = None
        self.lmtp: Lmtp | None = None
        self.players: Players | None = None
        self.sink = Sink()
        self.runs: list[Run] = []
        self.running: Run | None = None
        self.kinds: dict[int, str] = {}  # game -> kind
        self.cuts: Counter[str] = Counter()  # cuts; what became of each file
        self.problems: list[str] = []  # the run's own troubles: tracebacks, failed reboots
        self.started = time.monotonic()
        self.phase_times: dict[str, float] = {}

    # -- setting up, and taking down ------------------------------------------------

    def start(self) -> None:
        self.shim = powercut.build(self.home)
        self.dovecot = Dovecot(root=self.home / "dovecot" if self.args.keep else None)
        MailStack.provision(self.dovecot, 1)  # before start: no wait
        self.dovecot.start()
        self.stack = MailStack(self.dovecot)
        self.stack.sent = self.sink  # type: ignore[assignment]
        self.stack.start()
        self.referee = Referee(self.stack, self.home, extra=DEFAULTS)
        text = self.referee.cfg.read_text()
        for old, new in CONFIG.items():
            text = text.replace(old, new, 1)
        self.referee.cfg.write_text(text)
        self.db = self.referee.db
        self.reader = Reader(self.db)
        self.lmtp = Lmtp(self.dovecot)
        self.players = Players(self.sink, self.lmtp, self.chooser, self.args.seed, self.runs)
        self.create_games()

    def env(self) -> dict[str, str]:
        path = os.pathsep.join(filter(None, [str(CODE), os.environ.get("PYTHONPATH")]))
        return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", **powercut.environment(self.shim, self.db)}

    def create_games(self) -> None:
        """`referee new` for every game, in one process under the shim (the
        games' first prompts wait in the outbox for the first run)."""
        specs, players = [], []
        for number in range(self.args.games):
            kind = KINDS[number % len(KINDS)]
            low, high = SEATS[kind]
            seats = [
                f"p{number + 1}s{seat}.{self.args.seed}@{PLAYERS}" for seat in range(self.chooser.randint(low, high))
            ]
            specs.append(game_args(kind, seats, self.chooser))
            players.append((kind, seats))
        done = subprocess.run(
            [sys.executable, "-c", CREATE, str(self.referee.cfg)],
            input=json.dumps(specs),
            cwd=self.home,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            raise BenchError(f"creating the games failed: {done.stderr[-800:]}")
        ids = [int(line) for line in done.stdout.split()]
        for game, (kind, seats) in zip(ids, players, strict=True):
            self.kinds[game] = kind
            for seat, player in enumerate(seats):
                self.players.seats[player] = (game, seat)

    def stop(self) -> None:
        """Everything this run started, whatever state it is in."""
        if self.running is not None and self.running.process.poll() is None:
            self.running.process.kill()
            self.running.process.wait()
        if self.players is not None:
            self.reader.close()
        if self.lmtp is not None:
            self.lmtp.close()
        if self.stack is not None:
            self.stack.stop()
        if self.dovecot is not None:
            self.dovecot.close()

    # -- running the referee ----------------------------------------------------------

    def launch(self, program: str, aim: str, point: str | None = None, n: int = 1) -> Run:
        args = ["--config", str(self.referee.cfg), *(["-v", "run", "--once"] if program == "once" else ["serve"])]
        argv = [sys.executable, "-c", LAUNCHER, *(["--point", str(TESTS), point, str(n), "--"] if point else []), *args]
        run = Run(len(self.runs) + 1, program, aim, point, None, now_wall(), time.monotonic())  # type: ignore[arg-type]
        with (
            open(self.home / "logs" / f"{run.name}.out", "wb") as out,
            open(self.home / "logs" / f"{run.name}.err", "wb") as err,
        ):
            run.process = subprocess.Popen(argv, cwd=self.home, stdout=out, stderr=err, env=self.env())
        self.runs.append(run)
        self.running = run
        return run

    def fired(self) -> int:
        path = self.home / FIRED
        return len(path.read_text().splitlines()) if path.exists() else 0

    def end(self, run: Run, kill: bool) -> None:
        """SIGKILL the run if ``kill`` and it still runs, else wait for its
        end; note how it ended."""
        if kill and run.process.poll() is None:
            run.process.kill()
            run.killed = True
        try:
            run.status = run.process.wait(60)
        except subprocess.TimeoutExpired:
            run.process.kill()
            run.status = run.process.wait()
            self.problems.append(f"{run.name} did not end in 60 s")
        run.ended = now_wall()
        self.running = None
        if run.status == -signal.SIGKILL:
            run.killed = True
        err = (self.home / "logs" / f"{run.name}.err").read_text(errors="replace")
        if "Traceback" in err:
            self.problems.append(f"{run.name} logged a traceback: {err[-600:]}")
        if not run.killed and run.status not in (0, 5):  # (5: busy, another run held the lock: it did nothing)
            self.problems.append(f"{run.name} exited with status {run.status}: {err[-600:]}")
        if run.killed:
            run.landed = self.landed(err, run.ended)

    @staticmethod
    def landed(err: str, killed: datetime) -> str:
        """What the referee was doing when killed, by the last line it logged:
        idle when that was more than a quarter second before."""
        lines = [m for m in map(LOG_LINE.match, err.splitlines()) if m]
        if not lines:
            return "starting"
        last = lines[-1]
        when = datetime.strptime(last[1], "%Y-%m-%d %H:%M:%S,%f").astimezone(UTC)
        doing = next((name for name, pattern in LANDED if pattern.search(last[4])), "starting")
        if doing == "starting" and len(lines) > 1:
            doing = "idle"
        return doing if (killed - when).total_seconds() < 0.25 else "idle"

    def cut(self, run: Run) -> None:
        """The power cut, then the keeper's first look (`referee status`
        under the shim, the first to open games.db)."""
        self.reader.close()
        became = powercut.cut(self.db)
        self.cuts["cuts"] += 1
        for name, what in became.items():
            self.cuts[f"{name} {what}"] += 1
        status = subprocess.run(
            self.referee.command("status"),
            cwd=self.home,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if status.returncode != 0:
            self.problems.append(
                f"after cut {self.cuts['cuts']} ({run.name}): `referee status` exited "
                f"{status.returncode}: {status.stderr[-600:]}"
            )

    def next_deadline(self) -> datetime | None:
        """The soonest deadline or settle end still to come, of an open phase."""
        soon = iso(now_wall() + timedelta(seconds=0.5))
        rows = self.reader.query(
            "select min(deadline), min(case when closes_at > ? then closes_at end) from phases "
            "where resolved_at is null and deadline > ?",
            (soon, soon),
        )
        moments = [from_iso(value) for value in rows[0] if value]
        return min(moments) if moments else None

    def one_cut(self) -> None:
        """One referee run under a kill aimed as chance has it, then the cut."""
        program = "once" if self.chooser.random() < 0.35 else "serve"
        aim = self.chooser.choices(list(AIMS), weights=list(AIMS.values()))[0]
        point, n = None, 1
        if aim == "point":
            point = self.chooser.choice(list(POINTS))
            n = 1 if point in ("after-seen", "after-move") else self.chooser.randint(1, 4)
        fired_before = self.fired()
        if aim == "deadline":
            upcoming = self.next_deadline()
            if upcoming is None or (upcoming - now_wall()).total_seconds() > RUN_CAP - 2:
                aim = "random"
        run = self.launch(program, aim, point, n)
        start = time.monotonic()
        kill_at = start + RUN_CAP
        if aim == "random":
            kill_at = start + (self.chooser.uniform(0.15, 2.5) if program == "once" else self.chooser.uniform(0.3, 6.0))
        elif aim == "deadline":
            after = self.chooser.uniform(0.0, 0.2) if self.chooser.random() < 0.5 else self.chooser.uniform(0.2, 1.2)
            kill_at = start + (upcoming - now_wall()).total_seconds() + after  # the tick wakes at the deadline
        sink_at, aimed = len(self.sink), False  # a mail taken while it runs; the kill drawn once
        while time.monotonic() < kill_at and run.process.poll() is None:
            delivered = self.players.step(self.reader)
            now = time.monotonic()
            if aim == "delivery" and delivered and now - start > 0.5 and not aimed:
                kill_at, aimed = min(kill_at, now + self.chooser.uniform(0.02, 0.6)), True
            if aim == "sink" and len(self.sink) > sink_at and not aimed:
                kill_at, aimed = min(kill_at, now + self.chooser.uniform(0.0, 0.03)), True
            time.sleep(min(0.02, max(0.0, kill_at - time.monotonic())))
        self.reader.close()
        self.end(run, kill=True)
        run.fired = self.fired() > fired_before
        self.cut(run)

    def cut_loop(self) -> None:
        limit = self.started + self.args.max_minutes * 60
        while self.cuts["landed"] < self.args.cuts:
            if time.monotonic() > limit:
                self.problems.append(
                    f"stopped after {self.cuts['landed']} cuts: --max-minutes {self.args.max_minutes} ran out"
                )
                return
            self.one_cut()
            run = self.runs[-1]
            self.cuts["landed" if run.killed else "after a clean exit"] += 1
            if run.killed and self.cuts["landed"] % 10 == 0:
                self.progress(f"cut {self.cuts['landed']}/{self.args.cuts}")

    def progress(self, what: str) -> None:
        rows = self.reader.query("select state, count(*) from games group by state")
        print(
            f"{time.monotonic() - self.started:7.0f} s  {what}: {len(self.runs)} runs, sink took {len(self.sink)} "
            f"mails, players sent {len(self.players.sent)}; games {dict(rows)}",
            flush=True,
        )

    def play_out(self) -> None:
        """A clean `serve` while the players answer, until every game is over
        or --play-minutes pass; stopped with SIGTERM."""
        run = self.launch("serve", "clean")
        limit = time.monotonic() + self.args.play_minutes * 60
        next_look = time.monotonic() + 30
        while time.monotonic() < limit and run.process.poll() is None:
            self.players.step(self.reader)
            if time.monotonic() >= next_look:
                next_look += 30
                running = self.reader.query("select count(*) from games where state = 'running'")[0][0]
                self.progress("playing on")
                if running == 0:
                    break
            time.sleep(0.02)
        self.reader.close()
        if run.process.poll() is None:
            run.process.terminate()
        self.end(run, kill=False)

    def settle(self) -> None:
        """Clean `run --once` passes until the INBOX is empty and nothing is queued."""
        for _ in range(10):
            self.end(self.launch("once", "clean"), kill=False)
            queued = self.reader.query("select count(*) from outbox where state = 'queued'")[0][0]
            self.reader.close()
            if queued == 0 and self.inbox_count() == 0:
                return
            time.sleep(1)
        self.problems.append("ten clean passes left mail in the INBOX or the outbox")

    def inbox_count(self, mailbox: str = "INBOX") -> int:
        conn = self.dovecot.imap(self.stack.referee)
        try:
            typ, data = conn.status(mailbox, "(MESSAGES)")
            return int(re.search(rb"MESSAGES (\d+)", data[0])[1]) if typ == "OK" else 0
        finally:
            conn.logout()

    def run(self) -> None:
        self.start()
        self.phase_times["set up"] = time.monotonic() - self.started
        print(
            f"{self.args.games} games created ({', '.join(KINDS)}) in {self.phase_times['set up']:.0f} s; "
            f"home {self.home}",
            flush=True,
        )
        self.cut_loop()
        self.phase_times["cuts"] = time.monotonic() - self.started
        self.play_out()
        self.phase_times["playing on"] = time.monotonic() - self.started
        self.settle()
        self.phase_times["settled"] = time.monotonic() - self.started


# -- the checks ---------------------------------------------------------------------------


def body_text(raw: bytes) -> str:
    message = message_from_bytes(raw, policy=policy.default)
    part = message.get_body(("plain",)) or message
    try:
        return part.get_content()
    except (KeyError, LookupError):
        return raw.decode("utf-8", "replace")


def without_ids(raw: bytes) -> bytes:
    """A mail's bytes but for its Date and Message-ID header lines."""
    head, sep, rest = raw.partition(b"\r\n\r\n")
    kept, skipping = [], False
    for line in head.split(b"\r\n"):
        if line[:1] in (b" ", b"\t"):
            if not skipping:
                kept.append(line)
            continue
        skipping = line.lower().startswith((b"date:", b"message-id:"))
        if not skipping:
            kept.append(line)
    return b"\r\n".join(kept) + sep + rest


def rule_close(phase: dict, firsts: dict[int, tuple[str, str, str]], settle: int) -> tuple[str | None, set[str]]:
    """When a phase closed by the rules (pure-skill.md R6, R7): once every
    mover has moved, at the last of their first moves' receipts, or a
    sealed round with a move by mail the settle time later, never after the
    deadline; None when a move was missing at the deadline (random).  And
    the mails that completed it, when it closed at once (no settle time):
    the first moves by mail received in the second it closed.  The
    referee's closes_at is the same (the latest receipt among the moves
    counted when the last owed one came, plus the settle time: engine/
    phases.py _note_complete); a phase where it is not is noted."""
    movers = json.loads(phase["movers"])
    if any(seat not in firsts or firsts[seat][0] == "random" for seat in movers):
        return None, set()
    at = from_iso(max(firsts[seat][1] for seat in movers))
    if phase["sealed"] and settle and any(firsts[seat][0] == "mail" for seat in movers):
        return iso(min(at + timedelta(seconds=settle), from_iso(phase["deadline"]))), set()
    return iso(at), {firsts[seat][2] for seat in movers if firsts[seat][0] == "mail" and firsts[seat][1] == iso(at)}


class Checks:
    def __init__(self, bench: Bench):
        self.bench = bench
        self.kinds = bench.kinds
        self.counts: dict[int, Counter] = defaultdict(Counter)  # check -> counts
        self.by_kind: dict[int, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
        self.violations: dict[int, list[str]] = defaultdict(list)
        self.notes: dict[int, list[str]] = defaultdict(list)  # findings that are no violation of the check
        self.excused: dict[str, str] = {}  # Message-ID of a player's mail refused under an excuse -> the excuse
        self.closes: list[tuple[int, int]] = []  # phases whose recorded closes_at is not the rules' close

    def count(self, check: int, what: str, game: int | None, n: int = 1) -> None:
        self.counts[check][what] += n
        self.by_kind[check][self.kinds.get(game, "no game")][what] += n

    def violate(self, check: int, game: int | None, text: str) -> None:
        self.count(check, "VIOLATIONS", game)
        self.violations[check].append(text)

    def load(self) -> None:
        reader = self.bench.reader
        self.outbox = {row[0]: row[1] for row in reader.query("select message_id, state from outbox")}
        self.messages = {
            row[0]: {"received_at": row[1], "handled_at": row[2], "code": row[3]}
            for row in reader.query("select key, received_at, handled_at, code from messages")
        }
        self.moves = defaultdict(list)
        self.mail_moves = 0
        firsts: dict[tuple[int, int], dict[int, tuple[str, str, str]]] = defaultdict(dict)  # each seat's first move
        for game, phase, seat, move, source, key, received in reader.query(
            "select game_id, phase, seat, move, source, message_key, received_at from moves order by id"
        ):
            if source == "mail":
                self.moves[key].append((game, phase, seat, move))
                self.mail_moves += 1
            first = firsts[game, phase].get(seat)
            if first is None or received < first[1]:
                firsts[game, phase][seat] = (source, received, key)
        self.phases = {
            (row[0], row[1]): dict(
                zip(
                    ("label", "opened_at", "deadline", "closes_at", "resolved_at", "movers", "sealed"),
                    row[2:],
                    strict=True,
                )
            )
            for row in reader.query(
                "select game_id, number, label, opened_at, deadline, closes_at, resolved_at, movers, sealed from phases"
            )
        }
        self.states = dict(reader.query("select id, state from games"))
        settle = dict(reader.query("select id, settle_seconds from games"))
        for (game, number), phase in self.phases.items():
            phase["close"], phase["completing"] = rule_close(phase, firsts[game, number], settle[game] or 0)
            if phase["close"] != phase["closes_at"]:
                self.closes.append((game, number))
        self.sent_by_id = {sent.message_id: sent for sent in self.bench.players.sent}
        self.referee_mail = [m for m in self.bench.sink.mails]
        self.answers = defaultdict(list)  # a player's Message-ID -> the referee's answers to it
        for mail in self.referee_mail:
            if mail.in_reply_to:
                self.answers[mail.in_reply_to].append(mail)

    def run(self) -> None:
        self.load()
        self.read_logs()
        self.check_known()
        self.check_resent()
        self.check_timing()
        self.check_moves()
        self.check_records()

    # 1. every mail a player received is known to games.db under its Message-ID
    def check_known(self) -> None:
        seen = set()
        for mail in self.referee_mail:
            self.count(1, "taken", mail.game)
            if mail.message_id in seen:
                self.count(1, "taken again under the same Message-ID", mail.game)
                continue
            seen.add(mail.message_id)
            state = self.outbox.get(mail.message_id)
            if state is None:
                self.violate(
                    1,
                    mail.game,
                    f"{mail.message_id} to {', '.join(mail.rcpts)} ({mail.subject!r}), taken "
                    f"at {iso(mail.at)}, is not in games.db's outbox",
                )
            else:
                self.count(1, "known", mail.game)
        left = Counter(state for state in self.outbox.values() if state != "sent")
        for state, n in left.items():
            self.count(1, f"outbox rows {state} at the end", None, n)
        for message_id in set(self.outbox) - seen:
            self.count(1, "in the outbox, never taken", None)
            if self.outbox[message_id] == "sent":
                self.violate(1, None, f"{message_id} is marked sent in the outbox; the sink never took it")

    # 2. nothing sent again under a new Message-ID
    def check_resent(self) -> None:
        same, games = defaultdict(set), {}
        for mail in self.referee_mail:
            key = (mail.rcpts, mail.subject, without_ids(mail.raw))
            same[key].add(mail.message_id)
            games[key] = mail.game
        for key, ids in same.items():
            rcpts, subject, game = key[0], key[1], games[key]
            self.count(2, "distinct mails", game)
            if len(ids) > 1:
                self.violate(
                    2,
                    game,
                    f"one mail to {', '.join(rcpts)} ({subject!r}) taken under {len(ids)} "
                    f"Message-IDs: {', '.join(sorted(ids))}",
                )
        for sent in self.bench.players.sent:
            ids = {mail.message_id for mail in self.answers.get(sent.message_id, [])}
            self.count(2, "players' mails answered" if ids else "players' mails unanswered", sent.game)
            if len(ids) > 1:
                self.violate(
                    2,
                    sent.game,
                    f"{sent.message_id} (game {sent.game} phase {sent.phase}) answered under "
                    f"{len(ids)} Message-IDs: {', '.join(sorted(ids))}",
                )

    # 3. no in-time reply refused
    def read_logs(self) -> None:
        """From each referee run's log: what each IMAP fetch gave (the
        launcher logs it) and when each phase was resolved."""
        self.fetches: dict[str, list[tuple[datetime, set[str]]]] = defaultdict(list)
        self.resolutions: dict[tuple[int, str], list[tuple[datetime, str]]] = defaultdict(list)
        self.by_mail: set[tuple[datetime, str]] = set()  # resolutions at the mail that completed the phase
        for run in self.bench.runs:
            path = self.bench.home / "logs" / f"{run.name}.err"
            engine = ""  # the engine's last line (the sender and the IMAP library log in between)
            for line in path.read_text(errors="replace").splitlines() if path.exists() else []:
                match = LOG_LINE.match(line)
                if not match:
                    continue
                at, text = datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S,%f").astimezone(UTC), match[4]
                if text.startswith("fetched "):
                    self.fetches[run.name].append((at, set(text.partition(": ")[2].split())))
                elif resolved := RESOLVED.match(text):
                    self.resolutions[int(resolved[1]), resolved[2]].append((at, run.name))
                    if engine.startswith(f"game {resolved[1]} {resolved[2]}: move accepted"):
                        self.by_mail.add((at, run.name))
                if match[3] == "referee":
                    engine = text

    def resolution(self, game: int, phase: dict) -> tuple[datetime, str] | None:
        """The resolution that stands: its log time and run.  The last one
        logged: a resolution a cut took back is made again later, and none
        is made after the one that stands.  (The final record's resolved_at
        is the moment the phase became due, its close or else its deadline,
        not when a referee run came to resolve it, which may be many
        seconds later, after a cut or in a backlog: it only bounds the log
        time from below.)"""
        resolved = from_iso(phase["resolved_at"])
        found = [(at, run) for at, run in self.resolutions.get((game, phase["label"]), []) if at >= resolved]
        return max(found) if found else None

    def excuse(self, sent: Sent, received: datetime) -> str | None:
        """Why a player's mail may be refused for its timing, by games.db's
        final record and the referee's logs: late; or in time, but it came
        after the fetch of the pass that resolved the phase (R8: a mail in
        time counts "as long as the round has not yet been resolved" when it
        is read).  No excuse when the run that resolved the phase had
        fetched the mail before (it had it in hand, whatever came between:
        a cut, or nothing)."""
        phase = self.phases.get((sent.game, sent.phase))
        if phase is None:
            return None
        if received > from_iso(phase["deadline"]):
            return "received after the deadline"
        if phase["close"] and received > from_iso(phase["close"]):
            return "received after the round closed (R6: the settle time after the last bid received)"
        if self.after_completing(sent, phase, received):
            return "received in the second the phase closed, after the mail that completed it (R6)"
        if phase["resolved_at"] is None:
            return None
        found = self.resolution(sent.game, phase)
        if found is None:
            return None
        resolved, run = found
        before = [ids for at, ids in self.fetches[run] if at <= resolved]
        if not before or any(sent.message_id in ids for ids in before):
            return None  # it had the mail in hand, or resolved the phase before it read any mail
        return "in time, it came after the fetch of the pass that resolved the phase (R8)"

    def after_completing(self, sent: Sent, phase: dict, received: datetime) -> bool:
        """Whether a mail came in the very second a phase closed at once (no
        settle time: R6, "a round ends as soon as the last human's bid
        arrives"), but after the mail that closed it, by the players' own
        delivery clock: late by R6, though receipt times, whole seconds,
        cannot tell it from the record (the referee reads in the server's
        order, and resolves the phase at the mail that completed it)."""
        if not phase["completing"] or received != from_iso(phase["close"]) or sent.message_id in phase["completing"]:
            return False
        completing = [self.sent_by_id[key].delivered for key in phase["completing"] if key in self.sent_by_id]
        return len(completing) == len(phase["completing"]) and sent.delivered > max(completing)

    def explain(self, sent: Sent, received: str | None) -> str:
        phase = self.phases.get((sent.game, sent.phase), {})
        found = self.resolution(sent.game, phase) if phase.get("resolved_at") else None
        first = next(
            (
                (at, run)
                for run in (r.name for r in self.bench.runs)
                for at, ids in self.fetches[run]
                if sent.message_id in ids
            ),
            None,
        )
        until = found[0] if found else now_wall()
        between = [run for run in self.bench.runs if sent.delivered < run.launched < until]
        clock = lambda at: at.strftime("%H:%M:%S.%f")[:12]
        return (
            f"{sent.message_id} ({sent.kind}, game {sent.game} {self.kinds.get(sent.game)} phase {sent.phase} "
            f"{phase.get('label')!r} seat {sent.seat}, {sent.move!r}): delivered {clock(sent.delivered)}, received "
            f"{received}; the final record: opened {phase.get('opened_at')}, deadline {phase.get('deadline')}, "
            f"closes {phase.get('closes_at')} (by R6 {phase.get('close')}), resolved {phase.get('resolved_at')}"
            + (
                f" (by {found[1]} at {clock(found[0])}, "
                + ("at the mail that completed it" if found in self.by_mail else "by the tick")
                + ")"
                if found
                else ""
            )
            + (f"; first fetched by {first[1]} at {clock(first[0])}" if first else "; never fetched")
            + (
                "; the run that resolved it had fetched it before: "
                + (
                    "yes"
                    if any(sent.message_id in ids for at, ids in self.fetches[found[1]] if at <= found[0])
                    else "no"
                )
                if found
                else ""
            )
            + f"; referee runs launched between its delivery and the resolution: {len(between)} "
            f"({sum(run.killed for run in between)} killed by a cut)"
        )

    def check_timing(self) -> None:
        for game, number in self.closes:
            phase = self.phases[game, number]
            self.count(3, "phases whose recorded close is not R6's", game)
            self.notes[3].append(
                f"game {game} ({self.kinds.get(game)}) phase {number} {phase['label']!r}: closes_at "
                f"{phase['closes_at']}, by R6 {phase['close']} (the last of the movers' first moves "
                f"received, plus the settle time); deadline {phase['deadline']}"
            )
        for sent in self.bench.players.sent:
            for answer in self.answers.get(sent.message_id, []):
                text = " ".join(body_text(answer.raw).split())
                reason = next((name for name, pattern in TIMING if pattern.search(text)), None)
                if reason is None:
                    continue
                self.count(3, f"refused: {reason}", sent.game)
                message = self.messages.get(sent.message_id)
                received = from_iso(message["received_at"]) if message else None
                excuse = received and self.excuse(sent, received)
                if excuse:
                    self.count(3, f"excused: {excuse}", sent.game)
                    self.excused[sent.message_id] = excuse
                else:
                    refusal = REFUSAL.search(text)
                    self.violate(
                        3,
                        sent.game,
                        f"in-time reply refused ({reason}): {self.explain(sent, message and message['received_at'])}; "
                        f"the answer says: {refusal[1] if refusal else text[:300]}",
                    )

    # 4. no move lost or doubled
    def check_moves(self) -> None:
        mine = {sent.message_id: sent for sent in self.bench.players.sent}
        by_seat = defaultdict(list)
        for sent in self.bench.players.sent:
            by_seat[sent.game, sent.phase, sent.seat].append(sent)
        for sent in self.bench.players.sent:
            game = sent.game
            self.count(4, f"sent: {sent.kind}", game)
            message = self.messages.get(sent.message_id)
            if message is None:
                self.violate(4, game, f"never handled: {self.explain(sent, None)}")
                continue
            rows = self.moves.get(sent.message_id, [])
            if len(rows) > 1:
                self.violate(4, game, f"counted {len(rows)} times: {self.explain(sent, message['received_at'])}")
            if rows and rows[0] != (sent.game, sent.phase, sent.seat, sent.move):
                self.violate(
                    4,
                    game,
                    f"recorded as {rows[0]} (game, phase, seat, move): {self.explain(sent, message['received_at'])}",
                )
            phase = self.phases.get((sent.game, sent.phase))
            received = from_iso(message["received_at"])
            in_time = (
                phase is not None
                and from_iso(phase["opened_at"]) <= received <= from_iso(phase["deadline"])
                and (not phase["close"] or received <= from_iso(phase["close"]))
            )
            if not in_time:
                self.count(4, "late by the final record", game)
                if rows:
                    self.violate(4, game, f"late, yet counted: {self.explain(sent, message['received_at'])}")
                continue
            self.count(4, "in time", game)
            if len(rows) == 1:
                self.count(4, "in time: in moves once", game)
                continue
            if rows:
                continue
            later = [
                other
                for other in by_seat[sent.game, sent.phase, sent.seat]
                if other.delivered > sent.delivered and self.moves.get(other.message_id)
            ]
            excuse = self.excused.get(sent.message_id) or self.excuse(sent, received)
            if later:
                self.count(4, "in time: superseded by a later move of the seat", game)
            elif excuse and message["code"] == "refused":
                self.count(4, f"in time, refused: {excuse}", game)
            else:
                answers = [" ".join(body_text(a.raw).split())[:300] for a in self.answers.get(sent.message_id, [])]
                self.violate(
                    4,
                    game,
                    f"lost (outcome {message['code']!r}): {self.explain(sent, message['received_at'])}; "
                    f"answered: {answers or 'never'}",
                )
        for key, rows in self.moves.items():
            if key not in mine:
                self.violate(4, rows[0][0], f"a move by mail from a mail the players never sent: {key} {rows}")
        self.count(4, "moves by mail in games.db", None, self.mail_moves)

    # 5. every finished game's record verifies, every digest a player saw is the record's
    def check_records(self) -> None:
        bench = self.bench
        site = bench.home / "site"
        render = subprocess.run(
            bench.referee.command("render", "--dir", str(site), "--force"),
            cwd=bench.home,
            env=bench.env(),
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        if render.returncode != 0:
            self.violate(5, None, f"referee render failed: {render.stderr[-600:]}")
            return
        for game, kind in sorted(self.kinds.items()):
            state = self.states.get(game)
            self.count(5, f"games {state}", game)
            if state != "finished":
                continue
            verdict = subprocess.run(
                bench.referee.command("verify", str(site / "games" / str(game) / "record.json")),
                cwd=bench.home,
                env=bench.env(),
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            last = (verdict.stdout.strip().splitlines() or [""])[-1]
            if verdict.returncode == 0:
                self.count(5, "records verified", game)
            else:
                self.violate(
                    5,
                    game,
                    f"game {game} ({kind}): referee verify exited {verdict.returncode}: {last} "
                    f"{verdict.stderr.strip()[-300:]}",
                )
        digests = self.final_digests()
        for mail in self.referee_mail:
            if mail.game is None:
                continue
            found = mail_digests(body_text(mail.raw))
            for label, digest in found:
                self.count(5, "digests received", mail.game)
                want = digests.get(mail.game, {}).get(label)
                if want == digest:
                    self.count(5, "digests agreeing", mail.game)
                else:
                    self.violate(
                        5,
                        mail.game,
                        f"{mail.message_id} to {', '.join(mail.rcpts)} ({mail.subject!r}) "
                        f"carries the digest {digest} {label!r}; the final record gives {want}",
                    )

    def final_digests(self) -> dict[int, dict[str, str]]:
        """Each game's digests by label, from games.db's final record: at
        the start, after each resolved phase, and at the end (the final
        mail's: when the game finished and who won)."""
        found = {}
        for game in self.kinds:
            table = self.bench.reader.table(game)
            labels = {"the start": table.digest(0)}
            for number in range(1, len(table.replay.steps) + 1):
                labels[table.phases[number - 1]["label"]] = table.digest(number)
            if table.row["state"] == "finished":
                labels["the end"] = table.end_digest()
            found[game] = {label: short_digest(digest) for label, digest in labels.items()}
        return found


# -- the report ----------------------------------------------------------------------

TITLES = {
    1: "every mail the SMTP sink took is known to games.db's outbox under its Message-ID",
    2: "nothing sent again under a new Message-ID",
    3: "no in-time reply refused",
    4: "no move lost or doubled",
    5: "every finished game's record verifies; every digest received is the record's",
}


def report(bench: Bench, checks: Checks | None) -> bool:
    """Print the counts; whether every check passed."""
    args, runs = bench.args, bench.runs
    elapsed = time.monotonic() - bench.started
    killed = [run for run in runs if run.killed]
    print(
        f"\npower-cut bench, seed {args.seed}: {len(bench.kinds)} games "
        f"({', '.join(f'{k} {n}' for k, n in sorted(Counter(bench.kinds.values()).items()))}), "
        f"{len(runs)} referee runs in {elapsed:.0f} s "
        f"({', '.join(f'{name} at {at:.0f} s' for name, at in bench.phase_times.items())})"
    )
    cuts = bench.cuts
    print(
        f"cuts: {cuts['cuts']} ({cuts['landed']} killing a running referee: "
        f"{sum(r.program == 'serve' for r in killed)} serve, {sum(r.program == 'once' for r in killed)} run --once; "
        f"{cuts['after a clean exit']} after a run --once had ended by itself)"
    )
    print("  kills aimed: " + ", ".join(f"{aim} {n}" for aim, n in sorted(Counter(r.aim for r in killed).items())))
    points = Counter(r.point for r in killed if r.fired)
    print(
        f"  at crash points (reached): {sum(points.values())}: "
        + ", ".join(f"{point} {points[point]}" for point in POINTS)
    )
    print(
        "  what the referee was doing, by its log: "
        + ", ".join(f"{what} {n}" for what, n in Counter(r.landed for r in killed if not r.fired).most_common())
    )
    files = defaultdict(Counter)
    for key, n in cuts.items():
        if " " in key and key.split(" ", 1)[0].startswith("games.db"):
            name, what = key.split(" ", 1)
            files[name][what] += n
    print(
        "  files after the cuts: "
        + "; ".join(
            f"{name}: " + ", ".join(f"{what} {n}" for what, n in sorted(whats.items()))
            for name, whats in sorted(files.items())
        )
    )
    print(
        f"  reverted or removed: games.db {files['games.db']['reverted'] + files['games.db']['removed']}, "
        f"games.db-wal {files['games.db-wal']['reverted'] + files['games.db-wal']['removed']} of {cuts['cuts']} cuts"
    )
    counts = bench.players.counts
    print(
        f"players: {len(bench.players.sent)} mails sent ({counts['move']} moves, {counts['change']} changes of "
        f"mind, {counts['near']} near the deadline); {counts['left to the deadline']} prompts left to the deadline; "
        f"{counts['phase over before the answer'] + counts['game over before the answer']} answers not sent "
        f"(the phase was over)"
    )
    for anomaly in bench.players.anomalies[:10]:
        print(f"  anomaly: {anomaly}")
    print(f"referee: {len(bench.sink)} mails taken by the SMTP sink")
    ok = not bench.problems
    for problem in bench.problems[:20]:
        print(f"  PROBLEM: {problem}")
    if checks is None:
        print("FAIL: the checks never ran")
        return False
    for check in sorted(TITLES):
        bad = checks.counts[check]["VIOLATIONS"]
        ok = ok and not bad
        print(f"check {check} ({TITLES[check]}): {'PASS' if not bad else f'FAIL ({bad} violations)'}")
        print("  " + ", ".join(f"{what} {n}" for what, n in sorted(checks.counts[check].items())))
        for kind in [*KINDS, "no game"]:
            if kind in checks.by_kind[check]:
                print(
                    f"    {kind}: "
                    + ", ".join(f"{what} {n}" for what, n in sorted(checks.by_kind[check][kind].items()))
                )
        for violation in checks.violations[check][:15]:
            print(f"  VIOLATION: {violation}")
        for note in checks.notes[check][:5]:
            print(f"  NOTE: {note}")
    finished = Counter(checks.kinds[game] for game, state in checks.states.items() if state == "finished")
    print(
        "games finished: "
        + ", ".join(f"{kind} {finished[kind]} of {sum(k == kind for k in bench.kinds.values())}" for kind in KINDS)
    )
    print(f"time taken: {elapsed:.0f} s")
    print("PASS" if ok else "FAIL")
    return ok


def dump(bench: Bench) -> None:
    """What the bench knows that games.db does not, beside it for a look:
    the players' mails, the referee runs, and every mail the sink took."""
    with open(bench.home / "bench-sent.jsonl", "w") as out:
        out.writelines(
            json.dumps({**sent.__dict__, "delivered": sent.delivered.isoformat()}) + "\n" for sent in bench.players.sent
        )
    with open(bench.home / "bench-runs.jsonl", "w") as out:
        out.writelines(
            json.dumps(
                {
                    "name": run.name,
                    "launched": run.launched.isoformat(),
                    "status": run.status,
                    "ended": run.ended and run.ended.isoformat(),
                    "killed": run.killed,
                    "fired": run.fired,
                    "landed": run.landed,
                }
            )
            + "\n"
            for run in bench.runs
        )
    with open(bench.home / "bench-sink.jsonl", "w") as out:
        out.writelines(
            json.dumps({**mail.__dict__, "at": mail.at.isoformat(), "raw": mail.raw.decode("latin-1")}) + "\n"
            for mail in bench.sink.mails
        )


class Kept:
    """A kept home's bench, from its dumps, for the checks again (--recheck)."""

    def __init__(self, home: Path):
        from types import SimpleNamespace

        self.home, self.args = home, SimpleNamespace(seed=None)
        self.db = home / "games.db"
        self.reader = Reader(self.db)
        self.kinds = dict(self.reader.query("select id, kind from games"))
        load = lambda name: [json.loads(line) for line in (home / name).read_text().splitlines()]
        sent = [
            Sent(**{**row, "delivered": datetime.fromisoformat(row["delivered"])}) for row in load("bench-sent.jsonl")
        ]
        self.players = SimpleNamespace(sent=sent)
        self.sink = SimpleNamespace(
            mails=[
                Out(
                    **{
                        **row,
                        "rcpts": tuple(row["rcpts"]),
                        "at": datetime.fromisoformat(row["at"]),
                        "raw": row["raw"].encode("latin-1"),
                    }
                )
                for row in load("bench-sink.jsonl")
            ]
        )
        self.runs = [
            SimpleNamespace(
                **{
                    **row,
                    "launched": datetime.fromisoformat(row["launched"]),
                    "ended": row["ended"] and datetime.fromisoformat(row["ended"]),
                }
            )
            for row in load("bench-runs.jsonl")
        ]
        self.referee = SimpleNamespace(
            command=lambda *args: [sys.executable, "-m", "referee", "--config", str(home / "referee.toml"), *args]
        )

    def env(self) -> dict[str, str]:
        path = os.pathsep.join(filter(None, [str(CODE), os.environ.get("PYTHONPATH")]))
        return {**os.environ, "PYTHONPATH": path}


def recheck(home: Path) -> int:
    """The checks again, on a home a run kept."""
    kept = Kept(home)
    checks = Checks(kept)  # type: ignore[arg-type]
    checks.run()
    ok = True
    for check in sorted(TITLES):
        bad = checks.counts[check]["VIOLATIONS"]
        ok = ok and not bad
        print(f"check {check} ({TITLES[check]}): {'PASS' if not bad else f'FAIL ({bad} violations)'}")
        print("  " + ", ".join(f"{what} {n}" for what, n in sorted(checks.counts[check].items())))
        for violation in checks.violations[check][:15]:
            print(f"  VIOLATION: {violation}")
        for note in checks.notes[check][:5]:
            print(f"  NOTE: {note}")
    kept.reader.close()
    return 0 if ok else 1


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cuts", type=int, default=100, help="power cuts that kill a running referee")
    parser.add_argument("--games", type=int, default=50, help="games, all five kinds in turn")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--play-minutes",
        type=float,
        default=20,
        help="after the cuts, how long a clean serve plays on at most (until every game is over)",
    )
    parser.add_argument("--max-minutes", type=float, default=90, help="the cuts stop here, however many")
    parser.add_argument("--keep", type=Path, help="keep the referee's home (games.db, logs, site, Dovecot) here")
    parser.add_argument("--recheck", type=Path, metavar="DIR", help="only the checks again, on a home a run kept")
    args = parser.parse_args()
    if args.recheck:
        return recheck(args.recheck)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    bench = Bench(args)
    broke, checks = None, None
    try:
        bench.run()
        bench.reader.open()
        checks = Checks(bench)
        checks.run()
    except KeyboardInterrupt as stop:
        broke = f"stopped early ({str(stop) or 'Ctrl-C'})"
    except Exception as error:  # noqa: BLE001 - reported, and everything still stopped
        import traceback

        traceback.print_exc()
        broke = f"the run broke: {error!r}"
    finally:
        bench.stop()
    if broke:
        print(broke, flush=True)
    if bench.players is None:
        print("FAIL: the run never started")
        shutil.rmtree(bench.home, ignore_errors=True) if not args.keep else None
        return 2
    ok = report(bench, checks) and not broke
    if not args.keep:
        if ok or (broke and checks is None and "stopped early" in broke):
            shutil.rmtree(bench.home, ignore_errors=True)
        else:
            dump(bench)
            print(f"kept for a look: {bench.home}")
    else:
        dump(bench)
    if broke:
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
