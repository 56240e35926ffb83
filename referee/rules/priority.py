"""Auction, with priority cards (Curufea), for 3 to 8 seats, by mail.

Quotes in comments are from docs/rules/priority-auction.txt; the rulings
(P1, P2, ...) are in docs/games/priority-auction.md.

Each seat has a secret representative colour and a board with one space per
colour in play.  A round auctions one item in turns: play a priority card
face down on an empty colour space of your own board, move one of your
cards to another empty space, or pass for the rest of the round.  When all
have passed, each colour's cards are totalled over every board; the single
lowest total wins the item for that colour's owner, whose colour is then
revealed.  Hidden: who holds which colour, and the values of cards on the
boards until the round's tally.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from referee.rules import reading
from referee.rules.api import Game, MoveError, OptionError, Phase, Result, escaped, replace
from referee.rules.rng import Rng

# P1: the colours in play are the first n of these, one per seat.
COLOURS = ("red", "blue", "green", "yellow", "orange", "purple", "white", "black")

# P1: the item deck, from the text's table (it wins over "as many cards as
# there are players"): one round per item.
ITEMS = {
    3: (1, 1, 1, 2),
    4: (1, 1, 1, 2, 2, 3),
    5: (1, 1, 2, 2, 2, 3, 3, 5),
    6: (1, 1, 2, 2, 3, 3, 3, 5, 5, 8),
    7: (1, 1, 2, 2, 3, 3, 5, 5, 5, 8, 8, 13),
    8: (1, 1, 2, 2, 3, 3, 5, 5, 8, 8, 8, 13, 13, 21),
}

EMPTY = 0  # a colour space without a card (cards are 1..n)

# A move is a tuple tagged by its verb: ("play", card, colour),
# ("move", from_colour, to_colour), ("pass",).  A Literal verb, as Bluff
# Auction's: mypy checks its spelling wherever a move is built or read.
Verb = Literal["play", "move", "pass"]
Move = tuple[Verb, *tuple[Any, ...]]

_NUMBERS = {word: n for word, n in reading.NUMBER_WORDS.items() if n <= 8}  # the cards of 8 players at most
_FILLER = {
    "on",
    "onto",
    "to",
    "from",
    "card",
    "my",
    "a",
    "the",
    "priority",
    "colour",
    "color",
    "space",
    "of",
    "it",
    "into",
    "in",
    "at",
    "for",
    "rest",
    "round",
    "this",
    "remainder",
    "i",
    "ll",
    "will",
    "please",
    "then",
    "now",
    "turn",
    "ok",
    "okay",
    "thanks",
    "thank",
    "you",
    "time",
}
_PLAY_VERBS = {"play", "put", "place", "lay"}
_WORD = re.compile(r"[a-z]+|[0-9]+")


@dataclass(frozen=True)
class PriorityState:
    colours: tuple[str, ...]  # seat -> its representative colour (secret, P2)
    boards: tuple[tuple[int, ...], ...]  # seat -> the card on each colour space, in play order; EMPTY if none
    deck: tuple[int, ...]  # items still to come, sorted (the composition is public, the order unknown)
    item: int | None  # the item on offer this round; None once the game is over
    round: int  # 1, 2, ...
    rounds: int  # one per item
    dealer: int  # P4
    first: int  # who opened this round
    turn: int | None  # who moves now
    turn_number: int  # turns taken this round (phases), for the labels
    passed: tuple[int, ...]  # seats that passed this round, in order
    taken: tuple[int, ...]  # plays and moves per seat this round (P7)
    turn_limit: int  # plays and moves a seat may make in one round (P7)
    won: tuple[tuple[int, ...], ...]  # items per seat, in the order won
    discarded: tuple[int, ...]  # items no one won (a tie for lowest)
    revealed: frozenset[int]  # seats whose colour everyone knows (they won an item)
    bots: frozenset[int]

    @property
    def seats(self) -> int:
        return len(self.colours)

    @property
    def in_play(self) -> tuple[str, ...]:
        """The colours of this game, in board order."""
        return COLOURS[: len(self.colours)]

    @property
    def over(self) -> bool:
        return self.item is None

    @property
    def mover(self) -> int:
        """``turn`` while a seat is sure to hold it: the game runs and
        someone has not passed this round."""
        if self.turn is None:
            raise ValueError("no seat holds the turn: " + ("the game is over" if self.over else "all have passed"))
        return self.turn

    @property
    def on_offer(self) -> int:
        """``item`` while the game runs."""
        if self.item is None:
            raise ValueError("the game is over: no item is on offer")
        return self.item

    def hand(self, seat: int) -> tuple[int, ...]:
        """The seat's priority cards not on its board."""
        return tuple(card for card in range(1, self.seats + 1) if card not in self.boards[seat])

    def owner(self, colour: str) -> int:
        return self.colours.index(colour)

    def right_of(self, seat: int) -> int:
        """P3: turns go clockwise, to the left, so the right is the seat before."""
        return (seat - 1) % self.seats


# -- a turn in words (events/priority.txt.j2's macros call these) --------------------
# Python functions, not macros: the site says a turn's headline in its feed and
# its move in its table of turns, thousands of turns a full render, and a macro
# call costs more than the words (issue 36).  tests/unit/test_words36_render.py
# holds them to the macros they replaced.  Plain text: the macros escape it for
# a page.


def move_said(event: Mapping[str, Any]) -> str:
    """The mover's move, a turn's first event: "plays on red", "moves red
    to blue", "passes"."""
    if event["type"] == "play":
        return f"plays on {event['colour']}"
    if event["type"] == "move":
        return f"moves {event['from']} to {event['to']}"
    return "passes"


def tally_said(event: Mapping[str, Any], names: list[str]) -> str:
    """A round's tally: "ann (red) wins 5", "tie, 5 discarded"."""
    if event["winner"] is not None:
        return f"{names[event['winner']]} ({event['colour']}) wins {event['item']}"
    return f"tie, {event['item']} discarded"


def headline_said(round_: Mapping[str, Any], names: list[str]) -> str:
    """A turn in one line, after its label: the mover's move, the tally if
    the round ended, and whether the game did ("ann plays on red; bob
    (blue) wins 5; game over")."""
    events = round_["events"]
    said = [f"{names[next(iter(round_['how']))]} {move_said(events[0])}"]
    said += [tally_said(e, names) for e in events if e["type"] == "tally"]
    said += ["game over" for e in events if e["type"] == "over"]
    return "; ".join(said)


def turns_html(
    rounds: list[dict[str, Any]], names: list[str], move: Callable[..., str], tally: Callable[..., str]
) -> str:
    """The rows of the site's table of turns (site/priority/rounds.html.j2
    marks them safe): a row a turn, under a row naming its round; each says
    the turn's number, its mover's move (worded by ``move``,
    events/priority.txt.j2's macro, with html=true, so a keeper's words
    stay) and how it was made, and what followed it.  Escaped here as Jinja
    would escape it.  A Python function, not the template's loop: the table,
    a row a turn, was a fifth of a full render (issue 36);
    tests/unit/test_words36_render.py holds it to that loop."""
    rows, group = [], ""
    for round_ in rounds:
        part = round_["label"].split(", ")
        if part[0] != group:
            group = part[0]
            rows.append(f'<tr><th scope="rowgroup" colspan="3">{_html(group)}</th></tr>\n')
        mover, how = next(iter(round_["how"].items()))
        made = _HOW_MADE.get(how, "")
        rows.append(
            f'<tr id="phase-{_html(round_["number"])}"><th scope="row" class="num" data-label="Turn">'
            f"{_html(part[1].replace('turn ', ''))}</th>\n"
            f'<td class="wrap">{_html(names[mover])}: {move(round_["events"][0], html=True)}{made}</td>\n'
            f'<td class="wrap line">{followed_html(round_["events"], names, tally)}</td></tr>\n'
        )
    return "".join(rows)


_HOW_MADE = {  # a move not made by mail, marked after it
    "random": '<abbr title="random: none by the deadline">*</abbr>',
    "bot": '<abbr title="a bot\'s random move">~</abbr>',
}


def followed_html(events: list[dict[str, Any]], names: list[str], tally: Callable[..., str]) -> str:
    """What followed a turn's move, its events after the first: a pass
    forced on a seat, a round's tally (worded by ``tally``,
    events/priority.txt.j2's macro, with html=true), the next round's item,
    the game's end."""
    return "; ".join(_followed_html(event, names, tally) for event in events[1:])


def _followed_html(e: dict[str, Any], names: list[str], tally: Callable[..., str]) -> str:
    kind = e["type"]
    if kind == "pass":
        return f"{_html(names[e['seat']])} passes ({'turn limit' if e['why'] == 'turn limit' else 'board full'})"
    if kind == "tally":
        said = str(tally(e, names, html=True))
        if e["winner"] is not None:
            said = f'<span class="win">{said}</span>'
        return f'<a href="#tally-{_html(e["round"])}">tally</a>: {said}'
    if kind == "item":
        return f"round {_html(e['round'])}: item {_html(e['item'])}, {_html(names[e['first']])} opens"
    if kind == "over":
        return "game over"
    return ""  # (a type named nowhere here shows nothing)


_html = escaped  # (api.escaped: as the templates escape)


class PriorityAuction(Game[PriorityState, Move]):
    kind = "priority"
    title = "Auction (priority cards)"
    min_seats, max_seats = 3, 8
    move_word = "play"
    move_words = ("play", "put", "place", "lay", "move", "pass")
    example = "play 3 on red"
    filters = {
        "priority_move": move_said,
        "priority_tally": tally_said,
        "priority_headline": headline_said,
        "priority_turns_html": turns_html,
    }
    options = {"turn_limit": 0}  # P7: 0 is twice the number of players
    option_help: Mapping[str, str] = {
        "turn_limit": "the most plays and moves each player makes in a round, 1 to 100; 0: twice the number of players (P7)",
    }
    rule_text = "docs/rules/priority-auction.txt"
    rulings_page = "docs/games/priority-auction.md"
    moves_public = False  # P17: a card's value stays face down until its round's tally

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        options = super().check_options(options)
        try:
            limit = int(options["turn_limit"])
        except (TypeError, ValueError):
            raise OptionError("turn_limit must be a whole number (0: twice the number of players)") from None
        if not 0 <= limit <= 100:
            raise OptionError("turn_limit must be between 1 and 100, or 0 for twice the number of players")
        options["turn_limit"] = limit
        return options

    def looks_like_move(self, line: str) -> bool:
        words = [w for w in _WORD.findall(reading.clean(line).lower()) if w not in ("i", "ll", "ok", "okay")]
        return bool(words) and (
            words[0] in self.move_words or words[0] in COLOURS or words[0].isdigit() or words[0] in _NUMBERS
        )

    # -- setting up --------------------------------------------------------------

    def setup(self, seats: int, rng: Rng, options: Mapping[str, Any]) -> PriorityState:
        if seats not in ITEMS:
            raise OptionError("Auction (priority cards) is for 3 to 8 players")
        options = self.check_options(options)
        colours = tuple(rng.shuffled(COLOURS[:seats]))  # P2: the representative deck, one each
        dealer = rng.randbelow(seats)  # P4
        deck = list(ITEMS[seats])
        first_item = rng.choice([v for v in deck if v != max(deck)])  # P5: never the highest first
        deck.remove(first_item)
        return PriorityState(
            colours=colours,
            boards=((EMPTY,) * seats,) * seats,
            deck=tuple(deck),
            item=first_item,
            round=1,
            rounds=len(ITEMS[seats]),
            dealer=dealer,
            first=(dealer + 1) % seats,
            turn=(dealer + 1) % seats,
            turn_number=0,
            passed=(),
            taken=(0,) * seats,
            turn_limit=options["turn_limit"] or 2 * seats,
            won=((),) * seats,
            discarded=(),
            revealed=frozenset(),
            bots=frozenset(),
        )

    # -- what is asked now -------------------------------------------------------

    def phase(self, state: PriorityState) -> Phase | None:
        if state.over:
            return None
        return Phase(
            f"Round {state.round} of {state.rounds}, turn {state.turn_number + 1}", (state.mover,), sealed=False
        )

    def legal_moves(self, state: PriorityState, seat: int) -> list[Move]:
        if state.over or seat != state.turn:
            return []
        return _actions(state, seat) + [("pass",)]

    def parse_move(self, state: PriorityState, seat: int, text: str) -> Move:
        words = _words(text)
        if not words:
            raise MoveError(self._forms(state, seat))
        if "and" in words:
            raise MoveError("One move a turn: play a card, move a card, or pass.")
        verb = words[0]
        if verb == "pass" and len(words) == 1:
            if not reading.bare_move(text, "pass"):  # "pass it on"
                raise MoveError("'pass' is a move by itself: nothing after it.")
            return ("pass",)
        if state.taken[seat] >= state.turn_limit:
            raise MoveError(
                f"You have made all {state.turn_limit} of your plays and moves this round, the "
                "most a round allows (ruling P7): you pass when your turn comes."
            )
        if verb == "move":
            return self._parse_shift(state, seat, words[1:])
        if verb in _PLAY_VERBS:
            return self._parse_play(state, seat, words[1:])
        if _number(verb) is not None or verb in state.in_play:  # "3 red", "red 3"
            return self._parse_play(state, seat, words)
        raise MoveError(self._forms(state, seat))

    def _forms(self, state: PriorityState, seat: int) -> str:
        return (
            f"A move is 'play 3 on {state.in_play[0]}' (a card from your hand onto an empty colour "
            f"of your board), 'move {state.in_play[0]} to {state.in_play[1]}' (one of your cards to "
            "an empty colour), or 'pass' (for the rest of this round)."
        )

    def _parse_play(self, state: PriorityState, seat: int, words: tuple[str, ...]) -> Move:
        numbers = [n for w in words if (n := _number(w)) is not None]
        colours = [_colour(state, w) for w in words if _number(w) is None]
        if len(numbers) != 1 or len(colours) != 1:
            raise MoveError(
                f"Say one card and one colour, as in 'play {state.hand(seat)[0] if state.hand(seat) else 1} "
                f"on {state.in_play[0]}'."
            )
        card, colour = numbers[0], colours[0]
        board = state.boards[seat]
        if not 1 <= card <= state.seats:
            raise MoveError(f"Your priority cards are 1 to {state.seats}.")
        if card in board:
            where = state.in_play[board.index(card)]
            raise MoveError(
                f"Your {card} is on {where} already; to move it, 'move {where} to ...'. "
                f"In your hand: {_listed(state.hand(seat))}."
            )
        self._check_empty(state, seat, colour)
        return ("play", card, colour)

    def _parse_shift(self, state: PriorityState, seat: int, words: tuple[str, ...]) -> Move:
        board = state.boards[seat]
        numbers = [n for w in words if (n := _number(w)) is not None]
        colours = [_colour(state, w) for w in words if _number(w) is None]
        if len(numbers) == 1 and len(colours) == 1:  # "move 3 to blue"
            card = numbers[0]
            if card not in board:
                raise MoveError(f"Your {card} is not on your board; cards there: {_board_text(state, seat)}.")
            colours = [state.in_play[board.index(card)], colours[0]]
        elif len(numbers) == 1 and len(colours) == 2:  # "move 3 from red to blue"
            if board[state.in_play.index(colours[0])] != numbers[0]:
                raise MoveError(
                    f"Your {numbers[0]} is not on {colours[0]}; cards on your board: {_board_text(state, seat)}."
                )
        elif numbers or len(colours) != 2:
            raise MoveError(
                f"Say which colour to move from and which to move to, as in "
                f"'move {state.in_play[0]} to {state.in_play[1]}'."
            )
        source, target = colours
        if board[state.in_play.index(source)] == EMPTY:
            raise MoveError(f"You have no card on {source}; cards on your board: {_board_text(state, seat)}.")
        if source == target:
            raise MoveError(f"Your card is on {source} already: move it to another colour.")
        self._check_empty(state, seat, target)
        return ("move", source, target)

    def _check_empty(self, state: PriorityState, seat: int, colour: str) -> None:
        board = state.boards[seat]
        if board[state.in_play.index(colour)] != EMPTY:
            empty = [c for c, card in zip(state.in_play, board, strict=True) if card == EMPTY]
            raise MoveError(
                f"Your {colour} space holds a card already (one card a colour: ruling P6); "
                f"your empty colours: {', '.join(empty) or 'none'}."
            )

    def move_text(self, move: Move) -> str:
        if move[0] == "play":
            return f"play {move[1]} on {move[2]}"
        if move[0] == "move":
            return f"move {move[1]} to {move[2]}"
        return "pass"

    # -- resolving ---------------------------------------------------------------

    def resolve(
        self, state: PriorityState, moves: Mapping[int, Move], rng: Rng
    ) -> tuple[PriorityState, list[dict[str, Any]]]:
        seat = state.mover
        move = moves[seat]
        if move[0] == "pass":
            state = replace(state, turn_number=state.turn_number + 1, passed=(*state.passed, seat))
            event = {"type": "pass", "seat": seat, "forced": False}
        else:
            state = _act(state, seat, move, turn_number=state.turn_number + 1)
            if move[0] == "play":
                event = {"type": "play", "seat": seat, "colour": move[2]}  # never the card (P17)
            else:
                event = {"type": "move", "seat": seat, "from": move[1], "to": move[2]}
        state, events = _next_turn(state, seat)
        events = [event, *events]
        if state.turn is None:  # everyone has passed
            state, more = _tally(state, rng)
            events += more
            if state.over:
                events.append(self._final_event(state))
        return state, events

    def _final_event(self, state: PriorityState) -> dict[str, Any]:
        result = self.result(state)
        return {"type": "over", "colours": list(state.colours), "winner": result.winner if result else None}

    # -- what players see -----------------------------------------------------------

    def view(self, state: PriorityState, seat: int | None) -> dict[str, Any]:
        """The table (P8): whose spaces hold a card, never its value; passes;
        the item and the items to come; items won; revealed colours."""
        public = {
            "over": state.over,
            "round": state.round,
            "rounds": state.rounds,
            "item": state.item,
            "remaining": list(state.deck),
            "discarded": list(state.discarded),
            "colours": list(state.in_play),
            "dealer": state.dealer,
            "first": state.first,
            "turn": state.turn,
            "turn_number": state.turn_number,
            "passed": list(state.passed),
            "turn_limit": state.turn_limit,
            "taken": list(state.taken),
            "filled": [
                [c for c, card in zip(state.in_play, board, strict=True) if card != EMPTY] for board in state.boards
            ],
            "in_hand": [len(state.hand(s)) for s in range(state.seats)],
            "won": [list(items) for items in state.won],
            "scores": list(_scores(state)),
            "known": _known(state, None),
        }
        if seat is None:
            return public
        known = _known(state, seat)
        private = {
            **public,
            "seat": seat,
            "colour": state.colours[seat],
            "right": state.right_of(seat),
            "right_colour": state.colours[state.right_of(seat)],
            "known": known,
            "deduced": [s for s in range(state.seats) if known[s] and not _told(state, seat, s)],
            "hand": list(state.hand(seat)),
            "board": {c: card for c, card in zip(state.in_play, state.boards[seat], strict=True) if card},
        }
        if seat == state.turn:
            legal = self.legal_moves(state, seat)
            shown = legal[:2] + legal[-2:] if len(legal) > 4 else legal
            private.update(legal_count=len(legal), examples=[self.move_text(m) for m in shown])
        return private

    def private_news(self, before: PriorityState | None, after: PriorityState, seat: int) -> dict[str, Any] | None:
        """At the start, a seat's own colour and its right-hand neighbour's
        (P3), and any colour that follows from them (P13); later, a colour a
        seat can now work out from its own knowledge and a reveal."""
        if before is None:
            view = self.view(after, seat)
            return {
                "colour": view["colour"],
                "right": view["right"],
                "right_colour": view["right_colour"],
                "deduced": [{"seat": s, "colour": view["known"][s]} for s in view["deduced"]],
            }
        had, has = _known(before, seat), _known(after, seat)
        new = [s for s in range(after.seats) if has[s] and not had[s] and not _known(after, None)[s]]
        return {"deduced": [{"seat": s, "colour": has[s]} for s in new]} if new else None

    def result(self, state: PriorityState) -> Result | None:
        if not state.over:
            return None
        scores = _scores(state)
        # P12: bots are not players when the winner is decided; a total two
        # players share is out, and the highest total left wins.
        people = [seat for seat in range(state.seats) if seat not in state.bots]
        totals = Counter(scores[seat] for seat in people)
        single = [seat for seat in people if totals[scores[seat]] == 1]
        winner = max(single, key=lambda seat: scores[seat]) if single else None
        return Result(scores=scores, winner=winner)


# -- turns (pure helpers) ---------------------------------------------------------------


def _actions(state: PriorityState, seat: int) -> list[Move]:
    """A seat's plays and moves (not pass), in a fixed order; none at its turn limit (P7)."""
    if state.taken[seat] >= state.turn_limit:
        return []
    board = state.boards[seat]
    empty = [c for c, card in zip(state.in_play, board, strict=True) if card == EMPTY]
    held = [c for c, card in zip(state.in_play, board, strict=True) if card != EMPTY]
    plays: list[Move] = [("play", card, colour) for card in state.hand(seat) for colour in empty]
    shifts: list[Move] = [("move", source, target) for source in held for target in empty]
    return plays + shifts


def _can_act(state: PriorityState, seat: int) -> bool:
    """``bool(_actions(state, seat))`` without listing them (every turn asks):
    a play needs a card in hand and an empty space, a move a card on the
    board and an empty space."""
    if state.taken[seat] >= state.turn_limit:
        return False
    board = state.boards[seat]
    return EMPTY in board and (any(card != EMPTY for card in board) or bool(state.hand(seat)))


def _act(state: PriorityState, seat: int, move: Move, turn_number: int) -> PriorityState:
    """The state after ``seat``'s play or move, as turn ``turn_number`` of the round."""
    board = list(state.boards[seat])
    if move[0] == "play":
        board[state.in_play.index(move[2])] = move[1]
    else:
        source, target = state.in_play.index(move[1]), state.in_play.index(move[2])
        board[target], board[source] = board[source], EMPTY
    boards = list(state.boards)
    boards[seat] = tuple(board)
    taken = list(state.taken)
    taken[seat] += 1
    return replace(state, boards=tuple(boards), taken=tuple(taken), turn_number=turn_number)


def _next_turn(state: PriorityState, after: int) -> tuple[PriorityState, list[dict[str, Any]]]:
    """The next seat clockwise that has not passed; a seat whose only move is
    pass (at its turn limit, or a full board and an empty hand) passes at
    once (P7).  ``turn`` is None when everyone has passed."""
    events: list[dict[str, Any]] = []
    seats = state.seats
    for step in range(1, seats + 1):
        seat = (after + step) % seats
        if seat in state.passed:
            continue
        if _can_act(state, seat):
            return replace(state, turn=seat), events
        why = "turn limit" if state.taken[seat] >= state.turn_limit else "board full"
        state = replace(state, passed=(*state.passed, seat))
        events.append({"type": "pass", "seat": seat, "forced": True, "why": why})
    return replace(state, turn=None), events


def _tally(state: PriorityState, rng: Rng) -> tuple[PriorityState, list[dict[str, Any]]]:
    """The round's end: every card is shown (P9), each colour totalled (a
    colour without cards counts 0: P10); a single lowest total wins the item
    for that colour's owner, whose colour is revealed; a tie discards it (P11).
    Then the cards go back to hand and the next item is drawn (P5)."""
    totals = {c: sum(board[i] for board in state.boards) for i, c in enumerate(state.in_play)}
    low = min(totals.values())
    lowest = [c for c in state.in_play if totals[c] == low]
    winner = state.owner(lowest[0]) if len(lowest) == 1 else None
    event = {
        "type": "tally",
        "round": state.round,
        "item": state.item,
        "boards": [{c: card for c, card in zip(state.in_play, board, strict=True) if card} for board in state.boards],
        "totals": totals,
        "lowest": lowest,
        "winner": winner,
        "colour": lowest[0] if winner is not None else None,
    }
    won, discarded, revealed = list(state.won), state.discarded, state.revealed
    item = state.on_offer
    if winner is not None:
        won[winner] = (*won[winner], item)
        revealed = revealed | {winner}
    else:
        discarded = (*discarded, item)
    event["scores"] = [sum(items) for items in won]  # only a tally changes them: the site charts these
    state = replace(
        state,
        won=tuple(won),
        discarded=discarded,
        revealed=revealed,
        boards=((EMPTY,) * state.seats,) * state.seats,
        passed=(),
        taken=(0,) * state.seats,
        turn_number=0,
    )
    if not state.deck:
        return replace(state, item=None, turn=None), [event]
    deck = list(state.deck)
    item = rng.choice(deck)
    deck.remove(item)
    first = (state.first + 1) % state.seats  # "the player to the left of the last round's first player"
    state = replace(state, deck=tuple(deck), item=item, round=state.round + 1, first=first, turn=first)
    return state, [event, {"type": "item", "round": state.round, "item": item, "first": first}]


# -- knowledge and scores ------------------------------------------------------------------


def _told(state: PriorityState, seat: int | None, other: int) -> bool:
    """Whether ``seat`` (None: everyone) was shown ``other``'s colour: its own,
    its right-hand neighbour's (P3), one revealed by winning an item, or any
    once the game is over (its record is then published whole)."""
    return state.over or other in state.revealed or (seat is not None and other in (seat, state.right_of(seat)))


def _known(state: PriorityState, seat: int | None) -> list[str | None]:
    """Each seat's colour as ``seat`` (None: everyone) knows it, or None;
    the last unknown colour follows from the others (P13)."""
    known = [state.colours[s] if _told(state, seat, s) else None for s in range(state.seats)]
    unknown = [s for s in range(state.seats) if known[s] is None]
    if len(unknown) == 1:
        known[unknown[0]] = state.colours[unknown[0]]
    return known


def _scores(state: PriorityState) -> tuple[int, ...]:
    return tuple(sum(items) for items in state.won)


# -- reading moves ---------------------------------------------------------------------------


# A replay reads every move again, and the same few texts ("play 3 on red",
# "pass") come back in every game.  _words is a pure function of a string,
# and its answer a tuple: a kept answer cannot go stale.
@functools.lru_cache(maxsize=4096)
def _words(text: str) -> tuple[str, ...]:
    """A move's words that may mean something (not the filler), lower case."""
    return tuple(w for w in _WORD.findall(text.lower()) if w not in _FILLER)


def _number(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return _NUMBERS.get(word)


def _colour(state: PriorityState, word: str) -> str:
    """A colour of this game named by its name or a clear start of it ("yel")."""
    if word in state.in_play:
        return word
    matches = [c for c in state.in_play if len(word) >= 3 and c.startswith(word)]
    if len(matches) == 1:
        return matches[0]
    raise MoveError(f"I do not know the colour '{word[:20]}'; the colours of this game are {', '.join(state.in_play)}.")


def _listed(cards: tuple[int, ...]) -> str:
    return ", ".join(map(str, cards)) or "nothing"


def _board_text(state: PriorityState, seat: int) -> str:
    cards = [f"{card} on {c}" for c, card in zip(state.in_play, state.boards[seat], strict=True) if card]
    return ", ".join(cards) or "none"
