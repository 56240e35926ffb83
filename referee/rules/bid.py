"""Bid! (Ian Schreiber and Jeb Havens, 2004), for 3 or 4 seats, by mail.

Quotes in comments are from docs/rules/bid-piecepack.txt; the rulings
(B1, B2, ...) are in docs/games/bid.md.  An auction is one sealed phase in
which every seat bids a tile (two under the Ace of Suns) or plays its pawn;
a tie for the highest bid opens a second sealed phase, the coin tie-break,
for the tied seats that hold coins.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from referee.rules.api import Game, MoveError, OptionError, Phase, Result, replace
from referee.rules.rng import Rng

TILES = (0, 1, 2, 3, 4, 5)  # null is 0, ace is 1 (B1: suits do not matter, values do)
DICE = ("suns", "moons", "crowns", "arms")  # the four suited dice, in the order they are rolled (B2)
GOAL = 100
BANK_PER_SEAT = 4  # 6 coins each in the box, 2 dealt to each player (B3)

_TILE_NAMES = {0: "null", 1: "ace"}
_COUNTS = {"no": 0, "zero": 0, "none": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_TILE_WORDS = {
    "null": 0,
    "n": 0,
    "blank": 0,
    "zero": 0,
    "ace": 1,
    "a": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
}
_MOVE = re.compile(r"^\s*(?P<verb>[a-z]+)\b(?P<rest>.*?)\s*\.?\s*$", re.I)

# A move is its verb and what it names: ("bid", (3,)), ("bid", (0, 5)),
# ("pawn", ()), ("coins", (2,)), ("reroll", ("moons",)).  A Literal verb, as
# Bluff Auction's: mypy checks its spelling wherever a move is built or read.
Verb = Literal["bid", "pawn", "coins", "reroll"]
Move = tuple[Verb, tuple]


def tile_name(value: int) -> str:
    """A tile as players write it: null, ace, 2 ... 5."""
    return _TILE_NAMES.get(value, str(value))


def tile_value(word: str) -> int | None:
    word = word.lower().strip(",")
    if word.isascii() and word.isdigit() and int(word) in TILES:
        return int(word)
    return _TILE_WORDS.get(word)


def die_name(index: int, face: int) -> str:
    """A die as the announcement shows it: "null", "4", "Ace of Moons"."""
    return f"Ace of {DICE[index].title()}" if face == 1 else tile_name(face)


@dataclass(frozen=True)
class BidState:
    hands: tuple[tuple[int, ...], ...]  # each seat's six tiles, sorted
    coins: tuple[int, ...]
    bank: int
    pawns: frozenset[int]  # seats that still hold their pawn
    scores: tuple[int, ...]
    dice: tuple[int, ...]  # the faces of the Suns, Moons, Crowns and Arms dice (1 = ace)
    auction: int  # 1, 2, ...: auctions completed + 1
    rolls: int  # how often this auction's dice were rolled (a pawn or reroll adds one)
    # 0 until a roll of this auction shows the Ace of Arms, then what it paid each seat of 16 or
    # more (5, or 10 under the Ace of Suns): once an auction (B10).  A pawn's roll opens a new
    # auction (0 again); a coin reroll does not (B15).
    arms_paid: int
    stage: str  # "bids", "coins" (the tie-break), or "over"
    bids: tuple[tuple[int, ...], ...]  # the bids revealed, while the tie-break runs
    tied: tuple[int, ...]  # the seats tied for the highest bid, while the tie-break runs
    winner: int | None  # once over
    bots: frozenset[int]
    reroll: str  # option: "pawn" (the rules) or "coin" (the variant)
    max_auctions: int  # option: B9, the game ends after this many auctions

    def ace(self, die: str) -> bool:
        return self.dice[DICE.index(die)] == 1

    @property
    def factor(self) -> int:
        return 2 if self.ace("suns") else 1  # "All results of all three other dice are doubled"

    @property
    def points(self) -> int:
        """What the auction is worth: the faces 2-5, doubled under the Ace of Suns."""
        return self.factor * sum(face for face in self.dice if face >= 2)

    @property
    def null_coins(self) -> int:
        """The coins the winner gains from the bank for the null dice, doubled
        under the Ace of Suns (as many as the bank holds)."""
        return min(self.factor * sum(1 for face in self.dice if face == 0), self.bank)

    @property
    def tiles_per_bid(self) -> int:
        return 2 if self.ace("suns") else 1


class Bid(Game[BidState, Move]):
    kind = "bid"
    title = "Bid!"
    min_seats, max_seats = 3, 4
    move_word = "bid"
    example = "bid 4"
    move_words = ("bid", "coins", "coin", "pawn", "reroll")
    options = {"reroll": "pawn", "max_auctions": 300}
    option_help: Mapping[str, str] = {
        "reroll": "what rerolls the dice: pawn (the rules, one a game; B4) or coin (the variant, a coin a reroll; B15)",
        "max_auctions": "the most auctions a game lasts, 1 or more (B9)",
    }
    rule_text = "docs/rules/bid-piecepack.txt"
    rulings_page = "docs/games/bid.md"
    filters = {"tile": tile_name}

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        options = super().check_options(options)
        if options["reroll"] not in ("pawn", "coin"):
            raise OptionError("reroll must be 'pawn' (the rules) or 'coin' (the variant)")
        try:
            options["max_auctions"] = int(options["max_auctions"])
        except (TypeError, ValueError):
            raise OptionError("max_auctions must be a whole number") from None
        if options["max_auctions"] < 1:
            raise OptionError("max_auctions must be at least 1")
        return options

    # -- setting up and rolling ----------------------------------------------

    def setup(self, seats: int, rng: Rng, options: Mapping[str, Any]) -> BidState:
        if not self.min_seats <= seats <= self.max_seats:
            raise OptionError("Bid! is for 3 or 4 players")
        options = self.check_options(options)
        state = BidState(
            hands=tuple(TILES for _ in range(seats)),  # "Give one suit to each player"
            coins=(2,) * seats,  # "a pawn and two coins to each player"
            bank=BANK_PER_SEAT * seats,
            pawns=frozenset(range(seats)) if options["reroll"] == "pawn" else frozenset(),
            scores=(0,) * seats,
            dice=(0, 0, 0, 0),
            auction=1,
            rolls=0,
            arms_paid=0,
            stage="bids",
            bids=(),
            tied=(),
            winner=None,
            bots=frozenset(),
            reroll=options["reroll"],
            max_auctions=options["max_auctions"],
        )
        state, _ = _roll(state, rng, range(len(DICE)))
        return state

    # -- what is asked now -------------------------------------------------

    def phase(self, state: BidState) -> Phase | None:
        if state.stage == "over":
            return None
        label = f"Auction {state.auction}" + (f" (roll {state.rolls})" if state.rolls > 1 else "")
        if state.stage == "coins":
            movers = tuple(seat for seat in state.tied if state.coins[seat] > 0)
            return Phase(f"{label}: coin tie-break", movers, sealed=True)
        return Phase(label, tuple(range(len(state.hands))), sealed=True)

    def legal_moves(self, state: BidState, seat: int) -> list[Move]:
        if state.stage == "coins":
            return [("coins", (n,)) for n in range(state.coins[seat] + 1)]
        if state.stage != "bids":
            return []
        hand = state.hands[seat]
        bids = sorted(set(itertools.combinations(hand, state.tiles_per_bid)))
        moves: list[Move] = [("bid", bid) for bid in bids]
        if seat in state.pawns:
            moves.append(("pawn", ()))
        if state.reroll == "coin":
            for size in range(1, min(state.coins[seat], len(DICE)) + 1):
                moves += [("reroll", dice) for dice in itertools.combinations(DICE, size)]
        return moves

    def parse_move(self, state: BidState, seat: int, text: str) -> Move:
        match = _MOVE.match(text)
        verb = match["verb"].lower() if match else ""
        words = match["rest"].replace(",", " ").split() if match else []
        if state.stage == "coins":
            return self._parse_coins(state, seat, text)
        if verb in ("bid", "use", "play") and [w.lower() for w in words if w.lower() not in ("my", "the")] == ["pawn"]:
            verb, words = "pawn", []  # "use my pawn", "bid pawn"
        if verb == "pawn":
            if words:
                raise MoveError("'pawn' is a move by itself: nothing after it.")
            if state.reroll != "pawn":
                raise MoveError("This game plays the variant without pawns: 'reroll <die>' costs a coin a die.")
            if seat not in state.pawns:
                raise MoveError("You have played your pawn already; each player has one a game.")
            return ("pawn", ())
        if verb == "reroll":
            return self._parse_reroll(state, seat, words)
        if verb != "bid":
            raise MoveError(self._how(state))
        read = [tile_value(word) for word in words]
        values = [value for value in read if value is not None]
        if not words or len(values) < len(read):
            raise MoveError(f"Tiles are null (or 0), ace (or 1), 2, 3, 4 and 5. {self._how(state)}")
        if len(values) != state.tiles_per_bid:
            raise MoveError(f"This auction takes {state.tiles_per_bid} tile(s) a bid. {self._how(state)}")
        bid = tuple(sorted(values))
        hand = list(state.hands[seat])
        for index, value in enumerate(bid):
            if value not in hand:
                held = " ".join(tile_name(t) for t in state.hands[seat])
                raise MoveError(
                    f"You do not hold {'another' if value in bid[:index] else 'a'} "
                    f"{tile_name(value)}. Your tiles: {held}."
                )
            hand.remove(value)
        return ("bid", bid)

    def _how(self, state: BidState) -> str:
        example = "bid 5 3" if state.tiles_per_bid == 2 else "bid 4"
        extra = (
            " or 'pawn' to cancel the auction and reroll"
            if state.reroll == "pawn"
            else " or 'reroll moons' (a coin a die)"
        )
        return f"A move is '{example}'{extra}."

    def _parse_coins(self, state: BidState, seat: int, text: str) -> Move:
        spoken = text.lower().split()
        if spoken[:1] in (["bid"], ["coins"], ["coin"]) and spoken[2:] in ([], ["coin"], ["coins"]):
            spoken = spoken[1:2]  # "bid 1", "bid 1 coin", "coins 2"
        elif spoken[1:] in (["coin"], ["coins"]):
            spoken = spoken[:1]  # "1 coin", "no coins"
        count = str(_COUNTS.get(spoken[0], spoken[0])) if len(spoken) == 1 else ""
        if not (count.isascii() and count.isdigit()):
            raise MoveError(
                f"The tie-break is bid in coins: reply with a number of coins from 0 to "
                f"{state.coins[seat]}, as in 'coins {min(1, state.coins[seat])}'."
            )
        coins = int(count)
        if coins > state.coins[seat]:
            raise MoveError(f"You have {state.coins[seat]} coin(s); bid 0 to {state.coins[seat]}.")
        return ("coins", (coins,))

    def _parse_reroll(self, state: BidState, seat: int, words: list[str]) -> Move:
        if state.reroll != "coin":
            raise MoveError("This game plays with pawns: 'pawn' cancels the auction and rerolls all the dice.")
        dice = tuple(sorted({word.lower().rstrip("s") + "s" for word in words}, key=_die_order))
        if not dice or any(die not in DICE for die in dice):
            raise MoveError("Name the dice to reroll: suns, moons, crowns, arms ('reroll moons arms').")
        if len(dice) > state.coins[seat]:
            raise MoveError(f"A reroll costs a coin a die; you have {state.coins[seat]} coin(s).")
        return ("reroll", dice)

    def move_text(self, move: Move) -> str:
        verb, args = move
        if verb == "bid":
            return "bid " + " ".join(tile_name(t) for t in args)
        if verb == "coins":
            return f"coins {args[0]}"
        return " ".join((verb, *args))

    def random_move(self, state: BidState, seat: int, rng: Rng) -> Move:
        """B6: a missing bid is a uniformly random bid (a distinct set of tiles
        under the Ace of Suns), a missing coin bid a uniformly random number
        of coins; a pawn or a reroll is never played at random."""
        return rng.choice([move for move in self.legal_moves(state, seat) if move[0] in ("bid", "coins")])

    # -- resolving -----------------------------------------------------------

    def resolve(self, state: BidState, moves: Mapping[int, Move], rng: Rng) -> tuple[BidState, list[dict[str, Any]]]:
        if state.stage == "coins":
            return self._resolve_coins(state, moves, rng)
        cancelling = {seat: move for seat, move in moves.items() if move[0] in ("pawn", "reroll")}
        if cancelling:
            return self._cancel(state, cancelling, rng)
        bids = tuple(moves[seat][1] for seat in range(len(state.hands)))
        top = max(sum(bid) for bid in bids)
        leaders = tuple(seat for seat, bid in enumerate(bids) if sum(bid) == top)
        if len(leaders) == 1:
            return self._complete(state, bids, None, leaders[0], rng)
        if state.ace("crowns"):  # "there is no tiebreaker using coins; instead ... lose the points"
            return self._complete(state, bids, None, None, rng, crowned=leaders)
        tied = replace(state, stage="coins", bids=bids, tied=leaders)
        if not any(state.coins[seat] for seat in leaders):  # B5: nobody can bid a coin: a tie again
            return self._complete(state, bids, {seat: 0 for seat in leaders}, None, rng)
        event = {
            "type": "tie",
            "auction": state.auction,
            "dice": list(state.dice),
            "bids": [list(bid) for bid in bids],
            "tied": list(leaders),
            "scores": list(state.scores),
            "coins": list(state.coins),
            "bank": state.bank,
        }
        return tied, [event]

    def _resolve_coins(
        self, state: BidState, moves: Mapping[int, Move], rng: Rng
    ) -> tuple[BidState, list[dict[str, Any]]]:
        offered = {seat: moves[seat][1][0] if seat in moves else 0 for seat in state.tied}
        coins = list(state.coins)
        for seat, count in offered.items():  # "All coins that are bid are returned to the bank."
            coins[seat] -= count
        state = replace(state, coins=tuple(coins), bank=state.bank + sum(offered.values()))
        top = max(offered.values())
        leaders = [seat for seat, count in offered.items() if count == top]
        winner = leaders[0] if len(leaders) == 1 else None  # "If there is a tie, no one wins."
        return self._complete(state, state.bids, offered, winner, rng)

    def _cancel(
        self, state: BidState, cancelling: Mapping[int, Move], rng: Rng
    ) -> tuple[BidState, list[dict[str, Any]]]:
        """A pawn (or, in the variant, a paid reroll) cancels the bids: they go
        back unrevealed, the dice are rolled again (B4, B15).  The roll after
        a pawn opens a new auction, whose Ace of Arms pays again; after a coin
        reroll the auction goes on, and its Ace of Arms pays only if no
        earlier roll of it showed the Ace (B10)."""
        pawns, coins, bank = set(state.pawns), list(state.coins), state.bank
        dice: set[int] = set()  # the indexes of the dice rolled again
        arms_paid = state.arms_paid
        for seat, (verb, args) in sorted(cancelling.items()):
            if verb == "pawn":
                pawns.discard(seat)
                dice.update(range(len(DICE)))
                arms_paid = 0  # "cancel that auction": the roll after it begins a new one
            else:
                coins[seat] -= len(args)
                bank += len(args)
                dice.update(DICE.index(die) for die in args)
        before = state.dice
        state = replace(state, pawns=frozenset(pawns), coins=tuple(coins), bank=bank, arms_paid=arms_paid)
        state, bonus = _roll(state, rng, sorted(dice))
        event = {
            "type": "cancelled",
            "auction": state.auction,
            "by": sorted(cancelling),
            "how": {str(seat): self.move_text(move) for seat, move in sorted(cancelling.items())},
            "dice": list(before),
            "next_dice": list(state.dice),
            "arms_bonus": bonus,
            "scores": list(state.scores),
            "coins": list(state.coins),
            "bank": state.bank,
        }
        return _end_if_won(state), [event]

    def _complete(
        self,
        state: BidState,
        bids: tuple[tuple[int, ...], ...],
        offered: Mapping[int, int] | None,
        winner: int | None,
        rng: Rng,
        crowned: tuple[int, ...] = (),
    ) -> tuple[BidState, list[dict[str, Any]]]:
        """The auction is over: swap the tiles, pay the prize, roll for the next."""
        hands, swaps = _swap(state.hands, bids, offered or {}, winner)
        scores, coins, bank = list(state.scores), list(state.coins), state.bank
        null_coins = moons_coins = 0
        if winner is not None:
            scores[winner] += state.points
            null_coins = state.null_coins  # "gains a coin from the bank (if any are available)"
            coins[winner] += null_coins
            bank -= null_coins
        for seat in crowned:
            scores[seat] -= state.points  # "all such players *lose* the number of points"
        if state.ace("moons"):
            others = [seat for seat in range(len(hands)) if seat != winner]
            each = state.factor  # B7: doubled under the Ace of Suns, like every other result
            if each * len(others) <= bank:  # "If there are not enough coins ... ignored."
                for seat in others:
                    coins[seat] += each
                bank -= each * len(others)
                moons_coins = each
        finished = replace(
            state, hands=hands, scores=tuple(scores), coins=tuple(coins), bank=bank, stage="bids", bids=(), tied=()
        )
        event = {
            "type": "auction",
            "auction": state.auction,
            "dice": list(state.dice),
            "points": state.points,
            "bids": [list(bid) for bid in bids],
            "coins_bid": {str(s): n for s, n in sorted(offered.items())} if offered else None,
            "winner": winner,
            "crowned": list(crowned),
            "swaps": swaps,
            "null_coins": null_coins,
            "moons_coins": moons_coins,
            "scores": list(scores),
            "coins": list(coins),
            "bank": bank,
        }
        over = _end_if_won(finished)
        if over.stage == "over" or state.auction >= state.max_auctions:
            over = _end_if_won(over, final=True)
            event.update(next_dice=None, arms_bonus=[])
            return over, [event]
        following = replace(finished, auction=state.auction + 1, rolls=0, arms_paid=0)
        following, bonus = _roll(following, rng, range(len(DICE)))
        event.update(next_dice=list(following.dice), arms_bonus=bonus, scores=list(following.scores))
        return _end_if_won(following), [event]

    # -- what players see ----------------------------------------------------

    def revealed(self, state: BidState, moves: Mapping[int, Move], events: list[dict[str, Any]]) -> frozenset[int]:
        """B4: a cancelled auction's bids go back unseen, so only the pawns
        and rerolls its announcement names are public; every other
        resolution announces all its bids (or coins)."""
        cancelled = next((event for event in events if event["type"] == "cancelled"), None)
        return frozenset(cancelled["by"]) if cancelled else frozenset(moves)

    def view(self, state: BidState, seat: int | None) -> dict[str, Any]:
        """B8: everything is public but the sealed moves not yet revealed: the
        hands too, since every bid and every swap is announced."""
        public = {
            "auction": state.auction,
            "rolls": state.rolls,
            "arms_paid": state.arms_paid,
            "stage": state.stage,
            "over": state.stage == "over",
            "dice": [{"die": DICE[i], "face": face, "name": die_name(i, face)} for i, face in enumerate(state.dice)],
            "points": state.points,
            "null_coins": state.null_coins,
            "tiles_per_bid": state.tiles_per_bid,
            "aces": [die for die in DICE if state.ace(die)],
            "hands": [list(hand) for hand in state.hands],
            "coins": list(state.coins),
            "bank": state.bank,
            "pawns": sorted(state.pawns),
            "scores": list(state.scores),
            "bids": [list(bid) for bid in state.bids],
            "tied": list(state.tied),
            "reroll": state.reroll,
            "goal": GOAL,
        }
        if seat is None:
            return public
        return {
            **public,
            "seat": seat,
            "hand": list(state.hands[seat]),
            "my_coins": state.coins[seat],
            "has_pawn": seat in state.pawns,
        }

    def result(self, state: BidState) -> Result | None:
        if state.stage != "over":
            return None
        return Result(scores=state.scores, winner=state.winner)


# -- helpers (pure) --------------------------------------------------------------


def _die_order(name: str) -> int:
    return DICE.index(name) if name in DICE else len(DICE)


def _roll(state: BidState, rng: Rng, dice: Any) -> tuple[BidState, list[int]]:
    """Roll the given dice (by index, in DICE order: B2), then the Ace of
    Arms' bonus: every seat whose six tiles total 16 or more gets 5 points,
    doubled under the Ace of Suns, on the first roll of the auction that
    shows the Ace, and never again in that auction (B10, B15).  Returns the
    seats paid: none when the bonus was not paid on this roll."""
    faces = list(state.dice)
    for index in dice:
        faces[index] = rng.randbelow(6)
    state = replace(state, dice=tuple(faces), rolls=state.rolls + 1)
    bonus = []
    if state.ace("arms") and not state.arms_paid:
        each = 5 * state.factor
        bonus = [seat for seat, hand in enumerate(state.hands) if sum(hand) >= 16]
        scores = list(state.scores)
        for seat in bonus:
            scores[seat] += each
        state = replace(state, scores=tuple(scores), arms_paid=each)
    return state, bonus


def _end_if_won(state: BidState, final: bool = False) -> BidState:
    """ "As soon as any player's score reaches 100 points, they win
    immediately"; tied on top, play goes on (B11).  With ``final`` (the
    auction limit, B9) the game ends whatever the scores.  Either way the
    winner is the single highest seat, and nobody when that seat is a bot
    (a bot never wins) or the top is shared."""
    top = max(state.scores)
    leaders = [seat for seat, score in enumerate(state.scores) if score == top]
    if not (top >= GOAL and len(leaders) == 1) and not final:
        return state
    winner = leaders[0] if len(leaders) == 1 and leaders[0] not in state.bots else None
    return replace(state, stage="over", winner=winner)


def _swap(
    hands: tuple[tuple[int, ...], ...],
    bids: tuple[tuple[int, ...], ...],
    offered: Mapping[int, int],
    winner: int | None,
) -> tuple[tuple[tuple[int, ...], ...], list]:
    """The swap chain (B12).  Seats are ranked by bid, then coins offered in a
    tie-break, the winner first.  A seat that ties another (and is not the
    winner) keeps its tiles.  The others each give their bid to the next one
    down; the lowest gives its bid to the top one (the winner, if any)."""

    def key(seat: int) -> tuple[int, int, int]:
        return (seat == winner, sum(bids[seat]), offered.get(seat, -1))

    ranked = sorted(range(len(bids)), key=key, reverse=True)
    chain = [seat for seat in ranked if seat == winner or [key(s)[1:] for s in ranked].count(key(seat)[1:]) == 1]
    new = [list(hand) for hand in hands]
    swaps = []
    if len(chain) > 1:
        for giver, taker in zip(chain, chain[1:] + chain[:1], strict=True):
            for tile in bids[giver]:
                new[giver].remove(tile)
                new[taker].append(tile)
            swaps.append({"from": giver, "to": taker, "tiles": list(bids[giver])})
    return tuple(tuple(sorted(hand)) for hand in new), swaps
