"""What happens with time and no mail: deadlines enforced, settle windows
closed, reminders and daily digests sent, and the outage guard that moves a
deadline the referee slept through instead of filling in random moves for it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from referee.config import Config
from referee.engine.absence import Absences
from referee.engine.delegating import Delegating
from referee.engine.keeping import Keeping
from referee.engine.notices import Notices
from referee.engine.offers import Offers
from referee.engine.phases import Phases
from referee.engine.post import Post
from referee.engine.seating import Seating
from referee.store import Act, PhaseRow, Store
from referee.tables import Table, Tables, reminder_time
from referee.timeutil import EventClock, from_iso, iso

log = logging.getLogger("referee")

_MOST_CATCH_UP_TICKS = 100_000  # each does what is due at its moment; a bound, should one not
# Every table next_due reads (a test holds it to what SQLite says it reads):
# while none of them is written, what falls due stays as it was (Timers.due_stamp).
NEXT_DUE_READS = (
    "games",
    "seats",
    "phases",
    "interventions",
    "offers",
    "delegations",
    "told",
    "watchers",
    "reader_told",
    "signups",
)


@dataclass(eq=False)
class Timers:
    store: Store
    config: Config
    clock: EventClock
    tables: Tables
    post: Post
    phases: Phases
    keeping: Keeping
    absences: Absences
    offers: Offers
    delegating: Delegating
    notices: Notices
    seating: Seating  # (a sign-up game whose window has passed starts)

    def tick(self, guard: bool = True) -> list[str]:
        """Guard against an outage, end the pauses whose time has come, close
        the offers no one answered in time, end the stand-ins' turns whose time
        has come, start the sign-up games whose window has passed, enforce deadlines and settle windows, send due reminders and
        daily digests; returns what it did, one line each.  A paused game has
        no deadline."""
        now = self.clock()
        # Pauses whose time has come end first, so that the outage guard
        # sees their deadlines (moved by the pause) and extends one it slept
        # through, as any other.
        done = self.keeping.resume_due()
        done += self.offers.expire_due()
        done += self.delegating.end_due()
        done += self.guard_outage() if guard else []
        done += self.seating.start_due()
        paused = self.store.paused()
        # Only the phases with something due are read, by index (and only
        # their games replayed): the cost of a tick follows the work it
        # does, not the games running.
        for phase in self.store.due_phases(iso(now)):
            if phase["game_id"] not in paused and self._due(phase, now):
                with self.store.transaction():
                    resolved = self.phases.advance(phase["game_id"], deadlines=True)
                    done += [f"resolved {line}" for line in resolved]
        # A reminder falls the configured lead before a deadline: only the
        # phases whose deadline is that near can be due one.
        lead = self.config.reminder
        for phase in self.store.phases_due_between(iso(now), iso(now + lead)) if lead is not None else []:
            if phase["game_id"] in paused:
                continue
            remind = self._reminder_time(phase)
            if remind is not None and remind <= now < from_iso(phase["deadline"]):
                with self.store.transaction():
                    done += self._remind(self.tables.table(phase["game_id"]), phase, now)
        done += self.notices.digests()
        with self.store.transaction():
            if self.config.keep_sent_mail is not None:
                self.store.forget_sent_bodies(iso(now - self.config.keep_sent_mail))
            if self.config.keep_received_mail is not None:  # an hour's worth at a time
                cut = (now - self.config.keep_received_mail).replace(minute=0, second=0, microsecond=0)
                self.store.forget_received_bodies(iso(cut))
            # Never back: a catch-up ticks as of moments past.
            self.store.set_meta("last_tick", max(iso(now), self.store.get_meta("last_tick") or ""))
        return done

    @staticmethod
    def _due(phase: PhaseRow, now: datetime) -> bool:
        """Whether a phase's deadline or settle time has come (Phases decides the rest)."""
        closes = phase["closes_at"]
        return now >= from_iso(phase["deadline"]) or (closes is not None and now >= from_iso(closes))

    def catch_up(self, until: datetime) -> list[str]:
        """Do what fell due before ``until`` as a referee running all along
        would have: tick as of each deadline, settle end and reminder time in
        turn (no outage guard: there was no outage).  Mail handled again
        after a restore is handled after this, as of its receipt time; what
        falls due in the very second it was received waits, as a move
        received at a deadline or a close still counts (R8)."""
        done: list[str] = []
        for _ in range(_MOST_CATCH_UP_TICKS):
            moments = [moment for moment in self.next_due() if moment < until]
            if not moments:
                break
            with self.clock.at(min(moments)):
                done += self.tick(guard=False)
        return done

    def next_due(self, game_id: int | None = None) -> list[datetime]:
        """When tick() next has work (its callers take the earliest): every
        stand-in's turn's end, every open offer's lapse, each daily digest
        due, the end of each sign-up game's window and each pause's end;
        and of the open phases, each one's deadline, settle end and
        reminder time with ``game_id`` (that game's alone), else the first
        of each (by index: not every open phase read)."""
        moments = self.delegating.ends(game_id)  # (a stand-in's turn ends at its time, paused or not)
        moments += [from_iso(offer["expires_at"]) for offer in self.store.open_offers(game_id=game_id)]
        moments += self.notices.digests_due(game_id)
        moments += self.seating.windows_end(game_id)
        paused = self.store.paused()
        if game_id is None:  # a paused game has no deadline: only its pause's end, if it has one
            moments += [from_iso(until) for pause in paused.values() if (until := pause["detail"].get("until"))]
            return moments + self._first_phase_moments(set(paused))
        for phase in self.store.open_phases(game_id):
            if phase["game_id"] in paused:
                until = paused[phase["game_id"]]["detail"].get("until")
                moments += [from_iso(until)] if until else []
                continue
            moments += self._phase_moments(phase)
        return moments

    def due_stamp(self) -> tuple[int, ...]:
        """A value that changes whenever next_due's answer may have (a write
        to a table it reads, a rollback, another process's commit): next_due
        reads no clock, so with the same stamp it answers the same."""
        return self.store.written(NEXT_DUE_READS)

    def _phase_moments(self, phase: PhaseRow) -> list[datetime]:
        """An open phase's deadline, settle end and reminder time (those it has)."""
        remind = self._reminder_time(phase)
        closes = phase["closes_at"]
        return [from_iso(phase["deadline"]), *([from_iso(closes)] if closes else []), *([remind] if remind else [])]

    def _first_phase_moments(self, paused: set[int]) -> list[datetime]:
        """The first deadline, settle end and reminder time of the open
        phases of the games not paused: a phase's reminder falls the same
        lead before its deadline, so the first is that of the first
        deadline among the phases still to be reminded and long enough to
        be (tables.reminder_time)."""
        lead = self.config.reminder
        firsts = [
            self.store.first_open_phase("deadline", paused),
            self.store.first_open_phase("closes_at", paused),
            self.store.first_open_phase("deadline", paused, lead.total_seconds()) if lead is not None else None,
        ]
        deadline, closes, reminded = firsts
        moments = [from_iso(deadline["deadline"])] if deadline else []
        moments += [from_iso(closes["closes_at"])] if closes and closes["closes_at"] else []
        remind = self._reminder_time(reminded) if reminded else None
        return moments + ([remind] if remind else [])

    # -- the outage guard --------------------------------------------------

    def guard_outage(self) -> list[str]:
        """If the referee did not run for longer than the configured gap and a
        deadline fell in that time with moves still owed, extend it by the
        grace instead of filling in random moves.  Runs before mail is read,
        so a move received after the old deadline is taken too."""
        last_run = self.store.get_meta("last_tick")
        if not last_run:
            return []
        now, done, last = self.clock(), [], from_iso(last_run)
        gap = self.config.outage_gap
        if gap is None or now - last <= gap:
            return []
        paused = self.store.paused()
        for phase in self.store.phases_due_between(iso(last), iso(now)):
            if phase["game_id"] in paused or not last < from_iso(phase["deadline"]) <= now:
                continue  # no deadline slept through: nothing to read
            with self.store.transaction():
                table = self.tables.table(phase["game_id"])
                if self._missed_in_outage(table, phase, last, now):
                    done.append(self._extend_after_outage(table, phase, last, now))
        return done

    def _missed_in_outage(self, table: Table, phase: PhaseRow, last_run: datetime, now: datetime) -> bool:
        """Whether the referee was down past this phase's deadline (longer than
        the configured gap), with moves still owed: then nobody gets a random
        move for a deadline the referee slept through."""
        gap = self.config.outage_gap
        deadline = from_iso(phase["deadline"])
        return (
            gap is not None and now - last_run > gap and last_run < deadline <= now and bool(table.waiting_for(phase))
        )

    def _extend_after_outage(self, table: Table, phase: PhaseRow, last_run: datetime, now: datetime) -> str:
        new = iso(now + self.config.outage_grace)
        reason = f"the referee did not run from {iso(last_run)} to {iso(now)}"
        self.store.intervene(table.id, phase["number"], iso(now), Act.OUTAGE, None, reason, deadline=new)
        held = self.absences.hold(table.id)  # a seat away then: on to its absence's end
        # The notice below tells everyone the new deadline: it is the reminder too.
        self.store.update_phase(table.id, phase["number"], reminded_at=iso(now))
        table = self.tables.table(table.id)
        context = {
            **self.post.context(table),
            "old_deadline": phase["deadline"],
            "down_from": iso(last_run),
            "down_to": iso(now),
            "held": held,
        }
        self.post.announce(table, "extended", context)
        log.warning(
            "game %d %s: %s, past its deadline %s; deadline moved to %s",
            table.id,
            phase["label"],
            reason,
            phase["deadline"],
            new,
        )
        return f"extended game {table.id} {phase['label']} to {new}: {reason}"

    # -- reminders ---------------------------------------------------------

    def _reminder_time(self, phase: PhaseRow) -> datetime | None:
        """When to remind the players who still owe a move (tables.reminder_time,
        which the seats' own calendars show too), unless the reminder went out
        already."""
        return None if phase["reminded_at"] else reminder_time(phase, self.config.reminder)

    def _remind(self, table: Table, phase: PhaseRow, now: datetime) -> list[str]:
        """One private reminder per phase to each person who still owes a move,
        the configured lead time before the deadline."""
        remind = self._reminder_time(phase)
        if remind is None or not remind <= now < from_iso(phase["deadline"]):
            return []
        waiting = [seat for seat in table.waiting_for(phase) if table.human(seat)]
        for seat in waiting:
            context = {**self.post.context(table, seat), **self.post.legal(table, seat)}
            self.post.send(table, seat, "reminder", context)
        self.store.update_phase(table.id, phase["number"], reminded_at=iso(now))
        return [f"reminded {len(waiting)} player(s) in game {table.id} {phase['label']}"] if waiting else []
