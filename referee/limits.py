"""How many answers the referee sends, and to whom: it stops loops and
floods, never a player.

Every mail that answers a message spends one of three budgets, counted
over the last hour per address (plus-part and case folded, so variants of
one inbox share one budget):

- ``player``: answers to mail that proves a seat or a sign-up by its token.
  ``replies_per_hour`` of them; a forger cannot spend them.
- ``open``: answers to mail that proves nothing (HELP, LIST or JOIN from
  anyone, mail too large to read).  ``open_replies_per_hour`` per address,
  and ``open_replies_total_per_hour`` for all addresses together, so forged
  senders cannot turn the referee into a source of backscatter.
- ``notice``: a notice to a seat's owner that a mail in their name did not
  count: one an hour.

When the ``player`` or an address's ``open`` budget runs out, the address
gets one ``over-limit`` notice for the hour (its moves still count), then
silence until the hour has passed; when the total runs out, silence.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from referee.config import Config
from referee.store import Store
from referee.timeutil import from_iso, iso

Budget = Literal["player", "open", "notice"]
WINDOW = timedelta(hours=1)


def over_limit(budget: Budget) -> str:
    """What an over-limit note about ``budget`` is counted as: one budget's
    note apart from the other's, so a stranger writing from a player's
    plus-address cannot use up the note the player's own budget owes her."""
    return f"over-limit {budget}"


def normalised(address: str) -> str:
    """``Alice+games@Example.org`` -> ``alice@example.org``: one inbox, one budget."""
    local, _, domain = address.lower().rpartition("@")
    return f"{local.partition('+')[0]}@{domain}"


def verdict(store: Store, config: Config, to: str, budget: Budget, now: datetime) -> str:
    """"send" the answer; "notify" (send the over-limit notice instead, once
    an hour); or "hold" it."""
    since, who = iso(now - WINDOW), normalised(to)
    if budget == "open":
        total = store.answers_since(since, ("open", over_limit("open")))
        if total >= config.open_replies_total_per_hour:
            return "hold"
    limit = {"player": config.replies_per_hour, "open": config.open_replies_per_hour, "notice": 1}[budget]
    if store.answers_since(since, (budget,), who) < limit:
        return "send"
    if budget != "notice" and store.answers_since(since, (over_limit(budget),), who) == 0:
        return "notify"
    return "hold"


def resumes_at(store: Store, to: str, budget: Budget, now: datetime) -> datetime:
    """When answers to ``to`` resume: an hour after the first of the hour's."""
    first = store.first_answer_since(iso(now - WINDOW), budget, normalised(to))
    return (from_iso(first) if first else now) + WINDOW
