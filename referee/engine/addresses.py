"""A seat's player moves to another address: ADDRESS by mail, which the
new address confirms (an offer), or the keeper's ``address``, at once.

The seat keeps everything it has (its history, its public name, its
standing, a move made in the open phase); only its address and its reply
token change.  The new address gets a token of its own (seat_token, from
the address and the how-manieth move of the seat it is), so the old
address's mail no longer proves the seat: a reply to an old mail is
answered with where the seat went (the desk finds the token it retired,
Store.moved_token), never taken.  Each move is an intervention on the
game's record (Act.ADDRESS) that names the seat and never an address: the
record is public, and so is a seat's name, which stays.  The other
players are not mailed: nothing changes for them.

``ADDRESS new ALL`` moves every seat the address plays and every sign-up
it holds, with one confirmation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from referee.config import Config
from referee.engine.delegating import stands_in
from referee.engine.keeping import find_seat
from referee.engine.offers import Offers, Outcome
from referee.engine.phases import Phases
from referee.engine.post import Post
from referee.engine.seating import check_player_address
from referee.errors import EngineError
from referee.mail.tokens import seat_token
from referee.record import BY_PLAYER
from referee.rules import get_game
from referee.store import Act, GameState, OfferKind, OfferRow, PhaseRow, Store
from referee.tables import Table, Tables
from referee.timeutil import EventClock, from_iso, iso

log = logging.getLogger("referee")

CONFIRM_WITHIN = timedelta(days=3)  # how long the new address has to confirm; the old one plays on meanwhile
# Each request mails an address the player chose, so an address asks for a
# few a day at most (a typo, a change of mind), and no player can make the
# referee mail strangers in bulk.
MOST_ASKED = 3
ASKED_WITHIN = timedelta(days=1)


@dataclass(eq=False)
class Addresses:
    store: Store
    config: Config
    clock: EventClock
    key: bytes
    tables: Tables
    post: Post
    phases: Phases
    offers: Offers

    # -- a player's ADDRESS: asked from the old address, confirmed from the new ----------

    def ask(
        self, address: str, new: str, game_id: int | None, kinds: frozenset[str] = frozenset(), every: bool = False
    ) -> dict[str, Any]:
        """``address`` (proven: a seat of ``game_id``'s, or sign-ups of
        ``kinds``) asks to play from ``new``: in that game (or those
        sign-ups), or with ``every`` in every game it plays and every one it
        is signed up for.  The new address is mailed an offer to confirm;
        an earlier request of the same games not yet confirmed is
        withdrawn.  What the answer says (templates/mail/answers/address)."""
        new = _checked(new, self.config.address)
        games = self._games_of(address) if every else [game_id] if game_id is not None else self._signed(address, kinds)
        if not games:
            raise EngineError("you play no game and are signed up for none")
        if new == address.lower():  # "stay here": a change asked for and not yet confirmed is taken back
            if self._withdraw(address, games):
                return {"withdrawn": True, "new": new, "changes": self._changes(address, games)}
            raise EngineError(f"you play from {new} already")
        for game in games:
            self._check_free(game, new)
        self._check_asked(address)
        withdrawn = self._withdraw(address, games)
        changes = self._changes(address, games)
        single = changes[0] if len(changes) == 1 and not every else None
        offer = self.offers.make(
            OfferKind.ADDRESS,
            new,
            CONFIRM_WITHIN,
            "address/confirm",
            {"game": None, "changes": changes, "every": every},
            game_id=single["id"] if single else None,
            seat=single["seat"] if single else None,
            old=address,
            games=games,
        )
        log.info("offer %d: a new address asked for %d game(s)", offer["id"], len(games))
        return {"new": new, "changes": changes, "until": offer["expires_at"], "replaced": bool(withdrawn)}

    def confirmed(self, offer: OfferRow) -> str:
        """The new address confirmed (the offer's Terms.accept): every seat
        and sign-up of the request still the old address's moves to it,
        and both addresses are told."""
        old, new = offer["detail"]["old"], offer["address"]
        moved, why = [], None
        for game_id in offer["detail"]["games"]:
            row = self.store.game(game_id)
            if row is not None and row["state"] == GameState.RUNNING and self._stands_in(game_id, new):
                why = _STANDS_IN.format(new=new, game=game_id)  # (they agreed to stand in meanwhile)
                continue
            if row is None or not self._movable(game_id, old, new):
                continue
            if row["state"] == GameState.RUNNING:
                seat = self.tables.table(game_id).seat_of(old)
                try:
                    self._move(game_id, seat, new, BY_PLAYER)  # type: ignore[arg-type]
                except EngineError:  # it ended meanwhile (a last deadline fell due): nothing to move
                    continue
            else:
                self.store.move_signup(game_id, old, new)
            moved.append(game_id)
        if not moved:
            raise EngineError(why or f"none of the seats or sign-ups this change was for is {old}'s any more")
        changes = self._changes(new, moved)
        context = {"game": None, "referee": self.config.address, "changes": changes, "keeper": False, "why": ""}
        self.post.mail(None, old, "address/moved", context)
        self._keep_timezone(old, new)
        games = ", ".join(f"game {change['id']}" for change in changes)
        return f"you play from this address now ({games}); each game's mail to you follows with its reply address"

    def lapsed(self, offer: OfferRow, outcome: Outcome) -> None:
        """The new address said no, or never answered: the old address
        (which still plays) is told.  A change that could no longer be
        made was told to the new address, which tried."""
        if outcome not in (Outcome.REJECTED, Outcome.EXPIRED):
            return
        old = offer["detail"]["old"]
        games = [g for g in offer["detail"]["games"] if self._movable(g, old)]
        if games:
            context = {
                "game": None,
                "referee": self.config.address,
                "new": offer["address"],
                "rejected": outcome == Outcome.REJECTED,
            }
            self.post.mail(offer["game_id"], old, "address/lapsed", {**context, "changes": self._changes(old, games)})

    # -- the keeper's: at once ----------------------------------------------------------

    def move(self, game_id: int, seat_named: str, new: str, who: str, why: str = "") -> str:
        """The keeper moves a seat (named by its player's address or its
        number) to ``new`` at once: they need not wait for the new address's
        word (the keeper vouches for it, as for a newcomer by REPLACE)."""
        new = _checked(new, self.config.address)
        table = self.tables.running(game_id)
        seat = find_seat(table, seat_named)
        old = table.seats[seat]["address"]
        if old is None or not table.human(seat):
            raise EngineError(f"a bot plays seat {seat + 1} of game {game_id}: it has no address to change")
        if old == new:
            raise EngineError(f"seat {seat + 1} of game {game_id} plays from {new} already")
        self._check_free(game_id, new)
        self._move(game_id, seat, new, who, why.strip())
        context = {
            "game": None,
            "referee": self.config.address,
            "changes": self._changes(new, [game_id]),
            "keeper": True,
            "why": why.strip(),
        }
        self.post.mail(game_id, old, "address/moved", context)
        self._keep_timezone(old, new)
        return f"game {game_id}: seat {seat + 1} plays from {new} now (was {old})"

    # -- the change itself --------------------------------------------------------------

    def _move(self, game_id: int, seat: int, new: str, who: str, why: str = "") -> None:
        """The seat's address and reply token change, on the record; the new
        address is welcomed with the seat's reply address and all it knows,
        and prompted if the seat owes a move now."""
        table, open_ = self._running(game_id)
        old, old_token = table.seats[seat]["address"], table.seats[seat]["token"]
        changes = sum(1 for i in table.interventions if i["act"] == Act.ADDRESS and i["detail"]["seat"] == seat)
        self.store.take_seat(game_id, seat, new)
        self.store.set_token(game_id, seat, seat_token(self.key, game_id, seat, new, changes + 1))
        at = iso(max(self.clock(), from_iso(open_["opened_at"])).replace(microsecond=0))
        detail: dict[str, Any] = {"seat": seat, "address": new, "was_address": old, "old_token": old_token}
        self.store.intervene(game_id, open_["number"], at, Act.ADDRESS, who, why, **detail)
        table = self.tables.table(game_id)
        context = {**self.post.context(table, seat), "name": table.names[seat], "why": why, "keeper": who != BY_PLAYER}
        # (Not copied to a stand-in: their turn goes on as it was, and they were prompted already.)
        self.post.send(table, seat, "address/welcome", context, copy=False)
        if seat in table.waiting_for(open_):
            self.post.prompt(table, seat, copy=False)
        log.info("game %d: seat %d plays from another address", game_id, seat + 1)

    def _running(self, game_id: int) -> tuple[Table, PhaseRow]:
        """A running game and its open phase, with whatever fell due before
        now resolved first, as Keeping's acts meet it: the change is
        recorded in the phase open when it is made."""
        if not self.tables.running(game_id).paused:
            self.phases.advance(game_id, deadlines=True)
        table = self.tables.running(game_id)
        return table, table.phase_to_move()

    # -- which games, and whether each may move -------------------------------------------

    def _games_of(self, address: str) -> list[int]:
        """Every running game ``address`` plays a seat of, and every game it is signed up for."""
        playing = [game["id"] for game in self.store.games_of(address)]
        return playing + self._signed(address)

    def _signed(self, address: str, kinds: frozenset[str] | None = None) -> list[int]:
        """The games open for sign-up (of ``kinds``, if given) that ``address`` is signed up for."""
        return [
            game["id"]
            for game in self.store.games(GameState.OPEN)
            if (kinds is None or game["kind"] in kinds)
            and any(s["address"] == address.lower() for s in self.store.signups(game["id"]))
        ]

    def _movable(self, game_id: int, old: str, new: str | None = None) -> bool:
        """Whether ``old`` still plays in (or is signed up for) the game, and
        ``new`` (if given) does not."""
        row = self.store.game(game_id)
        if row is None or row["state"] == GameState.FINISHED:
            return False
        if row["state"] == GameState.OPEN:
            signed = {s["address"] for s in self.store.signups(game_id)}
            return old in signed and (new is None or new not in signed)
        table = self.tables.table(game_id)
        seat = table.seat_of(old)
        free = new is None or (table.seat_of(new) is None and not self._stands_in(game_id, new))
        return seat is not None and table.human(seat) and free

    def _check_free(self, game_id: int, new: str) -> None:
        row = self.tables.row(game_id)
        if row["state"] == GameState.OPEN:
            if any(s["address"] == new for s in self.store.signups(game_id)):
                raise EngineError(f"game {game_id} has {new} signed up already")
        elif self.tables.table(game_id).seat_of(new) is not None:
            raise EngineError(f"game {game_id} has a seat played from {new} already")
        elif self._stands_in(game_id, new):
            raise EngineError(_STANDS_IN.format(new=new, game=game_id))

    def _stands_in(self, game_id: int, new: str) -> bool:
        """Whether ``new`` stands in for a seat of a running game, or is asked to (engine.delegating)."""
        return stands_in(self.store, game_id, new, iso(self.clock())) is not None

    def _check_asked(self, address: str) -> None:
        since = self.clock() - ASKED_WITHIN
        asked = [
            o for o in self.store.offers_made_since(OfferKind.ADDRESS, iso(since)) if o["detail"]["old"] == address
        ]
        if len(asked) >= MOST_ASKED:
            again = from_iso(min(o["made_at"] for o in asked)) + ASKED_WITHIN
            raise EngineError(
                f"you have asked for {MOST_ASKED} new addresses in a day already: ask again after {iso(again)}"
            )

    def _withdraw(self, address: str, games: list[int]) -> list[OfferRow]:
        """Take back the address's requests not yet confirmed for any of these games."""
        withdrawn = [
            offer
            for offer in self.store.open_offers(OfferKind.ADDRESS)
            if offer["detail"]["old"] == address.lower() and set(offer["detail"]["games"]) & set(games)
        ]
        for offer in withdrawn:
            self.offers.withdraw(offer)
        return withdrawn

    def _changes(self, address: str, games: list[int]) -> list[dict[str, Any]]:
        """Each game as the mails name it: its number and title, and the
        seat (by number and public name) ``address`` plays, or None for a
        sign-up."""
        changes = []
        for game_id in games:
            row = self.tables.row(game_id)
            change: dict[str, Any] = {"id": game_id, "title": get_game(row["kind"]).title, "seat": None, "name": None}
            if row["state"] != GameState.OPEN:
                table = self.tables.table(game_id)
                seat = table.seat_of(address)
                if seat is not None:
                    change.update(seat=seat, name=table.names[seat])
            changes.append(change)
        return changes

    def _keep_timezone(self, old: str, new: str) -> None:
        """The new address shows times as the old one did, unless it has a zone of its own."""
        zone = self.store.timezone(old)
        if zone is not None and self.store.timezone(new) is None:
            self.store.set_timezone(new, zone)


_STANDS_IN = "{new} stands in for a seat of game {game}, or is asked to: nobody plays two seats of one game"


def _checked(new: str, own: str) -> str:
    """The new address as a seat holds it (lower case), if a player may hold a seat with it."""
    new = new.strip().strip("<>,;").lower()
    check_player_address(new, own)
    return new
