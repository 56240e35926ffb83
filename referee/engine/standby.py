"""The standby lists: people who would take over a seat a player leaves
mid-game.

``STANDBY <kind>`` by mail puts an address on that kind's list, once it has
shown it reads its mail (the desk asks, as for JOIN); ``STANDBY <kind> OFF``
takes it off. When a player leaves a running game (RESIGN by mail, or
``referee resign``), a bot plays the seat (Seating.resign_seat) and the
first person on the list who holds no seat of that game and weighs no other
seat's offer is offered it (an offer, engine.offers: OfferKind.SEAT), to
accept by reply within ``standby_answer``. Declined, lapsed, or no longer
possible, it goes to the next on the list; with nobody left, the bot keeps
the seat. While the seat is offered its bot does not move: the phase waits
for it as for a person (Phases.bot_moves), so the newcomer plays the phase
they take the seat in, with a fresh deadline (Keeping.replace); at the
deadline the bot moves as a bot, and when nobody takes the seat it moves
at once. Whoever lets an offer lapse unanswered leaves the list (they are
away, perhaps: the next seat should not wait a day on them); whoever says
no stays on it.

A game whose rules keep a bot's seat a bot's (``Game.bots_replaceable``:
Pure Skill's rule 8) offers nothing. An offer accepted is a takeover as the
keeper's REPLACE makes it (Keeping.replace: the welcome with every private
fact of the seat, an intervention on the record), in the referee's name, and
the newcomer leaves the standby list of that kind.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from referee.config import Config
from referee.engine.delegating import stands_in
from referee.engine.keeping import Keeping
from referee.engine.offers import Offers, Outcome
from referee.engine.phases import Phases
from referee.errors import EngineError
from referee.store import GameState, OfferKind, OfferRow, Store
from referee.tables import Tables
from referee.timeutil import EventClock, from_iso, iso

log = logging.getLogger("referee")

WHY = "from the standby list"  # the takeover's reason, on the public record


@dataclass(eq=False)
class Standby:
    store: Store
    config: Config
    clock: EventClock
    tables: Tables
    offers: Offers
    keeping: Keeping
    phases: Phases  # (a seat's bot waits for the one offered it, and moves when nobody takes it)

    # -- the lists -------------------------------------------------------------

    def join(self, kind: str, address: str) -> bool:
        """``address`` onto the list of ``kind`` (last); False if it was on it already."""
        return self.store.add_standby(kind, address, iso(self.clock()))

    def leave(self, kind: str, address: str) -> bool:
        """``address`` off the list of ``kind``; False if it was not on it."""
        return self.store.remove_standby(kind, address)

    def place(self, kind: str, address: str) -> tuple[int, int]:
        """Where ``address`` stands on the list of ``kind`` (1: first; 0:
        not on it), and how many wait on it."""
        waiting = [row["address"] for row in self.store.standby(kind)]
        place = waiting.index(address.lower()) + 1 if address.lower() in waiting else 0
        return place, len(waiting)

    # -- a seat left mid-game ------------------------------------------------------

    def seat_left(self, game_id: int, seat: int) -> None:
        """A player left ``seat`` (a bot plays it now): offer it to the first
        on standby who may take it, if the game's rules let a person take a
        bot's seat (Seating calls this after every resignation)."""
        self._offer(game_id, seat, passed=[])

    def _offer(self, game_id: int, seat: int, passed: list[str]) -> None:
        """Offer the seat to the first on standby not in ``passed`` (those
        it was offered to already), not in the game, and not weighing
        another seat's offer; nobody: its bot plays on."""
        table = self.tables.table(game_id)
        if table.row["state"] != GameState.RUNNING or table.human(seat) or not table.rules.bots_replaceable:
            return
        if any(offer["seat"] == seat for offer in self.store.open_offers(OfferKind.SEAT, game_id)):
            return  # offered already (it was left again while a first offer waits)
        busy = {offer["address"] for offer in self.store.open_offers(OfferKind.SEAT)}
        kind = table.row["kind"]
        for row in self.store.standby(kind):
            address = row["address"]
            if address in passed or address in busy or table.seat_of(address) is not None:
                continue
            if stands_in(self.store, game_id, address, iso(self.clock())) is not None:
                continue  # a stand-in for a seat of the game: nobody plays two seats of one game
            phase = table.open_phase
            context: dict[str, Any] = {
                "game": None,  # (the footer's: the offer's reply address is no seat's)
                "game_id": game_id,
                "title": table.rules.title,
                "kind": kind,
                "seat": seat,
                "was": table.names[seat],
                "phase": phase and phase["label"],
            }
            # What accepting checks (the seat is still the bot's it was offered as), and whom a lapse passes over.
            detail: dict[str, Any] = {
                "passed": [*passed, address],
                "bot_from_phase": table.seats[seat]["bot_since_phase"],
            }
            lasts = self.config.standby_answer
            self.offers.make(OfferKind.SEAT, address, lasts, "standby-offer", context, game_id, seat, **detail)
            log.info("game %d: seat %d offered to the next on standby", game_id, seat + 1)
            return
        log.info("game %d: nobody on standby takes seat %d; its bot plays on", game_id, seat + 1)

    # -- the offer's terms (registered in rooms.py) -----------------------------------

    def accept(self, offer: OfferRow) -> str:
        """The person on standby takes the seat, if it is still the bot's it was offered as."""
        game_id, seat = offer["game_id"], offer["seat"]
        assert game_id is not None and seat is not None  # (a seat's offer names both)
        table = self.tables.running(game_id)  # EngineError once it has ended
        if table.human(seat) or table.seats[seat]["bot_since_phase"] != offer["detail"]["bot_from_phase"]:
            raise EngineError(f"seat {seat + 1} of game {game_id} has been taken meanwhile")
        self.keeping.replace(game_id, f"seat {seat + 1}", offer["address"], None, WHY)
        self.store.remove_standby(table.row["kind"], offer["address"])
        return (
            f"you play seat {seat + 1} of game {game_id} ({table.rules.title}) from now on, and are off its "
            "standby list; the welcome mail shows where the seat stands"
        )

    def lapse(self, offer: OfferRow, outcome: Outcome) -> None:
        """Declined, unanswered or no longer possible: the next on standby is asked."""
        game_id, seat = offer["game_id"], offer["seat"]
        assert game_id is not None and seat is not None  # (a seat's offer names both)
        if outcome == Outcome.EXPIRED:
            self.store.remove_standby(self.tables.row(game_id)["kind"], offer["address"])
        self._offer(game_id, seat, offer["detail"]["passed"])
        self._bot_plays_on(game_id, seat)

    def _bot_plays_on(self, game_id: int, seat: int) -> None:
        """With nobody left to offer the seat to, its bot, which waited for
        them, moves at once in the open phase (as of its deadline, if that
        passed meanwhile: it would have moved then), and the game goes on."""
        table = self.tables.table(game_id)
        phase = table.open_phase
        if table.row["state"] != GameState.RUNNING or phase is None or table.human(seat):
            return
        if any(offer["seat"] == seat for offer in self.store.open_offers(OfferKind.SEAT, game_id)):
            return  # the next on standby is asked: the bot waits for them
        at = max(from_iso(phase["opened_at"]), min(self.clock(), from_iso(phase["deadline"])))
        self.phases.bot_moves(table, phase, at)
        self.phases.advance(game_id)
