"""The game contract (docs/rules-api.md, docs/adding-a-game.md), checked for
every game in ``GAMES``, in the manner of OpenSpiel's random_sim_test.

First the rules alone: seeded random games of each kind, at its fewest and
most seats and with each of its option variants, some seats bots from the
start and some players leaving midway, played to the end.  Every phase has
legal moves for each of its movers, each move's text reads back as that
move, every event is a JSON-able dict with a type, every view and private
news is JSON-able, the game ends with a sane result, and the replay of the
record is the game that was played.

Then through the engine: the shortest of those games that between them
emit every type of event are played again by mail (each person mails the
move it made, or leaves one the seed draws to the deadline; a player who
left resigns), and must come out the same, with every seat's own view
marked so that any of it that reaches the site, ``status``, the history or
another seat's mail is seen.  Every mail and page renders, every type of
event shows in its mail and on its site page, and the published record
verifies.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock, Seeds, body_of, reply

from referee.config import Config
from referee.engine import Engine
from referee.record import (
    PhaseRecord,
    random_move_rng,
    replay,
    resolve_rng,
    setup_rng,
    verify,
)
from referee.rules import GAMES, Game, Result
from referee.site.public import game_record, page_context
from referee.site.render import Site
from referee.store import Notify, Store
from referee.tables import Table
from referee.timeutil import from_iso

KINDS = sorted(GAMES)
TIMERS = ("round", "turn", "decision")
MAX_PHASES = 5000  # a bound, so a game that never ends fails instead of hanging

# Each kind's option sets worth playing (every value of each choice); a
# game not named here is played with its defaults.
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "pure-skill": [{"ties": "discard"}, {"ties": "carry"}],
    "bid": [
        {"reroll": "pawn", "max_auctions": 3},
        {"reroll": "coin", "max_auctions": 5},
        {"reroll": "pawn", "max_auctions": 300},
    ],
    "ice": [{"short": True, "scoring_colour": "green"}, {"short": False}],
    "priority": [{"turn_limit": 0}, {"turn_limit": 1}, {"turn_limit": 3}],
    "bluff": [{"exhibit_dice": 1}, {"exhibit_dice": 2}, {"rulings": 1}],
}

# Event types a game's site leaves out on purpose, and why (its mail must
# still show them).
SITE_LEAVES_OUT = {("bluff", "dice"): "the auction event that follows shows the same dice"}


def plain(value: Any) -> Any:
    """What JSON makes of a value: a JSON-able value's twin."""
    return json.loads(json.dumps(value))


# -- the rules alone --------------------------------------------------------------------


def random_game(
    game: Game,
    seed: bytes,
    seats: int,
    options: dict[str, Any],
    chooser: random.Random,
    initial_bots: tuple[int, ...] = (),
    thorough: bool = True,
) -> dict[str, Any]:
    """A whole game played by the rules alone, the contract checked on the
    way; what a replay must reproduce.  Not ``thorough``: only a few of each
    mover's legal moves are read back, and the seats' views only at the end
    (a long game then costs a tenth)."""
    state = game.setup(seats, setup_rng(seed), options)
    for seat in initial_bots:
        state = game.replace_by_bot(state, seat)
    for seat in range(seats):
        news = game.private_news(None, state, seat)
        assert news is None or (isinstance(news, dict) and plain(news) == news)
    befores, records, moves_made, events_seen = [], [], [], []
    for number in range(1, MAX_PHASES + 1):
        phase = game.phase(state)
        if phase is None:
            break
        check_phase(game, state, phase, seats, thorough)
        new_bots: tuple[int, ...] = ()
        if chooser.random() < 0.01:
            seat = chooser.randrange(seats)
            if seat not in state.bots:
                new_bots = (seat,)
                left = game.replace_by_bot(state, seat)
                assert game.phase(left) == phase, "replace_by_bot changed the phase"
                state = left
        befores.append(state)
        moves = {}
        for seat in phase.movers:
            legal = check_moves(game, state, seat, None if thorough else chooser)
            drawn = game.random_move(state, seat, random_move_rng(seed, number, seat))
            assert drawn in legal, f"{phase.label}: random_move {drawn!r} is no legal move"
            if seat in state.bots or chooser.random() < 0.3:
                moves[seat] = drawn
            else:
                moves[seat] = chooser.choice(legal)
            assert game.read_move(state, seat, game.move_text(moves[seat])) == moves[seat]
        after, events = game.resolve(state, moves, resolve_rng(seed, number))
        assert isinstance(events, list) and plain(events) == events, f"{phase.label}: events not JSON"
        assert all(isinstance(e, dict) and isinstance(e.get("type"), str) for e in events), phase.label
        assert game.revealed(state, moves, events) <= set(phase.movers)
        for seat in range(seats):
            news = game.private_news(state, after, seat)
            assert news is None or (isinstance(news, dict) and plain(news) == news)
        state = after
        records.append(PhaseRecord(number, {s: game.move_text(m) for s, m in moves.items()}, new_bots))
        moves_made.append(moves)
        events_seen.append(events)
    else:
        pytest.fail(f"{game.kind}: no end after {MAX_PHASES} phases")
    result = game.result(state)
    assert isinstance(result, Result), "a game over has a result"
    assert len(result.scores) == seats
    assert result.winner is None or (0 <= result.winner < seats and result.winner not in state.bots)
    check_views(game, state, seats)
    standing = game.standing(state)
    assert standing is not None and len(standing) == seats
    return {
        "seed": seed,
        "seats": seats,
        "options": options,
        "bots": initial_bots,
        "state": state,
        "befores": befores,
        "records": records,
        "moves": moves_made,
        "events": events_seen,
    }


def check_phase(game: Game, state: Any, phase: Any, seats: int, thorough: bool) -> None:
    assert game.result(state) is None, f"{phase.label}: a result while the game waits for moves"
    assert isinstance(phase.label, str) and phase.label.strip()
    assert phase.movers and list(phase.movers) == sorted(set(phase.movers)), phase
    assert all(0 <= seat < seats for seat in phase.movers), phase
    assert phase.sealed or len(phase.movers) == 1, f"{phase.label}: a turn has one mover"
    assert phase.deadline_kind in TIMERS, phase
    check_views(game, state, seats if thorough else 0)


def check_views(game: Game, state: Any, seats: int) -> None:
    """Views are JSON-able; a seat's view is the public one plus its own
    secrets (so it has every key the public view has); ``scores``, when the
    public view shows them, has one per seat."""
    public = game.view(state, None)
    assert isinstance(public, dict) and plain(public) == public
    if "scores" in public and seats:
        assert len(public["scores"]) == seats
    for seat in range(seats):
        own = game.view(state, seat)
        assert isinstance(own, dict) and plain(own) == own
        assert set(public) <= set(own), f"seat {seat}'s view lacks {set(public) - set(own)}"


def check_moves(game: Game, state: Any, seat: int, chooser: random.Random | None = None) -> list[Any]:
    """A mover's legal moves: some, in a fixed order, each one's text read
    back as that move (with a ``chooser``: three of them, at random)."""
    legal = game.legal_moves(state, seat)
    assert legal, f"seat {seat} owes a move but has no legal move"
    assert game.legal_moves(state, seat) == legal
    for move in legal if chooser is None else chooser.sample(legal, min(3, len(legal))):
        text = game.move_text(move)
        assert game.parse_move(state, seat, text) == move, f"{text!r} does not read back as {move!r}"
    return legal


def cases(kind: str) -> Iterator[tuple[int, dict[str, Any], tuple[int, ...]]]:
    """Seats, options and bots from the start of each game played: each
    variant at the fewest and the most seats, one with a bot from the start."""
    game = GAMES[kind]
    for index, options in enumerate(VARIANTS.get(kind, [{}])):
        for seats in sorted({game.min_seats, game.max_seats}):
            yield seats, options, (seats - 1,) if index % 2 and seats > 2 else ()


@functools.cache
def playouts(kind: str) -> list[dict[str, Any]]:
    """The random games of ``kind`` by its rules alone, each replayed: three
    of each of its cases (the first two games checked thoroughly)."""
    game, lives = GAMES[kind], []
    for seats, options, bots in cases(kind):
        options = game.check_options(options)
        for n in range(3):
            name = f"{kind} {seats} {sorted(options.items())} {bots} {n}"
            seed, chooser = hashlib.sha256(name.encode()).digest(), random.Random(name)
            live = random_game(game, seed, seats, options, chooser, bots, thorough=len(lives) < 2)
            again = replay(game, seed, seats, options, bots, live["records"])
            assert again.state == live["state"]
            assert [step.events for step in again.steps] == live["events"]
            assert [step.moves for step in again.steps] == live["moves"]
            assert [step.before for step in again.steps] == live["befores"]
            lives.append(live)
    return lives


@pytest.mark.parametrize("kind", KINDS)
def test_rules_keep_the_contract_over_random_games_and_replay_them(kind):
    lives = playouts(kind)
    assert len(lives) >= 3
    assert all(live["events"] for live in lives)


# -- through the engine, by mail --------------------------------------------------------


def marker(seat: int) -> str:
    return f"\u2039seat {seat}\u203a"


MARKED = re.compile("\u2039seat (\\d+)\u203a")


def marked(value: Any, mark: str) -> Any:
    """``value`` with ``mark`` after every string in it (keys kept)."""
    if isinstance(value, str):
        return value + mark
    if isinstance(value, dict):
        return {key: marked(item, mark) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(marked(item, mark) for item in value)
    return value


class ByMail:
    """One of the random games of the rules (``playouts``) played again
    through the engine, by mail: each person mails the move it made, but
    leaves a move the seed would draw for it to the deadline; a player who
    left resigns.  The engine must make the very same game of it."""

    def __init__(self, kind: str, folder: Path, live: dict[str, Any], notify: Notify = Notify.EVERY):
        self.kind, self.rules, self.live = kind, GAMES[kind], live
        self.clock = FakeClock()
        # At EVERY each phase's result goes to every player: ``contexts`` holds each one's round mail.
        config = Config(
            address="referee@example.org", database=Path(":memory:"), reminder=None, outage_gap=None, notify=notify
        )
        self.engine = Engine(Store(":memory:"), config, self.clock, Seeds(live["seed"]))
        self.players = [f"player{seat}@example.org" for seat in range(live["seats"] - len(live["bots"]))]
        assert list(live["bots"]) == list(range(len(self.players), live["seats"]))  # the engine's bots sit last
        self.game = self.engine.new_game(
            kind,
            self.players,
            bots=len(live["bots"]),
            options=live["options"],
            deadline=timedelta(hours=12),
            settle=timedelta(0),
        )
        self.site = Site(self.engine, folder)
        self.outcomes: list[str] = []
        # The first context each mail of a game's own was rendered with, by
        # template and phase: {("ice/round", 3): {...}, ("ice/final", None): {...}}
        self.contexts: dict[tuple[str, int | None], dict[str, Any]] = {}
        self.compose = self.engine.post.composer.render
        self.engine.post.composer.render = self._compose  # type: ignore[method-assign]

    def _compose(self, template: str, **context: Any) -> tuple[str, str]:
        number = context["round"]["number"] if "round" in context else None
        self.contexts.setdefault((template, number), context)
        return self.compose(template, **context)

    @property
    def table(self) -> Table:
        return self.engine.table(self.game)

    def send(self, seat: int, text: str) -> str:
        outcome = self.engine.ingest(
            reply(self.engine, self.players[seat], text, game=self.game, received=self.clock())
        )
        self.outcomes.append(outcome.code)
        return outcome.code

    def play(self, midway: Callable[[], None]) -> None:
        looked = False
        for record in self.live["records"]:
            number, open_ = record.number, self.table.open_phase
            if open_ is None or open_["number"] > number:  # resolved at once: its movers were bots, or forced
                assert not record.new_bots
                continue
            assert open_["number"] == number
            self.clock.advance(minutes=5)
            if number >= 2 and not looked:
                midway()
                looked = True
            for seat in record.new_bots:
                self.engine.resign(self.game, self.players[seat])
            table = self.table
            for seat in table.waiting_for(table.open_phase) if table.open_phase["number"] == number else ():
                drawn = self.rules.random_move(table.state, seat, random_move_rng(self.live["seed"], number, seat))
                if record.moves[seat] != self.rules.move_text(drawn):  # else the deadline draws it
                    assert self.send(seat, record.moves[seat]) == "move", (number, record.moves[seat])
            still = self.table.open_phase
            if still is not None and still["number"] == number:
                self.clock.now = max(self.clock.now, from_iso(still["deadline"]))
                self.engine.tick()
        assert self.table.row["state"] == "finished", "the game did not end"
        assert [step.events for step in self.table.replay.steps] == self.live["events"]

    def mails(self) -> list[tuple[str, str]]:
        """(to, text) of every mail the referee wrote, subject and body."""
        return [
            (row["recipients"][0], f"{row['subject']}\n{body_of(row['raw'])}") for row in self.engine.store.outbox(None)
        ]


def site_text(folder: Path) -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(folder.rglob("*")) if path.is_file())


def shows(render: Callable[[list[dict[str, Any]]], str], events: list[dict[str, Any]], index: int) -> bool:
    """Whether what ``render`` makes of a phase's events says something for
    the event at ``index``: by its type (the same event under a type no game
    has renders otherwise, or cannot be rendered), or by the template's
    default for any other type (it renders the same, and without the event
    a word or a number less: more than a separator such as "; " or "<br>")."""
    whole = render(events)
    retyped = [*events[:index], {**events[index], "type": "(a type no game has)"}, *events[index + 1 :]]
    try:
        if render(retyped) != whole:
            return True
    except Exception:  # noqa: BLE001 - a template that cannot do without its type shows it
        return True
    try:
        without = render(events[:index] + events[index + 1 :])
    except Exception:  # noqa: BLE001 - nor one that cannot do without the event
        return True
    return _letters(whole) - _letters(without) >= 3


def _letters(text: str) -> int:
    """How many letters and digits a text shows (outside HTML tags)."""
    return sum(c.isalnum() for c in re.sub(r"<[^>]*>", "", text))


def emitted(events: list[list[dict[str, Any]]]) -> dict[str, tuple[int, int]]:
    """Each type of event among a game's phases' events: where it first is
    (phase number, index)."""
    types: dict[str, tuple[int, int]] = {}
    for number, phase_events in enumerate(events, start=1):
        for index, event in enumerate(phase_events):
            types.setdefault(event["type"], (number, index))
    return types


def check_by_mail(played: ByMail) -> None:
    """Play it; no seat's view reaches the public or another seat, and the
    record verifies."""
    seen: dict[str, str] = {}

    def midway() -> None:
        """The site, status and history while the game runs; a seat's own
        STATUS and HAND."""
        played.site.render()
        seen["site"] = site_text(played.site.folder)
        seen["status"] = json.dumps(played.engine.status(played.game), ensure_ascii=False)
        seen["history"] = played.engine.history(played.game)
        seat = next(s for s in range(len(played.players)) if played.table.human(s))
        assert played.send(seat, "STATUS") == "done"
        assert played.send(seat, "HAND") == "done"

    played.play(midway)
    assert seen, "the game ended before it was looked at"
    assert set(played.outcomes) <= {"move", "done"}, played.outcomes
    played.site.render()
    engine = played.engine
    public = [
        seen["site"],
        seen["status"],
        seen["history"],
        site_text(played.site.folder),
        json.dumps(engine.status(played.game), ensure_ascii=False),
        engine.history(played.game),
    ]
    for text in public:
        assert not MARKED.search(text), f"a seat's view in public: {MARKED.search(text)[0]}"
    own = 0
    for to, text in played.mails():
        seat = played.players.index(to)
        assert {int(s) for s in MARKED.findall(text)} <= {seat}, f"another seat's view in {to}'s mail"
        own += marker(seat) in text
    assert own, "no seat's own view reached its mail: the check above checks nothing"
    verdict = verify(game_record(played.table))
    assert verdict.ok, verdict.message


def unshown(played: ByMail, types: dict[str, tuple[int, int]]) -> list[str]:
    """The event types (at their phase and index) that the mail announcing
    them (or the final mail) or the game's site page (its rounds, its feed's
    lines) does not show (see ``shows``)."""
    kind, table, compose = played.kind, played.table, played.compose
    page = page_context(table)
    env = played.site.env

    def mail(number: int) -> Callable[[list[dict[str, Any]]], str]:
        """The phase's round mail and the final mail, as the engine wrote
        them (the contexts it used), with these events for the phase's."""

        def render(events: list[dict[str, Any]]) -> str:
            announced = played.contexts[f"{kind}/round", number]
            final = played.contexts[f"{kind}/final", None]
            rounds = [r if r["number"] != number else {**r, "events": events} for r in final["rounds"]]
            return "\n".join(
                [
                    *compose(f"{kind}/round", **{**announced, "round": {**announced["round"], "events": events}}),
                    *compose(f"{kind}/final", **{**final, "rounds": rounds}),
                ]
            )

        return render

    def site(number: int) -> Callable[[list[dict[str, Any]]], str]:
        def render(events: list[dict[str, Any]]) -> str:
            rounds = [r if r["number"] != number else {**r, "events": events} for r in page["rounds"]]
            return "\n".join(
                [
                    env.get_template(f"site/{kind}/rounds.html.j2").render(**{**page, "rounds": rounds}),
                    env.get_template(f"site/{kind}/summary.txt.j2").render(
                        rounds=rounds, names=table.names, game=page["game"]
                    ),
                ]
            )

        return render

    missing = []
    for name, (number, index) in sorted(types.items()):
        events = table.replay.steps[number - 1].events
        missing += [] if shows(mail(number), events, index) else [f"mail: {name}"]
        if (kind, name) not in SITE_LEAVES_OUT:
            missing += [] if shows(site(number), events, index) else [f"site: {name}"]
    return missing


def by_mail(kind: str) -> list[dict[str, Any]]:
    """The fewest short random games of ``kind`` that between them emit
    every type of event its random games did: the shortest, then for each
    type it lacks the shortest game that has it."""
    lives = sorted(playouts(kind), key=lambda live: len(live["records"]))
    chosen, shown = [], set()
    for live in lives:
        types = set(emitted(live["events"]))
        if not chosen or types - shown:
            chosen.append(live)
            shown |= types
    return chosen


@pytest.mark.parametrize("kind", KINDS)
def test_games_by_mail_render_every_event_and_leak_no_seats_view(kind, tmp_path, monkeypatch):
    rules = GAMES[kind]
    views = rules.view

    def view(state: Any, seat: int | None) -> dict[str, Any]:
        own = views(state, seat)
        return own if seat is None else marked(own, marker(seat))

    shown: set[str] = set()
    for index, live in enumerate(by_mail(kind)):
        monkeypatch.setattr(rules, "view", view)
        played = ByMail(kind, tmp_path / f"site-{index}", live)
        check_by_mail(played)
        types = emitted(live["events"])
        assert unshown(played, {name: at for name, at in types.items() if name not in shown}) == []
        shown |= set(types)
    assert shown == {name for live in playouts(kind) for name in emitted(live["events"])}


@pytest.mark.parametrize("kind", KINDS)
def test_games_by_mail_at_notify_turns_leak_no_seats_view(kind, tmp_path, monkeypatch):
    """At NOTIFY TURNS a seat's mail carries more of its own (a receipt at
    the top of a result, its private news held for its prompt, what the
    others did since its last mail): still nothing of another seat's."""
    rules = GAMES[kind]
    views = rules.view

    def view(state: Any, seat: int | None) -> dict[str, Any]:
        own = views(state, seat)
        return own if seat is None else marked(own, marker(seat))

    monkeypatch.setattr(rules, "view", view)
    check_by_mail(ByMail(kind, tmp_path / "site", by_mail(kind)[0], notify=Notify.TURNS))


# -- a game without running scores -----------------------------------------------------


def test_a_game_whose_view_has_no_scores_shows_none_until_its_result(engine, clock, monkeypatch):
    """``scores`` in the public view is optional: without it ``status`` and
    the site's table of players show no score while the game runs, and the
    result's scores once it is over."""
    rules = GAMES["pure-skill"]
    views = rules.view

    def scoreless() -> None:
        monkeypatch.setattr(
            rules, "view", lambda state, seat: {k: v for k, v in views(state, seat).items() if k != "scores"}
        )

    game = engine.new_game("pure-skill", ["alice@example.org", "bob@example.org"], bots=1)
    scoreless()  # (this game's own templates show the scores: they are made without it)
    assert [p["score"] for p in engine.status(game)["players"]] == [None, None, None]
    assert [p["score"] for p in page_context(engine.table(game))["players"]] == [None, None, None]
    monkeypatch.undo()
    for _ in range(13):
        clock.advance(days=4)
        engine.tick()
    table = engine.table(game)
    assert table.row["state"] == "finished"
    scores = list(rules.result(table.state).scores)
    scoreless()
    assert [p["score"] for p in engine.status(game)["players"]] == scores
    assert [p["score"] for p in page_context(table)["players"]] == scores
