"""Ice Ice Baby (Joss Ives, 2005), for 2 to 4 seats, by mail.

Quotes in comments are from docs/rules/ice-ice-baby.txt; the rulings (I1,
I2, ...) are in docs/games/ice-ice-baby.md.  Nothing is hidden: every area
is on the table.  Play is in turns, each one phase with one mover: an
auction is a run of bid-or-pass turns in seat order, and a scoring round
that follows it is a run of offers, each a score-a-tree-or-decline turn.

A pyramid is ``(colour, size)`` with size 3 (large), 2 (medium) or 1
(small).  A pile of pyramids is a sorted tuple, so equal piles compare equal.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from referee.rules import reading
from referee.rules.api import Game, MoveError, OptionError, Phase, Result, escaped, replace
from referee.rules.rng import Rng

COLOURS = ("red", "yellow", "green", "blue")  # I1: the four stashes
COLOURLESS = "colourless"  # I11: the end-game fill
SIZES = (3, 2, 1)  # large, medium, small: the order piles are written in
PER_SIZE = 5  # each stash: 5 small, 5 medium, 5 large
SIZE_LETTER = {3: "L", 2: "M", 1: "S"}
SIZE_NAME = {3: "large", 2: "medium", 1: "small"}
TREE_POINTS = {True: 7, False: 5}  # uniform, mixed
BONUS, SHARED_BONUS = 5, 3

# An auction, its scoring round, or the game's end; "won" (an auction just
# won) and "after" (a scoring round just done) only inside a resolution,
# until _play_on moves on: no view or stored state ever has them.
Stage = Literal["auction", "scoring", "over", "won", "after"]
Pyramid = tuple[str, int]
Pile = tuple[Pyramid, ...]
# A move is a tuple tagged by its verb: ("pass",), ("bid", pile),
# ("score", tree, take), ("decline",).  A Literal verb, as Bluff Auction's:
# mypy checks its spelling wherever a move is built or read.
Verb = Literal["pass", "bid", "score", "decline"]
Move = tuple[Verb, *tuple[Any, ...]]

_SIZE_WORDS = {"l": 3, "large": 3, "larges": 3, "m": 2, "medium": 2, "mediums": 2, "s": 1, "small": 1, "smalls": 1}
_COLOUR_WORDS = {**{c: c for c in COLOURS}, "colourless": COLOURLESS, "colorless": COLOURLESS, "clear": COLOURLESS}
_COUNTED = re.compile(r"([0-9]+)x?([a-z]*)", re.ASCII)  # "2", "2x", "2L", "2xL"
_VERB = re.compile(r"^\s*(?P<verb>[a-z]+)\b(?P<rest>.*?)\s*\.?\s*$", re.I)


# -- pyramids and piles --------------------------------------------------------


# A pyramid's place in a pile: larger first, then in the order of COLOURS,
# colourless last.  A table, not a function: piles are sorted at every move.
_PLACE: dict[Pyramid, tuple[int, int]] = {
    (colour, size): (-size, rank) for rank, colour in enumerate((*COLOURS, COLOURLESS)) for size in SIZES
}
_order = _PLACE.__getitem__


def pile(pyramids: Iterable[Pyramid]) -> Pile:
    return tuple(sorted(pyramids, key=_order))


def name(pyramid: Pyramid) -> str:
    """How a pyramid is written: L-red, M-blue, S-colourless."""
    return f"{SIZE_LETTER[pyramid[1]]}-{pyramid[0]}"


def pile_text(pyramids: Iterable[Pyramid]) -> str:
    return " ".join(name(p) for p in pyramids) or "nothing"


def pyramids_html(names: Iterable[str]) -> str:
    """Pyramids' names ("L-red") as a page shows them, each coloured by its
    class (site/ice/_pyramids.html.j2 marks this safe): escaped here, as
    Jinja would escape them.  One function call where a template's loop
    cost a tenth of a page."""
    shown = [f'<span class="pyr pyr-{_html(name.split("-", 1)[1])}">{_html(name)}</span>' for name in names]
    return " ".join(shown) or "nothing"


_html = escaped  # (api.escaped: as the templates escape)


# -- a move and a round in words (events/ice.txt.j2's macros call these) --------------
# Python functions, not macros: the site says a round's headline in its feed and
# its move in its table of turns, thousands of turns a full render, and a macro
# call costs more than the words (issue 36).  tests/unit/test_words36_render.py
# holds them to the macros they replaced.


def move_said(
    event: Mapping[str, Any], detail: bool = False, show: Callable[[list[str]], str] | None = None, html: bool = False
) -> str:
    """The mover's move, a round's first event: "bids L-red S-blue",
    "passes", "scores a tree", "declines"; with ``detail``, as the site's
    table of turns shows it ("passes (card 3, L-red)", "scores [...], takes
    ...").  Pyramids are named by ``show`` (the site's are coloured markup),
    else as plain text; with ``html`` the text is escaped as Jinja would
    (what ``show`` gives as markup is not), for events/ice.txt.j2 to mark
    safe."""

    def pyramids(names: list[str]) -> str:
        shown = show(names) if show is not None else " ".join(names) or "nothing"
        return _html(shown) if html and not hasattr(shown, "__html__") else str(shown)

    kind = event["type"]
    if kind == "bid":
        return f"bids {pyramids(event['bid'])}"
    if kind == "pass":
        if not detail:
            return "passes"
        bid = f", {pyramids(event['bid'])}" if event["bid"] else ""
        return f"passes (card {event['card']}{bid})"
    if kind == "tree":
        if not detail:
            return "scores a tree"
        took = f", takes {pyramids(event['took'])}" if event["took"] else ""
        return f"scores [{pyramids(event['tree'])}]{took}"
    return "declines"


def headline_said(round_: Mapping[str, Any], names: list[str]) -> str:
    """A round in one line, after its label, in plain text: the mover's
    move, who won an auction in it and whether the game ended ("ann bids
    L-red; bob wins the auction")."""
    events = round_["events"]
    mover = next(iter(round_["how"]))
    said = [f"{names[mover]} {move_said(events[0])}"]
    said += [f"{names[e['seat']]} wins the auction" for e in events if e["type"] == "won"]
    said += ["game over" for e in events if e["type"] == "over"]
    return "; ".join(said)


def turns_html(rounds: list[dict[str, Any]], names: list[str], move: Callable[..., str]) -> str:
    """The rows of the site's table of turns (site/ice/rounds.html.j2 marks
    them safe), a row a turn: its label, its mover's move (worded by
    ``move``, events/ice.txt.j2's macro, with detail and html=true and the
    pyramids coloured by pyramids_html, so a keeper's words stay) and how it
    was made, what followed it, and the points after it.  Escaped here as
    Jinja would escape it.  A Python function, not the template's loop: the
    table, a row a turn, was a quarter of a full render (issue 36);
    tests/unit/test_words36_render.py holds it to that loop."""
    rows = []
    for round_ in rounds:
        events = round_["events"]
        mover, how = next(iter(round_["how"].items()))
        moved = move(events[0], _coloured, detail=True, html=True)
        scores = " · ".join(_html(str(score)) for score in events[-1].get("scores", []))
        rows.append(
            f'<tr id="phase-{_html(str(round_["number"]))}"><th scope="row" class="line">{_html(round_["label"])}</th>\n'
            f'<td class="wrap line">{_html(names[mover])}: {moved}{_HOW_MADE.get(how, "")}</td>\n'
            f'<td class="wrap line">{followed_html(events, names)}</td>\n'
            f'<td class="line nowrap" data-label="Points now">{scores}</td></tr>\n'
        )
    return "".join(rows)


class _Markup(str):
    """Text that is HTML already: Jinja (markupsafe) does not escape it again."""

    def __html__(self) -> str:
        return self


def _coloured(names: list[str]) -> str:
    """Pyramids as the table's move shows them: site/ice/_pyramids.html.j2's
    show, without a macro call a turn."""
    return _Markup(pyramids_html(names))


_HOW_MADE = {  # a move not made by mail, marked after it
    "random": '<abbr title="random: none by the deadline">*</abbr>',
    "bot": '<abbr title="a bot\'s random move">~</abbr>',
}


def followed_html(events: list[dict[str, Any]], names: list[str]) -> str:
    """What followed a round's move, its events after the first: a pass
    forced on a seat, an auction won and what it paid to whom, a scoring
    round, the next lot, the game's end; a line each."""
    return "<br>".join(_followed_html(event, names) for event in events[1:])


def _followed_html(e: dict[str, Any], names: list[str]) -> str:
    kind = e["type"]
    if kind == "pass":
        why = "has no pyramids" if e["why"] == "no pyramids" else "cannot raise"
        return f"{_html(names[e['seat']])} {why}: passes (card {_html(str(e['card']))})"
    if kind == "won":
        paid = "".join(
            f"; {pyramids_html(pay['pyramids'])} to "
            + (_html(names[pay["to"]]) if pay["to"] is not None else "the dead area")
            for pay in e["payments"]
            if pay["pyramids"]
        )
        return f'<span class="win">{_html(names[e["seat"]])} wins {pyramids_html(e["lot"])}</span>{paid}'
    if kind == "scoring":
        return "scoring round"
    if kind == "no tree":
        return f"{_html(names[e['seat']])} has no tree"
    if kind == "scoring over":
        return f"scoring over ({_html(str(e['trees']))} tree{'s' if e['trees'] != 1 else ''})"
    if kind == "lot":
        track = f"; track +{len(e['to_track'])} = {_html(str(e['track']))}" if e["to_track"] else ""
        note = " (last)" if e["final"] else " (scoring follows)" if e["scoring_due"] else ""
        return f"auction {_html(str(e['auction']))}: {pyramids_html(e['lot'])}{track}{note}"
    if kind == "over":
        return "game over"
    return ""  # (a type named nowhere here shows nothing)


def value(pyramids: Iterable[Pyramid]) -> tuple[int, int, int]:
    """A bid's value: "first by number of pyramids and then pyramid size"
    (count, then larges, then mediums).  Colours do not count."""
    sizes = [size for _, size in pyramids]
    return (len(sizes), sizes.count(3), sizes.count(2))


def _without(have: Pile, taken: Iterable[Pyramid]) -> Pile:
    left = list(have)
    for pyramid in taken:
        left.remove(pyramid)
    return tuple(left)


def _choices(have: Pile, count: int) -> list[Pile]:
    """Every distinct sub-pile of ``count`` pyramids, in a fixed order.  Built
    from the counts of each kind of pyramid, not from combinations of the
    pyramids themselves, which would repeat each sub-pile many times."""
    kinds = sorted(Counter(have).items(), key=lambda item: _order(item[0]))
    found: list[Pile] = []

    def extend(index: int, left: int, chosen: tuple[Pyramid, ...]) -> None:
        if left == 0:
            found.append(chosen)
            return
        if index == len(kinds) or sum(n for _, n in kinds[index:]) < left:
            return
        pyramid, held = kinds[index]
        for take in range(min(held, left), -1, -1):
            extend(index + 1, left - take, chosen + (pyramid,) * take)

    extend(0, count, ())
    return sorted(found, key=lambda p: [_order(x) for x in p])


def _trees(have: Pile) -> list[Pile]:
    """Every distinct tree (a large, a medium and a small) in a pile."""
    by_size = {size: sorted({p for p in have if p[1] == size}, key=_order) for size in SIZES}
    return [tuple(tree) for tree in itertools.product(*(by_size[size] for size in SIZES))]


def uniform(tree: Pile) -> bool:
    colours = {colour for colour, _ in tree}
    return len(colours) == 1 and COLOURLESS not in colours  # I11: colourless trees are mixed


# -- the state -------------------------------------------------------------------


@dataclass(frozen=True)
class IceState:
    scoring_colour: str
    step: int  # a scoring round at every multiple of this on the track (3, or 2 in the short game)
    end: int  # the last such multiple: the game ends after that auction (12, or 8: I5)
    bag: Pile
    track: Pile  # scoring-colour pyramids drawn, still on the track
    drawn: int  # scoring-colour pyramids drawn so far: the track's count (I11)
    lot: Pile  # the auction area
    dead: Pile
    active: tuple[Pile, ...]
    scored: tuple[tuple[Pile, ...], ...]  # each seat's trees, in the order scored
    start: int  # the starting player of this auction
    auction: int  # 1, 2, ...
    turns: int  # turns taken in this auction (or offers made in its scoring round)
    stage: Stage
    turn: int | None  # who acts now (auction turn, or the seat offered a tree)
    bids: tuple[Pile | None, ...]  # each seat's last bid in this auction; None: no bid yet
    high: int | None  # the seat holding the high bid
    cards: tuple[int, ...]  # seats in the order they passed: cards[0] holds card number one
    scoring_due: bool  # this auction's draw triggered a scoring round
    final: bool  # this auction's draw reached the end: the game ends after it
    offers: tuple[int, ...]  # the scoring round: seats still to be offered, in order
    trees_scored: int  # in this scoring round
    bots: frozenset[int]

    @property
    def seats(self) -> int:
        return len(self.active)

    @property
    def mover(self) -> int:
        """``turn`` where a seat is sure to hold it: the seat that owes the
        move of an auction or a scoring round, or the winner of an auction
        just won."""
        if self.turn is None:
            raise ValueError(f"no seat holds the turn at stage {self.stage!r}")
        return self.turn

    @property
    def high_bid(self) -> Pile:
        """The bid to beat; empty before the first bid of an auction."""
        return (self.bids[self.high] or ()) if self.high is not None else ()  # the high seat has a bid

    def in_auction(self) -> tuple[int, ...]:
        """The seats that have not passed, clockwise from the starting player."""
        seats = self.seats
        order = [(self.start + k) % seats for k in range(seats)]
        return tuple(seat for seat in order if seat not in self.cards)


class IceIceBaby(Game[IceState, Move]):
    kind = "ice"
    title = "Ice Ice Baby"
    min_seats, max_seats = 2, 4
    move_word = "bid"
    move_words = ("bid", "pass", "score", "decline")
    options = {"short": False, "scoring_colour": "red"}
    option_help: Mapping[str, str] = {
        "short": "true: the short variant, scoring at 2, 4, 6 and 8 on the track, ending at 8 (I5); false: the full game",
        "scoring_colour": "the colour of the scoring pyramids: red, yellow, green or blue",
    }
    rule_text = "docs/rules/ice-ice-baby.txt"
    rulings_page = "docs/games/ice-ice-baby.md"
    example = "bid L-blue M-green"
    filters = {
        "pyramids": lambda names: " ".join(names) or "nothing",
        "pyramids_html": pyramids_html,
        "ice_move": move_said,
        "ice_headline": headline_said,
        "ice_turns_html": turns_html,
    }

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        options = super().check_options(options)
        short = options["short"]
        if isinstance(short, str):
            if short.lower() not in ("true", "false", "yes", "no", "1", "0"):
                raise OptionError("short must be true or false")
            short = short.lower() in ("true", "yes", "1")
        options["short"] = bool(short)
        colour = str(options["scoring_colour"]).lower()
        if colour not in COLOURS:
            raise OptionError(f"scoring_colour must be one of {', '.join(COLOURS)}")
        options["scoring_colour"] = colour
        return options

    # -- setting up --------------------------------------------------------------

    def setup(self, seats: int, rng: Rng, options: Mapping[str, Any]) -> IceState:
        if not self.min_seats <= seats <= self.max_seats:
            raise OptionError("Ice Ice Baby is for 2 to 4 players")
        options = self.check_options(options)
        scoring = options["scoring_colour"]
        bag = list(pile((colour, size) for colour in COLOURS for size in SIZES for _ in range(PER_SIZE)))
        active = []
        for _ in range(seats):  # I2: seat by seat, small then medium then large, never the scoring colour
            mine = []
            for size in (1, 2, 3):
                pyramid = rng.choice([p for p in bag if p[1] == size and p[0] != scoring])
                bag.remove(pyramid)
                mine.append(pyramid)
            active.append(pile(mine))
        start = rng.randbelow(seats)
        state = IceState(
            scoring_colour=scoring,
            step=2 if options["short"] else 3,
            end=8 if options["short"] else 12,
            bag=tuple(bag),
            track=(),
            drawn=0,
            lot=(),
            dead=(),
            active=tuple(active),
            scored=((),) * seats,
            start=start,
            auction=0,
            turns=0,
            stage="auction",
            turn=None,
            bids=(None,) * seats,
            high=None,
            cards=(),
            scoring_due=False,
            final=False,
            offers=(),
            trees_scored=0,
            bots=frozenset(),
        )
        state, _ = _next_auction(state, start, rng)
        state, _ = _next_turn(state, start, include=True)
        return state

    # -- what is asked now -------------------------------------------------------

    def phase(self, state: IceState) -> Phase | None:
        if state.stage == "auction":
            return Phase(f"Auction {state.auction}, turn {state.turns + 1}", (state.mover,), sealed=False)
        if state.stage == "scoring":
            return Phase(
                f"Auction {state.auction} scoring, offer {state.turns + 1}",
                (state.mover,),
                sealed=False,
                timer="decision",
            )
        return None

    def legal_moves(self, state: IceState, seat: int) -> list[Move]:
        if seat != state.turn:
            return []
        if state.stage == "auction":
            moves: list[Move] = [] if _must_bid(state) else [("pass",)]
            return moves + [("bid", bid) for bid in _legal_bids(state, seat)]
        if state.stage == "scoring":
            take = min(_earned(state), len(state.dead))
            takes = _choices(state.dead, take)
            scores: list[Move] = [("score", tree, got) for tree in _trees(state.active[seat]) for got in takes]
            return [("decline",), *scores]
        return []

    def parse_move(self, state: IceState, seat: int, text: str) -> Move:
        match = _VERB.match(text)
        verb = match["verb"].lower() if match else ""
        rest = match["rest"] if match else ""
        if state.stage == "scoring":
            return self._parse_offer(state, seat, verb, rest)
        if verb == "pass" and (not rest.strip() or reading.bare_move(text, "pass")):  # "pass for now"
            if _must_bid(state):
                raise MoveError(
                    "Everyone else has passed without bidding, so you must bid one "
                    "pyramid (and you win the auction with it)."
                )
            return ("pass",)
        if verb != "bid":
            raise MoveError(f"A move is 'pass' or a bid such as '{self._example(state, seat)}'.")
        bid = _read_pile(rest, state.active[seat], "bid")
        self._check_bid(state, seat, bid)
        return ("bid", bid)

    def _check_bid(self, state: IceState, seat: int, bid: Pile) -> None:
        if not bid:
            raise MoveError("A bid is at least one pyramid ('a bid of zero is not a valid bid').")
        high = state.high_bid
        if len(bid) > len(high) + 1:
            most = "one pyramid" if not high else f"{len(high) + 1} pyramids"
            raise MoveError(f"You may raise by at most one pyramid: bid {most} at most.")
        if value(bid) <= value(high):
            raise MoveError(
                f"Your bid must beat the high bid, {pile_text(high)}: the same number "
                "of pyramids with more larges (or as many larges and more mediums), "
                "or one pyramid more."
            )

    def _example(self, state: IceState, seat: int) -> str:
        bids = _legal_bids(state, seat)
        return self.move_text(("bid", bids[0])) if bids else "bid L-blue"

    def _parse_offer(self, state: IceState, seat: int, verb: str, rest: str) -> Move:
        if verb in ("decline", "pass") and not rest.strip():
            return ("decline",)
        if verb != "score":
            raise MoveError(
                "A scoring round asks 'score tree blue' (or 'score tree L-blue M-green "
                "S-green take L-yellow M-blue') or 'decline'."
            )
        tree_text, *take = re.split(r"\s+take\b", re.sub(r"^\s*tree\b", "", rest, flags=re.I), maxsplit=1, flags=re.I)
        take_text = take[0] if take else ""
        earned = min(_earned(state), len(state.dead))
        tree = _read_tree(tree_text, state.active[seat], state.dead, earned)
        if not take_text.strip():
            options = _choices(state.dead, earned)
            if len(options) > 1:
                raise MoveError(
                    f"Say which {earned} pyramid(s) you take from the dead area "
                    f"({pile_text(state.dead)}), for example "
                    f"'score tree {pile_text(tree)} take {pile_text(options[0])}'."
                )
            return ("score", tree, options[0])
        took = _read_pile(take_text, state.dead, "take", where="the dead area")
        if len(took) != earned:
            raise MoveError(
                f"You take {earned} pyramid(s) from the dead area, not {len(took)}: it holds {pile_text(state.dead)}."
            )
        return ("score", tree, took)

    def move_text(self, move: Move) -> str:
        verb = move[0]
        if verb == "bid":
            return "bid " + pile_text(move[1])
        if verb == "score":
            text = "score tree " + pile_text(move[1])
            return text + (" take " + pile_text(move[2]) if move[2] else "")
        return verb

    # -- resolving -----------------------------------------------------------------

    def resolve(self, state: IceState, moves: Mapping[int, Move], rng: Rng) -> tuple[IceState, list[dict[str, Any]]]:
        seat = state.mover
        move = moves[seat]
        if state.stage == "scoring":
            return self._offer(state, seat, move, rng)
        if move[0] == "pass":
            state, event = _pass(replace(state, turns=state.turns + 1), seat, forced=False)
        else:
            bids = list(state.bids)
            bids[seat] = move[1]
            state = replace(state, turns=state.turns + 1, bids=tuple(bids), high=seat)
            event = {"type": "bid", "seat": seat, "bid": _names(move[1])}
        state, events = _next_turn(state, seat, include=False)
        return self._play_on(state, [event, *events], rng)

    def _play_on(
        self, state: IceState, events: list[dict[str, Any]], rng: Rng
    ) -> tuple[IceState, list[dict[str, Any]]]:
        """Everything that follows without a decision: the payments of a won
        auction, the start of its scoring round, the next auction's draw, or
        the end; until someone owes a move."""
        while state.stage in ("won", "after"):
            if state.stage == "won":
                state, more = _after_auction(state)
            elif state.final:
                state = replace(state, stage="over", turn=None, offers=())
                more = [self._final_event(state)]
            else:
                state, lot = _next_auction(state, state.start, rng)  # _pay made the winner start
                state, more = _next_turn(state, state.start, include=True)
                more = [lot, *more]
            events += more
        return state, _scored(state, events)

    def _offer(self, state: IceState, seat: int, move: Move, rng: Rng) -> tuple[IceState, list[dict[str, Any]]]:
        state = replace(state, turns=state.turns + 1, offers=state.offers[1:])
        if move[0] == "decline":
            events = [{"type": "declined", "seat": seat}]
        else:
            _, tree, took = move
            active, scored = list(state.active), list(state.scored)
            active[seat] = pile(_without(active[seat], tree) + took)
            scored[seat] = (*scored[seat], tree)
            state = replace(
                state,
                active=tuple(active),
                scored=tuple(scored),
                dead=_without(state.dead, took),
                trees_scored=state.trees_scored + 1,
            )
            events = [
                {"type": "tree", "seat": seat, "tree": _names(tree), "uniform": uniform(tree), "took": _names(took)}
            ]
        state, more = _next_offer(state)
        return self._play_on(state, events + more, rng)

    def _final_event(self, state: IceState) -> dict[str, Any]:
        breakdown = standings(state)
        result = self.result(state)
        return {"type": "over", "breakdown": breakdown, "winner": result.winner if result else None}

    # -- what players see -----------------------------------------------------------

    def view(self, state: IceState, seat: int | None) -> dict[str, Any]:
        """Everything is public (I3): the same view for every seat, plus which seat is yours."""
        high = state.high_bid
        seats = [self._seat_view(state, s) for s in range(state.seats)]
        public = {
            "stage": state.stage,
            "over": state.stage == "over",
            "auction": state.auction,
            "turns": state.turns,
            "turn": state.turn,
            "start": state.start,
            "scoring_colour": state.scoring_colour,
            "step": state.step,
            "end": state.end,
            "track": {
                "count": state.drawn,
                "pyramids": _names(state.track),
                "next": _next_multiple(state),
                "triggers": _multiples(state),
            },
            "bag": _bag_counts(state),
            "lot": _names(state.lot),
            "dead": _names(state.dead),
            "seats": seats,
            "high": state.high,
            "high_bid": _names(high),
            "high_value": list(value(high)),
            "cards": list(state.cards),
            "scoring_due": state.scoring_due,
            "final": state.final,
            "offers": list(state.offers),
            "earn": min(_earned(state), len(state.dead)),
            "scores": list(totals(state)),
            "must_bid": state.stage == "auction" and _must_bid(state),
        }
        if seat is None:
            return public
        private = {**public, "seat": seat, "mine": seats[seat]}
        if seat == state.turn:
            legal = self.legal_moves(state, seat)
            shown = legal[:2] + legal[-1:] if len(legal) > 3 else legal
            private.update(legal_count=len(legal), examples=[self.move_text(m) for m in shown])
        return private

    def _seat_view(self, state: IceState, seat: int) -> dict[str, Any]:
        bid = state.bids[seat]
        return {
            "active": _names(state.active[seat]),
            "trees": [{"pyramids": _names(t), "uniform": uniform(t)} for t in state.scored[seat]],
            "bid": _names(bid) if bid is not None else None,
            "card": state.cards.index(seat) + 1 if seat in state.cards else None,
            "in": state.stage == "auction" and seat not in state.cards,
            "colours": _colour_counts(state, seat),
        }

    def result(self, state: IceState) -> Result | None:
        if state.stage != "over":
            return None
        points = standings(state)
        totals = [p["total"] for p in points]
        people = [seat for seat in range(state.seats) if seat not in state.bots]  # I16: a bot never wins
        if not people:
            return Result(scores=tuple(totals), winner=None)
        rank = {seat: (totals[seat], points[seat]["collected"]) for seat in people}  # I16: then by value
        best = max(rank.values())
        leaders = [seat for seat in people if rank[seat] == best]
        return Result(scores=tuple(totals), winner=leaders[0] if len(leaders) == 1 else None)


# -- the auction (pure helpers) -------------------------------------------------------


def _must_bid(state: IceState) -> bool:
    """The "very rare case": everyone else passed without bidding (I8)."""
    return state.high is None and len(state.in_auction()) == 1


def _legal_bids(state: IceState, seat: int) -> list[Pile]:
    """Bids that beat the high one with at most one pyramid more, in value order."""
    high = state.high_bid
    active = state.active[seat]
    bids = [bid for bid in _choices(active, len(high)) if value(bid) > value(high)] if high else []
    bids += _choices(active, len(high) + 1) if len(active) > len(high) else []
    return sorted(bids, key=lambda bid: (value(bid), [_order(p) for p in bid]))


def _can_raise(state: IceState, seat: int) -> bool:
    high = state.high_bid
    active = state.active[seat]
    return len(active) > len(high) or value(active[: len(high)]) > value(high)


def _pass(state: IceState, seat: int, forced: bool) -> tuple[IceState, dict[str, Any]]:
    """The seat takes the lowest passing card left, its last bid on it."""
    state = replace(state, cards=(*state.cards, seat))
    bid = state.bids[seat]
    event = {
        "type": "pass",
        "seat": seat,
        "card": len(state.cards),
        "forced": forced,
        "bid": _names(bid) if bid else [],
    }
    if forced:
        event["why"] = "no pyramids" if not state.active[seat] else "cannot raise"
    return state, event


def _next_turn(state: IceState, after: int, include: bool) -> tuple[IceState, list[dict[str, Any]]]:
    """Whose turn is next, clockwise from ``after``; a seat that cannot raise
    passes at once (I7).  Sets stage "won" when the auction is over."""
    events: list[dict[str, Any]] = []
    while True:
        left = state.in_auction()
        if len(left) == 1 and (state.high == left[0] or not state.active[left[0]]):
            return replace(state, stage="won", turn=left[0]), events  # I8: no pyramids, the lot is free
        if len(left) == 1:
            return replace(state, turn=left[0]), events
        seats = state.seats
        order = [(after + k) % seats for k in range(0 if include else 1, seats + 1)]
        seat = next(s for s in order if s in left)
        if _can_raise(state, seat):
            return replace(state, turn=seat), events
        state, event = _pass(state, seat, forced=True)
        events.append(event)
        after, include = seat, False


def _pay(state: IceState) -> tuple[IceState, list[dict[str, Any]]]:
    """The winner takes the lot and pays its bid to the bidding passer with
    the highest card; each bidding passer gives its own bid to the next one
    down; the lowest puts its own in the dead area."""
    winner = state.mover
    chain = [winner] + [seat for seat in reversed(state.cards) if state.bids[seat]]
    active = [list(a) for a in state.active]
    bids = {seat: state.bids[seat] or () for seat in chain}
    for seat in chain:
        active[seat] = list(_without(tuple(active[seat]), bids[seat]))
    payments = []
    for giver, taker in zip(chain, [*chain[1:], None], strict=True):
        if taker is not None:
            active[taker] += bids[giver]
        payments.append({"from": giver, "to": taker, "pyramids": _names(bids[giver])})
    dead = pile(state.dead + bids[chain[-1]])
    active[winner] += state.lot
    event = {
        "type": "won",
        "seat": winner,
        "lot": _names(state.lot),
        "bid": _names(bids[winner]),
        "card": state.seats,
        "payments": payments,
    }
    state = replace(
        state,
        active=tuple(pile(a) for a in active),
        dead=dead,
        lot=(),
        start=winner,
        stage="after",
        high=None,
        bids=(None,) * state.seats,
    )
    return state, [event]


# -- scoring rounds ----------------------------------------------------------------


def _after_auction(state: IceState) -> tuple[IceState, list[dict[str, Any]]]:
    """Pay down the chain of passing cards; then the scoring round, if this
    auction's draw triggered one: offers to the winner, then in descending
    card order."""
    winner = state.mover
    state, events = _pay(state)
    if not state.scoring_due:
        return state, events
    offers = (winner, *reversed(state.cards))
    state = replace(state, stage="scoring", offers=offers, trees_scored=0, turns=0)
    events.append({"type": "scoring", "offers": list(offers)})
    state, more = _next_offer(state)
    return state, events + more


def _earned(state: IceState) -> int:
    """Pyramids a tree earns from the dead area: 2 for the first, 1 for the second."""
    return 2 if state.trees_scored == 0 else 1


def _next_offer(state: IceState) -> tuple[IceState, list[dict[str, Any]]]:
    """The next seat offered a tree, skipping seats without one (I10); the
    round ends after two trees or when the offers run out."""
    events: list[dict[str, Any]] = []
    offers = state.offers
    while offers and state.trees_scored < 2:
        if _trees(state.active[offers[0]]):
            return replace(state, stage="scoring", turn=offers[0], offers=offers), events
        events.append({"type": "no tree", "seat": offers[0]})
        offers = offers[1:]
    events.append({"type": "scoring over", "trees": state.trees_scored})
    return replace(state, stage="after", turn=None, offers=()), events


# -- drawing -----------------------------------------------------------------------


def _next_auction(state: IceState, start: int, rng: Rng) -> tuple[IceState, dict[str, Any]]:
    """The starting player draws a pyramid of each size for the auction area
    (I2: small, medium, large); a scoring-colour one goes to the track and the
    size is drawn again; an empty bag is made up from the track (I11)."""
    bag, track, lot, drawn, filled = list(state.bag), list(state.track), [], [], []
    for size in (1, 2, 3):
        while True:
            candidates = [p for p in bag if p[1] == size]
            if not candidates:
                if (state.scoring_colour, size) in track:
                    track.remove((state.scoring_colour, size))
                    lot.append((COLOURLESS, size))
                    filled.append((COLOURLESS, size))
                break
            pyramid = rng.choice(candidates)
            bag.remove(pyramid)
            if pyramid[0] != state.scoring_colour:
                lot.append(pyramid)
                break
            track.append(pyramid)
            drawn.append(pyramid)
    before, after = state.drawn, state.drawn + len(drawn)
    due = any(before < m <= after for m in range(state.step, state.end + 1, state.step))
    state = replace(
        state,
        bag=tuple(bag),
        track=pile(track),
        drawn=after,
        lot=pile(lot),
        start=start,
        auction=state.auction + 1,
        turns=0,
        stage="auction",
        turn=None,
        bids=(None,) * state.seats,
        high=None,
        cards=(),
        scoring_due=due,
        final=after >= state.end,
        offers=(),
        trees_scored=0,
    )
    event = {
        "type": "lot",
        "auction": state.auction,
        "start": start,
        "lot": _names(state.lot),
        "to_track": _names(pile(drawn)),
        "filled": _names(filled),
        "track": after,
        "scoring_due": due,
        "final": state.final,
    }
    return state, event


def _multiples(state: IceState) -> list[int]:
    return list(range(state.step, state.end + 1, state.step))


def _next_multiple(state: IceState) -> int | None:
    return next((m for m in _multiples(state) if m > state.drawn), None)


# -- final scoring -------------------------------------------------------------------


def _collected(state: IceState, seat: int) -> Pile:
    return pile(state.active[seat] + tuple(p for tree in state.scored[seat] for p in tree))


def _colour_counts(state: IceState, seat: int) -> dict[str, int]:
    counts = Counter(colour for colour, _ in _collected(state, seat))
    return {colour: counts[colour] for colour in COLOURS if colour != state.scoring_colour}


def best_trees(active: Pile) -> tuple[int, int]:
    """I14: the most points from arranging pyramids into trees: as many
    uniform trees as each colour allows, then mixed trees of the rest (which
    can never all be one colour).  Returns (uniform, mixed)."""
    count = Counter(active)
    uniforms = sum(min(count[(c, size)] for size in SIZES) for c in COLOURS)
    trees = min(sum(n for (_, size), n in count.items() if size == s) for s in SIZES)
    return uniforms, trees - uniforms


def standings(state: IceState) -> list[dict[str, Any]]:
    """Each seat's points if the game ended now (the final scoring), with
    their parts: trees, single pyramids, colour bonuses, and the collected
    pyramids' value for the tie-break."""
    return _standings(state.scoring_colour, state.active, state.scored)


def _standings(
    scoring_colour: str, active: tuple[Pile, ...], scored: tuple[tuple[Pile, ...], ...]
) -> list[dict[str, Any]]:
    tallies = [_tally(pyramids, trees) for pyramids, trees in zip(active, scored, strict=True)]
    bonuses: list[dict[str, int]] = [{} for _ in tallies]
    for colour in COLOURS:
        if colour == scoring_colour:
            continue  # "The scoring colour is never used to determine bonuses"
        held = [tally.colours.get(colour, 0) for tally in tallies]
        top = max(held)
        for seat, n in enumerate(held):
            if top and n == top:  # I14: none of a colour earns nothing
                bonuses[seat][colour] = BONUS if held.count(top) == 1 else SHARED_BONUS
    return [_points(tally, bonuses[seat]) for seat, tally in enumerate(tallies)]


def totals(state: IceState) -> tuple[int, ...]:
    """``[points["total"] for points in standings(state)]``: what the chart
    shows after every move.  Looked up: in an auction the bids move no
    pyramid, so turn after turn asks for the same piles' totals."""
    return _totals(state.scoring_colour, state.active, state.scored)


# (a pure function of strings and tuples, never changed: a kept answer cannot go stale)
@functools.lru_cache(maxsize=1024)
def _totals(scoring_colour: str, active: tuple[Pile, ...], scored: tuple[tuple[Pile, ...], ...]) -> tuple[int, ...]:
    return tuple(points["total"] for points in _standings(scoring_colour, active, scored))


class _Tally(NamedTuple):
    """What a seat's pyramids are worth before the colour bonuses (which
    compare the seats): its trees, its single pyramids, its colours' counts
    and the value of all it collected."""

    uniform: int
    mixed: int
    single: int
    colours: Mapping[str, int]  # (read only: shared by every caller of _tally)
    collected: tuple[int, int, int]


# A replay asks for every seat's standings after every move, and a move
# changes one seat's pyramids at most: the others' tallies are looked up.
# _tally is a pure function of its arguments (piles are tuples, never
# changed), so a kept answer is always the answer: the cache cannot go stale.
@functools.lru_cache(maxsize=4096)
def _tally(active: Pile, scored: tuple[Pile, ...]) -> _Tally:
    scored_uniform = sum(1 for tree in scored if uniform(tree))
    made_uniform, made_mixed = best_trees(active)
    collected = active + tuple(p for tree in scored for p in tree)
    return _Tally(
        uniform=scored_uniform + made_uniform,
        mixed=len(scored) - scored_uniform + made_mixed,
        single=len(active) - 3 * (made_uniform + made_mixed),
        colours=MappingProxyType(Counter(colour for colour, _ in collected)),
        collected=value(collected),
    )


def _points(tally: _Tally, bonuses: dict[str, int]) -> dict[str, Any]:
    total = TREE_POINTS[True] * tally.uniform + TREE_POINTS[False] * tally.mixed + tally.single + sum(bonuses.values())
    return {
        "uniform": tally.uniform,
        "mixed": tally.mixed,
        "single": tally.single,
        "bonuses": bonuses,
        "total": total,
        "collected": list(tally.collected),
    }


def _scored(state: IceState, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every resolve's last event carries the standings (what the site charts):
    the points each seat would have if the game ended now."""
    if events:
        events[-1]["scores"] = list(totals(state))
    return events


# -- reading piles -------------------------------------------------------------------


def _names(pyramids: Iterable[Pyramid]) -> list[str]:
    return [name(p) for p in pyramids]


def _bag_counts(state: IceState) -> dict[str, Any]:
    counts = Counter(state.bag)
    return {"total": len(state.bag), "by_colour": {c: [counts[(c, size)] for size in SIZES] for c in COLOURS}}


@dataclass
class _Group:
    """Pyramids named together as they are read: "2L-red" is a group of 2."""

    count: int
    size: int | None = None
    colour: str | None = None


# A replay reads every move again, and the same few texts ("bid L-red") come
# back in every game.  _groups is a pure function of a string, and its answer
# a tuple of tuples, never changed: a kept answer cannot go stale.  (A text
# it refuses raises MoveError, which is never kept.)
@functools.lru_cache(maxsize=4096)
def _groups(text: str) -> tuple[tuple[int, int, str | None], ...]:
    """Read "L-red 2M S", "large red, 2 medium blue" or "red L" into
    (count, size, colour) groups; raises MoveError on a word it does not know."""
    words = [w for w in re.split(r"[\s,;+&/-]+|\band\b", text.lower()) if w]
    groups: list[_Group] = []
    count: int | None = None

    def open_group() -> _Group:
        nonlocal count
        groups.append(_Group(count or 1))
        count = None
        return groups[-1]

    for word in words:
        match = _COUNTED.fullmatch(word)
        number, rest = (match[1], match[2]) if match else (None, word)
        if number:
            if count is not None or int(number) < 1:
                raise MoveError(f"I could not read '{word}' as a number of pyramids.")
            count = int(number)
        if not rest:
            continue
        size, colour = _SIZE_WORDS.get(rest), _COLOUR_WORDS.get(rest)
        if size is None and colour is None and rest[:1] in ("l", "m", "s") and rest[1:] in _COLOUR_WORDS:
            size, colour = _SIZE_WORDS[rest[0]], _COLOUR_WORDS[rest[1:]]  # "Lred"
        if size is None and colour is None:
            raise MoveError(
                f"I do not know '{word}': pyramids are written like L-red, M-blue, S-green "
                "(L large, M medium, S small; red, yellow, green, blue)."
            )
        current = groups[-1] if groups and count is None else None
        if size is not None:
            if current is None or current.size is not None:
                current = open_group()
            current.size = size
        if colour is not None:
            if current is None or current.colour is not None:
                current = open_group()
            current.colour = colour
    if count is not None:
        raise MoveError("A number of pyramids needs a size after it, as in '2L'.")
    read: list[tuple[int, int, str | None]] = []
    for group in groups:
        if group.size is None:
            raise MoveError("Each pyramid needs a size: L (large), M (medium) or S (small), as in 'L-red'.")
        read.append((group.count, group.size, group.colour))
    return tuple(read)


def _read_pile(text: str, have: Pile, verb: str, where: str = "your active area") -> Pile:
    """The pyramids ``text`` names out of ``have``.  A size without a colour is
    accepted when ``have`` leaves no choice of colours for it."""
    groups = _groups(text)
    named = [(colour, size) for n, size, colour in groups if colour for _ in range(n)]
    try:  # (taken out one by one, not two Counters compared: a replay reads every bid again)
        rest = _without(have, named)
    except ValueError:  # (one of them is not there: which, by the Counters)
        missing = Counter(named) - Counter(have)
        raise MoveError(
            f"There is no {pile_text(pile(missing.elements()))} in {where} to {verb}; it holds {pile_text(have)}."
        ) from None
    if all(colour for _, _, colour in groups):
        return pile(named)  # (every pyramid named: nothing left to choose)
    left, chosen = list(rest), list(named)
    for n, size, colour in groups:
        if colour:
            continue
        colours = sorted({c for c, s in left if s == size}, key=lambda c: _order((c, size)))
        available = [p for p in left if p[1] == size]
        if len(available) < n:
            raise MoveError(
                f"You asked for {n} {SIZE_NAME[size]} but {where} has only {len(available)} "
                f"more: it holds {pile_text(have)}."
            )
        if len(colours) > 1 and len(available) > n:
            raise MoveError(
                f"Say which colour of {SIZE_NAME[size]} pyramid to {verb}: {where} holds "
                f"{', '.join(f'{SIZE_LETTER[size]}-{c}' for c in colours)}."
            )
        for pyramid in available[:n]:
            left.remove(pyramid)
            chosen.append(pyramid)
    return pile(chosen)


def _read_tree(text: str, active: Pile, dead: Pile, earned: int) -> Pile:
    """A tree named by its pyramids, or by one colour ("score tree red")."""
    words = text.lower().split()
    if len(words) == 1 and words[0] in _COLOUR_WORDS:
        text = " ".join(f"{SIZE_LETTER[size]}-{_COLOUR_WORDS[words[0]]}" for size in SIZES)
    trees = _trees(active)
    if not trees:
        raise MoveError("You have no tree (a large, a medium and a small) in your active area.")
    if not text.strip():
        if len(trees) == 1:
            return trees[0]
        take = _choices(dead, earned)[0]
        example = f"score tree {pile_text(trees[0])}" + (f" take {pile_text(take)}" if take else "")
        raise MoveError(f"Say which tree, for example '{example}'; your active area holds {pile_text(active)}.")
    tree = _read_pile(text, active, "score")
    if sorted(size for _, size in tree) != [1, 2, 3]:
        raise MoveError("A tree is one large, one medium and one small pyramid.")
    return tree
