"""High Card: an example game from a package of its own, played by the
referee as one of its five (docs/adding-a-game.md).

Each player is dealt a hand from one shuffled deck; each round every
player plays a card, sealed, and the highest card takes the trick.  The
rules are rules.txt beside this file; the rulings (H1, H2, ...) that
decide what they leave open are in rulings.md.  The package registers
the game through its entry point (pyproject.toml):

    [project.entry-points."referee.games"]
    high-card = "high_card:HighCard"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from referee.rules.api import Game, MoveError, OptionError, Phase, Result
from referee.rules.rng import Rng

RANKS = "23456789TJQKA"  # low to high (rule 3)
SUITS = "CDHS"  # clubs, diamonds, hearts, spades: low to high (H2)
RANK_WORDS = {
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "T",
    "10": "T",
    "jack": "J",
    "queen": "Q",
    "king": "K",
    "ace": "A",
    "1": "A",
}
SUIT_WORDS = {
    "club": "C",
    "clubs": "C",
    "diamond": "D",
    "diamonds": "D",
    "heart": "H",
    "hearts": "H",
    "spade": "S",
    "spades": "S",
    "♣": "C",
    "♦": "D",
    "♥": "H",
    "♠": "S",
}
NAMES = {"T": "10", "J": "jack", "Q": "queen", "K": "king", "A": "ace"}
SUIT_NAMES = {"C": "clubs", "D": "diamonds", "H": "hearts", "S": "spades"}
_MOVE = re.compile(r"^\s*play\s+(?P<card>.*?)\s*$", re.IGNORECASE)


def card_order(card: str) -> tuple[int, int]:
    """How cards rank: by rank, then by suit (H2)."""
    return RANKS.index(card[0]), SUITS.index(card[1])


def card_long(card: str) -> str:
    """``QS`` -> "queen of spades"."""
    return f"{NAMES.get(card[0], card[0])} of {SUIT_NAMES[card[1]]}"


def read_card(text: str) -> str | None:
    """The card a player named ("QS", "10h", "queen of hearts", "q ♥"), or None."""
    spaced = re.sub(r"\bof\b", " ", text.lower())
    for symbol in "♣♦♥♠":
        spaced = spaced.replace(symbol, f" {symbol} ")
    words = spaced.split()
    if len(words) == 1 and len(words[0]) in (2, 3):  # "qs", "10h"
        words = [words[0][:-1], words[0][-1]]
    if len(words) != 2:
        return None
    rank = RANK_WORDS.get(words[0], words[0].upper())
    suit = SUIT_WORDS.get(words[1], words[1].upper())
    return rank + suit if len(rank) == 1 and rank in RANKS and len(suit) == 1 and suit in SUITS else None


@dataclass(frozen=True)
class HighCardState:
    hands: tuple[tuple[str, ...], ...]  # each seat's cards, low to high
    scores: tuple[int, ...]  # tricks taken
    round: int  # the round being played; rounds + 1 once over
    rounds: int
    bots: frozenset[int] = frozenset()


class HighCard(Game[HighCardState, str]):
    kind = "high-card"
    title = "High Card"
    min_seats, max_seats = 2, 5  # rule 1
    move_word = "play"
    example = "play QS"
    synonyms: Mapping[str, str] = {"bid": "play"}
    options: Mapping[str, Any] = {"hand": 5}
    option_help: Mapping[str, str] = {"hand": "cards dealt to each player, and so rounds played: 2 to 10 (H1)"}
    filters: Mapping[str, Callable[..., str]] = {
        "high_card": card_long
    }  # (filter names are shared by every game's templates: prefixed)
    rule_text = "rules.txt"
    rulings_page = "rulings.md"

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        options = super().check_options(options)
        try:
            options["hand"] = int(options["hand"])
        except (TypeError, ValueError):
            raise OptionError("hand must be a whole number from 2 to 10") from None
        if not 2 <= options["hand"] <= 10:
            raise OptionError("hand must be a whole number from 2 to 10")
        return options

    def setup(self, seats: int, rng: Rng, options: Mapping[str, Any]) -> HighCardState:
        if not self.min_seats <= seats <= self.max_seats:
            raise OptionError("High Card is for 2 to 5 players")
        size = self.check_options(options)["hand"]
        deck = rng.shuffled([rank + suit for suit in SUITS for rank in RANKS])  # rule 2
        hands = tuple(tuple(sorted(deck[seat * size : (seat + 1) * size], key=card_order)) for seat in range(seats))
        return HighCardState(hands=hands, scores=(0,) * seats, round=1, rounds=size)

    def phase(self, state: HighCardState) -> Phase | None:
        if state.round > state.rounds:
            return None
        return Phase(f"Round {state.round} of {state.rounds}", tuple(range(len(state.hands))), sealed=True)

    def legal_moves(self, state: HighCardState, seat: int) -> list[str]:
        return list(state.hands[seat]) if state.round <= state.rounds else []

    def parse_move(self, state: HighCardState, seat: int, text: str) -> str:
        match = _MOVE.match(text)
        if not match:
            raise MoveError("A move is 'play' and a card of your hand, for example 'play QS' or 'play 10 of hearts'.")
        card = read_card(match["card"])
        if card is None:
            raise MoveError(
                f"'{match['card']}' is not a card. Name its rank (2 to 10, J, Q, K, A) and suit "
                "(C, D, H, S), for example 'play QS' or 'play 10 of hearts'."
            )
        if card not in state.hands[seat]:
            raise MoveError(f"The {card_long(card)} is not in your hand; you hold {' '.join(state.hands[seat])}.")
        return card

    def move_text(self, move: str) -> str:
        return f"play {move}"

    def resolve(
        self, state: HighCardState, moves: Mapping[int, str], rng: Rng
    ) -> tuple[HighCardState, list[dict[str, Any]]]:
        seats = range(len(state.hands))
        winner = max(seats, key=lambda seat: card_order(moves[seat]))  # rule 4, H2: no two cards tie
        scores = tuple(score + (seat == winner) for seat, score in enumerate(state.scores))
        hands = tuple(tuple(card for card in hand if card != moves[seat]) for seat, hand in enumerate(state.hands))
        event = {
            "type": "trick",
            "round": state.round,
            "cards": [moves[seat] for seat in seats],
            "winner": winner,
            "scores": list(scores),
        }
        return replace(state, hands=hands, scores=scores, round=state.round + 1), [event]

    def view(self, state: HighCardState, seat: int | None) -> dict[str, Any]:
        public = {
            "round": min(state.round, state.rounds),
            "rounds": state.rounds,
            "over": state.round > state.rounds,
            "scores": list(state.scores),
            "cards_left": [len(hand) for hand in state.hands],
        }
        return public if seat is None else {**public, "hand": list(state.hands[seat])}

    def private_news(self, before: HighCardState | None, after: HighCardState, seat: int) -> dict[str, Any] | None:
        """The deal: each player's own hand, in its copy of the start mail."""
        return {"hand": self.view(after, seat)["hand"]} if before is None else None

    def result(self, state: HighCardState) -> Result | None:
        if state.round <= state.rounds:
            return None
        players = [seat for seat in range(len(state.scores)) if seat not in state.bots]
        best = max((state.scores[seat] for seat in players), default=None)
        leaders = [seat for seat in players if state.scores[seat] == best]
        return Result(scores=state.scores, winner=leaders[0] if len(leaders) == 1 else None)  # rule 5, H4
