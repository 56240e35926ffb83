"""The keepers' watch: a mail to the keepers (``[keepers] addresses``) when
the referee's health turns bad, again each day a problem lasts, and one
when it is fixed; with ``daily_summary``, a summary of every game and the
health once a day.  No keepers, no mail.

What is wrong is ``Reports.problems``, what ``referee status`` heads its
list with: one source, a few counts.  The runner asks after every pass
(Runner._pass; and after a pass that failed, if games.db takes the note).
What the keepers were told is kept in games.db (meta ``keepers_told``) in
the same transaction as the mail that tells them: durable before visible,
a mail queued is committed with the note that says it was, and a note
never says so of a mail that was not queued.  It is written only when it
changes, so a pass with nothing new writes nothing.

A failing pass is told once the passes have failed for FAILING_FOR: one
blip of a mail server wakes nobody.  A storage fault may leave games.db
unwritable, and then the keepers cannot be told while it lasts; the first
pass that goes through tells them it happened, since when, and how long it
lasted (Runner._note_fault keeps when the passes began to fail).

Nothing private goes in these mails: a problem is said in counts,
addresses and the servers' words (never a quarantined mail's subject or
text), and the summary shows what LIST shows anyone.  They answer no
message, so they spend nobody's answers (referee.limits).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from referee.config import Config
from referee.engine.post import Post
from referee.engine.reports import Problem, Reports
from referee.rules import get_game
from referee.store import GameState, Store
from referee.timeutil import EventClock, from_iso, iso

log = logging.getLogger("referee")

TOLD = "keepers_told"  # the meta key of what the keepers were told
AGAIN = timedelta(days=1)  # a problem that lasts is told again this often, and the summary comes
FAILING_FOR = timedelta(minutes=10)  # the passes fail this long before the keepers are told


@dataclass(eq=False)
class Watch:
    store: Store
    config: Config
    clock: EventClock
    post: Post
    reports: Reports

    def check(self) -> int:
        """Tell the keepers what came, what lasts a day more and what was
        fixed since the last check; the summary, when it is due.  Returns
        how many mails it queued."""
        if not self.config.keepers:
            return 0
        with self.store.transaction():
            told = self.store.get_meta(TOLD)
            state = json.loads(told or '{"problems": {}}')
            now = self.clock()
            current = self.reports.problems()
            news, others, fixed = self._compare(state, current, now, first=told is None)
            queued = 0
            if news or fixed:
                context = {"referee": self.config.address, "news": news, "others": others, "fixed": fixed}
                queued += self._to_keepers("keeper-health", context)
            queued += self._summary(state, current, now)
            if json.dumps(state) != told:
                self.store.set_meta(TOLD, json.dumps(state))
        if queued:
            log.info(
                "told the keepers: %s",
                "; ".join([p["text"] for p in news] + [f"fixed: {p['text']}" for p in fixed]) or "the daily summary",
            )
        return queued

    def _compare(
        self, state: dict[str, Any], current: list[Problem], now: datetime, first: bool
    ) -> tuple[list[dict], list[dict], list[dict]]:
        """What to tell now, updating ``state``: the problems to tell (new, or
        told a day ago and lasting), those still wrong that were told
        lately, and those fixed."""
        entries: dict[str, dict[str, Any]] = state["problems"]
        keys = {problem.key for problem in current}
        fault = json.loads(self.store.get_meta("last_fault") or "null")
        if fault and first:
            state["fault_seen"] = fault["at"]  # from before there were keepers: not theirs
        elif fault and fault["at"] > state.get("fault_seen", ""):
            state["fault_seen"] = fault["at"]
            if "pass" not in keys:
                # Passes failed since the last look, and the last of them
                # could not say so (games.db took no writes): the pass that
                # went through now tells it, as fixed.
                entry = entries.setdefault("pass", {"since": fault.get("since", fault["at"])})
                entry["text"] = "the passes failed: " + fault["error"]
        fixed = []
        for key in [key for key in entries if key not in keys]:
            entry = entries.pop(key)
            lasted = now - from_iso(entry["since"])
            if entry.get("told") or lasted >= _wait(key):  # (one never told lasted too little to tell)
                fixed.append({**entry, "until": iso(now), "lasted": lasted})
        news, others = [], []
        for problem in current:
            entry = entries.setdefault(problem.key, {"since": problem.since or iso(now)})
            entry["text"] = problem.text
            told = entry.get("told")
            due = from_iso(told) + AGAIN if told else from_iso(entry["since"]) + _wait(problem.key)
            if now >= due:
                news.append({**entry, "told_before": told})
                entry["told"] = iso(now)
            elif told:
                others.append(entry)
        return news, others, fixed

    def _summary(self, state: dict[str, Any], current: list[Problem], now: datetime) -> int:
        """Every game and the health, once a day, with ``daily_summary``."""
        due = state.get("summary_due")
        if not self.config.daily_summary or (due and now < from_iso(due)):
            return 0
        since = state.get("summary_at")
        following = from_iso(due) + AGAIN if due else now + AGAIN
        state["summary_due"] = iso(following if following > now else now + AGAIN)
        state["summary_at"] = iso(now)
        listing = self.reports.listing()
        finished = [
            {
                "id": game["id"],
                "title": get_game(game["kind"]).title,
                "name": game["name"],
                "winner": self.reports.status(game["id"])["winner"],
            }
            for game in self.store.games(GameState.FINISHED)
            if (game["finished_at"] or "") >= (since or iso(now - AGAIN))
        ]
        context = {
            "referee": self.config.address,
            "problems": [problem.text for problem in current],
            "last_pass": json.loads(self.store.get_meta("last_pass") or "null"),
            "open": listing["open"],
            "running": listing["running"],
            "finished": finished,
            "since": since,
        }
        return self._to_keepers("keeper-summary", context)

    def _to_keepers(self, template: str, context: dict[str, Any]) -> int:
        """One copy to each keeper (an answer to nobody: no budget spent)."""
        for keeper in self.config.keepers:
            self.post.mail(None, keeper, template, context)
        return len(self.config.keepers)


def _wait(key: str) -> timedelta:
    """How long a problem lasts before the keepers are told of it."""
    return FAILING_FOR if key == "pass" else timedelta(0)
