"""The keepers' watch: a mail to the keepers (``[keepers] addresses``) when
the referee's health turns bad, again each day a problem lasts, and one
when it is fixed; with ``daily_summary``, a summary of every game and the
health once a day.  No keepers, no mail.

At most one mail a day says a problem is wrong, even when it comes and
goes (a slow SMTP server: each hour a mail waits over an hour, then goes).
A problem the keepers were told of is remembered once it clears, until a
day after that mail.  If it comes back meanwhile, it is not new: the
keepers hear nothing at once (a mail about another problem names it as
back), and when the day is up they are told again if it is wrong then,
saying how often it came back, or else once that it came and went.  A
"fixed" mail goes at once when a problem clears and the keepers' last word
of it is that it is wrong, so each answers one "wrong" mail and there are
at most as many: one a day, a flapping problem two mails a day at most,
and the keepers' last word is never wrong for more than a day.

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
        told a day ago and lasting, or back after the keepers heard them
        fixed), those still wrong that are not told now, and those fixed (or
        come and gone since the keepers heard them fixed).

        Each problem's entry remembers when its last "wrong" mail went
        (``told``) and its last "fixed" mail (``fixed_at``); once it clears
        it stays remembered (``cleared``) until a day after ``told``, or, if
        it came back meanwhile (``returns``), until the keepers hear so, so
        that a problem that comes and goes is not new each time it comes."""
        entries: dict[str, dict[str, Any]] = state["problems"]
        keys = {problem.key for problem in current}
        for key in [key for key, entry in entries.items() if "cleared" in entry and key not in keys]:
            entry = entries[key]
            if now >= from_iso(entry["told"]) + AGAIN and not entry.get("returns"):
                del entries[key]  # fixed and stayed fixed: forgotten
        fault = json.loads(self.store.get_meta("last_fault") or "null")
        if fault and first:
            state["fault_seen"] = fault["at"]  # from before there were keepers: not theirs
        elif fault and fault["at"] > state.get("fault_seen", ""):
            state["fault_seen"] = fault["at"]
            if "pass" not in keys:
                # Passes failed since the last look, and the last of them
                # could not say so (games.db took no writes): the pass that
                # went through now tells it, as fixed (or, if the keepers
                # heard of the passes failing within the day, as come and gone).
                entry = entries.setdefault("pass", {"since": fault.get("since", fault["at"])})
                if "cleared" in entry:
                    entry.update(since=fault.get("since", fault["at"]), cleared=iso(now))
                    entry["returns"] = entry.get("returns", 0) + 1
                entry["text"] = "the passes failed: " + fault["error"]
        fixed = []
        for key in [key for key in entries if key not in keys]:
            entry = entries[key]
            if "cleared" in entry:
                if entry.get("returns") and now >= from_iso(entry["told"]) + AGAIN:
                    # It came and went while the keepers thought it fixed, and
                    # its day is up: they hear it, once, and it is fixed now.
                    until = from_iso(entry["cleared"])
                    lasted = until - from_iso(entry["since"])
                    fixed.append(_said(entry, until=entry["cleared"], lasted=lasted))
                    entry.update(told=iso(now), fixed_at=iso(now), returns=0)
                continue
            lasted = now - from_iso(entry["since"])
            if _heard_wrong(entry) or (not entry.get("told") and lasted >= _wait(key)):
                # (one never told lasted too little to tell, but for a storage
                # fault told only once it cleared)
                fixed.append(_said(entry, until=iso(now), lasted=lasted))
                entry.setdefault("told", iso(now))
                entry["fixed_at"] = iso(now)
            elif not entry.get("told"):
                del entries[key]
                continue
            entry["cleared"] = iso(now)
        news, others = [], []
        for problem in current:
            entry = entries.setdefault(problem.key, {"since": problem.since or iso(now)})
            if "cleared" in entry:  # back
                del entry["cleared"]
                entry["since"] = problem.since or iso(now)
                entry["returns"] = entry.get("returns", 0) + 1
            entry["text"] = problem.text
            told = entry.get("told")
            due = from_iso(entry["since"]) + _wait(problem.key)
            if told:
                due = max(due, from_iso(told) + AGAIN)
            if now >= due:
                news.append(_said(entry, told_before=told))
                entry["told"] = iso(now)
                entry.pop("returns", None)
            elif told:
                others.append(_said(entry, back=not _heard_wrong(entry)))
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


def _said(entry: dict[str, Any], **more: Any) -> dict[str, Any]:
    """A problem as the keepers' mail says it: its entry, with what the
    template asks of every problem."""
    return {"returns": 0, "fixed_at": None, "told_before": None, "back": False, **entry, **more}


def _heard_wrong(entry: dict[str, Any]) -> bool:
    """Whether the keepers' last word of a problem is that it is wrong."""
    return bool(entry.get("told")) and entry.get("fixed_at", "") < entry["told"]


def _wait(key: str) -> timedelta:
    """How long a problem lasts before the keepers are told of it."""
    return FAILING_FOR if key == "pass" else timedelta(0)
