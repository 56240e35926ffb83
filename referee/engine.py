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

from referee.config import Config, is_address
from referee.mail.classify import never_answer
from referee.mail.commands import candidate_lines, named_games, reply_address, tag
from referee.mail.compose import Composer
from referee.mail.parse import Incoming, one_line, parse
from referee.record import PhaseRecord, Replay, commitment, random_move_rng, replay
from referee.rules import Game, MoveError, OptionError, get_game
from referee.store import Row, Store
from referee.timeutil import Clock, ceil_second, from_iso, iso, utc_now

log = logging.getLogger("referee")

_MAX_LEGAL_SHOWN = 20


class EngineError(ValueError):
    """A keeper's request that cannot be carried out; the message says why."""


class Refusal(Exception):
    """A message that changes nothing; the sender is told ``reason``."""

    def __init__(self, reason: str, table: Table | None = None, seat: int | None = None,
                 line: str | None = None):  # fmt: skip
        super().__init__(reason)
        self.reason, self.table, self.seat, self.line = reason, table, seat, line


@dataclass(frozen=True)
class Outcome:
    """What became of an ingested message."""

    code: str  # move, replaced, superseded, refused, ignored, duplicate, failed
    detail: str
    game_id: int | None = None

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"


@dataclass
class Table:
    """One game as the engine sees it: its record, and its state by replay."""

    row: Row
    rules: Game
    seats: list[Row]
    phases: list[Row]
    replay: Replay

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
    ) -> int:
        """Create a game, announce it, open its first phase; returns its id."""
        try:
            rules = get_game(kind)
            options = rules.check_options(options or {})
        except (KeyError, OptionError) as error:
            raise EngineError(str(error).strip("'\"")) from None
        addresses = [address.strip().lower() for address in players]
        self._check_seats(rules, addresses, bots)
        deadline = deadline if deadline is not None else self.config.deadline
        settle = settle if settle is not None else self.config.settle
        if deadline < timedelta(seconds=1):  # times are stored to the second
            raise EngineError("the deadline must be at least 1 second")
        seed = secrets.token_bytes(32)
        with self.store.transaction():
            game_id = self.store.create_game(
                kind=kind, name=name, options=options, seed=seed.hex(),
                seed_commitment=commitment(seed), state="running",
                deadline_seconds=int(deadline.total_seconds()),
                settle_seconds=int(settle.total_seconds()),
                created_at=iso(self.clock()), finished_at=None,
            )  # fmt: skip
            for seat, address in enumerate(addresses):
                self.store.add_seat(game_id, seat, address, bot=False)
            for seat in range(len(addresses), len(addresses) + bots):
                self.store.add_seat(game_id, seat, None, bot=True)
            table = self.table(game_id)
            self._announce(table, f"{kind}/start", self._context(table))
            self._advance(game_id)
        log.info("game %d (%s) created with %d seats", game_id, kind, len(addresses) + bots)
        return game_id

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
        """A player left (rule 8): a random bot takes the seat from now on."""
        with self.store.transaction():
            table = self._running_table(game_id)
            seat = table.seat_of(address)
            if seat is None or not table.human(seat):
                raise EngineError(f"{address} plays no seat in game {game_id}")
            phase = table.open_phase
            now = self.clock()
            self.store.make_bot(game_id, seat, phase["number"], iso(now))
            table = self.table(game_id)
            context = {**self._context(table), "seat": seat, "address": address}
            self._send(table, [address], "resigned", context)
            self._announce(table, "left", context)
            self._bot_moves(table, phase, now)
            self._advance(game_id)
        log.info("game %d: seat %d is now a bot", game_id, seat)

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
                and bool(self._waiting_for(table, phase)))  # fmt: skip

    def _extend_after_outage(self, table: Table, phase: Row, last_run: datetime,
                             now: datetime) -> str:  # fmt: skip
        new = iso(now + self.config.outage_grace)
        reason = f"the referee did not run from {iso(last_run)} to {iso(now)}"
        self.store.change_deadline(table.id, phase["number"], new, reason, iso(now))
        # The notice below tells everyone the new deadline: it is the reminder too.
        self.store.update_phase(table.id, phase["number"], reminded_at=iso(now))
        table = self.table(table.id)
        context = {**self._context(table), "old_deadline": phase["deadline"],
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
        waiting = [seat for seat in self._waiting_for(table, phase) if table.human(seat)]
        for seat in waiting:
            context = {**self._context(table, seat), **self._legal(table, seat)}
            self._send(table, [table.label(seat)], "reminder", context)
        self.store.update_phase(table.id, phase["number"], reminded_at=iso(now))
        return [f"reminded {len(waiting)} player(s) in game {table.id} {phase['label']}"] if waiting else []

    def ingest(self, raw: bytes, received_at: datetime | None = None) -> Outcome:
        """Handle one received message, exactly once.  ``received_at`` is the
        server's receipt time when the mail source knows it."""
        now = self.clock()
        message = parse(raw, now, received_at, max_size=self.config.max_message_size)
        try:
            with self.store.transaction():
                if self.store.seen(message.key):
                    return Outcome("duplicate", f"{message.key} was handled before")
                outcome = self._handle(message)
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
        counted: dict[int, dict[int, str]] = {}  # phase -> seat -> the move that counts
        for move in self.store.moves(game_id):
            counted.setdefault(move["phase"], {})[move["seat"]] = move["move"]
        records = [
            PhaseRecord(
                number=phase["number"],
                moves=None if phase["resolved_at"] is None else counted[phase["number"]],
                new_bots=tuple(s["seat"] for s in seats if s["bot_since_phase"] == phase["number"]),
            )
            for phase in phases
        ]  # fmt: skip
        initial_bots = tuple(s["seat"] for s in seats if s["bot_since_phase"] == 0)
        state = replay(rules, bytes.fromhex(row["seed"]), len(seats), row["options"],
                       initial_bots, records)  # fmt: skip
        return Table(row, rules, seats, phases, state)

    def _running_table(self, game_id: int) -> Table:
        table = self.table(game_id)
        if table.row["state"] != "running":
            raise EngineError(f"game {game_id} has ended")
        return table

    def status(self, game_id: int) -> dict[str, Any]:
        """The public state of a game, as ``referee status --json`` prints it."""
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
                "waiting_for": [table.label(s) for s in self._waiting_for(table, phase)],
            },
            "players": [
                {"seat": s["seat"], "address": s["address"], "score": view["scores"][s["seat"]],
                 "bot": bool(s["bot"])}
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

    def history(self, game_id: int) -> str:
        """The game so far as plain text: every resolved phase and the standings."""
        table = self.table(game_id)
        return self.composer.env.get_template(f"mail/{table.row['kind']}/history.txt.j2").render(
            **self._context(table, history=True)
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
        deadline = ceil_second(now + timedelta(seconds=table.row["deadline_seconds"]))
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
                self._send(table, [table.label(seat)], f"{table.row['kind']}/prompt",
                           self._context(table, seat))  # fmt: skip
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
        if phase["closes_at"] or self._waiting_for(table, phase):
            return
        closes = at
        moves = self.store.final_moves(game_id, number).values()
        by_mail = any(move["source"] == "mail" for move in moves)
        if phase["sealed"] and by_mail and table.row["settle_seconds"]:
            closes = min(at + timedelta(seconds=table.row["settle_seconds"]),
                         from_iso(phase["deadline"]))  # fmt: skip
        self.store.update_phase(game_id, number, closes_at=iso(closes))

    def _waiting_for(self, table: Table, phase: Row) -> list[int]:
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
        deadline = from_iso(phase["deadline"])
        for seat in self._waiting_for(table, phase):  # 4e: a random bid for a missed deadline
            self._random_move(table, phase, seat, "random", deadline)
        self.store.update_phase(table.id, phase["number"], resolved_at=iso(self.clock()))
        table = self.table(table.id)
        after = self._insert_phase(table)
        table = self.table(table.id)
        context = {**self._context(table), "round": self._round_context(table, phase["number"])}
        self._announce(table, f"{table.row['kind']}/round", context)
        log.info("game %d %s resolved", table.id, phase["label"])
        if after is None:
            self._finish(table)
        else:
            self._start_phase(table, after)

    def _finish(self, table: Table) -> None:
        now = iso(self.clock())
        self.store.finish_game(table.id, now)
        table = self.table(table.id)
        self._announce(table, f"{table.row['kind']}/final", self._context(table, history=True))
        log.info("game %d finished", table.id)

    # -- handling a message --------------------------------------------------

    def _handle(self, message: Incoming) -> Outcome:
        why = never_answer(message, self.config.address)
        if why:
            return Outcome("ignored", why)
        try:
            if message.oversized:
                limit = self.config.max_message_size // 1024
                raise Refusal(
                    f"Your mail is {len(message.raw) // 1024} KB; the referee reads mail of up to "
                    f"{limit} KB (an attachment, perhaps?). Please send your move again as a "
                    "short plain-text reply."
                )
            return self._take_move(message)
        except Refusal as refusal:
            self._refuse(message, refusal)
            game_id = refusal.table.id if refusal.table else None
            return Outcome("refused", refusal.reason, game_id)

    def _identify(self, message: Incoming) -> tuple[Table, int]:
        """The game and seat a message is for: by tag or reply address, else the
        sender's only running game.  The From address must hold the seat."""
        named = named_games(message, self.config.address)
        if len(named) > 1:
            raise Refusal("Your mail names more than one game; please write about one game per mail.")
        if named:
            game_id = named.pop()
            if self.store.game(game_id) is None:
                raise Refusal(f"There is no game number {game_id}.")
        else:
            games = self.store.games_of(message.sender)
            if not games:
                raise Refusal("You are not playing in any game this referee is running.")
            if len(games) > 1:
                tags = ", ".join(tag(g["kind"], g["id"]) for g in games)
                raise Refusal(
                    f"You play in more than one game ({tags}); reply to the game's own "
                    "mail, or put its tag in the subject, so I know which one you mean."
                )
            game_id = games[0]["id"]
        table = self.table(game_id)
        seat = table.seat_of(message.sender)
        if seat is None:
            raise Refusal(f"{message.sender} holds no seat in game {game_id}.", table)
        if table.row["state"] != "running":
            raise Refusal(f"Game {game_id} has ended; no more moves are taken.", table, seat)
        if not table.human(seat):
            raise Refusal(f"You left game {game_id}; a random bot plays your seat now.", table, seat)
        return table, seat

    def _take_move(self, message: Incoming) -> Outcome:
        table, seat = self._identify(message)
        phase = table.open_phase
        received = message.received_at
        if received < from_iso(phase["opened_at"]):
            raise Refusal(
                f"Your mail reached the server at {iso(received)}, before {phase['label']} "
                "opened; the round it was meant for has closed. Please send your move again.",
                table, seat,
            )  # fmt: skip
        if received > from_iso(phase["deadline"]):
            raise Refusal(
                f"Your mail reached the server at {iso(received)}, after the deadline of "
                f"{phase['label']} ({phase['deadline']}). A move missing at the deadline "
                "is chosen at random.",
                table, seat,
            )  # fmt: skip
        if phase["closes_at"] and received > from_iso(phase["closes_at"]):
            raise Refusal(
                f"Your mail reached the server at {iso(received)}, after {phase['label']} "
                f"closed ({phase['closes_at']}, when its settle time after the last move ran out).",
                table, seat,
            )  # fmt: skip
        if seat not in phase["movers"]:
            waiting = ", ".join(table.label(s) for s in self._waiting_for(table, phase))
            raise Refusal(f"It is not your move; {phase['label']} waits for {waiting}.", table, seat)
        move, line = self._parse_move(message, table, seat)
        earlier = self.store.final_moves(table.id, phase["number"]).get(seat)
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
            **self._context(table, seat), "move": text, "line": line,
            "replaced": earlier["move"] if earlier and not superseded else None,
            "superseded": superseded,
            "waiting": [table.label(s) for s in self._waiting_for(table, phase)],
            "settling": not self._due(table, table.phases[phase["number"] - 1]),
        }  # fmt: skip
        self._reply(message, table, [table.label(seat)], "receipt", context)
        self._advance(table.id)
        log.info("game %d %s: move accepted from seat %d", table.id, phase["label"], seat)
        code = "superseded" if superseded else "replaced" if earlier else "move"
        return Outcome(code, phase["label"], table.id)

    def _parse_move(self, message: Incoming, table: Table, seat: int) -> tuple[Any, str]:
        lines = candidate_lines(message)
        if not lines:
            raise Refusal("I found no move in your mail.", table, seat)
        errors = []
        for line in lines:
            try:
                return table.rules.parse_move(table.state, seat, line), line
            except MoveError as error:
                errors.append((line, str(error)))
        # Prefer the complaint about a line that at least starts like a move.
        word = table.rules.move_word
        line, reason = next(
            ((text, error) for text, error in errors if text.lower().startswith(word)), errors[0]
        )
        raise Refusal(reason, table, seat, line)

    def _refuse(self, message: Incoming, refusal: Refusal) -> None:
        table, seat = refusal.table, refusal.seat
        context: dict[str, Any] = {"reason": refusal.reason, "line": refusal.line, "legal": [],
                                   "more_legal": False,
                                   "game": None, "phase": None, "referee": self.config.address}  # fmt: skip
        if table is not None:
            context.update(self._context(table, seat))
            if seat is not None and table.open_phase and seat in table.open_phase["movers"]:
                context.update(self._legal(table, seat))
        self._reply(message, table, [message.sender], "error", context)

    # -- mail ------------------------------------------------------------------

    def _context(self, table: Table, seat: int | None = None,
                 history: bool = False) -> dict[str, Any]:  # fmt: skip
        """What templates about a game may use.  ``view`` is the seat's own view,
        or the public one when ``seat`` is None.  ``rounds`` (every resolved
        phase) only with ``history``: few mails show it, and it costs a query each."""
        phase = table.open_phase
        result = table.rules.result(table.state)
        now = self.clock()
        context = {
            "game": {
                "id": table.id, "kind": table.row["kind"], "title": table.rules.title,
                "name": table.row["name"], "tag": tag(table.row["kind"], table.id),
                "state": table.row["state"], "move_word": table.rules.move_word,
                "seed_commitment": table.row["seed_commitment"],
                "seed": table.row["seed"] if table.row["state"] == "finished" else None,
                "deadline": timedelta(seconds=table.row["deadline_seconds"]),
                "options": table.row["options"],
            },
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

    def _legal(self, table: Table, seat: int) -> dict[str, Any]:
        """The moves a seat can make now, as text for its private mail: the
        first few (``more_legal`` says whether there are others)."""
        moves = table.rules.legal_moves(table.state, seat)
        return {"legal": [table.rules.move_text(m) for m in moves[:_MAX_LEGAL_SHOWN]],
                "more_legal": len(moves) > _MAX_LEGAL_SHOWN}  # fmt: skip

    def _announce(self, table: Table, template: str, context: dict[str, Any]) -> None:
        """A public mail to every person still playing: one copy each, so each
        copy can carry that player's own reply address."""
        for seat in range(len(table.seats)):
            if table.human(seat):
                self._send(table, [table.label(seat)], template, context)

    def _send(self, table: Table, to: list[str], template: str, context: dict[str, Any]) -> None:
        subject, body = self.composer.render(template, **context)
        self._queue(table.id, to, subject, body,
                    reply_to=reply_address(self.config.address, table.row["kind"], table.id))  # fmt: skip

    def _reply(self, message: Incoming, table: Table | None, to: list[str], template: str,
               context: dict[str, Any]) -> None:  # fmt: skip
        subject, body = self.composer.render(template, **context, their_subject=message.subject)
        reply_to = table and reply_address(self.config.address, table.row["kind"], table.id)
        self._queue(table.id if table else None, to, subject, body, reply_to=reply_to,
                    in_reply_to=message.message_id,
                    references=one_line(str(message.headers.get("References", "") or "")) or None)  # fmt: skip

    def _queue(self, game_id: int | None, to: list[str], subject: str, body: str,
               **headers: Any) -> None:  # fmt: skip
        now = self.clock()
        message_id, raw = self.composer.message(to=to, subject=subject, body=body, now=now, **headers)
        self.store.queue_mail(message_id=message_id, game_id=game_id, recipients=to,
                              subject=subject, raw=raw, created_at=iso(now))  # fmt: skip
