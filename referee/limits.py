"""How many answers the referee sends, and to whom: it stops loops and
floods, never a player, and nobody can spend what is kept for another.

Every mail that answers a message spends one budget, counted over the last
hour per inbox (plus-part and case folded, so variants of one inbox share
one budget) and, for mail that proves no seat, per origin too: where the
referee's own mail server says it came from (``referee.mail.origin``:
``checked`` when the trusted server found that the From's domain sent it,
else the network that handed it over, else ``unknown``).

- ``player``: answers to mail that proves a seat or a sign-up by its token
  (or that answers a notice to that inbox, whose Message-ID only its reader
  has seen).  ``replies_per_hour`` of them; a forger cannot spend them.
- ``open``: answers to mail that proves nothing (HELP, LIST, STANDINGS, RULES,
  JOIN's reply, mail too large to read).  ``open_replies_per_hour`` per inbox and origin.
- ``signup``: a sign-up confirmation (JOIN), kept apart from ``open`` so
  that HELPs in someone's name cannot use up their JOIN: as many per inbox
  and origin.
- ``notice``: a notice to a seat's owner that a mail in their name did not
  count: one an hour per origin.

Strangers' mail cannot spend what others' needs: mail of one origin spends
only that origin's allowance of an inbox, and an inbox is answered from at
most ``NETWORKS_PER_INBOX`` unchecked origins' worth an hour (so forged mail
from many networks cannot bury anyone in answers).  ``open`` and
``signup`` answers together stay within ``open_replies_total_per_hour``
for unchecked mail, and as many again for checked mail (whose From sent
it, so answering it is no backscatter), and one network spends at most
``open_replies_per_network_per_hour`` of the unchecked ones.  Forged mail
is never checked, so it cannot touch checked mail's allowances at all.

When the ``player`` or an inbox's ``open`` allowance runs out, the inbox
gets one ``over-limit`` notice for the hour (its moves still count), then
silence until the hour has passed; when a total runs out, silence.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import Enum
from typing import Literal

from referee.config import Config
from referee.mail.origin import CHECKED, UNKNOWN
from referee.store import Store
from referee.timeutil import from_iso, iso

Budget = Literal["player", "open", "signup", "notice"]


class Verdict(Enum):
    """What becomes of an answer (never stored: the answers spent are)."""

    SEND = "send"  # send the answer
    NOTIFY = "notify"  # send the over-limit notice instead, once an hour
    HOLD = "hold"  # send nothing


WINDOW = timedelta(hours=1)
NETWORKS_PER_INBOX = 4  # unchecked origins' worth of answers an inbox gets in an hour, at most


OverLimit = Literal["over-limit player", "over-limit open", "over-limit signup", "over-limit notice"]
Counted = Budget | OverLimit  # what an answer is counted as (outbox.budget): its budget, or a note about one

# What an over-limit note about a budget is counted as: one budget's note
# apart from the other's, so a stranger writing from a player's plus-address
# cannot use up the note the player's own budget owes her.
_NOTE: dict[Budget, OverLimit] = {
    "player": "over-limit player",
    "open": "over-limit open",
    "signup": "over-limit signup",
    "notice": "over-limit notice",
}


def over_limit(budget: Budget) -> OverLimit:
    """What an over-limit note about ``budget`` is counted as."""
    return _NOTE[budget]


_POOL: tuple[Counted, ...] = ("open", "signup", over_limit("open"))  # what the totals and a network's share count


def normalised(address: str) -> str:
    """``Alice+games@Example.org`` -> ``alice@example.org``: one inbox, one budget."""
    local, _, domain = address.lower().rpartition("@")
    return f"{local.partition('+')[0]}@{domain}"


def verdict(store: Store, config: Config, to: str, budget: Budget, now: datetime, origin: str = UNKNOWN) -> Verdict:
    """SEND the answer; NOTIFY (send the over-limit notice instead, once an
    hour); or HOLD it.  ``origin`` is the answered mail's."""
    since, who = iso(now - WINDOW), normalised(to)
    if budget == "player":
        if store.answers_since(since, ("player",), who) < config.replies_per_hour:
            return Verdict.SEND
        return Verdict.NOTIFY if store.answers_since(since, (over_limit("player"),), who) == 0 else Verdict.HOLD
    checked = origin == CHECKED
    if budget in ("open", "signup"):
        if store.answers_since(since, _POOL, checked=checked) >= config.open_replies_total_per_hour:
            return Verdict.HOLD
        if (
            origin.startswith("net:")
            and store.answers_since(since, _POOL, origin=origin) >= config.open_replies_per_network_per_hour
        ):
            return Verdict.HOLD
    limit = 1 if budget == "notice" else config.open_replies_per_hour
    spent: tuple[Counted, ...] = (budget, over_limit(budget))
    if not checked and store.answers_since(since, spent, who, checked=False) >= NETWORKS_PER_INBOX * limit:
        return Verdict.HOLD
    if store.answers_since(since, (budget,), who, origin=origin) < limit:
        return Verdict.SEND
    if budget == "open" and store.answers_since(since, (over_limit(budget),), who, origin=origin) == 0:
        return Verdict.NOTIFY
    return Verdict.HOLD


def resumes_at(store: Store, to: str, budget: Budget, now: datetime, origin: str = UNKNOWN) -> datetime:
    """When answers to ``to`` resume (to mail of ``origin``, but for a
    player's, whose budget is one whatever the origin): an hour after the
    first of the hour's."""
    first = store.first_answer_since(iso(now - WINDOW), budget, normalised(to), None if budget == "player" else origin)
    return (from_iso(first) if first else now) + WINDOW
