"""The keeper's hands: extend a deadline, pause and resume a game, cancel
it, put a newcomer in a seat, and speak to the table.

Each act is an intervention on the game's record (store.intervene): who,
when, what and why, with what a replay needs (record.verify checks every
deadline against them). Each is announced to the players at once, in the
caller's transaction, like any other change of a game.

The caps (config: ``longest_extension`` for one extension, ``most_pause``
for all of a game's pauses together) bind a keeper by mail; the shell may
go past them with ``force``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from referee.config import Config
from referee.engine.absence import Absences
from referee.engine.delegating import Delegating, stands_in
from referee.engine.phases import Phases
from referee.engine.post import Post
from referee.engine.seating import check_player_address
from referee.errors import EngineError
from referee.record import digest_line
from referee.store import Act, InterventionRow, PhaseRow, Store
from referee.tables import Table, Tables, deadlines
from referee.timeutil import EventClock, ceil_second, from_iso, iso, show_duration

log = logging.getLogger("referee")

SHELL = "shell"  # who acted, for the keeper at the shell (a keeper by mail is their address)
_LONGEST_SAY = 4000  # characters: the keeper's words, a few paragraphs at most


@dataclass(eq=False)
class Keeping:
    store: Store
    config: Config
    clock: EventClock
    tables: Tables
    post: Post
    phases: Phases
    absences: Absences
    delegating: Delegating  # a seat's stand-in, whose turn ends when the seat is given to a newcomer

    # -- deadlines --------------------------------------------------------

    def extend(
        self, game_id: int, length: timedelta, who: str, why: str = "", force: bool = False, phase: int | None = None
    ) -> str:
        """The open phase's deadline, ``length`` later (only if the open
        phase is ``phase``, when given)."""
        table, open_ = self._open(game_id, phase)
        if length <= timedelta(0):
            raise EngineError("an extension must be longer than nothing")
        if length > self.config.longest_extension and not force:
            raise EngineError(
                f"an extension of {show_duration(length)} is longer than the longest allowed "
                f"({show_duration(self.config.longest_extension)}, longest_extension in [keepers]): "
                f"ask for less{', or add --force' if who == SHELL else ''}"
            )
        if table.paused:
            raise EngineError(f"game {game_id} is paused: its deadline moves when it is resumed")
        new = iso(from_iso(open_["deadline"]) + length)
        self._intervene(table, open_, Act.EXTEND, who, why, deadline=new)
        self.store.update_phase(game_id, open_["number"], reminded_at=None)  # a reminder before the new one
        held = self.absences.hold(game_id)  # (a seat away then: on to its absence's end)
        self._announce(game_id, "keeper/extended", old=open_["deadline"], why=why, held=held)
        return f"game {game_id} {open_['label']}: deadline moved from {open_['deadline']} to {new}" + _held(held)

    # -- pauses -------------------------------------------------------------

    def pause(self, game_id: int, who: str, why: str = "", until: datetime | None = None, force: bool = False) -> str:
        """No deadline, reminder, random move or resolution until resumed
        (by the keeper, or at ``until``); moves by mail are still taken.
        Without ``force`` a pause ends by itself when the game's pauses
        reach ``most_pause`` together."""
        table, open_ = self._open(game_id)
        if table.paused:
            raise EngineError(f"game {game_id} is paused already")
        now = self._now(open_)
        if until is not None and until <= now:
            raise EngineError(f"a pause until {iso(until)} would end before it began")
        if not force:
            left = self.config.most_pause - paused_for(table.interventions)
            if left <= timedelta(0) or (until is not None and until - now > left):
                raise EngineError(
                    f"game {game_id} may be paused for {show_duration(max(left, timedelta(0)))} more "
                    f"(most_pause in [keepers] allows {show_duration(self.config.most_pause)} in all)"
                    + (": add --force to go past it" if who == SHELL else "")
                )
            until = until or ceil_second(now + left)
        self._intervene(table, open_, Act.PAUSE, who, why, until=until and iso(until))
        self._announce(game_id, "keeper/paused", why=why)
        return f"game {game_id} paused" + (f" until {iso(until)}" if until else "")

    def resume(self, game_id: int, who: str | None, why: str = "") -> str:
        """End the pause (``who`` None: the referee, at the time the pause
        named): the deadline moves by the pause's length, and a phase whose
        moves all came meanwhile is resolved."""
        table, open_ = self._open(game_id)
        pause = table.paused
        if pause is None:
            raise EngineError(f"game {game_id} is not paused")
        at = iso(self.clock()) if who is not None else pause["detail"]["until"]
        length = from_iso(at) - from_iso(pause["at"])
        new = iso(from_iso(open_["deadline"]) + length)
        closes = open_["closes_at"]
        if closes is not None and closes < at:  # every move came during the pause: it closes now
            self.store.update_phase(game_id, open_["number"], closes_at=at)
        self.store.intervene(game_id, open_["number"], at, Act.RESUME, who, why, deadline=new)
        self.store.update_phase(game_id, open_["number"], reminded_at=None)
        held = self.absences.hold(game_id, at=from_iso(at))  # the deadline no absence could hold while paused
        self._announce(game_id, "keeper/resumed", old=open_["deadline"], paused_at=pause["at"], why=why, held=held)
        with self.clock.at(max(from_iso(at), self.clock())):
            self.phases.advance(game_id)
        return f"game {game_id} resumed: deadline moved from {open_['deadline']} to {new}" + _held(held)

    def resume_due(self) -> list[str]:
        """Resume every pause whose time has come (Timers.tick)."""
        now = iso(self.clock())
        done = []
        for game_id, pause in self.store.paused().items():
            until = pause["detail"].get("until")
            if until is not None and until <= now:
                with self.store.transaction():
                    done.append(self.resume(game_id, None))
        return done

    # -- the end of a game ------------------------------------------------------

    def cancel(self, game_id: int, who: str, why: str) -> str:
        """The game ends here, without a winner; its seed is published with
        its record, so every phase played can still be checked."""
        if not why.strip():
            raise EngineError("say why the game is cancelled: the players are told")
        table, open_ = self._open(game_id)
        at = self._intervene(table, open_, Act.CANCEL, who, why)
        self.store.finish_game(game_id, at)
        table = self.tables.table(game_id)
        digest = digest_line(None, table.end_digest(), end=True)
        context = {
            **self.post.context(table),
            "why": why,
            "phase": open_,
            "digest": digest,
            "digest_help": "end",
            "over": True,
        }
        self.post.announce(table, "keeper/cancelled", context, leavers=True)
        log.info("game %d cancelled by %s", game_id, who)
        return f"game {game_id} cancelled in {open_['label']}"

    # -- seats -------------------------------------------------------------

    def replace(self, game_id: int, seat_named: str, address: str, who: str | None, why: str = "") -> str:
        """``address`` takes over a seat (named by its player's address, its
        number or "bot N"): the seat's reply address, hand and history stay
        with it; the newcomer is sent everything the seat knows and, if the
        seat owes a move now, the whole deadline for it.  ``who`` None: the
        referee, for a person on standby who accepted a seat its player left
        (engine.standby); whoever left it was told they get no more mail."""
        address = address.strip().lower()
        check_player_address(address, self.config.address)
        table, open_ = self._open(game_id)
        seat = find_seat(table, seat_named)
        if table.seat_of(address) is not None:
            raise EngineError(f"{address} plays a seat in game {game_id} already")
        if (other := stands_in(self.store, game_id, address, iso(self.clock()), other_than=seat)) is not None:
            raise EngineError(
                f"{address} stands in for seat {other + 1} of game {game_id}, or is asked to: "
                "nobody plays two seats of one game"
            )
        was, was_name, bot = table.seats[seat]["address"], table.names[seat], not table.human(seat)
        if bot and not table.rules.bots_replaceable:
            raise EngineError(f"{table.rules.title}'s rules keep a bot's seat a bot's: nobody may take it over")
        now = self._now(open_)
        # A bot never owes a move, but one that waits for a person on standby offered its seat (engine.standby):
        # the newcomer plays that phase, as a person taking over a person's seat does.
        owes = seat in table.waiting_for(open_)
        length = deadlines(table.row)[table.rules.phase(table.state).deadline_kind]  # type: ignore[union-attr]
        fresh = iso(now + length) if owes and iso(now + length) > open_["deadline"] else None
        others = [name for other, name in enumerate(table.names) if other != seat]
        self.delegating.seat_changed(game_id, seat, f"seat {seat + 1} was given to a newcomer")
        self.store.take_seat(game_id, seat, address)
        self.store.set_notify(game_id, seat, None)  # how much mail the one who left wanted was theirs: the game's
        # What the one who left was told was theirs too: the welcome shows where the seat stands now, so
        # the newcomer's "since your last mail" and first digest start here (Notices), not at the last
        # phase the one who left was told of.
        self.store.set_told(game_id, [seat], len(table.replay.steps), digest_at=iso(now))
        detail = {
            "seat": seat,
            "address": address,
            "was_address": was,
            "was": was_name,
            "name": _newcomers_name(address, others),
            "bot_from_phase": table.seats[seat]["bot_since_phase"] if bot else None,
            "left_at": table.seats[seat]["resigned_at"] if bot else None,
            "bot_waited": bot and owes,
        }
        self._intervene(table, open_, Act.REPLACE, who, why, at=now, deadline=fresh, **detail)
        if fresh is not None:
            self.store.update_phase(game_id, open_["number"], reminded_at=None)  # a reminder before the new one
        # (The seat's absences end with its player's time in it; another seat's may hold the fresh deadline.)
        held = self.absences.hold(game_id) if fresh is not None else []
        table = self.tables.table(game_id)
        context = {
            **self.post.context(table),
            "seat": seat,
            "was": was_name,
            "name": detail["name"],
            "why": why,
            "old": open_["deadline"] if fresh else None,
            "held": held,
            "standby": who is None,
            "bot_moved": bot
            and seat in open_["movers"]
            and not owes,  # its move in the open phase stands (record.stints)
        }
        if was is not None and who is not None:
            self.post.mail(game_id, was, "keeper/replaced-out", {**context, "address": address, "former": True})
        self.post.announce(table, "keeper/replaced", context, skip=seat)  # the newcomer is welcomed instead
        # A sealed move the seat made in the open phase stands: the newcomer is told it (it is the seat's own),
        # or a result would show a move they never made, from a hand the welcome showed still holding it.
        made = table.counted.get(open_["number"], {}).get(seat) if open_["sealed"] and not bot and not owes else None
        own = {"seat_move": made["move"] if made else None}
        self.post.send(table, seat, "keeper/welcome", {**context, **self.post.context(table, seat), **own})
        if owes:
            self.post.prompt(table, seat)
        log.info("game %d: seat %d taken over by a newcomer", game_id, seat + 1)
        return f"game {game_id}: {address} plays seat {seat + 1} (was {was or f'bot {seat + 1}'})"

    # -- words -------------------------------------------------------------

    def say(self, game_id: int, text: str, who: str, seat_named: str | None = None) -> str:
        """The keeper's words, to every player (or one seat), on the record."""
        text = text.strip()
        if not text:
            raise EngineError("say something: the text is empty")
        if len(text) > _LONGEST_SAY:
            raise EngineError(f"that is {len(text)} characters: a keeper's word is at most {_LONGEST_SAY}")
        table, open_ = self._open(game_id)
        seat = None if seat_named is None else find_seat(table, seat_named)
        self._intervene(table, open_, Act.SAY, who, "", text=text, seat=seat)
        table = self.tables.table(game_id)
        context = {**self.post.context(table), "text": text, "to_one": seat is not None}
        if seat is None:
            self.post.announce(table, "keeper/said", context)
        else:
            self.post.send(table, seat, "keeper/said", {**context, **self.post.context(table, seat)})
        return f"game {game_id}: said to " + ("everyone" if seat is None else f"seat {seat + 1}")

    # -- helpers -------------------------------------------------------------

    def _open(self, game_id: int, phase: int | None = None) -> tuple[Table, PhaseRow]:
        """A running game and its open phase, with whatever fell due before
        now resolved first (as of then: the act meets the game as it is)."""
        table = self.tables.running(game_id)
        if not table.paused:
            self.phases.advance(game_id, deadlines=True)
        table = self.tables.running(game_id)
        open_ = table.phase_to_move()
        if phase is not None and phase != open_["number"]:
            raise EngineError(f"game {game_id} is at phase {open_['number']} ({open_['label']}), not phase {phase}")
        return table, open_

    def _now(self, phase: PhaseRow) -> datetime:
        """Now, but never before the open phase opened (a catch-up's clock)."""
        return max(self.clock(), from_iso(phase["opened_at"])).replace(microsecond=0)

    def _intervene(
        self,
        table: Table,
        phase: PhaseRow,
        act: Act,
        who: str | None,
        why: str,
        at: datetime | None = None,
        **detail: Any,
    ) -> str:
        when = iso(at or self._now(phase))
        self.store.intervene(table.id, phase["number"], when, act, who, why.strip(), **detail)
        log.info("game %d %s: %s by %s", table.id, phase["label"], act.value, who or "the referee")
        return when

    def _announce(self, game_id: int, template: str, **context: Any) -> None:
        table = self.tables.table(game_id)
        self.post.announce(table, template, {**self.post.context(table), **context, "paused": table.paused})


def _held(held: list[dict[str, Any]]) -> str:
    """What the keeper's line adds when a seat's time away moved the deadline on."""
    return "".join(f", then to {h['until']}: {h['who']} is away until then" for h in held)


def paused_for(interventions: list[InterventionRow]) -> timedelta:
    """How long a game has been paused in all (pauses that ended)."""
    total, since = timedelta(0), None
    for i in interventions:
        if i["act"] == Act.PAUSE:
            since = from_iso(i["at"])
        elif i["act"] == Act.RESUME and since is not None:
            total, since = total + (from_iso(i["at"]) - since), None
    return total


def _newcomers_name(address: str, others: list[str]) -> str:
    """A newcomer's public name, for good: their address's local part, with
    its domain if another seat's name is that already (no name changes)."""
    local, _, domain = address.partition("@")
    taken = {name.partition(" (")[0] for name in others}
    return local if local not in taken else f"{local} ({domain})"


def find_seat(table: Table, named: str) -> int:
    """A seat named by its player's address, its number ("2", "seat 2") or its bot's name ("bot 2")."""
    text = named.strip().lower()
    number = text.removeprefix("seat").removeprefix("bot").strip()
    if number.isdigit() and 1 <= int(number) <= len(table.seats):
        return int(number) - 1
    seat = table.seat_of(text)
    if seat is None:
        raise EngineError(f"{named!r} names no seat of game {table.id}: give its player's address or its number")
    return seat
