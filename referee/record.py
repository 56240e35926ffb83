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
    """The record disagrees with the rules at phase ``number``.  The message
    names the phase by ``where``: by default its number, but ``verify`` names
    it as the mails do, by the rules' label ("Round 3 of 13")."""

    def __init__(self, number: int, reason: str, where: str | None = None):
        super().__init__(f"{where or f'phase {number}'}: {reason}")
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

# How a move was made, as the engine records it: by mail; at random for a
# missed deadline; by a bot; the only legal move, made for the seat at once.
SOURCES = ("mail", "random", "bot", "forced")


@dataclass(frozen=True)
class Verdict:
    """What ``verify`` found: the game replays exactly, or the first phase that does not."""

    ok: bool
    message: str  # names the phase as the mails do: "Round 3 of 13: ..."
    phase: int | None = None  # where the record and the replay first disagree


def verify(record: Mapping[str, Any]) -> Verdict:
    """Replay a finished game from its published record alone: the seed must
    match its commitment, every random or bot move must be the one its seeded
    stream gives, a forced move the seat's only legal move, every move legal,
    and every phase's public events (prize, bids, winner, scores) what the
    rules make of them."""
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
    phases = len(record["phases"])
    missing = game.phase(state)
    if missing is not None:
        raise ReplayError(phases + 1, "the record ends before the game does", missing.label)
    result = game.result(state)
    winner = None if result is None or result.winner is None else players[result.winner]["name"]
    if winner != record.get("winner"):
        last = f"after {record['phases'][-1]['label']}" if phases else "at the start"  # labels checked above
        raise ReplayError(phases, f"the replay's winner is {winner or 'nobody'}, the record says "
                          f"{record.get('winner') or 'nobody'}", last)  # fmt: skip
    return Verdict(True, f"verified: {phases} phases replay exactly; winner: {winner or 'nobody'}")


def _check_phase(game: Game, seed: bytes, state: Any, players: list[Mapping[str, Any]],
                 entry: Mapping[str, Any]) -> Any:  # fmt: skip
    """One phase of the record against the rules; the state after it.  Errors
    name the phase by the rules' label, whatever label the record gives it."""
    number = entry["number"]
    phase = game.phase(state)
    if phase is None:
        raise ReplayError(number, f"the record goes on with a phase it calls {entry['label']!r}",
                          "after the game's end")  # fmt: skip
    where = phase.label
    if phase.label != entry["label"]:
        raise ReplayError(number, f"the record calls this phase {entry['label']!r}", where)
    for player in players:
        if player["bot_from_phase"] == number:
            state = game.replace_by_bot(state, player["seat"])
    recorded = {move["seat"]: move for move in entry["moves"]}
    if set(recorded) != set(phase.movers) or len(recorded) != len(entry["moves"]):
        raise ReplayError(number, "the moves recorded are not one from each seat that owed one", where)
    moves = {}
    for seat in phase.movers:
        move = recorded[seat]
        _check_source(number, where, seat, move, players[seat], entry)
        try:
            moves[seat] = game.parse_move(state, seat, move["move"])
        except MoveError as error:
            raise ReplayError(number, f"seat {seat + 1}'s move {move['move']!r}: {error}", where) from None
        _check_made(game, seed, state, number, where, seat, move, moves[seat])
    state, events = game.resolve(state, moves, resolve_rng(seed, number))
    if _plain(events) != _plain(entry["events"]):
        raise ReplayError(number, "the record's result of this phase is not what the rules make "
                          "of its moves and the seed", where)  # fmt: skip
    return state


def _check_source(number: int, where: str, seat: int, move: Mapping[str, Any], player: Mapping[str, Any],
                  entry: Mapping[str, Any]) -> None:  # fmt: skip
    """A move's "how" must be one the engine writes and fit the seat: a bot's
    seat moves as a bot (random, so the seed decides it), a person's never
    does; a move by mail was received while the phase was open."""
    source = move["source"]
    if source not in SOURCES:
        raise ReplayError(number, f"seat {seat + 1}'s move is marked {source!r}, which is not how a "
                          f"move is made (only {', '.join(SOURCES)})", where)  # fmt: skip
    left = player["bot_from_phase"]
    if left is not None and left < number and source != "bot":
        raise ReplayError(number, f"seat {seat + 1} is a bot by then, but its move is marked {source!r}", where)
    if (left is None or left > number) and source == "bot":
        raise ReplayError(number, f"seat {seat + 1} is a person's, but its move is marked as a bot's", where)
    if source == "mail" and not entry["opened_at"] <= move["received_at"] <= entry["deadline"]:
        raise ReplayError(number, f"seat {seat + 1}'s move by mail was received at {move['received_at']}, "
                          f"outside the phase ({entry['opened_at']} to {entry['deadline']})", where)  # fmt: skip


def _check_made(game: Game, seed: bytes, state: Any, number: int, where: str, seat: int,
                move: Mapping[str, Any], parsed: Any) -> None:  # fmt: skip
    """A move the referee made for a seat left no choice: a random or bot
    move is what the seat's seeded stream draws, a forced move the seat's
    only legal move (parsing proved it legal).  A move by mail is the
    player's own choice."""
    if move["source"] in ("random", "bot"):
        drawn = game.move_text(game.random_move(state, seat, random_move_rng(seed, number, seat)))
        if drawn != game.move_text(parsed):
            raise ReplayError(number, f"seat {seat + 1}'s random move is {move['move']!r}, "
                              f"but the seed draws {drawn!r}", where)  # fmt: skip
    elif move["source"] == "forced":
        legal = len(game.legal_moves(state, seat))
        if legal != 1:
            raise ReplayError(number, f"seat {seat + 1}'s move {move['move']!r} is marked forced, but "
                              f"the seat had {legal} legal moves, not one", where)  # fmt: skip


def _plain(value: Any) -> Any:
    """As JSON would have it (tuples as lists, keys as strings), for comparing."""
    return json.loads(json.dumps(value, sort_keys=True))
