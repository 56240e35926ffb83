"""A game's phases, one after another: open one (prompt its movers, let bots
and forced seats move), take moves by mail, resolve it when it is due (fill
missing moves at random, announce the result), open the next or end the game.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from referee.config import Config
from referee.engine.absence import Absences
from referee.engine.notices import News, Notices
from referee.engine.post import Post
from referee.errors import EngineError, Refusal, Why
from referee.mail.parse import Incoming
from referee.mail.tokens import phase_answered
from referee.record import MoveSource, digest_line, random_move_rng
from referee.standings import table_results
from referee.store import GameState, OfferKind, OutcomeCode, PhaseRow, Store
from referee.tables import Table, Tables, deadlines
from referee.timeutil import EventClock, ceil_second, from_iso, iso

log = logging.getLogger("referee")
_SETTLE_TO_THE_SECOND = 300  # seconds: a settle window shorter than this is told to the second


def _closes_to_the_second(table: Table) -> bool:
    """Whether the close of a phase of ``table`` is told to the second: a
    window of seconds closes at a second, not at a minute that may be over
    before the mail is read."""
    return (table.row["settle_seconds"] or 0) < _SETTLE_TO_THE_SECOND


def _same_minute(received: datetime, limit: str) -> bool:
    """Whether a mail received after ``limit`` came within its minute, so
    that the two told to the minute would read as the same time: told to
    the second, they show which came first."""
    return received.replace(second=0, microsecond=0) == from_iso(limit).replace(second=0, microsecond=0)


# A phase the referee opens more than this part of its deadline after it
# became due (and never more than the outage gap) has its deadline counted
# from the moment it is opened.  A daemon opens within seconds, cron within
# its interval: well inside it, so their deadlines follow from the record.
LATE_OPEN = 0.1


@dataclass(eq=False)
class Phases:
    store: Store
    config: Config
    clock: EventClock
    tables: Tables
    post: Post
    absences: Absences
    notices: Notices

    # -- moving a game on --------------------------------------------------

    def advance(self, game_id: int, deadlines: bool = False) -> list[str]:
        """Take the game as far as it can go now; returns the phases resolved.

        Only Timers.tick passes ``deadlines``: it alone enforces deadlines,
        after its outage guard, so reading a backlog of mail after an outage
        never fills in random moves for a deadline the referee slept through."""
        resolved: list[str] = []
        while True:
            table = self.tables.table(game_id)
            if table.row["state"] != GameState.RUNNING:
                return resolved
            phase = table.open_phase
            if phase is None:  # a new game (it starts now): open its first phase
                first = self._insert(table, self.clock())
                if first is None:
                    raise EngineError(f"game {game_id} is over before its first phase")
                self._start(table, first)
                continue
            if table.paused or not self._due(phase, deadlines):  # a paused game waits for its keeper
                return resolved
            self._resolve(table, phase)
            resolved.append(f"game {game_id} {phase['label']}")

    def _insert(self, table: Table, opens: datetime) -> PhaseRow | None:
        """Record the next phase the rules ask for, opening at ``opens``, or
        None if the game is over.  A phase opens the moment the one before it
        became due (R5: "a round opens when the previous one is resolved"),
        and its deadline counts from then: it follows from the mail and the
        record alone.  But if the referee comes to open it late (LATE_OPEN:
        it was not running, or read the mail that completed the one before
        late), it opens when its prompt goes out, and its deadline counts
        from then, so the players still get the whole of it (and a referee
        that was down does not play phase after phase at random).  A
        deadline that falls inside the absence of a seat it waits on moves
        to the absence's end (Absences.hold), before anyone is told it."""
        phase = table.rules.phase(table.state)
        if phase is None:
            return None
        length = deadlines(table.row)[phase.deadline_kind]
        awake, gap = self.clock.awake(), self.config.outage_gap
        late = min(length * LATE_OPEN, gap) if gap is not None else length * LATE_OPEN
        if awake - opens > late:
            opens = awake.replace(microsecond=0)  # (a reply received in this second is in it)
        added = self.store.add_phase(
            table.id,
            len(table.phases) + 1,
            phase.label,
            list(phase.movers),
            phase.sealed,
            iso(opens),
            iso(ceil_second(opens + length)),
        )
        if table.absences and self.absences.hold(table.id, at=opens):  # (none: nothing to read)
            added = self.store.phase(table.id, added["number"]) or added
        return added

    def _start(self, table: Table, phase: PhaseRow, held: dict[int, News] | None = None) -> None:
        """Prompt each human mover privately; bots move at once, and so does
        anyone with one legal move (Pure Skill's round 13), instead of waiting.
        ``held``: private news of a result its seat was not sent (Notices.result),
        at the top of its prompt, else in a mail of its own."""
        table = self.tables.table(table.id)
        held = dict(held or {})
        opened = from_iso(phase["opened_at"])  # what the referee does at once is dated then
        prompted: dict[int, News | None] = {}
        for seat in phase["movers"]:
            if not table.human(seat):
                continue
            legal = table.rules.legal_moves(table.state, seat)
            if len(legal) == 1:
                self._record_move(table, phase, seat, legal[0], MoveSource.FORCED, opened)
            else:
                prompted[seat] = held.pop(seat, None)
        self.notices.prompts(table, prompted)
        self.notices.news(table, held)
        self.bot_moves(table, phase, opened)

    def bot_moves(self, table: Table, phase: PhaseRow, now: datetime) -> None:
        """Bots (rule 8) never wait for a deadline: they move as soon as they
        owe a move, but for a seat offered to someone on standby, whose bot
        waits for them (or for its deadline) while the offer is open: the
        newcomer plays the phase they take the seat in (engine.standby)."""
        moved = self.tables.table(table.id).counted.get(phase["number"], {})  # (the moves as they stand now)
        offered = {offer["seat"] for offer in self.store.open_offers(OfferKind.SEAT, table.id)}
        for seat in phase["movers"]:
            if not table.human(seat) and seat not in moved and seat not in offered:
                self._random_move(table, phase, seat, MoveSource.BOT, now)
        self._note_complete(table.id, phase["number"])

    def _random_move(self, table: Table, phase: PhaseRow, seat: int, source: MoveSource, at: datetime) -> None:
        rng = random_move_rng(table.seed, phase["number"], seat)
        self._record_move(table, phase, seat, table.rules.random_move(table.state, seat, rng), source, at)

    def _record_move(
        self, table: Table, phase: PhaseRow, seat: int, move: Any, source: MoveSource, at: datetime
    ) -> None:
        """A move the referee makes for a seat: random, a bot's, or forced."""
        text = table.rules.move_text(move)
        self.store.add_move(
            game_id=table.id,
            phase=phase["number"],
            seat=seat,
            move=text,
            source=source,
            message_key=None,
            received_at=iso(at),
            recorded_at=iso(self.clock()),
        )
        log.debug("game %d %s: %s move for seat %d: %s", table.id, phase["label"], source, seat + 1, text)

    def _note_complete(self, game_id: int, number: int) -> None:
        """When the last owed move is in, fix when the phase closes: when the
        last of the moves counted was received (R6), or the game's settle
        delay after it if a person moved by mail (changes still count).
        The last received, not the last read: mail is not always read in
        the order it came."""
        table = self.tables.table(game_id)
        phase = table.phases[number - 1]
        if phase["closes_at"] or table.waiting_for(phase):
            return
        counted = table.counted.get(number, {}).values()
        closes = max(from_iso(move["received_at"]) for move in counted)
        by_mail = any(move["source"] == MoveSource.MAIL for move in counted)
        if phase["sealed"] and by_mail and table.row["settle_seconds"]:
            closes = min(closes + timedelta(seconds=table.row["settle_seconds"]), from_iso(phase["deadline"]))
        self.store.update_phase(game_id, number, closes_at=iso(closes))

    @staticmethod
    def due_at(phase: PhaseRow) -> datetime:
        """The moment a due phase became due: when it closed with every move
        in, else its deadline.  It is resolved as of then, and the next phase
        opens then, however late the referee comes to it."""
        return from_iso(phase["closes_at"] or phase["deadline"])

    def _due(self, phase: PhaseRow, deadlines: bool = True) -> bool:
        """Whether the phase should resolve now: all moves in and any settle
        time over, or (when ``deadlines`` are enforced) its deadline passed."""
        now = self.clock()
        if deadlines and now >= from_iso(phase["deadline"]):
            return True
        return phase["closes_at"] is not None and now >= from_iso(phase["closes_at"])

    def _resolve(self, table: Table, phase: PhaseRow) -> None:
        before = table.state
        deadline = from_iso(phase["deadline"])
        for seat in table.waiting_for(phase):  # 4e: a random bid for a missed deadline
            # (a bot that waited for a newcomer who never came moves as a bot, at the deadline)
            source = MoveSource.RANDOM if table.human(seat, phase["number"]) else MoveSource.BOT
            self._random_move(table, phase, seat, source, deadline)
        resolved = self.due_at(self.tables.table(table.id).phases[phase["number"] - 1])  # (as it stands now)
        self.store.update_phase(table.id, phase["number"], resolved_at=iso(resolved))
        table = self.tables.table(table.id)
        after = self._insert(table, resolved)
        table = self.tables.table(table.id)
        context = {
            **self.post.context(table),
            "round": self.post.round_context(table, phase["number"]),
            "digest": digest_line(phase["label"], table.digest()),
        }
        held = self.notices.result(table, phase, context, before)
        log.info("game %d %s resolved", table.id, phase["label"])
        if after is None:
            self._finish(table, resolved, held)
        else:
            self._start(table, after, held)

    def _finish(self, table: Table, at: datetime, held: dict[int, News]) -> None:
        """The final result, to everyone (``held``: private news of the last
        phase for seats not sent its result, at the top of theirs)."""
        self.store.finish_game(table.id, iso(at))
        table = self.tables.table(table.id)
        self.store.add_results(table.id, table_results(table))  # what the standings count
        digest = digest_line(None, table.end_digest(), end=True)
        context = {**self.post.context(table, history=True), "digest": digest, "digest_help": "end"}
        # Those who left get it too: the only mail that covers the rounds
        # played after the last of them left (and they played the game).
        preface = self.notices.final_news(table, held)
        self.post.announce(table, f"{table.row['kind']}/final", context, leavers=True, preface=preface)
        log.info("game %d finished", table.id)

    # -- a move by mail (the Desk reads the message and calls this) -----------

    def take_move(self, table: Table, seat: int, move: Any, message: Incoming) -> tuple[OutcomeCode, dict[str, Any]]:
        """Record a seat's move from a message, if the message came in time;
        returns its outcome code (move, replaced, superseded) and what the
        receipt shows.  Refusal when the phase is not open to it.  The phase
        is not resolved here, even if this was the last move it waited for:
        the message's reply goes first, then ``advance`` resolves it."""
        phase = table.phase_to_move()
        received = message.received_at
        self.check_thread(table, phase, seat, message)
        self._check_timing(table, phase, seat, received)
        earlier = table.counted.get(phase["number"], {}).get(seat)
        if earlier and not phase["sealed"]:  # two moves in one mail: the first one stands
            raise Refusal(Why.MOVED_ALREADY, phase=phase["label"], move=earlier["move"])
        text = table.rules.move_text(move)
        self.store.add_move(
            game_id=table.id,
            phase=phase["number"],
            seat=seat,
            move=text,
            source=MoveSource.MAIL,
            message_key=message.key,
            received_at=iso(received),
            recorded_at=iso(self.clock()),
        )
        self._note_complete(table.id, phase["number"])
        table = self.tables.table(table.id)
        # Read out of order, a move the server received before one already
        # recorded does not replace it: the last one received counts.
        counting = table.counted[phase["number"]][seat]
        superseded = counting["move"] if counting["message_key"] != message.key else None
        context = {
            **self.post.context(table, seat),
            "move": text,
            "replaced": earlier["move"] if earlier and not superseded else None,
            "superseded": superseded,
            "waiting": [table.label(s) for s in table.waiting_for(phase)],
            "settling": not self._due(table.phases[phase["number"] - 1]),
            "closes_to_the_second": _closes_to_the_second(table),
        }
        log.info("game %d %s: move accepted from seat %d", table.id, phase["label"], seat + 1)
        code = OutcomeCode.SUPERSEDED if superseded else OutcomeCode.REPLACED if earlier else OutcomeCode.MOVE
        return code, context

    def check_thread(self, table: Table, phase: PhaseRow, seat: int, message: Incoming) -> None:
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
        mover = seat in phase["movers"]  # else who the open phase waits for is said
        waiting = [] if mover else [table.label(s) for s in table.waiting_for(phase)]
        received = message.received_at
        if not meant["closes_at"] and received > from_iso(meant["deadline"]):  # it missed the deadline
            raise Refusal(
                Why.LATE_FOR_THREAD,
                legal=True,
                received=received,
                phase=meant["label"],
                deadline=meant["deadline"],
                seconds=_same_minute(received, meant["deadline"]),
                now=phase["label"],
                mover=mover,
                waiting=waiting,
            )
        raise Refusal(
            Why.THREAD_OVER, legal=True, phase=meant["label"], now=phase["label"], mover=mover, waiting=waiting
        )

    def _check_timing(self, table: Table, phase: PhaseRow, seat: int, received: datetime) -> None:
        """Refuse a move the server received outside its phase, or from a seat
        that does not move in it."""
        if received < from_iso(phase["opened_at"]):
            raise Refusal(Why.BEFORE_OPEN, received=received, phase=phase["label"])
        if table.paused:  # no deadline while paused: it moves on by the pause when it ends
            self.check_mover(table, phase, seat)
            return
        if received > from_iso(phase["deadline"]):
            raise Refusal(
                Why.AFTER_DEADLINE,
                received=received,
                phase=phase["label"],
                deadline=phase["deadline"],
                seconds=_same_minute(received, phase["deadline"]),
            )
        if phase["closes_at"] and received > from_iso(phase["closes_at"]):
            raise Refusal(
                Why.AFTER_CLOSE,
                received=received,
                phase=phase["label"],
                closed=phase["closes_at"],
                seconds=_closes_to_the_second(table) or _same_minute(received, phase["closes_at"]),
            )
        self.check_mover(table, phase, seat)

    @staticmethod
    def check_mover(table: Table, phase: PhaseRow, seat: int) -> None:
        """Refuse a seat that does not move in ``phase``, naming who does, or
        whose bot moves in it (a person took the bot's seat over in it)."""
        if not table.human(seat, phase["number"]):
            raise Refusal(Why.NOT_YET_YOURS, phase=phase["label"])
        if seat not in phase["movers"]:
            raise Refusal(
                Why.NOT_YOUR_MOVE, phase=phase["label"], waiting=[table.label(s) for s in table.waiting_for(phase)]
            )
