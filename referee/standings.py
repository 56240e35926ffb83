"""The standings: what a club's finished games add up to, per player, per
kind of game and over all of them.  The site's standings page and the
STANDINGS answer by mail both show what ``standings`` computes here.

What counts (docs/playing.md, "Standings"):

- Only finished games; a game the keeper cancelled has no result and is
  left out.  A seat a bot plays from the start is nobody's: bots are not
  players.
- A player is one address (a seat's player who moved to another address,
  ADDRESS, is the same player at the new one), named in public as the
  site names players: the address's local part, with its domain only
  where two players share a local part; never the address.
- Each seat's place: the winner first, then by score, equal scores
  sharing a place (so a seat ranks below the winner even where a game's
  rules gave the win to a lower score: Auction's shared totals).
- A player who left a game before its end (RESIGN, or a takeover) played
  it: it counts as played and placed last, with no points and no win;
  the moves they made before leaving count.
- A move counts as by mail or at random (the deadline passed); moves a
  bot made after its player left, and the only legal move the referee
  made at once, are neither.

It reads the stored rows only: each game's result is written when it ends
(``Store.add_results``); a game finished before there were results is
replayed here, once per read.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from referee.record import MoveSource
from referee.rules import GAMES, Result
from referee.store import Act, ResultRow, StorageFault, Store
from referee.tables import Table, Tables, name_seats

log = logging.getLogger(__name__)

PAGE = "standings.html"  # the site's standings page, from the site's root

_COUNTED = (MoveSource.MAIL, MoveSource.RANDOM)  # the moves a player made, or missed


@dataclass
class Line:
    """One player's standing, in one kind of game or over all of them."""

    name: str
    games: int = 0
    wins: int = 0
    left: int = 0  # games the player left before their end
    points: int = 0
    places: list[tuple[int, int]] = field(default_factory=list)  # (place, seats) per game
    by_mail: int = 0
    at_random: int = 0

    @property
    def average_place(self) -> float:
        return sum(place for place, _ in self.places) / len(self.places)

    @property
    def placing(self) -> int:
        """How far up the table the player finished, on average, in percent:
        100 is first in every game, 0 last in every game (the share of the
        other seats they finished ahead of, counting a shared place half)."""
        shares = [(seats - place) / (seats - 1) if seats > 1 else 1.0 for place, seats in self.places]
        return round(100 * sum(shares) / len(shares))

    @property
    def mail_share(self) -> int | None:
        """The share of the player's moves made by mail rather than at random
        at the deadline, in percent; None: no move counted."""
        moves = self.by_mail + self.at_random
        return round(100 * self.by_mail / moves) if moves else None


@dataclass
class Standings:
    games: int  # the finished games counted
    cancelled: int  # the finished games the keeper cancelled: not counted
    kinds: dict[str, list[Line]]  # per kind of game played, in GAMES' order: its players, best first
    overall: list[Line]  # every player, best first


@dataclass
class _Seat:
    """One player's part in one game."""

    place: int
    seats: int
    points: int = 0
    won: bool = False
    left: bool = False
    by_mail: int = 0
    at_random: int = 0


def places(scores: tuple[int, ...] | list[int], winner: int | None) -> list[int]:
    """Each seat's place: the winner first, then by score, equal scores
    sharing a place (competition ranking: 1, 2, 2, 4)."""
    first = [winner] if winner is not None else []
    return [
        1
        if seat == winner
        else 1 + len(first) + sum(1 for other, score in enumerate(scores) if other != winner and score > mine)
        for seat, mine in enumerate(scores)
    ]


def game_results(result: Result) -> list[dict[str, Any]]:
    """What ``results`` keeps of a finished game's result, per seat."""
    ranks = places(result.scores, result.winner)
    return [
        {"seat": seat, "score": score, "place": ranks[seat], "won": int(seat == result.winner)}
        for seat, score in enumerate(result.scores)
    ]


def table_results(table: Table) -> list[dict[str, Any]]:
    """A finished game's results by its replay (none for a cancelled game,
    which has no result)."""
    result = table.rules.result(table.state)
    return [] if result is None or table.cancelled else game_results(result)


def replayed_results(tables: Tables, game_id: int) -> list[dict[str, Any]] | None:
    """``table_results`` of a finished game read by ``tables``; None when
    it cannot be replayed (its kind no longer installed, its record damaged):
    such a game is left out of the standings, and stops nothing else."""
    try:
        return table_results(tables.table(game_id))
    except StorageFault:
        raise
    except Exception as error:  # noqa: BLE001 - any fault of one old game's replay
        log.warning("game %d cannot be replayed (%s): it is left out of the standings", game_id, error)
        return None


def standings(store: Store, tables: Tables, kind: str | None = None) -> Standings:
    """Every player's standing over the finished games (of ``kind`` only,
    if given): see the module's text for what counts."""
    rows = store.results()
    unscored, cancelled = store.unscored()
    for game_id in unscored:
        if replayed_results(tables, game_id) is not None:  # (else left out: it cannot be replayed)
            rows += _replayed(tables.table(game_id))
    if kind is not None:
        rows = [row for row in rows if row["kind"] == kind]
    games: dict[int, list[ResultRow]] = defaultdict(list)
    for row in rows:
        games[row["game_id"]].append(row)
    changes = store.seat_changes()
    same = _same_players(changes)
    takeovers: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    moved: dict[tuple[int, int], dict[str, str]] = defaultdict(dict)  # a seat's new address -> the one it left
    for act in changes:
        if act["act"] == Act.REPLACE:
            takeovers[act["game_id"], act["detail"]["seat"]].append(act["detail"])
        elif act["detail"].get("was_address"):
            moved[act["game_id"], act["detail"]["seat"]][act["detail"]["address"].lower()] = act["detail"][
                "was_address"
            ]
    moves: dict[tuple[int, int, int], dict[str, int]] = defaultdict(dict)
    for tally in store.move_tally(_COUNTED):
        moves[tally["game_id"], tally["seat"], tally["stint"]][tally["source"]] = tally["moves"]
    played: list[tuple[str, str, _Seat]] = []  # (kind, player, their part in one game)
    shown: dict[str, str] = {}  # player -> their address as last seen (its case)
    for game_id, seats in games.items():
        for player, part, address in _parts(game_id, seats, takeovers, moves, same, moved):
            played.append((seats[0]["kind"], player, part))
            shown[player] = address
    names = dict(zip(shown, name_seats(list(shown.values())), strict=True))
    per_kind: dict[str, dict[str, Line]] = defaultdict(dict)
    overall: dict[str, Line] = {}
    for game_kind, player, part in played:
        for lines in (per_kind[game_kind], overall):
            _add(lines.setdefault(player, Line(names[player])), part)
    return Standings(
        games=len(games),
        cancelled=cancelled if kind is None else 0,
        kinds={k: _ranked(per_kind[k]) for k in [*GAMES, *sorted(per_kind)] if per_kind.get(k)},
        overall=_ranked(overall),
    )


def _replayed(table: Table) -> list[ResultRow]:
    """A finished game's rows as ``Store.results`` gives them, by replay."""
    return [
        {
            **result,  # type: ignore[typeddict-item]
            "game_id": table.id,
            "kind": table.row["kind"],
            "address": table.seats[result["seat"]]["address"],
            "bot_since_phase": table.seats[result["seat"]]["bot_since_phase"],
        }
        for result in table_results(table)
    ]


def _parts(
    game_id: int,
    seats: list[ResultRow],
    takeovers: dict[tuple[int, int], list[dict[str, Any]]],
    moves: dict[tuple[int, int, int], dict[str, int]],
    same: dict[str, str],
    moved: dict[tuple[int, int], dict[str, str]],
) -> list[tuple[str, _Seat, str]]:
    """Each player's part in one game: (the player, their part, the address
    the game named them by: the one they played from before they moved,
    ADDRESS, for the game's name of them never changed and the new one is
    nobody else's business).  A seat taken over had a player per stint:
    those before the last left the game; the last, too, if a bot has the
    seat at the end."""
    parts: dict[str, tuple[_Seat, str]] = {}
    for row in seats:
        changes = takeovers.get((game_id, row["seat"]), [])
        holders = [change["was_address"] for change in changes[:1]] + [change["address"] for change in changes[:-1]]
        holders.append(row["address"])
        for stint, address in enumerate(holders):
            if address is None:  # a bot's stint: nobody's
                continue
            last = stint == len(holders) - 1
            stayed = last and row["bot_since_phase"] is None
            part = (
                _Seat(place=row["place"], seats=len(seats), points=row["score"] or 0, won=bool(row["won"]))
                if stayed
                else _Seat(place=len(seats), seats=len(seats), left=True)
            )
            made = moves.get((game_id, row["seat"], stint), {})
            part.by_mail, part.at_random = made.get(MoveSource.MAIL, 0), made.get(MoveSource.RANDOM, 0)
            player = _player(address, same)
            if player in parts:  # (back in the seat they left: one game, its end theirs if they stayed to it)
                earlier = parts[player][0]
                keep, add = (part, earlier) if stayed else (earlier, part)
                keep.by_mail, keep.at_random = keep.by_mail + add.by_mail, keep.at_random + add.at_random
                part = keep
            parts[player] = (part, _named_by(address, moved.get((game_id, row["seat"]), {})))
    return [(player, part, address) for player, (part, address) in parts.items()]


def _named_by(address: str, moved: dict[str, str]) -> str:
    """The address a seat's player was named by in its game: the one they
    played from before moving (``moved``: the seat's new address -> the one it left)."""
    seen = set()
    while address.lower() in moved and address.lower() not in seen:
        seen.add(address.lower())
        address = moved[address.lower()]
    return address


def _same_players(changes: list[Any]) -> dict[str, str]:
    """Each address a player moved from (ADDRESS), to the one they moved to."""
    return {
        act["detail"]["was_address"].lower(): act["detail"]["address"].lower()
        for act in changes
        if act["act"] == Act.ADDRESS and act["detail"].get("was_address")
    }


def _player(address: str, same: dict[str, str]) -> str:
    """The player an address is: the last address they moved to."""
    player, seen = address.lower(), set()
    while player in same and player not in seen:  # (a move back and forth ends where it began)
        seen.add(player)
        player = same[player]
    return player


def _add(line: Line, part: _Seat) -> None:
    line.games += 1
    line.wins += part.won
    line.left += part.left
    line.points += part.points
    line.places.append((part.place, part.seats))
    line.by_mail += part.by_mail
    line.at_random += part.at_random


def _ranked(lines: dict[str, Line]) -> list[Line]:
    """Best first: by wins, then placing, then more games, then by name."""
    return sorted(lines.values(), key=lambda line: (-line.wins, -line.placing, -line.games, line.name))
