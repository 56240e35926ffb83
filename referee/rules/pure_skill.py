"""Game of Pure Skill (Ackanomic rule 102), a GOPS for exactly three seats.

Rule numbers in comments refer to docs/rules/pure-skill.txt; the rulings
(R1, R2, ...) are in docs/games/pure-skill.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from referee.rules import reading
from referee.rules.api import Game, MoveError, OptionError, Phase, Press, Result, replace
from referee.rules.rng import Rng

ROUNDS = 13
CARDS = tuple(range(1, 14))  # 4b: Ace is 1 ... King is 13
SUITS = ("hearts", "diamonds", "clubs")  # R1: the players' packs, in seating order

_SHORT = {1: "A", 11: "J", 12: "Q", 13: "K"}
_LONG = {1: "Ace", 11: "Jack", 12: "Queen", 13: "King"}
_WORDS = {
    "a": 1,
    "ace": 1,
    "j": 11,
    "jack": 11,
    "q": 12,
    "queen": 12,
    "k": 13,
    "king": 13,
    **reading.NUMBER_WORDS,
    "thirteen": 13,
}
_MOVE = re.compile(r"^\s*bid\b\s*(?P<card>[^\s.]+)?(?:\s+of\s+(?P<suit>\w+))?\s*\.?\s*$", re.I)


def card_name(value: int) -> str:
    """A card's short name: A, 2 ... 10, J, Q, K."""
    return _SHORT.get(value, str(value))


def card_long(value: int) -> str:
    """A card's long name: Ace, 2 ... 10, Jack, Queen, King."""
    return _LONG.get(value, str(value))


def card_value(word: str) -> int | None:
    """The value of a card named any of the accepted ways, or None."""
    word = word.lower()
    if word.isascii() and word.isdigit() and 1 <= int(word) <= 13:
        return int(word)
    return _WORDS.get(word)


@dataclass(frozen=True)
class PureSkillState:
    round: int  # the round being played, 1..13; 14 once the game is over
    prize: int | None  # the spade on offer this round (4d)
    pot: tuple[int, ...]  # spades carried over from tied rounds (option ties="carry")
    spades: frozenset[int]  # the referee's pack, not yet drawn
    hands: tuple[frozenset[int], ...]  # each seat's pack of unplayed cards
    takes: tuple[tuple[int, ...], ...]  # each seat's take pile, in the order won
    discarded_prizes: tuple[int, ...]  # spades removed from play by ties (4f)
    bots: frozenset[int]  # seats played by a random bot (rule 8)
    ties: str  # "discard" (4f) or "carry"

    @property
    def scores(self) -> tuple[int, ...]:
        return tuple(sum(take) for take in self.takes)

    @property
    def on_offer(self) -> tuple[int, ...]:
        """The spades the winner of this round takes: the prize and any carried pot."""
        return (self.prize, *self.pot) if self.prize is not None else ()


class PureSkill(Game[PureSkillState, int]):
    kind = "pure-skill"
    title = "Game of Pure Skill"
    min_seats = max_seats = 3  # rule 2
    move_word = "bid"
    bots_replaceable = False  # rule 8: a bot plays the seat of a player who left, and is no player
    press = Press.NONE  # rule 7: no collusion, so the referee relays no table talk
    press_rule = 'rule 7: "Players may not discuss or collude on strategy or bids."'
    synonyms = {"play": "bid"}  # "play the king"
    options = {"ties": "discard"}
    option_help: Mapping[str, str] = {
        "ties": "what a tied highest bid does with the prize: discard (the rule text) or carry (to the next round)",
    }
    rule_text = "docs/rules/pure-skill.txt"
    rulings_page = "docs/games/pure-skill.md"
    filters = {"card": card_name, "card_long": card_long}

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        options = super().check_options(options)
        if options["ties"] not in ("discard", "carry"):
            raise OptionError("ties must be 'discard' (the rule text) or 'carry'")
        return options

    def setup(self, seats: int, rng: Rng, options: Mapping[str, Any]) -> PureSkillState:
        if seats != 3:
            raise OptionError("Game of Pure Skill has exactly 3 players (rule 2)")
        options = self.check_options(options)
        spades = frozenset(CARDS)  # 4a: the spades are the referee's
        prize = rng.choice(sorted(spades))  # 4d: round 1's prize
        return PureSkillState(
            round=1,
            prize=prize,
            pot=(),
            spades=spades - {prize},
            hands=tuple(frozenset(CARDS) for _ in range(seats)),  # 4a: one suit each
            takes=tuple(() for _ in range(seats)),
            discarded_prizes=(),
            bots=frozenset(),
            ties=options["ties"],
        )

    def phase(self, state: PureSkillState) -> Phase | None:
        if state.round > ROUNDS:
            return None
        # 4e: every seat bids at once and in secret.
        return Phase(
            label=f"Round {state.round} of {ROUNDS}",
            movers=tuple(range(len(state.hands))),
            sealed=True,
        )

    def legal_moves(self, state: PureSkillState, seat: int) -> list[int]:
        if state.round > ROUNDS:
            return []
        return sorted(state.hands[seat])

    def parse_move(self, state: PureSkillState, seat: int, text: str) -> int:
        if state.round > ROUNDS:
            raise MoveError("The game is over; there is nothing left to bid on.")
        match = _MOVE.match(text)
        if not match:
            raise MoveError("A bid is the word 'bid' and one of your cards, for example 'bid 7' or 'bid K'.")
        word, suit = match["card"], match["suit"]
        if word is None:
            raise MoveError("Which card? Name one after 'bid', for example 'bid 7' or 'bid K'.")
        value = card_value(word)
        if value is None:
            raise MoveError(
                f"'{word}' is not a card. Cards are A (or ace, 1), 2 to 10, "
                "J (jack, 11), Q (queen, 12) and K (king, 13)."
            )
        own = SUITS[seat]
        if suit is not None and suit.lower() not in (own, own[:-1]):
            raise MoveError(f"You bid from your own pack, the {own}; the {suit} are not yours.")
        if value not in state.hands[seat]:
            hand = " ".join(card_name(v) for v in sorted(state.hands[seat]))
            raise MoveError(
                f"You no longer hold the {card_long(value)} of {own}: you bid it in an "
                f"earlier round. Your cards: {hand}."
            )
        return value

    def move_text(self, move: int) -> str:
        return f"bid {card_name(move)}"

    def resolve(
        self, state: PureSkillState, moves: Mapping[int, int], rng: Rng
    ) -> tuple[PureSkillState, list[dict[str, Any]]]:
        seats = range(len(state.hands))
        bids = tuple(moves[seat] for seat in seats)
        for seat in seats:
            if bids[seat] not in state.hands[seat]:
                raise MoveError(f"seat {seat} does not hold {bids[seat]}")
        top = max(bids)
        leaders = [seat for seat in seats if bids[seat] == top]
        on_offer = state.on_offer
        takes, discarded = list(state.takes), state.discarded_prizes
        pot: tuple[int, ...] = ()
        if len(leaders) == 1:  # 4f: a single highest bid takes the prize
            winner, outcome = leaders[0], "taken"
            takes[winner] += on_offer
        elif state.ties == "carry" and state.round < ROUNDS:  # R4: the variant
            winner, outcome, pot = None, "carried", on_offer
        else:  # 4f: no single highest bid, the prize is discarded
            winner, outcome = None, "discarded"
            discarded += on_offer
        next_round = state.round + 1
        prize, spades = None, state.spades
        if next_round <= ROUNDS:  # 4d: the next round's prize
            prize = rng.choice(sorted(spades))
            spades = spades - {prize}
        after = replace(
            state,
            round=next_round,
            prize=prize,
            pot=pot,
            spades=spades,
            hands=tuple(hand - {bid} for hand, bid in zip(state.hands, bids, strict=True)),  # 4f
            takes=tuple(takes),
            discarded_prizes=discarded,
        )
        event = {
            "type": "round",
            "round": state.round,
            "prize": state.prize,
            "pot": list(state.pot),
            "value": sum(on_offer),
            "bids": list(bids),
            "winner": winner,
            "outcome": outcome,
            "scores": list(after.scores),
            "next_prize": prize,
            "next_pot": list(pot),
        }
        return after, [event]

    def view(self, state: PureSkillState, seat: int | None) -> dict[str, Any]:
        public = {
            "round": min(state.round, ROUNDS),
            "rounds": ROUNDS,
            "over": state.round > ROUNDS,
            "prize": state.prize,
            "pot": list(state.pot),
            "value": sum(state.on_offer),
            "spades_left": sorted(state.spades),
            "scores": list(state.scores),
            "takes": [list(take) for take in state.takes],
            "cards_left": [len(hand) for hand in state.hands],
            # Every bid is shown when its round resolves, so the cards a seat has
            # not bid yet are the table's knowledge, not a secret of its own.
            "unbid": [sorted(hand) for hand in state.hands],
            "suits": list(SUITS),
            "bots": sorted(state.bots),
        }
        if seat is None:
            return public
        return {**public, "seat": seat, "suit": SUITS[seat], "hand": sorted(state.hands[seat])}

    def private_news(self, before: PureSkillState | None, after: PureSkillState, seat: int) -> dict[str, Any] | None:
        """The deal: each player learns their suit and hand when the game
        starts.  Later a hand changes only by its owner's own bids."""
        if before is not None:
            return None
        view = self.view(after, seat)
        return {"suit": view["suit"], "hand": view["hand"]}

    def result(self, state: PureSkillState) -> Result | None:
        if state.round <= ROUNDS:
            return None
        scores = state.scores
        # 4h and rule 8: bots are not players when the winner is decided (R2).
        players = [seat for seat in range(len(scores)) if seat not in state.bots]
        best = max((scores[seat] for seat in players), default=None)
        leaders = [seat for seat in players if scores[seat] == best]
        return Result(scores=scores, winner=leaders[0] if len(leaders) == 1 else None)
