"""What the referee tells about its games without changing them: LIST for
anyone, ``referee status`` and ``referee history`` for the keeper."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from referee.engine.post import Post
from referee.rules import get_game
from referee.store import GameRow, GameState, MailState, Store
from referee.tables import Tables


@dataclass(eq=False)
class Reports:
    store: Store
    tables: Tables
    post: Post

    def listing(self, game_id: int | None = None) -> dict[str, Any]:
        """Games open for sign-up and running games, as LIST tells anyone
        (how many have signed up, never who)."""
        open_games = [
            {
                "id": g["id"],
                "kind": g["kind"],
                "title": get_game(g["kind"]).title,
                "signed": len(self.store.signups(g["id"])),
                "wanted": g["seats_wanted"],
            }
            for g in self.store.games(GameState.OPEN)
            if game_id is None or g["id"] == game_id
        ]
        running = []
        for game in self.store.games(GameState.RUNNING) if game_id is None else []:
            phase = self.store.phases(game["id"])[-1]
            running.append(
                {
                    "id": game["id"],
                    "title": get_game(game["kind"]).title,
                    "name": game["name"],
                    "phase": phase["label"],
                    "deadline": phase["deadline"],
                }
            )
        return {"open": open_games, "running": running}

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

    def history(self, game_id: int) -> str:
        """The game so far as plain text: every resolved phase and the standings."""
        table = self.tables.table(game_id)
        return self.post.composer.env.get_template(f"mail/{table.row['kind']}/history.txt.j2").render(
            **self.post.context(table, history=True)
        )
