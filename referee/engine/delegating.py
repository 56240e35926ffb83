"""Stand-ins: a seat's player names someone who moves for the seat until a
time (``DELEGATE bob@example.org UNTIL 2026-12-10``), for a holiday, say.

The stand-in agrees first: an offer (engine.offers), mailed to them, to be
answered within a day (or by the end of the turn asked for, if sooner).
Once they accept they are mailed a reply address of their own, which with
their From proves "the stand-in of seat N of game G" (the desk reads it),
and what the seat knows (its view, as a newcomer's welcome shows it), and
the prompt if the seat owes a move now. Until the turn ends they get a copy
of the seat's own mail (Post.send: prompts, reminders, receipts, private
news; not every public mail), and their moves count for the seat as its
player's still do: the last one received counts. The turn ends by itself
at its time (Timers.tick: both are told), or early by the player's
``DELEGATE NONE``, or when the seat changes hands (its player resigns, the
keeper gives it to a newcomer). After it the stand-in's address refuses
their mail politely.

Each turn's beginning, and an end before its time, is an intervention on
the game's record: the seat and the time, never the stand-in's address
(record.verify keeps a seat's turns in order). The other players are told.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from referee.config import Config
from referee.engine.offers import Offers, Outcome
from referee.engine.post import Post
from referee.errors import EngineError, Refusal, Why
from referee.limits import normalised
from referee.mail.parse import is_address
from referee.mail.tokens import make_token
from referee.store import Act, DelegationRow, GameState, OfferKind, OfferRow, Store
from referee.tables import Table, Tables
from referee.timeutil import EventClock, from_iso, iso

log = logging.getLogger("referee")

ANSWER_WITHIN = timedelta(days=1)  # an offer to a stand-in lapses then (or when the turn asked for ends, if sooner)
MOST_ASKED_A_DAY = 3  # offers one seat may make in a day: each mails an address its player chose


class Unfit(StrEnum):
    """Why an address cannot stand in for a seat: ``Refusal(Why.DELEGATE_WHO, problem=...)``."""

    NOT_ADDRESS = "not_address"
    REFEREE = "referee"  # the referee's own: its mail to itself is dropped
    OWN = "own"  # the seat's own player
    PLAYS = "plays"  # plays another seat of the game: nobody plays two seats
    STANDS_IN = "stands_in"  # stands in (or is asked to) for another seat of the game


class Ended(StrEnum):
    """Why a stand-in's turn ended: what the mails about it say."""

    TIME = "time"  # its time came
    PLAYER = "player"  # the seat's player ended it (DELEGATE NONE)
    SEAT = "seat"  # the seat changed hands: its player left, or the keeper gave it to a newcomer


@dataclass(eq=False)
class Delegating:
    store: Store
    config: Config
    clock: EventClock
    tables: Tables
    post: Post
    offers: Offers
    key: bytes

    # -- the seat's player asks, and the stand-in answers --------------------

    def ask(self, table: Table, seat: int, address: str, until: datetime) -> dict[str, Any]:
        """The seat's player names ``address`` to stand in until ``until``:
        the stand-in is mailed an offer (an earlier one of the seat's, not
        yet answered, is withdrawn). Refusal when that address cannot stand
        in for the seat, or the time is past or too far off. Returns what
        the answer to the player says."""
        if not table.human(seat):
            raise Refusal(Why.RESIGNED, game=table.id)
        address = address.strip().lower()
        self._check_fit(table, seat, address)
        now = self.clock().replace(microsecond=0)
        until = until.replace(microsecond=0)
        if until <= now:
            raise Refusal(Why.DELEGATE_WHEN, until=iso(until), problem="past")
        if until - now > self.config.longest_delegation:
            raise Refusal(Why.DELEGATE_WHEN, until=iso(until), problem="long", longest=self.config.longest_delegation)
        current = self.in_turn_at(table.id, seat)
        if current is not None:
            raise Refusal(Why.DELEGATE_IN_FORCE, address=current["address"], until=current["until"])
        if self.store.offers_made(OfferKind.DELEGATE, table.id, seat, iso(now - timedelta(days=1))) >= MOST_ASKED_A_DAY:
            raise Refusal(Why.DELEGATE_TOO_OFTEN, most=MOST_ASKED_A_DAY)
        withdrawn = self._withdraw_asked(table.id, seat)
        context = {
            "game": None,  # (the offer is no mail of the game's: its footer says whose referee this is)
            "about": self.post.game_info(table),
            "seat": seat,
            "name": table.names[seat],
            "asker": table.label(seat),
            "until": iso(until),
        }
        offer = self.offers.make(
            OfferKind.DELEGATE,
            address,
            min(ANSWER_WITHIN, until - now),
            "delegate/offer",
            context,
            game_id=table.id,
            seat=seat,
            until=iso(until),
        )
        log.info("game %d: seat %d asks for a stand-in until %s", table.id, seat + 1, iso(until))
        return {"asked": address, "until": iso(until), "answer_by": offer["expires_at"], "withdrawn": withdrawn}

    def begin(self, offer: OfferRow) -> str:
        """The stand-in accepted (the offer's Terms): their turn begins now,
        on the record; they are mailed their own reply address, the seat's
        view and, if the seat owes a move, its prompt; the seat's player
        and the others are told. EngineError when it can no longer be."""
        game_id, seat, address = offer["game_id"], offer["seat"], offer["address"]
        assert game_id is not None and seat is not None  # (a DELEGATE offer is always a seat's)
        table = self.tables.running(game_id)
        if not table.human(seat):
            raise EngineError(f"a bot plays seat {seat + 1} of game {game_id} now: it needs no stand-in")
        try:
            self._check_fit(table, seat, address, offer["id"])
        except Refusal as refusal:
            raise EngineError(self.post.composer.refusal(refusal)) from None
        if self.in_turn_at(game_id, seat) is not None:
            raise EngineError(f"seat {seat + 1} of game {game_id} has a stand-in already")
        open_ = table.phase_to_move()
        now = max(self.clock(), from_iso(open_["opened_at"])).replace(microsecond=0)
        until = offer["detail"]["until"]
        if from_iso(until) <= now:
            raise EngineError(f"the turn you were asked for ended at {until}")
        delegation_id = self.store.add_delegation(
            game_id=game_id, seat=seat, address=address, token=None, since=iso(now), until=until, ended_at=None
        )
        self.store.set_delegation_token(delegation_id, make_token(self.key, "stand-in", delegation_id))
        delegation = self.store.delegation(delegation_id)
        assert delegation is not None
        player = table.seats[seat]["address"]
        self.store.intervene(
            game_id, open_["number"], iso(now), Act.DELEGATE, player, "", seat=seat, until=until, address=address
        )
        table = self.tables.table(game_id)
        told = {**self.post.context(table), "seat": seat, "name": table.names[seat], "until": until}
        self.post.announce(table, "delegate/begun", told, skip=seat)
        self.post.send(table, seat, "delegate/begun", {**told, "address": address, "yours": True}, copy=False)
        own = {**self.post.context(table, seat), "name": table.names[seat], "asker": player, "until": until}
        self.post.to_stand_in(table, delegation, "delegate/welcome", own)
        if seat in table.waiting_for(open_):
            self.post.to_stand_in(
                table, delegation, f"{table.row['kind']}/prompt", self.post.prompt_context(table, seat)
            )
        log.info("game %d: a stand-in plays seat %d until %s", game_id, seat + 1, until)
        return f"you stand in for seat {seat + 1} of game {game_id}: the mail just before this one welcomes you"

    def declined(self, offer: OfferRow, outcome: Outcome) -> None:
        """The stand-in said no, did not answer in time, or accepting failed
        (the offer's Terms' lapse): the seat's player is told."""
        assert offer["game_id"] is not None and offer["seat"] is not None
        table, seat = self.tables.table(offer["game_id"]), offer["seat"]
        if table.row["state"] != GameState.RUNNING or not table.human(seat):
            return
        context = {**self.post.context(table, seat), "address": offer["address"], "outcome": outcome.value}
        self.post.send(table, seat, "delegate/declined", {**context, "until": offer["detail"]["until"]}, copy=False)

    # -- the end of a stand-in's turn --------------------------------------------

    def stop(self, table: Table, seat: int) -> dict[str, Any]:
        """``DELEGATE NONE``: the seat's stand-in's turn ends now (on the
        record; the stand-in and the others are told), or the offer the
        seat made is withdrawn. Refusal when there is neither."""
        current = self.in_turn_at(table.id, seat)
        if current is None:
            withdrawn = self._withdraw_asked(table.id, seat)
            if withdrawn is None:
                raise Refusal(Why.NO_STAND_IN)
            return {"withdrawn": withdrawn}
        at = self._end(table, current, table.seats[seat]["address"], "")
        table = self.tables.table(table.id)
        self._tell_stand_in(table, current, at, Ended.PLAYER)
        told = {**self.post.context(table), "seat": seat, "name": table.names[seat], "at": at, "ended": Ended.PLAYER}
        self.post.announce(table, "delegate/ended", told, skip=seat)
        return {"ended": current["address"]}

    def seat_changed(self, game_id: int, seat: int, why: str) -> None:
        """The seat changes hands (its player leaves, or the keeper gives it
        to a newcomer): its stand-in's turn ends now, and an offer it made
        is withdrawn. Called before the change, in its transaction."""
        self._withdraw_asked(game_id, seat)
        current = self.in_turn_at(game_id, seat)
        if current is None:
            return
        table = self.tables.table(game_id)
        at = self._end(table, current, None, why)
        self._tell_stand_in(self.tables.table(game_id), current, at, Ended.SEAT)

    def end_due(self) -> list[str]:
        """End every stand-in's turn whose time has come (Timers.tick), each
        in its own transaction: the stand-in and the seat's player are told."""
        done = []
        for delegation in self.store.delegations_due(iso(self.clock())):
            with self.store.transaction():
                at = delegation["until"]
                self.store.end_delegation(delegation["id"], at)
                table, seat = self.tables.table(delegation["game_id"]), delegation["seat"]
                self._tell_stand_in(table, delegation, at, Ended.TIME)
                if table.human(seat):
                    context = {**self.post.context(table, seat), "name": table.names[seat], "at": at}
                    context = {**context, "ended": Ended.TIME, "yours": True}
                    self.post.send(table, seat, "delegate/ended", context, copy=False)
            done.append(f"game {table.id}: the stand-in's turn at seat {seat + 1} ended at {at}")
        return done

    def ends(self, game_id: int | None = None) -> list[datetime]:
        """When stand-ins' turns not yet ended end (of running games; of one): Timers.next_due."""
        return [from_iso(d["until"]) for d in self.store.delegations_due(None, game_id)]

    # -- who stands in ---------------------------------------------------------------

    def in_turn_at(self, game_id: int, seat: int, at: datetime | None = None) -> DelegationRow | None:
        """The seat's stand-in in their turn at ``at`` (default: now), if it has one."""
        moment = iso(at or self.clock())
        return next((d for d in self.store.delegations(game_id, moment) if d["seat"] == seat), None)

    @staticmethod
    def in_turn(delegation: DelegationRow, at: datetime) -> bool:
        """Whether a stand-in's turn lasts at ``at`` (it ends at its time, or when ended before it)."""
        moment = iso(at)
        return delegation["since"] <= moment < min(delegation["until"], delegation["ended_at"] or delegation["until"])

    # -- helpers ---------------------------------------------------------------

    def _check_fit(self, table: Table, seat: int, address: str, offer_id: int | None = None) -> None:
        """Refusal unless ``address`` may stand in for the seat: a mail
        address, not the referee's, and no one who plays a seat of the game
        or stands in for one (or is asked to, but by ``offer_id``): never two
        seats under one person (plus-parts and case folded)."""
        if not is_address(address):
            raise Refusal(Why.DELEGATE_WHO, address=address, problem=Unfit.NOT_ADDRESS)
        person = normalised(address)
        if person == normalised(self.config.address):
            raise Refusal(Why.DELEGATE_WHO, address=address, problem=Unfit.REFEREE)
        for other in table.seats:
            if other["address"] is not None and normalised(other["address"]) == person:
                problem = Unfit.OWN if other["seat"] == seat else Unfit.PLAYS
                raise Refusal(Why.DELEGATE_WHO, address=address, problem=problem, seat=other["seat"])
        for_seat = stands_in(self.store, table.id, address, iso(self.clock()), offer_id, other_than=seat)
        if for_seat is not None:
            raise Refusal(Why.DELEGATE_WHO, address=address, problem=Unfit.STANDS_IN, seat=for_seat)

    def _withdraw_asked(self, game_id: int, seat: int) -> str | None:
        """Withdraw the seat's offer to a stand-in not yet answered; whom it was made to."""
        for offer in self.store.open_offers(OfferKind.DELEGATE, game_id):
            if offer["seat"] == seat:
                self.offers.withdraw(offer)
                return offer["address"]
        return None

    def _end(self, table: Table, delegation: DelegationRow, by: str | None, why: str) -> str:
        """End a stand-in's turn before its time, now, on the record (in the open phase)."""
        open_ = table.phase_to_move()
        at = iso(max(self.clock(), from_iso(open_["opened_at"]), from_iso(delegation["since"])).replace(microsecond=0))
        self.store.end_delegation(delegation["id"], at)
        self.store.intervene(table.id, open_["number"], at, Act.DELEGATE_END, by, why, seat=delegation["seat"])
        log.info(
            "game %d: the stand-in's turn at seat %d ended (%s)",
            table.id,
            delegation["seat"] + 1,
            why or "by its player",
        )
        return at

    def _tell_stand_in(self, table: Table, delegation: DelegationRow, at: str, why: Ended) -> None:
        """The stand-in's last mail about the seat: their turn ended (their reply address no longer works)."""
        seat = delegation["seat"]
        context = {**self.post.context(table), "seat": seat, "name": table.names[seat], "at": at, "ended": why}
        self.post.mail(table.id, delegation["address"], "delegate/ended", {**context, "former": True, "stood_in": True})


def stands_in(
    store: Store, game_id: int, address: str, at: str, offer_id: int | None = None, other_than: int | None = None
) -> int | None:
    """The seat of the game (but ``other_than``) ``address`` stands in for
    at ``at``, or is asked to by an offer not yet answered (but
    ``offer_id``), if one (plus-parts and case folded): whoever would take
    a seat of the game (a new address, a newcomer) must not, for nobody
    plays two seats of one game."""
    person = normalised(address)
    standing = [(d["seat"], d["address"]) for d in store.delegations(game_id, at)]
    offers = store.open_offers(OfferKind.DELEGATE, game_id)
    asked = [(o["seat"], o["address"]) for o in offers if o["id"] != offer_id]
    found = (seat for seat, stand_in in standing + asked if normalised(stand_in) == person and seat != other_than)
    return next(found, None)
