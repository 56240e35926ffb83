"""A game as its record says it is: its rows in games.db and its state by
replay.  The engine, the desk and the public site all read games through
``Tables``; nothing here changes a game, sends mail or reads the clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, TypeVar, cast

from referee.errors import EngineError
from referee.mail.commands import tag
from referee.mail.tokens import calendar_token, tagged
from referee.record import (
    RECORD_FORMAT,
    Absence,
    PhaseRecord,
    Replay,
    Stint,
    absences,
    chain_digest,
    end_digest,
    made_by,
    replay,
    stints,
)
from referee.rules import Game, get_game
from referee.store import (
    Act,
    CountedMove,
    GameRow,
    GameState,
    InterventionRow,
    PhaseRow,
    RecordStamp,
    SeatRow,
    Store,
)
from referee.timeutil import from_iso

# The reading cache of Tables keeps a game's last read and its replay for
# at most _REPLAYS_KEPT games and _PHASES_KEPT phases in all, forgetting the
# least recently read first (the game read last is kept whatever its length).
# The phases are the bound that matters: a game kept holds its rows and the
# state before each of its phases, 3 to 8 kB a phase, so a bound on games
# alone let the cache grow as its games grew longer (bench/daemon.py: 0.2 MB
# a minute, 20 minutes in).  500 phases are 2 to 4 MB; a game forgotten is replayed from
# its seed at its next read, 0.5 to 28 ms for a whole game.  The games are
# bounded too, but loosely (a kept game's rows beside its phases: about 10 kB
# of a short game): a referee with more running games than it kept re-read
# each game whole at its first mail of a round (bench/pipeline.py's 100 games,
# 64 kept: a full read and a replay from the seed at every third move).
_REPLAYS_KEPT = 256
_PHASES_KEPT = 500
_Value = TypeVar("_Value", bound=tuple[Any, ...])  # a value kept: a tuple, with its phases' records at ``records_at``


def deadlines(game: GameRow) -> dict[str, timedelta]:
    """How long each kind of phase of a game lasts (see Phase.timer); a
    games.db from before turn deadlines has only the one."""
    round_ = game["deadline_seconds"]
    turn = game.get("turn_seconds") or round_
    decision = game.get("decision_seconds") or turn
    return {
        "round": timedelta(seconds=round_),
        "turn": timedelta(seconds=turn),
        "decision": timedelta(seconds=decision),
    }


PRIVATE = "private"  # the site's folder of seats' own calendars: never linked, never listed


def own_calendar(key: bytes, seat: SeatRow) -> str | None:
    """Where the site publishes a seat's own calendar (its deadlines and
    reminders), from the site's root: ``private/TOKEN.ics``, a name only
    the seat's player is told (tokens.calendar_token, of the seat's address:
    a newcomer, or a new address, gets a new one).  None while no person
    plays the seat.  The engine tells it in the start mail; the site writes it."""
    if seat["address"] is None or seat["bot_since_phase"] is not None:
        return None
    return f"{PRIVATE}/{calendar_token(key, seat['game_id'], seat['seat'], seat['address'])}.ics"


def reminder_time(phase: PhaseRow, lead: timedelta | None) -> datetime | None:
    """When the players who still owe ``phase`` a move are reminded: ``lead``
    (the config's ``reminder``) before its deadline, unless that falls in the
    phase's first half (the prompt is still fresh); None: no reminder."""
    if lead is None:
        return None
    opened, deadline = from_iso(phase["opened_at"]), from_iso(phase["deadline"])
    remind = deadline - lead
    return remind if remind >= opened + (deadline - opened) / 2 else None


@dataclass
class Table:
    """One game, read at one moment: its record, and its state by replay."""

    row: GameRow
    rules: Game
    seats: list[SeatRow]
    phases: list[PhaseRow]
    replay: Replay
    counted: dict[int, dict[int, CountedMove]]  # phase -> seat -> the move that counts (Store.counted_moves)
    interventions: list[InterventionRow]  # what keepers (and the referee, for outages) did to it, in order
    # The record's running digest: the start's, then each resolved phase's
    # (record.chain_digest), as far as it was asked for; a later read of the
    # same record goes on from it (a resolved phase never changes).
    chain: list[bytes] = field(default_factory=list)

    @property
    def id(self) -> int:
        return self.row["id"]

    @property
    def seed(self) -> bytes:
        return bytes.fromhex(self.row["seed"])

    @property
    def state(self) -> Any:
        return self.replay.state

    @property
    def open_phase(self) -> PhaseRow | None:
        last = self.phases[-1] if self.phases else None
        return last if last and last["resolved_at"] is None else None

    def phase_to_move(self) -> PhaseRow:
        """The open phase of a running game: it always has one (a game starts
        by opening its first, and the resolution of each opens the next or
        finishes the game).  EngineError when there is none."""
        phase = self.open_phase
        if phase is None:
            raise EngineError(f"game {self.id} has no open phase")
        return phase

    def waiting_for(self, phase: PhaseRow) -> list[int]:
        """The seats that owe ``phase`` a move."""
        moved = self.counted.get(phase["number"], {})
        return [seat for seat in phase["movers"] if seat not in moved]

    def human(self, seat: int, phase: int | None = None) -> bool:
        """Whether a person plays ``seat`` (during ``phase``, or now)."""
        if phase is None:
            return self.seats[seat]["bot_since_phase"] is None
        return not any(stint.seat == seat and stint.covers(phase) for stint in self.stints)

    @cached_property
    def stints(self) -> list[Stint]:
        """Every bot's stint in a seat (record.stints)."""
        return _stints(self.seats, self.interventions)

    @cached_property
    def absences(self) -> list[Absence]:
        """Every seat's time away, as the record grants it (record.absences)."""
        return absences(public_intervention(i) for i in self.interventions)

    @property
    def paused(self) -> InterventionRow | None:
        """The pause in force, if the game is paused."""
        last = next((i for i in reversed(self.interventions) if i["act"] in (Act.PAUSE, Act.RESUME)), None)
        return last if last is not None and last["act"] == Act.PAUSE else None

    @property
    def cancelled(self) -> InterventionRow | None:
        return next((i for i in self.interventions if i["act"] == Act.CANCEL), None)

    def label(self, seat: int) -> str:
        return self.seats[seat]["address"] or f"bot {seat + 1}"

    def tag(self, seat: int | None = None) -> str:
        """The subject tag, ``[pure-skill-7]``; a seat's own mail adds its reply token."""
        plain = tag(self.row["kind"], self.id)
        token = self.seats[seat]["token"] if seat is not None else None
        return tagged(plain, token) if token else plain

    @cached_property
    def names(self) -> list[str]:
        """A public name per seat: the address's local part (with its domain
        when two players share a local part), or "bot N".  The site and the
        record name players so, never by their address.  A name never
        changes: the seats' first players are named among themselves, as the
        start mail named them, and a newcomer by the name their takeover
        gave them (Keeping.replace); a seat's move to another address
        (Addresses) changes no name."""
        first = {
            act["detail"]["seat"]: act["detail"]["was_address"]
            for act in reversed(self.interventions)
            if act["act"] in (Act.REPLACE, Act.ADDRESS)
        }
        names = name_seats([first.get(s["seat"], s["address"]) for s in self.seats])
        for act in self._takeovers:
            names[act["detail"]["seat"]] = act["detail"]["name"]
        return names

    @property
    def _takeovers(self) -> list[InterventionRow]:
        return [act for act in self.interventions if act["act"] == Act.REPLACE]

    # -- the record, whole: what `referee verify` checks and the digests cover --

    def record_head(self) -> dict[str, Any]:
        """The record's game, players and commitment, with the seed: SECRET
        while the game runs (site.public.game_record publishes it, without the
        seed until the end)."""
        row = self.row
        times = deadlines(row)
        return {
            "format": RECORD_FORMAT,
            "game": {
                "id": self.id,
                "kind": row["kind"],
                "title": self.rules.title,
                "name": row["name"],
                "options": row["options"],
                "state": row["state"],
                "created_at": row["created_at"],
                "finished_at": row["finished_at"],
                "deadlines": {
                    **{kind: int(length.total_seconds()) for kind, length in times.items()},
                    "settle": row["settle_seconds"],
                },
            },
            "players": [
                {
                    "seat": s["seat"],
                    "name": self.names[s["seat"]],
                    "bot": s["bot_since_phase"] is not None,
                    "bot_from_phase": s["bot_since_phase"],
                    "left_at": _left_at(s),
                }
                for s in self.seats
            ],
            "seed_commitment": row["seed_commitment"],
            "seed": row["seed"],
            "interventions": [public_intervention(i) for i in self.interventions],
        }

    def record_phase(self, number: int) -> dict[str, Any]:
        """A resolved phase as the record has it, every move shown: SECRET
        while the game runs (the site shows only the moves the rules revealed)."""
        return self.record_phases(number, number)[0]

    def record_phases(self, first: int, last: int | None = None) -> list[dict[str, Any]]:
        """The resolved phases from number ``first`` (to ``last``, by default
        the last resolved) as the record has them (Table.record_phase).  (In
        one pass: the site makes a game's every phase at once, thousands of
        phases in a full render.)"""
        counted, entries = self.counted, []
        for phase, step in zip(self.phases[first - 1 : last], self.replay.steps[first - 1 : last]):
            moves = counted[step.number]
            entries.append(
                {
                    "number": step.number,
                    "label": phase["label"],
                    "opened_at": phase["opened_at"],
                    "deadline": phase["deadline"],
                    "resolved_at": phase["resolved_at"],
                    "moves": [
                        {
                            "seat": seat,
                            "move": (move := moves[seat])["move"],
                            "source": move["source"],
                            "received_at": move["received_at"],
                        }
                        for seat in sorted(step.moves)
                    ],
                    "events": step.events,
                }
            )
        return entries

    def digest(self, number: int | None = None) -> bytes:
        """The record's running digest after resolved phase ``number`` (by
        default the last; 0: at the start): what the mail announcing it carries."""
        head = None
        number = len(self.replay.steps) if number is None else number
        if not self.chain:
            head = self.record_head()
            self.chain.append(chain_digest(self.seed, head, None, None))
        while len(self.chain) <= number:
            head = head or self.record_head()
            entry = self.record_phase(len(self.chain))
            self.chain.append(chain_digest(self.seed, head, entry, self.chain[-1]))
        return self.chain[number]

    def end_digest(self) -> bytes:
        """The digest at the end (a finished game): when it finished and who
        won, chained on the last phase's; what the final mail carries."""
        result = self.rules.result(self.state)
        winner = self.names[result.winner] if result and result.winner is not None else None
        last = len(self.replay.steps) + 1
        after = [public_intervention(i) for i in self.interventions if i["phase"] == last]
        left = [[stint.seat, stint.left_at] for stint in self.stints if stint.start == last]
        finished = cast(str, self.row["finished_at"])  # (set: the game is finished)
        return end_digest(self.seed, finished, winner, self.digest(), after, left)

    def seat_of(self, address: str) -> int | None:
        for row in self.seats:
            if (row["address"] or "").lower() == address.lower():
                return row["seat"]
        return None


class Tables:
    """Reads games from the store, each as a fresh Table.

    A game's state is never kept anywhere but in its record: each read
    replays it, going on from the last replay of its resolved phases when the
    record still begins with them (a cache: one message reads its game many
    times, and a turn-based game has hundreds of phases)."""

    def __init__(self, store: Store):
        self.store = store
        self._replays = _Kept[tuple[Any, list[PhaseRecord], Replay]](records_at=1)  # game id -> cache, oldest first
        # game id -> the last read, with its stamp (Store.record_stamp)
        self._tables = _Kept[tuple[RecordStamp, Table, list[PhaseRecord]]](records_at=2)

    def table(self, game_id: int) -> Table:
        """The game as its record says now.  One message reads its game
        several times; while the record is unchanged since the last read
        (Store.record_stamp), that Table is the answer, and nobody changes a
        Table they were given.  When only this connection wrote to it since,
        the phases that were resolved then are as they were (a resolved phase
        never changes), so only the rest is read, and of the record's tables
        only those it wrote to (a move's row alone, say: Store.record_stamp
        counts its writes table by table): the cost of a read does not grow
        with the length of the game."""
        stamp = self.store.record_stamp(game_id)
        cached = self._tables.take(game_id)
        if cached and cached[0] == stamp:
            table, records = cached[1], cached[2]
        else:
            # Only what ours changed since (no rollback, no other process): read the rest.
            since = cached if cached is not None and stamp.only_ours_since(cached[0]) else None
            table, records = self._read(game_id, stamp, since)
        self._tables.keep(game_id, (stamp, table, records))
        return table

    def _read(
        self, game_id: int, stamp: RecordStamp, since: tuple[RecordStamp, Table, list[PhaseRecord]] | None
    ) -> tuple[Table, list[PhaseRecord]]:
        """Read a game as of ``stamp``; with ``since`` (an earlier read, and
        its stamp: only this connection wrote to the record since), only the
        tables written to since, and of its phases and moves only those from
        the first phase that was still open then."""
        earlier = since[1] if since else None

        def kept_from_earlier(table: str) -> bool:  # its rows are as ``earlier`` read them
            return since is not None and stamp.unchanged(since[0], table)

        row = earlier.row if earlier and kept_from_earlier("games") else self.row(game_id)
        rules = get_game(row["kind"])
        seats = earlier.seats if earlier and kept_from_earlier("seats") else self.store.seats(game_id)
        interventions = (
            earlier.interventions
            if earlier and kept_from_earlier("interventions")
            else self.store.interventions(game_id)
        )
        kept = 0
        phases, counted, records, chain = [], {}, [], []
        if since and earlier:
            kept = len(earlier.phases) - (earlier.open_phase is not None)
            phases, records = earlier.phases[:kept], since[2][:kept]
            counted = {number: earlier.counted[number] for number in range(1, kept + 1) if number in earlier.counted}
            chain = earlier.chain[: kept + 1]
        if earlier and kept_from_earlier("phases"):
            phases = earlier.phases
        else:
            phases = phases + self.store.phases(game_id, since=kept + 1)
        # of each phase read here, the moves that count: their rows, and their texts (what a replay reads)
        said: dict[int, dict[int, str]] = {}
        if earlier and kept_from_earlier("moves"):  # (a phase added or closed: its moves are those read)
            fresh = {number: moves for number, moves in earlier.counted.items() if number > kept}
            counted |= fresh
            said = {number: {seat: move["move"] for seat, move in moves.items()} for number, moves in fresh.items()}
        else:
            for move in self.store.counted_moves(game_id, since=kept + 1):
                number, seat = move["phase"], move["seat"]
                counted.setdefault(number, {})[seat] = move
                said.setdefault(number, {})[seat] = move["move"]
        bots = _stints(seats, interventions)
        # the seats a bot takes over at each phase, and those a person takes back (by phase: a game has hundreds)
        new_bots: dict[int | None, tuple[int, ...]] = {}
        new_people: dict[int | None, tuple[int, ...]] = {}
        for stint in bots:
            new_bots[stint.start] = (*new_bots.get(stint.start, ()), stint.seat)
            new_people[stint.end] = (*new_people.get(stint.end, ()), stint.seat)
        records = (
            records
            + [
                PhaseRecord(  # (by position: keywords cost a fifth more, hundreds of phases a game)
                    phase["number"],
                    None if phase["resolved_at"] is None else said[phase["number"]],
                    new_bots.get(phase["number"], ()),
                    new_people.get(phase["number"], ()),
                )
                for phase in phases[kept:]
            ]
        )
        initial_bots = new_bots.get(0, ())
        replayed = self._replay(row, rules, len(seats), initial_bots, records)
        table = Table(row, rules, seats, phases, replayed, counted, interventions, chain)
        return table, records

    def row(self, game_id: int) -> GameRow:
        """The game's row, for a game sure to exist (a seat's, a table's):
        EngineError if there is no such game."""
        row = self.store.game(game_id)
        if row is None:
            raise EngineError(f"there is no game {game_id}")
        return row

    def running(self, game_id: int) -> Table:
        """A game the keeper may still act on."""
        table = self.table(game_id)
        if table.row["state"] != GameState.RUNNING:
            raise EngineError(f"game {game_id} has ended")
        return table

    def _replay(
        self, row: GameRow, rules: Game, seats: int, initial_bots: tuple[int, ...], records: list[PhaseRecord]
    ) -> Replay:
        """The game's state by replay, from the cache where it still matches
        the record; a record that does not match is replayed from the seed."""
        seed = bytes.fromhex(row["seed"])
        resolved = [r for r in records if r.moves is not None]
        key = (seed, seats, initial_bots)
        cached = self._replays.take(row["id"])
        start = None
        if cached and cached[0] == key and resolved[: len(cached[1])] == cached[1]:
            start = cached[2]
        done = replay(rules, seed, seats, rules.stored_options(row["options"]), initial_bots, resolved, start)
        self._replays.keep(row["id"], (key, resolved, done))
        if len(resolved) == len(records):
            return done
        return replay(rules, seed, seats, rules.stored_options(row["options"]), initial_bots, records, done)


def name_seats(addresses: list[str | None]) -> list[str]:
    """Each seat's name by its address: the local part, with the domain when
    two share a local part; "bot N" for a seat without one."""
    locals_ = [(address or "").partition("@")[0] for address in addresses]
    names = []
    for seat, address in enumerate(addresses):
        if address is None:
            names.append(f"bot {seat + 1}")
        else:
            local, _, domain = address.partition("@")
            names.append(local if locals_.count(local) == 1 else f"{local} ({domain})")
    return names


def _stints(seats: list[SeatRow], interventions: list[InterventionRow]) -> list[Stint]:
    """The bots' stints of a game's seats, from its rows (record.stints)."""
    return stints(
        {
            "players": [
                {"seat": s["seat"], "bot_from_phase": s["bot_since_phase"], "left_at": _left_at(s)} for s in seats
            ],
            "interventions": [public_intervention(i) for i in interventions if i["act"] == Act.REPLACE],
        }
    )


def public_intervention(row: InterventionRow) -> dict[str, Any]:
    """An intervention as the game's record has it: what was done, when, by
    a keeper, the referee or a seat's player, and why, with what a replay
    needs (deadlines moved, seats taken over, by name; when a seat is away;
    a stand-in's seat and time); never an address, nor the words the keeper
    wrote to one seat alone, nor a player's reason for being away."""
    detail = row["detail"]
    act = Act(row["act"])
    public: dict[str, Any] = {
        "phase": row["phase"],
        "at": row["at"],
        "act": act.value,
        "by": made_by(act, row["by"]),
        "why": "" if act in (Act.AWAY, Act.BACK) else row["why"],  # (a reason for being away is the keeper's)
    }
    if act in (Act.EXTEND, Act.OUTAGE, Act.RESUME):
        public.update(old=detail["old"], new=detail["new"])
    elif act == Act.ABSENT:
        public.update(seat=detail["seat"], old=detail["old"], new=detail["new"])
    elif act == Act.AWAY:
        public.update({key: detail[key] for key in ("seat", "from", "until", "most_away")})
    elif act == Act.BACK:
        public.update(seat=detail["seat"])
    elif act == Act.PAUSE:
        public.update(until=detail.get("until"))
    elif act == Act.REPLACE:
        public.update(
            {key: detail.get(key) for key in ("seat", "name", "was", "old", "new", "bot_from_phase", "left_at")},
            bot_waited=bool(detail.get("bot_waited")),  # (a takeover made before bots waited: its bot had moved)
        )
    elif act == Act.SAY:
        seat = detail.get("seat")
        public.update(seat=seat, text=detail["text"] if seat is None else None)
    elif act == Act.DELEGATE:
        public.update(seat=detail["seat"], until=detail["until"])  # (never the stand-in's address)
    elif act in (Act.ADDRESS, Act.DELEGATE_END):
        public.update(seat=detail["seat"])
    return public


def _left_at(seat: SeatRow) -> str | None:
    """When a player left the game (a bot took the seat): None for a bot
    from the start, or a player still playing."""
    return seat["resigned_at"] if seat["bot_since_phase"] else None


class _Kept(dict[int, _Value]):
    """A reading cache of Tables: game id -> what is kept of it, least
    recently used first, forgetting the oldest beyond _REPLAYS_KEPT games or
    _PHASES_KEPT phases (a value's phases: the records at ``records_at``),
    but never the newest.  The phases held are counted as values come and
    go: summed over the cache at every read of a game, they cost a million
    additions in a pass of 1,500 moves (a third of a millisecond a move)."""

    def __init__(self, records_at: int):
        super().__init__()
        self.records_at = records_at
        self.phases = 0

    def take(self, game_id: int) -> _Value | None:
        """The value kept for the game, taken out (``keep`` puts it back as the newest)."""
        value = self.pop(game_id, None)
        if value is not None:
            self.phases -= len(value[self.records_at])
        return value

    def keep(self, game_id: int, value: _Value) -> None:
        """Keep ``value`` as the newest (the caller took any older one)."""
        self[game_id] = value
        self.phases += len(value[self.records_at])
        while len(self) > 1 and (len(self) > _REPLAYS_KEPT or self.phases > _PHASES_KEPT):
            self.take(next(iter(self)))
