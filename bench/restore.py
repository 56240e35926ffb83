"""Restores, the long version: many backups taken at random moments of games
of all five kinds played by mail, games.db lost, the backup restored, and
the checks of tests/unit/test_restore.py on each.

Each trial is one referee home: a real Maildir (the referee reads new/ and
files into .processed, as `run --once` does) and a fake clock.  The keeper
starts one to three games of the trial's kind (seats across the game's
range, bots sometimes, a settle delay sometimes; deadlines of 20 minutes to a
day), and strangers sometimes open one more by JOIN mail and its
confirmation.  Players answer each phase with a random legal move
(table.rules.legal_moves, move_text), most in reply to the referee's mail
(In-Reply-To), some change their minds in a sealed phase, some stay silent
(the deadline passes, a random move fills in), a few answer after the
deadline; now and then someone sends STATUS, HAND, TIMEZONE or RESIGN, a
stranger HELP, a move without its token (a forgery notice), a move out of
turn, or junk.  The referee runs like cron, `runner.once()` at least every
tenth of the shortest deadline (and well inside the outage gap), so no
deadline is counted from a late prompt and the outage guard never acts:
what a referee decides because it was not running is documented as not
reproducible (docs/operations.md), so it keeps running.  After each run the
mail queued counts as sent (the players have it).

At a random moment the keeper takes a backup (`referee backup`, through
referee.cli.main): after a run, or between a run and the sending of its
mail, or in the middle of a pass (after its k-th message).  Play goes on for
a random number of phase changes (none, a few, or to the end of the games);
then games.db is lost, `referee restore` puts the backup in place and the
referee runs once, at the moment of the loss.  The checks, per trial:

1. each game's public record (referee.site.public.game_record, as JSON) is
   the one before the loss, byte for byte (times, moves, digests); every
   finished game's record verifies (referee.record.verify); the phases
   still open (opened, deadline, closes) and the sign-ups are as they were;
2. the moves (every field but when the referee wrote the row) and the
   messages handled (key, Message-ID, sender, subject, receipt time, game,
   outcome) are the ones before the loss, in count and content;
3. every Message-ID the players had (the outbox before the loss) is known
   to the restored games.db, a mail made again under it has the same
   recipient and subject (but for a duration: "18 minutes left"), no mail
   is made that was not made before, and the only mails to be sent that
   the players did not have are the restore notices, at most one per
   person; no mail the players had is to be sent again (but those queued
   in the backup and sent after it, which go out again under the
   Message-ID they had: counted apart, as "resent");
4. the next run handles nothing again and queues nothing, and play goes on:
   one more move by mail counts.

Printed per kind: trials, games (by JOIN, finished), phase changes and
moves replayed, mails handled again, mails kept as restored, notices, mails
resent, backups in the middle of a pass, trials with no phase change after
the backup or played to the end, failed trials; then how many trials failed
each way, and each failed trial's first difference with the command that
plays it alone.  Asserts nothing; exits 1 if a check failed.  Everything in
a trial follows from --seed and its number (the referee's secret key and
its games' seeds are drawn from the trial's own random stream), so
`--trial N` plays trial N again exactly.

Two switches tell the ways a restore can differ apart.  --daemon runs the
referee as `serve` wakes: a second after each mail arrives, and at each
deadline, settle end and reminder time, besides the cron cadence.
--mail-last makes the last run before the loss handle a mail received a
second before it, so nothing falls due between the last mail handled again
and the restore.  With both, what a restore should bring back is all there
is to check; without them, cron's cadence and what fell due after the last
mail are in play too (see the xfail tests at the end of
tests/unit/test_restore.py).

Run from the top of the checkout (a trial's home is in /dev/shm where there
is one, so a run times the referee, not the disk's fsyncs):
    python3 bench/restore.py [--trials 200] [--seed 1] [--daemon] [--mail-last]
                             [--keep DIR] [--trial N]
--keep DIR keeps each trial's home (games.db, the backup, the Maildir, and
before.json: what the checks compared against) as DIR/trial-N.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import io
import json
import logging
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email import message_from_bytes, policy
from email.utils import format_datetime
from pathlib import Path
from typing import Any

from referee.cli import main as cli
from referee.config import Config, MaildirSettings
from referee.engine import Engine
from referee.mail.tokens import token_address
from referee.record import verify
from referee.rules import get_game
from referee.runner import Runner
from referee.site.public import game_record
from referee.store import Store
from referee.tables import Table
from referee.timeutil import from_iso, iso

KINDS = ("pure-skill", "bid", "ice", "priority", "bluff")
START = datetime(2026, 11, 21, 12, tzinfo=UTC)
REFEREE = "referee@example.org"
NAMES = ("ann", "ben", "cat", "dan", "eve", "fay", "gil", "hal")
NOTICE = "restored its records"
SIGNUP = re.compile(r"\[\S+ ([a-z2-7]{16})\] JOIN (\S+)$")
# Which of a game's deadlines its phases use (Phase.deadline_kind).
TIMERS = {
    "pure-skill": ("round",),
    "bid": ("round",),
    "ice": ("turn", "decision"),
    "priority": ("turn",),
    "bluff": ("turn", "decision"),
}
# The phase changes played before the backup, at most, and after it (unless
# to the end): a game's length is 13 rounds of Pure Skill, some 30 Bid!
# auctions, 40-80 Ice turns, 40 to over 1,000 Auction turns, 150 Bluff turns.
BEFORE = {"pure-skill": 10, "bid": 20, "ice": 30, "priority": 30, "bluff": 40}
AFTER = {"pure-skill": 8, "bid": 12, "ice": 20, "priority": 20, "bluff": 25}
MOST_PHASE_CHANGES = 400  # to the end of the games: a bound on it (an 8-seat Auction runs to 1,300)

SILENT = 0.12  # a mover who never answers: the deadline fills in a random move
LATE = 0.03  # one who answers after the deadline (refused)
CHANGE = 0.25  # one who changes their mind in a sealed phase
THREADED = 0.75  # a move in reply to the referee's last mail (In-Reply-To)
OTHER = 0.08  # per run: someone sends something other than a move


class Clock:
    """The referee's clock, moved by the bench."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def seconds(value: float) -> timedelta:
    return timedelta(seconds=max(1, round(value)))


@dataclass
class Figures:
    """One kind's counts, summed over its trials."""

    trials: int = 0
    games: int = 0
    joined: int = 0  # games opened by JOIN mail
    finished: int = 0  # games finished by the loss
    phases: int = 0  # phase changes replayed (resolved since the backup)
    moves: int = 0  # moves replayed (recorded since the backup)
    again: int = 0  # mails handled again
    restored: int = 0  # mails kept as restored
    notices: int = 0
    resent: int = 0  # queued in the backup, sent after it: sent again under their own Message-ID
    mid_pass: int = 0  # backups taken in the middle of a pass
    zero: int = 0  # trials with no phase change after the backup
    to_end: int = 0  # trials played on to the end of their games
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)  # each failed trial's first difference
    kinds: Counter[str] = field(default_factory=Counter)  # trials per kind of failure (a trial may have several)

    def add(self, other: Figures) -> None:
        for name, value in vars(other).items():
            setattr(self, name, getattr(self, name) + value)


class Capture(logging.Handler):
    """The referee's log lines at WARNING and above, kept for the checks."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((record.levelno, record.getMessage()))


class Trial:
    """One referee home, its players, one backup, one loss and one restore."""

    def __init__(self, number: int, seed: int, root: Path, log: Capture, daemon: bool = False, mail_last: bool = False):
        self.number, self.root, self.log = number, root, log
        self.daemon, self.mail_last = daemon, mail_last
        self.rng = random.Random(f"{seed}:{number}")
        self.kind = KINDS[number % len(KINDS)]
        self.rules = get_game(self.kind)
        self.figures = Figures(trials=1)
        self.clock = Clock()
        self.box = root / "Maildir"
        for sub in ("new", "cur", "tmp"):
            (self.box / sub).mkdir(parents=True)
        r = self.rng
        round_ = timedelta(hours=r.choice((1, 3, 8, 24)))
        turn = timedelta(minutes=r.choice((30, 60, 240, 720)))
        decision = timedelta(minutes=r.choice((20, 60, 120)))
        lengths = {"round": round_, "turn": turn, "decision": decision}
        self.shortest = min(lengths[kind] for kind in TIMERS[self.kind])
        settle = timedelta(minutes=r.choice((5, 20, 60))) if r.random() < 0.4 else timedelta(0)
        reminder = self.shortest * r.uniform(0.2, 0.45) if r.random() < 0.5 else None
        self.config = Config(
            address=REFEREE,
            database=root / "games.db",
            maildir=MaildirSettings(self.box),
            deadline=round_,
            turn_deadline=turn,
            decision_deadline=decision,
            settle=settle,
            reminder=reminder and timedelta(seconds=round(reminder.total_seconds())),
        )
        (root / "referee.toml").write_text(
            f'[referee]\naddress = "{REFEREE}"\ndatabase = "{self.config.database}"\n[maildir]\npath = "{self.box}"\n'
        )  # (restore asks: a mailbox to read again)
        self.pending: list[tuple[datetime, int, bytes]] = []  # mail on its way, by receipt time
        self.sent = 0  # mails written to the Maildir
        self.planned: set[tuple[int, int]] = set()  # (game, phase) the players have answered
        self.last_mail: dict[tuple[str, int], tuple[str, str]] = {}  # (player, game) -> (Message-ID, subject)
        self.joiners: dict[str, str] = {}  # address -> "asked", "confirmed"
        self.backup_at_ingest: int | None = None  # take the backup after this many ingests of the next pass
        self.backup_taken = False
        self.at_backup: dict[str, int] = {}  # phases resolved and moves made when the backup was taken
        self.loop = asyncio.new_event_loop()
        self.open()

    # -- the referee -------------------------------------------------------

    def open(self) -> None:
        # The referee's secret key and its games' seeds from the trial's own
        # stream, so a trial plays the same again (the referee's own: `secrets`).
        self.engine = Engine(Store(self.config.database), self.config, self.clock, lambda n: self.rng.randbytes(n))
        self.runner = Runner.from_config(self.config, self.engine)
        ingest = self.engine.ingest

        def counted(raw: bytes, received_at: datetime | None = None):  # a backup in the middle of a pass
            outcome = ingest(raw, received_at=received_at)
            if self.backup_at_ingest is not None:
                self.backup_at_ingest -= 1
                if self.backup_at_ingest <= 0:
                    self.backup()
                    self.figures.mid_pass += 1
            return outcome

        self.engine.ingest = counted  # type: ignore[method-assign]

    def close(self) -> None:
        self.loop.run_until_complete(self.runner.close())
        self.engine.store.db.conn.close()

    def run(self, send: bool = True) -> None:
        """One cron run at the clock's time; with ``send``, its mail reaches the players."""
        self.loop.run_until_complete(self.runner.once())
        self.last_run = self.clock()  # what the daemon's log would say
        if send:
            self.deliver_out()

    def cli(self, *args: str) -> int:
        with contextlib.redirect_stdout(io.StringIO()):
            return cli(["--config", str(self.root / "referee.toml"), *args])

    def backup(self) -> None:
        assert self.cli("backup", str(self.root / "backup.db")) == 0
        self.backup_taken = True
        self.backup_at_ingest = None
        self.at_backup = {"resolved": self.resolved(), "moves": self.count_moves()}

    def deliver_out(self) -> None:
        """The queued mail is sent: the players have it."""
        store = self.engine.store
        for mail in store.outbox("queued"):
            store.mark_sent([mail["id"]], iso(self.clock()))
            self.read(mail)
        store.sync()

    # -- the players -------------------------------------------------------

    def read(self, mail: dict[str, Any]) -> None:
        """A player reads a mail: the last one of a game is what they reply to;
        a sign-up confirmation is answered."""
        to = mail["recipients"][0]
        if mail["game_id"] is not None:
            self.last_mail[(to, mail["game_id"])] = (mail["message_id"], mail["subject"])
        match = SIGNUP.search(mail["subject"])
        if match and self.joiners.get(to) == "asked":
            reply_to = str(message_from_bytes(mail["raw"], policy=policy.default)["Reply-To"])
            at = self.clock() + seconds(self.rng.uniform(60, self.interval() * 2))
            self.post(at, to, reply_to, f"Re: {mail['subject']}", "", thread=mail["message_id"])
            self.joiners[to] = "confirmed"

    def post(self, at: datetime, sender: str, to: str, subject: str, body: str, thread: str | None = None) -> None:
        self.sent += 1
        lines = [
            f"Received: from client.example.net by mx.example.org; {format_datetime(at)}",
            f"From: {sender}",
            f"To: {to}",
            f"Subject: {subject}",
            f"Date: {format_datetime(at)}",
            f"Message-ID: <t{self.number}m{self.sent}@client.example.net>",
        ]
        if thread:
            lines += [f"In-Reply-To: {thread}", f"References: {thread}"]
        raw = ("\r\n".join([*lines, "Content-Type: text/plain; charset=utf-8", "", body]) + "\r\n").encode()
        heapq.heappush(self.pending, (at, self.sent, raw))

    def deliver_in(self, until: datetime) -> None:
        """Into the Maildir, as the server receives it: the receipt time in the name."""
        while self.pending and self.pending[0][0] <= until:
            at, n, raw = heapq.heappop(self.pending)
            name = f"{int(at.timestamp())}.M{at.microsecond}P{self.number}Q{n}.mx"
            (self.box / "tmp" / name).write_bytes(raw)
            os.rename(self.box / "tmp" / name, self.box / "new" / name)

    def seat_mail(self, table: Table, seat: int, body: str, at: datetime, threaded: bool = True) -> None:
        """A player's mail about a game: to their reply address, in reply to
        the last mail they had of it (most of the time)."""
        player = table.label(seat)
        last = self.last_mail.get((player, table.id))
        thread = last if threaded and last and self.rng.random() < THREADED else None
        subject = f"Re: {thread[1]}" if thread else f"Re: {table.tag(seat)}"
        self.post(
            at,
            player,
            token_address(REFEREE, table.seats[seat]["token"]),
            subject,
            body,
            thread=thread[0] if thread else None,
        )

    def answer_phases(self) -> None:
        """Each mover of a phase newly open decides what to do about it."""
        r = self.rng
        for game in self.engine.store.games("running"):
            table = self.engine.table(game["id"])
            phase = table.open_phase
            if phase is None or (table.id, phase["number"]) in self.planned:
                continue
            self.planned.add((table.id, phase["number"]))
            deadline = from_iso(phase["deadline"])
            length = (deadline - from_iso(phase["opened_at"])).total_seconds()
            for seat in table.waiting_for(phase):
                if not table.human(seat) or r.random() < SILENT:
                    continue
                legal = table.rules.legal_moves(table.state, seat)
                move = r.choice(legal)
                if r.random() < LATE:
                    at = deadline + seconds(r.uniform(1, length / 5))
                else:
                    at = max(self.clock(), from_iso(phase["opened_at"])) + seconds(r.uniform(1, 0.7 * length))
                body = table.rules.move_text(move)
                if r.random() < 0.1:
                    body = r.choice(("STATUS\n", "HAND\n", "Hello,\n\n")) + body + r.choice(("", "\n\nThanks"))
                self.seat_mail(table, seat, body, at)
                if phase["sealed"] and len(legal) > 1 and r.random() < CHANGE:
                    other = r.choice([m for m in legal if m != move])
                    window = table.row["settle_seconds"] or length * 0.2
                    self.seat_mail(table, seat, table.rules.move_text(other), at + seconds(r.uniform(1, window)))

    def something_else(self, until: datetime) -> None:
        """Now and then, mail that is not a move: a command, junk, a forgery,
        a move out of turn, a stranger's question or a burst of them."""
        r = self.rng
        if r.random() >= OTHER:
            return
        at = self.clock() + seconds(r.uniform(1, (until - self.clock()).total_seconds()))
        tables = [self.engine.table(g["id"]) for g in self.engine.store.games("running")]
        humans = [(t, s) for t in tables for s in range(len(t.seats)) if t.human(s)]
        what = r.choice(("command", "command", "stranger", "burst", "forged", "out of turn", "junk", "resign"))
        if what in ("command", "forged", "out of turn", "resign") and humans:
            table, seat = r.choice(humans)
            phase = table.open_phase
            if what == "command":
                body = r.choice(("STATUS", "HAND", "TIMEZONE Europe/Berlin", "TIMEZONE UTC", "HELP", "LIST"))
                self.seat_mail(table, seat, body, at)
            elif what == "resign":
                if r.random() < 0.3:
                    self.seat_mail(table, seat, "RESIGN", at)
            elif phase is not None:  # a move without its token, or out of turn
                legal = table.rules.legal_moves(table.state, r.choice([seat, *phase["movers"]]))
                text = table.rules.move_text(r.choice(legal)) if legal else "pass"
                if what == "forged":
                    self.post(at, table.label(seat), REFEREE, "my move", text)
                elif seat not in phase["movers"]:
                    self.seat_mail(table, seat, text, at)
        elif what == "stranger":
            self.post(
                at,
                f"s{r.randrange(5)}@example.com",
                REFEREE,
                "Hello referee",
                r.choice(("HELP", "LIST", "JOIN nosuchgame", "what is this?", "")),
            )
        elif what == "burst":  # more than the open budget of an hour
            for n in range(r.randint(6, 9)):
                self.post(at + timedelta(minutes=3 * n), "burst@example.com", REFEREE, "?", "HELP")
        elif what == "junk":
            self.post(
                at,
                r.choice(("nobody", "x@y@z", "eve@example.net")),
                r.choice((REFEREE, "referee+zzzz@example.org")),
                "=?utf-8?q?=ff?=",
                r.choice(("\x00\x01 bid 7", "bid " * 500, "=?=?=")),
            )

    def plan_joins(self, start: datetime, span: float) -> None:
        """A game opened by JOIN mail: as many strangers as its seats ask to join."""
        for n in range(self.rules.max_seats):
            address = f"j{self.number}x{n}@example.net"
            self.joiners[address] = "asked"
            at = start + seconds(self.rng.uniform(0, span))
            self.post(at, address, REFEREE, "join", f"JOIN {self.kind}")

    def interval(self) -> float:
        """Seconds between two runs: at most a tenth of the shortest deadline."""
        return self.shortest.total_seconds() / 10 * self.rng.uniform(0.3, 1.0)

    def step(self) -> None:
        """Time passes to the next run: mail arrives, the referee runs, the
        players read what it sent and answer."""
        until = self.clock() + seconds(self.interval())
        if self.daemon:  # `serve` wakes for mail (IDLE), and for the next deadline, settle end or reminder
            due = [moment for moment in self.engine.next_due() if moment > self.clock()]
            mail = [self.pending[0][0] + timedelta(seconds=1)] if self.pending else []
            until = max(self.clock() + timedelta(seconds=1), min([until, *due, *mail]))
        self.something_else(until)
        self.deliver_in(until)
        self.clock.now = until
        self.run()
        self.answer_phases()

    def resolved(self) -> int:
        return sum(1 for g in self.engine.store.games() for p in self.engine.store.phases(g["id"]) if p["resolved_at"])

    def running(self) -> bool:
        return (
            bool(self.engine.store.games("running"))
            or any(s == "asked" for s in self.joiners.values())
            or bool(self.engine.store.games("open"))
        )

    # -- the trial ---------------------------------------------------------

    def play(self) -> None:
        r = self.rng
        games = r.choices((1, 2, 3), (5, 3, 2))[0]
        for n in range(games):
            seats = r.randint(self.rules.min_seats, self.rules.max_seats)
            bots = r.randint(1, seats - 1) if r.random() < 0.3 else 0
            players = [f"{NAMES[i]}{n}@example.org" for i in range(seats - bots)]
            self.engine.new_game(
                self.kind,
                players,
                bots=bots,
                settle=self.config.settle if r.random() < 0.5 else None,
                deadline=self.config.deadline,
                turn_deadline=self.config.turn_deadline,
                decision_deadline=self.config.decision_deadline,
            )
            self.figures.games += 1
        if r.random() < 0.35:
            self.figures.joined += 1
            self.plan_joins(
                START + seconds(r.uniform(0, self.shortest.total_seconds() * 4)),
                self.shortest.total_seconds() * r.uniform(1, 8),
            )
        self.run()
        self.answer_phases()

        before = r.randint(0, BEFORE[self.kind])
        while self.resolved() < before and self.running():
            self.step()
        how = r.random()
        if how < 0.3:  # in the middle of the next pass, after its k-th message
            self.backup_at_ingest = r.randint(1, 3)
            self.step()
            if not self.backup_taken:
                self.backup()
        elif how < 0.5:  # between a run and the sending of its mail
            self.clock.now += seconds(self.interval())
            self.deliver_in(self.clock())
            self.run(send=False)
            self.backup()
            self.deliver_out()
            self.answer_phases()
        else:
            self.backup()

        mode = r.random()
        if mode < 0.15:
            self.figures.zero += 1
            for _ in range(r.randint(0, 3)):
                if self.resolved() > self.at_backup["resolved"]:
                    break
                self.step()
        else:
            to_end = mode > 0.85
            self.figures.to_end += to_end
            after = MOST_PHASE_CHANGES if to_end else r.randint(1, AFTER[self.kind])
            while self.resolved() - self.at_backup["resolved"] < after and self.running():
                self.step()
        if self.mail_last:  # the last run handles a mail a second old: nothing falls due after it
            at = self.clock() + seconds(self.interval())
            self.post(at - timedelta(seconds=1), "last@example.com", REFEREE, "Hello referee", "HELP")
            self.deliver_in(at)
            self.clock.now = at
            self.run()

    def count_moves(self) -> int:
        return sum(len(self.engine.store.moves(g["id"])) for g in self.engine.store.games())

    def snapshot(self) -> dict[str, Any]:
        """What the checks compare: the public records, the moves, the messages, the outbox."""
        store = self.engine.store
        records = {
            g["id"]: json.dumps(game_record(self.engine.table(g["id"])), sort_keys=True)
            for g in store.games()
            if g["state"] != "open"
        }
        moves = [
            {k: v for k, v in m.items() if k not in ("id", "recorded_at")}
            for g in store.games()
            for m in store.moves(g["id"])
        ]
        messages = sorted(
            (
                {
                    k: m[k]
                    for k in ("key", "message_id", "sender", "subject", "received_at", "game_id", "code", "detail")
                }
                for m in store.messages()
            ),
            key=lambda m: (m["received_at"], m["key"]),
        )
        outbox = {
            m["message_id"]: {"to": m["recipients"], "subject": m["subject"], "state": m["state"]}
            for m in store.outbox(None)
        }
        states = {g["id"]: g["state"] for g in store.games()}
        opened = {
            g["id"]: {k: phase[k] for k in ("number", "label", "opened_at", "deadline", "closes_at")}
            for g in store.games()
            if (phase := self.engine.table(g["id"]).open_phase)
        }
        signups = {g["id"]: [s["address"] for s in store.signups(g["id"])] for g in store.games("open")}
        return {
            "records": records,
            "open": opened,
            "signups": signups,
            "moves": moves,
            "messages": messages,
            "outbox": outbox,
            "states": states,
        }

    def lose_and_restore(self) -> list[str]:
        """games.db is lost; `referee restore`; the next run; the checks."""
        failures = [f"logged during play: {line}" for level, line in self.log.lines if alarming(level, line)]
        before = self.snapshot()
        (self.root / "before.json").write_text(json.dumps(before, indent=1, sort_keys=True))
        self.figures.finished += sum(1 for s in before["states"].values() if s == "finished")
        self.figures.phases += self.resolved() - self.at_backup["resolved"]
        self.figures.moves += self.count_moves() - self.at_backup["moves"]
        self.close()
        ran_until = []  # the games.db replaced says when the referee last ran; gone, the keeper does (the log)
        if self.rng.random() < 0.5:  # gone with its disk (else `restore` moves it aside)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.config.database}{suffix}").unlink(missing_ok=True)
            ran_until = ["--ran-until", iso(self.last_run)]
        backed = Store(self.root / "backup.db")
        queued_in_backup = {m["message_id"] for m in backed.outbox("queued")}
        backed.db.conn.close()
        self.log.lines.clear()
        assert self.cli("restore", str(self.root / "backup.db"), *ran_until) == 0
        self.open()
        self.run(send=False)
        failures += [f"logged by the restore: {line}" for level, line in self.log.lines if alarming(level, line)]
        restore_lines = [line for _, line in self.log.lines if "after the restore" in line]
        if match := re.search(r": (\d+) mail\(s\) of the", restore_lines[0] if restore_lines else ""):
            self.figures.again += int(match[1])
        after = self.snapshot()
        failures += self.compare(before, after, queued_in_backup)
        self.deliver_out()
        failures += self.goes_on(after)
        return failures

    def compare(self, before: dict[str, Any], after: dict[str, Any], queued_in_backup: set[str]) -> list[str]:
        failures = []
        # 1. the public records, byte for byte; the finished ones verify
        for game, record in before["records"].items():
            again = after["records"].get(game)
            if again != record:
                failures.append(f"(1) game {game}'s record differs: {first_difference(record, again)}")
            elif before["states"][game] == "finished" and not (verdict := verify(json.loads(record))).ok:
                failures.append(f"(1) game {game}'s record does not verify: {verdict.message}")
        if extra := set(after["records"]) - set(before["records"]):
            failures.append(f"(1) games the restore made that were not there before: {sorted(extra)}")
        for name in ("open", "signups"):  # the phases still open, and the sign-ups, as they were
            if after[name] != before[name]:
                failures.append(
                    f"(1) the {'open phases' if name == 'open' else name} differ: "
                    f"{first_difference(before[name], after[name])}"
                )
        # 2. moves and messages
        for name in ("moves", "messages"):
            if after[name] != before[name]:
                failures.append(
                    f"(2) {name}: {len(before[name])} before, {len(after[name])} after; "
                    f"{first_difference(before[name], after[name])}"
                )
        # 3. the mails the players had, and those to be sent
        had, now = before["outbox"], after["outbox"]
        unknown = [mid for mid in had if mid not in now]
        if unknown:
            failures.append(
                f"(3) {len(unknown)} Message-ID(s) the players had are unknown after the restore, "
                f"the first {unknown[0]}: {had[unknown[0]]['subject']!r} to {had[unknown[0]]['to']}"
            )
        for mid, mail in now.items():  # a word may differ: "18 minutes left" said at the reminder's own time
            if mid in had and (mail["to"], timeless(mail["subject"])) != (
                had[mid]["to"],
                timeless(had[mid]["subject"]),
            ):
                failures.append(
                    f"(3) {mid} was {had[mid]['subject']!r} to {had[mid]['to']}, is now "
                    f"{mail['subject']!r} to {mail['to']}"
                )
                break
        made = [mid for mid, mail in now.items() if mail["state"] == "restored" and mid not in had]
        if made:
            failures.append(
                f"(3) {len(made)} mail(s) made again that were not made before, the first "
                f"{now[made[0]]['subject']!r} to {now[made[0]]['to']}"
            )
        self.figures.restored += sum(1 for mail in now.values() if mail["state"] == "restored")
        queued = {mid: mail for mid, mail in now.items() if mail["state"] == "queued"}
        notices = [mail for mid, mail in queued.items() if mid not in had and NOTICE in mail["subject"]]
        self.figures.notices += len(notices)
        told = Counter(mail["to"][0] for mail in notices)
        if twice := [address for address, n in told.items() if n > 1]:
            failures.append(f"(3) more than one notice to {twice[0]}")
        if other := [mail for mid, mail in queued.items() if mid not in had and NOTICE not in mail["subject"]]:
            failures.append(
                f"(3) {len(other)} new mail(s) to send besides the notices, the first "
                f"{other[0]['subject']!r} to {other[0]['to']}"
            )
        again = [mid for mid in queued if mid in had]
        self.figures.resent += sum(1 for mid in again if mid in queued_in_backup)
        if resent := [mid for mid in again if mid not in queued_in_backup]:
            failures.append(
                f"(3) {len(resent)} mail(s) the players had are to be sent again, the first "
                f"{now[resent[0]]['subject']!r} to {now[resent[0]]['to']} ({resent[0]})"
            )
        return failures

    def goes_on(self, after: dict[str, Any]) -> list[str]:
        """4. the next run handles nothing again, and one more move counts."""
        failures = []
        self.run(send=False)
        again = self.snapshot()
        for name in ("records", "open", "moves", "messages"):
            if again[name] != after[name]:
                failures.append(f"(4) the next run changed the {name}: {first_difference(after[name], again[name])}")
        if len(again["outbox"]) != len(after["outbox"]):
            failures.append(f"(4) the next run queued {len(again['outbox']) - len(after['outbox'])} mail(s)")
        self.deliver_out()
        for game in self.engine.store.games("running"):
            table = self.engine.table(game["id"])
            phase = table.open_phase
            waiting = [s for s in table.waiting_for(phase) if table.human(s)] if phase else []
            if not waiting:
                continue
            seat = waiting[0]
            move = table.rules.move_text(self.rng.choice(table.rules.legal_moves(table.state, seat)))
            moves = len(self.engine.store.moves(table.id))
            player = table.label(seat)
            self.post(
                self.clock() + timedelta(seconds=1),
                player,
                token_address(REFEREE, table.seats[seat]["token"]),
                f"Re: {table.tag(seat)}",
                move,
            )
            self.deliver_in(self.clock() + timedelta(seconds=1))
            self.clock.now += timedelta(seconds=2)
            self.run()
            if len(self.engine.store.moves(table.id)) <= moves:
                failures.append(f"(4) game {table.id}: a move by mail after the restore did not count")
            break
        return failures


def first_difference(a: Any, b: Any, path: str = "") -> str:
    """Where two JSON-like values first differ, and how."""
    if isinstance(a, str) and isinstance(b, str) and a[:1] in "{[" and b[:1] in "{[":
        with contextlib.suppress(ValueError):
            a, b = json.loads(a), json.loads(b)
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if a.get(key) != b.get(key):
                if key not in a or key not in b:
                    return f"{path}.{key}: {'missing before' if key not in a else 'missing after'}"
                return first_difference(a[key], b[key], f"{path}.{key}")
    if isinstance(a, list) and isinstance(b, list):
        for n, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}[{n}]")
        if len(a) != len(b):
            return f"{path}: {len(a)} entries before, {len(b)} after; the first extra {(a + b)[min(len(a), len(b))]}"
    return f"{path or 'the value'}: {short(a)} before, {short(b)} after"


FAILURE_KINDS = (  # the checks' words -> a short name for the summary
    (r"^\(1\) .*record differs", "(1) a public record differs"),
    (r"^\(1\) .*does not verify", "(1) a finished game's record does not verify"),
    (r"^\(1\) the open phases", "(1) a phase still open differs (its deadline, say)"),
    (r"^\(1\) the signups", "(1) the sign-ups differ"),
    (r"^\(1\) ", "(1) games made that were not there"),
    (r"^\(2\) moves", "(2) the moves differ"),
    (r"^\(2\) messages", "(2) the messages handled differ"),
    (r"^\(3\) .* unknown after", "(3) a Message-ID the players had is unknown"),
    (r"^\(3\) .* was .* is now", "(3) a mail made again differs from the one under its Message-ID"),
    (r"^\(3\) .*made again that were not made", "(3) a mail made again that was not made before (kept, unsent)"),
    (r"^\(3\) more than one notice", "(3) more than one notice to a person"),
    (r"^\(3\) .*new mail", "(3) a new mail to send besides the notices"),
    (r"^\(3\) .*to be sent again", "(3) a mail the players had is to be sent again (its own Message-ID)"),
    (r"^\(4\) the next run", "(4) the next run changed something"),
    (r"^\(4\) ", "(4) a move after the restore did not count"),
    (r"^logged during play", "the referee logged an error or an outage during play"),
    (r"^logged by the restore", "the restore logged an error or an outage"),
)


def failure_kind(line: str) -> str:
    return next((name for pattern, name in FAILURE_KINDS if re.search(pattern, line)), "the trial broke")


def alarming(level: int, line: str) -> bool:
    """A log line no trial should cause: an error, or the outage guard acting
    (the referee ran all along)."""
    return level >= logging.ERROR or "did not run from" in line


def timeless(subject: str) -> str:
    """A subject with its durations ("18 minutes 30 seconds left") left out."""
    return re.sub(r"\d+ (day|hour|minute|second)s?( \d+ (day|hour|minute|second)s?)?", "...", subject)


def short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 300 else text[:300] + "..."


def run_trial(number: int, seed: int, home: Path, log: Capture, **how: bool) -> tuple[str, Figures]:
    start = time.perf_counter()
    log.lines.clear()
    trial = Trial(number, seed, home, log, **how)
    try:
        trial.play()
        failures = trial.lose_and_restore()
    except Exception as error:  # noqa: BLE001 - a broken trial is a failure to report, not the end of the run
        failures = [f"the trial broke: {type(error).__name__}: {error}"]
    finally:
        with contextlib.suppress(Exception):
            trial.close()
        trial.loop.close()
    trial.figures.failures = [f"trial {number}: {line}" for line in failures[:1]]
    trial.figures.kinds = Counter({failure_kind(line) for line in failures})
    trial.figures.seconds = time.perf_counter() - start
    return trial.kind, trial.figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200, help="trials, the five kinds in turn")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep each trial's home here, as DIR/trial-N")
    parser.add_argument("--trial", type=int, help="play only this trial (as numbered in a run with this --seed)")
    parser.add_argument(
        "--daemon",
        action="store_true",
        help="the referee also runs a second after each mail arrives and at each deadline, "
        "settle end and reminder time, as `serve` wakes for them (else only like cron)",
    )
    parser.add_argument(
        "--mail-last",
        action="store_true",
        help="the last run before the loss handles a mail received a second before it, so "
        "nothing falls due between the last mail handled again and the restore",
    )
    args = parser.parse_args()
    log = Capture()
    logger = logging.getLogger("referee")
    logger.addHandler(log)
    logger.propagate = False  # `referee backup` sets up the root logger: the bench prints its own lines
    numbers = [args.trial] if args.trial is not None else list(range(args.trials))
    # In memory where there is /dev/shm: a run fsyncs games.db each pass, and
    # thousands of passes on a shared disk would time the disk, not the referee.
    shm = Path("/dev/shm")
    scratch = Path(tempfile.mkdtemp(prefix="referee-restore-", dir=shm if shm.is_dir() else None))
    totals = {kind: Figures(trials=0) for kind in KINDS}
    start = time.perf_counter()
    try:
        for number in numbers:
            home = (args.keep or scratch) / f"trial-{number}"
            if home.exists():
                shutil.rmtree(home)
            kind, figures = run_trial(number, args.seed, home, log, daemon=args.daemon, mail_last=args.mail_last)
            totals[kind].add(figures)
            if args.keep is None:
                shutil.rmtree(home, ignore_errors=True)
            if figures.failures:
                print(f"FAIL {figures.failures[0]}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    elapsed = time.perf_counter() - start
    columns = (
        "trials",
        "games",
        "joined",
        "finished",
        "phases",
        "moves",
        "again",
        "restored",
        "notices",
        "resent",
        "mid_pass",
        "zero",
        "to_end",
        "failed",
        "seconds",
    )
    modes = [flag for flag, on in (("--daemon", args.daemon), ("--mail-last", args.mail_last)) if on]
    print(f"restore bench: seed {args.seed}{''.join(' ' + m for m in modes)}, {len(numbers)} trial(s), {elapsed:.0f} s")
    print(f"{'kind':11}" + "".join(f"{c:>9}" for c in columns))
    total = Figures(trials=0)
    for kind in KINDS:
        figures = totals[kind]
        total.add(figures)
        print(f"{kind:11}" + "".join(f"{v:>9}" for v in row(figures)))
    print(f"{'all':11}" + "".join(f"{v:>9}" for v in row(total)))
    print(
        "phases: phase changes replayed; moves: moves replayed; again: mails handled again; "
        "restored: mails kept as restored (not sent); notices: restore notices to send; resent: mails "
        "queued in the backup, sent after it, to be sent again under their own Message-ID; mid_pass: "
        "backups in the middle of a pass; zero / to_end: trials with no phase change after the backup / "
        "played on to the end"
    )
    for kind, count in sorted(total.kinds.items(), key=lambda item: -item[1]):
        print(f"{count:5} trial(s): {kind}")
    for line in sorted(total.failures, key=lambda line: int(line.split()[1].rstrip(":"))):
        number = int(line.split()[1].rstrip(":"))
        print(
            f"FAIL {line}\n     again: python3 bench/restore.py --seed {args.seed}{''.join(' ' + m for m in modes)} "
            f"--trial {number} --keep DIR"
        )
    print("PASS" if not total.failures else f"FAIL: {len(total.failures)} trial(s)")
    return 1 if total.failures else 0


def row(figures: Figures) -> list[str]:
    return [
        str(v)
        for v in (
            figures.trials,
            figures.games,
            figures.joined,
            figures.finished,
            figures.phases,
            figures.moves,
            figures.again,
            figures.restored,
            figures.notices,
            figures.resent,
            figures.mid_pass,
            figures.zero,
            figures.to_end,
            len(figures.failures),
        )
    ] + [f"{figures.seconds:.0f}"]


if __name__ == "__main__":
    sys.exit(main())
