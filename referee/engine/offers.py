"""Offers: what the referee asks one address to confirm by reply.

Some changes to a seat need the word of someone who is not (yet) its
player: a new address must show it reads its mail before the seat moves to
it; a stand-in agrees before moving for a seat; a person on standby takes a
seat left mid-game only if they want it. Each is an offer: one row of
``offers`` (store.OfferKind says which), mailed to that address with a
reply address of its own (a token made from the offer's id under the
referee's key). A reply to it from that address (the desk's ``ACCEPT``, or
a reply with nothing of its own) accepts; ``REJECT`` declines; an offer not
answered by its time lapses (Timers.tick).

What accepting or a lapse does is the business of the room that made the
offer: it registers a ``Terms`` per kind (rooms.py), so this room knows
nothing of seats, addresses or standby lists.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any

from referee.config import Config
from referee.engine.post import Post
from referee.errors import EngineError
from referee.mail.tokens import make_token, tagged, token_address
from referee.store import OfferKind, OfferRow, Store
from referee.timeutil import EventClock, iso

log = logging.getLogger("referee")


class Outcome(StrEnum):
    """How an offer was closed: ``offers.outcome``."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"  # its address said no
    WITHDRAWN = "withdrawn"  # whoever made it took it back, or it no longer fits (the seat was taken)
    EXPIRED = "expired"  # not answered in time


@dataclass(frozen=True)
class Terms:
    """What an offer of one kind does: ``accept`` makes the change (raising
    EngineError when it no longer can) and returns a line for the answer;
    ``lapse`` (if any) follows an offer rejected or expired, such as
    offering a seat to the next person on standby."""

    accept: Callable[[OfferRow], str]
    lapse: Callable[[OfferRow, Outcome], None] | None = None


@dataclass(eq=False)
class Offers:
    store: Store
    config: Config
    clock: EventClock
    post: Post
    key: bytes
    terms: dict[OfferKind, Terms] = field(default_factory=dict)

    def register(self, kind: OfferKind, terms: Terms) -> None:
        self.terms[kind] = terms

    def make(
        self,
        kind: OfferKind,
        address: str,
        lasts: timedelta,
        template: str,
        context: dict[str, Any],
        game_id: int | None = None,
        seat: int | None = None,
        answering: Mapping[str, Any] | None = None,
        **detail: Any,
    ) -> OfferRow:
        """Offer ``address`` something, by a mail (``template``) whose reply
        address and subject tag carry the offer's own token; it lapses
        after ``lasts``. The template sees ``offer`` (its row), ``tag``
        and ``private`` (the reply address).  An offer a stranger's mail
        asks for (WATCH) answers it: ``answering`` (Post.mail's ``answers``,
        ``budget``, ``origin``) spends its answers, and when they are spent
        the offer is withdrawn at once and EngineError says so."""
        now = self.clock()
        offer_id = self.store.add_offer(
            kind=kind,
            game_id=game_id,
            seat=seat,
            address=address,
            token=None,
            made_at=iso(now),
            expires_at=iso(now + lasts),
            detail=detail,
        )
        token = make_token(self.key, "offer", offer_id)
        self.store.set_offer_token(offer_id, token)
        offer = self.store.offer(offer_id)
        assert offer is not None
        reply_to = token_address(self.config.address, token)
        context = {
            "referee": self.config.address,
            **context,
            "offer": offer,
            "tag": tagged(f"[{kind.value}]", token),
            "private": reply_to,
        }
        if not self.post.mail(game_id, address, template, context, reply_to=reply_to, **(answering or {})):
            self.store.close_offer(offer_id, iso(now), Outcome.WITHDRAWN)
            raise EngineError("the referee has sent that address too many mails this hour")
        log.info(
            "offer %d (%s) made, game %s seat %s", offer_id, kind.value, game_id, None if seat is None else seat + 1
        )
        return offer

    def answer(self, offer: OfferRow, accepted: bool) -> str:
        """The offer's address answered: accept it (its kind's change is
        made) or reject it. EngineError when it is closed, or can no longer
        be done (then it is withdrawn)."""
        if offer["closed_at"] is not None:
            raise EngineError(f"that offer was {offer['outcome']} already, at {offer['closed_at']}")
        terms = self.terms[OfferKind(offer["kind"])]
        now = iso(self.clock())
        if not accepted:
            self._close(offer, Outcome.REJECTED, now)
            return "you said no: nothing changes"
        try:
            with self.store.transaction():  # (a savepoint: a change that fails is undone alone)
                done = terms.accept(offer)
        except EngineError:
            self._close(offer, Outcome.WITHDRAWN, now)
            raise
        self.store.close_offer(offer["id"], now, Outcome.ACCEPTED)
        log.info("offer %d (%s) accepted", offer["id"], offer["kind"])
        return done

    def withdraw(self, offer: OfferRow) -> None:
        """Take an open offer back (its reply then changes nothing); no lapse follows."""
        if offer["closed_at"] is None:
            self.store.close_offer(offer["id"], iso(self.clock()), Outcome.WITHDRAWN)

    def expire_due(self) -> list[str]:
        """Close every offer whose time is up, each in its own transaction
        (Timers.tick), and let its kind follow it up."""
        done = []
        for offer in self.store.offers_due(iso(self.clock())):
            with self.store.transaction():
                self._close(offer, Outcome.EXPIRED, offer["expires_at"])
            done.append(f"offer {offer['id']} ({offer['kind']}) expired unanswered")
        return done

    def _close(self, offer: OfferRow, outcome: Outcome, at: str) -> None:
        self.store.close_offer(offer["id"], at, outcome)
        log.info("offer %d (%s) %s", offer["id"], offer["kind"], outcome.value)
        terms = self.terms.get(OfferKind(offer["kind"]))
        if terms is not None and terms.lapse is not None:
            terms.lapse({**offer, "closed_at": at, "outcome": outcome.value}, outcome)  # type: ignore[typeddict-item]
