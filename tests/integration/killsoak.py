"""The kill soak: the referee SIGKILLed at random moments and at chosen points
(crashpoint.py) while it works through a backlog of real mail, then checked
against what the players sent.

Simulated players play Games of Pure Skill to the end by real mail.  Each
round they read their prompts from the mail the SMTP sink took (the reply
address, the Message-ID to answer, their hand) and mail their bids into the
referee's Dovecot INBOX over LMTP, with changes of mind, late bids (after
the round closed: refused) and second deliveries of a mail (the same bytes,
so the same Message-ID: ignored).  One round of every game is a wave;
the first carries most of the changes of mind: a backlog of hundreds of
mails.  The referee works through a wave as `run --once` (the wave delivered
first) or as `serve` (the mail trickling in meanwhile), a subprocess killed
after a random delay or at a crash point, again and again; clean passes end
each wave.  Round 13 plays itself (one card left), so every game finishes.

Then ``Soak.check``: every bid counted exactly once; every round resolved as
the rules say (recomputed here from the bids, and `referee verify` on each
game's record); the INBOX empty; every queued mail delivered, copies only
under one Message-ID; every player's mail answered once; and no run that
ended by itself failed.

What the referee should have made of the mail is reckoned from the order
it read the mail in (docs/games/pure-skill.md, R7 and R8; docs/design.md,
"Time"): a round closes with the third seat's first bid as read, and the
mail read after it is late; of a seat's moves the last by INTERNALDATE
(whole seconds), then UID, counts.  Each pass reads the new mail (UIDs
above those read before) in receipt order, UID order within a second, so
the order read depends on where passes began, which only games.db knows
(its messages, in the order handled): the check takes that order once it
has found it one the runner could have read in (``misread``).  It is not
always the order sent: Dovecot (Maildir) gives mails that arrive while an
IMAP session syncs the mailbox UIDs out of delivery order now and then,
within a second or across one.  The report counts the rounds where that
made a difference.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import smtplib
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage
from itertools import count, zip_longest
from pathlib import Path

import powercut
from crashpoint import FIRED, POINTS
from mailstack import MailStack, wait_for
from referee_helpers import PROMPT, Referee, hand, subject

import referee

HERE = Path(__file__).resolve().parent
CODE = Path(referee.__file__).resolve().parents[1]  # the referee the subprocesses run: this one
CARDS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")  # worth 1 to 13
ROUNDS = 13  # the last one plays itself: one card left
PLAYERS = "players.example.net"  # no Dovecot users: the SMTP sink keeps their mail, relays none
FIRST_WAVE_SHARE = 0.6  # of the mails beyond one bid a seat and round, round 1's share
EXTRAS = {"change": 70, "duplicate": 15, "late": 15}  # what those mails are, by weight
LIVE_ROUNDS = range(2, ROUNDS, 2)  # rounds played with `serve` running while the mail comes in


class SoakError(Exception):
    """The soak cannot go on (a prompt never came, a wait timed out)."""


@dataclass(eq=False)
class Bid:
    """One mail of a player: a bid for a round, or a late one."""

    game: int
    round: int
    seat: int
    card: str
    late: bool
    message_id: str
    sender: str
    to: str
    raw: bytes


def round_moves(bids: list[Bid]) -> list[Bid]:
    """A round's moves: its mails in the order read until every seat has
    bid (that bid closes the round); those after it are late."""
    moves, seats = [], set()
    for bid in bids:
        if len(seats) == 3:
            break
        moves.append(bid)
        seats.add(bid.seat)
    return moves


Place = tuple[datetime, int]  # where the mail server has a mail: its INTERNALDATE and UID
NEVER: Place = (datetime.max.replace(tzinfo=UTC), 0)  # a mail not filed (check_mailbox says so)


def expected_moves(sent: list[Bid], place: dict[str, Place], read: list[str]) -> dict[tuple[int, int], list[Bid]]:
    """Each round's moves, in the order they count: the round's mails in the
    order read (``read``: the Message-IDs in the order the referee handled
    them; mail it never read after, in UID order) until every seat has bid,
    then counted by INTERNALDATE, then UID."""
    order = {message_id: n for n, message_id in enumerate(read)}
    rounds = defaultdict(list)
    for bid in sorted(sent, key=lambda bid: (order.get(bid.message_id, len(order)), place.get(bid.message_id, NEVER))):
        rounds[bid.game, bid.round].append(bid)
    return {
        key: sorted(round_moves(bids), key=lambda bid: place.get(bid.message_id, NEVER)) for key, bids in rounds.items()
    }


def misread(place: dict[str, Place], read: list[str]) -> list[str]:
    """Where the order read is none the runner reads in: a pass reads the
    mail with UIDs above those read before, in receipt order, UID order
    within a second.  So a mail is read before one with a lower UID only if
    the server received it in an earlier second (both in one pass)."""
    problems, before = [], []
    for message_id in read:
        if message_id not in place:
            continue
        received, uid = place[message_id]
        if wrong := [earlier for earlier in before if place[earlier][1] > uid and place[earlier][0] >= received]:
            problems.append(f"{message_id} (UID {uid}) was read after {wrong[0]} (UID {place[wrong[0]][1]})")
        before.append(message_id)
    return problems


def last_cards(moves: list[Bid]) -> list[str]:
    """Each seat's card in a round: its last move."""
    last = {bid.seat: bid.card for bid in moves}
    return [last.get(seat, "none") for seat in range(3)]


@dataclass(eq=False)
class Kill:
    """One SIGKILL tried: at a crash point (the N-th time it is reached), or
    after ``delay`` seconds when ``point`` is None."""

    point: str | None
    program: str = ""  # "once" or "serve"
    n: int = 0
    delay: float = 0.0
    landed: bool = False  # the process died of it

    @property
    def kind(self) -> str:
        return f"{self.point or 'random'} ({self.program})"


def plan_kills(kills: int, rng: random.Random) -> list[Kill]:
    """A third of the kills at crash points (each point at least once), the
    rest at random moments, in random order."""
    at_points = max(len(POINTS), kills // 3)
    points = [list(POINTS)[i % len(POINTS)] for i in range(at_points)]
    plan = [Kill(point) for point in points] + [Kill(None) for _ in range(kills - at_points)]
    rng.shuffle(plan)
    return plan


class Players:
    """Every game's three players.  Each round they read their prompts and
    write their mail in answer."""

    def __init__(self, stack: MailStack, rng: random.Random, seed: int):
        self.stack, self.rng, self.seed = stack, rng, seed
        self.games: dict[int, list[str]] = {}  # each game's players, by seat
        self.sent: list[Bid] = []  # every mail, in the order first delivered
        self.hands: dict[tuple[int, int], list[list[str]]] = {}  # (game, round) -> each seat's, as prompted
        self.problems: list[str] = []
        self._serial = count()
        self._prompts: dict[tuple[int, int, str], dict[str, EmailMessage]] = defaultdict(dict)
        self._read = 0

    def join(self, game: int, players: list[str]) -> None:
        self.games[game] = players

    def round_mail(self, number: int, extras: int) -> list[Bid]:
        """Round ``number``'s mail of every game, games interleaved, each in
        its own order; ``extras`` mails beyond one bid a seat."""
        per_game = Counter(self.rng.choice(list(self.games)) for _ in range(extras))
        queues = [self._game_round(game, number, per_game[game]) for game in self.games]
        stream = []
        while queues := [queue for queue in queues if queue]:
            stream.append(self.rng.choice(queues).pop(0))
        return stream

    def _game_round(self, game: int, number: int, extras: int) -> list[Bid]:
        """Two seats bid, changing their minds, then the third, which closes
        the round; then the late bids.  A second delivery follows its first."""
        prompts = [self.prompt(game, number, seat) for seat in range(3)]
        self.hands[game, number] = [hand(prompt) for prompt in prompts]
        first, second, closing = self.rng.sample(range(3), 3)
        kinds = self.rng.choices(list(EXTRAS), weights=list(EXTRAS.values()), k=extras)
        early = [first, second] + [self.rng.choice((first, second)) for kind in kinds if kind == "change"]
        self.rng.shuffle(early)
        mail = [self._bid(prompts[seat], game, number, seat) for seat in [*early, closing]]
        late = [self.rng.randrange(3) for kind in kinds if kind == "late"]
        mail += [self._bid(prompts[seat], game, number, seat, late=True) for seat in late]
        for _ in range(kinds.count("duplicate")):
            at = self.rng.randrange(len(mail))
            mail.insert(self.rng.randint(at + 1, len(mail)), mail[at])
        return mail

    def _bid(self, prompt: EmailMessage, game: int, number: int, seat: int, late: bool = False) -> Bid:
        card = self.rng.choice(self.hands[game, number][seat])
        sender, to = self.games[game][seat], str(prompt["Reply-To"])
        message_id = f"<g{game}.r{number}.{next(self._serial)}.{self.seed}@{PLAYERS}>"
        answered = str(prompt["Message-ID"])
        raw = self.stack.compose(
            sender,
            to,
            f"Re: {subject(prompt)}",
            f"bid {card}\n",
            headers={"Message-ID": message_id, "In-Reply-To": answered, "References": answered},
        )
        return Bid(game, number, seat, card, late, message_id, sender, to, raw)

    def prompt(self, game: int, number: int, seat: int) -> EmailMessage:
        """The seat's prompt for the round, as the SMTP sink took it."""
        self._read_new_mail()
        player = self.games[game][seat]
        found = self._prompts[game, number, player]
        if not found:
            raise SoakError(f"game {game} round {number}: no prompt to {player}")
        if len(found) > 1:
            self.problems.append(f"game {game} round {number}: prompts to {player} under {len(found)} Message-IDs")
        return next(iter(found.values()))

    def _read_new_mail(self) -> None:
        sent = self.stack.sent[self._read :]  # the sink appends in its own thread
        self._read += len(sent)
        for mail in sent:
            match = PROMPT.match(subject(mail.message))
            if match and mail.mail_from == self.stack.referee:
                for player in mail.rcpt_tos:
                    self._prompts[int(match[1]), int(match[2]), player][str(mail.message["Message-ID"])] = mail.message


@dataclass
class Report:
    """What a soak did and found; ``summary()`` says it in a few lines."""

    seed: int
    games: int
    mails: Counter = field(default_factory=Counter)  # delivered, distinct, change, late, duplicate, reordered ...
    tried: list[Kill] = field(default_factory=list)
    referee_mail: Counter = field(default_factory=Counter)  # queued, taken, copies
    violations: list[str] = field(default_factory=list)
    runs: int = 0  # referee processes started
    seconds: float = 0.0
    cuts: Counter = field(default_factory=Counter)  # power cuts: files kept, reverted, removed

    @property
    def kills(self) -> list[Kill]:
        return [kill for kill in self.tried if kill.landed]

    def fired(self) -> Counter:
        """Crash points reached and killed at, by point."""
        return Counter(kill.point for kill in self.kills if kill.point)

    def summary(self) -> str:
        mails, out = self.mails, self.referee_mail
        tried = Counter(kill.kind for kill in self.tried)
        landed = Counter(kill.kind for kill in self.kills)
        programs = Counter(kill.program for kill in self.kills)
        return "\n".join(
            [
                f"kill soak, seed {self.seed}: {self.games} games of {ROUNDS} rounds in {self.seconds:.1f} s",
                f"players' mail: {mails['delivered']} delivered, {mails['distinct']} distinct "
                + f"({mails['change']} changes of mind, {mails['late']} late), {mails['duplicate']} delivered "
                + f"twice; largest backlog {mails['backlog']}",
                f"the mail server's UIDs and receipt times had {mails['reordered']} rounds' moves read in another "
                + f"order than sent, and so another bid counted in {mails['recounted']}",
                f"kills: {len(self.kills)} of {len(self.tried)} tried ({programs['once']} run --once, "
                + f"{programs['serve']} serve); {self.runs} referee processes in all",
                *(f"  {kind}: {landed[kind]} of {tried[kind]}" for kind in sorted(tried)),
                *(
                    [
                        (
                            f"power cuts: {self.cuts['cuts']} (games.db files reverted to their last flush "
                            f"{self.cuts['reverted']} times, removed {self.cuts['removed']}, kept whole {self.cuts['kept']})"
                        )
                    ]
                    if self.cuts
                    else []
                ),
                f"referee mail: {out['queued']} queued, {out['taken']} taken by the SMTP server, "
                + f"{out['copies']} of them again under the same Message-ID",
                f"violations: {len(self.violations)}",
                *(f"  {violation}" for violation in self.violations[:40]),
            ]
        )


class Soak:
    """One soak over a MailStack: ``Soak(stack, home, ...).run()`` gives a Report."""

    def __init__(
        self,
        stack: MailStack,
        home: Path,
        *,
        seed: int = 1,
        games: int = 8,
        mails: int = 600,
        kills: int = 14,
        power_cut: Path | None = None,
    ):
        """With ``power_cut`` (the shim, powercut.build()), every kill that
        lands is a power cut: what the referee wrote to games.db and never
        flushed is lost before the next run."""
        self.stack, self.home = stack, home
        self.power_cut = power_cut
        self.rng = random.Random(seed)
        self.report = Report(seed, games)
        self.referee = Referee(stack, home)
        text = self.referee.cfg.read_text()  # a soak's players write more than people do
        self.referee.cfg.write_text(text.replace("[referee]\n", "[referee]\nreplies_per_hour = 100000\n", 1))
        (home / "logs").mkdir(exist_ok=True)
        self.extras = self._spread(max(0, mails - 3 * (ROUNDS - 1) * games))
        self.planned_mail = 3 * (ROUNDS - 1) * games + sum(self.extras.values())
        self.kills_planned = max(kills, len(POINTS))
        self.pending = plan_kills(kills, self.rng)
        self.games, self.round = games, 0
        self.running: subprocess.Popen | None = None
        self.players = Players(stack, self.rng, seed)

    def start_games(self) -> None:
        for number in range(1, self.games + 1):
            players = [f"p{number}-{seat}@{PLAYERS}" for seat in range(3)]
            self.players.join(self.new_game(players), players)

    def reboot(self) -> None:
        """After a power cut, the keeper's first look: `referee status`, under
        the shim.  It is also the first to open games.db, which has SQLite
        rebuild its journal's index; the soak's own read-only connections
        could not (they read "file is not a database"), and a connection of
        the soak's that could write would flush and checkpoint unseen by the
        shim."""
        status = self.shimmed("status")
        if status.returncode != 0:
            self.report.violations.append(
                f"after power cut {self.report.cuts['cuts']}: `referee status` "
                f"exited {status.returncode}: {status.stderr[-400:]}"
            )

    def shimmed(self, *args: str) -> subprocess.CompletedProcess:
        """`referee ARGS` as a process under the power-cut shim."""
        assert self.power_cut is not None
        path = os.pathsep.join(filter(None, [str(CODE), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "PYTHONPATH": path, **powercut.environment(self.power_cut, self.referee.db)}
        return subprocess.run(
            self.referee.command(*args), cwd=self.home, env=env, capture_output=True, text=True, timeout=60, check=False
        )

    def new_game(self, players: list[str]) -> int:
        """`referee new`; under a power cut's shim, as a process of its own
        (no connection of this process may see games.db across a cut: SQLite
        shares what it knows of a file between a process's connections)."""
        if not self.power_cut:
            return self.referee.new_game(players=players)
        done = self.shimmed("new", "pure-skill", *[x for p in players for x in ("--player", p)])
        if done.returncode != 0:
            raise SoakError(f"referee new failed: {done.stderr[-400:]}")
        return int(done.stdout.splitlines()[-1])

    def _spread(self, extras: int) -> dict[int, int]:
        """The extra mails of each round: round 1 its share, the rest evenly."""
        first = round(extras * FIRST_WAVE_SHARE)
        later, left = divmod(extras - first, ROUNDS - 2)
        return {1: first, **{n: later + (n - 2 < left) for n in range(2, ROUNDS)}}

    # -- the soak --------------------------------------------------------------

    def run(self) -> Report:
        started = time.monotonic()
        self.start_games()
        try:
            self.settle()  # the games' first prompts go out
            for number in range(1, ROUNDS):
                self.wave(number)
        except (SoakError, AssertionError, subprocess.TimeoutExpired) as error:
            self.report.violations.append(f"the soak stopped in round {self.round}: {error}")
        finally:
            self._stop_running()
        self.check()
        self.report.seconds = time.monotonic() - started
        return self.report

    def wave(self, number: int) -> None:
        """Round ``number`` of every game, under this wave's share of the kills."""
        self.round = number
        mail = self.players.round_mail(number, self.extras[number])
        delivered = self.report.mails["delivered"] + len(mail)
        due = min(1.0, 1.25 * delivered / self.planned_mail)  # by the last waves: slack for retries
        share = round(self.kills_planned * due) - len(self.report.kills)
        quota = share if number < ROUNDS - 1 else len(self.pending)
        if number in LIVE_ROUNDS:
            self.live_wave(mail, quota)
        else:
            self.backlog_wave(mail, quota)
        self.settle()

    def backlog_wave(self, mail: list[Bid], quota: int) -> None:
        """The wave lands first; `run --once` works through it, killed until
        the quota is spent or nothing is left to do."""
        self.deliver(mail)
        self.report.mails["backlog"] = max(self.report.mails["backlog"], self.inbox_count())
        while quota > 0 and self.pending and self.work_left():
            quota -= self.try_kill("once")

    def live_wave(self, mail: list[Bid], quota: int) -> None:
        """The wave trickles in while `serve` runs, killed until the quota is
        spent; then a daemon left alone takes the rest and is stopped with SIGTERM."""
        pace = min(0.05, (quota + 1) * 1.5 / len(mail))  # spread the mail over the kills
        delivery = threading.Thread(target=self.deliver, args=(mail, pace))
        delivery.start()
        try:
            while quota > 0 and self.pending and (delivery.is_alive() or self.work_left()):
                quota -= self.try_kill("serve", delivery)
            self.finish(self.launch("serve"), None, delivery)
        finally:
            delivery.join()

    # -- running the referee -------------------------------------------------------

    def try_kill(self, program: str, delivery: threading.Thread | None = None) -> bool:
        """Run the referee under the next planned kill; whether it landed.  A
        kill that did not land (the run ended first, or never reached the
        point) is tried again next."""
        kill = self.pending.pop(0)
        kill.program = program
        self.report.tried.append(kill)
        if kill.point:
            kill.n = self.reachable(kill.point)
        else:
            kill.delay = (
                self.rng.uniform(0.4, 2.5)
                if program == "serve"
                else self.rng.uniform(0.15, 0.3 + self.unhandled() / 500)
            )  # about the time the run takes
        kill.landed = self.finish(self.launch(program, kill), kill, delivery)
        if not kill.landed:
            self.pending.insert(0, Kill(kill.point))
        return kill.landed

    def reachable(self, point: str) -> int:
        """An N for the point that this run is likely to reach."""
        if point in ("after-seen", "after-move"):
            return 1  # a pass files its messages once
        if point == "in-resolution":
            return self.rng.randint(1, max(1, self.open_rounds() // 2))
        return self.rng.randint(1, max(1, self.unhandled() // 2))

    def launch(self, program: str, kill: Kill | None = None) -> subprocess.Popen:
        # -v: `run --once` logs each move and mail as the daemon does, for the logs/ of a failed soak
        args = ["--config", str(self.referee.cfg), *(["-v", "run", "--once"] if program == "once" else ["serve"])]
        if kill and kill.point:
            argv = [sys.executable, str(HERE / "crashpoint.py"), kill.point, str(kill.n), "--", *args]
        else:
            argv = [sys.executable, "-m", "referee", *args]
        self.report.runs += 1
        name = f"{self.report.runs:03d}-{program}" + (f"-{kill.point}" if kill and kill.point else "")
        path = os.pathsep.join(filter(None, [str(CODE), os.environ.get("PYTHONPATH")]))
        env = {
            **os.environ,
            "PYTHONPATH": path,
            "PYTHONUNBUFFERED": "1",
            **(powercut.environment(self.power_cut, self.referee.db) if self.power_cut else {}),
        }
        with (
            open(self.home / "logs" / f"{name}.out", "wb") as out,
            open(self.home / "logs" / f"{name}.err", "wb") as err,
        ):
            self.running = subprocess.Popen(argv, cwd=self.home, stdout=out, stderr=err, env=env)
        self.running.name = name  # type: ignore[attr-defined]
        return self.running

    def finish(self, process: subprocess.Popen, kill: Kill | None, delivery: threading.Thread | None = None) -> bool:
        """Let the run end: by its random kill, at its crash point, by itself
        (`run --once`), or by SIGTERM once all mail is handled (`serve`).
        Whether a kill landed; a run that ended otherwise must have succeeded."""
        fired_before = self.fired_count()
        if kill and not kill.point:
            try:
                process.wait(kill.delay)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGKILL)
        elif process.args[-1] == "serve":
            wait_for(
                lambda: process.poll() is not None or self.idle(process, delivery),
                timeout=120,
                interval=0.05,
                message=f"{process.name} never finished its work",
            )
            process.terminate()  # a clean stop (a no-op if the crash point fired)
        status = process.wait(60)
        self.running = None
        err = (self.home / "logs" / f"{process.name}.err").read_text(errors="replace")
        if "Traceback" in err:
            self.report.violations.append(f"{process.name} logged a traceback: {err[-600:]}")
        landed = status == -signal.SIGKILL
        if landed and self.power_cut:
            self.report.cuts.update(powercut.cut(self.referee.db).values())
            self.report.cuts["cuts"] += 1
            self.reboot()
        if landed and kill and kill.point and self.fired_count() == fired_before:
            self.report.violations.append(f"{process.name} died of SIGKILL without reaching {kill.point}")
        if not landed and status not in (0, 5):  # (5: busy, another run held the lock: it did nothing)
            self.report.violations.append(f"{process.name} exited with status {status}: {err[-800:]}")
        return landed

    def idle(self, daemon: subprocess.Popen, delivery: threading.Thread | None) -> bool:
        """Whether a daemon has nothing left to do (and stops cleanly on
        SIGTERM: it has said so, once its handler was set)."""
        serving = "serving; stop with SIGTERM" in (self.home / "logs" / f"{daemon.name}.err").read_text()
        return serving and not (delivery and delivery.is_alive()) and self.quiet()

    def settle(self) -> None:
        """Clean `run --once` passes until the INBOX is empty and nothing is queued."""
        for _ in range(5):
            self.finish(self.launch("once"), None)
            if not self.work_left():
                return
        raise SoakError("five clean passes left mail in the INBOX or the outbox")

    def _stop_running(self) -> None:
        if self.running is not None and self.running.poll() is None:
            self.running.kill()
            self.running.wait()

    # -- mail and state ------------------------------------------------------------

    def deliver(self, mail: list[Bid], pace: float = 0.0) -> None:
        """Into the referee's INBOX over LMTP, as its mail server delivers;
        ``pace`` seconds between mails (a wave trickling in)."""
        dovecot = self.stack.dovecot
        seen = set()
        with smtplib.LMTP(dovecot.host, dovecot.lmtp_port, local_hostname=PLAYERS, timeout=30) as lmtp:
            for bid in mail:
                lmtp.sendmail(bid.sender, [bid.to], bid.raw)
                self.report.mails["delivered"] += 1
                if bid not in seen:
                    seen.add(bid)
                    self.players.sent.append(bid)
                time.sleep(pace)

    def inbox_count(self, mailbox: str = "INBOX") -> int:
        conn = self.stack.dovecot.imap(self.stack.referee)
        try:
            typ, data = conn.status(mailbox, "(MESSAGES)")
            return int(re.search(rb"MESSAGES (\d+)", data[0])[1]) if typ == "OK" else 0
        finally:
            conn.logout()

    def db(self) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{self.referee.db}?mode=ro", uri=True, timeout=30)

    def count(self, sql: str, args: list | None = None) -> int | None:
        """One count from games.db, read from outside; None when it cannot be
        read now.  Right after a power cut games.db and its -wal are their
        last flushed copies, which only the referee's next open recovers
        (a reader from outside gets "disk I/O error" meanwhile): the soak
        then goes on as if there were work left, and the referee's next run
        (and its checks) say whether games.db is whole."""
        try:
            with closing(self.db()) as db:
                return db.execute(sql, args or []).fetchone()[0]
        except sqlite3.OperationalError:
            return None

    def queued(self) -> int | None:
        return self.count("select count(*) from outbox where state = 'queued'")

    def open_rounds(self) -> int:
        """Games whose round of this wave is still open."""
        rounds = self.count("select count(*) from phases where number = ? and resolved_at is null", [self.round])
        return 1 if rounds is None else rounds

    def unhandled(self) -> int:
        """Mails delivered that the referee has not yet handled (or not committed)."""
        return len(self.players.sent) - (self.count("select count(*) from messages") or 0)

    def quiet(self) -> bool:
        return self.queued() == 0 and self.inbox_count() == 0

    def work_left(self) -> bool:
        return not self.quiet()

    def fired_count(self) -> int:
        path = self.home / FIRED
        return len(path.read_text().splitlines()) if path.exists() else 0

    # -- the checks ----------------------------------------------------------------

    def check(self) -> None:
        processed = self.stack.messages(self.stack.referee, "processed")
        place = {}
        for message in processed:  # in UID order: of two copies, the first is the one the referee read
            message_id = re.search(rb"^Message-ID: *(<[^>]*>)", message.raw, re.IGNORECASE | re.MULTILINE)[1]
            place.setdefault(message_id.decode(), (message.internaldate, message.uid))  # (MOVE keeps UID order)
        with closing(self.db()) as db:
            read = [row[0] for row in db.execute("select message_id from messages order by rowid")]  # as handled
            moves = expected_moves(self.players.sent, place, read)
            self.count_mail(moves)
            problems = [*self.players.problems, *self.check_mailbox(processed), *misread(place, read)]
            problems += self.check_moves(db, moves)
            problems += self.check_mail_out(db)
        problems += self.check_rounds(moves)
        self.report.violations += problems

    def count_mail(self, moves: dict[tuple[int, int], list[Bid]]) -> None:
        sent, mails = self.players.sent, self.report.mails
        mails.update(
            distinct=len(sent),
            late=sum(bid.late for bid in sent),
            duplicate=mails["delivered"] - len(sent),
            change=sum(not bid.late for bid in sent) - 3 * len(moves),
        )
        for key, counting in moves.items():
            as_sent = round_moves([bid for bid in sent if (bid.game, bid.round) == key])
            mails["reordered"] += counting != as_sent
            mails["recounted"] += last_cards(counting) != last_cards(as_sent)

    def check_moves(self, db: sqlite3.Connection, moves: dict[tuple[int, int], list[Bid]]) -> list[str]:
        """Every bid counted exactly once: each round's moves by mail, in the
        order they count, are the moves expected, none twice, none late."""
        want = {key: [(bid.seat, f"bid {bid.card}", bid.message_id) for bid in bids] for key, bids in moves.items()}
        got = defaultdict(list)
        rows = db.execute(
            "select game_id, phase, seat, move, message_key from moves where source = 'mail' "
            "order by game_id, phase, received_at, id"
        )
        for game, number, *move in rows:
            got[game, number].append(tuple(move))
        problems = []
        for game, number in sorted(set(want) | set(got)):
            made, bids = got[game, number], want.get((game, number), [])
            if made != bids:
                at = next(i for i, pair in enumerate(zip_longest(made, bids)) if pair[0] != pair[1])
                problems.append(
                    f"game {game} round {number}: {len(made)} moves by mail for {len(bids)} bids; "
                    f"move {at + 1} is {_at(made, at)}, bid {at + 1} was {_at(bids, at)}"
                )
        return problems

    def check_rounds(self, moves: dict[tuple[int, int], list[Bid]]) -> list[str]:
        """Every game finished, each round as the rules say (recomputed from
        the bids that count), each prompt showing the hand that was left,
        and its record verifies."""
        site = self.home / "site"
        result = self.referee.cli("render", "--dir", str(site), "--force")
        if result.status != 0:
            return [f"render failed: {result.err}"]
        problems = []
        for game in self.players.games:
            path = site / "games" / str(game) / "record.json"
            verdict = self.referee.cli("verify", str(path))
            if verdict.status != 0:
                problems.append(f"game {game}: referee verify says {verdict.out.strip()} {verdict.err.strip()}")
                continue
            cards, held = [], [list(CARDS)] * 3
            for number in range(1, ROUNDS):
                if self.players.hands.get((game, number)) != held:
                    problems.append(
                        f"game {game} round {number}: prompted {self.players.hands.get((game, number))}, held {held}"
                    )
                cards.append(last_cards(moves.get((game, number), [])))
                held = [[card for card in left if card != bid] for left, bid in zip(held, cards[-1], strict=True)]
            cards.append([left[0] if len(left) == 1 else "none" for left in held])  # round 13: the last card
            problems += self.check_record(game, json.loads(path.read_text()), cards)
        return problems

    def check_record(self, game: int, record: dict, cards: list[list[str]]) -> list[str]:
        """The record's rounds against the cards that count, round by round."""
        if record["game"]["state"] != "finished" or len(record["phases"]) != ROUNDS:
            return [f"game {game}: {record['game']['state']} after {len(record['phases'])} rounds"]
        problems, scores = [], [0, 0, 0]
        for phase, played in zip(record["phases"], cards, strict=True):
            number = phase["number"]
            source = "mail" if number < ROUNDS else "forced"
            made = [(move["move"], move["source"]) for move in sorted(phase["moves"], key=lambda m: m["seat"])]
            if made != [(f"bid {card}", source) for card in played]:
                problems.append(f"game {game} round {number}: the record's bids {made}, the players' {played}")
                continue
            bids = [CARDS.index(card) + 1 for card in played]
            leaders = [seat for seat in range(3) if bids[seat] == max(bids)]
            winner = leaders[0] if len(leaders) == 1 else None  # 4f: a tie discards the prize
            event = phase["events"][0]
            if winner is not None:
                scores[winner] += event["prize"]
            if (event["bids"], event["winner"], event["scores"]) != (bids, winner, scores):
                problems.append(
                    f"game {game} round {number}: resolved as {event}, not to bids {bids}, "
                    f"winner {winner}, scores {scores}"
                )
        leaders = [seat for seat in range(3) if scores[seat] == max(scores)]
        winner = record["players"][leaders[0]]["name"] if len(leaders) == 1 else None  # 4h
        if record["winner"] != winner:
            problems.append(f"game {game}: the record's winner {record['winner']}, by the scores {winner}")
        return problems

    def check_mailbox(self, processed: list) -> list[str]:
        """The INBOX empty, every delivery filed in processed and read, none in quarantine."""
        problems = []
        for mailbox in ("INBOX", "quarantine"):
            if left := self.stack.messages(self.stack.referee, mailbox):
                problems.append(f"{mailbox} holds {len(left)} messages")
        if len(processed) != self.report.mails["delivered"]:
            problems.append(f"processed holds {len(processed)} messages, not {self.report.mails['delivered']}")
        if unseen := [message.uid for message in processed if "\\Seen" not in message.flags]:
            problems.append(f"processed messages not marked \\Seen: UIDs {unseen[:10]}")
        return problems

    def check_mail_out(self, db: sqlite3.Connection) -> list[str]:
        """Every queued mail taken by the SMTP server, again only under the
        same Message-ID and as the same mail; each player's mail answered once."""
        queued = dict(db.execute("select message_id, state from outbox"))
        copies, answers = defaultdict(list), defaultdict(set)
        for mail in self.stack.sent:
            if mail.mail_from == self.stack.referee:
                message_id = str(mail.message["Message-ID"])
                copies[message_id].append((mail.raw, tuple(mail.rcpt_tos)))
                answers[str(mail.message["In-Reply-To"])].add(message_id)
        out = self.report.referee_mail
        out.update(
            queued=len(queued),
            taken=sum(map(len, copies.values())),
            copies=sum(len(same) - 1 for same in copies.values()),
        )
        problems = [f"{message_id} is {state} in the outbox" for message_id, state in queued.items() if state != "sent"]
        problems += [f"{message_id} never reached the SMTP server" for message_id in set(queued) - set(copies)]
        problems += [f"{message_id} reached the SMTP server, not queued" for message_id in set(copies) - set(queued)]
        problems += [
            f"{message_id} was sent as different mails" for message_id, same in copies.items() if len(set(same)) > 1
        ]
        problems += [
            f"{bid.message_id} answered {len(answers[bid.message_id])} times"
            for bid in self.players.sent
            if len(answers[bid.message_id]) != 1
        ]
        return problems


def _at(items: list, index: int):
    return items[index] if index < len(items) else "missing"
