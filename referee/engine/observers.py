"""Observers: people who follow a game's public mail without a seat in it.

``WATCH 7`` by mail (``WATCH 7 DIGEST``: with a level) asks; the address
confirms by replying to an offer (engine.offers: OfferKind.WATCH), so a
stranger cannot sign someone else up, and its acceptance (``watch``) makes
the row in ``watchers``.  A mail that proves its From already (any reply
token of ours with that From) needs no offer.  Anyone may watch a game open
for sign-up or running but its own players and those signed up for it (they
get its mail already), up to ``[club] most_watchers`` a game; a finished
game is refused.

An observer is a reader of the game (Post.readers): they get its public
mail only, players by name, at their level (NOTIFY EVERY, TURNS or DIGEST,
else the config's ``notify``; Notices sends the results and the digests),
each copy with their own reply token (NOTIFY and UNWATCH in a reply to it
count) and an unsubscribe address that removes them.  They get the final
mail; their row stays, and nothing more is sent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from referee.config import Config
from referee.engine.offers import Offers
from referee.engine.post import Post
from referee.errors import EngineError, Refusal, Why
from referee.mail.tokens import watcher_token
from referee.rules import get_game
from referee.store import GameRow, GameState, Notify, OfferKind, OfferRow, Store
from referee.tables import Tables
from referee.timeutil import EventClock, iso

log = logging.getLogger("referee")

# How much mail an observer gets at each level, in words (as _levels.txt.j2's observer_gets says it).
_GETS = {
    Notify.EVERY: "a mail for every turn's or round's result",
    Notify.TURNS: "a mail for each round's or auction's result",
    Notify.DIGEST: "one mail a day with what happened in the game",
}

ANSWER_WITHIN = timedelta(days=2)  # a WATCH's offer lapses then, unanswered


@dataclass(eq=False)
class Observers:
    store: Store
    config: Config
    clock: EventClock
    tables: Tables
    post: Post
    offers: Offers
    key: bytes

    def ask(self, game_id: int, address: str, level: Notify | None, answering: dict[str, Any]) -> dict[str, Any]:
        """WATCH from mail that does not prove its From: ``address`` is sent
        an offer to reply to (an earlier one for the game is withdrawn),
        spending the answers ``answering`` names (Offers.make).  Refusal
        when it may not watch the game, or the answers are spent."""
        game = self._fit(game_id, address)
        for offer in self.store.open_offers(OfferKind.WATCH, game_id):
            if offer["address"] == address.lower():
                self.offers.withdraw(offer)
        context = {
            "game": None,  # (the offer is no mail of the game's: its footer says whose referee this is)
            "about": self._about(game),
            "level": (level or self.config.notify).value,
        }
        try:
            offer = self.offers.make(
                OfferKind.WATCH,
                address.lower(),
                ANSWER_WITHIN,
                "watch/offer",
                context,
                game_id=game_id,
                answering=answering,
                level=level and level.value,
            )
        except EngineError:
            raise Refusal(Why.TOO_MANY_MAILS, command=f"WATCH {game_id}") from None
        return {"confirm": True, "game_id": game_id, "answer_by": offer["expires_at"]}

    def accepted(self, offer: OfferRow) -> str:
        """The offer's Terms: the address confirmed its WATCH."""
        assert offer["game_id"] is not None  # (a WATCH offer names its game)
        level = offer["detail"].get("level")
        try:
            return self.watch(offer["game_id"], offer["address"], Notify(level) if level else None)["done"]
        except Refusal as refusal:
            raise EngineError(self.post.composer.refusal(refusal)) from None

    def watch(self, game_id: int, address: str, level: Notify | None) -> dict[str, Any]:
        """``address`` follows the game from now on (at ``level``; None: the
        config's notify), or, following it already, at that level now."""
        game = self._fit(game_id, address)
        now = iso(self.clock())
        if self.store.watcher(game_id, address) is not None:
            self.set_level(game_id, address, level)
            done = f"you follow game {game_id} already; from now on you get {_GETS[self._level(level)]}"
        else:
            token = watcher_token(self.key, game_id, address)
            self.store.add_watcher(game_id, address, level and level.value, now, token)
            self._told_now(game, address)
            log.info("game %d: an observer joined (%s mail)", game_id, self._level(level).value)
            done = (
                f"you follow game {game_id} ({self._about(game)['title']}) from now on: you get "
                f"{_GETS[self._level(level)]}, besides its start and its end. It is the game's public mail only; "
                "UNWATCH in a reply to any of it, or its unsubscribe button, stops it"
            )
        return {"confirm": False, "done": done, "game_id": game_id, "level": self._level(level).value}

    def stop(self, game_id: int, address: str) -> bool:
        """``address`` no longer follows the game; False if it did not."""
        stopped = self.store.remove_watcher(game_id, address)
        if stopped:
            log.info("game %d: an observer left", game_id)
        return stopped

    def set_level(self, game_id: int, address: str, level: Notify | None) -> None:
        """An observer's level from now on (None: the config's); a daily
        digest counts from now, as a seat's does (Notices.set_level)."""
        self.store.set_watcher_notify(game_id, address, level and level.value)
        if self._level(level) is Notify.DIGEST:
            self._told_now(self.tables.row(game_id), address)

    def _told_now(self, game: GameRow, address: str) -> None:
        """A reader's digest starts from the game as it is now: what was
        resolved before is not news to them."""
        resolved = sum(1 for phase in self.store.phases(game["id"]) if phase["resolved_at"])
        self.store.set_reader_told(game["id"], address, resolved, iso(self.clock()))

    def _level(self, level: Notify | None) -> Notify:
        return level or self.config.notify

    def _fit(self, game_id: int, address: str) -> GameRow:
        """The game, if ``address`` may watch it; else the Refusal that says why."""
        game = self.store.game(game_id)
        if game is None:
            raise Refusal(Why.WATCH_WHICH, game=game_id)
        if game["state"] == GameState.FINISHED:
            raise Refusal(Why.WATCH_OVER, game=game_id)
        players = [s["address"] for s in self.store.seats(game_id) if s["address"] and not s["bot"]]
        players += [s["address"] for s in self.store.signups(game_id)]
        if address.lower() in {p.lower() for p in players}:
            raise Refusal(Why.WATCH_PLAYER, game=game_id)
        watching = {w["address"] for w in self.store.watchers(game_id)}
        if address.lower() not in watching and len(watching) >= self.config.most_watchers:
            raise Refusal(Why.WATCH_FULL, game=game_id, most=self.config.most_watchers)
        return game

    def _about(self, game: GameRow) -> dict[str, Any]:
        """The game, as a mail to someone not (yet) its reader may show it: public facts only."""
        phases = self.store.phases(game["id"]) if game["state"] == GameState.RUNNING else []
        return {
            "id": game["id"],
            "title": get_game(game["kind"]).title,
            "name": game["name"],
            "state": game["state"],
            "phase": phases[-1]["label"] if phases else None,
        }
