"""Replaying a game's record: the seed and the moves that counted, phase by phase.

This is the only way the referee computes a game's state, so what players are
told and what anyone can re-check from a published record are the same thing.
Pure: no store, no clock.
"""

from __future__ import annotations

import gc
import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from referee.rules import GAMES, Game, MoveError, OptionError, Phase, Rng, get_game
from referee.store import Act, GameState
from referee.timeutil import show_duration


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
    new_people: tuple[int, ...] = ()  # bot seats a person takes over from this phase


@dataclass(slots=True)  # (no __dict__: a replay makes one for every phase, and keeps them all)
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
    cache): the fold goes on from it instead of from the setup.

    Python's cyclic garbage collector is off while the record is folded:
    the states, moves and events a replay makes hold no cycles (their
    reference counts free what is dropped), yet every collection looked
    through them all, and through every replay kept before (issue 36: a
    tenth of a replay of 200 finished Bluff games, at the site's own
    thresholds).  It is on again after, as it was."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _replay(game, seed, seats, options, initial_bots, phases, start)
    finally:
        if collecting:
            gc.enable()


def _replay(
    game: Game,
    seed: bytes,
    seats: int,
    options: Mapping[str, Any],
    initial_bots: tuple[int, ...],
    phases: list[PhaseRecord],
    start: Replay | None,
) -> Replay:
    """``replay``, the collector aside."""
    if start is None:
        state = game.setup(seats, setup_rng(seed), options)
        for seat in initial_bots:
            state = game.replace_by_bot(state, seat)
        steps: list[Step] = []
    else:
        state, steps = start.state, list(start.steps)
    # (the state and the steps in locals, and the rules' methods bound once: a step is a few microseconds)
    phase_of, parse, resolve = game.phase, game.parse_move, game.resolve
    for record in phases[len(steps) :]:
        phase = phase_of(state)
        if phase is None:
            raise ReplayError(record.number, "the record goes on after the game ended")
        for seat in record.new_people:  # (first: in one phase a person may take a bot's seat, then leave it)
            state = game.replace_by_person(state, seat)
        for seat in record.new_bots:
            state = game.replace_by_bot(state, seat)
        said = record.moves
        if said is None:
            break
        movers = phase.movers
        if (len(said) != 1 or movers[0] not in said) if len(movers) == 1 else said.keys() != set(movers):
            raise ReplayError(record.number, "the moves recorded are not from the seats that owed them")
        moves = {}
        for seat in movers:
            try:
                moves[seat] = parse(state, seat, said[seat])
            except MoveError as error:
                raise ReplayError(record.number, f"seat {seat}: {error}") from None
        before = state
        state, events = resolve(before, moves, resolve_rng(seed, record.number))
        steps.append(Step(record.number, phase, before, moves, events))
    return Replay(state, steps)


# -- the published record, and checking it -----------------------------------

RECORD_FORMAT = "referee-record/4"
# The format before: the same fields but ``interventions`` (none were made:
# the deadlines moved only by outages, which it does not list).
NO_INTERVENTIONS_FORMAT = "referee-record/3"
# The format before: the same fields, but a player's ``bot`` flag meant "a
# bot from the start", so a seat whose player left said ``false``.  Such a
# record is still read, by that meaning (a copy saved before the change).
OLD_BOT_FLAG_FORMAT = "referee-record/2"


# A long game's published record is in parts, so that a new phase rewrites
# only the last part (and the small head), never the phases published before:
# record.json is then the head, every field but ``phases``, with ``parts``,
# the names of the part files beside it in order; each part holds the next
# PART_PHASES phases, with its game's id and its place.  A record of one
# part's phases or fewer is published whole, as always.
PART_PHASES = 200
# The most parts a head may name: the longest game a record can hold (an
# 8-seat Auction at its highest turn limit, some 11,200 phases: referee.fetch)
# is 56 parts.  verify reads no head naming more, and holds the parts
# together to one record's size (referee.check).
MAX_PARTS = 100


class PartsError(ValueError):
    """A record's head and parts that do not make one record."""


def split_record(record: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The head and the parts a whole record is published as (no parts: the
    head is the whole record).  ``join_record`` makes the record again."""
    phases = record["phases"]
    if len(phases) <= PART_PHASES:
        return dict(record), []
    blocks = [phases[start : start + PART_PHASES] for start in range(0, len(phases), PART_PHASES)]
    head = {key: value for key, value in record.items() if key != "phases"}
    head["parts"] = [part_name(number) for number in range(1, len(blocks) + 1)]
    game = record["game"]["id"]
    return head, [{"game": game, "part": number, "phases": block} for number, block in enumerate(blocks, 1)]


def part_name(number: int) -> str:
    return f"record-{number}.json"


def part_names(head: Any) -> list[str]:
    """The part files a record's head lists (none: the head is the whole
    record); PartsError for a list that is not of part names beside it."""
    if not isinstance(head, dict) or "parts" not in head:
        return []
    names = head["parts"]
    if "phases" in head or not isinstance(names, list) or len(names) < 2:
        raise PartsError("a record with parts has no phases of its own, and two parts or more")
    if len(names) > MAX_PARTS:
        raise PartsError(f"the head names {len(names):,} parts: no game's record has more than {MAX_PARTS}")
    if names != [part_name(number) for number in range(1, len(names) + 1)]:
        raise PartsError("the parts are not record-1.json, record-2.json... in order")
    return names


def join_record(head: Mapping[str, Any], parts: list[Any]) -> dict[str, Any]:
    """The whole record from its head and its parts, read in the head's
    order; PartsError where a part is not the next of this game's (then the
    record is not verified: the whole is checked as strictly as ever)."""
    game = head["game"]["id"] if isinstance(head.get("game"), dict) else None
    phases: list[Any] = []
    for number, part in enumerate(parts, 1):
        if not isinstance(part, dict) or set(part) != {"game", "part", "phases"}:
            raise PartsError(f"{part_name(number)} is not a part of a record (game, part, phases)")
        if part["game"] != game or part["part"] != number:
            raise PartsError(
                f"{part_name(number)} is part {part['part']!r} of game {part['game']!r}, not part {number} of game {game!r}"
            )
        if not isinstance(part["phases"], list) or not part["phases"]:
            raise PartsError(f"{part_name(number)} has no phases")
        if len(part["phases"]) > PART_PHASES or (number < len(parts) and len(part["phases"]) != PART_PHASES):
            raise PartsError(f"{part_name(number)} has {len(part['phases'])} phases, not {PART_PHASES}")
        phases += part["phases"]
    whole = {key: value for key, value in head.items() if key != "parts"}
    whole["phases"] = phases
    return whole


class MoveSource(StrEnum):
    """How a move was made, as the engine records it (the ``source`` of a
    move in games.db and in a record, written as its value)."""

    MAIL = "mail"  # a person's, by mail
    RANDOM = "random"  # drawn at random for a missed deadline
    BOT = "bot"  # a bot's: drawn at random as soon as it is owed
    FORCED = "forced"  # the only legal move, made for the seat at once


SOURCES = tuple(MoveSource)  # in that order: what a record's move may be marked

# Every field of a record, at each level: anything else is refused, so that
# nothing a replay might read goes unchecked.
_RECORD_KEYS = {"format", "game", "players", "seed_commitment", "seed", "phases", "winner"}
_GAME_KEYS = {"id", "kind", "title", "name", "options", "state", "created_at", "finished_at", "deadlines"}
_DEADLINE_KEYS = {"round", "turn", "decision", "settle"}
_PLAYER_KEYS = {"seat", "name", "bot", "bot_from_phase", "left_at"}
_PHASE_KEYS = {"number", "label", "opened_at", "deadline", "resolved_at", "moves", "events"}
_MOVE_KEYS = {"seat", "move", "source", "received_at"}
# An intervention's fields: those of every act, and each act's own.
_INTERVENTION_KEYS = {"phase", "at", "act", "by", "why"}
_ACT_KEYS = {
    Act.EXTEND: {"old", "new"},
    Act.OUTAGE: {"old", "new"},
    Act.PAUSE: {"until"},
    Act.RESUME: {"old", "new"},
    Act.REPLACE: {"seat", "name", "was", "old", "new", "bot_from_phase", "left_at", "bot_waited"},
    Act.CANCEL: set(),
    Act.SAY: {"text", "seat"},
    Act.AWAY: {"seat", "from", "until", "most_away"},
    Act.BACK: {"seat"},
    Act.ABSENT: {"seat", "old", "new"},
    Act.ADDRESS: {"seat"},  # (never the addresses: only which seat's player plays from another)
    Act.DELEGATE: {"seat", "until"},  # never the stand-in's address: the record is public
    Act.DELEGATE_END: {"seat"},
}
_DEADLINE_ACTS = (Act.EXTEND, Act.OUTAGE, Act.RESUME, Act.REPLACE, Act.ABSENT)  # those that may move the deadline
BY_KEEPER, BY_REFEREE, BY_PLAYER = "keeper", "referee", "player"  # who made an intervention, as the record says
# Who makes each act: a keeper, the referee itself (an outage; a deadline
# moved for an absence; a pause's end at its time; a stand-in's turn cut
# short when its seat changed hands; a seat taken over by a person on
# standby, only a seat a bot played since its player left: engine.standby),
# or a seat's own player (time away, a stand-in, a new address they asked
# for and confirmed).
MADE_BY = {
    Act.EXTEND: {BY_KEEPER},
    Act.OUTAGE: {BY_REFEREE},
    Act.PAUSE: {BY_KEEPER},
    Act.RESUME: {BY_KEEPER, BY_REFEREE},
    Act.REPLACE: {BY_KEEPER, BY_REFEREE},
    Act.CANCEL: {BY_KEEPER},
    Act.SAY: {BY_KEEPER},
    Act.AWAY: {BY_PLAYER},
    Act.BACK: {BY_PLAYER},
    Act.ABSENT: {BY_REFEREE},
    Act.ADDRESS: {BY_KEEPER, BY_PLAYER},
    Act.DELEGATE: {BY_PLAYER},
    Act.DELEGATE_END: {BY_PLAYER, BY_REFEREE},
}


def made_by(act: Act, by: str | None) -> str:
    """Who the record says made an act, from games.db's ``by``: the referee
    when nobody did (None); the player when it says so ("player": a new
    address), or when only a player makes the act; else a keeper."""
    if by is None or by == BY_PLAYER:
        return BY_REFEREE if by is None else BY_PLAYER
    return BY_PLAYER if MADE_BY[act] - {BY_REFEREE} == {BY_PLAYER} else BY_KEEPER


_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")  # the one form the referee writes (timeutil.iso)
_HEX64 = re.compile(r"[0-9a-f]{64}")
_BOT_NAME = re.compile(r"bot \d+")
_LONGEST = 366 * 86400  # seconds: no deadline or settle time is longer (timeutil.MAX_DURATION)
# A public name is an address's local part (perhaps with its domain): no
# control or layout character, nothing a terminal would act on.
_NAME = re.compile(r"[^\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]{1,320}")
# The referee's own clock may step back a little (an NTP correction): the
# order of the times it wrote itself is checked with this much slack.  A
# random move's time is the deadline itself, and is checked exactly.
CLOCK_SLACK = timedelta(minutes=10)
# A phase opens at a moment (its opened_at, written to the second, cut
# short) and its deadline is the game's deadline after that moment, rounded
# up to the second: a second past opened_at plus the deadline, when it
# opened within a second.
_ROUNDED_UP = timedelta(seconds=1)


class RecordError(ValueError):
    """The record is not one the referee writes: a field missing, unknown,
    of the wrong type, or contradicting another field."""


@dataclass(frozen=True)
class Digest:
    """The record's running digest after a phase (number 0: at the start),
    as the mail announcing it carried it."""

    number: int
    label: str  # the phase's label, as the mails call it; "the start" for number 0
    digest: str  # "3f2a-91bc-07de-55a1"


@dataclass(frozen=True)
class Verdict:
    """What ``verify`` found: the game replays exactly, or the first phase that does not."""

    ok: bool
    message: str  # names the phase as the mails do: "Round 3 of 13: ..."
    phase: int | None = None  # where the record and the replay first disagree
    # The record's digests, once its seed is known to be the committed one:
    # what the mails announcing each phase should have carried.
    digests: tuple[Digest, ...] = ()


def verify(record: Any) -> Verdict:
    """Replay a finished game from its published record alone: every field
    is one the referee writes and agrees with the others, the seed matches
    its commitment, every random or bot move is the one its seeded stream
    gives and was made when it fell due, a forced move the seat's only
    legal move, every move legal, and every phase's public events (prize,
    bids, winner, scores) what the rules make of them."""
    digests: tuple[Digest, ...] = ()
    try:
        _check_fields(record)
        if commitment(bytes.fromhex(record["seed"])) != record["seed_commitment"]:
            return Verdict(False, "the seed does not match the commitment announced at the start", 0)
        digests = record_digests(record)
        return replace(_verify(record), digests=digests)
    except ReplayError as error:
        return Verdict(False, str(error), error.number, digests)
    except RecordError as error:
        return Verdict(False, str(error))
    except Exception as error:  # noqa: BLE001 - the rules meeting what no genuine record holds
        return Verdict(False, f"the record cannot be replayed: {type(error).__name__} in the rules", None, digests)


@dataclass(frozen=True)
class Stint:
    """Phases in which a random bot played a seat: from ``start`` (0: from
    the start) until ``end`` (a person took the seat over from that phase;
    None: to the end), its player having left at ``left_at`` (None: a bot
    from the start)."""

    seat: int
    start: int
    end: int | None
    left_at: str | None

    def covers(self, number: int) -> bool:
        return self.start <= number and (self.end is None or number < self.end)


def stints(record: Mapping[str, Any]) -> list[Stint]:
    """Every bot's stint in a seat: those a person's takeover ended (each
    replace intervention says which), then each seat's bot now, in seat order."""
    ended = [
        Stint(i["seat"], i["bot_from_phase"], i["phase"] + (not i["bot_waited"]), i["left_at"])
        for i in record.get("interventions", [])
        if i["act"] == Act.REPLACE and i["bot_from_phase"] is not None
    ]
    # A bot that waited for its newcomer in the phase of the takeover played
    # none of it; left and taken over in that phase, it played no phase at all.
    ended = [stint for stint in ended if stint.end is None or stint.start < stint.end]
    now = [Stint(p["seat"], p["bot_from_phase"], None, p["left_at"]) for p in record["players"]]
    now = [stint for stint in now if stint.start is not None]
    # A takeover whose newcomer left in the phase of the takeover, before
    # playing a phase: the bot it would have ended plays on, one stint.
    going = {(stint.seat, stint.start) for stint in now}
    ended = [stint for stint in ended if (stint.seat, stint.start) not in going]
    return sorted([*ended, *now], key=lambda t: (t.seat, t.start))


@dataclass(frozen=True)
class Absence:
    """A seat's time away (an ``away`` intervention): from ``start`` until
    ``until``, granted within the cap ``most`` (the seat's absences in the
    game together); ``ended`` when its player came back early (``back``) or
    the seat was taken over, and ``held`` once it moved a deadline."""

    seat: int
    start: datetime
    until: datetime
    most: timedelta
    ended: datetime | None = None
    held: bool = False

    def holds(self, deadline: datetime) -> bool:
        """Whether a deadline falls inside it while it is in force: such a
        deadline, of a phase that waits on the seat, moves to its end."""
        return self.ended is None and self.start <= deadline < self.until

    @property
    def spent(self) -> timedelta:
        """What it takes of the seat's cap: all of it, unless it ended early
        without moving a deadline (then the part before it ended; none, if
        it had not begun)."""
        if self.ended is None or self.held:
            return self.until - self.start
        return max(timedelta(0), min(self.ended, self.until) - self.start)


def absences(interventions: Iterable[Mapping[str, Any]]) -> list[Absence]:
    """Every absence the interventions (a record's, in the order made)
    grant, as it stands after the last of them: a ``back`` ends the seat's
    absences not over, and so does a takeover of the seat (the newcomer is
    not away); an ``absent`` marks the absence whose end it moved a
    deadline to."""
    found: list[Absence] = []
    for i in interventions:
        if i["act"] == Act.AWAY:
            start, until = _when(i["from"]), _when(i["until"])
            found.append(Absence(i["seat"], start, until, timedelta(seconds=i["most_away"])))
        elif i["act"] in (Act.BACK, Act.REPLACE):
            at = _when(i["at"])
            found = [
                replace(a, ended=at) if a.seat == i["seat"] and a.ended is None and a.until > at else a for a in found
            ]
        elif i["act"] == Act.ABSENT:
            new = _when(i["new"])
            found = [
                replace(a, held=True) if a.seat == i["seat"] and a.ended is None and a.until == new else a
                for a in found
            ]
    return found


def away_left(found: list[Absence], seat: int, most: timedelta) -> timedelta:
    """How much of the cap ``most`` a seat's absences (``found``) leave it."""
    return most - sum((a.spent for a in found if a.seat == seat), timedelta(0))


def _check_away(i: Mapping[str, Any], before: list[Absence], where: str) -> None:
    """An ``away`` begins no earlier than it was asked for, ends after it
    begins, overlaps none of the seat's absences still in force, and fits
    in what the seat's earlier absences left of the cap; a ``back`` ends an
    absence not over."""
    seat, at = i["seat"], _when(i["at"])
    if i["act"] == Act.BACK:
        if not any(a.seat == seat and a.ended is None and a.until > at for a in before):
            raise RecordError(f"{where} says seat {seat + 1} came back, but it was not away")
        return
    start, until, most = _when(i["from"]), _when(i["until"]), timedelta(seconds=i["most_away"])
    if not at <= start < until:
        raise RecordError(
            f"{where} is an absence from {i['from']} until {i['until']}, asked for at {i['at']}: "
            "it begins no earlier than asked, and ends after it begins"
        )
    if any(a.seat == seat and a.ended is None and a.start < until and start < a.until for a in before):
        raise RecordError(f"{where} overlaps an absence of seat {seat + 1} already in force")
    left = away_left(before, seat, most)
    if until - start > left:
        raise RecordError(
            f"{where} is an absence of {show_duration(until - start)} for seat {seat + 1}, past its cap: "
            f"{show_duration(left)} of {show_duration(most)} were left"
        )


def _verify(record: Mapping[str, Any]) -> Verdict:
    seed = bytes.fromhex(record["seed"])
    game = get_game(record["game"]["kind"])
    players = record["players"]
    bots = stints(record)
    state = game.setup(len(players), setup_rng(seed), game.stored_options(record["game"]["options"]))
    for stint in bots:
        if stint.start == 0:  # (a seat's bot flag agrees: _check_player)
            state = game.replace_by_bot(state, stint.seat)
    _check_interventions(record)
    previous = _when(record["game"]["created_at"])
    for entry in record["phases"]:
        state = _check_phase(game, seed, state, record, bots, entry, previous)
        previous = _when(entry["resolved_at"])
    phases = len(record["phases"])
    cancel = _cancelled(record)
    missing = game.phase(state)
    if missing is not None and cancel is None:
        raise ReplayError(phases + 1, "the record ends before the game does", missing.label)
    if missing is None and cancel is not None:
        raise ReplayError(phases + 1, "the record says the game was cancelled after it ended", "at the end")
    last = f"after {record['phases'][-1]['label']}" if phases else "at the start"  # labels checked by then
    if _when(record["game"]["finished_at"]) < previous - CLOCK_SLACK:
        raise ReplayError(phases, "the record says the game finished before its last phase was resolved", last)
    if cancel is not None:
        if record["winner"] is not None:
            raise ReplayError(phases + 1, "the record names a winner of a game that was cancelled", "at the end")
        return Verdict(True, f"verified: {phases} phases replay exactly; the game was cancelled: {cancel['why']}")
    result = game.result(state)
    winner = None if result is None or result.winner is None else players[result.winner]["name"]
    if winner != record["winner"]:
        raise ReplayError(
            phases, f"the replay's winner is {winner or 'nobody'}, the record says {record['winner'] or 'nobody'}", last
        )
    return Verdict(True, f"verified: {phases} phases replay exactly; winner: {winner or 'nobody'}")


def _check_phase(
    game: Game,
    seed: bytes,
    state: Any,
    record: Mapping[str, Any],
    bots: list[Stint],
    entry: Mapping[str, Any],
    previous: datetime,
) -> Any:
    """One phase of the record against the rules; the state after it.  Errors
    name the phase by the rules' label, whatever label the record gives it."""
    number = entry["number"]
    phase = game.phase(state)
    if phase is None:
        raise ReplayError(
            number, f"the record goes on with a phase it calls {_shown(entry['label'])}", "after the game's end"
        )
    where = phase.label
    if phase.label != entry["label"]:
        raise ReplayError(number, f"the record calls this phase {_shown(entry['label'])}", where)
    _check_times(record, bots, entry, phase, previous, where)
    for stint in bots:
        if stint.end == number:
            state = game.replace_by_person(state, stint.seat)
    for stint in bots:
        if stint.start == number:
            state = game.replace_by_bot(state, stint.seat)
    recorded = {move["seat"]: move for move in entry["moves"]}
    if list(recorded) != sorted(phase.movers) or len(recorded) != len(entry["moves"]):
        raise ReplayError(number, "the moves recorded are not one from each seat that owed one, in seat order", where)
    moves = {}
    for seat in phase.movers:
        move = recorded[seat]
        _check_source(
            number, where, seat, move, next((t for t in bots if t.seat == seat and t.covers(number)), None), entry
        )
        try:
            moves[seat] = game.parse_move(state, seat, move["move"])
        except MoveError as error:
            raise ReplayError(number, f"seat {seat + 1}'s move {_shown(move['move'])}: {error}", where) from None
        _check_made(game, seed, state, number, where, seat, move, moves[seat])
    state, events = game.resolve(state, moves, resolve_rng(seed, number))
    if _plain(events) != _plain(entry["events"]):
        raise ReplayError(
            number, "the record's result of this phase is not what the rules make of its moves and the seed", where
        )
    return state


def _check_times(
    record: Mapping[str, Any], bots: list[Stint], entry: Mapping[str, Any], phase: Phase, previous: datetime, where: str
) -> None:
    """A phase opens after the one before it was resolved (the first after
    the game was made), its deadline is the game's deadline for its kind of
    phase after it opened, moved by the interventions made while it was open
    and by nothing else (a record before interventions were listed: at least
    that; an outage may have extended it, never shortened it), it was not
    resolved while paused, and anyone who left the game in it left while it
    was open."""
    number = entry["number"]
    opened, deadline, resolved = (_when(entry[key]) for key in ("opened_at", "deadline", "resolved_at"))
    if opened < previous - CLOCK_SLACK:
        raise ReplayError(
            number,
            f"the record says it opened at {entry['opened_at']}, before "
            f"{'the phase before it was resolved' if number > 1 else 'the game was made'}",
            where,
        )
    if resolved < opened - CLOCK_SLACK:
        raise ReplayError(number, f"the record says it was resolved at {entry['resolved_at']}, before it opened", where)
    length = timedelta(seconds=record["game"]["deadlines"][phase.deadline_kind])
    if "interventions" not in record:
        if deadline < opened + length:
            raise ReplayError(
                number,
                f"its deadline {entry['deadline']} is less than the game's {phase.deadline_kind} "
                f"deadline ({length}) after it opened",
                where,
            )
    else:
        moved = _moved_deadline(record, entry, phase, bots, opened + length, length, where)
        if deadline != moved and not (moved == opened + length and deadline - moved == _ROUNDED_UP):
            raise ReplayError(
                number,
                f"its deadline is {entry['deadline']}, but the game's {phase.deadline_kind} deadline ({length}) "
                f"after it opened, moved by the interventions recorded, is {_iso(moved)}",
                where,
            )
        if (paused := _paused_at(record, number, resolved)) is not None:
            raise ReplayError(
                number,
                f"the record says it was resolved at {entry['resolved_at']}, while paused (from {paused})",
                where,
            )
    for stint in bots:
        if stint.start == number and not (opened - CLOCK_SLACK <= _when(stint.left_at) <= resolved + CLOCK_SLACK):
            raise ReplayError(
                number,
                f"seat {stint.seat + 1}'s player left at {stint.left_at}, while the phase was not open",
                where,
            )


def _check_source(
    number: int, where: str, seat: int, move: Mapping[str, Any], stint: Stint | None, entry: Mapping[str, Any]
) -> None:
    """A move's "how" must be one the engine writes, fit the seat, and have
    been made when it could be: a bot's seat moves as a bot (random, so the
    seed decides it), a person's never does; a move by mail was received
    while the phase was open; a random move for a missed deadline is made
    at the deadline, not before; a bot's or a forced move once the phase
    (or the bot) was there."""
    source = move["source"]
    if source not in SOURCES:
        raise ReplayError(
            number,
            f"seat {seat + 1}'s move is marked {_shown(source)}, which is not how a "
            f"move is made (only {', '.join(SOURCES)})",
            where,
        )
    left = stint.start if stint else None  # the bot playing the seat in this phase, since
    if left is not None and left < number and source != MoveSource.BOT:
        raise ReplayError(number, f"seat {seat + 1} is a bot by then, but its move is marked {_shown(source)}", where)
    if left is None and source == MoveSource.BOT:
        raise ReplayError(number, f"seat {seat + 1} is a person's, but its move is marked as a bot's", where)
    if left == number and source == MoveSource.RANDOM:  # a bot took the seat before the deadline, and moved at once
        raise ReplayError(
            number,
            f"seat {seat + 1}'s player left in this phase, but its move is marked random (for a missed deadline)",
            where,
        )
    received, opened = _when(move["received_at"]), _when(entry["opened_at"])
    deadline, resolved = _when(entry["deadline"]), _when(entry["resolved_at"])
    if source == MoveSource.MAIL and not opened <= received <= deadline:
        raise ReplayError(
            number,
            f"seat {seat + 1}'s move by mail was received at {move['received_at']}, "
            f"outside the phase ({entry['opened_at']} to {entry['deadline']})",
            where,
        )
    # Only the player who left moves by mail in the phase a bot took their seat in: before they left.
    if source == MoveSource.MAIL and stint and left == number and received > _when(stint.left_at) + CLOCK_SLACK:
        raise ReplayError(
            number,
            f"seat {seat + 1}'s move by mail was received at {move['received_at']}, "
            f"after its player left at {stint.left_at}",
            where,
        )
    if source == MoveSource.MAIL:
        return
    due = deadline if source == MoveSource.RANDOM else opened
    if source == MoveSource.BOT and stint and left == number:
        due = max(due, _when(stint.left_at))
    slack = timedelta(0) if source == MoveSource.RANDOM else CLOCK_SLACK  # the deadline is written as the time
    if not due - slack <= received <= resolved + CLOCK_SLACK:
        raise ReplayError(
            number,
            f"seat {seat + 1}'s {source} move is dated {move['received_at']}, but it fell "
            f"due at {_iso(due)} and the phase was resolved at {entry['resolved_at']}",
            where,
        )


def _interventions(record: Mapping[str, Any], number: int | None = None) -> list[Mapping[str, Any]]:
    """The record's interventions (made while phase ``number`` was open)."""
    return [i for i in record.get("interventions", []) if number is None or i["phase"] == number]


def _cancelled(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((i for i in _interventions(record) if i["act"] == Act.CANCEL), None)


def _check_interventions(record: Mapping[str, Any]) -> None:
    """Each intervention was made while its phase was open (a phase after the
    last only in a cancelled game: the one open when it was cancelled), in
    the order made; a cancel is the last; pauses and resumes alternate, each
    resumed in the phase it paused; each act is made by whom MADE_BY says
    (the referee moves a deadline for an outage or an absence, a seat's
    player says they are away and back and names a stand-in, a keeper does
    the rest, and the referee gives a person on standby a seat a bot played
    since its player left); each absence is within its seat's cap, and a seat comes back
    only from one; a seat moves to a new address only while a person plays
    it; a stand-in's turns keep their order (_check_delegations)."""
    phases = record["phases"]
    bots = stints(record)
    cancel = _cancelled(record)
    found = _interventions(record)
    if cancel is not None and found[-1] is not cancel:
        raise RecordError("an intervention is recorded after the game was cancelled")
    paused: Mapping[str, Any] | None = None
    before = (0, _when(record["game"]["created_at"]))
    woke: tuple[int, datetime] | None = None  # when the last outage was found
    for index, i in enumerate(found):
        where = f"intervention {index + 1} ({i['act']})"
        number = i["phase"]
        if not 1 <= number <= len(phases) + (cancel is not None):
            raise RecordError(f"{where} was made in phase {number}, which was never open")
        at = _when(i["at"])
        if (number, at) < (before[0], before[1] - CLOCK_SLACK):
            raise RecordError(f"{where} is listed after one made later")
        # The outage guard acts when the referee comes back, before it reads
        # the mail received while it was down, which acts as of its receipt:
        # an outage (and a deadline it held for an absence) orders nothing after it.
        if i["act"] == Act.OUTAGE:
            woke = (number, at)
        elif not (i["act"] == Act.ABSENT and (number, at) == woke):
            before = (number, at)
        if number <= len(phases):
            entry = phases[number - 1]
            if not _when(entry["opened_at"]) - CLOCK_SLACK <= at <= _when(entry["resolved_at"]) + CLOCK_SLACK:
                raise RecordError(f"{where} is dated {i['at']}, while phase {number} was not open")
        if i["by"] not in MADE_BY[Act(i["act"])]:
            raise RecordError(f"{where} says it was made by the {i['by']}, who makes no {i['act']}")
        if i["act"] == Act.REPLACE and i["by"] == BY_REFEREE and i["left_at"] is None:
            raise RecordError(f"{where} says the referee gave away a seat whose player never left")
        if i["act"] in (Act.AWAY, Act.BACK):
            _check_away(i, absences(found[:index]), where)
        if i["act"] == Act.ADDRESS and _bots_seat(bots, i["seat"], number):
            raise RecordError(f"{where} moves seat {i['seat'] + 1} to a new address while a bot played it")
        if i["act"] == Act.PAUSE:
            if paused is not None:
                raise RecordError(f"{where} pauses a game already paused")
            paused = i
        elif i["act"] == Act.RESUME:
            if paused is None or paused["phase"] != number:
                raise RecordError(f"{where} resumes a game not paused in that phase")
            paused = None
        if i["act"] == Act.REPLACE and i["bot_from_phase"] is not None:
            if not 0 <= i["bot_from_phase"] <= number:
                raise RecordError(f"{where} ends a bot's stint that began in phase {i['bot_from_phase']}")
            if (i["left_at"] is None) != (i["bot_from_phase"] == 0):
                raise RecordError(f"{where} must say when the seat's player left, and only if one did")
        if i["act"] == Act.REPLACE and i["bot_waited"] and number <= len(phases):
            _check_waited(i, phases[number - 1], where)
    if paused is not None and paused["phase"] <= len(phases):
        raise RecordError("a pause is recorded that was never resumed, in a phase that was resolved")
    _check_delegations(found)
    # A seat's name is its first player's until a takeover; each takeover
    # names whom it followed and whom it brought, and the last one is the
    # seat's name now.
    named: dict[int, str] = {}
    for i in found:
        if i["act"] == Act.REPLACE:
            if i["seat"] in named and i["was"] != named[i["seat"]]:
                raise RecordError(
                    f"seat {i['seat'] + 1}'s takeover at {i['at']} follows {named[i['seat']]}, not {i['was']}"
                )
            named[i["seat"]] = i["name"]
    for seat, name in named.items():
        if record["players"][seat]["name"] != name:
            raise RecordError(
                f"seat {seat + 1} is named {_shown(record['players'][seat]['name'])}, but its last takeover named {_shown(name)}"
            )


def _check_waited(takeover: Mapping[str, Any], entry: Mapping[str, Any], where: str) -> None:
    """A bot waits for its newcomer only in a phase its seat owes a move in,
    and then the newcomer plays it: the seat's move is theirs by mail, made
    after the takeover, or random for their missed deadline (never the bot's:
    _check_source)."""
    move = next((m for m in entry["moves"] if m["seat"] == takeover["seat"]), None)
    if move is None:
        raise RecordError(f"{where} says seat {takeover['seat'] + 1}'s bot waited for a phase it had no move in")
    if move["source"] == MoveSource.MAIL and _when(move["received_at"]) < _when(takeover["at"]) - CLOCK_SLACK:
        raise RecordError(f"{where}: seat {takeover['seat'] + 1}'s move came by mail before its newcomer took it")


def _bots_seat(bots: list[Stint], seat: int, number: int) -> bool:
    """Whether a bot played ``seat`` all through phase ``number``: a stint
    begun before it (a player who left in it may have moved before they
    left) that no takeover ended by then (a newcomer may move in the phase
    of their takeover)."""
    return any(
        stint.seat == seat and stint.start < number and (stint.end is None or number < stint.end - 1) for stint in bots
    )


def _check_delegations(found: list[Mapping[str, Any]]) -> None:
    """A stand-in's turn at a seat ends after it began, and a seat has one
    stand-in at a time: a seat's delegation is made when its last one is
    over (its time up, or ended), and an end ends one in its time."""
    last: dict[int, Mapping[str, Any]] = {}  # seat -> its last delegation, while not ended
    for index, i in enumerate(found):
        where = f"intervention {index + 1} ({i['act']})"
        at = _when(i["at"])
        current = last.get(i["seat"]) if i["act"] in (Act.DELEGATE, Act.DELEGATE_END) else None
        if current is not None and _when(current["until"]) <= at:
            current = None  # its time was up by then
        if i["act"] == Act.DELEGATE:
            if _when(i["until"]) <= at:
                raise RecordError(
                    f"{where} gives seat {i['seat'] + 1} a stand-in until {i['until']}, no later than it was given"
                )
            if current is not None:
                raise RecordError(
                    f"{where} gives seat {i['seat'] + 1} a stand-in while another's turn lasts (until {current['until']})"
                )
            last[i["seat"]] = i
        elif i["act"] == Act.DELEGATE_END:
            if current is None:
                raise RecordError(f"{where} ends a stand-in's turn at seat {i['seat'] + 1}, which had none then")
            del last[i["seat"]]


def _moved_deadline(
    record: Mapping[str, Any],
    entry: Mapping[str, Any],
    phase: Phase,
    bots: list[Stint],
    deadline: datetime,
    length: timedelta,
    where: str,
) -> datetime:
    """A phase's deadline after the interventions made in it moved it: each
    says where it moved it from, which must be where it was; an extension
    and an outage move it later, a resume by the length of the pause, a
    takeover to the game's deadline after it, an absence to its end."""
    number = entry["number"]
    pause_at = None
    first = True
    for index, i in enumerate(_interventions(record)):
        if i["phase"] != number:
            continue
        if i["act"] == Act.PAUSE:
            pause_at = _when(i["at"])
        if i["act"] not in _DEADLINE_ACTS or (i["act"] == Act.REPLACE and i["old"] is None):
            continue
        old, new = _when(i["old"]), _when(i["new"])
        if first and old - deadline == _ROUNDED_UP:
            deadline = old
        first = False
        if old != deadline:
            raise ReplayError(
                number, f"its {i['act']} at {i['at']} moved the deadline from {i['old']}, not {_iso(deadline)}", where
            )
        if i["act"] == Act.ABSENT:
            wrong = _absence_hold_wrong(record, index, entry, phase, bots)
            if wrong:
                raise ReplayError(
                    number, f"its absent at {i['at']} moved the deadline to {i['new']}, but {wrong}", where
                )
            deadline = new
            continue
        made = {
            Act.EXTEND: new > old,
            Act.OUTAGE: new > old,
            Act.RESUME: pause_at is not None and new - old == _when(i["at"]) - pause_at,
            Act.REPLACE: new == _when(i["at"]) + length,
        }[i["act"]]
        if not made:
            raise ReplayError(number, f"its {i['act']} at {i['at']} moved the deadline to {i['new']}", where)
        deadline = new
    return deadline


def _absence_hold_wrong(
    record: Mapping[str, Any], index: int, entry: Mapping[str, Any], phase: Phase, bots: list[Stint]
) -> str | None:
    """What is wrong with the ``absent`` intervention at ``index`` (None:
    nothing): a deadline moves for an absence only when the phase waits on
    the seat (a person's seat that moves in it and had not moved yet, as
    far as the referee knew) and
    the seat's player is away, by an absence in force then, at the old
    deadline; and only to the absence's end."""
    i = record["interventions"][index]
    seat, at, number = i["seat"], _when(i["at"]), i["phase"]
    if seat not in phase.movers:
        return f"seat {seat + 1} does not move in it"
    if any(t.seat == seat and t.covers(number) and (t.start < number or _when(t.left_at) <= at) for t in bots):
        return f"a bot plays seat {seat + 1} by then"
    # A move by mail received before the hold does not say the seat had
    # moved by then: the referee may have read it after (the outage guard
    # and a keeper at the shell act on the real clock, before the mail the
    # server received meanwhile is read).  A bot's move is the bot's above:
    # one made after the hold (its player left later) is no matter.
    move = next((m for m in entry["moves"] if m["seat"] == seat), None)
    if move is not None and move["source"] == MoveSource.FORCED:
        return f"seat {seat + 1} had moved by then"
    old, new = _when(i["old"]), _when(i["new"])
    held = [a for a in absences(record["interventions"][:index]) if a.seat == seat and a.holds(old)]
    if not held:
        return f"seat {seat + 1} was not away at {i['old']}"
    if all(a.until != new for a in held):
        return f"seat {seat + 1}'s absence ends at {_iso(held[0].until)}"
    return None


def _paused_at(record: Mapping[str, Any], number: int, moment: datetime) -> str | None:
    """When the pause in force at ``moment`` in phase ``number`` began, if one was."""
    since = None
    for i in _interventions(record, number):
        if _when(i["at"]) > moment:
            break
        since = i["at"] if i["act"] == Act.PAUSE else None if i["act"] == Act.RESUME else since
    return since


def _check_made(
    game: Game, seed: bytes, state: Any, number: int, where: str, seat: int, move: Mapping[str, Any], parsed: Any
) -> None:
    """A move the referee made for a seat left no choice: a random or bot
    move is what the seat's seeded stream draws, a forced move the seat's
    only legal move (parsing proved it legal).  A move by mail is the
    player's own choice."""
    if move["source"] in (MoveSource.RANDOM, MoveSource.BOT):
        drawn = game.move_text(game.random_move(state, seat, random_move_rng(seed, number, seat)))
        if drawn != game.move_text(parsed):
            raise ReplayError(
                number, f"seat {seat + 1}'s random move is {_shown(move['move'])}, but the seed draws {drawn!r}", where
            )
    elif move["source"] == MoveSource.FORCED:
        legal = len(game.legal_moves(state, seat))
        if legal != 1:
            raise ReplayError(
                number,
                f"seat {seat + 1}'s move {_shown(move['move'])} is marked forced, but "
                f"the seat had {legal} legal moves, not one",
                where,
            )


def _shown(text: str) -> str:
    """A text from the record, quoted for a message: escaped, and short."""
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _plain(value: Any) -> Any:
    """As JSON would have it (tuples as lists, keys as strings), for comparing."""
    return json.loads(json.dumps(value, sort_keys=True))


# -- every field the replay reads, checked before it reads them ------------------------


def _check_fields(record: Any) -> None:
    """The record's shape: every field there, none unknown, each of its type,
    and those that must agree with each other agreeing (a phase's number is
    its place, a player's seat is theirs, a seat's bot flag is its
    bot_from_phase's, only a bot from the start is named "bot N").  What the
    fields say is checked by the replay."""
    formats = (RECORD_FORMAT, NO_INTERVENTIONS_FORMAT, OLD_BOT_FLAG_FORMAT)
    if not isinstance(record, dict) or record.get("format") not in formats:
        found = record.get("format") if isinstance(record, dict) else None
        raise RecordError(
            f"not a {RECORD_FORMAT} record"
            + (
                f" (it is {found}: publish it again with this referee, `referee render --force`)"
                if found == "referee-record/1"
                else ""
            )
        )
    _keys(record, "the record", _RECORD_KEYS | ({"interventions"} if record["format"] == RECORD_FORMAT else set()))
    game = _keys(record["game"], "the game", _GAME_KEYS)
    if game["state"] != GameState.FINISHED or record["seed"] is None:
        raise RecordError("the game has not ended: its seed is still secret")
    _int(game["id"], "the game's id", low=1)
    rules = _rules(game)
    _optional(game["name"], "the game's name", str)
    _when(game["created_at"], "the game's created_at")
    _when(game["finished_at"], "the game's finished_at")
    times = _keys(game["deadlines"], "the game's deadlines", _DEADLINE_KEYS)
    for kind in sorted(_DEADLINE_KEYS):
        _int(times[kind], f"the {kind} deadline", low=0 if kind == "settle" else 1, high=_LONGEST)
    for key in ("seed", "seed_commitment"):
        if not isinstance(record[key], str) or not _HEX64.fullmatch(record[key]):
            raise RecordError(f"the {key.replace('_', ' ')} is not 64 lower-case hex digits")
    phases = _list(record["phases"], "the phases")
    players = _list(record["players"], "the players")
    if not rules.min_seats <= len(players) <= rules.max_seats:
        raise RecordError(f"{rules.title} is played by {rules.seat_range} seats, not {len(players)}")
    acts = record.get("interventions")
    cancelled = isinstance(acts, list) and any(isinstance(act, dict) and act.get("act") == Act.CANCEL for act in acts)
    for index, player in enumerate(players):
        # (a player may have left in the phase open when the game was cancelled)
        _check_player(player, index, len(phases) + cancelled, record["format"] == OLD_BOT_FLAG_FORMAT)
    names = [player["name"] for player in players]
    if len(set(names)) != len(names):
        raise RecordError("two seats have the same name")
    for index, entry in enumerate(phases):
        _check_entry(entry, index + 1, len(players))
    for index, intervention in enumerate(_list(record.get("interventions", []), "the interventions")):
        _check_intervention(intervention, index, len(players))
    _optional(record["winner"], "the winner", str)


def _check_intervention(intervention: Any, index: int, seats: int) -> None:
    where = f"intervention {index + 1}"
    if not isinstance(intervention, dict) or intervention.get("act") not in _ACT_KEYS:
        raise RecordError(f"{where} is not one of the acts a keeper makes ({', '.join(_ACT_KEYS)})")
    act = Act(intervention["act"])
    _keys(intervention, where, _INTERVENTION_KEYS | _ACT_KEYS[act])
    _int(intervention["phase"], f"{where}'s phase", low=1)
    _when(intervention["at"], f"{where}'s time")
    if intervention["by"] not in (BY_KEEPER, BY_REFEREE, BY_PLAYER):
        raise RecordError(
            f"{where} was made by {_shown(str(intervention['by']))}: only a keeper, the referee or a player"
        )
    if not isinstance(intervention["why"], str):
        raise RecordError(f"{where}'s why is not text")
    if act in (Act.EXTEND, Act.OUTAGE, Act.RESUME, Act.ABSENT):
        _when(intervention["old"], f"{where}'s old deadline")
        _when(intervention["new"], f"{where}'s new deadline")
    if act in (Act.AWAY, Act.BACK, Act.ABSENT):
        _int(intervention["seat"], f"{where}'s seat", low=0, high=seats - 1)
    if act == Act.AWAY:
        _when(intervention["from"], f"{where}'s from")
        _when(intervention["until"], f"{where}'s until")
        _int(intervention["most_away"], f"{where}'s most_away", low=0, high=_LONGEST)
    elif act == Act.PAUSE:
        _optional(intervention["until"], f"{where}'s until", "time")
    elif act == Act.SAY:
        seat = _optional(intervention["seat"], f"{where}'s seat", int)
        text = _optional(intervention["text"], f"{where}'s text", str)
        if (seat is None) == (text is None) or (seat is not None and not 0 <= seat < seats):
            raise RecordError(f"{where} says what was said to everyone, or which seat was told, and not both")
    elif act in (Act.DELEGATE, Act.DELEGATE_END):
        _int(intervention["seat"], f"{where}'s seat", low=0, high=seats - 1)
        if act == Act.DELEGATE:
            _when(intervention["until"], f"{where}'s until")
    elif act == Act.REPLACE:
        _int(intervention["seat"], f"{where}'s seat", low=0, high=seats - 1)
        for key in ("name", "was"):
            if not isinstance(intervention[key], str) or not _NAME.fullmatch(intervention[key]):
                raise RecordError(f"{where}'s {key} is no name a referee writes")
        if (intervention["old"] is None) != (intervention["new"] is None):
            raise RecordError(f"{where} gives an old deadline and a new one, or neither")
        _optional(intervention["old"], f"{where}'s old deadline", "time")
        _optional(intervention["new"], f"{where}'s new deadline", "time")
        _optional(intervention["bot_from_phase"], f"{where}'s bot_from_phase", int)
        _optional(intervention["left_at"], f"{where}'s left_at", "time")
        if not isinstance(intervention["bot_waited"], bool):
            raise RecordError(f"{where}'s bot_waited is not true or false")
        if intervention["bot_waited"] and intervention["bot_from_phase"] is None:
            raise RecordError(f"{where} says a bot waited for the newcomer in a seat no bot played")
    elif act == Act.ADDRESS:
        _int(intervention["seat"], f"{where}'s seat", low=0, high=seats - 1)


def _rules(game: Mapping[str, Any]) -> Game:
    """The game's rules, from a kind they know; its options exactly a set
    they would make (every option there, of its type, none unknown)."""
    kind = game["kind"]
    if not isinstance(kind, str) or kind not in GAMES:
        raise RecordError(f"there is no game of kind {_shown(str(kind))}")
    rules = get_game(kind)
    if game["title"] != rules.title:
        raise RecordError(f"a game of kind {kind} is called {rules.title!r}, not {_shown(str(game['title']))}")
    options = game["options"]
    if isinstance(options, dict):  # a record made before an option existed was played without it
        options = rules.stored_options(options)
    try:
        made = rules.check_options(options if isinstance(options, dict) else {})
    except OptionError as error:
        raise RecordError(f"the game's options: {error}") from None
    if (
        not isinstance(options, dict)
        or made != options
        or any(type(options[name]) is not type(default) for name, default in rules.options.items())
    ):
        raise RecordError(f"the game's options are not a set {rules.title} takes")
    return rules


def _check_player(player: Any, index: int, phases: int, old_bot_flag: bool = False) -> None:
    """A player's fields, and what they say of bots: ``bot_from_phase`` is
    the phase from which a random bot plays the seat (0: from the start; a
    phase: its player left in it, at ``left_at``; null: a person's to the
    end), and ``bot`` says whether a bot ever played it (in a
    ``referee-record/2`` record, ``old_bot_flag``: whether it did from the
    start).  Only a bot from the start is named "bot N"."""
    where = f"seat {index + 1}"
    _keys(player, where, _PLAYER_KEYS)
    if _int(player["seat"], f"{where}'s seat") != index:
        raise RecordError(
            f"{where} says it is seat {_shown(str(player['seat'] + 1))}: players are listed in seat order"
        )
    name = player["name"]
    if not isinstance(name, str) or not name.strip() or not _NAME.fullmatch(name):
        raise RecordError(f"{where} has no name a referee writes (the part of an address before its @)")
    if not isinstance(player["bot"], bool):
        raise RecordError(f"{where}'s bot flag is not true or false")
    left = _optional(player["bot_from_phase"], f"{where}'s bot_from_phase", int)
    if left is not None and not 0 <= left <= phases:
        raise RecordError(f"{where} became a bot in phase {_shown(str(left))}, which the record does not have")
    if player["bot"] != (left == 0 if old_bot_flag else left is not None):
        raise RecordError(
            f"{where} is flagged {'a bot' if player['bot'] else 'a person'}, but its "
            f"bot_from_phase is {'null' if left is None else left}"
        )
    if (left == 0) != (name == f"bot {index + 1}") or (left != 0 and _BOT_NAME.fullmatch(name)):
        raise RecordError(
            f"{where} is named {_shown(name)}: a bot from the start is named 'bot {index + 1}', and only it"
        )
    if (player["left_at"] is None) != (left in (None, 0)):
        raise RecordError(f"{where}'s left_at must say when its player left, and only if they did")
    _optional(player["left_at"], f"{where}'s left_at", "time")


def _check_entry(entry: Any, number: int, seats: int) -> None:
    where = f"phase {number} of the record"
    _keys(entry, where, _PHASE_KEYS)
    if _int(entry["number"], f"{where}'s number") != number:
        raise RecordError(f"{where} is numbered {_shown(str(entry['number']))}: phase k is number k")
    if not isinstance(entry["label"], str):
        raise RecordError(f"{where}'s label is not text")
    for key in ("opened_at", "deadline", "resolved_at"):
        _when(entry[key], f"{where}'s {key}")
    _list(entry["events"], f"{where}'s events")
    for move in _list(entry["moves"], f"{where}'s moves"):
        _keys(move, f"a move of {where}", _MOVE_KEYS)
        _int(move["seat"], f"a seat in {where}", low=0, high=seats - 1)
        for key in ("move", "source"):
            if not isinstance(move[key], str):
                raise RecordError(f"a move's {key} in {where} is not text")
        _when(move["received_at"], f"a move's received_at in {where}")


def _keys(value: Any, where: str, keys: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RecordError(f"{where} is not an object")
    missing, unknown = keys - value.keys(), value.keys() - keys
    if missing:
        raise RecordError(f"{where} has no {', '.join(sorted(missing))}")
    if unknown:
        raise RecordError(f"{where} has {', '.join(_shown(str(key)) for key in sorted(unknown))}, which no record has")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise RecordError(f"{where} are not a list")
    return value


def _int(value: Any, where: str, low: int | None = None, high: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordError(f"{where} is not a whole number")
    if (low is not None and value < low) or (high is not None and value > high):
        raise RecordError(f"{where} is out of range ({_shown(str(value))})")
    return value


def _optional(value: Any, where: str, kind: type | str) -> Any:
    if value is None:
        return None
    if kind == "time":
        return _when(value, where)
    if kind is int:
        return _int(value, where)
    if not isinstance(value, kind):  # type: ignore[arg-type]
        raise RecordError(f"{where} is not {'text' if kind is str else kind}")
    return value


def _when(value: Any, where: str = "a time") -> datetime:
    """A time as the referee writes it, ``2026-11-21T06:14:26Z``, and no other way."""
    if not isinstance(value, str) or not _TIME.fullmatch(value):
        raise RecordError(f"{where} is not a time written as 2026-11-21T06:14:26Z")
    try:
        return datetime.fromisoformat(value[:-1]).replace(tzinfo=UTC)
    except ValueError:
        raise RecordError(f"{where} is no date ({_shown(value)})") from None


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the running digest players hold -----------------------------------------------------

# What each digest covers is fixed for good: a mail a player kept must agree
# with the record of its game for as long as the record is published, under
# any later record format.  A new field of the record is covered only by a
# new DIGEST_VERSION, never by changing these.
DIGEST_VERSION = "referee-digest/1"
_START_GAME = ("id", "kind", "name", "options", "created_at", "deadlines")
# A seat's "seat" and "name" (its first player's) and "bot": whether a bot played it from the start.
_PHASE_COVERED = ("number", "label", "opened_at", "deadline", "resolved_at", "moves")
_MOVE_COVERED = ("seat", "move", "source", "received_at")
_DIGEST_LINE = re.compile(
    r"Record digest (?:at (?P<at>the start|the end)|after (?P<label>[^\n]{1,300}?)): "
    r"(?P<digest>[0-9a-f]{4}(?:-[0-9a-f]{4}){3})"
)
_LONGEST_DIGEST_LINE = 400  # characters: a label is at most a few dozen


def chain_digest(
    seed: bytes, head: Mapping[str, Any], entry: Mapping[str, Any] | None, previous: bytes | None
) -> bytes:
    """The record's running digest: with no ``entry``, the start's (the game,
    its options and deadlines, the players and the commitment); else the
    digest after phase ``entry`` (its times, and each move with its source
    and receipt time, and who left in it), chained on the one before.  Each
    is an HMAC keyed from the secret seed, so until the seed is published a
    digest tells nothing of a move it covers (not even of one the rules keep
    hidden); once it is, anyone recomputes every digest from the record."""
    if entry is None:
        covered: dict[str, Any] = {
            "version": DIGEST_VERSION,
            "game": {key: head["game"][key] for key in _START_GAME},
            "players": _players_at_start(head),
            "seed_commitment": head["seed_commitment"],
        }
        return _keyed(seed, "digest start", covered)
    assert previous is not None
    number = entry["number"]
    phase = {key: entry[key] for key in _PHASE_COVERED}
    phase["moves"] = [{key: move[key] for key in _MOVE_COVERED} for move in entry["moves"]]
    covered = {
        "previous": previous.hex(),
        "phase": phase,
        "left": [[stint.seat, stint.left_at] for stint in stints(head) if stint.start == number],
    }
    # The interventions made while it was open, once there were any (a
    # record without them digests as it always did).
    if made := _interventions(head, number):
        covered["interventions"] = made
    return _keyed(seed, f"digest phase {number}", covered)


def _players_at_start(head: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The seats as the start mail showed them: each seat's first player's
    name (a seat taken over since names them in its first takeover's
    ``was``), and whether a bot played it from the start."""
    first: dict[int, str] = {}
    for i in _interventions(head):
        if i["act"] == Act.REPLACE:
            first.setdefault(i["seat"], i["was"])
    from_start = {stint.seat for stint in stints(head) if stint.start == 0}
    return [
        {"seat": p["seat"], "name": first.get(p["seat"], p["name"]), "bot": p["seat"] in from_start}
        for p in head["players"]
    ]


def end_digest(
    seed: bytes,
    finished_at: str,
    winner: str | None,
    previous: bytes,
    interventions: list[Any] | None = None,
    left: list[Any] | None = None,
) -> bytes:
    """The digest at the end, chained on the last phase's: when the game
    finished and who won, as the final mail announced them, and what
    happened after the last phase (in the one open when the game was
    cancelled), if anything: the interventions made, the seats whose player
    left."""
    covered: dict[str, Any] = {"previous": previous.hex(), "finished_at": finished_at, "winner": winner}
    if interventions:
        covered["interventions"] = interventions
    if left:
        covered["left"] = left
    return _keyed(seed, "digest end", covered)


def _keyed(seed: bytes, label: str, covered: Mapping[str, Any]) -> bytes:
    key = hmac.new(seed, label.encode(), hashlib.sha256).digest()
    text = json.dumps(covered, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def short_digest(digest: bytes) -> str:
    """The digest as mails show it: 64 bits, ``3f2a-91bc-07de-55a1``."""
    text = digest[:8].hex()
    return "-".join(text[i : i + 4] for i in range(0, 16, 4))


def digest_line(label: str | None, digest: bytes, end: bool = False) -> str:
    """The line a mail carries (``label`` None: the start mail's; ``end``:
    the final mail's)."""
    where = "at the end" if end else "at the start" if label is None else f"after {label}"
    return f"Record digest {where}: {short_digest(digest)}"


def record_digests(record: Mapping[str, Any]) -> tuple[Digest, ...]:
    """Every digest of a finished record, as the mails carried them: the
    start's, each phase's, and the end's (number: one past the last phase)."""
    seed = bytes.fromhex(record["seed"])
    digest = chain_digest(seed, record, None, None)
    found = [Digest(0, "the start", short_digest(digest))]
    for entry in record["phases"]:
        digest = chain_digest(seed, record, entry, digest)
        found.append(Digest(entry["number"], entry["label"], short_digest(digest)))
    last = len(record["phases"]) + 1
    after = _interventions(record, last)
    left = [[stint.seat, stint.left_at] for stint in stints(record) if stint.start == last]
    digest = end_digest(seed, record["game"]["finished_at"], record["winner"], digest, list(after), left)
    found.append(Digest(len(record["phases"]) + 1, "the end", short_digest(digest)))
    return tuple(found)


def mail_digests(text: str) -> list[tuple[str, str]]:
    """The digests a mail's text carries: (label, digest), "the start" and
    "the end" for those.  Line by line, each line bounded: linear in the text."""
    found = []
    for line in text.splitlines():
        if "Record digest " in line and len(line) <= _LONGEST_DIGEST_LINE:
            match = _DIGEST_LINE.search(line)
            if match:
                found.append((match["at"] or match["label"], match["digest"]))
    return found
