"""Bid! against its rule text (docs/rules/bid-piecepack.txt) and issue 6.

test_auction_example_N and test_dice_example_N are the rule text's examples,
in its order; the other names start with the part of the rules they check
(setup_, tiebreak_, moons_, nulls_, arms_, end_, pawn_, timeout_, parse_,
variant_); test_property_... are Hypothesis properties over whole games.

Seats: Andy 0, Bob 1, Cindy 2.  Dice are (Suns, Moons, Crowns, Arms); a face
of 0 is a null, 1 an ace.  A state for a situation is a real setup state
changed with dataclasses.replace.  The next roll is fixed by picking the
resolve stream's label: ``label_drawing(faces)`` finds a label whose first
draws are those faces, so each auction here starts on dice chosen for it.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from dataclasses import replace
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.record import PhaseRecord, random_move_rng, resolve_rng, setup_rng
from referee.rules import MoveError, OptionError, Rng
from referee.rules.bid import Bid, BidState

GAME = Bid()
SEED = b"bid rules tests"
ANDY, BOB, CINDY = 0, 1, 2
SUIT = (0, 1, 2, 3, 4, 5)  # one player's six tiles: null, ace, 2-5
NEUTRAL = (2, 3, 4, 5)  # no ace and no null: 14 points and nothing else
COINS_PER_SEAT = 6  # "6 tiles, 6 coins and 1 pawn per player"


# --- helpers ---------------------------------------------------------------------


@cache
def label_drawing(faces: tuple[int, ...]) -> str:
    """A label whose stream's first draws (randbelow(6) each) are ``faces``."""
    for i in range(1_000_000):
        label = f"test roll {i}"
        rng = Rng(SEED, label)
        if all(rng.randbelow(6) == face for face in faces):
            return label
    raise AssertionError(f"no label draws {faces}")


def draws(label: str, count: int) -> tuple[int, ...]:
    rng = Rng(SEED, label)
    return tuple(rng.randbelow(6) for _ in range(count))


def new_game(seats: int = 3, seed: bytes = SEED, **options) -> BidState:
    return GAME.setup(seats, setup_rng(seed), options)


def make(seats: int = 3, options=None, **fields) -> BidState:
    """A real setup state with ``fields`` replaced (dice default to NEUTRAL)."""
    fields.setdefault("dice", NEUTRAL)
    if "hands" in fields:
        fields["hands"] = tuple(tuple(sorted(hand)) for hand in fields["hands"])
    return replace(new_game(seats, **(options or {})), **fields)


def parse(state: BidState, texts) -> dict:
    """Moves for the phase's movers, in order, read from text like a player's mail."""
    movers = GAME.phase(state).movers
    if isinstance(texts, dict):
        assert sorted(texts) == list(movers)
        return {seat: GAME.parse_move(state, seat, text) for seat, text in texts.items()}
    assert len(texts) == len(movers)
    return {seat: GAME.parse_move(state, seat, text) for seat, text in zip(movers, texts, strict=True)}


def play(state: BidState, *texts, next_dice=NEUTRAL, label=None):
    """Resolve the open phase from move texts; the next roll shows ``next_dice``."""
    if label is None:
        label = label_drawing(tuple(next_dice))
    moves = parse(state, texts[0] if len(texts) == 1 and isinstance(texts[0], dict) else list(texts))
    return GAME.resolve(state, moves, Rng(SEED, label))


def total_coins(state: BidState) -> int:
    return sum(state.coins) + state.bank


def tile_pool(state: BidState) -> Counter:
    return Counter(tile for hand in state.hands for tile in hand)


# --- setup ---------------------------------------------------------------------------


@pytest.mark.parametrize("seats", [3, 4])
def test_setup_six_tiles_of_a_suit_two_coins_a_pawn_each_and_the_bank(seats):
    state = new_game(seats)
    assert state.hands == (SUIT,) * seats
    assert state.coins == (2,) * seats
    assert state.bank == (COINS_PER_SEAT - 2) * seats
    assert state.pawns == frozenset(range(seats))
    assert state.scores == (0,) * seats
    assert state.stage == "bids"
    phase = GAME.phase(state)
    assert phase.label == "Auction 1"
    assert phase.movers == tuple(range(seats))
    assert phase.sealed


def test_setup_rolls_the_four_dice_from_the_setup_stream_in_order_suns_moons_crowns_arms():
    for seed in (b"a", b"b", b"c"):
        rng = Rng(seed, "setup")
        assert new_game(seed=seed).dice == tuple(rng.randbelow(6) for _ in range(4))


@pytest.mark.parametrize("seats", [1, 2, 5])
def test_setup_refuses_other_than_3_or_4_seats(seats):
    with pytest.raises(OptionError):
        new_game(seats)


@pytest.mark.parametrize("options", [{"reroll": "dice"}, {"max_auctions": 0}, {"max_auctions": "many"}, {"pawns": 2}])
def test_setup_refuses_bad_options(options):
    with pytest.raises(OptionError):
        new_game(**options)


def test_setup_the_coin_variant_deals_no_pawns():
    state = new_game(reroll="coin")
    assert state.pawns == frozenset()
    assert ("pawn", ()) not in GAME.legal_moves(state, ANDY)


# --- the rule text's auction examples ----------------------------------------------------


def auction_example_1():
    return play(make(), "bid 5", "bid null", "bid 4")


def auction_example_2_tie():
    after_1, _ = auction_example_1()
    return after_1, play(after_1, "bid 3", "bid 3", "bid 2")


def auction_example_2():
    _, (tie, _) = auction_example_2_tie()
    return tie, play(tie, "coins 1", "coins 2")


def test_auction_example_1():
    """Andy bids 5, Bob null, Cindy 4: Cindy gets Andy's 5 and gives her 4 to
    Bob; Andy takes Bob's null tile, but wins the auction."""
    after, (event,) = auction_example_1()
    assert event["winner"] == ANDY
    assert event["bids"] == [[5], [0], [4]]
    assert after.hands[ANDY] == (0, 0, 1, 2, 3, 4)  # gave the 5, took Bob's null
    assert after.hands[BOB] == (1, 2, 3, 4, 4, 5)  # gave the null, took Cindy's 4
    assert after.hands[CINDY] == (0, 1, 2, 3, 5, 5)  # gave the 4, took Andy's 5
    assert after.scores == (14, 0, 0)  # NEUTRAL dice: 2+3+4+5
    assert sorted((s["from"], s["to"], s["tiles"][0]) for s in event["swaps"]) == [
        (ANDY, CINDY, 5),
        (BOB, ANDY, 0),
        (CINDY, BOB, 4),
    ]


def test_auction_example_2():
    """Andy and Bob bid 3, Cindy 2: a coin auction between Andy and Bob, who
    bid 1 and 2 coins, lost to the bank.  Bob wins: his 3 to Andy, Andy's 3
    to Cindy, Cindy's 2 to Bob."""
    after_1, (tie, tie_events) = auction_example_2_tie()
    assert tie.stage == "coins"
    assert tie.tied == (ANDY, BOB)
    assert tie.hands == after_1.hands and tie.scores == after_1.scores  # nothing is settled yet
    assert tie_events == [
        {
            "type": "tie",
            "auction": 2,
            "dice": list(NEUTRAL),
            "bids": [[3], [3], [2]],
            "tied": [ANDY, BOB],
            # the standings as they stand while the coins decide
            "scores": list(after_1.scores),
            "coins": list(after_1.coins),
            "bank": after_1.bank,
        }
    ]
    phase = GAME.phase(tie)
    assert phase.label == "Auction 2: coin tie-break"
    assert phase.movers == (ANDY, BOB) and phase.sealed

    after, (event,) = play(tie, "coins 1", "coins 2")
    assert event["winner"] == BOB
    assert event["coins_bid"] == {"0": 1, "1": 2}
    assert after.coins == (2 - 1, 2 - 2, 2)
    assert after.bank == tie.bank + 3  # "both players lose the coins they bid to the bank"
    assert after.hands[ANDY] == after_1.hands[ANDY]  # gave a 3, got Bob's 3
    assert Counter(after.hands[BOB]) == Counter(after_1.hands[BOB]) - Counter([3]) + Counter([2])
    assert Counter(after.hands[CINDY]) == Counter(after_1.hands[CINDY]) - Counter([2]) + Counter([3])
    assert sorted((s["from"], s["to"], s["tiles"]) for s in event["swaps"]) == [
        (ANDY, CINDY, [3]),
        (BOB, ANDY, [3]),
        (CINDY, BOB, [2]),
    ]
    assert after.scores == (14, 14, 0)
    assert after.stage == "bids" and after.auction == 3


def test_auction_example_3():
    """Cindy bids 5, Andy and Bob both 1: they are tied but neither won, so
    they do not swap, and Cindy keeps her 5 and wins."""
    _, (before, _) = auction_example_2()
    after, (event,) = play(before, "bid ace", "bid 1", "bid 5")
    assert event["winner"] == CINDY
    assert event["swaps"] == []
    assert after.hands == before.hands
    assert 5 in after.hands[CINDY]
    assert after.scores == (before.scores[0], before.scores[1], before.scores[2] + 14)


# --- the rule text's dice examples -------------------------------------------------------


def test_dice_example_1():
    """null, 2, 3 and 5: the winner gets 10 points and a coin from the bank."""
    before = make(dice=(0, 2, 3, 5))
    assert GAME.view(before, None)["points"] == 10
    after, (event,) = play(before, "bid 2", "bid 5", "bid 3")
    assert event["winner"] == BOB
    assert after.scores == (0, 10, 0)
    assert after.coins == (2, 3, 2)
    assert after.bank == before.bank - 1
    assert event["null_coins"] == 1


def test_dice_example_2():
    """4, 4, Ace of Arms and Ace of Suns: 16+ tiles earn a 10 point bonus; the
    auction is worth 16; Andy bids 5 and 3, Bob 4 and 3, Cindy null and null:
    Bob receives Andy's 5 and 3, Cindy Bob's 4 and 3, and Andy wins but gets
    a pair of null tiles."""
    # The auction before it: Andy 5 wins, Bob's 2 goes to Cindy, Cindy's ace to Andy.
    before = make(hands=((1, 3, 4, 5, 5, 5), (2, 2, 3, 3, 4, 4), (0, 0, 0, 1, 1, 2)), dice=(2, 2, 2, 2))
    rolled, (event,) = play(before, "bid 5", "bid 2", "bid ace", next_dice=(1, 4, 4, 1))
    assert rolled.hands == ((1, 1, 3, 4, 5, 5), (2, 3, 3, 4, 4, 5), (0, 0, 0, 1, 2, 2))  # 19, 21, 5
    assert rolled.dice == (1, 4, 4, 1)
    assert event["arms_bonus"] == [ANDY, BOB]
    assert rolled.scores == (8 + 10, 10, 0)  # the bonus is in before any bid
    view = GAME.view(rolled, None)
    assert [die["name"] for die in view["dice"]] == ["Ace of Suns", "4", "4", "Ace of Arms"]
    assert view["points"] == 16 and view["tiles_per_bid"] == 2
    assert len(GAME.legal_moves(rolled, CINDY)) == len({(0, 0), (0, 1), (0, 2), (1, 2), (2, 2)}) + 1

    after, (event,) = play(rolled, "bid 5 3", "bid 4 3", "bid null null")
    assert event["winner"] == ANDY
    assert event["points"] == 16
    assert event["bids"] == [[3, 5], [3, 4], [0, 0]]
    assert sorted((s["from"], s["to"], s["tiles"]) for s in event["swaps"]) == [
        (ANDY, BOB, [3, 5]),
        (BOB, CINDY, [3, 4]),
        (CINDY, ANDY, [0, 0]),
    ]
    assert after.hands == ((0, 0, 1, 1, 4, 5), (2, 3, 3, 4, 5, 5), (0, 1, 2, 2, 3, 4))
    assert after.scores == (18 + 16, 10, 0)
    assert after.coins == rolled.coins and after.bank == rolled.bank


def moons_example():
    return make(dice=(2, 1, 2, 0))  # Suns 2, Ace of Moons, Crowns 2, Arms null


def test_dice_example_3():
    """2, 2, null and Ace of Moons: worth 4 points, and every player gets a
    coin: the winner for the null, everyone else from the Ace of Moons."""
    before = moons_example()
    after, (event,) = play(before, "bid 5", "bid 3", "bid 2")
    assert event["winner"] == ANDY
    assert after.scores == (4, 0, 0)
    assert after.coins == (3, 3, 3)
    assert after.bank == before.bank - 3
    assert (event["null_coins"], event["moons_coins"]) == (1, 1)


@pytest.mark.parametrize("offers", [(1, 1), (0, 0), (2, 2)])
def test_dice_example_3_tie_and_tie_again_everyone_still_gets_the_moons_coin(offers):
    """ "If two or more players tie on the bid and again on the tiebreaker, all
    players still get a coin from the Ace of Moons (since no player won)"."""
    before = moons_example()
    tie, _ = play(before, "bid 3", "bid 3", "bid 2")
    assert tie.stage == "coins" and tie.tied == (ANDY, BOB)
    after, (event,) = play(tie, *(f"coins {n}" for n in offers))
    assert event["winner"] is None
    assert after.scores == (0, 0, 0)
    assert after.coins == (2 - offers[0] + 1, 2 - offers[1] + 1, 3)
    assert after.bank == before.bank + sum(offers) - 3
    assert after.hands == before.hands  # Andy and Bob tied, Cindy alone: nothing moves


def crowns_example():
    return make(dice=(5, 4, 1, 0))  # 5, 4, Ace of Crowns, null


def test_dice_example_4():
    """5, 4, null and Ace of Crowns: a single highest bid is worth 9 points
    and a coin from the bank."""
    before = crowns_example()
    after, (event,) = play(before, "bid 4", "bid 3", "bid 5")
    assert event["winner"] == CINDY
    assert after.scores == (0, 0, 9)
    assert after.coins == (2, 2, 3)
    assert after.bank == before.bank - 1


def test_dice_example_4_tied_high_bidders_each_lose_9_and_no_coins_change():
    """ "If two or more players tie for highest bid, they each lose 9 points
    instead (and no coins are gained or lost)": and there is no tie-break."""
    before = replace(crowns_example(), scores=(20, 20, 20))
    after, (event,) = play(before, "bid 5", "bid 2", "bid 5")
    assert after.stage == "bids" and after.auction == 2  # no coin tie-break phase
    assert event["winner"] is None
    assert event["crowned"] == [ANDY, CINDY]
    assert after.scores == (11, 20, 11)
    assert after.coins == before.coins and after.bank == before.bank
    assert after.hands == before.hands


# --- ties and the coin tie-break -------------------------------------------------------------


def test_tiebreak_a_tied_seat_without_coins_is_not_a_mover_and_bids_nothing():
    before = make(coins=(0, 3, 2), bank=13)
    tie, _ = play(before, "bid 4", "bid 4", "bid 2")
    assert GAME.phase(tie).movers == (BOB,)
    after, (event,) = play(tie, "coins 1")
    assert event["winner"] == BOB
    assert event["coins_bid"] == {"0": 0, "1": 1}
    assert after.coins == (0, 2, 2) and after.bank == 14


def test_tiebreak_if_no_tied_seat_holds_a_coin_nobody_wins_at_once():
    before = make(coins=(0, 0, 6), bank=12)
    after, (event,) = play(before, "bid 4", "bid 4", "bid 2")
    assert after.stage == "bids" and after.auction == 2
    assert event["winner"] is None
    assert after.scores == (0, 0, 0)
    assert after.hands == before.hands


def test_tiebreak_the_highest_coin_bid_among_three_tied_wins():
    before = make(coins=(2, 2, 2))
    tie, _ = play(before, "bid 5", "bid 5", "bid 5")
    assert GAME.phase(tie).movers == (ANDY, BOB, CINDY)
    after, (event,) = play(tie, "coins 0", "coins 2", "coins 1")
    assert event["winner"] == BOB
    assert after.scores == (0, 14, 0)
    assert after.bank == before.bank + 3


def test_tiebreak_a_tie_again_means_no_winner_and_no_points():
    before = make()
    tie, _ = play(before, "bid 5", "bid 5", "bid 0")
    after, (event,) = play(tie, "coins 2", "coins 2")
    assert event["winner"] is None
    assert after.scores == (0, 0, 0)
    assert after.coins == (0, 0, 2) and after.bank == before.bank + 4


# --- coins from nulls and the Ace of Moons ---------------------------------------------------


@pytest.mark.parametrize(("bank", "paid"), [(2, True), (1, False), (0, False)])
def test_moons_pays_every_non_winner_only_if_the_bank_can_pay_them_all(bank, paid):
    coins = (18 - bank - 10, 5, 5)
    before = make(dice=(2, 1, 2, 2), coins=coins, bank=bank)  # Ace of Moons, no null
    after, (event,) = play(before, "bid 5", "bid 4", "bid 3")
    assert event["winner"] == ANDY
    if paid:
        assert after.coins == (coins[0], 6, 6) and after.bank == bank - 2
    else:
        assert after.coins == coins and after.bank == bank
    assert event["moons_coins"] == (1 if paid else 0)


@pytest.mark.parametrize(("bank", "gained"), [(12, 3), (3, 3), (2, 2), (0, 0)])
def test_nulls_give_the_winner_a_coin_each_while_the_bank_has_them(bank, gained):
    coins = (2, 2, 18 - 4 - bank)
    before = make(dice=(0, 0, 0, 2), coins=coins, bank=bank)  # three nulls
    after, (event,) = play(before, "bid 5", "bid 4", "bid 3")
    assert after.coins == (2 + gained, 2, coins[2])
    assert after.bank == bank - gained
    assert event["null_coins"] == gained


@pytest.mark.parametrize(("bank", "moons_paid"), [(3, True), (2, False)])
def test_moons_is_paid_after_the_null_coins(bank, moons_paid):
    coins = (18 - bank - 10, 5, 5)
    before = make(dice=(0, 1, 2, 2), coins=coins, bank=bank)  # null, Ace of Moons, 2, 2
    after, (event,) = play(before, "bid 5", "bid 4", "bid 3")
    assert event["null_coins"] == 1
    others = 1 if moons_paid else 0
    assert after.coins == (coins[0] + 1, 5 + others, 5 + others)
    assert after.bank == bank - 1 - 2 * others


def test_crowns_tie_nobody_wins_moons_pays_everyone_and_scores_may_go_below_zero():
    before = make(dice=(2, 1, 1, 2))  # 2, Ace of Moons, Ace of Crowns, 2: 4 points
    after, (event,) = play(before, "bid 5", "bid 5", "bid 3")
    assert event["winner"] is None and event["crowned"] == [ANDY, BOB]
    assert after.scores == (-4, -4, 0)
    assert after.coins == (3, 3, 3) and after.bank == before.bank - 3


def test_suns_doubles_the_null_coins_and_the_moons_coins():
    before = make(dice=(1, 1, 0, 3))  # Ace of Suns, Ace of Moons, null, 3
    after, (event,) = play(before, "bid 5 4", "bid 3 2", "bid 1 0")
    assert event["winner"] == ANDY
    assert after.scores == (6, 0, 0)
    assert after.coins == (2 + 2, 2 + 2, 2 + 2)
    assert after.bank == before.bank - 6


def test_suns_doubles_the_crowns_loss():
    before = make(dice=(1, 3, 1, 2), scores=(30, 30, 30))  # Suns, 3, Crowns, 2: 10 points
    after, _ = play(before, "bid 5 4", "bid 5 4", "bid 3 2")
    assert after.scores == (20, 20, 30)


# --- the Ace of Arms ------------------------------------------------------------------------


ARMS_HANDS = ((0, 1, 2, 3, 4, 5), (0, 1, 2, 3, 5, 5), (0, 1, 2, 3, 4, 4))  # 15, 16, 14


@pytest.mark.parametrize(("dice", "bonus"), [((2, 2, 2, 1), 5), ((1, 2, 2, 1), 10)])
def test_arms_16_or_more_earns_5_points_doubled_under_suns_15_does_not(dice, bonus):
    before = make(hands=ARMS_HANDS)
    after, (event,) = play(before, "bid 5", "bid 3", "pawn", next_dice=dice)
    assert event["arms_bonus"] == [BOB]
    assert after.scores == (0, bonus, 0)


def test_arms_at_setup_gives_nobody_a_bonus_every_suit_totals_15():
    after, (event,) = play(make(), "pawn", "bid 2", "bid 3", next_dice=(2, 2, 2, 1))
    assert after.dice[3] == 1
    assert event["arms_bonus"] == []
    assert after.scores == (0, 0, 0)


# The Ace of Arms pays once an auction (B10, B15): a pawn's roll opens a new auction, a coin
# reroll does not.  An auction is played to its end first, so the one under test starts on a
# real roll, with Bob (18) the only seat of 16 or more.


def next_auction(first_roll, reroll="coin"):
    """Auction 2 of a game with the given ``reroll`` option, its first roll ``first_roll``:
    auction 1 (14 points) is won by Andy, and its swaps leave the hands at 12, 18 and 15."""
    before = make(options={"reroll": reroll}, hands=ARMS_HANDS, coins=(6, 2, 2), bank=8)  # Andy's for rerolls
    state, (event,) = play(before, "bid 5", "bid 3", "bid 2", next_dice=first_roll)
    assert [sum(hand) for hand in state.hands] == [12, 18, 15]
    assert state.auction == 2 and state.dice == tuple(first_roll) and state.scores[ANDY] == 14
    return state, event


def reroll(state, text, faces):
    """Andy sends ``text`` (a reroll, or a pawn); the others bid; the dice rerolled draw ``faces``."""
    others = {
        seat: GAME.move_text([move for move in GAME.legal_moves(state, seat) if move[0] == "bid"][-1])
        for seat in (BOB, CINDY)
    }
    return play(state, {ANDY: text, **others}, label=label_drawing(tuple(faces)))


@pytest.mark.parametrize(
    ("text", "faces", "dice"),
    [
        ("reroll moons", (4,), (2, 4, 2, 1)),
        ("reroll suns", (1,), (1, 2, 2, 1)),  # the Ace of Suns now: the bonus is not paid again, doubled or not
        ("reroll suns moons", (3, 0), (3, 0, 2, 1)),
    ],
)
def test_arms_a_coin_reroll_of_other_dice_while_the_ace_shows_pays_nothing(text, faces, dice):
    state, event = next_auction((2, 2, 2, 1))
    assert event["arms_bonus"] == [BOB] and state.scores == (14, 5, 0)  # the auction's first roll pays
    after, (event,) = reroll(state, text, faces)
    assert event["type"] == "cancelled" and after.dice == dice and after.ace("arms")
    assert event["arms_bonus"] == []
    assert after.scores == (14, 5, 0)
    assert event["scores"] == [14, 5, 0]
    assert GAME.phase(after).label == "Auction 2 (roll 2)"


def test_arms_a_coin_reroll_of_arms_from_its_ace_to_its_ace_pays_nothing():
    state, _ = next_auction((2, 2, 2, 1))
    for roll in (2, 3, 4):  # and again, and again: still the same auction
        state, (event,) = reroll(state, "reroll arms", (1,))
        assert state.dice == (2, 2, 2, 1) and GAME.phase(state).label == f"Auction 2 (roll {roll})"
        assert event["arms_bonus"] == [] and state.scores == (14, 5, 0)


@pytest.mark.parametrize(("first_roll", "paid"), [((2, 2, 2, 3), 5), ((1, 2, 2, 0), 10)])
def test_arms_a_coin_reroll_that_brings_up_the_ace_pays_once_as_much_as_it_is_worth_then(first_roll, paid):
    state, event = next_auction(first_roll)
    assert event["arms_bonus"] == [] and state.scores == (14, 0, 0)
    state, (event,) = reroll(state, "reroll arms", (1,))
    assert event["arms_bonus"] == [BOB]
    assert state.scores == (14, paid, 0)
    assert GAME.view(state, None)["arms_paid"] == paid
    # Later rolls of the same auction pay nothing more: off the Ace and back, or the Suns changed.
    for text, faces in (("reroll arms", (4,)), ("reroll arms", (1,)), ("reroll suns", (2,)), ("reroll suns", (1,))):
        state, (event,) = reroll(state, text, faces)
        assert event["arms_bonus"] == [] and state.scores == (14, paid, 0), (text, faces)
    assert state.ace("arms") and state.ace("suns")


def test_arms_the_next_auction_pays_again_after_a_coin_reroll_paid_in_this_one():
    state, _ = next_auction((2, 2, 2, 3))
    state, (event,) = reroll(state, "reroll arms", (1,))
    assert event["arms_bonus"] == [BOB] and state.scores == (14, 5, 0)
    bids = {seat: GAME.move_text(GAME.legal_moves(state, seat)[0]) for seat in (ANDY, BOB, CINDY)}  # the lowest
    before = state
    state, (event,) = play(state, {**bids, BOB: "bid 5"}, next_dice=(2, 2, 2, 1))  # Bob wins 6 points
    assert event["type"] == "auction" and state.auction == 3
    rich = [seat for seat, hand in enumerate(state.hands) if sum(hand) >= 16]
    assert rich and event["arms_bonus"] == rich
    assert all(
        state.scores[seat] == before.scores[seat] + (6 if seat == BOB else 0) + 5 * (seat in rich)
        for seat in (ANDY, BOB, CINDY)
    )


def test_arms_a_pawns_new_roll_showing_the_ace_pays_again_it_is_a_new_auction():
    state, event = next_auction((2, 2, 2, 1), reroll="pawn")
    assert event["arms_bonus"] == [BOB] and state.scores == (14, 5, 0)
    state, (event,) = reroll(state, "pawn", (2, 3, 2, 1))
    assert event["type"] == "cancelled" and state.dice == (2, 3, 2, 1)
    assert event["arms_bonus"] == [BOB]
    assert state.scores == (14, 10, 0)
    state, (event,) = play(state, "bid 4", "pawn", "bid 4", next_dice=(1, 3, 2, 1))  # Bob's pawn: doubled
    assert event["arms_bonus"] == [BOB]
    assert state.scores == (14, 20, 0)


def test_arms_the_prompt_says_what_the_ace_paid_in_this_auction(config):
    from referee.mail.compose import Composer

    state, _ = next_auction((2, 2, 2, 1))
    state, _ = reroll(state, "reroll suns", (1,))  # the Ace of Suns came up after the bonus was paid
    players = [{"seat": seat, "label": name, "bot": False} for seat, name in enumerate(("andy", "bob", "cindy"))]
    text = (
        Composer(config).env.get_template("mail/bid/_view.txt.j2").render(view=GAME.view(state, ANDY), players=players)
    )
    assert "has scored 5 points already (once an auction)" in text
    assert "10 points" not in text
    event_mail = Composer(config).env.get_template("mail/bid/_event.txt.j2")
    for move, says in (
        ("reroll suns", "the bids go back unseen and the dice named are rolled again, in the same"),
        ("pawn", "the auction is cancelled"),
    ):
        event = {"type": "cancelled", "how": {"0": move}, "next_dice": [1, 2, 2, 1], "arms_bonus": []}
        text = event_mail.render(event=event, round={"how": {}}, players=players)
        assert f'andy played "{move}": {says}' in text
        assert "bonus" not in text  # nobody was paid: nothing is said to have been


# --- the end of the game --------------------------------------------------------------------


@pytest.mark.parametrize(("score", "over"), [(86, True), (85, False), (99, True)])
def test_end_reaching_100_wins_at_once(score, over):
    before = make(scores=(score, 50, 0))
    after, (event,) = play(before, "bid 5", "bid 4", "bid 3")
    assert after.scores[ANDY] == score + 14
    if over:
        assert after.stage == "over"
        assert GAME.phase(after) is None
        assert GAME.result(after).winner == ANDY
        assert GAME.result(after).scores == (score + 14, 50, 0)
        assert event["next_dice"] is None and after.dice == before.dice  # no roll after the end
        assert GAME.legal_moves(after, BOB) == []
    else:
        assert GAME.phase(after).label == "Auction 2"
        assert GAME.result(after) is None


TWO_RICH = ((0, 1, 2, 3, 5, 5), (1, 2, 3, 4, 4, 5), (0, 0, 1, 2, 3, 4))  # 16, 19, 10


def test_end_two_seats_over_100_from_an_arms_bonus_the_higher_wins():
    before = make(hands=TWO_RICH, scores=(97, 96, 0))
    after, (event,) = play(before, "bid 5", "bid 4", "pawn", next_dice=(2, 2, 2, 1))
    assert event["arms_bonus"] == [ANDY, BOB]
    assert after.scores == (102, 101, 0)
    assert after.stage == "over"
    assert GAME.result(after).winner == ANDY


def test_end_two_seats_tied_over_100_play_on_until_one_is_higher():
    before = make(hands=TWO_RICH, scores=(96, 96, 0))
    tied, _ = play(before, "bid 5", "bid 4", "pawn", next_dice=(2, 2, 2, 1))
    assert tied.scores == (101, 101, 0)
    assert tied.stage == "bids" and GAME.phase(tied) is not None
    assert GAME.result(tied) is None
    after, _ = play(tied, "bid 5", "bid 4", "bid 3")
    assert after.scores == (107, 101, 0)
    assert GAME.result(after).winner == ANDY


def test_end_a_bot_reaching_100_ends_the_game_with_no_winner():
    """B11: the first to reach 100 wins at once; a bot cannot win, so the
    game ends there with nobody named, never a person with fewer points."""
    before = GAME.replace_by_bot(make(scores=(95, 40, 30)), ANDY)
    after, _ = play(before, "bid 5", "bid 4", "bid 3")
    assert after.stage == "over" and GAME.phase(after) is None
    assert GAME.result(after).winner is None


def test_end_a_person_reaching_100_ahead_of_a_bot_wins():
    before = GAME.replace_by_bot(make(scores=(95, 60, 30)), BOB)
    after, _ = play(before, "bid 5", "bid 4", "bid 3")
    assert GAME.result(after).winner == ANDY


def test_end_max_auctions_ends_the_game_after_that_many_auctions():
    state = make(options={"max_auctions": 2})
    state, _ = play(state, "bid 5", "bid 4", "bid 3")
    assert GAME.phase(state).label == "Auction 2"
    state, _ = play(state, "bid 2", "bid 5", "bid 0")
    assert state.stage == "over" and GAME.phase(state) is None
    assert GAME.result(state).scores == (14, 14, 0)
    assert GAME.result(state).winner is None  # tied on top: nobody


def test_end_max_auctions_the_single_highest_wins():
    state = make(options={"max_auctions": 1}, scores=(10, 20, 5))
    after, _ = play(state, "bid 5", "bid 4", "bid 3")
    assert after.stage == "over"
    assert GAME.result(after).winner == ANDY


def test_end_max_auctions_a_bot_on_top_means_no_winner():
    """B9: a capped game is won by the single highest score; a bot there
    (or a tie) means nobody, never the best of the rest."""
    state = GAME.replace_by_bot(make(options={"max_auctions": 1}, scores=(30, 0, 0)), ANDY)
    after, _ = play(state, "bid 2", "bid 5", "bid 3")
    assert after.stage == "over"
    assert after.scores[ANDY] > after.scores[BOB] > after.scores[CINDY]
    assert GAME.result(after).winner is None


def test_end_a_cancelled_auction_does_not_count_towards_max_auctions():
    state = make(options={"max_auctions": 1})
    state, _ = play(state, "pawn", "bid 4", "bid 3")
    assert state.stage == "bids" and state.auction == 1


# --- pawns ------------------------------------------------------------------------------------


def test_pawn_cancels_the_auction_rerolls_all_dice_and_opens_a_fresh_phase():
    before = make()
    label = label_drawing((5, 4, 3, 0))  # every die changes
    after, events = play(before, "bid 5", "pawn", "bid 3", label=label)
    assert after.dice == draws(label, 4) == (5, 4, 3, 0)
    assert after.pawns == {ANDY, CINDY}
    assert after.hands == before.hands and after.scores == before.scores
    assert after.coins == before.coins and after.bank == before.bank
    assert after.auction == before.auction and after.stage == "bids"
    (event,) = events
    assert event["type"] == "cancelled" and event["by"] == [BOB]
    assert "bids" not in event and "winner" not in event  # the bids go back unrevealed
    assert "bid 5" not in json.dumps(event) and "bid 3" not in json.dumps(event)
    old, new = GAME.phase(before), GAME.phase(after)
    assert new.label != old.label and new.label.startswith("Auction 1")
    assert new.movers == old.movers


def test_pawn_two_pawns_at_once_both_are_spent():
    after, (event,) = play(make(), "pawn", "bid 4", "pawn")
    assert after.pawns == {BOB}
    assert event["by"] == [ANDY, CINDY]


def test_pawn_a_seat_that_spent_its_pawn_cannot_play_it_again():
    after, _ = play(make(), "pawn", "bid 4", "bid 3")
    with pytest.raises(MoveError, match="pawn"):
        GAME.parse_move(after, ANDY, "pawn")
    assert ("pawn", ()) not in GAME.legal_moves(after, ANDY)
    assert ("pawn", ()) in GAME.legal_moves(after, BOB)
    assert GAME.parse_move(after, BOB, "Pawn") == ("pawn", ())


def test_pawn_each_cancel_opens_a_phase_with_a_new_label():
    state = make()
    labels = [GAME.phase(state).label]
    for texts in (("pawn", "bid 1", "bid 2"), ("bid 1", "pawn", "bid 2"), ("bid 1", "bid 2", "pawn")):
        state, _ = play(state, *texts)
        labels.append(GAME.phase(state).label)
    assert len(set(labels)) == 4
    assert state.pawns == frozenset()


def test_pawn_is_not_a_move_in_the_coin_tie_break():
    tie, _ = play(make(), "bid 4", "bid 4", "bid 2")
    with pytest.raises(MoveError):
        GAME.parse_move(tie, ANDY, "pawn")


# --- views ----------------------------------------------------------------------------------------


def test_view_the_tie_break_shows_the_revealed_bids_and_who_is_tied():
    tie, _ = play(make(), "bid 4", "bid 4", "bid 2")
    public = GAME.view(tie, None)
    assert public["stage"] == "coins"
    assert public["bids"] == [[4], [4], [2]] and public["tied"] == [ANDY, BOB]
    assert public["coins"] == [2, 2, 2] and public["bank"] == 12


def test_view_a_seats_view_is_the_public_view_plus_its_own_hand_coins_and_pawn():
    state, _ = play(make(), "pawn", "bid 4", "bid 2")
    public, own = GAME.view(state, None), GAME.view(state, ANDY)
    assert {key: own[key] for key in public} == public
    assert (own["hand"], own["my_coins"], own["has_pawn"]) == (list(SUIT), 2, False)
    assert public["pawns"] == [BOB, CINDY]


# --- timeouts: random moves --------------------------------------------------------------------


def random_moves(state, seat, count=600):
    return [GAME.random_move(state, seat, Rng(SEED, f"random {i}")) for i in range(count)]


@pytest.mark.parametrize("options", [{"reroll": "pawn"}, {"reroll": "coin"}])
@pytest.mark.parametrize("dice", [NEUTRAL, (1, 2, 3, 4)])
def test_timeout_random_move_is_never_a_pawn_or_a_reroll(options, dice):
    state = make(options=options, dice=dice, coins=(4, 4, 4), bank=6)
    assert any(move[0] in ("pawn", "reroll") for move in GAME.legal_moves(state, ANDY))
    chosen = random_moves(state, ANDY)
    assert {verb for verb, _ in chosen} == {"bid"}
    bids = {move for move in GAME.legal_moves(state, ANDY) if move[0] == "bid"}
    assert set(chosen) == bids  # and every bid can come up


def test_timeout_random_tile_bid_is_uniform():
    counts = Counter(random_moves(make(), ANDY, 3000))
    assert len(counts) == 6
    assert all(400 <= count <= 600 for count in counts.values())  # 500 expected, sd about 20


def test_timeout_random_bid_under_suns_is_two_tiles_uniform_over_the_distinct_pairs():
    state = make(dice=(1, 2, 2, 2), hands=((0, 0, 1, 2, 2, 5), SUIT, SUIT))
    counts = Counter(random_moves(state, ANDY, 3000))
    pairs = {(0, 0), (0, 1), (0, 2), (0, 5), (1, 2), (1, 5), (2, 2), (2, 5)}
    assert set(counts) == {("bid", pair) for pair in pairs}
    assert all(280 <= count <= 470 for count in counts.values())  # 375 expected, sd about 18


def test_timeout_random_coin_bid_is_0_to_the_coins_held():
    tie, _ = play(make(coins=(3, 2, 2), bank=11), "bid 4", "bid 4", "bid 2")
    counts = Counter(random_moves(tie, ANDY, 2000))
    assert set(counts) == {("coins", (n,)) for n in range(4)}
    assert all(400 <= count <= 600 for count in counts.values())


# --- reading moves --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "move"),
    [
        ("bid 4", ("bid", (4,))),
        ("BID null", ("bid", (0,))),
        ("bid ace", ("bid", (1,))),
        ("bid 0", ("bid", (0,))),
        ("bid 1", ("bid", (1,))),
        ("  Bid  5. ", ("bid", (5,))),
    ],
)
def test_parse_a_one_tile_bid(text, move):
    assert GAME.parse_move(make(), ANDY, text) == move


def test_parse_a_two_tile_bid_under_suns_in_any_order():
    state = make(dice=(1, 2, 2, 2))
    move = GAME.parse_move(state, BOB, "bid 5 3")
    assert move == ("bid", (3, 5))
    assert GAME.move_text(move) == "bid 3 5"
    assert GAME.parse_move(state, BOB, "bid 3, 5") == move


def test_parse_bid_null_null_needs_two_nulls():
    state = make(dice=(1, 2, 2, 2), hands=((0, 0, 1, 2, 3, 4), SUIT, SUIT))
    assert GAME.parse_move(state, ANDY, "bid null null") == ("bid", (0, 0))
    with pytest.raises(MoveError, match="null"):
        GAME.parse_move(state, BOB, "bid null null")


@pytest.mark.parametrize("text", ["bid null null", "bid 5 5"])
def test_parse_a_second_tile_not_held_is_refused_as_another(text):
    state = make(dice=(1, 2, 2, 2))
    with pytest.raises(MoveError, match="do not hold another"):
        GAME.parse_move(state, ANDY, text)


@pytest.mark.parametrize(
    ("dice", "text", "count"),
    [
        (NEUTRAL, "bid 4 5", "1 tile"),
        (NEUTRAL, "bid null null", "1 tile"),
        ((1, 2, 2, 2), "bid 4", "2 tile"),
        ((1, 2, 2, 2), "bid 1 2 3", "2 tile"),
    ],
)
def test_parse_the_wrong_number_of_tiles_is_refused_with_the_number_needed(dice, text, count):
    with pytest.raises(MoveError, match=count):
        GAME.parse_move(make(dice=dice), ANDY, text)


def test_parse_a_tile_not_held_is_refused_naming_it_and_the_tiles_held():
    after, _ = auction_example_1()  # Andy gave his 5 to Cindy
    with pytest.raises(MoveError) as error:
        GAME.parse_move(after, ANDY, "bid 5")
    message = str(error.value)
    assert "do not hold a 5" in message
    assert "null null ace 2 3 4" in message


@pytest.mark.parametrize("text", ["bid 6", "bid seven", "bid", "bid 2 x", "pass", "", "coins 2", "4"])
def test_parse_text_that_is_not_a_bid_is_refused_with_an_example(text):
    with pytest.raises(MoveError, match="bid 4"):
        GAME.parse_move(make(), ANDY, text)


@pytest.mark.parametrize("stage", ["bids", "coins"])
def test_parse_a_superscript_digit_is_a_move_error_not_a_crash(stage):
    state = make()
    if stage == "coins":
        state, _ = play(state, "bid 4", "bid 4", "bid 2")
    with pytest.raises(MoveError):
        GAME.parse_move(state, ANDY, "bid ²" if stage == "bids" else "coins ²")


def test_parse_coins_only_in_the_tie_break():
    with pytest.raises(MoveError):
        GAME.parse_move(make(), ANDY, "coins 2")
    tie, _ = play(make(), "bid 4", "bid 4", "bid 2")
    assert GAME.parse_move(tie, ANDY, "coins 2") == ("coins", (2,))
    assert GAME.parse_move(tie, BOB, "Coins 0") == ("coins", (0,))
    with pytest.raises(MoveError, match="a number of coins from 0 to 2"):  # his own coins
        GAME.parse_move(tie, ANDY, "bid 4 5")


def test_parse_more_coins_than_held_is_refused_saying_how_many():
    tie, _ = play(make(), "bid 4", "bid 4", "bid 2")
    with pytest.raises(MoveError, match="2 coin"):
        GAME.parse_move(tie, ANDY, "coins 3")


@pytest.mark.parametrize("options", [{"reroll": "pawn"}, {"reroll": "coin"}])
@pytest.mark.parametrize("dice", [NEUTRAL, (1, 2, 2, 2)])
@pytest.mark.parametrize("seat", [ANDY, BOB, CINDY])
def test_parse_move_text_reads_back_every_legal_move(options, dice, seat):
    hands = ((0, 0, 1, 2, 3, 4), (1, 2, 3, 4, 4, 5), (0, 1, 2, 3, 5, 5))
    state = make(options=options, dice=dice, hands=hands, coins=(4, 1, 0), bank=13)
    for move in GAME.legal_moves(state, seat):
        assert GAME.parse_move(state, seat, GAME.move_text(move)) == move


# --- the variant: coin rerolls --------------------------------------------------------------------


def test_variant_reroll_moons_arms_costs_2_coins_and_rerolls_just_those_dice():
    before = make(options={"reroll": "coin"})
    move = GAME.parse_move(before, ANDY, "reroll moons arms")
    assert move == ("reroll", ("moons", "arms"))
    assert GAME.parse_move(before, ANDY, "Reroll arm, moon") == move
    assert GAME.move_text(move) == "reroll moons arms"
    label = label_drawing((5, 2))
    after, (event,) = play(before, "reroll moons arms", "bid 4", "bid 3", label=label)
    assert after.dice == (NEUTRAL[0], 5, NEUTRAL[2], 2)
    assert after.coins == (0, 2, 2) and after.bank == before.bank + 2
    assert after.hands == before.hands and after.scores == before.scores
    assert event["type"] == "cancelled" and "bids" not in event
    assert GAME.phase(after).label != GAME.phase(before).label


def test_variant_two_rerolls_of_one_die_both_pay_and_the_die_is_rolled_once():
    before = make(options={"reroll": "coin"})
    label = label_drawing((5, 0))
    after, (event,) = play(before, "reroll moons", "reroll arms moons", "bid 3", label=label)
    assert after.dice == (NEUTRAL[0], 5, NEUTRAL[2], 0)  # moons then arms, each drawn once
    assert after.coins == (1, 0, 2) and after.bank == before.bank + 3
    assert event["by"] == [ANDY, BOB]


def test_variant_a_reroll_needs_a_coin_for_each_die():
    before = make(options={"reroll": "coin"}, coins=(1, 0, 2), bank=15)
    assert GAME.parse_move(before, ANDY, "reroll suns") == ("reroll", ("suns",))
    with pytest.raises(MoveError, match="coin"):
        GAME.parse_move(before, ANDY, "reroll moons arms")
    with pytest.raises(MoveError):
        GAME.parse_move(before, BOB, "reroll suns")
    assert not any(move[0] == "reroll" for move in GAME.legal_moves(before, BOB))


def test_variant_no_pawns_with_coin_rerolls_and_no_rerolls_with_pawns():
    with pytest.raises(MoveError):
        GAME.parse_move(make(options={"reroll": "coin"}), ANDY, "pawn")
    with pytest.raises(MoveError):
        GAME.parse_move(make(), ANDY, "reroll moons")


@pytest.mark.parametrize("text", ["reroll", "reroll stars", "reroll moons 2"])
def test_variant_a_reroll_must_name_dice(text):
    with pytest.raises(MoveError, match="suns, moons, crowns, arms"):
        GAME.parse_move(make(options={"reroll": "coin"}), ANDY, text)


def test_variant_property_no_seat_gets_the_arms_bonus_twice_in_one_auction():
    """Many whole coin-variant games with random legal moves (rerolls often): the Ace
    of Arms pays at most once an auction (B10, B15), and a cancel's announcement names
    exactly the seats whose scores rose, by the bonus."""
    seen = Counter()
    for game in range(80):
        chooser = random.Random(game)
        seed = f"arms once {game}".encode()
        options = {"reroll": "coin", "max_auctions": 300}
        states, _, moves, events = random_game(seed, chooser.choice([3, 4]), options, chooser)
        paid: dict[int, list[int]] = {}  # auction -> the seats its Ace of Arms paid
        for before, after, made, phase_events in zip(states[:-1], states[1:], moves, events, strict=True):
            (event,) = phase_events
            if event["type"] == "tie":
                continue
            # an auction's announcement pays for the next auction's first roll; a cancel for its own
            auction = event["auction"] + (event["type"] == "auction")
            seats = paid.setdefault(auction, [])
            assert not set(seats) & set(event["arms_bonus"]), (game, auction, seats, event)
            seats += event["arms_bonus"]
            if event["type"] == "cancelled":
                showed = before.ace("arms")
                seen["reroll", showed, after.ace("arms"), bool(event["arms_bonus"])] += 1
                if showed:
                    assert event["arms_bonus"] == [] and after.scores == before.scores
                rise = [after.scores[s] - before.scores[s] for s in range(len(after.scores))]
                assert rise == [5 * after.factor if s in event["arms_bonus"] else 0 for s in range(len(rise))]
            assert all(move[0] != "pawn" for move in made.values())
    # the games did what the test is about: rerolls under the Ace of Arms, and one bringing it up that paid
    assert seen["reroll", True, True, False] > 10
    assert seen["reroll", False, True, True] > 0


# --- properties over whole games ------------------------------------------------------------------

MAX_PHASES = 400


def random_game(seed: bytes, seats: int, options: dict, chooser: random.Random):
    """A whole game: people choose among the legal moves (mostly bids), some
    leave for a bot, bots and nobody else move by ``random_move``.  Returns
    (states, records, moves, events): states[0] is the setup, states[n] the
    state after phase n."""
    state = GAME.setup(seats, setup_rng(seed), options)
    states, records, moves_made, events_seen = [state], [], [], []
    for number in range(1, MAX_PHASES + 1):
        phase = GAME.phase(state)
        if phase is None:
            break
        new_bots = ()
        if chooser.random() < 0.02:
            seat = chooser.randrange(seats)
            if seat not in state.bots:
                new_bots = (seat,)
                state = GAME.replace_by_bot(state, seat)
        moves = {}
        for seat in phase.movers:
            legal = GAME.legal_moves(state, seat)
            if seat in state.bots:
                moves[seat] = GAME.random_move(state, seat, random_move_rng(seed, number, seat))
            elif chooser.random() < 0.85:
                moves[seat] = chooser.choice([move for move in legal if move[0] in ("bid", "coins")])
            else:
                moves[seat] = chooser.choice(legal)
        state, events = GAME.resolve(state, moves, resolve_rng(seed, number))
        states.append(state)
        records.append(PhaseRecord(number, {seat: GAME.move_text(move) for seat, move in moves.items()}, new_bots))
        moves_made.append(moves)
        events_seen.append(events)
    return states, records, moves_made, events_seen


seeds = st.binary(min_size=1, max_size=32)
seat_counts = st.sampled_from([3, 4])
game_options = st.fixed_dictionaries(
    {
        "reroll": st.sampled_from(["pawn", "coin"]),
        "max_auctions": st.sampled_from([1, 2, 3, 5, 8, 300]),
    }
)
choosers = st.randoms(use_true_random=False)


@settings(max_examples=60, deadline=None)
@given(seeds, seat_counts, game_options, choosers)
def test_property_six_tiles_each_and_all_tiles_conserved(seed, seats, options, chooser):
    states, *_ = random_game(seed, seats, options, chooser)
    pool = Counter(SUIT * seats)
    for state in states:
        assert all(len(hand) == 6 and list(hand) == sorted(hand) for hand in state.hands)
        assert tile_pool(state) == pool


@settings(max_examples=60, deadline=None)
@given(seeds, seat_counts, game_options, choosers)
def test_property_coins_are_conserved_between_players_and_bank(seed, seats, options, chooser):
    states, _, _, events = random_game(seed, seats, options, chooser)
    for state in states:
        assert total_coins(state) == COINS_PER_SEAT * seats
        assert state.bank >= 0 and min(state.coins) >= 0
    for after, phase_events in zip(states[1:], events, strict=True):
        for event in phase_events:
            if "coins" in event:  # an auction's or a cancel's announcement reports the coins
                assert (tuple(event["coins"]), event["bank"]) == (after.coins, after.bank)


@settings(max_examples=60, deadline=None)
@given(seeds, seat_counts, game_options, choosers)
def test_property_games_end_by_the_rules(seed, seats, options, chooser):
    states, *_ = random_game(seed, seats, options, chooser)
    final = states[-1]
    assert GAME.phase(final) is None, f"no end after {MAX_PHASES} phases"
    assert final.auction <= options["max_auctions"]
    result = GAME.result(final)
    assert result.scores == final.scores
    assert result.winner is None or result.winner not in final.bots
    top = max(final.scores)
    if result.winner is not None:  # the single highest seat of all, bots included (B9, B11)
        others = [seat for seat in range(seats) if seat != result.winner]
        assert all(final.scores[result.winner] > final.scores[seat] for seat in others)
    else:  # nobody: a tie on top, or a bot on top
        leaders = [seat for seat in range(seats) if final.scores[seat] == top]
        assert len(leaders) > 1 or leaders[0] in final.bots
    if final.auction < options["max_auctions"]:  # ended before the cap: by reaching 100
        assert top >= 100 and final.scores.count(top) == 1
    for before, after in itertools.pairwise(states):  # (the rest of the contract: test_contract.py)
        assert GAME.phase(before).sealed  # no turns: every phase is a sealed round
        assert after.pawns <= before.pawns  # a pawn, once played, never comes back
    if options["reroll"] == "coin":
        assert all(state.pawns == frozenset() for state in states)
