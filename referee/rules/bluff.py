"""Bluff Auction (Seth Jaffee), for 2 to 5 seats, by mail.

Quotes in comments are from docs/rules/bluff-auction.txt; the rulings
(F1, F2, ...) are in docs/games/bluff-auction.md.

Nine rounds.  Each round offers six tiles, one per track (a special tile on
purple, an artifact on each colour).  Every player rolls dice that only they
see; players with Tools may reroll; then bidding goes round in turns (place
a token from hand, move one of your overbid tokens, or pass) until everyone
has passed in succession.  Each track then resolves, purple first: the dice
of its colour are shown, and the highest bid that does not exceed the dice
of that colour plus purple (plus the bidder's own virtual dice) wins.  Won
tiles are placed in the museum, or exhibited in sets for points.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any, Generic, Literal, TypeVar

from referee.rules import reading
from referee.rules.api import Game, MoveError, OptionError, Phase, Result, escaped, replace
from referee.rules.rng import Rng

COLOURS = ("black", "red", "yellow", "blue", "green")  # F1: the artifacts' cultures
PURPLE = "purple"  # F1: wild on the dice; the special tiles' track
FACES = (*COLOURS, PURPLE)  # a colour blob die
TRACKS = (PURPLE, *COLOURS)  # F9: the order auctions resolve in
ERAS = ("ancient", "medieval", "modern")
TYPES = ("tool", "weapon", "art")
_ATTRIBUTE_BITS = (*COLOURS, *ERAS, *TYPES)  # (an artifact has one of each)
ROUNDS = 9

# F2: the special tiles by stage (group I on top); their names as players write them.
SPECIALS = {1: ("wild", "oneshot", "twodice"), 2: ("token", "outbid2", "room"), 3: ("vpurple", "tie"), 4: ("four",)}
SPECIAL_NAMES = {
    "wild": "Wild Attribute",
    "oneshot": "2 Virtual Purple Dice (1-shot)",
    "twodice": "2 Dice",
    "token": "Extra Bid Token",
    "outbid2": "Outbid by 2",
    "room": "Extra Museum Room",
    "vpurple": "Virtual Purple Die",
    "tie": "Overbid with Tie",
    "four": "4 Points",
}
STAGE_OF = {name: stage for stage, names in SPECIALS.items() for name in names}

# F3: by seat count: bid tokens, dice, community dice; museum circles and exhibit spaces.
START = {2: (4, 4, 0), 3: (3, 3, 1), 4: (2, 2, 2), 5: (2, 2, 3)}


def spaces(seats: int) -> int:
    """Exhibit spaces, and museum circles (F4): 6, or 5 with 5 players."""
    return 5 if seats == 5 else 6


def set_points(tiles: int) -> int:
    """1/3/6/10/15/21/28/36 for a set of 1/2/3/4/5/6/7/8 tiles."""
    return tiles * (tiles + 1) // 2


Artifact = tuple[str, str, str]  # (colour, era, type)
Tile = Artifact | str  # an artifact, or a special tile by name
# A move is a tuple tagged by its verb, as move_text writes it:
# ("reroll", dice numbers), ("bid", track, value),
# ("move", from track, its value, to track, new value), ("pass",), ("use",),
# ("keep",), ("place",), ("exhibit", tiles), ("discard", tile).  The verb is a
# Literal, not an Enum: a move is a plain tuple, built, compared ("pass",) in
# legal and read by its first item all through this module and never stored
# (move_text writes it), so mypy checking the verb's spelling is all an Enum
# would add, at the cost of a longer tag in every tuple.
Verb = Literal["reroll", "bid", "move", "pass", "use", "keep", "place", "exhibit", "discard"]
Move = tuple[Verb, *tuple[Any, ...]]


class Stage(StrEnum):
    """Where a round of Bluff Auction stands: ``stage`` in the state and in
    the view the templates read (its value, as before)."""

    TOOLS = "tools"  # the seats with Tools reroll their dice, a sealed phase per step
    BIDDING = "bidding"  # turns of bids, moves and passes
    RESOLVE = "resolve"  # the tracks resolved in order (passing through: no seat is asked)
    ONESHOT = "oneshot"  # the holder of a 1-shot tile is asked whether to use it on this track
    ACQUIRE = "acquire"  # a tile won is placed, exhibited with a set, or discarded
    OVER = "over"  # the game has ended


# The stages, as module constants: the rules compare a state's stage with one
# at every step of a replay, and reading a member off its Enum class costs
# ten times the comparison (Python 3.11's enum lookup; issue 36).
_TOOLS, _BIDDING, _RESOLVE, _ONESHOT, _ACQUIRE, _OVER = (
    Stage.TOOLS,
    Stage.BIDDING,
    Stage.RESOLVE,
    Stage.ONESHOT,
    Stage.ACQUIRE,
    Stage.OVER,
)

Bid = tuple[int, int, int, bool]  # (seat, value, order placed, tied)

_WORD = re.compile(r"[a-z0-9]+")
_NUMBERS = reading.NUMBER_WORDS
# Words a move may carry that change nothing ("bid 3 on the red track, please").
_FILLER = {
    "on",
    "to",
    "at",
    "from",
    "of",
    "token",
    "tokens",
    "my",
    "the",
    "track",
    "please",
    "i",
    "ll",
    "will",
    "it",
    "them",
    "dice",
    "die",
    "and",
    "a",
    "an",
    "thanks",
    "thank",
    "you",
    "ok",
    "okay",
    "for",
    "now",
    "numbers",
    "number",
    "this",
    "time",
}


# What a one-shot answer may say beside "use" or "keep"
_ONESHOT_WORDS = {"later", "1", "shot", "one", "tile", "virtual", "purple", "dice", "2", "two", "special"}


def tile_text(tile: Tile) -> str:
    """``red ancient tool``, or a special tile's name: ``Wild Attribute``."""
    return " ".join(tile) if isinstance(tile, tuple) else SPECIAL_NAMES[tile]


@functools.cache  # (a tile's place never changes, and there are 54 tiles)
def _tile_order(tile: Tile) -> tuple:
    if isinstance(tile, str):
        return (1, STAGE_OF[tile], tile)
    colour, era, kind = tile
    return (0, COLOURS.index(colour), ERAS.index(era), TYPES.index(kind))


def _sorted(tiles: Iterable[Tile]) -> tuple[Tile, ...]:
    return tuple(sorted(tiles, key=_tile_order))


# -- the site's table of phases -------------------------------------------------------


def phases_html(rounds: list[dict[str, Any]], names: list[str], players: list[dict[str, Any]]) -> str:
    """The rows of the site's table of phases (site/bluff/rounds.html.j2
    marks them safe): a row a phase, under a row naming its round; each
    says the phase in brief ("a tile won", "1-shot tile", "turn 3") and
    what happened in it (phase_html).  Escaped here as Jinja would escape
    it.  A Python function, not the template's loop: a few hundred phases
    a game (issue 36); tests/unit/test_words36_render.py holds it to that
    loop."""
    rows, group = [], ""
    names_html, players_html = _names_html(names, players)
    for round_ in rounds:
        part = round_["label"].split(" ", 2)
        if part[1] != group:
            group = part[1]
            rows.append(f'<tr><th scope="rowgroup" colspan="2">Round {_html(group)}</th></tr>\n')
        stage = part[2]
        if stage.startswith("acquisition"):
            stage = "a tile won"
        elif "1-shot" in stage:
            stage = "1-shot tile"
        else:
            stage = _said_html(stage.replace("bidding, ", ""))
        rows.append(
            f'<tr id="phase-{_html(round_["number"])}"><td class="nowrap">{stage}</td>\n'
            f'<td class="wrap who">{_phase_html(round_["events"], names_html, players_html)}</td></tr>\n'
        )
    return "".join(rows)


def phase_html(events: list[dict[str, Any]], names: list[str], players: list[dict[str, Any]]) -> str:
    """What a phase's row in the site's table of phases says happened
    (site/bluff/rounds.html.j2 marks it safe): its moves as
    events/bluff.txt.j2's did and move say them with detail, each auction's
    dice and who won it, a new round, the game's end; an auction's dice
    event shows nothing (the auction shows its counts).  Escaped here as
    Jinja would escape it.  A Python function, not macros per event: the
    table made a third of a full render of finished games (issue 36); a
    test compares it with those macros over whole games."""
    return _phase_html(events, *_names_html(names, players))


def _names_html(names: list[str], players: list[dict[str, Any]]) -> tuple[list[str], list[tuple[str, int]]]:
    """The names by seat, and the players' names and seats, escaped (once
    for a whole table: every auction names every player)."""
    return [_html(name) for name in names], [(_html(p["name"]), p["seat"]) for p in players]


def _phase_html(events: list[dict[str, Any]], names: list[str], players: list[tuple[str, int]]) -> str:
    """``phase_html``, of the names ``_names_html`` escaped."""
    cell, first = "", True
    for event in events:
        kind = event["type"]
        if kind == "dice":
            continue  # (an auction's dice show nothing: the auction shows its counts)
        if not first and kind not in ("auction", "round", "over"):  # (those start a line of their own)
            cell += "; "
        cell += _event_html(event, names, players)
        first = False
    return cell


def _event_html(e: dict[str, Any], names: list[str], players: list[tuple[str, int]]) -> str:
    """An event's words in a phase's row, of the names ``_names_html`` escaped."""
    kind = e["type"]
    if kind in _MOVE_EVENTS:
        return f"{names[e['seat']]} {_said_html(did_said(e, detail=True))}"
    if kind == "auction":  # (its counts and values are numbers the rules counted: nothing in them to escape)
        counts = e["dice"]
        dice = ", ".join([f"{name} {counts[seat]:d}" for name, seat in players])
        community = f", community {e['community']:d}" if e["community"] else ""
        tile = _said_html(e["tile"])
        if e["winner"] is not None:
            outcome = f'<span class="win">{names[e["winner"]]} wins {tile} with {e["value"]:d}</span>'
        elif e["bids"]:
            worth = ", ".join([f"{names[int(seat)]} could bid {v:d}" for seat, v in e["worth"].items()])
            outcome = f"every bid over ({worth}): {tile} leaves"
        else:
            outcome = f"no bids: {tile} leaves"
        return f"<br>{_said_html(e['track'])} (dice: {dice}{community}): {outcome}"
    if kind == "rerolled":
        return ", ".join(
            f"{names[int(seat)]} " + (f"rerolls {n}" if n else "keeps their dice") for seat, n in e["counts"].items()
        )
    if kind == "round":
        return f"<br>round {_html(e['round'])}: {names[e['start']]} starts"
    if kind == "over":
        return "<br>game over"
    return ""  # (a type named nowhere here shows nothing)


_MOVE_EVENTS = frozenset(("bid", "move", "pass", "oneshot", "special", "place", "exhibit", "discard"))  # a seat's own


_html = escaped  # (api.escaped: as the templates escape)


class _SaidHtml(dict[str, str]):
    """Text the rules word (a track, a tile, a move as did_said says it:
    a few hundred of them), escaped once each: the table of phases escapes
    one or more a phase, tens of thousands a full render.  Never names,
    which are the players' own and without end."""

    def __missing__(self, said: str) -> str:
        if len(self) >= 4096:  # (a bound on what is kept: the words are few, but exhibits combine tiles)
            self.clear()
        self[said] = html = _html(said)
        return html


_said_html = _SaidHtml().__getitem__


# -- a phase in words (events/bluff.txt.j2's macros call these) -----------------------
# Python functions, not macros: the site's feed says every phase's headline, a
# few hundred phases a game, and a macro call costs more than the words (issue
# 36).  tests/unit/test_words36_render.py holds them to the macros they
# replaced.  Plain text: the macros escape it for a page.


def did_said(e: Mapping[str, Any], detail: bool = False) -> str:
    """What a player did, after their name: "bids 3 on red", "moves their
    token of 3 from purple to red at 1", "passes", "uses the 1-shot tile",
    "exhibits a set of 2 for 3 points", "discards T", "takes T" (a special
    tile), "places T"; with ``detail``, as the site's table of phases says
    it ("bids 3 on red (tie)", "moves purple 3 to red at 1", "passes
    (nothing else to do)", "exhibits T, U for 3")."""
    kind = e["type"]
    if kind == "bid":
        return f"bids {e['value']} on {e['track']}" + (" (tie)" if detail and e["tied"] else "")
    if kind == "move":
        if detail:
            token = f" {int(e['token'])}" if "token" in e else ""
            return f"moves {e['from']}{token} to {e['track']} at {e['value']}"
        token = f"their token of {e['token']}" if "token" in e else "a token"
        return f"moves {token} from {e['from']} to {e['track']} at {e['value']}"
    if kind == "pass":
        return "passes" + (" (nothing else to do)" if detail and e["forced"] else "")
    if kind == "oneshot":
        return ("uses" if e["used"] else "keeps") + " the 1-shot tile"
    if kind == "exhibit":
        if detail:
            return f"exhibits {', '.join(map(str, e['set']))} for {e['points']}"
        return f"exhibits a set of {len(e['set'])} for {e['points']} points"
    if kind == "discard":
        return f"discards {e['discarded']}"
    if kind == "special":
        return f"takes {e['tile']}"
    return f"places {e['tile']}"


def move_said(e: Mapping[str, Any], names: list[str], detail: bool = False) -> str:
    """A move with its player's name ("ann bids 3 on red"), or the dice some
    rerolled: "rerolls"; with ``detail``, whose and how many ("ann rerolls
    2, bob keeps their dice")."""
    if e["type"] != "rerolled":
        return f"{names[e['seat']]} {did_said(e, detail)}"
    if not detail:
        return "rerolls"
    return ", ".join(
        f"{names[int(seat)]} " + (f"rerolls {n:d}" if n else "keeps their dice") for seat, n in e["counts"].items()
    )


def won_said(e: Mapping[str, Any], names: list[str], detail: bool = False) -> str:
    """An auction won: "ann wins red modern art"; with ``detail``, "... with 5"."""
    return f"{names[e['winner']]} wins {e['tile']}" + (f" with {e['value']}" if detail else "")


def headline_said(round_: Mapping[str, Any], names: list[str]) -> str:
    """A phase in one line, after its label: its move (a special tile taken,
    with the set exhibited with it), every auction it resolved that was won
    ("bob passes; ann wins red modern art; bob wins Purple 5": the site's
    feed tells a round by those), and whether the game ended."""
    events = round_["events"]
    first = events[0]
    special = first["type"] == "special"
    exhibited, won, over = "", "", ""  # (in one pass over the events: the feed says every phase's)
    for e in events:
        kind = e["type"]
        if kind == "auction":
            if e["winner"] is not None:
                won += f"; {names[e['winner']]} wins {e['tile']}"  # (won_said)
        elif kind == "exhibit":
            if special:
                exhibited += f" and {did_said(e)}"
        elif kind == "over":
            over += "; game over"
    return move_said(first, names) + exhibited + won + over


@dataclass(frozen=True)
class BluffState:
    stacks: tuple[tuple[Artifact, ...], ...]  # per colour, the artifacts not yet offered (sorted)
    specials: tuple[tuple[str, ...], ...]  # per stage I..IV, the special tiles not yet offered
    offer: tuple[Tile | None, ...]  # per track (TRACKS order): the tile on offer; None once resolved
    dice: tuple[tuple[str, ...], ...]  # per seat, the faces it rolled (secret: F13)
    community: tuple[str, ...]
    tokens: tuple[int, ...]  # bid tokens in hand, per seat
    bids: tuple[tuple[Bid, ...], ...]  # per track, in the order placed
    placed: int  # bids placed this round (their order)
    turns: int  # bidding turns taken this round (for the labels)
    passes: int  # passes in succession
    turn: int | None
    start: int  # this round's start player
    museum: tuple[tuple[Tile, ...], ...]  # per seat: face-up artifacts (and Wild Attribute)
    held: tuple[frozenset[str], ...]  # per seat: special tiles in play beside the museum (F5)
    exhibits: tuple[tuple[tuple[Tile, ...], ...], ...]  # per seat: each set exhibited (face down)
    gone: tuple[Tile, ...]  # out of the game: unsold, discarded, or a 1-shot used
    points: tuple[int, ...]  # points scored so far (exhibits)
    round: int
    stage: Stage
    tool_step: int  # the tools phase: seats with at least this many Tools reroll
    track: int  # resolution: the track being resolved (index into TRACKS)
    shown: frozenset[str]  # faces revealed so far this round (F13)
    won: tuple[tuple[int, Tile], ...]  # this round's tiles won, to acquire in order
    used_oneshot: int | None  # the seat counting 2 virtual purple dice on this track
    exhibit_dice: int  # dice an exhibit claims (option)
    rulings: int  # the edition of the rulings the game is played by (option; F21)
    bots: frozenset[int]

    @property
    def seats(self) -> int:
        return len(self.tokens)

    @property
    def mover(self) -> int:
        """``turn`` where a seat is sure to hold it: the bidder of a bidding
        turn, or the seat asked about its 1-shot tile."""
        if self.turn is None:
            raise ValueError(f"no seat holds the turn at stage {str(self.stage)!r}")
        return self.turn

    def on_offer(self, track: int) -> Tile:
        """The tile offered on ``track``, which is not resolved yet."""
        tile = self.offer[track]
        if tile is None:
            raise ValueError(f"the {TRACKS[track]} track is resolved already")
        return tile

    def rolled(self) -> int:
        """Every die rolled this round, community dice too: no bid above it and a
        bidder's virtual dice can win (F8)."""
        return sum(map(len, self.dice)) + len(self.community)

    def high(self, track: int) -> Bid | None:
        return _highs(self.bids)[track]

    def capacity(self, seat: int) -> int:
        return spaces(self.seats) + (2 if "room" in self.held[seat] else 0)


class BluffAuction(Game[BluffState, Move]):
    kind = "bluff"
    title = "Bluff Auction"
    min_seats, max_seats = 2, 5
    move_word = "bid"
    move_words = ("bid", "move", "pass", "reroll", "keep", "use", "place", "exhibit", "discard")
    example = "bid red 3"
    filters = {
        "bluff_phases_html": phases_html,
        "bluff_did": did_said,
        "bluff_move": move_said,
        "bluff_won": won_said,
        "bluff_headline": headline_said,
    }
    # "rulings": the edition of the rulings a game is played by (F21): 2 for a
    # new game; a game recorded before the option existed was played by 1.
    options = {"exhibit_dice": 1, "rulings": 2}
    option_help: Mapping[str, str] = {
        "exhibit_dice": "dice rolled for each exhibit: 1, or 2 for each of the first three (F6)",
        "rulings": "the edition of the rulings a game is played by: 2 (a new game) or 1 (F21)",
    }
    rule_text = "docs/rules/bluff-auction.txt"
    rulings_page = "docs/games/bluff-auction.md"
    recorded_without: Mapping[str, Any] = {"rulings": 1}
    deadlines = {"turn": timedelta(hours=12), "decision": timedelta(hours=6)}  # a few hundred turns a game
    moves_public = False  # F13: a tools phase's reroll names dice, which are secret

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        options = super().check_options(options)
        for name, refusal in (
            ("exhibit_dice", "exhibit_dice must be 1 or 2"),
            ("rulings", "rulings must be 1 or 2 (ruling F21)"),
        ):
            try:
                options[name] = int(options[name])
            except (TypeError, ValueError):
                raise OptionError(refusal) from None
            if options[name] not in (1, 2):
                raise OptionError(refusal)
        return options

    # -- setting up -------------------------------------------------------------

    def setup(self, seats: int, rng: Rng, options: Mapping[str, Any]) -> BluffState:
        if seats not in START:
            raise OptionError("Bluff Auction is for 2 to 5 players")
        options = self.check_options(options)
        start = rng.randbelow(seats)  # "Randomly choose a Start player"
        state = BluffState(
            stacks=tuple(tuple((c, e, t) for e in ERAS for t in TYPES) for c in COLOURS),
            specials=tuple(SPECIALS[stage] for stage in (1, 2, 3, 4)),
            offer=(None,) * 6,
            dice=((),) * seats,
            community=(),
            tokens=(0,) * seats,
            bids=((),) * 6,
            placed=0,
            turns=0,
            passes=0,
            turn=None,
            start=start,
            museum=((),) * seats,
            held=(frozenset(),) * seats,
            exhibits=((),) * seats,
            gone=(),
            points=(0,) * seats,
            round=0,
            stage=_TOOLS,
            tool_step=0,
            track=0,
            shown=frozenset(),
            won=(),
            used_oneshot=None,
            exhibit_dice=options["exhibit_dice"],
            rulings=options["rulings"],
            bots=frozenset(),
        )
        state, events = _new_round(state, start, rng)
        state, _ = _play_on(state, events, rng)
        return state

    # -- what is asked now ------------------------------------------------------

    def phase(self, state: BluffState) -> Phase | None:
        if state.stage == _BIDDING:  # (most phases)
            return _bidding_phase(state.round, state.turns, state.mover)
        r = state.round
        movers = _movers(state)
        if state.stage == _TOOLS:
            return _tools_phase(r, state.tool_step, movers)
        if state.stage == _ONESHOT:
            label = f"Round {r} {TRACKS[state.track]} auction: the 1-shot tile"
            return Phase(label, movers, sealed=False, timer="decision")
        if state.stage == _ACQUIRE:
            label = f"Round {r} acquisition: {tile_text(state.won[0][1])}"
            return Phase(label, movers, sealed=False, timer="decision")
        return None

    def legal_moves(self, state: BluffState, seat: int) -> list[Move]:
        if seat not in _movers(state):
            return []
        if state.stage == _TOOLS:
            dice = len(state.dice[seat])
            return [
                ("reroll", combo) for n in range(dice + 1) for combo in itertools.combinations(range(1, dice + 1), n)
            ]
        if state.stage == _BIDDING:
            return _bidding_moves(state, seat)
        if state.stage == _ONESHOT:
            return [("use",), ("keep",)]
        return _acquisitions(state, seat, state.won[0][1])

    def parse_move(self, state: BluffState, seat: int, text: str) -> Move:
        stage = state.stage  # (most moves are read from their words alone, each line once)
        if stage == _BIDDING:
            move = _bid_or_pass(text)
        elif stage == _TOOLS:
            move = _reroll_of(text, len(state.dice[seat]))
        elif stage == _ACQUIRE:
            move = _tile_won_named(state, _acquisition_said(text))
        else:
            move = None
        if move is None:
            move = self._read(state, seat, text)
        if not self._allowed(state, seat, move):
            raise MoveError(_why_not(state, seat, move) or f"'{self.move_text(move)}' is not a move you can make now.")
        return move

    def _read(self, state: BluffState, seat: int, text: str) -> Move:
        """The move ``text`` says, whether or not it is allowed now."""
        words = _words(text)
        if not words:
            raise MoveError(self._forms(state))
        if state.stage == _TOOLS:
            move = _read_reroll(words, len(state.dice[seat]))
        elif state.stage == _ONESHOT:
            said = [w for w in words if w not in _ONESHOT_WORDS]  # "No, keep it for later", "use the 1-shot"
            said = said[1:] if said[:1] in (["yes"], ["no"]) and said[1:] in (["use"], ["keep"]) else said
            move = ("use",) if said in (["use"], ["yes"]) else ("keep",) if said in (["keep"], ["no"]) else None
        elif state.stage == _ACQUIRE:
            move = _read_acquisition(state, seat, words)
        else:
            move = _read_bid(state, seat, words)
        if move == ("pass",) and not reading.bare_move(text, "pass"):  # "pass it on"
            raise MoveError("'pass' is a move by itself: nothing after it.")
        if move is None:
            raise MoveError(self._forms(state))
        return move

    def _allowed(self, state: BluffState, seat: int, move: Move) -> bool:
        """Whether ``move`` is one of ``legal_moves``, by the tests that list
        them, without listing them all (a replay checks each move of the
        game so: the rerolls of six dice are 64 moves, and the sets a
        museum may exhibit many more)."""
        stage = state.stage
        if stage == _BIDDING:  # (most moves: _movers is the bidder alone)
            if seat != state.mover:
                return False
            if move == ("pass",):  # (as _bidding_moves: with tokens in hand, only when nothing else is legal)
                return not state.tokens[seat] or not _can_bid(state, seat)
            return _bid_allowed(state, seat, move)
        if seat not in _movers(state):
            return False
        if stage == _TOOLS:
            return _reroll_allowed(len(state.dice[seat]), move)
        if stage == _ACQUIRE:
            return _acquisition_allowed(state, seat, move)
        return move in (("use",), ("keep",))  # (the 1-shot tile's question: _movers is empty at the end)

    def _forms(self, state: BluffState) -> str:
        if state.stage == _TOOLS:
            return "Say which of your dice to roll again, by number: 'reroll 1 3', 'reroll all' or 'keep'."
        if state.stage == _ONESHOT:
            return "Say 'use' to count your 2 virtual purple dice on this auction (the tile is discarded), or 'keep'."
        if state.stage == _ACQUIRE and _beside(state.won[0][1]):
            return (
                "Say 'place' (the new tile goes beside your museum, and you exhibit nothing), or 'exhibit' and "
                "the tiles of a set from your museum (for example 'exhibit red ancient tool, red modern art, "
                "red medieval weapon')."
            )
        if state.stage == _ACQUIRE:
            return (
                "Say 'place' (into your museum), 'exhibit' and the tiles of a set (for example "
                "'exhibit red ancient tool, red modern art, red medieval weapon'), or 'discard' and a tile."
            )
        return (
            "A move is 'bid red 3' (a token from your hand), 'move blue 2 to red 4' (your overbid token of 2 "
            "on blue, to red at 4) or 'pass'."
        )

    def move_text(self, move: Move) -> str:
        verb = move[0]
        if verb == "reroll":
            return "reroll " + " ".join(map(str, move[1])) if move[1] else "keep"
        if verb == "bid":
            return f"bid {TRACKS[move[1]]} {move[2]}"
        if verb == "move":  # F20: the token moved is named by its value
            return f"move {TRACKS[move[1]]} {move[2]} to {TRACKS[move[3]]} {move[4]}"
        if verb == "exhibit":
            return "exhibit " + ", ".join(tile_text(t) for t in move[1])
        if verb == "discard":
            return f"discard {tile_text(move[1])}"
        return verb

    # -- resolving --------------------------------------------------------------

    def resolve(
        self, state: BluffState, moves: Mapping[int, Move], rng: Rng
    ) -> tuple[BluffState, list[dict[str, Any]]]:
        stage = state.stage
        if stage == _BIDDING:  # (most steps: a turn, after which the bidding mostly goes on)
            seat = state.mover
            state, events = _bid(state, seat, moves[seat])
            if state.turn is not None:  # (the next bidder's turn: _play_on stops there at once)
                events[-1]["scores"] = _totals(state)
                return state, events
            return _play_on(state, events, rng)
        if stage == _TOOLS:
            state, events = _rerolls(state, moves, rng)
            return _play_on(state, events, rng)
        seat = state.mover if stage != _ACQUIRE else state.won[0][0]
        move = moves[seat]
        if stage == _ONESHOT:
            state, events = _oneshot(state, seat, move)
        else:
            state, events = _acquire(state, seat, move)
        return _play_on(state, events, rng)

    def random_move(self, state: BluffState, seat: int, rng: Rng) -> Move:
        """F15: a timeout or a bot's move that is not absurd.  Tools: keep.
        Bidding: pass when allowed, else a token from hand at the lowest bid
        that beats a track, the track uniformly among those it can bid on.
        One-shot: use (it is offered only when it wins the tile).  A tile won:
        place it, else the largest set it can exhibit, else discard it."""
        legal = self.legal_moves(state, seat)
        if state.stage == _TOOLS:
            return ("reroll", ())
        if state.stage == _ONESHOT:
            return ("use",)
        if state.stage == _ACQUIRE:
            if ("place",) in legal:
                return ("place",)
            exhibits = [m for m in legal if m[0] == "exhibit"]
            if exhibits:
                return max(exhibits, key=lambda m: len(m[1]))
            return ("discard", state.won[0][1])
        if ("pass",) in legal:
            return ("pass",)
        lowest: dict[int, Move] = {}
        for move in legal:
            if move[0] == "bid" and (move[1] not in lowest or move[2] < lowest[move[1]][2]):
                lowest[move[1]] = move
        return rng.choice([lowest[t] for t in sorted(lowest)]) if lowest else legal[0]

    # -- what players see -------------------------------------------------------

    def view(self, state: BluffState, seat: int | None) -> dict[str, Any]:
        public = {
            "over": state.stage == _OVER,
            "round": state.round,
            "rounds": ROUNDS,
            "stage": state.stage,
            "start": state.start,
            "turn": state.turn,
            "passes": state.passes,
            "offer": {t: (tile_text(tile) if tile is not None else None) for t, tile in zip(TRACKS, state.offer)},
            "bids": {
                t: [{"seat": b[0], "value": b[1], "tied": b[3]} for b in sorted(bids, key=lambda b: (b[1], b[2]))]
                for t, bids in zip(TRACKS, state.bids)
            },
            "tokens": list(state.tokens),
            "dice_counts": [len(d) for d in state.dice],
            "community": list(state.community),
            "shown": {face: [d.count(face) for d in state.dice] for face in FACES if face in state.shown},
            "museum": [[tile_text(t) for t in m] for m in state.museum],
            "held": [sorted(SPECIAL_NAMES[s] for s in h) for h in state.held],
            "exhibits": [[len(s) for s in e] for e in state.exhibits],
            "points": list(state.points),
            "capacity": [state.capacity(s) for s in range(state.seats)],
            "spaces": spaces(state.seats),
            "scores": [total(state, s) for s in range(state.seats)],
            "stacks": [len(s) for s in state.stacks],
        }
        if seat is None:
            return public
        own = [*state.dice[seat], *state.community]
        private = {
            **public,
            "seat": seat,
            "dice": list(state.dice[seat]),
            # each track's limit the seat is sure of: its own dice, the community's and its own virtual
            # dice (a 1-shot tile is not counted until used); the others' dice only add
            "sure": {colour: _limit(state, seat, t, own) for t, colour in enumerate(TRACKS)},
        }
        phase = self.phase(state)
        if phase is not None and seat in phase.movers:
            legal = self.legal_moves(state, seat)
            private.update(legal_count=len(legal), examples=[self.move_text(m) for m in _examples(state, legal)])
            if state.stage == _ACQUIRE:  # the tile to place; a special one goes beside the museum (F5)
                private.update(won=tile_text(state.won[0][1]), beside=_beside(state.won[0][1]))
        return private

    def private_news(self, before: BluffState | None, after: BluffState, seat: int) -> dict[str, Any] | None:
        """F13: a seat's dice, when a round's roll gave it new ones, and after
        each of its rerolls (even one that rolled the same faces again)."""
        rerolled = before is not None and before.stage == _TOOLS and seat in _tool_movers(before, before.tool_step)
        if (
            before is not None
            and not rerolled
            and before.dice[seat] == after.dice[seat]
            and before.round == after.round
        ):
            return None
        if after.stage == _OVER or not after.dice[seat]:
            return None
        return {"round": after.round, "dice": list(after.dice[seat])}

    def result(self, state: BluffState) -> Result | None:
        if state.stage != _OVER:
            return None
        totals = [total(state, s) for s in range(state.seats)]
        people = [s for s in range(state.seats) if s not in state.bots]  # F17: a bot never wins
        if not people:
            return Result(scores=tuple(totals), winner=None)
        rank = {s: (totals[s], -len(state.exhibits[s])) for s in people}  # fewest exhibit spaces filled
        best = max(rank.values())
        leaders = [s for s in people if rank[s] == best]
        return Result(scores=tuple(totals), winner=leaders[0] if len(leaders) == 1 else None)


# A bidding turn's phase is a function of its round, turn and bidder: an
# immutable value, made once (a replay asks the phase of every step, and
# nine bidding turns in ten; its label and a frozen dataclass cost more).
@functools.lru_cache(maxsize=4096)
def _bidding_phase(round_: int, turns: int, bidder: int) -> Phase:
    return Phase(f"Round {round_} bidding, turn {turns + 1}", (bidder,), sealed=False)


# A tools phase's likewise: a function of its round, step and movers, which recur game to game.
@functools.lru_cache(maxsize=1024)
def _tools_phase(round_: int, step: int, movers: tuple[int, ...]) -> Phase:
    label = f"Round {round_} tools" + (f" {step}" if step > 1 else "")
    return Phase(label, movers, sealed=True, timer="decision")


def _examples(state: BluffState, legal: list[Move]) -> list[Move]:
    """A few of the legal moves for a prompt: in bidding, the lowest bid on
    each of a few tracks, a move of a token, and pass where they are legal."""
    if state.stage != _BIDDING:
        return legal[:3] + legal[-2:] if len(legal) > 5 else legal
    lowest: dict[tuple, Move] = {}
    for move in legal:
        key = (move[0], move[-2]) if move[0] != "pass" else ("pass",)
        lowest.setdefault(key, move)
    picks = [m for k, m in lowest.items() if k[0] == "bid"][:4]
    picks += [m for k, m in lowest.items() if k[0] == "move"][:1] + [m for k, m in lowest.items() if k[0] == "pass"]
    return picks


# -- rounds ------------------------------------------------------------------------------


def _new_round(state: BluffState, start: int, rng: Rng) -> tuple[BluffState, list[dict[str, Any]]]:
    """F6: the top tile of each colour's stack (drawn uniformly from it) in
    colour order, then the special tile (uniformly from its stage), then each
    seat's dice in seat order, then the community dice; tokens back to hand."""
    stacks = list(state.stacks)
    offer: list[Artifact] = []
    for i, stack in enumerate(stacks):
        drawn = rng.randbelow(len(stack))  # (rng.choice: a tile is one of a kind, so its place names it)
        offer.append(stack[drawn])
        stacks[i] = stack[:drawn] + stack[drawn + 1 :]
    specials = list(state.specials)
    stage = next(i for i, group in enumerate(specials) if group)
    drawn = rng.randbelow(len(specials[stage]))
    special = specials[stage][drawn]
    specials[stage] = specials[stage][:drawn] + specials[stage][drawn + 1 :]
    base_tokens, base_dice, community = START[state.seats]
    dice = []
    for seat in range(state.seats):
        count = base_dice + _exhibit_dice(state, seat) + 2 * ("twodice" in state.held[seat])
        dice.append(tuple([FACES[rng.randbelow(6)] for _ in range(count)]))
    common = tuple([FACES[rng.randbelow(6)] for _ in range(community)])
    tokens = tuple(base_tokens + ("token" in state.held[s]) for s in range(state.seats))
    offered: tuple[Tile, ...] = (special, *offer)
    state = replace(
        state,
        stacks=tuple(stacks),
        specials=tuple(specials),
        offer=offered,
        dice=tuple(dice),
        community=common,
        tokens=tokens,
        bids=((),) * 6,
        placed=0,
        turns=0,
        passes=0,
        turn=None,
        start=start,
        round=state.round + 1,
        stage=_TOOLS,
        tool_step=1,
        track=0,
        shown=frozenset(),
        won=(),
        used_oneshot=None,
    )
    event = {
        "type": "round",
        "round": state.round,
        "start": start,
        "offer": {t: tile_text(tile) for t, tile in zip(TRACKS, offered)},
        "dice": [len(d) for d in state.dice],
        "community": list(common),
    }
    return state, [event]


def _exhibit_dice(state: BluffState, seat: int) -> int:
    """F6: a die for each exhibit; with exhibit_dice=2, two dice for each of
    the first three (the designer's "2 dice when a set is Exhibited (3 times
    max)")."""
    exhibits = len(state.exhibits[seat])
    return exhibits if state.exhibit_dice == 1 else 2 * min(exhibits, 3)


def _tools(state: BluffState, seat: int) -> int:
    return _tool_counts(state.museum)[seat]


def _tool_count(museum: tuple[Tile, ...]) -> int:
    return sum(1 for t in museum if isinstance(t, tuple) and t[2] == "tool")


_Answer = TypeVar("_Answer")  # (_EachMuseum's: what its function answers of a museum)


class _EachMuseum(Generic[_Answer]):
    """A function of a museum, asked of every seat's at once.  The last
    answer is kept with the museums it was of, and given again while asked
    of that very tuple (immutable: a new state shares the museums no move
    changed, so every phase of a round, every bid of its auctions, asks of
    the same one).  The kept tuple holds the museums it compares by ``is``."""

    def __init__(self, each: Callable[[tuple[Tile, ...]], _Answer]):
        self.each = each
        self.kept: tuple[tuple[tuple[Tile, ...], ...], tuple[_Answer, ...]] | None = None

    def __call__(self, museums: tuple[tuple[Tile, ...], ...]) -> tuple[_Answer, ...]:
        kept = self.kept
        if kept is not None and kept[0] is museums:
            return kept[1]
        answers = tuple(map(self.each, museums))
        self.kept = (museums, answers)
        return answers


_tool_counts = _EachMuseum(_tool_count)  # each seat's Tools


def _movers(state: BluffState) -> tuple[int, ...]:
    """The seats ``phase`` asks for a move (none once the game is over),
    without its label: every move read is checked against them."""
    if state.stage == _TOOLS:
        return _tool_movers(state, state.tool_step)
    if state.stage in (_BIDDING, _ONESHOT):
        return (state.mover,)
    if state.stage == _ACQUIRE:
        return (state.won[0][0],)
    return ()


def _tool_movers(state: BluffState, step: int) -> tuple[int, ...]:
    """F7: one reroll per Tool in the museum, each in its own phase.  The
    last answer is kept with the museums and dice it was of, and given again
    while asked of those very tuples: a tools phase asks it for its label,
    for each mover's move and when it resolves."""
    kept = _last_tool_movers[0]
    museum, dice = state.museum, state.dice
    if kept is not None and kept[0] is museum and kept[1] is dice and kept[2] == step:
        return kept[3]
    tools = _tool_counts(museum)
    movers = tuple(seat for seat, rolled in enumerate(dice) if tools[seat] >= step and rolled)
    _last_tool_movers[0] = (museum, dice, step, movers)
    return movers


_last_tool_movers: list[tuple[Any, Any, int, tuple[int, ...]] | None] = [None]  # (_tool_movers)


def _reroll_allowed(dice: int, move: Move) -> bool:
    """Whether legal_moves lists ``move`` for a seat with ``dice`` dice: a
    reroll of some of them, by number, each once, in order."""
    if len(move) != 2 or move[0] != "reroll" or not isinstance(move[1], tuple):
        return False
    numbers = move[1]
    return all(isinstance(n, int) and 1 <= n <= dice for n in numbers) and list(numbers) == sorted(set(numbers))


def _rerolls(state: BluffState, moves: Mapping[int, Move], rng: Rng) -> tuple[BluffState, list[dict[str, Any]]]:
    """Seat by seat, die by die (F7); the event says only how many."""
    dice = list(state.dice)
    rerolled = {}
    for seat in sorted(moves):
        which = moves[seat][1]
        faces = list(dice[seat])
        for number in which:
            faces[number - 1] = FACES[rng.randbelow(6)]
        dice[seat] = tuple(faces)
        rerolled[seat] = len(which)
    state = replace(state, dice=tuple(dice), tool_step=state.tool_step + 1)
    return state, [{"type": "rerolled", "counts": {str(s): n for s, n in rerolled.items()}}]


def _play_on(state: BluffState, events: list[dict[str, Any]], rng: Rng) -> tuple[BluffState, list[dict[str, Any]]]:
    """Everything that follows without a decision: tools phases nobody has,
    the start of bidding, resolving the auctions, the next round, the end."""
    while True:
        if state.stage == _TOOLS:
            if _tool_movers(state, state.tool_step):
                break
            state = _next_bidder(state, state.start, True, {"stage": _BIDDING, "passes": 0}, events)
        elif state.stage == _BIDDING:
            if state.turn is not None:
                break
            state, more, asked = _resolve_tracks(state, 0)  # (it ends at the acquisitions, or asks)
            events += more
            if asked:
                break
        elif state.stage == _RESOLVE:  # (a state passing through: _resolve_tracks makes none)
            state, more, asked = _resolve_tracks(state, state.track)
            events += more
            if asked:
                break
        elif state.stage == _ACQUIRE:
            state, more = _skip_settled(state)
            events += more
            if state.won:
                break
            if state.round == ROUNDS:
                state = replace(state, stage=_OVER, turn=None)
                events.append({"type": "over", "standings": [standing(state, s) for s in range(state.seats)]})
                break
            state, more = _new_round(state, (state.start + 1) % state.seats, rng)  # F11: it moves on
            events += more
        else:
            break
    if events:
        events[-1]["scores"] = _totals(state)
    return state, events


def _totals(state: BluffState) -> list[int]:
    """Every seat's ``total``, as the events say them after every move.
    The last answer is kept with the museums, tiles held and points it was
    of, and given again while a state holds those very objects (immutable
    tuples: a new state shares the fields a move did not change, and most
    moves change none of these).  A seat's own total is kept so too: a
    tile acquired changes one seat's museum, and the others' are the same
    tuples as before."""
    kept = _last_totals[0]
    museum, held, points, rulings = state.museum, state.held, state.points, state.rulings
    if kept is not None and kept[0] is museum and kept[1] is held and kept[2] is points and kept[3] == rulings:
        return list(kept[4])
    if kept is None or kept[3] != rulings or len(kept[4]) != len(points):
        totals = tuple(total(state, s) for s in range(len(points)))
    else:
        was_museum, was_held, was_points, _, was = kept
        totals = tuple(
            was[s]
            if museum[s] is was_museum[s] and held[s] is was_held[s] and points[s] == was_points[s]
            else total(state, s)
            for s in range(len(points))
        )
    _last_totals[0] = (museum, held, points, rulings, totals)
    return list(totals)


_last_totals: list[tuple[Any, Any, Any, int, tuple[int, ...]] | None] = [None]  # (_totals)


# -- bidding ----------------------------------------------------------------------------


def _virtual(state: BluffState, seat: int, track: int) -> int:
    """A bidder's own virtual dice on a track (F10): Weapons of its colour,
    the Virtual Purple Die, and the one-shot tile when used on it."""
    weapons = _seats_weapons(state.museum)[seat][track]
    return weapons + ("vpurple" in state.held[seat]) + (2 if state.used_oneshot == seat else 0)


@functools.lru_cache(maxsize=4096)  # (a function of the tiles alone: every bid of every auction asks it)
def _weapons(museum: tuple[Tile, ...]) -> tuple[int, ...]:
    """A museum's Weapons of each track's colour (none on purple)."""
    colours = [t[0] for t in museum if isinstance(t, tuple) and t[2] == "weapon"]
    return tuple(colours.count(colour) for colour in TRACKS)


_seats_weapons = _EachMuseum(_weapons)  # each seat's _weapons


def _caps(state: BluffState, seat: int) -> tuple[int, ...]:
    """The highest bid ``seat`` may make on each track (F8).  By the second
    rulings, one more than anyone could count there: a bid that high can
    never win but stops others bidding there, as the text allows any bid;
    any higher bid would do exactly the same.  By the first, the bidder's
    own reach: a bid it could win."""
    kept = _last_caps[0]
    if (
        kept is not None
        and kept[0] is state.museum
        and kept[1] is state.held
        and kept[2] is state.dice
        and kept[3] is state.community
        and kept[4] == state.rulings
    ):
        return kept[5][seat]
    rolled = state.rolled()
    if (
        kept is not None
        and kept[0] is state.museum
        and kept[1] is state.held
        and kept[4] == state.rulings
        and kept[6] == rolled
    ):
        caps = kept[5]  # (a reroll: new dice, as many, and the caps count them alone; _caps_of would hash the museums)
    else:
        caps = _caps_of(state.rulings, rolled, state.museum, state.held)
    _last_caps[0] = (state.museum, state.held, state.dice, state.community, state.rulings, caps, rolled)
    return caps[seat]


# The last caps, with the very objects they were of (a round's states share
# them, so this is the answer all through its bidding without hashing the
# museums; holding them keeps their ids from being reused).
_last_caps: list[tuple[Any, Any, Any, Any, int, tuple[tuple[int, ...], ...], int] | None] = [None]


def _highs(bids: tuple[tuple[Bid, ...], ...]) -> tuple[Bid | None, ...]:
    """Each track's high bid (``BluffState.high``): the highest, the later
    of two equal (a tie ranks above the bid it tied: F12).  The last answer
    is kept with the bids it was of, and given again while asked of that
    very tuple: every seat's every test of a bidding turn asks it, of the
    same state's bids."""
    kept = _last_highs[0]
    if kept is not None and kept[0] is bids:
        return kept[1]
    highs = tuple(max(on_track, key=_rank) if on_track else None for on_track in bids)
    _last_highs[0] = (bids, highs)
    return highs


_rank: Callable[[Bid], tuple[int, int]] = operator.itemgetter(1, 2)  # a bid's rank: its value, then its order


_last_highs: list[tuple[tuple[tuple[Bid, ...], ...], tuple[Bid | None, ...]] | None] = [None]  # (_highs)


def _keep_highs(
    before: tuple[tuple[Bid, ...], ...], after: tuple[tuple[Bid, ...], ...], track: int, bid: Bid, source: int | None
) -> None:
    """Keep ``_highs(after)``, of bids that are ``before`` and ``bid`` on
    ``track`` (from ``source``'s, a token moved from there): each track's
    high as before, the new bid's track's the higher of its high and the
    bid (the later of two equal), the source's again from its bids.  Every
    bid asks _highs of the new bids once or more; so it is worked out from
    those before, which the bid's check asked already, not from every bid."""
    highs = list(_highs(before))
    if source is not None:
        highs[source] = max(after[source], key=_rank) if after[source] else None
    high = highs[track]
    highs[track] = bid if high is None or _rank(bid) >= _rank(high) else high
    _last_highs[0] = (after, tuple(highs))


# Every bid, move and pass of a round's bidding asks for the caps, and they
# do not change while it lasts (the dice rolled, the museums and the tiles
# held are the round's): _caps keeps the last, with the very objects they
# were of.  Worked out about once a round, of museums no round had before
# (no cache by their contents: hashing them cost as much as the answer).
def _caps_of(
    rulings: int, rolled: int, museums: tuple[tuple[Tile, ...], ...], held: tuple[frozenset[str], ...]
) -> tuple[tuple[int, ...], ...]:
    """Each seat's caps (``_caps``)."""
    weapons = _seats_weapons(museums)  # (kept with the museums: each round's auctions ask it too)
    reaches = [_reaches(rolled, of_seat, tiles) for of_seat, tiles in zip(weapons, held, strict=True)]
    if rulings < 2:
        return tuple(reaches)
    caps = tuple([max(reach) + 1 for reach in zip(*reaches, strict=True)])
    return (caps,) * len(reaches)


def _reaches(rolled: int, weapons: tuple[int, ...], held: frozenset[str]) -> tuple[int, ...]:
    """The most a seat could count on each track this round: every die
    ``rolled``, plus its virtual dice (its museum's ``weapons`` of each
    track's colour, the one-shot's included) (F8)."""
    base = rolled + ("vpurple" in held) + 2 * ("oneshot" in held)
    return tuple([base + of_track for of_track in weapons])


def _has_tie(state: BluffState, seat: int, moving: Bid | None = None) -> bool:
    """Whether ``seat`` has a tied bid on the board (not counting the token it is moving)."""
    return any(b[0] == seat and b[3] and b != moving for bids in state.bids for b in bids)


def _movable(state: BluffState, seat: int, source: int) -> list[Bid]:
    """The seat's tokens on ``source`` that it may move (not the high bid,
    which is locked in), by value.  A seat's tokens on one track have
    different values (each bid outbids the high bid, or ties it once: F12),
    so a value names one token (F20)."""
    high = state.high(source)
    return sorted((b for b in state.bids[source] if b[0] == seat and b != high), key=lambda b: (b[1], b[2]))


def _token(state: BluffState, seat: int, source: int, value: int) -> Bid:
    """The seat's token of ``value`` on ``source`` (F20)."""
    return next(b for b in state.bids[source] if b[0] == seat and b[1] == value)


def _lowest_bid(state: BluffState, seat: int, track: int, moving: Bid | None = None) -> tuple[int, bool] | None:
    """The lowest value ``seat`` may bid on ``track`` and whether it ties;
    None when it may not bid there (its own high bid: "you cannot directly
    overbid yourself")."""
    return _lowest_over(state, seat, state.high(track), moving)


def _lowest_over(state: BluffState, seat: int, high: Bid | None, moving: Bid | None) -> tuple[int, bool] | None:
    """``_lowest_bid`` on a track whose high bid is ``high``."""
    if high is None:
        return 1, False
    if high[0] == seat:
        return None
    raise_by = 2 if "outbid2" in state.held[high[0]] else 1  # F12
    if "tie" in state.held[seat] and not _has_tie(state, seat, moving):
        raise_by -= 1  # F12: with both, +1
    return max(1, high[1] + raise_by), raise_by == 0


def _overbid(state: BluffState, seat: int) -> list[int]:
    """Tracks where ``seat`` has a token that another bid has overbid: the
    tokens it may move ("high bids ... cannot be moved")."""
    tracks = []
    for track, (bids, high) in enumerate(zip(state.bids, _highs(state.bids), strict=True)):
        for bid in bids:
            if bid[0] == seat and bid != high:  # (a token of its own that is not the high bid)
                tracks.append(track)
                break
    return tracks


def _bidding_moves(state: BluffState, seat: int) -> list[Move]:
    """Bids from hand, then moves of each overbid token (by track, then the
    token's value: F20), each by value then track (so the first few, which a
    reply lists, cover every track), then pass."""
    moves = list(_bids(state, seat))
    if not state.tokens[seat] or not moves:  # F14: no pass with tokens in hand, unless nothing else is legal
        moves.append(("pass",))
    return moves


def _bids(state: BluffState, seat: int) -> Iterator[Move]:
    """The moves of ``_bidding_moves`` but pass, in its order, one at a time
    (whether there is one at all: ``_can_bid``)."""
    caps = _caps(state, seat)  # (the same whichever token moves)
    for source in _sources(state, seat):
        moving = source[1] if source is not None else None
        ranges = {}
        for track in range(6):
            lowest = _lowest_bid(state, seat, track, moving)
            if lowest is not None:
                ranges[track] = range(lowest[0], caps[track] + 1)
        for value in range(1, max((r.stop for r in ranges.values()), default=1)):
            for track, allowed in ranges.items():
                if value in allowed:
                    yield ("bid", track, value) if source is None else ("move", source[0], source[1][1], track, value)


def _can_bid(state: BluffState, seat: int) -> bool:
    """Whether ``_bids`` yields anything (a move other than pass), by its
    tests without making the move: every bidding turn asks it of a seat or
    more (``_next_bidder``).  Without the tie tile, the lowest bid on a
    track is the same whichever token makes it: a seat can bid when it has
    a token to bid with (in hand, or overbid on the board) and a track
    takes a bid within its cap."""
    caps = _caps(state, seat)
    highs = _highs(state.bids)
    held = state.held
    if "tie" in held[seat]:  # (whether it may tie depends on the token it moves: F12)
        return _can_bid_from_each(state, seat, caps, highs)
    for track, high in enumerate(highs):  # (_lowest_over's, without a tie: its lowest bid is 2 or more, or 1)
        if high is None:
            if caps[track] >= 1:
                break
        elif high[0] != seat and high[1] + (2 if "outbid2" in held[high[0]] else 1) <= caps[track]:
            break
    else:
        return False
    return bool(state.tokens[seat]) or _has_overbid(state.bids, highs, seat)


def _has_overbid(bids: tuple[tuple[Bid, ...], ...], highs: tuple[Bid | None, ...], seat: int) -> bool:
    """Whether ``seat`` has a token on the board that is not its track's high bid (``_overbid``'s tracks)."""
    for on_track, high in zip(bids, highs, strict=True):
        for bid in on_track:
            if bid[0] == seat and bid != high:
                return True
    return False


def _can_bid_from_each(state: BluffState, seat: int, caps: tuple[int, ...], highs: tuple[Bid | None, ...]) -> bool:
    """``_can_bid``, each source of a bid tried in turn (``_sources``)."""
    if state.tokens[seat]:  # (a track no one has bid on takes a bid of 1 from hand: most turns, the answer)
        for track, high in enumerate(highs):
            if high is None and caps[track] >= 1:
                return True
    for source in _sources(state, seat):
        moving = source[1] if source is not None else None
        for track, high in enumerate(highs):
            lowest = _lowest_over(state, seat, high, moving)
            if lowest is not None and lowest[0] <= caps[track]:
                return True
    return False


def _sources(state: BluffState, seat: int) -> Iterator[tuple[int, Bid] | None]:
    """Where the seat's next bid may come from, in ``_bids``'s order: its
    hand (None), then each overbid token (its track and bid), listed only
    when asked for (a bid from hand is the first legal move most turns)."""
    if state.tokens[seat]:
        yield None
    for track in _overbid(state, seat):
        for bid in _movable(state, seat, track):
            yield track, bid


def _bid_allowed(state: BluffState, seat: int, move: Move) -> bool:
    """Whether ``_bids`` yields ``move`` (a bid from hand or a move of a
    token), by its own tests and without listing every bid: the token is in
    hand, or is the seat's overbid token of that value on the source track
    (a value names one token: F20); and the value is from the lowest the
    seat may bid on the track to the track's cap."""
    if move[0] == "bid" and len(move) == 3:
        track, value = move[1], move[2]
        moving = None
        if not state.tokens[seat]:
            return False
    elif move[0] == "move" and len(move) == 5:
        source, token, track, value = move[1:]
        moving = next((b for b in _movable(state, seat, source) if b[1] == token), None)
        if moving is None:
            return False
    else:
        return False
    lowest = _lowest_bid(state, seat, track, moving)
    return lowest is not None and lowest[0] <= value <= _caps(state, seat)[track]


def _bid(state: BluffState, seat: int, move: Move) -> tuple[BluffState, list[dict[str, Any]]]:
    if move[0] == "pass":
        changes: dict[str, Any] = {"turns": state.turns + 1, "passes": state.passes + 1}
        event = {"type": "pass", "seat": seat, "forced": False}
    else:
        bids = list(state.bids)  # (a track's bids that do not change stay the same tuple)
        tokens = list(state.tokens)
        if move[0] == "bid":
            track, value = move[1], move[2]
            tokens[seat] -= 1
            event = {"type": "bid", "seat": seat, "track": TRACKS[track], "value": value}
        else:
            source, token, track, value = move[1:]
            moved = _token(state, seat, source, token)
            bids[source] = tuple(b for b in bids[source] if b != moved)  # (a token is one of a kind: its order)
            event = {"type": "move", "seat": seat, "from": TRACKS[source], "track": TRACKS[track], "value": value}
            if state.rulings >= 2:  # F20: which token moved is public (it was on the board)
                event["token"] = token
        tied = (high := state.high(track)) is not None and value == high[1]
        bid = (seat, value, state.placed + 1, tied)
        bids[track] = (*bids[track], bid)
        event["tied"] = tied
        bids_now = tuple(bids)
        _keep_highs(state.bids, bids_now, track, bid, source=None if move[0] == "bid" else move[1])
        changes = {
            "bids": bids_now,
            "tokens": tuple(tokens),
            "placed": state.placed + 1,
            "passes": 0,
            "turns": state.turns + 1,
        }
    events = [event]
    return _next_bidder(state, seat, False, changes, events), events


def _next_bidder(
    state: BluffState, after: int, include: bool, changes: dict[str, Any], events: list[dict[str, Any]]
) -> BluffState:
    """The next seat clockwise (``after``, or after it), of the state with
    ``changes`` (a move's, a dict of fields given up to this); one whose only
    move is pass passes at once (F14: "you MUST pass if all of your bids are
    the highest"), an event added to ``events``.  Bidding ends when every
    seat has passed in succession."""
    seats = len(state.tokens)
    seat = after if include else (after + 1) % seats
    # The new state made once, with the turn of the seat asked first: nearly
    # always the answer, and _can_bid reads neither the turn nor the passes.
    changes["turn"] = seat
    state = replace(state, **changes)
    passes = state.passes
    while passes < seats:
        if _can_bid(state, seat):  # (a move other than pass)
            if seat == state.turn and passes == state.passes:
                return state
            return replace(state, passes=passes, turn=seat)
        passes += 1
        events.append({"type": "pass", "seat": seat, "forced": True})
        seat = (seat + 1) % seats
    return replace(state, passes=passes, turn=None)


# -- resolution ---------------------------------------------------------------------------


def _value(state: BluffState, seat: int, track: int, shown: int | None = None) -> int:
    """What a bid of ``seat`` on ``track`` is measured against: every die
    shown (see ``_limit``); ``shown``, those dice that count there
    (``_dice_on``), if counted already."""
    if shown is None:
        shown = _dice_on(state, track)
    return shown + _virtual(state, seat, track)


def _dice_on(state: BluffState, track: int) -> int:
    """The dice rolled this round that count on ``track``: those of its
    colour, and purple (wild) (``_limit`` of every die, without a seat's
    virtual dice)."""
    kept = _last_dice_on[0]
    if kept is not None and kept[0] is state.dice and kept[1] is state.community:
        return kept[2][track]
    faces = [face for dice in (*state.dice, state.community) for face in dice]
    wild = faces.count(PURPLE)
    counts = tuple(wild + (faces.count(colour) if colour != PURPLE else 0) for colour in TRACKS)
    _last_dice_on[0] = (state.dice, state.community, counts)
    return counts[track]


# The last counts of _dice_on, every track's, with the very dice they were of
# (the round's: every auction of a round asks, of dice no auction changes).
_last_dice_on: list[tuple[Any, Any, tuple[int, ...]] | None] = [None]


def _limit(state: BluffState, seat: int, track: int, faces: list[str]) -> int:
    """A bid's limit of ``seat`` on ``track`` from the dice ``faces``: those of
    the track's colour, plus purple (wild), plus its own virtual dice."""
    colour = TRACKS[track]
    return faces.count(PURPLE) + (faces.count(colour) if colour != PURPLE else 0) + _virtual(state, seat, track)


def _winner(state: BluffState, track: int, shown: int | None = None) -> Bid | None:
    """The highest bid not over its bidder's value; a later tie ranks above
    the bid it tied (F12).  ``shown``: as ``_value``'s."""
    if shown is None:
        shown = _dice_on(state, track)
    return _best_within(state.bids[track], _values(state, track, shown))


def _values(state: BluffState, track: int, shown: int) -> dict[int, int]:
    """Each bidder's ``_value`` on ``track``, by seat, in the order they
    first bid there (``shown``: as ``_value``'s)."""
    weapons, held, used = _seats_weapons(state.museum), state.held, state.used_oneshot  # (as _virtual's, inline)
    values: dict[int, int] = {}
    for bid in state.bids[track]:
        seat = bid[0]
        if seat not in values:
            values[seat] = shown + weapons[seat][track] + ("vpurple" in held[seat]) + (2 if used == seat else 0)
    return values


def _best_within(bids: tuple[Bid, ...], values: dict[int, int]) -> Bid | None:
    """``_winner`` of the bids, each bidder's value given (``_values``)."""
    for bid in sorted(bids, key=_rank, reverse=True):
        if bid[1] <= values[bid[0]]:
            return bid
    return None


def _oneshot_changes(state: BluffState, track: int, shown: int) -> int | None:
    """The seat whose one-shot tile would win this auction for it (F10), if
    any.  ``shown``: as ``_value``'s."""
    if state.used_oneshot is not None:
        return None
    holders = [seat for seat, tiles in enumerate(state.held) if "oneshot" in tiles]
    if not holders:
        return None
    (holder,) = holders
    if not any(b[0] == holder for b in state.bids[track]):
        return None
    without = _winner(state, track, shown)
    with_it = _winner(replace(state, used_oneshot=holder), track, shown)
    return holder if with_it and with_it[0] == holder and (without is None or without[0] != holder) else None


def _resolve_tracks(
    state: BluffState, first: int, asked: bool = False
) -> tuple[BluffState, list[dict[str, Any]], bool]:
    """Resolve the tracks from ``first`` on, in order (purple's first, F9):
    show each track's dice; offer the one-shot tile where it changes the
    winner (unless ``asked`` already, on ``first``), and stop there; else
    give the tile to the winner, or out of the game; the tiles won are
    then to acquire.  One new state at the end, not one a track (a replay
    resolves every track of every round): a track's resolution reads the
    round's bids, dice and museums, which none before it changed (the
    1-shot tile aside: once used, the state is made again, without it)."""
    dice, community = state.dice, state.community
    shown, offer, won, gone, held = state.shown, list(state.offer), state.won, state.gone, state.held
    events: list[dict[str, Any]] = []
    # (most rounds no one holds the 1-shot tile, or it was used: no track asks then)
    oneshot = state.used_oneshot is None and any("oneshot" in tiles for tiles in held)
    for track in range(first, len(TRACKS)):
        colour = TRACKS[track]
        counts = [d.count(colour) for d in dice]
        common = community.count(colour)
        if colour not in shown:
            events.append({"type": "dice", "colour": colour, "counts": counts, "community": common})
            shown = shown | {colour}
        on = _dice_on(state, track)
        if oneshot and not asked:
            holder = _oneshot_changes(state, track, on)
            if holder is not None:
                state = replace(
                    state, shown=shown, offer=tuple(offer), won=won, gone=gone, stage=_ONESHOT, turn=holder, track=track
                )
                return state, events, True
        asked = False
        values = _values(state, track, on)  # (the winner's test, and what the event says each could bid)
        bid = _best_within(state.bids[track], values)
        tile = offer[track]
        if tile is None:
            raise ValueError(f"the {colour} track is resolved already")
        offer[track] = None
        events.append(
            {
                "type": "auction",
                "track": colour,
                "tile": tile_text(tile),
                "winner": bid[0] if bid else None,
                "value": bid[1] if bid else None,
                "bids": len(state.bids[track]),
                "worth": {str(seat): value for seat, value in values.items()},
                "dice": counts.copy(),
                "community": common,
            }
        )
        if bid:
            won = (*won, (bid[0], tile))
        else:
            gone = (*gone, tile)
        if state.used_oneshot is not None:  # (the tiles held stay the same tuple else: the scores are kept while it is)
            tiles = list(held)
            tiles[state.used_oneshot] = tiles[state.used_oneshot] - {"oneshot"}  # discarded once used
            held = tuple(tiles)
            gone = (*gone, "oneshot")
            state = replace(state, held=held, used_oneshot=None)  # (what the next tracks read)
            oneshot = False
    state = replace(
        state,
        shown=shown,
        offer=tuple(offer),
        won=won,
        gone=gone,
        held=held,
        used_oneshot=None,
        stage=_ACQUIRE,
        turn=None,
        track=len(TRACKS),
    )
    return state, events, False


def _oneshot(state: BluffState, seat: int, move: Move) -> tuple[BluffState, list[dict[str, Any]]]:
    used = move[0] == "use"
    state = replace(state, used_oneshot=seat if used else None)
    state, events, _ = _resolve_tracks(state, state.track, asked=True)
    return state, [{"type": "oneshot", "seat": seat, "used": used}, *events]


# -- acquiring ----------------------------------------------------------------------------


def share(tiles: Iterable[Tile]) -> bool:
    """Whether the tiles share a colour, an era or a type; Wild Attribute
    shares any (F5), and a lone tile shares with itself."""
    return functools.reduce(operator.and_, map(_attributes, tiles), _ANY) != 0


_ANY = -1  # every bit set: the attributes of Wild Attribute, which shares any


@functools.cache  # (a tile's attributes never change, and there are few tiles)
def _attributes(tile: Tile) -> int:
    """A tile's colour, era and type, a bit each (so tiles share one when
    their bits have one in common); none for a special tile but Wild Attribute."""
    if tile == "wild":
        return _ANY
    return sum(1 << _ATTRIBUTE_BITS.index(name) for name in tile) if isinstance(tile, tuple) else 0


def is_set(tiles: Iterable[Tile]) -> bool:
    """3 or more tiles sharing a colour, an era or a type; Wild Attribute
    shares any (F5)."""
    tiles = list(tiles)
    return len(tiles) >= 3 and any(t != "wild" for t in tiles) and share(tiles)


def _beside(tile: Tile) -> bool:
    """A special tile that goes beside the museum: it takes no circle and
    joins no set (every special but Wild Attribute: F5)."""
    return isinstance(tile, str) and tile != "wild"


def _acquisitions(state: BluffState, seat: int, tile: Tile) -> list[Move]:
    """F16: place the tile (when the museum has room; a special tile beside
    it: always), exhibit a set from the museum and the tile (while an
    exhibit space is free; a special beside the museum joins none), or, with
    the museum full, discard a tile (the new one or one of the museum's)."""
    museum = state.museum[seat]
    beside = _beside(tile)
    moves: list[Move] = []
    if beside or len(museum) < state.capacity(seat):
        moves.append(("place",))
    if len(state.exhibits[seat]) < spaces(state.seats):
        moves += [("exhibit", tiles) for tiles in _sets(_sorted(museum if beside else (*museum, tile)))]
    if not beside and len(museum) >= state.capacity(seat):
        moves += [("discard", t) for t in _sorted({*museum, tile})]
    return moves


def _acquisition_allowed(state: BluffState, seat: int, move: Move) -> bool:
    """Whether ``_acquisitions`` lists ``move`` for the tile won, by its
    tests, without listing every set the museum may exhibit."""
    tile = state.won[0][1]
    museum = state.museum[seat]
    beside = _beside(tile)
    room = beside or len(museum) < state.capacity(seat)
    if move == ("place",):
        return room
    if len(move) != 2:
        return False
    if move[0] == "discard":
        return not room and (move[1] == tile or move[1] in museum)
    if move[0] == "exhibit" and isinstance(move[1], tuple) and len(state.exhibits[seat]) < spaces(state.seats):
        tiles = move[1]
        pool = museum if beside else (*museum, tile)
        return (
            len(set(tiles)) == len(tiles)
            and all(t in pool for t in tiles)
            and _sorted(tiles) == tiles
            and is_set(tiles)
        )
    return False


def _only_place(state: BluffState, seat: int, tile: Tile) -> bool:
    """Whether ``_acquisitions`` is placing the tile alone, without listing
    the sets and discards: every tile won is asked so."""
    museum = state.museum[seat]
    beside = _beside(tile)
    if not beside and len(museum) >= state.capacity(seat):
        return False  # (no place)
    return len(state.exhibits[seat]) >= spaces(state.seats) or not _has_set(museum if beside else (*museum, tile))


def _has_set(pool: tuple[Tile, ...]) -> bool:
    """Whether ``_sets(pool)`` finds any: three tiles or more that share an
    attribute (there is one Wild Attribute, so three include an artifact).
    (Every tile is one of a kind: a tile's bit (_TILE_BIT) counts it once.)"""
    tiles = 0
    for tile in pool:
        tiles |= _TILE_BIT[tile]
    return _three_share(tiles)


@functools.lru_cache(maxsize=4096)  # (a function of the tiles alone: every tile won asks it, of museums that recur)
def _three_share(tiles: int) -> bool:
    """Whether three or more of the ``tiles`` (their bits: _TILE_BIT) share an attribute."""
    return any((tiles & group).bit_count() >= 3 for group in _WITH_ATTRIBUTE)


@functools.lru_cache(maxsize=4096)
def _sets(pool: tuple[Tile, ...]) -> tuple[tuple[Tile, ...], ...]:
    """Every set that could be exhibited from ``pool`` (sorted), each once,
    smallest first.  Cached: it depends on the tiles alone, and a round asks
    it of the same museum several times."""
    # The tiles that share an attribute, by size, each size in the order of
    # itertools.combinations: a group of n is a group of n - 1 that shares
    # (no group containing one that shares nothing can) and one later tile,
    # so only groups that share are grown; the sets are those of 3 or more
    # with a tile besides Wild Attribute (is_set).
    attributes = [_attributes(t) for t in pool]
    found: dict[tuple[Tile, ...], None] = {}  # (in the order found)
    sharing: list[tuple[tuple[int, ...], int]] = [((i,), bits) for i, bits in enumerate(attributes) if bits]
    for n in range(2, len(pool) + 1):
        sharing = [
            ((*combo, j), bits & attributes[j])
            for combo, bits in sharing
            for j in range(combo[-1] + 1, len(pool))
            if bits & attributes[j]
        ]
        for combo, _ in sharing if n >= 3 else ():
            tiles = tuple(pool[i] for i in combo)
            if any(t != "wild" for t in tiles):
                found.setdefault(tiles)
    return tuple(found)


def _skip_settled(state: BluffState) -> tuple[BluffState, list[dict[str, Any]]]:
    """A tile whose only move is to be placed is placed (no question);
    special tiles other than Wild Attribute go beside the museum (F5), by
    the first rulings at once, by the second (F16) after the winner's chance
    to exhibit a set, when there is one."""
    events = []
    while state.won:
        seat, tile = state.won[0]
        only_place = _only_place(state, seat, tile)
        if _beside(tile) and (state.rulings < 2 or only_place):
            state, more = _acquire(state, seat, ("place",))
            events += more
            continue
        if only_place:
            state, more = _acquire(state, seat, ("place",))
            for event in more:  # (the events _acquire made for this: marked as they are)
                event["auto"] = True  # no one was asked
            events += more
            continue
        break
    return state, events


def _acquire(state: BluffState, seat: int, move: Move) -> tuple[BluffState, list[dict[str, Any]]]:
    tile = state.won[0][1]
    museum = list(state.museum[seat])
    event: dict[str, Any] = {"type": move[0], "seat": seat, "tile": tile_text(tile)}
    points = list(state.points)
    exhibits = list(state.exhibits)
    gone = state.gone
    held = list(state.held)
    taken = []
    if isinstance(tile, str) and _beside(tile):  # beside the museum, whether or not a set is exhibited now (F5, F16)
        held[seat] = held[seat] | {tile}
        taken = [{"type": "special", "seat": seat, "tile": tile_text(tile)}]
        if state.rulings >= 2 and not _only_place(state, seat, tile):
            taken[0]["asked"] = True  # the winner chose not to exhibit, or exhibited (below)
        if move[0] == "place":
            state = replace(state, held=tuple(held), won=state.won[1:])
            return state, taken
    if move[0] == "place":
        museum.append(tile)
    elif move[0] == "discard":
        dropped = move[1]
        if dropped != tile:
            museum.remove(dropped)
            museum.append(tile)
        gone = (*gone, dropped)
        event["discarded"] = tile_text(dropped)
    else:
        tiles = list(move[1])
        for t in tiles:
            if t in museum:
                museum.remove(t)
        if tile not in tiles and not _beside(tile):
            museum.append(tile)
        exhibits[seat] = (*exhibits[seat], tuple(tiles))
        points[seat] += set_points(len(tiles))
        event.update(set=[tile_text(t) for t in tiles], points=set_points(len(tiles)))
    museums = list(state.museum)
    museums[seat] = _sorted(museum)
    state = replace(
        state,
        museum=tuple(museums),
        points=tuple(points),
        exhibits=tuple(exhibits),
        gone=gone,
        held=tuple(held),
        won=state.won[1:],
    )
    return state, [*taken, event]


# -- the end ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)  # (a museum is scored after every move, and changes seldom)
def best_partition(tiles: tuple[Tile, ...], rulings: int = 2) -> tuple[int, tuple[tuple[Tile, ...], ...]]:
    """F18: the museum scored as sets at the end: the split of its tiles into
    groups that scores the most (1/3/6/10...), each group a lone tile or
    tiles sharing a colour, era or type (by the first rulings, any two
    tiles made a group too).  A museum holds at most eight tiles, so every
    split is tried."""
    return _best_split(_sorted(tiles), rulings)


# The best split of the tiles left after the groups chosen so far does not
# depend on those groups: each such rest is split once, and kept (it is a
# function of the tiles alone; a museum's rests are mostly those of the
# museum before its last tile).  The groups are tried in the same order as
# ever, and the first best kept, so the split shown stays the same: the
# first whose points and the best split's of what it leaves (_best_of, a
# number kept by the tiles, without naming groups) are the most there are.
# Only that group's rest is split in turn, not every group's.
@functools.lru_cache(maxsize=16384)
def _best_split(rest: tuple[Tile, ...], rulings: int) -> tuple[int, tuple[tuple[Tile, ...], ...]]:
    if not rest:
        return 0, ()
    most = _split_points(rest, rulings)
    first, others = rest[0], rest[1:]
    bits = [_TILE_BIT[t] for t in others]  # (what a group leaves, as _split_points reads it, without a tuple of it)
    everything = functools.reduce(operator.or_, bits, 0)
    for combo in _groups(first, others, 3 if rulings < 2 else 2):
        taken = 0
        for i in combo:
            taken |= bits[i]
        if set_points(len(combo) + 1) + _best_of(everything ^ taken, rulings) == most:
            left = tuple(t for i, t in enumerate(others) if i not in combo)
            _, groups = _best_split(left, rulings)
            return most, ((first, *(others[i] for i in combo)), *groups)
    raise AssertionError(f"no split of {rest} scores {most}")  # (the best split's first group is among them)


def _groups(first: Tile, others: tuple[Tile, ...], smallest: int) -> Iterator[tuple[int, ...]]:
    """The groups ``first`` may make with some of ``others`` (their places
    in it), in the order of itertools.combinations, size by size: any group
    smaller than ``smallest``, and larger ones whose tiles share an
    attribute.  A group larger than one that shares nothing shares nothing,
    so only the groups that share grow by a later tile."""
    attributes = [_attributes(t) for t in others]
    size = 1
    groups: list[tuple[tuple[int, ...], int]] = [((), _attributes(first))]  # (places, the bits they all share)
    while groups:
        yield from (combo for combo, bits in groups if size < smallest or bits)
        size += 1
        if size < smallest:
            groups = [
                (combo, functools.reduce(operator.and_, (attributes[i] for i in combo), _attributes(first)))
                for combo in itertools.combinations(range(len(others)), size - 1)
            ]
        else:
            groups = [
                ((*combo, j), bits & attributes[j])
                for combo, bits in groups
                if bits
                for j in range(combo[-1] + 1 if combo else 0, len(others))
                if bits & attributes[j]
            ]


def standing(state: BluffState, seat: int) -> dict[str, Any]:
    """A seat's points if the game ended now: exhibits, the museum's best
    split, the stars of its Art (one each: F19), and 4 Points."""
    museum = state.museum[seat]
    museum_points, groups = best_partition(museum, state.rulings)
    stars = _stars(museum)
    four = _four(state, seat)
    return {
        "exhibited": state.points[seat],
        "museum": museum_points,
        "stars": set_points(stars),
        "four": four,
        "total": state.points[seat] + museum_points + set_points(stars) + four,
        "groups": [[tile_text(t) for t in g] for g in groups],
    }


def total(state: BluffState, seat: int) -> int:
    """``standing(state, seat)["total"]`` without naming the museum's sets
    (the scores after every move need only the totals)."""
    return state.points[seat] + _museum_points(state.museum[seat], state.rulings) + _four(state, seat)


@functools.lru_cache(maxsize=4096)  # (a function of the tiles alone; asked after every move, it changes seldom)
def _museum_points(museum: tuple[Tile, ...], rulings: int) -> int:
    """A museum's points at the end: its best split and its Art's stars."""
    return _split_points(museum, rulings) + set_points(_stars(museum))


def _split_points(tiles: tuple[Tile, ...], rulings: int) -> int:
    """``best_partition(tiles, rulings)[0]``, the points of the best split,
    without naming its groups: the scores after every move need only them.

    A largest group of a best split holds every tile that has an attribute
    its tiles share: a tile with it in another group (no larger) would score
    more in this one (a group of n and one of m, n >= m, score n + 1 - m more
    when a tile moves from the second to the first), and what is left of the
    other group still makes a group.  So the best split is a group of all
    the tiles with some attribute, and the best split of the rest; or, by
    the first rulings, when no group is larger than two (any two tiles make
    one), the tiles in pairs.  (A museum holds artifacts and Wild Attribute
    alone, each with an attribute or more.)"""
    left = 0
    for tile in tiles:
        left |= _TILE_BIT[tile]
    return _best_of(left, rulings)


_ALL_TILES: tuple[Tile, ...] = (*((c, e, t) for c in COLOURS for e in ERAS for t in TYPES), *STAGE_OF)
# Every tile a bit of its own, the same in every museum, so that what is left
# of a museum once some groups are taken is the same number as the museum
# that holds just those tiles: a museum's best split is then mostly the best
# splits of museums scored before (the same seat's, before its last tile).
_TILE_BIT: dict[Tile, int] = {tile: 1 << place for place, tile in enumerate(_ALL_TILES)}
# Per attribute, the tiles that have it (Wild Attribute has every one).
_WITH_ATTRIBUTE = tuple(
    sum(bit for tile, bit in _TILE_BIT.items() if _attributes(tile) >> place & 1)
    for place in range(len(_ATTRIBUTE_BITS))
)


_TRIANGLES = tuple(set_points(tiles) for tiles in range(len(_ALL_TILES) + 1))  # (set_points, looked up)


@functools.lru_cache(maxsize=1 << 16)  # (a function of the tiles left alone: see _TILE_BIT)
def _best_of(left: int, rulings: int) -> int:
    """The points of the best split of the tiles ``left`` (_split_points).
    Of the groups of all the tiles with an attribute, only those within no
    other are tried: a tile of the larger group, moved into the smaller
    from its own group (no larger), would score more, so the smaller is no
    best split's largest group.  (Several attributes often group the same
    tiles: that group is tried once.)  Tried largest first, a group is
    within another when it is within one tried before (a group within a
    larger one that was not tried is within the one that one is within).
    A split whose largest group is of ``size`` scores at most as many
    groups of that size as the tiles make, and one of what is left: once
    that is no more than the best found, no group left to try (none
    larger) is the largest of a better split."""
    count = left.bit_count()
    groups = {group & left for group in _WITH_ATTRIBUTE}
    if left in groups:  # (one group of them all: the most any split scores; no tiles, none)
        return count * (count + 1) // 2
    groups.discard(0)
    best = 3 * (count // 2) + count % 2 if rulings < 2 else 0
    tried: list[int] = []
    for shared in sorted(groups, key=int.bit_count, reverse=True):
        size = shared.bit_count()
        if size * (size + 1) // 2 * (count // size) + _TRIANGLES[count % size] <= best:
            break  # (no split of groups of this size or less scores more: see above)
        for other in tried:
            if other & shared == shared:
                break  # (within a larger group)
        else:
            tried.append(shared)
            points = size * (size + 1) // 2 + _best_of(left ^ shared, rulings)
            if points > best:
                best = points
    return best


def _stars(museum: tuple[Tile, ...]) -> int:
    return sum(1 for t in museum if isinstance(t, tuple) and t[2] == "art")


def _four(state: BluffState, seat: int) -> int:
    return 4 if "four" in state.held[seat] else 0


# -- reading moves ------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    """A move's words, lower case, without fillers; "re-roll" is "reroll", "three" is "3"."""
    return list(_words_of(text))


@functools.lru_cache(maxsize=4096)  # (a replay reads every move again: most say the same few things)
def _words_of(text: str) -> tuple[str, ...]:
    words = _WORD.findall(text.lower())
    joined = " ".join(words).replace("re roll", "reroll")
    return tuple(str(_NUMBERS.get(w, w)) for w in joined.split() if w not in _FILLER)


def _read_reroll(words: list[str], dice: int) -> Move | None:
    if words in (
        ["keep"],
        ["keep", "all"],
        ["reroll", "none"],
        ["reroll"],
        ["pass"],
        ["no"],
        ["none"],
        ["no", "reroll"],
        ["don", "t", "reroll"],
        ["reroll", "nothing"],
        ["keep", "everything"],
    ):
        return ("reroll", ())
    if words[0] not in ("reroll", "roll"):
        return None
    if words[1:] == ["all"]:
        return ("reroll", tuple(range(1, dice + 1)))
    numbers = [int(w) for w in words[1:] if w.isdigit()]
    if len(numbers) != len(words) - 1 or len(set(numbers)) != len(numbers):
        raise MoveError("Name your dice by their numbers, each once: 'reroll 1 3'.")
    if any(not 1 <= n <= dice for n in numbers):
        raise MoveError(f"Your dice are numbered 1 to {dice}.")
    return ("reroll", tuple(sorted(numbers)))


@functools.lru_cache(maxsize=4096)
def _reroll_of(text: str, dice: int) -> Move | None:
    """What a tools phase's ``text`` says for a seat of ``dice`` dice, when
    well-formed, as BluffAuction._read reads it; else None, and _read says
    why.  A function of the text and the count alone, and a replay reads
    the same few lines again and again: each is read once."""
    words = _words_of(text)
    if not words:
        return None
    try:
        return _read_reroll(list(words), dice)
    except MoveError:
        return None


def _read_from_hand(words: list[str] | tuple[str, ...]) -> Move | None:
    """A pass, or a bid from hand, as its words say it (read without the
    state: only a move of a token asks which tokens are the seat's)."""
    verb = words[0]
    if verb == "pass" and len(words) == 1:
        return ("pass",)
    if verb != "bid":
        return None
    numbers = [int(w) for w in words[1:] if w.isdigit()]
    names = [w for w in words[1:] if not w.isdigit()]
    return ("bid", _track(names[0]), numbers[0]) if len(numbers) == 1 and len(names) == 1 else None


def _track(word: str) -> int:
    if word in TRACKS:
        return TRACKS.index(word)
    raise MoveError(f"I do not know the track '{word[:20]}'; the tracks are {', '.join(TRACKS)}.")


def _read_bid(state: BluffState, seat: int, words: list[str]) -> Move | None:
    move = _read_from_hand(words)
    if move is not None or words[0] != "move":
        return move
    numbers = [int(w) for w in words[1:] if w.isdigit()]
    names = [w for w in words[1:] if not w.isdigit()]
    if len(names) == 2:
        source, target = _track(names[0]), _track(names[1])
        # F20: a number before the track the token goes to names the token
        # ("move purple 3 to red"), one after it is the new bid; never the other way.
        at = words.index(names[1], words.index(names[0]) + 1)
        token = [int(w) for w in words[1:at] if w.isdigit()]
        if len(token) == 1 and numbers == token:
            raise MoveError(
                f"Say the bid your token of {token[0]} makes on {TRACKS[target]}, as in "
                f"'move {TRACKS[source]} {token[0]} to {TRACKS[target]} 5'."
            )
        if len(token) > 1:
            return None
        if not numbers:
            raise MoveError(
                f"Say the bid the token makes on {TRACKS[target]}, as in 'move {TRACKS[source]} to {TRACKS[target]} 5'."
            )
        if len(numbers) == 2 and len(token) == 1:  # "move black 1 to red 5": the token's value, then the new bid
            if numbers[0] not in [b[1] for b in state.bids[source] if b[0] == seat]:
                raise MoveError(f"You have no token of {numbers[0]} on {TRACKS[source]}.")
            return ("move", source, numbers[0], target, numbers[1])
        if len(numbers) == 1:  # "move black to red 5": which token?  (F20)
            movable = _movable(state, seat, source)
            if not movable:
                raise MoveError(f"You have no overbid token on {TRACKS[source]} to move (high bids are locked in).")
            if len(movable) > 1 and state.rulings >= 2:
                readings = " or ".join(
                    f"'move {TRACKS[source]} {b[1]} to {TRACKS[target]} {numbers[0]}'" for b in movable
                )
                raise MoveError(
                    f"'move {TRACKS[source]} to {TRACKS[target]} {numbers[0]}' is ambiguous: you have "
                    f"{len(movable)} tokens on {TRACKS[source]} you may move. Say which by its value: "
                    f"{readings}."
                )
            # the only one; or, by the first rulings (F21), the lowest: how old records read
            return ("move", source, movable[0][1], target, numbers[0])
    return None


@functools.lru_cache(maxsize=4096)
def _bid_or_pass(text: str) -> Move | None:
    """What a bidding turn's ``text`` says, when it bids from hand or passes
    well-formed, as BluffAuction._read reads it; else None, and _read reads
    it with the state.  Those two are read from their words alone, and a
    replay reads the same few lines again and again: each is read once."""
    words = _words_of(text)
    if not words or words[0] not in ("bid", "pass"):
        return None  # (a move of a token is read with the state: which tokens are the seat's)
    try:
        move = _read_from_hand(words)
    except MoveError:
        return None
    if move == ("pass",) and not reading.bare_move(text, "pass"):
        return None
    return move


def _read_tile(words: list[str]) -> Tile:
    colours = [w for w in words if w in COLOURS]
    eras = [w for w in words if w in ERAS]
    types = [w for w in words if w in TYPES]
    if len(colours) == len(eras) == len(types) == 1 and len(words) == 3:
        return (colours[0], eras[0], types[0])
    raise MoveError(
        f"I do not know the tile '{' '.join(words)[:60]}': write an artifact as its colour, era "
        "and type, as in 'red ancient tool'."
    )


def _read_tiles(words: list[str]) -> list[Tile]:
    """Tiles written one after another: an artifact is three words (its
    colour, era and type, in any order); "wild" (or "wild attribute") the
    Wild Attribute."""
    tiles: list[Tile] = []
    current: list[str] = []
    rest = [w for w in words if w not in ("and", "the", "a", "tile", "tiles")]
    for index, word in enumerate(rest):
        if word == "attribute" and index and rest[index - 1] == "wild":
            continue
        if word == "wild" and not current:
            tiles.append("wild")
            continue
        current.append(word)
        if len(current) == 3:
            tiles.append(_read_tile(current))
            current = []
    if current:
        raise MoveError(
            f"I could not read '{' '.join(current)[:60]}' as a tile: an artifact is its colour, "
            "era and type, as in 'red ancient tool'."
        )
    return tiles


def _read_acquisition(state: BluffState, seat: int, words: list[str]) -> Move | None:
    return _tile_won_named(state, _acquisition_of(tuple(words)))


def _tile_won_named(state: BluffState, move: Move | None) -> Move | None:
    """A tile won's answer as a move: a discard of "the tile just won"
    (("discard",), as _acquisition_of reads it) names that tile."""
    return ("discard", state.won[0][1]) if move == ("discard",) else move


@functools.lru_cache(maxsize=4096)
def _acquisition_said(text: str) -> Move | None:
    """What a tile won's ``text`` says, when well-formed, as
    BluffAuction._read reads it (a discard of the tile just won is
    ("discard",), without the tile); else None, and _read says why.  A
    function of the text alone, read once each (as _bid_or_pass)."""
    words = _words_of(text)
    if not words:
        return None
    try:
        return _acquisition_of(words)
    except MoveError:
        return None


@functools.lru_cache(maxsize=4096)  # (a replay reads every tile won's answer again: most recur)
def _acquisition_of(words: tuple[str, ...]) -> Move | None:
    """``_read_acquisition`` of the words alone: a discard of the tile just
    won is ("discard",), without the tile."""
    verb = words[0]
    if verb in ("place", "keep", "put") and set(words[1:]) <= {"in", "into", "museum"}:
        return ("place",)  # "place it in my museum"
    if verb == "discard" and words[1:] in ((), ("new",), ("new", "tile"), ("new", "one")):
        return ("discard",)  # the tile just won
    if verb == "discard" and len(words) > 1:
        tiles = _read_tiles(list(words[1:]))
        if len(tiles) != 1:
            raise MoveError("Discard one tile, as in 'discard red ancient tool'.")
        return ("discard", tiles[0])
    if verb == "exhibit" and len(words) > 1:
        return ("exhibit", _sorted(_read_tiles(list(words[1:]))))
    return None


def _why_not(state: BluffState, seat: int, move: Move) -> str | None:
    """Why a well-formed move is not legal now, for the player."""
    if state.stage == _BIDDING:
        if move[0] == "pass":
            return "You cannot pass while you hold bid tokens you have not placed."
        track = move[1] if move[0] == "bid" else move[3]
        if move[0] == "bid" and not state.tokens[seat]:
            return "You have no bid token in hand; you may move one of your overbid tokens ('move blue 2 to red 4')."
        if move[0] == "move" and move[1] not in _overbid(state, seat):
            return f"You have no overbid token on {TRACKS[move[1]]} to move (high bids are locked in)."
        moving = None
        if move[0] == "move":
            moving = _token(state, seat, move[1], move[2])
            if moving not in _movable(state, seat, move[1]):
                return f"Your token of {move[2]} on {TRACKS[move[1]]} is the high bid there: high bids are locked in."
        lowest = _lowest_bid(state, seat, track, moving)
        if lowest is None:
            return f"The high bid on {TRACKS[track]} is yours: you cannot overbid yourself."
        value = move[2] if move[0] == "bid" else move[4]
        cap = _caps(state, seat)[track]
        if value < lowest[0]:
            return f"On {TRACKS[track]} you must bid at least {lowest[0]}."
        if value > cap and state.rulings < 2:
            return f"A bid on {TRACKS[track]} above {cap} cannot win: only {state.rolled()} dice were rolled."
        if value > cap:
            return (
                f"A bid on {TRACKS[track]} can be at most {cap}: no one can count more than {cap - 1} there "
                f"this round, so a bid of {cap} already wins nothing and stops every bid above it."
            )
    if state.stage == _ACQUIRE:
        if move[0] == "exhibit":
            if len(state.exhibits[seat]) >= spaces(state.seats):
                return "Your exhibit spaces are all full: you can no longer exhibit."
            if _beside(state.won[0][1]):
                return (
                    f"An exhibit is 3 or more tiles from your museum that share a colour, an era or a type "
                    f"({tile_text(state.won[0][1])} goes beside your museum and joins no set)."
                )
            return (
                "An exhibit is 3 or more tiles from your museum and the new tile that share a colour, an era or a type."
            )
        if move[0] == "place":
            return "Your museum is full: exhibit a set or discard a tile."
        if move[0] == "discard":
            return "You may discard only when your museum is full, and only its tiles or the new one."
    return None
