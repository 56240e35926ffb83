"""How much mail a player gets over one whole game, at each notification
level (issue 33, item 4).

Whole games of each kind are played by mail through ``Engine.ingest`` with
a fake clock, by people (and, for some kinds, a bot): each person answers
the referee's last mail to them (its Reply-To, "Re:" its subject,
In-Reply-To its Message-ID) with a legal move, some time after the phase
opened; now and then a person changes their mind in a sealed round (a
second mail, a second receipt), answers late (after the reminder, when there
is one) or not at all (the deadline fills the move at random).  The referee
ticks as a daemon would: at every deadline and reminder time, and every hour
between.  Reminders are on (the config's default: a day before a deadline
that is at least two days off).

Each person sets their level as a player does: ``NOTIFY EVERY`` (or TURNS,
DIGEST) in a reply to their start mail.  Where the referee has no NOTIFY
command yet, the bench sets the seat's level in games.db instead
(``Store.set_notify``), and says so: a referee that does not read the level
then mails as at EVERY, whatever the level (the "before" figures).  A game's
seed and the players' choices depend only on ``--seeds``, so each level
plays the very same games.

It counts every mail in the outbox to each person over the game and prints,
for each kind and level, mails per player per game (the fewest and most over
the seeds and seats), mails per own move (a phase the seat had to move in,
whether it moved or the deadline did), and, at TURNS, the issue's bound for
each player (two mails per own move, one per round or auction, five more)
and how many players stayed within it; "explained", how many stayed
within it once the answers to the mails they sent beyond one a move (a
changed move, NOTIFY) and their reminders beyond three are counted too (a
player often late, or changing their mind, is sent more of their own
doing).  ``--detail`` breaks the mail down by
what it was (start, prompt, receipt, round, reminder, final, answer ...),
named by its template (a reply is a receipt when it answers a move, an
answer when it answers a command).  "list": what a club's list that follows
every game at the same level ([club] announce_to, announce_notify) gets
over the game.  Asserts nothing.

Run from the top of the checkout:
    python3 bench/mailcount.py [--seeds 3] [--kinds bid,bluff] [--levels every,turns] [--detail]
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS)]

from conftest import FakeClock, Seeds, make_mail  # noqa: E402 (the tests' clock, seed source and mail)

from referee import desk  # noqa: E402
from referee.config import Config  # noqa: E402
from referee.engine import Engine  # noqa: E402
from referee.mail.tokens import token_address  # noqa: E402
from referee.rules.rng import Rng  # noqa: E402
from referee.store import MOVE_CODES, Notify, OutboxRow, OutcomeCode, Store  # noqa: E402
from referee.tables import Table  # noqa: E402
from referee.timeutil import from_iso  # noqa: E402

KINDS = ("pure-skill", "bid", "priority", "ice", "bluff")
SEATS = {  # kind -> (people, bots): a usual table of each
    "pure-skill": (3, 0),
    "bid": (4, 0),
    "priority": (4, 0),
    "ice": (3, 1),
    "bluff": (3, 1),
}
LATE = 0.05  # the share of a person's moves never sent: the deadline fills them at random
SLOW = 0.10  # the share sent late in the phase (after its reminder, if it has one)
CHANGE = 0.10  # the share of moves in a sealed round followed by a second, changed one
DRAWN = 0.5  # the share of moves a person makes as the rules would for one who timed out (else any legal move)
TICK = timedelta(hours=1)  # the referee ticks at least this often, as a daemon (or cron) would
MOST_STEPS = 100_000  # a bound on one game's ticks and mails, so a game that never ends fails instead of hanging
ORDER = ["start", "answer", "prompt", "receipt", "reminder", "round", "final"]  # how --detail lists mail
ROUND = re.compile(r"^(Round|Auction) (\d+)")  # what a phase's label says of its round or auction


def notify_command() -> bool:
    """Whether the referee reads a NOTIFY line as a command yet."""
    return any("notify" in entry.words for entry in desk.COMMANDS.entries)


@dataclass
class Seat:
    """What one person got over one game."""

    address: str
    seat: int
    mails: int = 0  # every mail the outbox holds for them
    by_kind: Counter[str] = field(default_factory=Counter)  # the same, by what it was
    own_moves: int = 0  # phases the seat had to move in
    sent: int = 0  # mails they sent: moves, changed moves and the NOTIFY line

    def bound(self, rounds: int) -> int:
        """The issue's bound at TURNS: two mails per own move (its prompt
        and its receipt), one per round or auction, and five (start,
        final, reminders)."""
        return 2 * self.own_moves + rounds + 5

    def explained(self, rounds: int) -> int:
        """The bound, plus the answer to each mail the player sent beyond one
        a move (a changed move, the NOTIFY line) and each reminder beyond
        three (for a player often late): what was over the bound, if only
        that, came of their own doing."""
        extra = max(0, self.sent - self.own_moves) + max(0, self.by_kind["reminder"] - 3)
        return self.bound(rounds) + extra


@dataclass
class Played:
    """One whole game, as its people saw it."""

    kind: str
    level: Notify
    seed: int
    table: str  # people+bots: "3+1"
    set_by: str  # how the level was set: "NOTIFY mail" or "store"
    rounds: int = 0  # rounds or auctions (distinct "Round N" / "Auction N" of its phases)
    seats: list[Seat] = field(default_factory=list)
    outbox: Counter[str] = field(default_factory=Counter)  # recipient -> mails in the outbox
    seconds: float = 0.0
    list_mails: int = 0  # what the club's list got, at the same level ([club] announce_notify)


LIST = "club@lists.example.org"  # a club's list that follows every game ([club] announce_to)


class Game:
    """One game of ``kind`` played by mail from start to end."""

    def __init__(self, kind: str, seed: int, level: Notify, people: int, bots: int, use_mail: bool | None = None):
        self.kind, self.level = kind, level
        name = f"mailcount {kind} {seed} {people}+{bots}"
        self.seed = hashlib.sha256(name.encode()).digest()
        self.chooser = random.Random(name)  # the people's choices: the same at every level
        self.clock = FakeClock()
        config = Config(
            address="referee@example.org",
            database=Path(":memory:"),
            outage_gap=None,
            announce_to=(LIST,),
            announce_notify=level,
        )
        self.engine = Engine(Store(":memory:"), config, self.clock, Seeds(self.seed))
        self.people = [f"player{n}@example.org" for n in range(people)]
        self.use_mail = notify_command() if use_mail is None else use_mail
        self.played = Played(kind, level, seed, f"{people}+{bots}", "NOTIFY mail" if self.use_mail else "store")
        self.kinds: dict[str, list[str]] = {address: [] for address in self.people}  # what each mail was, in order
        self.replying = "answer"  # what a reply of the referee's is while the mail being handled is ours
        queue = self.engine.post._queue

        def noted(game_id: int | None, to: str, template: str, *args: Any, **kwargs: Any) -> None:
            queue(game_id, to, template, *args, **kwargs)
            word = template.rpartition("/")[2]
            self.kinds.setdefault(to, []).append(self.replying if word == "reply" else word)

        # Every mail is queued by Post._queue, which alone knows its template: --detail's source.
        self.engine.post._queue = noted  # type: ignore[method-assign]
        self.last: dict[str, OutboxRow] = {}  # each person's last mail from the referee
        self.seen = 0
        self.ticked = self.clock()
        self.steps = 0
        self.game = self.engine.new_game(kind, self.people, bots=bots)

    # -- the referee's side ---------------------------------------------------------

    @property
    def table(self) -> Table:
        return self.engine.table(self.game)

    def read_mail(self) -> None:
        """Note each person's newest mail from the referee (the one they answer)."""
        for row in self.engine.store.outbox(None, after=self.seen):
            self.last[row["recipients"][0]] = row
            self.seen = row["id"]

    def step(self) -> None:
        self.steps += 1
        if self.steps > MOST_STEPS:
            raise RuntimeError(f"{self.kind}: no end after {MOST_STEPS} steps")

    def wait_until(self, moment: datetime) -> None:
        """Let time pass to ``moment``, the referee ticking at each deadline
        and reminder time and at least every TICK."""
        while True:
            self.step()
            soonest = min([*self.engine.next_due(self.game), self.ticked + TICK])
            if soonest > moment:
                break
            self.clock.now = max(self.clock.now, soonest)
            self.engine.tick()
            self.ticked = self.clock.now
        self.clock.now = max(self.clock.now, moment)
        self.read_mail()

    # -- the people's side ----------------------------------------------------------

    def send(self, address: str, text: str, what: str) -> str:
        """``address`` answers the referee's last mail to them with ``text``;
        the referee's reply is a ``what`` (receipt, answer)."""
        self.step()
        last = self.last[address]
        seat = self.table.seat_of(address)
        assert seat is not None
        thread = {"In-Reply-To": last["message_id"], "References": last["message_id"]}
        raw = make_mail(
            address,
            text,
            to=token_address(self.engine.config.address, self.table.seats[seat]["token"]),
            subject=f"Re: {last['subject']}",
            received=self.clock(),
            headers=thread,
        )
        self.replying = what
        try:
            outcome = self.engine.ingest(raw)
        finally:
            self.replying = "answer"
        self.read_mail()
        next(s for s in self.played.seats if s.address == address).sent += 1
        return outcome.code

    def set_levels(self) -> None:
        """Each person sets their level in a reply to their start mail (a
        few minutes after it), or, without a NOTIFY command, in games.db."""
        self.read_mail()
        table = self.table
        self.played.seats = [Seat(row["address"], row["seat"]) for row in table.seats if table.human(row["seat"])]
        for address in self.people:
            if self.use_mail:
                self.wait_until(self.clock() + timedelta(minutes=self.chooser.randint(1, 30)))
                code = self.send(address, f"NOTIFY {self.level.name}", "answer")
                if code != OutcomeCode.DONE:
                    raise RuntimeError(f"NOTIFY {self.level.name} from {address}: {code}")
            else:
                seat = self.table.seat_of(address)
                assert seat is not None
                with self.engine.store.transaction():
                    self.engine.store.set_notify(self.game, seat, self.level)

    def move_text(self, table: Table, seat: int, number: int, other_than: str | None = None) -> str:
        """A legal move for ``seat``: half the time what the rules would play
        for a player who timed out, else any legal move (not ``other_than``)."""
        rules, state = table.rules, table.state
        legal = [rules.move_text(m) for m in rules.legal_moves(state, seat)]
        if other_than is not None:
            legal = [text for text in legal if text != other_than] or legal
            return self.chooser.choice(legal)
        if self.chooser.random() < DRAWN:
            drawn = rules.random_move(state, seat, Rng(self.seed, f"mailcount phase {number} seat {seat}"))
            return rules.move_text(drawn)
        return self.chooser.choice(legal)

    def plan(self, table: Table, phase: dict[str, Any]) -> list[tuple[datetime, int, str, str]]:
        """When each person owing ``phase`` a move mails it, and what:
        (when, seat, move, "move" or "change"); none for a person who leaves
        it to the deadline."""
        opened, deadline = from_iso(phase["opened_at"]), from_iso(phase["deadline"])
        length = deadline - opened
        plan = []
        for seat in table.waiting_for(phase):
            if not table.human(seat):
                continue  # a bot's move is the referee's
            luck = self.chooser.random()
            if luck < LATE:
                continue
            share = self.chooser.uniform(0.7, 0.95) if luck < LATE + SLOW else self.chooser.uniform(0.01, 0.5)
            when = max(self.clock(), opened + length * share)
            text = self.move_text(table, seat, phase["number"])
            plan.append((when, seat, text, "move"))
            if phase["sealed"] and self.chooser.random() < CHANGE:
                changed = self.move_text(table, seat, phase["number"], other_than=text)
                plan.append((when + (deadline - when) * self.chooser.uniform(0.05, 0.3), seat, changed, "change"))
        return sorted(plan, key=lambda item: item[0])

    def play_phase(self) -> None:
        """The open phase, from its prompts to its resolution."""
        table = self.table
        phase = table.open_phase
        assert phase is not None
        number = phase["number"]
        for when, seat, text, what in self.plan(table, dict(phase)):
            self.wait_until(when)
            now = self.table
            if now.open_phase is None or now.open_phase["number"] != number:
                return  # resolved: by the deadline, or by every move in (a change that came too late is not sent)
            if what == "move" and seat not in now.waiting_for(now.open_phase):
                continue
            code = self.send(self.people[seat], text, "receipt")
            if code not in MOVE_CODES:  # a bench of refusals would count other mail
                raise RuntimeError(f"{self.kind}: {text!r} from seat {seat} in {phase['label']}: {code}")
        while (now := self.table).open_phase is not None and now.open_phase["number"] == number:
            self.wait_until(min(self.engine.next_due(self.game)))

    def play(self) -> Played:
        start = time.perf_counter()
        self.set_levels()
        while self.table.row["state"] == "running":
            self.play_phase()
        self.read_mail()
        self.count()
        self.played.seconds = time.perf_counter() - start
        return self.played

    def count(self) -> None:
        table, played = self.table, self.played
        played.rounds = len(rounds(row["label"] for row in table.phases))
        played.outbox = Counter(row["recipients"][0] for row in self.engine.store.outbox(None))
        played.list_mails = played.outbox[LIST]
        for seat in played.seats:
            seat.mails = played.outbox[seat.address]
            seat.by_kind = Counter(self.kinds[seat.address])
            seat.own_moves = sum(seat.seat in row["movers"] for row in table.phases)


def rounds(labels: Iterable[str]) -> set[str]:
    """The rounds or auctions among phases' labels: "Auction 3, turn 5" and
    "Auction 3 scoring, offer 1" are one (Auction 3)."""
    return {f"{m[1]} {m[2]}" for label in labels if (m := ROUND.match(label))}


def play(kind: str, seed: int, level: Notify, people: int, bots: int, use_mail: bool | None = None) -> Played:
    """One whole game of ``kind`` at ``level``, played by mail."""
    return Game(kind, seed, level, people, bots, use_mail).play()


# -- the table ----------------------------------------------------------------------


def spread(values: Iterable[float], digits: int = 0) -> str:
    values = sorted(values)
    low, high = f"{values[0]:.{digits}f}", f"{values[-1]:.{digits}f}"
    return low if low == high else f"{low}-{high}"


def report(games: list[Played], detail: bool) -> None:
    by: dict[tuple[str, Notify], list[Played]] = {}
    for game in games:
        by.setdefault((game.kind, game.level), []).append(game)
    print(
        f"{'kind':<10} {'seats':<5} {'level':<6} {'mails/player':>12} {'per own move':>12} {'own moves':>9} "
        f"{'rounds':>6} {'TURNS bound':>11} {'within':>10} {'explained':>9} {'list':>7} {'s/game':>6}"
    )
    for (kind, level), played in by.items():
        seats = [(game, seat) for game in played for seat in game.seats]
        mails = [seat.mails for _, seat in seats]
        turns = level is Notify.TURNS
        bounds = spread(seat.bound(game.rounds) for game, seat in seats) if turns else ""
        over = max(s.mails - s.bound(g.rounds) for g, s in seats)
        within = f"{sum(s.mails <= s.bound(g.rounds) for g, s in seats)}/{len(seats)}" + (
            f" {over:+d}" if over > 0 else ""
        )
        within = within if turns else ""
        explained = f"{sum(s.mails <= s.explained(g.rounds) for g, s in seats)}/{len(seats)}" if turns else ""
        print(
            f"{kind:<10} {played[0].table:<5} {level.value:<6} {spread(mails):>12} "
            f"{spread((s.mails / max(s.own_moves, 1) for _, s in seats), 2):>12} "
            f"{spread(s.own_moves for _, s in seats):>9} {spread(g.rounds for g in played):>6} "
            f"{bounds:>11} {within:>10} {explained:>9} {spread(g.list_mails for g in played):>7} "
            f"{sum(g.seconds for g in played) / len(played):6.1f}"
        )
        if detail:
            kinds = sorted(
                {k for _, s in seats for k in s.by_kind},
                key=lambda k: (k not in ORDER, ORDER.index(k) if k in ORDER else 0, k),
            )
            print("    " + ", ".join(f"{k} {spread(s.by_kind[k] for _, s in seats)}" for k in kinds))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="games of each kind at each level")
    parser.add_argument("--kinds", default=",".join(KINDS), help="which kinds, comma separated")
    parser.add_argument("--levels", default=",".join(level.value for level in Notify), help="which levels")
    parser.add_argument("--people", type=int, help="people at each table (else each kind's usual)")
    parser.add_argument("--bots", type=int, help="bots at each table (else each kind's usual)")
    parser.add_argument("--store", action="store_true", help="set the levels in games.db, even with NOTIFY")
    parser.add_argument("--detail", action="store_true", help="each kind of mail, per player per game")
    args = parser.parse_args()
    kinds = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    levels = [Notify(level.strip().lower()) for level in args.levels.split(",") if level.strip()]
    use_mail = not args.store and notify_command()
    how = "a NOTIFY mail from each player" if use_mail else "Store.set_notify (the referee has no NOTIFY command)"
    print(f"levels set by {how}; {args.seeds} game(s) of each kind at each level; min-max over games and people")
    games = []
    for kind in kinds:
        people, bots = SEATS[kind]
        people, bots = args.people or people, bots if args.bots is None else args.bots
        for level in levels:
            games += [play(kind, seed, level, people, bots, use_mail) for seed in range(args.seeds)]
    report(games, args.detail)
    return 0


if __name__ == "__main__":
    logging.disable(logging.WARNING)  # the referee's log of each game; the figures are the point
    sys.exit(main())
