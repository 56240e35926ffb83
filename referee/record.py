"""Replaying a game's record: the seed and the moves that counted, phase by phase.

This is the only way the referee computes a game's state, so what players are
told and what anyone can re-check from a published record are the same thing.
Pure: no store, no clock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from referee.rules import Game, MoveError, Phase, Rng


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
) -> Replay:
    """Fold the record through the rules.  The last phase may still be open."""
    state = game.setup(seats, setup_rng(seed), options)
    for seat in initial_bots:
        state = game.replace_by_bot(state, seat)
    result = Replay(state)
    for record in phases:
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
