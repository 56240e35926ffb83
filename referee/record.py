"""Replaying a game's record: the seed and the moves that counted, phase by phase.

This is the only way the referee computes a game's state, so what players are
told and what anyone can re-check from a published record are the same thing.
Pure: no store, no clock.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from referee.rules import Game, MoveError, Phase, Rng, get_game


def commitment(seed: bytes) -> str:
    """The public SHA-256 commitment of a game's secret seed."""
    return hashlib.sha256(seed).hexdigest()


def setup_rng(seed: bytes) -> Rng:
    return Rng(seed, "setup")


def resolve_rng(seed: bytes, phase: int) -> Rng:
    return Rng(seed, f"phase {phase} resolve")


def random_move_rng(seed: bytes, phase: int, seat: int) -> Rng:
    """The stream for a timeout move or a bot's move: one per seat and phase."""
    return Rng(seed, f"phase {phase} random seat {seat}")


@dataclass(frozen=True)
class PhaseRecord:
    number: int
    moves: Mapping[int, str] | None  # seat -> move text that counted; None while open
    new_bots: tuple[int, ...] = ()  # seats whose player left during this phase


@dataclass
class Step:
    """One resolved phase: the state before, the moves, the public events."""

    number: int
    phase: Phase
    before: Any
    moves: dict[int, Any]
    events: list[dict[str, Any]]


@dataclass
class Replay:
    state: Any
    steps: list[Step] = field(default_factory=list)


class ReplayError(ValueError):
    """The record disagrees with the rules at a phase."""

    def __init__(self, number: int, reason: str):
        super().__init__(f"phase {number}: {reason}")
        self.number = number


def replay(
    game: Game,
    seed: bytes,
    seats: int,
    options: Mapping[str, Any],
    initial_bots: tuple[int, ...],
    phases: list[PhaseRecord],
    start: Replay | None = None,
) -> Replay:
    """Fold the record through the rules.  The last phase may still be open.

    ``start`` is a replay of this same game's first phases, all resolved (a
    cache): the fold goes on from it instead of from the setup."""
    if start is None:
        state = game.setup(seats, setup_rng(seed), options)
        for seat in initial_bots:
            state = game.replace_by_bot(state, seat)
        result = Replay(state)
    else:
        result = Replay(start.state, list(start.steps))
    for record in phases[len(result.steps):]:
        phase = game.phase(result.state)
        if phase is None:
            raise ReplayError(record.number, "the record goes on after the game ended")
        for seat in record.new_bots:
            result.state = game.replace_by_bot(result.state, seat)
        if record.moves is None:
            break
        if set(record.moves) != set(phase.movers):
            raise ReplayError(record.number, "the moves recorded are not from the seats that owed them")
        moves = {}
        for seat in phase.movers:
            try:
                moves[seat] = game.parse_move(result.state, seat, record.moves[seat])
            except MoveError as error:
                raise ReplayError(record.number, f"seat {seat}: {error}") from None
        before = result.state
        result.state, events = game.resolve(before, moves, resolve_rng(seed, record.number))
        result.steps.append(Step(record.number, phase, before, moves, events))
    return result


# -- the published record, and checking it -----------------------------------

RECORD_FORMAT = "referee-record/1"


@dataclass(frozen=True)
class Verdict:
    """What ``verify`` found: the game replays exactly, or the first phase that does not."""

    ok: bool
    message: str
    phase: int | None = None  # where the record and the replay first disagree


def verify(record: Mapping[str, Any]) -> Verdict:
    """Replay a finished game from its published record alone: the seed must
    match its commitment, every random move must be the one its seeded stream
    gives, every move must be legal, and every phase's public events (prize,
    bids, winner, scores) must be what the rules make of them."""
    try:
        return _verify(record)
    except ReplayError as error:
        return Verdict(False, str(error), error.number)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        return Verdict(False, f"the record is not a complete {RECORD_FORMAT} record ({error!r})")


def _verify(record: Mapping[str, Any]) -> Verdict:
    if record.get("format") != RECORD_FORMAT:
        return Verdict(False, f"not a {RECORD_FORMAT} record")
    if not record.get("seed"):
        return Verdict(False, "the game has not ended: its seed is still secret")
    seed = bytes.fromhex(record["seed"])
    if commitment(seed) != record["seed_commitment"]:
        return Verdict(False, "the seed does not match the commitment announced at the start", 0)
    game = get_game(record["game"]["kind"])
    players = record["players"]
    state = game.setup(len(players), setup_rng(seed), record["game"]["options"])
    for player in players:
        if player["bot_from_phase"] == 0:
            state = game.replace_by_bot(state, player["seat"])
    for entry in record["phases"]:
        state = _check_phase(game, seed, state, players, entry)
    if game.phase(state) is not None:
        return Verdict(False, "the record ends before the game does", len(record["phases"]) + 1)
    result = game.result(state)
    winner = None if result is None or result.winner is None else players[result.winner]["name"]
    if winner != record.get("winner"):
        return Verdict(False, f"the replay's winner is {winner or 'nobody'}, the record says "
                       f"{record.get('winner') or 'nobody'}", len(record["phases"]))  # fmt: skip
    return Verdict(True, f"verified: {len(record['phases'])} phases replay exactly; "
                   f"winner: {winner or 'nobody'}")  # fmt: skip


def _check_phase(game: Game, seed: bytes, state: Any, players: list[Mapping[str, Any]],
                 entry: Mapping[str, Any]) -> Any:  # fmt: skip
    number = entry["number"]
    phase = game.phase(state)
    if phase is None:
        raise ReplayError(number, "the record goes on after the game ended")
    if phase.label != entry["label"]:
        raise ReplayError(number, f"the rules say this is {phase.label!r}, the record {entry['label']!r}")
    for player in players:
        if player["bot_from_phase"] == number:
            state = game.replace_by_bot(state, player["seat"])
    recorded = {move["seat"]: move for move in entry["moves"]}
    if set(recorded) != set(phase.movers) or len(recorded) != len(entry["moves"]):
        raise ReplayError(number, "the moves recorded are not one from each seat that owed one")
    moves = {}
    for seat in phase.movers:
        move = recorded[seat]
        _check_source(number, seat, move, players[seat], entry)
        try:
            moves[seat] = game.parse_move(state, seat, move["move"])
        except MoveError as error:
            raise ReplayError(number, f"seat {seat + 1}'s move {move['move']!r}: {error}") from None
        if move["source"] in ("random", "bot"):
            drawn = game.move_text(game.random_move(state, seat, random_move_rng(seed, number, seat)))
            if drawn != game.move_text(moves[seat]):
                raise ReplayError(number, f"seat {seat + 1}'s random move is {move['move']!r}, "
                                  f"but the seed draws {drawn!r}")  # fmt: skip
    state, events = game.resolve(state, moves, resolve_rng(seed, number))
    if _plain(events) != _plain(entry["events"]):
        raise ReplayError(number, "the record's result of this phase is not what the rules make "
                          "of its moves and the seed")  # fmt: skip
    return state


def _check_source(number: int, seat: int, move: Mapping[str, Any], player: Mapping[str, Any],
                  entry: Mapping[str, Any]) -> None:  # fmt: skip
    """A move's "how" must fit the seat: a bot's seat moves as a bot (random,
    so the seed decides it), a person's never does; a move by mail was
    received while the phase was open."""
    left = player["bot_from_phase"]
    bot = left is not None and (left == 0 or left < number)
    if bot and move["source"] != "bot":
        raise ReplayError(number, f"seat {seat + 1} is a bot by then, but its move is marked {move['source']!r}")
    if left is None and move["source"] == "bot":
        raise ReplayError(number, f"seat {seat + 1} is a person's, but its move is marked as a bot's")
    if move["source"] == "mail" and not entry["opened_at"] <= move["received_at"] <= entry["deadline"]:
        raise ReplayError(number, f"seat {seat + 1}'s move by mail was received at {move['received_at']}, "
                          f"outside the phase ({entry['opened_at']} to {entry['deadline']})")  # fmt: skip


def _plain(value: Any) -> Any:
    """As JSON would have it (tuples as lists, keys as strings), for comparing."""
    return json.loads(json.dumps(value, sort_keys=True))
