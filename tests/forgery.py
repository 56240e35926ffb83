"""Forging finished games' records: the forgery property test's
(tests/unit/test_forgery.py) and the long run's (bench/forgery.py).

``play(kind, seed)`` plays a small finished game of ``kind`` through the
real engine: each human mover mails a random legal move or stays silent
(a random move fills it at the deadline), a player may leave mid-game (a
bot takes the seat), a seat may be a bot from the start, moves may be
replaced within a settle time.  It keeps the published record and every
record digest the players' mails carried.

``changes(genuine)`` lists every single-field change of the record worth
trying (``Change``): each leaf's value made another of the same or a
tempting type (a number +1, -1 or as text; a flag flipped; a value made
None and None a value; a move's source each other source; a time moved by
-1 s, +1 s, -1 h or +1 day; a move's text another legal move of the seat,
or one seen elsewhere; a name another seat's, "bot N" or a new one), and
each list of players, phases or moves with two neighbours swapped, the
first and last swapped, one entry deleted or one duplicated.

``judge(genuine, change)`` applies the change, and again followed by what a
forger who knows the seed would recompute (``Forger.reforge``: every
phase's events and the winner made again by the rules), verifies each and
says what caught it: the record alone (``verify`` refuses it), only the
digests the players hold (it verifies, but its digests are not all the
ones the mails carried), or nothing.  Nothing may miss a change but what
docs/design.md names so (``ALLOWED_UNCAUGHT``: the format renamed the one
before, where that reads the same); and a change that alters the
replayed outcome (an event, the winner, the final scores) must be refused
by the record alone, but for those only a digest can see (``digest_only``).
"""

from __future__ import annotations

import email
import json
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email import policy
from pathlib import Path
from typing import Any

from conftest import FakeClock, reply

from referee.config import Config
from referee.engine import Engine
from referee.record import SOURCES, mail_digests, resolve_rng, setup_rng, verify
from referee.rules import GAMES, get_game
from referee.site.public import game_record
from referee.store import Notify, Store
from referee.timeutil import from_iso

KINDS = ("pure-skill", "bid", "ice", "priority", "bluff")
NAMES = ("alice", "bob", "carol", "dave", "erin")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
_SHIFTS = (timedelta(seconds=-1), timedelta(seconds=1), timedelta(hours=-1), timedelta(days=1))
_MAX_STEPS = 3000

Path_ = tuple[Any, ...]  # a key path into the record: ("phases", 3, "moves", 0, "source")


# -- genuine games -------------------------------------------------------------------------


def _setup(kind: str, rng: random.Random) -> tuple[int, int, dict[str, Any]]:
    """Seats, bots from the start and options of a small game of ``kind``:
    small enough that a test plays and forges a few in seconds."""
    bots = 1 if rng.random() < 0.35 else 0
    if kind == "pure-skill":
        return 3, bots, {"ties": rng.choice(("discard", "carry"))}
    if kind == "bid":
        return 3, bots, {"max_auctions": rng.choice((2, 3)), "reroll": rng.choice(("pawn", "coin"))}
    if kind == "ice":
        seats = rng.choice((2, 3))
        return seats, bots if seats > 2 else 0, {"short": True, "scoring_colour": rng.choice(("red", "blue"))}
    if kind == "priority":
        return 3, bots, {"turn_limit": 1}
    if kind == "bluff":
        return 2, 0, {"exhibit_dice": rng.choice((1, 2))}
    raise ValueError(kind)


@dataclass
class Genuine:
    """A finished game as published, and what its players were mailed."""

    kind: str
    seed: int
    record: dict[str, Any]
    held: frozenset[tuple[str, str]]  # (label, digest) of every digest line any player received
    last: frozenset[tuple[str, str]]  # those of the last mail to carry one (a player who kept only it)
    mails: int  # mails carrying a digest line
    forger: Forger = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.forger = Forger(self.record)

    @property
    def name(self) -> str:
        return f"{self.kind} game {self.seed}"


def play(kind: str, seed: int) -> Genuine:
    """A finished game of ``kind`` through the engine, its moves by mail,
    timeouts and bots chosen by ``seed`` (the same seed, the same game)."""
    rng = random.Random(f"{kind} {seed}")
    rules = get_game(kind)
    seats, bots, options = _setup(kind, rng)
    players = [f"{name}@example.org" for name in NAMES[: seats - bots]]
    clock = FakeClock()
    # The game's seed is drawn from rng when it is made (a key of its own draws nothing before).
    config = Config(
        address="referee@example.org",
        database=Path(":memory:"),
        reminder=None,
        outage_gap=None,
        secret_key=b"forgery",
        notify=Notify.EVERY,  # every phase's result, and so every digest, reaches every player
    )
    engine = Engine(Store(":memory:"), config, clock, rng.randbytes)
    settle = timedelta(minutes=rng.choice((0, 0, 10)))
    game = engine.new_game(
        kind,
        players,
        bots=bots,
        options=options,
        settle=settle,
        deadline=timedelta(hours=rng.choice((12, 24))),
        turn_deadline=timedelta(hours=rng.choice((2, 6))),
        decision_deadline=timedelta(hours=1),
    )
    diligence = {seat: rng.choice((0.5, 0.85, 1.0)) for seat in range(len(players))}
    leave_at = rng.randrange(1, 25) if rng.random() < 0.5 else None
    keeper = _Keeper(random.Random(f"keeper {kind} {seed}"))
    serial = 0
    for step in range(1, _MAX_STEPS):
        table = engine.table(game)
        if table.row["state"] != "running":
            break
        phase = table.open_phase
        number = phase["number"]
        clock.advance(minutes=rng.randint(1, 20))
        keeper.act(engine, game, step, players)
        table = engine.table(game)  # (an act may have moved the game on, or ended it: a resume)
        if table.row["state"] != "running":
            break
        phase = table.open_phase
        number = phase["number"]
        if step == leave_at:
            persons = [seat for seat in range(len(players)) if table.human(seat)]
            if persons:
                engine.resign(game, players[rng.choice(persons)])
                continue
        for seat in list(table.waiting_for(phase)):
            table = engine.table(game)
            now_open = table.open_phase
            if now_open is None or now_open["number"] != number or seat not in table.waiting_for(now_open):
                break
            if not table.human(seat) or rng.random() >= diligence[seat]:
                continue
            text = rules.move_text(rng.choice(rules.legal_moves(table.state, seat)))
            serial += 1
            outcome = engine.ingest(
                reply(engine, players[seat], text, game=game, message_id=f"<forgery-{seed}-{serial}@example.net>")
            )
            assert outcome.code in ("move", "replaced"), (kind, seed, number, text, outcome)
            clock.advance(seconds=rng.randint(1, 300))
        table = engine.table(game)
        still = table.open_phase
        if still is None or still["number"] != number:
            continue
        if still["closes_at"] and still["sealed"] and rng.random() < 0.3:  # a change of mind in the settle time
            seat = rng.choice([s for s in still["movers"] if table.human(s)] or [None])
            if seat is not None:
                text = rules.move_text(rng.choice(rules.legal_moves(table.state, seat)))
                serial += 1
                engine.ingest(
                    reply(engine, players[seat], text, game=game, message_id=f"<forgery-{seed}-{serial}@example.net>")
                )
        due = from_iso(still["closes_at"] or still["deadline"])
        clock.now = max(clock.now, due + timedelta(seconds=rng.choice((0, 1, 90))))
        engine.tick()
    table = engine.table(game)
    assert table.row["state"] == "finished", (kind, seed, "the game did not end")
    record = json.loads(json.dumps(game_record(table)))
    held: set[tuple[str, str]] = set()
    last: list[tuple[str, str]] = []
    mails = 0
    for row in engine.store.outbox(None):
        found = mail_digests(_text(row["raw"]))
        if found:
            mails += 1
            held.update(found)
            last = found
    return Genuine(kind, seed, record, frozenset(held), frozenset(last), mails)


class _Keeper:
    """The keeper's hands in a genuine game, by its own stream (so the
    players' draws stay as they were): perhaps an extension, a pause resumed
    a few steps later, a newcomer in a person's seat (or a bot's, where the
    rules allow) and a word to everyone, each at a step of its own."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.at = {act: rng.randrange(1, 20) for act in ("extend", "pause", "replace", "say") if rng.random() < 0.5}
        if "pause" in self.at:
            self.at["resume"] = self.at["pause"] + rng.randrange(1, 4)

    def act(self, engine: Engine, game: int, step: int, players: list[str]) -> None:
        for act in [act for act, at in self.at.items() if at == step]:
            if engine.table(game).row["state"] != "running":
                return
            if act == "extend" and not engine.table(game).paused:
                engine.extend(game, timedelta(hours=self.rng.choice((1, 12, 30))), "keeper", "a holiday")
            elif act == "pause":
                engine.pause(game, "keeper", "the server moves", until=engine.clock() + timedelta(days=1))
            elif act == "resume" and engine.table(game).paused:
                engine.resume(game, "keeper")
            elif act == "say":
                engine.say(game, self.rng.choice(("Round two starts late.", "Hello all")), "keeper")
            elif act == "replace":
                table = engine.table(game)
                seats = [s for s in range(len(players)) if table.human(s) or table.rules.bots_replaceable]
                if seats:
                    seat = self.rng.choice(seats)
                    newcomer = f"new{step}@example.org"
                    engine.replace(game, str(seat + 1), newcomer, "keeper", "a newcomer")
                    if seat < len(players):
                        players[seat] = newcomer


def _text(raw: bytes) -> str:
    """A queued mail's plain text, decoded."""
    message = email.message_from_bytes(raw, policy=policy.default)
    parts = [part.get_content() for part in message.walk() if part.get_content_type() == "text/plain"]
    return "\n".join(parts).replace("\r\n", "\n")


def digest_set(record: Any) -> frozenset[tuple[str, str]]:
    return frozenset((d.label, d.digest) for d in verify(record).digests)


# -- forging: the events and the winner made again from a changed record ----------------


class Forger:
    """What a referee who knows the seed could publish after changing a
    record: every phase's events and the winner made again by the rules
    from the record's moves, with no check of where a move came from (as
    ``reforge`` in tests/unit/test_verify.py, for every kind).  The genuine
    game's states are kept, so a change at phase k is reforged from there."""

    def __init__(self, genuine: dict[str, Any]):
        self.genuine = genuine
        self.states: list[Any] = []  # the state as phase k (0-based) begins, before its bots
        forged = self.reforge(genuine, keep=True)
        assert forged is not None and forged[0] == genuine, "reforging a genuine record changes it"
        self.scores = forged[1]

    def reforge(self, record: dict[str, Any], start: int = 0, keep: bool = False) -> tuple[dict[str, Any], Any] | None:
        """The record with its events from phase ``start`` (0-based) on and
        its winner made again, and the final scores; None if the rules
        refuse it.  ``start`` > 0 only when nothing before that phase, nor
        any field outside the phases, differs from the genuine record."""
        try:
            game, seed = get_game(record["game"]["kind"]), bytes.fromhex(record["seed"])
            players = record["players"]
            if 0 < start < len(self.states):
                state = self.states[start]
            else:
                start = 0
                state = game.setup(len(players), setup_rng(seed), record["game"]["options"])
                for player in players:
                    if player["bot_from_phase"] == 0:
                        state = game.replace_by_bot(state, player["seat"])
            phases = list(record["phases"])
            for index in range(start, len(phases)):
                if keep:
                    self.states.append(state)
                entry = phases[index]
                if game.phase(state) is None:
                    return None  # the game is over: the rules have no phase to resolve
                for player in players:
                    if player["bot_from_phase"] == entry["number"]:
                        state = game.replace_by_bot(state, player["seat"])
                moves = {m["seat"]: game.parse_move(state, m["seat"], m["move"]) for m in entry["moves"]}
                state, events = game.resolve(state, moves, resolve_rng(seed, entry["number"]))
                phases[index] = {**entry, "events": json.loads(json.dumps(events))}
            result = game.result(state)
            winner = None if result is None or result.winner is None else players[result.winner]["name"]
            return {**record, "phases": phases, "winner": winner}, None if result is None else list(result.scores)
        except Exception:  # noqa: BLE001 - the rules refuse the changed record: no forgery to make
            return None


# -- single-field changes ------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One change of a record: ``op`` "set" makes the value at ``path`` be
    ``new``; "swap" swaps list ``path``'s entries ``new`` (a pair);
    "delete" drops entry ``new``; "dup" repeats entry ``new`` after it."""

    path: Path_
    op: str
    new: Any
    old: Any = None

    def apply(self, record: dict[str, Any]) -> dict[str, Any]:
        """A changed copy of ``record`` (only the containers on the path are copied)."""
        return _applied(record, self.path, self._leaf)

    def _leaf(self, value: Any) -> Any:
        if self.op == "set":
            return self.new
        items = list(value)
        if self.op == "swap":
            i, j = self.new
            items[i], items[j] = items[j], items[i]
        elif self.op == "delete":
            del items[self.new]
        elif self.op == "dup":
            items.insert(self.new + 1, json.loads(json.dumps(items[self.new])))
        return items

    @property
    def field(self) -> str:
        """Its path, as text: ``phases[3].moves[0].source``."""
        return path_text(self.path)

    @property
    def pattern(self) -> str:
        """Its path with the list places left out: ``phases[].moves[].source``."""
        return re.sub(r"\[\d+\]", "[]", self.field) + ("" if self.op == "set" else f" ({self.op})")

    @property
    def first_phase(self) -> int:
        """The first phase (0-based) the change can alter; 0 if it is outside the phases."""
        if len(self.path) >= 2 and self.path[0] == "phases":
            return self.path[1]
        if self.path == ("phases",) and self.op != "set":
            return min(self.new) if self.op == "swap" else self.new
        return 0

    @property
    def reforges(self) -> bool:
        """Whether the change is in a field a forger's recomputation reads
        (``Forger.reforge``: the kind, options, seed, players, phase numbers
        and moves' seats and texts).  Any other change leaves the events and
        the winner as they were: reforged, the variant is the genuine record
        (a change of an event or the winner) or the change as made."""
        path = self.path
        if path[:1] in (("seed",), ("players",)) or path[:2] in (("game", "kind"), ("game", "options")):
            return True
        if path[:1] != ("phases",):
            return False
        return (
            len(path) == 1
            or path[2:] == ("number",)
            or path[2:] == ("moves",)
            or (len(path) == 5 and path[2] == "moves" and path[4] in ("seat", "move"))
        )

    def describe(self) -> str:
        if self.op == "set":
            return f"{self.field}: {self.old!r} -> {self.new!r}"
        return f"{self.field}: {self.op} {self.new}"


def path_text(path: Path_) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text


def _applied(value: Any, path: Path_, leaf: Any) -> Any:
    if not path:
        return leaf(value)
    key, rest = path[0], path[1:]
    copy = list(value) if isinstance(value, list) else dict(value)
    copy[key] = _applied(value[key], rest, leaf)
    return copy


def leaves(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every scalar of a record (and every empty list or object), with its path."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path, value


def changes(genuine: Genuine, every_move: bool = False) -> list[Change]:
    """Every single-field change of the genuine record worth trying, each
    once, none that leaves it as it was.  Move texts: up to 6 other legal
    moves of the seat (``every_move``: all of them) and 2 seen elsewhere."""
    record = genuine.record
    seen: dict[str, list[Any]] = defaultdict(list)  # key -> the values it has anywhere in the record
    for path, value in leaves(record):
        key = next((k for k in reversed(path) if isinstance(k, str)), "")
        if value not in seen[key] and not isinstance(value, (dict, list)):
            seen[key].append(value)
    found: dict[tuple[Path_, str, str], Change] = {}

    def add(path: Path_, op: str, new: Any, old: Any = None) -> None:
        if op == "set" and (new == old and type(new) is type(old)):
            return
        found.setdefault((path, op, json.dumps(new)), Change(path, op, new, old))

    for path, value in leaves(record):
        for new in _values(genuine, path, value, seen, every_move):
            add(path, "set", new, value)
    lists: list[Path_] = [("players",), ("phases",)]
    lists += [("phases", k, "moves") for k in range(len(record["phases"]))]
    for path in lists:
        items = at(record, path)
        n = len(items)
        pairs = {(i, i + 1) for i in range(n - 1)} | ({(0, n - 1)} if n > 2 else set())
        for pair in sorted(pairs):
            if items[pair[0]] != items[pair[1]]:
                add(path, "swap", pair)
        for index in range(n):
            add(path, "delete", index)
            add(path, "dup", index)
    return list(found.values())


def at(record: Any, path: Path_) -> Any:
    """The value at ``path`` in ``record``."""
    for key in path:
        record = record[key]
    return record


def _values(genuine: Genuine, path: Path_, value: Any, seen: dict[str, list[Any]], every_move: bool) -> list[Any]:
    """The tempting other values for the leaf at ``path``."""
    record = genuine.record
    key = next((k for k in reversed(path) if isinstance(k, str)), "")
    pick = random.Random(f"{genuine.name} {path}")
    values: list[Any] = [None] if value is not None else []
    others = [v for v in seen[key] if v != value or type(v) is not type(value)]
    if isinstance(value, bool):
        values += [not value]
    elif isinstance(value, int):
        values += [value + 1, value - 1, str(value), *pick.sample(others, min(2, len(others)))]
        if key == "bot_from_phase":
            values += [0, 1, len(record["phases"])]
    elif isinstance(value, float):
        values += [value + 1, str(value)]
    elif isinstance(value, str) and _TIME.fullmatch(value):
        values += [shift(value, by) for by in _SHIFTS]
    elif value is None:
        values += others[:4]
        if key == "bot_from_phase":
            values += [0, 1, len(record["phases"])]
        elif key == "left_at":
            values += [
                shift(record["phases"][0]["opened_at"], timedelta(seconds=1)),
                shift(record["phases"][-1]["opened_at"], timedelta(seconds=1)),
            ]
        elif key in ("name", "winner"):
            values += [p["name"] for p in record["players"]] + ["mallory"]
        else:
            values += [0, 1, "x", True]
    if isinstance(value, str) and not _TIME.fullmatch(value):
        values += _texts(genuine, path, value, key, others, pick, every_move)
    return values


def _texts(
    genuine: Genuine, path: Path_, value: str, key: str, others: list[Any], pick: random.Random, every_move: bool
) -> list[Any]:
    record = genuine.record
    if path == ("format",):
        return ["referee-record/1", "referee-record/2", "referee-record/3", "referee-record/5"]
    if path == ("game", "kind"):
        return [kind for kind in GAMES if kind != value]
    if path == ("game", "title"):
        return [game.title for game in GAMES.values() if game.title != value]
    if path == ("game", "state"):
        return ["running", "open", "abandoned"]
    if key in ("seed", "seed_commitment"):
        return [
            value[:-1] + ("0" if value[-1] != "0" else "1"),
            value.upper(),
            record["seed_commitment"] if key == "seed" else record["seed"],
        ]
    if key == "source" and path[0] == "phases":
        return [source for source in SOURCES if source != value] + ["timeout"]
    if key == "move" and path[0] == "phases":
        return _other_moves(genuine, path, value, pick, every_move)
    if key in ("name", "winner"):
        names = [p["name"] for p in record["players"] if p["name"] != value]
        seat = path[1] if path[0] == "players" else 0
        return names + [f"bot {seat + 1}", "mallory", value.upper(), ""]
    if key == "label":
        labels = sorted({e["label"] for e in record["phases"]} - {value})
        near = {*labels[:1], *labels[-1:], *pick.sample(labels, min(2, len(labels)))}
        return sorted(near) + [value + " ", value.lower()]
    if path[:2] == ("game", "options"):
        return [*others, *_OPTION_VALUES.get(path[2], ()), value.upper()]
    if path == ("game", "name"):
        return ["", value + "!"]
    return others[:3] + ["x"]


_OPTION_VALUES = {
    "ties": ("discard", "carry"),
    "reroll": ("pawn", "coin"),
    "scoring_colour": ("red", "yellow", "green", "blue"),
}


def _other_moves(genuine: Genuine, path: Path_, value: str, pick: random.Random, every_move: bool) -> list[str]:
    """Other legal moves of the seat in that phase (the seat's, from the
    genuine state), and two move texts seen elsewhere in the record."""
    record, number, at = genuine.record, path[1], path[3]
    seat = record["phases"][number]["moves"][at]["seat"]
    rules = get_game(record["game"]["kind"])
    state = genuine.forger.states[number]
    for player in record["players"]:
        if player["bot_from_phase"] == number + 1:
            state = rules.replace_by_bot(state, player["seat"])
    legal = [t for t in dict.fromkeys(rules.move_text(m) for m in rules.legal_moves(state, seat)) if t != value]
    if not every_move and len(legal) > 6:
        legal = pick.sample(legal, 6)
    elsewhere = sorted({m["move"] for e in record["phases"] for m in e["moves"]} - {value, *legal})
    return legal + pick.sample(elsewhere, min(2, len(elsewhere)))


def shift(text: str, by: timedelta) -> str:
    return (datetime.fromisoformat(text[:-1]) + by).strftime("%Y-%m-%dT%H:%M:%SZ")


def sample(found: list[Change], count: int, rng: random.Random) -> list[Change]:
    """``count`` changes, spread over the kinds of field: taken in turn from
    each path pattern (``phases[].moves[].source``), at random within it, so
    the many events' numbers do not crowd out the rest."""
    groups: dict[str, list[Change]] = defaultdict(list)
    for change in found:
        groups[change.pattern].append(change)
    for group in groups.values():
        rng.shuffle(group)
    order = sorted(groups)
    rng.shuffle(order)
    chosen: list[Change] = []
    while len(chosen) < count and any(groups.values()):
        for pattern in order:
            if groups[pattern] and len(chosen) < count:
                chosen.append(groups[pattern].pop())
    return chosen


# -- judging a change ----------------------------------------------------------------------


@dataclass
class Judged:
    """One variant of a record (a change, reforged or not) and what caught it."""

    change: Change
    forged: bool  # the change followed by the forger's recomputed events and winner
    caught: str  # "record" (verify refuses it), "digest" (only the players' digests), "" (nothing)
    message: str  # verify's verdict
    outcome: bool  # the change alters the replayed outcome: an event, the winner, the final scores
    allowed: bool  # uncaught, and docs/design.md says nothing covers it
    exempt: bool  # changes the outcome, yet only a digest can see it (docs/design.md)
    digests: frozenset[tuple[str, str]] = frozenset()  # the variant's, as verify computes them
    by_last: bool = False  # the record refuses it, or the last mail's digest alone disagrees

    @property
    def fault(self) -> str | None:
        """Why this variant breaks the property, if it does."""
        if not self.caught and not self.allowed:
            return "uncaught"
        if self.outcome and self.caught != "record" and not self.exempt:
            return "outcome changed, yet only the digests catch it"
        if self.caught and not self.by_last:
            return "the digests catch it, but not the last mail's alone"
        return None

    def describe(self) -> str:
        how = "forged (events and winner recomputed)" if self.forged else "as changed"
        return f"{self.change.describe()} [{how}]: {self.caught or 'UNCAUGHT'}: {self.message}"


def judge(genuine: Genuine, change: Change) -> list[Judged]:
    """The change as made, and as a forger would complete it; each variant
    identical to the genuine record, or to the other, is skipped."""
    record = genuine.record
    variant = change.apply(record)
    if variant == record:
        return []
    if not change.reforges:  # the forger would make the genuine events and winner again
        return [_judged(genuine, change, variant, False, False)]
    forged = genuine.forger.reforge(variant, change.first_phase)
    outcome = forged is None or _outcome(record, genuine.forger.scores, *forged)
    found = [_judged(genuine, change, variant, False, outcome)]
    if forged is not None and forged[0] != variant and forged[0] != record:
        found.append(_judged(genuine, change, forged[0], True, outcome))
    return found


def _outcome(record: dict[str, Any], scores: Any, forged: dict[str, Any], forged_scores: Any) -> bool:
    """Whether the forged record's replayed outcome differs from the genuine one's."""
    events = [entry["events"] for entry in record["phases"]]
    return (
        forged["winner"] != record["winner"]
        or forged_scores != scores
        or [entry["events"] for entry in forged["phases"]] != events
    )


def _judged(genuine: Genuine, change: Change, variant: dict[str, Any], forged: bool, outcome: bool) -> Judged:
    verdict = verify(variant)
    digests = frozenset((d.label, d.digest) for d in verdict.digests)
    caught = "record" if not verdict.ok else "" if genuine.held <= digests else "digest"
    return Judged(
        change,
        forged,
        caught,
        verdict.message,
        outcome,
        allowed=not caught and allowed_uncaught(genuine, change),
        exempt=digest_only(genuine, change, variant, forged),
        digests=digests,
        by_last=caught == "record" or not genuine.last <= digests,
    )


# What docs/design.md names as covered by neither the replay nor any digest,
# as (field path, test of the new value): a change there may verify.  One:
# the format named referee-record/2 (the one before) in a record where no
# player left, which that format reads the same (its bot flag differs only
# for a seat whose player left).  (The game's finished_at moved later was,
# until the end's digest.)
ALLOWED_UNCAUGHT: tuple[tuple[Path_, Callable[[Genuine, Change], bool]], ...] = (
    (
        ("format",),
        lambda genuine, change: (
            change.new == "referee-record/2"
            and all(player["bot_from_phase"] in (None, 0) for player in genuine.record["players"])
        ),
    ),
)


def allowed_uncaught(genuine: Genuine, change: Change) -> bool:
    """Whether docs/design.md says nothing catches this change (ALLOWED_UNCAUGHT)."""
    return any(change.path == path and allows(genuine, change) for path, allows in ALLOWED_UNCAUGHT)


def digest_only(genuine: Genuine, change: Change, variant: dict[str, Any], forged: bool) -> bool:
    """A change that alters the replayed outcome which only the digests can
    see (docs/design.md, "What a player can check"): a player renamed (the
    start digest); and, forged, the options (the start digest) or a move by
    mail made another legal move (the phase's digest): a mail move is the
    player's own choice, so the forged record is exactly the record of the
    game in which they had mailed that move."""
    path = change.path
    if change.op != "set":
        return False
    if len(path) == 3 and path[0] == "players" and path[2] == "name":
        return True
    if not forged:
        return False
    if path[:2] == ("game", "options"):
        return True
    if len(path) == 5 and path[0] == "phases" and path[4] == "move":
        return variant["phases"][path[1]]["moves"][path[3]]["source"] == "mail"
    return False
