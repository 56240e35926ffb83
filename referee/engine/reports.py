"""What the referee tells about its games without changing them: LIST for
anyone, ``referee status`` and ``referee history`` for the keeper, and the
referee's health: what ``referee status`` heads its list with, and what the
keepers are told by mail (referee.engine.watch)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from referee.engine.post import Post
from referee.engine.seating import shown_option
from referee.mail.commands import tag
from referee.rules import GAMES, get_game
from referee.standings import standings
from referee.store import BounceRow, FaultAside, GameRow, GameState, MailState, Store
from referee.tables import Tables
from referee.timeutil import iso

LATE_MAIL = timedelta(hours=1)  # mail queued longer than this is late
# A bounce, or a mail refused for good, is a problem for this long: longer
# than the time between two mails to a player of a game, or a reminder.
RECENT_FAILURE = timedelta(days=3)


@dataclass(frozen=True)
class Problem:
    """Something wrong that needs the keeper.  ``key`` names it for as long
    as it lasts (the keepers are told of each key once a day: see
    referee.engine.watch), ``text`` says it in words, ``since`` is when it
    began, where the record knows."""

    key: str
    text: str
    since: str | None = None


@dataclass(eq=False)
class Reports:
    store: Store
    tables: Tables
    post: Post

    def listing(self, game_id: int | None = None) -> dict[str, Any]:
        """Games open for sign-up and running games, as LIST tells anyone
        (how many have signed up, never who); a running game that the
        keeper paused says since when and until when (no deadline runs);
        and how many wait on standby for each kind of game (never who)."""
        open_games = [
            {
                "id": g["id"],
                "kind": g["kind"],
                "title": get_game(g["kind"]).title,
                "signed": len(self.store.signups(g["id"])),
                "wanted": g["seats_wanted"],
                "least": get_game(g["kind"]).min_seats,
                "options": _options_shown(g),
            }
            for g in self.store.games(GameState.OPEN)
            if game_id is None or g["id"] == game_id
        ]
        running = []
        paused = self.store.paused() if game_id is None else {}
        for game in self.store.games(GameState.RUNNING) if game_id is None else []:
            phase = self.store.phases(game["id"])[-1]
            pause = paused.get(game["id"])
            running.append(
                {
                    "id": game["id"],
                    "title": get_game(game["kind"]).title,
                    "name": game["name"],
                    "phase": phase["label"],
                    "deadline": phase["deadline"],
                    "paused": pause and {"at": pause["at"], "until": pause["detail"].get("until")},
                }
            )
        standby = [
            {"kind": kind, "title": get_game(kind).title, "waiting": waiting}
            for kind, waiting in self.store.standby_counts().items()
            if kind in GAMES  # (a game no longer installed offers no seats)
        ]
        return {"open": open_games, "running": running, "standby": standby}

    def standings(self, kind: str | None = None) -> dict[str, Any]:
        """The standings over the finished games (of ``kind``, if given), as
        STANDINGS tells anyone and the site's page shows them
        (referee.standings): players by name, never by address."""
        return {
            "standings": standings(self.store, self.tables, kind),
            "kind": kind,
            "titles": {kind: game.title for kind, game in GAMES.items()},
        }

    def status(self, game_id: int) -> dict[str, Any]:
        """The public state of a game, as ``referee status --json`` prints it."""
        row = self.store.game(game_id)
        if row is not None and row["state"] == GameState.OPEN:
            return self._signup_status(row)
        table = self.tables.table(game_id)
        standing = table.rules.standing(table.state)
        result = table.rules.result(table.state)
        phase = table.open_phase
        finished = table.row["state"] == GameState.FINISHED
        return {
            "id": table.id,
            "kind": table.row["kind"],
            "name": table.row["name"],
            "state": table.row["state"],
            "phase": phase
            and {
                "number": phase["number"],
                "label": phase["label"],
                "deadline": phase["deadline"],
                "waiting_for": [table.label(s) for s in table.waiting_for(phase)],
            },
            "players": [
                {
                    "seat": s["seat"],
                    "address": s["address"],
                    "score": None if standing is None else standing[s["seat"]],
                    "bot": bool(s["bot"]),
                    "bounces": self._bounces(s["address"]),
                }
                for s in table.seats
            ],
            "winner": table.label(result.winner) if result and result.winner is not None else None,
            "seed_commitment": table.row["seed_commitment"],
            "seed": table.row["seed"] if finished else None,
            "created_at": table.row["created_at"],
            "finished_at": table.row["finished_at"],
            "paused": None if (pause := table.paused) is None else {"at": pause["at"], **pause["detail"]},
            "interventions": [
                {
                    "phase": i["phase"],
                    "at": i["at"],
                    "act": i["act"],
                    "by": i["by"] or "the referee",
                    "why": i["why"],
                    **i["detail"],
                }
                for i in table.interventions
            ],
            "undelivered": [
                {"to": m["recipients"], "subject": m["subject"], "error": m["last_error"]}
                for m in self.store.outbox(MailState.FAILED, game_id=table.id)
            ],
        }

    def _signup_status(self, row: GameRow) -> dict[str, Any]:
        """A game open for sign-up: who has joined so far."""
        signups = self.store.signups(row["id"])
        return {
            "id": row["id"],
            "kind": row["kind"],
            "name": row["name"],
            "state": GameState.OPEN,
            "phase": None,
            "seats_wanted": row["seats_wanted"],
            "players": [
                {
                    "seat": None,
                    "address": s["address"],
                    "score": None,
                    "bot": False,
                    "bounces": self._bounces(s["address"]),
                }
                for s in signups
            ],
            "winner": None,
            "seed_commitment": row["seed_commitment"],
            "seed": None,
            "created_at": row["created_at"],
            "finished_at": None,
            "paused": None,
            "interventions": [],
            "undelivered": [],
        }

    def _bounces(self, address: str | None) -> list[dict[str, str]]:
        """Delivery failures of the referee's mail to a player, from their bounces."""
        rows = self.store.bounces(address) if address else []
        return [{"at": b["at"], "status": b["status"], "diagnostic": b["diagnostic"]} for b in rows]

    # -- the referee's health ---------------------------------------------------

    def problems(self) -> list[Problem]:
        """What is wrong now, in a few cheap reads (the runner asks after
        every pass): the last pass failed, mail waiting over an hour to be
        sent, mail refused for good lately, messages quarantined, a player's
        mail bouncing lately, a restore whose mail the next run has still to
        handle again.  A refusal or a bounce is "lately" for RECENT_FAILURE:
        nothing says when an address works again but mail that stops
        bouncing."""
        store, now = self.store, self.post.clock()
        last_pass, last_fault = self._pass_and_fault()
        found = []
        if last_fault and ("kept_in" in last_fault or not last_pass or last_fault["at"] > last_pass["at"]):
            since = last_fault.get("since", last_fault["at"])
            found.append(Problem("pass", "the last pass failed: " + last_fault["error"], since))
        if late := store.count_late_mail(iso(now - LATE_MAIL)):
            found.append(Problem("late", f"{late} mail(s) waiting over an hour to be sent"))
        recent = iso(now - RECENT_FAILURE)
        if refused := store.count_refused_mail(recent):
            days = RECENT_FAILURE.days
            found.append(Problem("refused", f"{refused} mail(s) refused for good in the last {days} days"))
        if quarantined := store.count_failed_messages():
            found.append(Problem("quarantined", f"{quarantined} message(s) quarantined"))
        found += self._bouncing(recent)
        restore = json.loads(store.get_meta("restored") or "null")
        if restore:
            found.append(
                Problem(
                    "restored",
                    f"restored from {restore['backup']} at {restore['at']}: the next run handles the mail "
                    f"filed since {restore['since'] or 'the start'} again",
                    restore["at"],
                )
            )
        return found

    def health(self) -> dict[str, Any]:
        """What a keeper checks at a glance (``referee status``): the problems
        in words, the last pass that went through, the last fault, mail
        waiting or refused, messages quarantined."""
        store = self.store
        last_pass, last_fault = self._pass_and_fault()
        queued, refused = store.outbox(MailState.QUEUED), store.outbox(MailState.FAILED)
        return {
            "problems": [problem.text for problem in self.problems()],
            "last_pass": last_pass,
            "last_fault": last_fault,
            "deadlines_enforced": store.get_meta("last_tick"),
            "outbox": {
                "queued": len(queued),
                "oldest": queued[0]["created_at"] if queued else None,
                "last_error": next((m["last_error"] for m in queued if m["last_error"]), None),
                "refused": [
                    {"to": m["recipients"], "subject": m["subject"], "error": m["last_error"]} for m in refused
                ],
            },
            "quarantined": [
                {
                    "key": m["key"],
                    "sender": m["sender"],
                    "subject": m["subject"],
                    "handled_at": m["handled_at"],
                    "outcome": f"{m['code']}: {m['detail']}",
                }
                for m in store.failed_messages()
            ],
            "database": {"path": str(store.path), "bytes": store.size()},
            # what only a command that connects can tell: `status` connects to no server
            "not_checked": [f"{unread}; run and serve will need it" for unread in self.post.config.unread_passwords()],
        }

    @staticmethod
    def health_lines(health: dict[str, Any], servers: bool = False, subjects: bool = True) -> list[str]:
        """The health (``health``) as `referee status` and a keeper's STATUS by
        mail print it; with ``servers`` (the config names mail servers), what
        could not be checked of them without connecting."""
        problems, last_pass, fault, outbox = (health[k] for k in ("problems", "last_pass", "last_fault", "outbox"))
        lines = [f"health: {'ok' if not problems else '; '.join(problems)}"]
        lines.append(
            f"last pass: {last_pass['at']} (received {last_pass['received']}, sent {last_pass['sent']})"
            if last_pass
            else "last pass: never"
        )
        lines.append(
            f"last fault: {fault['at']}: {fault['error']}"
            + (f" (kept in {fault['kept_in']}: games.db could not take it)" if "kept_in" in fault else "")
            if fault
            else "last fault: none"
        )
        lines.append(
            f"outbox: {outbox['queued']} queued"
            + (
                f" (oldest {outbox['oldest']}; last error: {outbox['last_error'] or 'none'})"
                if outbox["queued"]
                else ""
            )
            + f", {len(outbox['refused'])} refused for good"
        )
        # (``subjects`` False, by mail: one to a seat carries its reply token, a player's their words)
        lines += [
            f"  undelivered to {', '.join(m['to'])}" + (f": {m['subject']}" if subjects else "") + f" ({m['error']})"
            for m in outbox["refused"]
        ]
        lines.append(f"quarantined: {len(health['quarantined'])} message(s)")
        lines += [
            f"  {m['handled_at']} from {m['sender']}"
            + (f": {m['subject']!r}" if subjects else "")
            + f": {m['outcome']}"
            for m in health["quarantined"][:5]
        ]
        lines.append(f"deadlines last enforced: {health['deadlines_enforced'] or 'never'}")
        lines.append(f"database: {health['database']['path']}, {health['database']['bytes'] / 2**20:.1f} MB")
        if servers:
            lines.append("mail servers: not connected to (`referee run --once` tries them and their passwords)")
            lines += [f"  not checked: {unread}" for unread in health["not_checked"]]
        return lines

    def _bouncing(self, since: str) -> list[Problem]:
        """A problem for each address whose mail bounced since then, while it
        holds a seat a person plays in a running game: one key an address."""
        bounces: dict[str, list[BounceRow]] = {}
        for bounce in self.store.bounces_since(since):
            bounces.setdefault(bounce["address"], []).append(bounce)
        found = []
        for address, theirs in bounces.items():
            games = self.store.games_of(address)
            if not games:
                continue  # no longer anyone's seat: the keeper has nothing to do
            first, last = theirs[0], theirs[-1]
            tags = ", ".join(tag(game["kind"], game["id"]) for game in games)
            text = f"mail to {address} bounces ({len(theirs)} since {first['at']}, the last {last['status']}): {tags}"
            found.append(Problem(f"bounce {address}", text, first["at"]))
        return found

    def _pass_and_fault(self) -> tuple[dict | None, dict | None]:
        """The last pass that went through and the last fault (the one kept
        beside games.db when games.db could not take it, with ``kept_in``)."""
        store = self.store
        last_pass, last_fault = (json.loads(store.get_meta(key) or "null") for key in ("last_pass", "last_fault"))
        aside = FaultAside(store.path)
        if kept := aside.read():  # games.db could not take it, and no pass has gone through since
            last_fault = {**kept, "kept_in": str(aside.path)}
        return last_pass, last_fault

    def history(self, game_id: int) -> str:
        """The game so far as plain text: every resolved phase and the standings."""
        table = self.tables.table(game_id)
        return self.post.composer.env.get_template(f"mail/{table.row['kind']}/history.txt.j2").render(
            **self.post.context(table, history=True)
        )


def _options_shown(game: GameRow) -> str:
    """The options an open game was asked for where they differ from its
    kind's defaults, and its press if chosen, as a JOIN names them
    ("turn_limit=3 press=grey"); "" for none."""
    defaults = get_game(game["kind"]).options
    named = [f"{name}={shown_option(value)}" for name, value in game["options"].items() if defaults.get(name) != value]
    return " ".join(named + ([f"press={game['press']}"] if game["press"] else []))
