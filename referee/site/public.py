"""What the public may know of a game: its record for `verify`, and what
its pages show.

Everything here comes from the record (seeds, the moves of resolved phases
that the rules revealed) and the rules' public view (``view(state, None)``),
never from a seat's view: so an unresolved move, a bid cancelled unseen, a
hand or any hidden value cannot reach the site.
Players are named by the part of their address before the @, so the site
does not hand their addresses to spammers.
"""

from __future__ import annotations

from typing import Any

from referee.site.chart import score_chart
from referee.store import GameState
from referee.tables import Table


def public_names(table: Table) -> list[str]:
    """A name per seat: the address's local part (with its domain when two
    players share a local part), or "bot N"."""
    return table.names


def game_record(table: Table, since: int = 1) -> dict[str, Any]:
    """The JSON record of a game that ``referee verify`` replays: its seats,
    the seed's commitment, each resolved phase with the moves that counted
    (how each was made and when the server received it; what each was, once
    the rules revealed it) and the events the rules announced; after the
    end, the seed, the winner and every move.  Its phases from number
    ``since`` only (a long game's site writes only its newest: the rest of
    the record is on the site already)."""
    finished = table.row["state"] == GameState.FINISHED
    record = table.record_head()
    phases = table.record_phases(since)
    if not finished:
        for entry, step in zip(phases, table.replay.steps[since - 1 :]):
            shown = table.rules.revealed(step.before, step.moves, step.events)
            entry["moves"] = [
                {**move, "move": move["move"] if move["seat"] in shown else None} for move in entry["moves"]
            ]
    result = table.rules.result(table.state)
    return {
        **record,
        "seed": record["seed"] if finished else None,
        "phases": phases,
        "winner": table.names[result.winner] if finished and result and result.winner is not None else None,
    }


def page_context(table: Table, since: int = 1) -> dict[str, Any]:
    """What a game's page shows: the record, the scores round by round (or
    auction by auction: only of those that ended), and the open phase (who
    has moved, never what).  The record's phases, and the ``rounds``, from
    number ``since`` only (game_record); the chart has every phase."""
    record = game_record(table, since)
    names = public_names(table)
    view = table.rules.view(table.state, None)
    running = table.row["state"] == GameState.RUNNING
    phase = table.open_phase if running else None  # (a cancelled game's last phase never closes)
    current = None
    if phase is not None:
        waiting = table.waiting_for(phase)
        current = {
            "label": phase["label"],
            "deadline": phase["deadline"],
            "moved": [names[s] for s in phase["movers"] if s not in waiting],
            "sealed": bool(phase["sealed"]),
            "waiting": [names[s] for s in waiting],
            "paused": table.paused and {"at": table.paused["at"], "until": table.paused["detail"].get("until")},
        }
    labels = {row["number"]: row["label"] for row in table.phases}  # (the resolved phases', and the open one's)
    standing = table.rules.standing(table.state, view)
    players = [
        {
            **p,
            "score": None if standing is None else standing[p["seat"]],
            "bot_from": labels.get(p["bot_from_phase"], f"phase {p['bot_from_phase']}"),
        }
        for p in record["players"]
    ]
    return {
        "record": record,
        "game": record["game"],
        "players": players,
        "bots_ahead": _bots_ahead(players, record["winner"]),
        "names": names,
        "phase": current,
        "rounds": [{**entry, "how": {m["seat"]: m["source"] for m in entry["moves"]}} for entry in record["phases"]],
        "chart": score_chart(names, _scored(table, record), phase["label"] if phase is not None else None),
        "view": view,
        "acts": _acts(record["interventions"], labels, names),
        "cancelled": next((act for act in record["interventions"] if act["act"] == "cancel"), None),
    }


def _scored(table: Table, record: dict[str, Any]) -> list[dict[str, Any]]:
    """Every resolved phase's label and events: what the chart plots (the
    events are public: the record has them whole while the game runs).
    The record's own phases when it has every one (a game's first render,
    or a forced one: no second list of as many dicts)."""
    if len(record["phases"]) == len(table.replay.steps):
        return record["phases"]
    return [{"label": row["label"], "events": step.events} for row, step in zip(table.phases, table.replay.steps)]


def _acts(interventions: list[dict[str, Any]], labels: dict[int, str], names: list[str]) -> list[dict[str, Any]]:
    """The record's interventions as the page lists them: each with its
    phase's label and, where it concerns a seat, ``who`` played that seat
    when it was made (a takeover later gives the seat another name: "bob is
    away" stays bob's, never the newcomer's)."""
    playing = list(names)
    acts: list[dict[str, Any]] = []
    for act in reversed(interventions):
        seat = act.get("seat")
        who = playing[seat] if isinstance(seat, int) and 0 <= seat < len(playing) else None
        if act["act"] == "replace" and who is not None:
            playing[seat] = act.get("was") or who  # before the takeover the seat was the one who left
        acts.append({**act, "label": labels.get(act["phase"], f"phase {act['phase']}"), "who": who})
    return acts[::-1]


def _bots_ahead(players: list[dict[str, Any]], winner: str | None) -> list[str]:
    """The bots' seats that scored more than the person who won: the page
    says why they did not win (a bot never wins, in every game here)."""
    best = next((p["score"] for p in players if p["name"] == winner), None)
    if best is None:
        return []
    return [
        f"{p['name']} ({p['score']})" for p in players if p["bot_from_phase"] is not None and _beyond(p["score"], best)
    ]


def _beyond(score: Any, best: Any) -> bool:
    try:
        return score > best
    except TypeError:  # a score that is not a number: nothing to explain
        return False
