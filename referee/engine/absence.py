"""Time away: a player's AWAY and BACK, and the deadlines an absence holds.

A seat's player may say they will be away (AWAY), for as long as the
seat's cap leaves them: ``most_away`` in the config (njudge's 15 days by
default) for all of the seat's absences in one game together.  While an
absence is in force, no deadline of a phase that waits on the seat (a
person's seat that moves in it and has not moved yet) falls inside it: such
a deadline moves to the absence's end.  That is looked at whenever a
deadline is set: when the absence is granted (the phase open then), when a
phase opens, and when a keeper's act or the outage guard moves one.  A
paused game has no deadline: its deadline is held when it resumes.  Once
the cap is spent, deadlines run as usual.

BACK ends the seat's absences not over: the one in force ends now, one
still to come is withdrawn.  A deadline already moved stays where it was
moved (every player was told it, and some may count on it); what the
absence did not use returns to the cap, unless it moved a deadline (then
the game waited for all of it).  A seat taken over by a newcomer is no
longer away either.

Each is an intervention on the game's record: the AWAY and BACK in the
player's name (a reason they give is the keepers' to read, never
published), each deadline moved by the referee (``absent``).
``record.absences`` reads them back, here and in ``record.verify``, which
checks every absence against the cap and every moved deadline against the
absence that moved it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from referee.config import Config
from referee.engine.post import Post
from referee.errors import Refusal, Why
from referee.record import away_left
from referee.store import Act, GameState, PhaseRow, Store
from referee.tables import Table, Tables
from referee.timeutil import EventClock, ceil_second, from_iso, iso

log = logging.getLogger("referee")


@dataclass(eq=False)
class Absences:
    store: Store
    config: Config
    clock: EventClock
    tables: Tables
    post: Post

    def away(self, table: Table, seat: int, start: datetime | None, until: datetime, why: str = "") -> dict[str, Any]:
        """The seat's player is away from ``start`` (None: now; never before
        now) until ``until``: on the record, the open phase's deadline held,
        the other players told when and for how long (never ``why``).  What
        the answer to the player says; Refusal, and nothing changed, when
        the time is over before it begins, overlaps an absence of theirs
        still in force, or is longer than the cap leaves them."""
        phase = table.phase_to_move()
        now = _now(self.clock(), phase)
        start = max(ceil_second(start), now) if start is not None else now
        until = ceil_second(until)
        if until <= start:
            raise Refusal(Why.AWAY_OVER, start=iso(start), until=iso(until))
        theirs = [a for a in table.absences if a.seat == seat]
        clash = next((a for a in theirs if a.ended is None and a.start < until and start < a.until), None)
        if clash is not None:
            raise Refusal(Why.AWAY_ALREADY, start=iso(clash.start), until=iso(clash.until))
        most = self.config.most_away
        left = away_left(theirs, seat, most)
        if until - start > left:
            raise Refusal(Why.AWAY_TOO_LONG, asked=until - start, left=max(left, timedelta(0)), most=most)
        cap = int(most.total_seconds())
        detail: dict[str, Any] = {"seat": seat, "from": iso(start), "until": iso(until), "most_away": cap}
        self.store.intervene(table.id, phase["number"], iso(now), Act.AWAY, table.label(seat), why.strip(), **detail)
        log.info("game %d %s: seat %d away until %s", table.id, phase["label"], seat + 1, iso(until))
        held = self.hold(table.id)
        table = self.tables.table(table.id)
        context = {
            **self.post.context(table),
            "seat": seat,
            "who": table.label(seat),
            "start": iso(start),
            "until": iso(until),
            "length": until - start,
            "held": held,
            "paused": table.paused is not None,
        }
        self.post.announce(table, "away", context, skip=seat)  # the player's own answer says it
        return {**context, "left": left - (until - start)}

    def back(self, table: Table, seat: int) -> dict[str, Any]:
        """The seat's player is back: their absences not over end now (one
        to come is withdrawn); a deadline moved stays.  What the answer says;
        Refusal when they are not away and have no absence to come."""
        phase = table.phase_to_move()
        now = _now(self.clock(), phase)
        ending = [a for a in table.absences if a.seat == seat and a.ended is None and a.until > now]
        if not ending:
            raise Refusal(Why.NOT_AWAY)
        self.store.intervene(table.id, phase["number"], iso(now), Act.BACK, table.label(seat), "", seat=seat)
        log.info("game %d %s: seat %d back", table.id, phase["label"], seat + 1)
        table = self.tables.table(table.id)
        context = {
            **self.post.context(table),
            "seat": seat,
            "who": table.label(seat),
            "was_away": [{"start": iso(a.start), "until": iso(a.until)} for a in ending if a.start <= now],
            "planned": [{"start": iso(a.start), "until": iso(a.until)} for a in ending if a.start > now],
            "held": any(a.held for a in ending),
        }
        self.post.announce(table, "back", context, skip=seat)
        return {**context, "left": away_left(table.absences, seat, self.config.most_away)}

    def hold(self, game_id: int, at: datetime | None = None) -> list[dict[str, Any]]:
        """The open phase's deadline, if it falls inside an absence in force
        of a seat the phase waits on, moved to the absence's end (again, if
        that falls inside another's), each move an intervention by the
        referee dated ``at`` (by default now), what was moved, for the mail
        that tells of it.  Nothing while the game is paused: its deadline
        moves when it resumes.  Where the record says when it happens (a
        phase's opening, a pause's end), ``at`` is that, so that what a
        restore does again is dated as it was the first time."""
        table = self.tables.table(game_id)
        phase = table.open_phase
        if phase is None or table.paused or table.row["state"] != GameState.RUNNING or not table.absences:
            return []
        away = {a.seat for a in table.absences}
        waiting = [s for s in table.waiting_for(phase) if s in away and table.human(s) and not _forced(table, s)]
        when = iso(_now(at or self.clock(), phase))
        deadline = from_iso(phase["deadline"])
        held: list[dict[str, Any]] = []
        for _ in table.absences:  # each moves it later, so at most once each
            absence = next((a for a in table.absences if a.seat in waiting and a.holds(deadline)), None)
            if absence is None:
                break
            until = iso(absence.until)
            self.store.intervene(
                game_id, phase["number"], when, Act.ABSENT, None, "", deadline=until, seat=absence.seat
            )
            held.append({"seat": absence.seat, "who": table.label(absence.seat), "old": iso(deadline), "until": until})
            deadline = absence.until
        if held:
            self.store.update_phase(game_id, phase["number"], reminded_at=None)  # a reminder before the new one
            log.info("game %d %s: deadline held to %s (time away)", game_id, phase["label"], iso(deadline))
        return held


def _now(now: datetime, phase: PhaseRow) -> datetime:
    """Now, but never before the open phase opened (a catch-up's clock)."""
    return max(now, from_iso(phase["opened_at"])).replace(microsecond=0)


def _forced(table: Table, seat: int) -> bool:
    """Whether the seat has one legal move: it makes it as the phase opens
    (Pure Skill's round 13), so the phase does not wait on it."""
    return len(table.rules.legal_moves(table.state, seat)) == 1
