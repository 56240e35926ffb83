"""Phases, deadlines and resolution: the only module that joins rules, store and mail.

A phase's life: it opens (each human mover gets a private prompt, each bot
moves at once) -> moves are taken until all are in, or the deadline passes
-> missing moves are filled at random -> it resolves -> the public
announcement goes out -> the next phase opens, or the game ends.

Every entry point (a new game, a message, a tick, a resignation) runs in one
store transaction, so its record entries and the mail they cause are
committed together or not at all.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from referee import limits
from referee.config import Config
from referee.desk import Desk, Outcome, Refusal
from referee.mail.commands import tag
from referee.mail.compose import Composer
from referee.mail.parse import Incoming, is_address, parse, unreadable
from referee.mail.tokens import phase_answered, phase_tag, seat_token, tagged, token_address
from referee.record import PhaseRecord, Replay, commitment, random_move_rng, replay
from referee.rules import Game, OptionError, get_game
from referee.store import Row, Store
from referee.timeutil import Clock, ceil_second, from_iso, iso, utc_now

log = logging.getLogger("referee")

_MAX_LEGAL_SHOWN = 20
_REPLAYS_KEPT = 64  # games whose last replay is kept in memory


_NO_NEWS = object()  # an announcement that carries no private news (see Engine._announce)


class EngineError(ValueError):
    """A keeper's request that cannot be carried out; the message says why."""


@dataclass
class Table:
    """One game as the engine sees it: its record, and its state by replay."""

    row: Row
    rules: Game
    seats: list[Row]
    phases: list[Row]
    replay: Replay
    counted: dict[int, dict[int, Row]]  # phase -> seat -> the move that counts (its row)

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
    def open_phase(self) -> Row | None:
        last = self.phases[-1] if self.phases else None
        return last if last and last["resolved_at"] is None else None

    def human(self, seat: int, phase: int | None = None) -> bool:
        """Whether a person plays ``seat`` (during ``phase``, or now)."""
        since = self.seats[seat]["bot_since_phase"]
        return since is None or (phase is not None and since > phase)

    def label(self, seat: int) -> str:
        return self.seats[seat]["address"] or f"bot {seat + 1}"

    def tag(self, seat: int | None = None) -> str:
        """The subject tag, ``[pure-skill-7]``; a seat's own mail adds its reply token."""
        plain = tag(self.row["kind"], self.id)
        token = self.seats[seat]["token"] if seat is not None else None
        return tagged(plain, token) if token else plain

    def seat_of(self, address: str) -> int | None:
        for row in self.seats:
            if (row["address"] or "").lower() == address.lower():
                return row["seat"]
        return None


class Engine:
    def __init__(self, store: Store, config: Config, clock: Clock = utc_now):
        self.store = store
        self.config = config
        self.clock = clock
        self.composer = Composer(config)
        self._replays: dict[int, tuple[Any, list[PhaseRecord], Replay]] = {}  # game id -> cache, oldest first
        self.key = config.secret_key or self._stored_key()
        for seat in store.seats_without_token():  # a games.db from before reply tokens
            store.set_token(seat["game_id"], seat["seat"], self.token(seat["game_id"], seat["seat"]))

    def _stored_key(self) -> bytes:
        """Without a configured secret key, one made at first use and kept in games.db."""
        with self.store.transaction():
            key = self.store.get_meta("secret_key")
            if key is None:
                key = secrets.token_hex(32)
                self.store.set_meta("secret_key", key)
        return key.encode()

    def token(self, game_id: int, seat: int) -> str:
        return seat_token(self.key, game_id, seat)

    # -- keeper commands -------------------------------------------------

    def new_game(
        self,
        kind: str,
        players: list[str],
        bots: int = 0,
        deadline: timedelta | None = None,
        settle: timedelta | None = None,
        name: str | None = None,
        options: dict[str, Any] | None = None,
        turn_deadline: timedelta | None = None,
        decision_deadline: timedelta | None = None,
    ) -> int:
        """Create a game, announce it, open its first phase; returns its id.

        ``deadline`` is how long a sealed round lasts; ``turn_deadline`` one
        player's turn (default: the deadline), ``decision_deadline`` a choice
        inside a resolution such as a scoring offer (default: the turn's)."""
        try:
            rules = get_game(kind)
            options = rules.check_options(options or {})
        except (KeyError, OptionError) as error:
            raise EngineError(str(error).strip("'\"")) from None
        addresses = [address.strip().lower() for address in players]
        self._check_seats(rules, addresses, bots)
        deadlines = self._deadlines(deadline, turn_deadline, decision_deadline)
        settle = settle if settle is not None else self.config.settle
        with self.store.transaction():
            game_id = self._create(kind, options, deadlines, settle, name, "running")
            self._begin(game_id, addresses, bots)
        log.info("game %d (%s) created with %d seats", game_id, kind, len(addresses) + bots)
        return game_id

    def _deadlines(self, deadline: timedelta | None = None, turn: timedelta | None = None,
                   decision: timedelta | None = None) -> dict[str, timedelta]:  # fmt: skip
        """A new game's deadline per kind of phase (see Phase.timer), from the
        keeper's choices, else the config's defaults."""
        round_ = deadline if deadline is not None else self.config.deadline
        turn = turn or self.config.turn_deadline or round_  # unset or zero: the one before
        decision = decision or self.config.decision_deadline or turn
        deadlines = {"round": round_, "turn": turn, "decision": decision}
        for kind, length in deadlines.items():
            if length < timedelta(seconds=1):  # times are stored to the second
                raise EngineError(f"the {'' if kind == 'round' else kind + ' '}deadline must be at least 1 second")
        return deadlines

    def _create(self, kind: str, options: dict[str, Any], deadlines: dict[str, timedelta],
                settle: timedelta, name: str | None, state: str, seats_wanted: int | None = None) -> int:  # fmt: skip
        seed = secrets.token_bytes(32)
        return self.store.create_game(
            kind=kind, name=name, options=options, seed=seed.hex(),
            seed_commitment=commitment(seed), state=state,
            deadline_seconds=int(deadlines["round"].total_seconds()),
            turn_seconds=int(deadlines["turn"].total_seconds()),
            decision_seconds=int(deadlines["decision"].total_seconds()),
            settle_seconds=int(settle.total_seconds()),
            created_at=iso(self.clock()), finished_at=None, seats_wanted=seats_wanted,
        )  # fmt: skip

    def _begin(self, game_id: int, addresses: list[str], bots: int = 0) -> None:
        """Seat the players, announce the game, open its first phase."""
        for seat, address in enumerate(addresses):
            self.store.add_seat(game_id, seat, address, bot=False, token=self.token(game_id, seat))
        for seat in range(len(addresses), len(addresses) + bots):
            self.store.add_seat(game_id, seat, None, bot=True, token=self.token(game_id, seat))
        self.store.start_game(game_id)
        table = self.table(game_id)
        self._announce(table, f"{table.row['kind']}/start", self.context(table), news_since=None)
        self._advance(game_id)

    # -- sign-up games (JOIN and LEAVE by mail) ----------------------------

    def open_game(self, kind: str) -> Row | None:
        """The game of ``kind`` open for sign-up, if there is one."""
        games = [g for g in self.store.games("open") if g["kind"] == kind]
        return games[0] if games else None

    def join(self, kind: str, address: str) -> tuple[int, bool]:
        """Sign ``address`` up for the open game of ``kind`` (opening one if
        none is); the game starts by itself when its seats are full (rule 3).
        Returns the game's id and whether it started."""
        game = self.open_game(kind)
        if game is None:
            rules = get_game(kind)
            game_id = self._create(kind, rules.check_options({}), self._deadlines(),
                                   self.config.settle, None, "open", rules.max_seats)  # fmt: skip
            game = self.store.game(game_id)
        signed = [s["address"] for s in self.store.signups(game["id"])]
        if address in signed:
            raise Refusal(f"You are signed up for game {game['id']} already; it starts when "
                          f"{game['seats_wanted'] - len(signed)} more player(s) join.")  # fmt: skip
        self.store.add_signup(game["id"], address, iso(self.clock()))
        if len(signed) + 1 < game["seats_wanted"]:
            return game["id"], False
        self._begin(game["id"], signed + [address])
        log.info("game %d (%s) starts: its seats are full", game["id"], kind)
        return game["id"], True

    def signed_up(self, kind: str, address: str) -> bool:
        game = self.open_game(kind)
        return game is not None and any(s["address"] == address for s in self.store.signups(game["id"]))

    def leave(self, kind: str, address: str) -> None:
        self.store.remove_signup(self.open_game(kind)["id"], address)

    def listing(self, game_id: int | None = None) -> dict[str, Any]:
        """Games open for sign-up and running games, as LIST tells anyone
        (how many have signed up, never who)."""
        open_games = [
            {"id": g["id"], "kind": g["kind"], "title": get_game(g["kind"]).title,
             "signed": len(self.store.signups(g["id"])), "wanted": g["seats_wanted"]}
            for g in self.store.games("open") if game_id is None or g["id"] == game_id
        ]  # fmt: skip
        running = []
        for game in self.store.games("running") if game_id is None else []:
            phase = self.store.phases(game["id"])[-1]
            running.append({"id": game["id"], "title": get_game(game["kind"]).title,
                            "name": game["name"], "phase": phase["label"],
                            "deadline": phase["deadline"]})  # fmt: skip
        return {"open": open_games, "running": running}

    def _check_seats(self, rules: Game, addresses: list[str], bots: int) -> None:
        for address in addresses:
            if not is_address(address):
                raise EngineError(f"'{address}' is not a mail address")
        if len(set(addresses)) != len(addresses):
            raise EngineError("each player may hold only one seat")
        if bots < 0:
            raise EngineError("--bots cannot be negative")
        seats = len(addresses) + bots
        if not rules.min_seats <= seats <= rules.max_seats:
            raise EngineError(
                f"{rules.title} needs {rules.seat_range} seats (players + bots), not {seats}"
            )

    def resign(self, game_id: int, address: str) -> None:
        """The keeper's `referee resign`: see resign_seat."""
        with self.store.transaction():
            table = self._running_table(game_id)
            seat = table.seat_of(address)
            if seat is None or not table.human(seat):
                raise EngineError(f"{address} plays no seat in game {game_id}")
            self.resign_seat(table, seat, confirm=True)

    def resign_seat(self, table: Table, seat: int, confirm: bool) -> None:
        """A player left (rule 8): a random bot takes the seat from now on.
        With ``confirm`` the player gets a mail saying so (a RESIGN by mail
        is confirmed in the reply to it); everyone else is told."""
        phase = table.open_phase
        now = self.clock()
        address = table.label(seat)
        if confirm:
            self.send(table, seat, "resigned", {**self.context(table, seat), "address": address})
        self.store.make_bot(table.id, seat, phase["number"], iso(now))
        table = self.table(table.id)
        self._announce(table, "left", {**self.context(table), "seat": seat, "address": address})
        self._bot_moves(table, phase, now)
        self._advance(table.id)
        log.info("game %d: seat %d is now a bot", table.id, seat)

    def guard_outage(self) -> list[str]:
        """If the referee did not run for longer than the configured gap and a
        deadline fell in that time with moves still owed, extend it by the
        grace instead of filling in random moves.  Runs before mail is read,
        so a move received after the old deadline is taken too."""
        last_run = self.store.get_meta("last_tick")
        if not last_run:
            return []
        now, done = self.clock(), []
        for phase in self.store.open_phases():
            with self.store.transaction():
                table = self.table(phase["game_id"])
                if self._missed_in_outage(table, phase, from_iso(last_run), now):
                    done.append(self._extend_after_outage(table, phase, from_iso(last_run), now))
        return done

    def tick(self) -> list[str]:
        """Guard against an outage, enforce deadlines and settle windows, send
        due reminders; returns what it did, one line each."""
        now = self.clock()
        done = self.guard_outage()
        for phase in self.store.open_phases():
            with self.store.transaction():
                resolved = self._advance(phase["game_id"], deadlines=True)
                done += [f"resolved {line}" for line in resolved]
        for phase in self.store.open_phases():
            with self.store.transaction():
                done += self._remind(self.table(phase["game_id"]), phase, now)
        with self.store.transaction():
            self.store.set_meta("last_tick", iso(now))
        return done

    def next_due(self) -> list[datetime]:
        """When tick() next has work: every open phase's deadline, settle end
        and reminder time."""
        moments = []
        for phase in self.store.open_phases():
            deadline = from_iso(phase["deadline"])
            moments.append(deadline)
            if phase["closes_at"]:
                moments.append(from_iso(phase["closes_at"]))
            if (remind := self._reminder_time(phase)) is not None:
                moments.append(remind)
        return moments

    def _reminder_time(self, phase: Row) -> datetime | None:
        """When to remind the players who still owe a move: the configured lead
        before the deadline, unless that falls in the phase's first half (the
        prompt is still fresh), or the reminder went out already."""
        lead = self.config.reminder
        if lead is None or phase["reminded_at"]:
            return None
        opened, deadline = from_iso(phase["opened_at"]), from_iso(phase["deadline"])
        remind = deadline - lead
        return remind if remind >= opened + (deadline - opened) / 2 else None

    def _missed_in_outage(self, table: Table, phase: Row, last_run: datetime,
                          now: datetime) -> bool:  # fmt: skip
        """Whether the referee was down past this phase's deadline (longer than
        the configured gap), with moves still owed: then nobody gets a random
        move for a deadline the referee slept through."""
        gap = self.config.outage_gap
        deadline = from_iso(phase["deadline"])
        return (gap is not None and now - last_run > gap and last_run < deadline <= now
                and bool(self.waiting_for(table, phase)))  # fmt: skip

    def _extend_after_outage(self, table: Table, phase: Row, last_run: datetime,
                             now: datetime) -> str:  # fmt: skip
        new = iso(now + self.config.outage_grace)
        reason = f"the referee did not run from {iso(last_run)} to {iso(now)}"
        self.store.change_deadline(table.id, phase["number"], new, reason, iso(now))
        # The notice below tells everyone the new deadline: it is the reminder too.
        self.store.update_phase(table.id, phase["number"], reminded_at=iso(now))
        table = self.table(table.id)
        context = {**self.context(table), "old_deadline": phase["deadline"],
                   "down_from": iso(last_run), "down_to": iso(now)}  # fmt: skip
        self._announce(table, "extended", context)
        log.warning("game %d %s: %s, past its deadline %s; deadline moved to %s", table.id,
                    phase["label"], reason, phase["deadline"], new)  # fmt: skip
        return f"extended game {table.id} {phase['label']} to {new}: {reason}"

    def _remind(self, table: Table, phase: Row, now: datetime) -> list[str]:
        """One private reminder per phase to each person who still owes a move,
        the configured lead time before the deadline."""
        remind = self._reminder_time(phase)
        if remind is None or not remind <= now < from_iso(phase["deadline"]):
            return []
        waiting = [seat for seat in self.waiting_for(table, phase) if table.human(seat)]
        for seat in waiting:
            context = {**self.context(table, seat), **self.legal(table, seat)}
            self.send(table, seat, "reminder", context)
        self.store.update_phase(table.id, phase["number"], reminded_at=iso(now))
        return [f"reminded {len(waiting)} player(s) in game {table.id} {phase['label']}"] if waiting else []

    def ingest(self, raw: bytes, received_at: datetime | None = None) -> Outcome:
        """Handle one received message, exactly once.  ``received_at`` is the
        server's receipt time when the mail source knows it."""
        now = self.clock()
        try:
            message = parse(raw, now, received_at, max_size=self.config.max_message_size)
        except Exception:  # noqa: BLE001 - a parser bug must not stop the daemon on this mail
            log.exception("a message of %d bytes could not be parsed", len(raw))
            message = unreadable(raw, now, received_at)
            outcome = Outcome("failed", "the message could not be parsed; it is kept in the store")
            with self.store.transaction():
                if not self.store.seen(message.key):
                    self._record(message, now, outcome)
            return outcome
        try:
            with self.store.transaction():
                if self.store.seen(message.key):
                    return Outcome("duplicate", f"{message.key} was handled before")
                outcome = Desk(self, message).handle()
                self._record(message, now, outcome)
        except Exception:
            # A bug must neither lose the message nor fail on it at every
            # redelivery: keep it, unanswered, for the keeper to look at.
            log.exception("message %s from %s could not be handled", message.key, message.sender)
            outcome = Outcome("failed", "an internal error; the message is kept in the store")
            with self.store.transaction():
                self._record(message, now, outcome)
        log.info("message %s from %s: %s", message.key, message.sender, outcome.code)
        return outcome

    def _record(self, message: Incoming, now: datetime, outcome: Outcome) -> None:
        self.store.record_message(
            key=message.key, message_id=message.message_id, sender=message.sender,
            subject=message.subject, received_at=iso(message.received_at), handled_at=iso(now),
            game_id=outcome.game_id, outcome=str(outcome),
            # an oversized message stays whole on the mail server; its headers suffice here
            raw=message.raw.split(b"\r\n\r\n", 1)[0] if message.oversized else message.raw,
        )  # fmt: skip

    # -- reading a game ----------------------------------------------------

    def table(self, game_id: int) -> Table:
        row = self.store.game(game_id)
        if row is None:
            raise EngineError(f"there is no game {game_id}")
        rules = get_game(row["kind"])
        seats = self.store.seats(game_id)
        phases = self.store.phases(game_id)
        counted: dict[int, dict[int, Row]] = {}  # phase -> seat -> the move that counts
        for move in self.store.moves(game_id):
            counted.setdefault(move["phase"], {})[move["seat"]] = move
        records = [
            PhaseRecord(
                number=phase["number"],
                moves=None if phase["resolved_at"] is None
                else {seat: move["move"] for seat, move in counted[phase["number"]].items()},
                new_bots=tuple(s["seat"] for s in seats if s["bot_since_phase"] == phase["number"]),
            )
            for phase in phases
        ]  # fmt: skip
        return Table(row, rules, seats, phases, self._replay(row, rules, seats, records), counted)

    def _replay(self, row: Row, rules: Game, seats: list[Row], records: list[PhaseRecord]) -> Replay:
        """The game's state by replay, going on from the last replay of its
        resolved phases when the record still begins with them (a cache: one
        message reads its game many times, and a turn-based game has hundreds
        of phases).  A record that does not match is replayed from the seed."""
        seed = bytes.fromhex(row["seed"])
        initial_bots = tuple(s["seat"] for s in seats if s["bot_since_phase"] == 0)
        resolved = [r for r in records if r.moves is not None]
        key = (seed, len(seats), initial_bots)
        cached = self._replays.pop(row["id"], None)
        start = None
        if cached and cached[0] == key and resolved[: len(cached[1])] == cached[1]:
            start = cached[2]
        done = replay(rules, seed, len(seats), row["options"], initial_bots, resolved, start)
        self._replays[row["id"]] = (key, resolved, done)
        while len(self._replays) > _REPLAYS_KEPT:
            del self._replays[next(iter(self._replays))]  # the least recently used
        if len(resolved) == len(records):
            return done
        return replay(rules, seed, len(seats), row["options"], initial_bots, records, done)

    def _running_table(self, game_id: int) -> Table:
        table = self.table(game_id)
        if table.row["state"] != "running":
            raise EngineError(f"game {game_id} has ended")
        return table

    def status(self, game_id: int) -> dict[str, Any]:
        """The public state of a game, as ``referee status --json`` prints it."""
        row = self.store.game(game_id)
        if row is not None and row["state"] == "open":
            return self._signup_status(row)
        table = self.table(game_id)
        view = table.rules.view(table.state, None)
        result = table.rules.result(table.state)
        phase = table.open_phase
        finished = table.row["state"] == "finished"
        return {
            "id": table.id,
            "kind": table.row["kind"],
            "name": table.row["name"],
            "state": table.row["state"],
            "phase": phase and {
                "number": phase["number"],
                "label": phase["label"],
                "deadline": phase["deadline"],
                "waiting_for": [table.label(s) for s in self.waiting_for(table, phase)],
            },
            "players": [
                {"seat": s["seat"], "address": s["address"], "score": view["scores"][s["seat"]],
                 "bot": bool(s["bot"]), "bounces": self._bounces(s["address"])}
                for s in table.seats
            ],
            "winner": table.label(result.winner) if result and result.winner is not None else None,
            "seed_commitment": table.row["seed_commitment"],
            "seed": table.row["seed"] if finished else None,
            "created_at": table.row["created_at"],
            "finished_at": table.row["finished_at"],
            "deadline_changes": [
                {"phase": c["phase"], "old": c["old"], "new": c["new"], "reason": c["reason"]}
                for c in self.store.deadline_changes(table.id)
            ],
            "undelivered": [
                {"to": m["recipients"], "subject": m["subject"], "error": m["last_error"]}
                for m in self.store.outbox("failed", game_id=table.id)
            ],
        }  # fmt: skip

    def _signup_status(self, row: Row) -> dict[str, Any]:
        """A game open for sign-up: who has joined so far."""
        signups = self.store.signups(row["id"])
        return {
            "id": row["id"], "kind": row["kind"], "name": row["name"], "state": "open",
            "phase": None, "seats_wanted": row["seats_wanted"],
            "players": [{"seat": None, "address": s["address"], "score": None, "bot": False,
                         "bounces": self._bounces(s["address"])} for s in signups],
            "winner": None, "seed_commitment": row["seed_commitment"], "seed": None,
            "created_at": row["created_at"], "finished_at": None,
            "deadline_changes": [], "undelivered": [],
        }  # fmt: skip

    def _bounces(self, address: str | None) -> list[dict[str, str]]:
        """Delivery failures of the referee's mail to a player, from their bounces."""
        rows = self.store.bounces(address) if address else []
        return [{"at": b["at"], "status": b["status"], "diagnostic": b["diagnostic"]} for b in rows]

    def history(self, game_id: int) -> str:
        """The game so far as plain text: every resolved phase and the standings."""
        table = self.table(game_id)
        return self.composer.env.get_template(f"mail/{table.row['kind']}/history.txt.j2").render(
            **self.context(table, history=True)
        )

    # -- moving a game on --------------------------------------------------

    def _advance(self, game_id: int, deadlines: bool = False) -> list[str]:
        """Take the game as far as it can go now; returns the phases resolved.

        Only tick() passes ``deadlines``: it alone enforces deadlines, after
        its outage guard, so reading a backlog of mail after an outage never
        fills in random moves for a deadline the referee slept through."""
        resolved = []
        while True:
            table = self.table(game_id)
            if table.row["state"] != "running":
                return resolved
            phase = table.open_phase
            if phase is None:  # a new game: open its first phase
                self._start_phase(table, self._insert_phase(table))
                continue
            if not self._due(table, phase, deadlines):
                return resolved
            self._resolve(table, phase)
            resolved.append(f"game {game_id} {phase['label']}")

    def _insert_phase(self, table: Table) -> Row | None:
        """Record the next phase the rules ask for, or None if the game is over."""
        phase = table.rules.phase(table.state)
        if phase is None:
            return None
        now = self.clock()
        deadline = ceil_second(now + self.deadlines(table.row)[phase.deadline_kind])
        return self.store.open_phase(
            table.id, len(table.phases) + 1, phase.label, list(phase.movers),
            phase.sealed, iso(now), iso(deadline),
        )  # fmt: skip

    def _start_phase(self, table: Table, phase: Row) -> None:
        """Prompt each human mover privately; bots move at once, and so does
        anyone with one legal move (Pure Skill's round 13), instead of waiting."""
        table = self.table(table.id)
        now = self.clock()
        for seat in phase["movers"]:
            if not table.human(seat):
                continue
            legal = table.rules.legal_moves(table.state, seat)
            if len(legal) == 1:
                self._record_move(table, phase, seat, legal[0], "forced", now)
            else:
                self.send(table, seat, f"{table.row['kind']}/prompt", self.context(table, seat))
        self._bot_moves(table, phase, now)

    def _bot_moves(self, table: Table, phase: Row, now: datetime) -> None:
        """Bots (rule 8) never wait for a deadline: they move as soon as they owe a move."""
        moved = self.store.final_moves(table.id, phase["number"])
        for seat in phase["movers"]:
            if not table.human(seat) and seat not in moved:
                self._random_move(table, phase, seat, "bot", now)
        self._note_complete(table.id, phase["number"], now)

    def _random_move(self, table: Table, phase: Row, seat: int, source: str,
                     at: datetime) -> None:  # fmt: skip
        rng = random_move_rng(table.seed, phase["number"], seat)
        self._record_move(table, phase, seat, table.rules.random_move(table.state, seat, rng),
                          source, at)  # fmt: skip

    def _record_move(self, table: Table, phase: Row, seat: int, move: Any, source: str,
                     at: datetime) -> None:  # fmt: skip
        """A move the referee makes for a seat: random, a bot's, or forced."""
        text = table.rules.move_text(move)
        self.store.add_move(
            game_id=table.id, phase=phase["number"], seat=seat, move=text, source=source,
            message_key=None, received_at=iso(at), recorded_at=iso(self.clock()),
        )  # fmt: skip
        log.debug("game %d %s: %s move for seat %d: %s", table.id, phase["label"], source,
                  seat, text)  # fmt: skip

    def _note_complete(self, game_id: int, number: int, at: datetime) -> None:
        """When the last owed move is in, fix when the phase closes: at once, or
        after the game's settle delay if a person moved by mail (changes still count)."""
        table = self.table(game_id)
        phase = table.phases[number - 1]
        if phase["closes_at"] or self.waiting_for(table, phase):
            return
        closes = at
        moves = self.store.final_moves(game_id, number).values()
        by_mail = any(move["source"] == "mail" for move in moves)
        if phase["sealed"] and by_mail and table.row["settle_seconds"]:
            closes = min(at + timedelta(seconds=table.row["settle_seconds"]),
                         from_iso(phase["deadline"]))  # fmt: skip
        self.store.update_phase(game_id, number, closes_at=iso(closes))

    def waiting_for(self, table: Table, phase: Row) -> list[int]:
        moved = self.store.final_moves(table.id, phase["number"])
        return [seat for seat in phase["movers"] if seat not in moved]

    def _due(self, table: Table, phase: Row, deadlines: bool = True) -> bool:
        """Whether the phase should resolve now: all moves in and any settle
        time over, or (when ``deadlines`` are enforced) its deadline passed."""
        now = self.clock()
        if deadlines and now >= from_iso(phase["deadline"]):
            return True
        return phase["closes_at"] is not None and now >= from_iso(phase["closes_at"])

    def _resolve(self, table: Table, phase: Row) -> None:
        before = table.state
        deadline = from_iso(phase["deadline"])
        for seat in self.waiting_for(table, phase):  # 4e: a random bid for a missed deadline
            self._random_move(table, phase, seat, "random", deadline)
        self.store.update_phase(table.id, phase["number"], resolved_at=iso(self.clock()))
        table = self.table(table.id)
        after = self._insert_phase(table)
        table = self.table(table.id)
        context = {**self.context(table), "round": self._round_context(table, phase["number"])}
        self._announce(table, f"{table.row['kind']}/round", context, news_since=before)
        log.info("game %d %s resolved", table.id, phase["label"])
        if after is None:
            self._finish(table)
        else:
            self._start_phase(table, after)

    def _finish(self, table: Table) -> None:
        now = iso(self.clock())
        self.store.finish_game(table.id, now)
        table = self.table(table.id)
        self._announce(table, f"{table.row['kind']}/final", self.context(table, history=True))
        log.info("game %d finished", table.id)

    # -- a move by mail (the Desk reads the message and calls this) -----------

    def take_move(self, table: Table, seat: int, move: Any, message: Incoming) -> tuple[str, dict[str, Any]]:
        """Record a seat's move from a message, if the message came in time;
        returns its outcome code (move, replaced, superseded) and what the
        receipt shows.  Refusal when the phase is not open to it.  The phase
        is not resolved here, even if this was the last move it waited for:
        the message's reply goes first, then ``settle`` resolves it."""
        phase = table.open_phase
        received = message.received_at
        self._check_thread(table, phase, seat, message)
        self._check_timing(table, phase, seat, received)
        earlier = self.store.final_moves(table.id, phase["number"]).get(seat)
        if earlier and not phase["sealed"]:  # two moves in one mail: the first one stands
            raise Refusal(f"Your move for {phase['label']} is in already ({earlier['move']}); a move "
                          "in turn is final.")  # fmt: skip
        text = table.rules.move_text(move)
        self.store.add_move(
            game_id=table.id, phase=phase["number"], seat=seat, move=text, source="mail",
            message_key=message.key, received_at=iso(received), recorded_at=iso(self.clock()),
        )  # fmt: skip
        self._note_complete(table.id, phase["number"], received)
        # Read out of order, a move the server received before one already
        # recorded does not replace it: the last one received counts.
        counting = self.store.final_moves(table.id, phase["number"])[seat]
        superseded = counting["move"] if counting["message_key"] != message.key else None
        table = self.table(table.id)
        context = {
            **self.context(table, seat), "move": text,
            "replaced": earlier["move"] if earlier and not superseded else None,
            "superseded": superseded,
            "waiting": [table.label(s) for s in self.waiting_for(table, phase)],
            "settling": not self._due(table, table.phases[phase["number"] - 1]),
        }  # fmt: skip
        log.info("game %d %s: move accepted from seat %d", table.id, phase["label"], seat)
        code = "superseded" if superseded else "replaced" if earlier else "move"
        return code, context

    def settle(self, game_id: int) -> None:
        """Resolve what a message's moves completed (after its reply is queued,
        so a player reads the receipt before the result it announces)."""
        self._advance(game_id)

    def _check_thread(self, table: Table, phase: Row, seat: int, message: Incoming) -> None:
        """Refuse a move in a reply to the referee's mail of a phase that is
        over, when the seat moved in that phase or one since: the move may
        have been meant for it (a second answer to a prompt, a change of mind
        that came late), not for the one open now.  A reply to a mail of
        phases the seat had no move in (a bot's turn announced in the same
        minute) can only be meant for now."""
        answered = phase_answered(message, self.config.domain, table.id)
        if answered is None or answered >= phase["number"]:
            return
        since = table.phases[answered - 1 : phase["number"] - 1]
        meant = next((p for p in since if seat in p["movers"]), None)
        if meant is None:
            return
        if seat in phase["movers"]:
            now = (f"{phase['label']} is open now: to make this move there, send it again "
                   "in a reply to this mail.")  # fmt: skip
        else:
            waiting = ", ".join(table.label(s) for s in self.waiting_for(table, phase))
            now = f"{phase['label']} is open now" + (f", and waits for {waiting}." if waiting else ".")
        raise Refusal(f"Your mail answers the referee's mail about {meant['label']}, which is over. {now}",
                      legal=True)  # fmt: skip

    def _check_timing(self, table: Table, phase: Row, seat: int, received: datetime) -> None:
        """Refuse a move the server received outside its phase, or from a seat
        that does not move in it."""
        if received < from_iso(phase["opened_at"]):
            raise Refusal(
                f"Your mail reached the server at {iso(received)}, before {phase['label']} "
                "opened; the round it was meant for has closed. Please send your move again."
            )
        if received > from_iso(phase["deadline"]):
            raise Refusal(
                f"Your mail reached the server at {iso(received)}, after the deadline of "
                f"{phase['label']} ({phase['deadline']}). A move missing at the deadline "
                "is chosen at random."
            )
        if phase["closes_at"] and received > from_iso(phase["closes_at"]):
            raise Refusal(
                f"Your mail reached the server at {iso(received)}, after {phase['label']} "
                f"closed ({phase['closes_at']}, when its settle time after the last move ran out)."
            )
        if seat not in phase["movers"]:
            waiting = ", ".join(table.label(s) for s in self.waiting_for(table, phase))
            raise Refusal(f"It is not your move; {phase['label']} waits for {waiting}.")

    # -- mail ------------------------------------------------------------------

    def context(self, table: Table, seat: int | None = None,
                history: bool = False) -> dict[str, Any]:  # fmt: skip
        """What templates about a game may use.  ``view`` is the seat's own view,
        or the public one when ``seat`` is None.  ``rounds`` (every resolved
        phase) only with ``history``: few mails show it, and it costs a query each."""
        phase = table.open_phase
        result = table.rules.result(table.state)
        now = self.clock()
        context = {
            "game": self.game_info(table),
            "players": [
                {"seat": s["seat"], "label": table.label(s["seat"]), "bot": not table.human(s["seat"])}
                for s in table.seats
            ],
            "seat": seat,
            "view": table.rules.view(table.state, seat),
            "phase": phase and {**phase, "left": from_iso(phase["deadline"]) - now},
            "result": result,
            "referee": self.config.address,
        }  # fmt: skip
        if history:
            context["rounds"] = [self._round_context(table, s.number) for s in table.replay.steps]
        return context

    @staticmethod
    def deadlines(game: Row) -> dict[str, timedelta]:
        """How long each kind of phase of a game lasts (a games.db from before
        turn deadlines has only the one)."""
        round_ = game["deadline_seconds"]
        turn = game.get("turn_seconds") or round_
        decision = game.get("decision_seconds") or turn
        return {"round": timedelta(seconds=round_), "turn": timedelta(seconds=turn),
                "decision": timedelta(seconds=decision)}  # fmt: skip

    def game_info(self, table: Table) -> dict[str, Any]:
        """The game itself, as every mail about it may show it (``game`` in templates)."""
        return {
            "id": table.id, "kind": table.row["kind"], "title": table.rules.title,
            "name": table.row["name"], "tag": table.tag(),
            "state": table.row["state"], "move_word": table.rules.move_word,
            "example": table.rules.example or f"{table.rules.move_word} 7",
            "seed_commitment": table.row["seed_commitment"],
            "seed": table.row["seed"] if table.row["state"] == "finished" else None,
            "deadline": timedelta(seconds=table.row["deadline_seconds"]),
            "deadlines": self.deadlines(table.row),
            "options": table.row["options"],
        }  # fmt: skip

    def _round_context(self, table: Table, number: int) -> dict[str, Any]:
        """One resolved phase, from the record alone (so it replays exactly).

        Public: what the moves were is told only through the game's events,
        since some games keep moves hidden after they resolve."""
        step = next(step for step in table.replay.steps if step.number == number)
        moves = self.store.final_moves(table.id, number)
        following = table.phases[number] if number < len(table.phases) else None
        return {
            "number": number,
            "label": step.phase.label,
            "events": step.events,
            "how": {seat: moves[seat]["source"] for seat in step.moves},
            "next": following and {"label": following["label"], "deadline": following["deadline"]},
        }

    def legal(self, table: Table, seat: int) -> dict[str, Any]:
        """The moves a seat can make now, as text for its private mail: the
        first few (``more_legal`` says whether there are others)."""
        moves = table.rules.legal_moves(table.state, seat)
        return {"legal": [table.rules.move_text(m) for m in moves[:_MAX_LEGAL_SHOWN]],
                "more_legal": len(moves) > _MAX_LEGAL_SHOWN}  # fmt: skip

    def _announce(self, table: Table, template: str, context: dict[str, Any],
                  news_since: Any = _NO_NEWS) -> None:  # fmt: skip
        """A public mail to every person still playing: one copy each, so each
        copy can carry that player's own reply address.  With ``news_since``
        (the state before the change announced; None for the deal), each copy
        also carries its seat's private news (Game.private_news), if any: one
        seat's news reaches only that seat's copy."""
        for seat in range(len(table.seats)):
            if table.human(seat):
                news = (None if news_since is _NO_NEWS
                        else table.rules.private_news(news_since, table.state, seat))  # fmt: skip
                self.send(table, seat, template, {**context, "news": news})

    def send(self, table: Table, seat: int, template: str, context: dict[str, Any],
             **headers: Any) -> None:  # fmt: skip
        """A mail to a seat: its subject tag and Reply-To carry the seat's
        token, its Message-ID the phase open now (see tokens.phase_tag): a
        prompt's, a receipt's (the reply goes before ``settle``), or the one an
        announcement of a result opens."""
        token = table.seats[seat]["token"]
        context = {**context, "game": {**context["game"], "tag": table.tag(seat)}}
        phase = table.open_phase
        self.mail(table.id, table.label(seat), template, context,
                  **{"reply_to": token_address(self.config.address, token),
                     "id_tag": phase_tag(table.id, phase["number"] if phase else None), **headers})  # fmt: skip

    def mail(self, game_id: int | None, to: str, template: str, context: dict[str, Any],
             answers: str | None = None, budget: limits.Budget = "player", **headers: Any) -> bool:  # fmt: skip
        """Render and queue one mail to ``to``, showing times in their zone too.

        ``answers`` is the key of the message this mail answers; it spends
        ``budget`` (see referee.limits).  Returns False when the budget held
        it back (the address may get the over-limit notice instead)."""
        now = self.clock()
        if not is_address(to):  # seats and senders are checked; this keeps it so for any caller
            log.warning("not mailing %r: not an address SMTP can carry", to)
            return False
        if answers:
            decision = limits.verdict(self.store, self.config, to, budget, now)
            if decision != "send":
                log.info("not answering %s: over its %s answers for the hour", to, budget)
                if decision == "notify":
                    context = {"game": context.get("game"), "referee": self.config.address,
                               "budget": budget, "resumes": limits.resumes_at(self.store, to, budget, now)}
                    self._queue(game_id, to, "over-limit", context, now, answers, limits.over_limit(budget),
                                {k: v for k, v in headers.items() if k in ("reply_to", "id_tag")})
                return False
        self._queue(game_id, to, template, context, now, answers, budget if answers else None, headers)
        return True

    def _queue(self, game_id: int | None, to: str, template: str, context: dict[str, Any], now: datetime,
               answers: str | None, budget: str | None, headers: dict[str, Any]) -> None:  # fmt: skip
        context = {**context, "timezone": self.store.timezone(to)}
        subject, body = self.composer.render(template, **context)
        message_id, raw = self.composer.message(to=[to], subject=subject, body=body, now=now, **headers)
        self.store.queue_mail(message_id=message_id, game_id=game_id, recipients=[to],
                              subject=subject, raw=raw, created_at=iso(now), answers=answers,
                              budget=budget, answer_to=limits.normalised(to) if budget else None)  # fmt: skip
