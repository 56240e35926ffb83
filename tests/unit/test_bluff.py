"""Bluff Auction against its rule text (docs/rules/bluff-auction.txt) and
the rulings F1-F19 (docs/games/bluff-auction.md).

Names start with the part of the rules they check (setup_, bid_, resolve_,
acquire_, end_, secret_, parse_); test_property_... are Hypothesis
properties over whole random games.  A state for a situation is a real setup
state changed with dataclasses.replace.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.record import (
    PhaseRecord,
    random_move_rng,
    replay,
    resolve_rng,
    setup_rng,
    verify,
)
from referee.rules import MoveError, OptionError
from referee.rules.bluff import (
    COLOURS,
    ERAS,
    SPECIALS,
    TRACKS,
    TYPES,
    BluffAuction,
    BluffState,
    best_partition,
    is_set,
    set_points,
    standing,
)

GAME = BluffAuction()
SEED = b"bluff auction rules tests"
A, B, C = 0, 1, 2
EVERY_ARTIFACT = Counter((c, e, t) for c in COLOURS for e in ERAS for t in TYPES)
EVERY_SPECIAL = Counter(s for group in SPECIALS.values() for s in group)


def start(seats: int = 3, seed: bytes = SEED, **options) -> BluffState:
    return GAME.setup(seats, setup_rng(seed), options)


def bidding(seats: int = 3, turn: int = A, **changes) -> BluffState:
    """Bidding with ``turn`` to move, every die black unless ``changes`` say."""
    state = start(seats)
    state = replace(
        state,
        stage="bidding",
        turn=turn,
        passes=0,
        dice=tuple(("black",) * len(d) for d in state.dice),
        community=("black",) * len(state.community),
    )
    return replace(state, **changes)


def t(track: str) -> int:
    return TRACKS.index(track)


def art(text: str) -> tuple[str, str, str]:
    colour, era, kind = text.split()
    return (colour, era, kind)


def census(state: BluffState) -> tuple[Counter, Counter]:
    tiles = [
        *(x for stack in state.stacks for x in stack),
        *(x for x in state.offer if x is not None),
        *(x for m in state.museum for x in m),
        *(x for e in state.exhibits for s in e for x in s),
        *(x for _, x in state.won),
        *state.gone,
        *(x for group in state.specials for x in group),
        *(x for h in state.held for x in h),
    ]
    return Counter(x for x in tiles if isinstance(x, tuple)), Counter(x for x in tiles if isinstance(x, str))


# --- setup ------------------------------------------------------------------------------


@pytest.mark.parametrize("seats, tokens, dice, community", [(2, 4, 4, 0), (3, 3, 3, 1), (4, 2, 2, 2), (5, 2, 2, 3)])
def test_setup_tokens_dice_and_community_dice_by_player_count(seats, tokens, dice, community):
    state = start(seats)
    assert state.tokens == (tokens,) * seats and [len(d) for d in state.dice] == [dice] * seats
    assert len(state.community) == community
    assert state.capacity(0) == (5 if seats == 5 else 6)


def test_setup_offers_one_tile_of_each_colour_and_a_stage_one_special():
    state = start(4)
    assert state.offer[0] in SPECIALS[1]
    for track, tile in zip(TRACKS[1:], state.offer[1:], strict=True):
        assert tile[0] == track
    assert census(state) == (EVERY_ARTIFACT, EVERY_SPECIAL)


def test_setup_start_player_and_offer_vary_with_the_seed():
    states = [start(4, bytes([n])) for n in range(40)]
    assert {s.start for s in states} == {0, 1, 2, 3}
    assert len({s.offer for s in states}) > 30


@pytest.mark.parametrize("seats", [1, 6])
def test_setup_refuses_other_than_2_to_5_players(seats):
    with pytest.raises(OptionError):
        start(seats)


def test_setup_refuses_bad_options():
    with pytest.raises(OptionError):
        start(3, exhibit_dice=3)


# --- bidding ----------------------------------------------------------------------------


def test_bid_must_outbid_the_high_bid_and_may_go_one_over_anyones_reach():
    state = bidding(bids=((), ((B, 2, 1, False),), (), (), (), ()), placed=1)
    legal = GAME.legal_moves(state, A)
    assert ("bid", t("black"), 2) not in legal and ("bid", t("black"), 3) in legal
    rolled = state.rolled()  # nobody has a virtual die: no one can count more than every die rolled
    assert ("bid", t("red"), rolled + 1) in legal and ("bid", t("red"), rolled + 2) not in legal  # F8
    with pytest.raises(MoveError, match="at least 3"):
        GAME.parse_move(state, A, "bid black 2")
    with pytest.raises(MoveError, match=f"at most {rolled + 1}: no one can count more than {rolled}"):
        GAME.parse_move(state, A, f"bid red {rolled + 2}")


def test_bid_one_over_a_rivals_virtual_dice_blocks_them():
    """F8: the text allows any bid; a bid no one can win still stops the
    others bidding on that track.  B's Virtual Purple Die lets B count one
    more than every die rolled; A may bid one more still, and then B cannot
    bid there."""
    held = (frozenset(), frozenset({"vpurple"}), frozenset())
    state = bidding(held=held)
    rolled = state.rolled()
    assert ("bid", t("red"), rolled + 2) in GAME.legal_moves(state, A)
    after, _ = GAME.resolve(state, {A: ("bid", t("red"), rolled + 2)}, resolve_rng(SEED, 1))
    assert not any(m[0] == "bid" and m[1] == t("red") for m in GAME.legal_moves(after, B))


def test_bid_by_the_first_rulings_never_over_the_bidders_own_reach():
    state = replace(bidding(), rulings=1)
    legal = GAME.legal_moves(state, A)
    rolled = state.rolled()
    assert ("bid", t("red"), rolled) in legal and ("bid", t("red"), rolled + 1) not in legal
    with pytest.raises(MoveError, match="cannot win"):
        GAME.parse_move(state, A, f"bid red {rolled + 1}")


def test_bid_you_cannot_directly_overbid_yourself_but_may_bid_under_anothers_high():
    state = bidding(bids=((), ((A, 2, 1, False),), (), (), (), ()), placed=1)
    assert not any(m[0] == "bid" and m[1] == t("black") for m in GAME.legal_moves(state, A))
    with pytest.raises(MoveError, match="yours"):
        GAME.parse_move(state, A, "bid black 5")


def test_bid_outbid_by_2_and_overbid_with_tie_and_both():
    held = (frozenset(), frozenset({"outbid2"}), frozenset())
    state = bidding(bids=((), ((B, 3, 1, False),), (), (), (), ()), placed=1, held=held)
    assert min(m[2] for m in GAME.legal_moves(state, A) if m[0] == "bid" and m[1] == t("black")) == 5
    tie = (frozenset({"tie"}), frozenset(), frozenset())
    state = replace(state, held=tie)
    assert min(m[2] for m in GAME.legal_moves(state, A) if m[0] == "bid" and m[1] == t("black")) == 3
    after, events = GAME.resolve(state, {A: ("bid", t("black"), 3)}, resolve_rng(SEED, 1))
    assert events[0]["tied"] and after.high(t("black"))[0] == A  # the later tie ranks above
    # one tied bid at a time
    after = replace(after, turn=A, bids=(*after.bids[:2], ((C, 2, 5, False),), *after.bids[3:]))
    assert min(m[2] for m in GAME.legal_moves(after, A) if m[0] == "bid" and m[1] == t("red")) == 3
    both = (frozenset({"tie"}), frozenset({"outbid2"}), frozenset())
    state = replace(state, held=both)
    assert min(m[2] for m in GAME.legal_moves(state, A) if m[0] == "bid" and m[1] == t("black")) == 4


def test_bid_high_bids_are_locked_overbid_tokens_move():
    bids = ((), ((A, 2, 1, False), (B, 3, 2, False)), ((A, 4, 3, False),), (), (), ())
    state = bidding(bids=bids, placed=3, tokens=(0, 3, 3))
    legal = GAME.legal_moves(state, A)
    assert ("move", t("black"), 2, t("yellow"), 1) in legal  # the overbid 2 on black
    assert not any(m[0] == "move" and m[1] == t("red") for m in legal)  # the high 4 on red is locked
    assert not any(m[0] == "bid" for m in legal)  # no token in hand
    after, _events = GAME.resolve(state, {A: ("move", t("black"), 2, t("yellow"), 1)}, resolve_rng(SEED, 1))
    assert after.bids[t("black")] == ((B, 3, 2, False),) and after.bids[t("yellow")][0][:2] == (A, 1)


def test_bid_cannot_pass_with_tokens_in_hand_must_pass_when_every_bid_is_high():
    state = bidding()
    assert ("pass",) not in GAME.legal_moves(state, A)
    with pytest.raises(MoveError, match="cannot pass"):
        GAME.parse_move(state, A, "pass")
    bids = ((), ((A, 2, 1, False),), ((A, 2, 2, False),), ((A, 2, 3, False),), (), ())
    state = bidding(bids=bids, placed=3, tokens=(0, 3, 3), turn=C)
    after, events = GAME.resolve(state, {C: ("bid", t("green"), 1)}, resolve_rng(SEED, 1))
    assert {"type": "pass", "seat": A, "forced": True} in [
        {k: v for k, v in e.items() if k != "scores"} for e in events
    ]  # A had nothing but pass
    assert after.turn == B


def test_bid_the_round_ends_when_everyone_has_passed_in_succession():
    state = bidding(tokens=(0, 0, 0), bids=((), ((A, 1, 1, False),), ((B, 1, 2, False),), ((C, 1, 3, False),), (), ()))
    # nobody holds a token or an overbid one: everyone passes at once, and the auctions resolve
    _after, events = GAME.resolve(replace(state, tokens=(1, 0, 0)), {A: ("bid", t("blue"), 1)}, resolve_rng(SEED, 1))
    assert [e["type"] for e in events].count("auction") == 6


# --- resolution -------------------------------------------------------------------------


def resolve_now(state: BluffState) -> tuple[BluffState, list]:
    """Everyone has passed: resolve the auctions (the last pass ends bidding)."""
    state = replace(state, tokens=(0,) * state.seats, passes=state.seats - 1, turn=A)
    return GAME.resolve(state, {A: ("pass",)}, resolve_rng(SEED, 1))


def test_resolve_purple_is_wild_and_the_highest_bid_not_over_wins():
    dice = (("red", "purple", "black"), ("red", "green", "green"), ("blue", "blue", "blue"))
    bids = ((), (), ((A, 4, 1, False), (B, 3, 2, False), (C, 2, 3, False)), (), (), ())
    state = bidding(dice=dice, community=("yellow",), bids=bids, placed=3)
    after, events = resolve_now(state)
    red = next(e for e in events if e["type"] == "auction" and e["track"] == "red")
    assert red["worth"] == {"0": 3, "1": 3, "2": 3}  # two red and one purple
    assert red["winner"] == B and red["value"] == 3  # A's 4 is over
    assert (B, state.offer[t("red")]) in after.won or any(x == state.offer[t("red")] for x in after.museum[B])


def test_resolve_when_every_bid_is_over_or_no_one_bid_the_tile_leaves_the_game():
    bids = ((), ((A, 9, 1, False),), (), (), (), ())
    state = bidding(bids=bids, placed=1, dice=(("green",) * 3,) * 3, community=("green",))
    after, events = resolve_now(state)
    black = next(e for e in events if e["type"] == "auction" and e["track"] == "black")
    assert black["winner"] is None and state.offer[t("black")] in after.gone
    assert all(state.offer[t(c)] in after.gone for c in ("red", "yellow", "blue", "green"))  # unbid


def test_resolve_weapons_and_the_virtual_purple_die_count_for_their_owner_only():
    museum = ((art("red ancient weapon"),), (), ())
    dice = (("black",) * 3,) * 3
    bids = ((), (), ((A, 2, 1, False), (B, 1, 2, False)), (), (), ())
    state = bidding(
        dice=dice,
        community=("black",),
        bids=bids,
        placed=2,
        museum=museum,
        held=(frozenset({"vpurple"}), frozenset(), frozenset()),
    )
    _after, events = resolve_now(state)
    red = next(e for e in events if e["type"] == "auction" and e["track"] == "red")
    assert red["worth"] == {"0": 2, "1": 0} and red["winner"] == A


def test_resolve_the_one_shot_tile_is_offered_only_when_it_wins_the_auction():
    dice = (("black",) * 3,) * 3
    bids = ((), (), ((A, 2, 1, False), (B, 1, 2, False)), (), (), ())
    held = (frozenset({"oneshot"}), frozenset(), frozenset())
    state = bidding(dice=dice, community=("red",), bids=bids, placed=2, held=held)
    after, events = resolve_now(state)
    assert after.stage == "oneshot" and after.turn == A
    assert GAME.phase(after).label == f"Round {after.round} red auction: the 1-shot tile"
    used, events = GAME.resolve(after, {A: ("use",)}, resolve_rng(SEED, 2))
    red = next(e for e in events if e["type"] == "auction" and e["track"] == "red")
    assert red["winner"] == A and "oneshot" not in used.held[A] and "oneshot" in used.gone
    kept, events = GAME.resolve(after, {A: ("keep",)}, resolve_rng(SEED, 2))
    red = next(e for e in events if e["type"] == "auction" and e["track"] == "red")
    assert red["winner"] == B and "oneshot" in kept.held[A]


# --- acquiring -----------------------------------------------------------------------------


def acquiring(museum: tuple, tile, seat: int = A, **changes) -> BluffState:
    museums = [(), (), ()]
    museums[seat] = tuple(museum)
    return replace(bidding(), stage="acquire", turn=None, won=((seat, tile),), museum=tuple(museums), **changes)


def test_acquire_place_exhibit_and_score_a_set():
    museum = (art("red ancient tool"), art("red modern art"), art("blue ancient art"))
    state = acquiring(museum, art("red medieval weapon"))
    legal = GAME.legal_moves(state, A)
    assert ("place",) in legal
    move = GAME.parse_move(state, A, "exhibit red ancient tool, red modern art, red medieval weapon")
    after, events = GAME.resolve(state, {A: move}, resolve_rng(SEED, 1))
    assert after.points[A] == set_points(3) == 6
    assert after.museum[A] == (art("blue ancient art"),)
    assert len(after.exhibits[A]) == 1 and len(after.dice[A]) == 3 + 1  # its die rolls next round
    assert events[0]["type"] == "exhibit"


def test_acquire_a_full_museum_must_exhibit_or_discard():
    museum = tuple(art(f"{c} ancient tool") for c in COLOURS) + (art("red medieval art"),)
    state = acquiring(museum, art("blue modern weapon"))
    legal = GAME.legal_moves(state, A)
    assert ("place",) not in legal
    assert ("discard", art("blue modern weapon")) in legal and ("discard", art("red medieval art")) in legal
    assert any(m[0] == "exhibit" for m in legal)
    with pytest.raises(MoveError, match="full"):
        GAME.parse_move(state, A, "place")


def test_acquire_wild_attribute_joins_any_set_and_other_specials_go_beside_the_museum():
    assert is_set(["wild", art("red ancient tool"), art("blue medieval tool")])
    assert not is_set([art("red ancient tool"), art("blue medieval art"), art("green modern weapon")])
    state = acquiring((art("red ancient tool"), art("red medieval tool")), "wild")
    assert ("exhibit", (art("red ancient tool"), art("red medieval tool"), "wild")) in GAME.legal_moves(state, A)
    # a special tile won goes beside the museum without a question, then the next tile is asked
    state = replace(acquiring((), "outbid2", seat=B), won=((B, "outbid2"), (A, art("red ancient art"))))
    museum = (art("red ancient tool"), art("red medieval tool"))
    state = replace(state, museum=(museum, (), ()))
    after, events = GAME.resolve(
        replace(state, won=((A, art("red modern tool")), (B, "outbid2"))), {A: ("place",)}, resolve_rng(SEED, 1)
    )
    assert "outbid2" in after.held[B] and any(e["type"] == "special" for e in events)


def test_acquire_exhibit_spaces_full_no_more_exhibits():
    full = tuple((art("red ancient tool"),) * 3 for _ in range(6))
    museum = (art("red medieval tool"), art("red modern tool"))
    state = acquiring(museum, art("red ancient art"), exhibits=(full, (), ()))
    assert not any(m[0] == "exhibit" for m in GAME.legal_moves(state, A))


# --- the end -------------------------------------------------------------------------------


def test_end_the_museum_is_split_into_the_groups_that_score_most():
    tiles = (art("red ancient tool"), art("red medieval tool"), art("red modern tool"), art("blue ancient art"))
    points, _groups = best_partition(tiles)
    assert points == set_points(3) + set_points(1) == 7
    assert best_partition(())[0] == 0


def test_end_two_tiles_score_3_only_when_they_share_an_attribute():
    """F18: the museum "may be scored as normal", and a set is tiles sharing
    an attribute; two unrelated tiles are two lone tiles (1 + 1)."""
    assert best_partition((art("red ancient tool"), art("blue medieval art")))[0] == 2
    assert best_partition((art("red ancient tool"), art("blue ancient art")))[0] == 3  # both ancient
    assert best_partition((art("red ancient tool"), "wild"))[0] == 3  # Wild Attribute shares any
    four = (art("red ancient tool"), art("red medieval weapon"), art("blue modern art"), art("green modern art"))
    assert best_partition(four) == (
        6,
        ((art("red ancient tool"), art("red medieval weapon")), (art("blue modern art"), art("green modern art"))),
    )
    state = replace(start(3), museum=((art("red ancient tool"), art("blue medieval weapon")), (), ()))
    assert standing(state, A)["museum"] == 2
    assert standing(replace(state, rulings=1), A)["museum"] == 3  # the first rulings: any two tiles


def test_end_art_stars_and_four_points():
    state = replace(
        start(3),
        museum=((art("red ancient art"), art("blue modern art")), (), ()),
        held=(frozenset({"four"}), frozenset(), frozenset()),
    )
    mine = standing(state, A)
    assert mine["stars"] == 3 and mine["four"] == 4 and mine["museum"] == 3
    assert mine["total"] == 3 + 3 + 4


def test_end_a_tie_goes_to_the_fewest_exhibit_spaces_filled_and_a_bot_never_wins():
    one = ((art("red ancient tool"),) * 3,)
    state = replace(start(3), stage="over", points=(6, 6, 0), exhibits=(one + one, one, ()))
    assert GAME.result(state).winner == B
    assert GAME.result(replace(state, bots=frozenset({B}))).winner == A
    assert GAME.result(replace(state, exhibits=(one, one, ()))).winner is None


# --- secrets --------------------------------------------------------------------------------


def test_secret_dice_reach_only_their_owner():
    state = start(3)
    public = GAME.view(state, None)
    assert "dice" not in public and public["dice_counts"] == [3, 3, 3] and public["shown"] == {}
    assert GAME.view(state, B)["dice"] == list(state.dice[B])
    news = GAME.private_news(None, state, B)
    assert news == {"round": 1, "dice": list(state.dice[B])}
    assert GAME.private_news(state, state, B) is None


def test_secret_a_reroll_is_news_for_its_owner_and_its_count_for_everyone():
    state = replace(
        start(3), stage="tools", tool_step=1, museum=((art("red ancient tool"),), (), ()), dice=(("black",) * 3,) * 3
    )
    assert GAME.phase(state).movers == (A,)
    after, events = GAME.resolve(state, {A: ("reroll", (1, 2, 3))}, resolve_rng(b"some", 1))
    assert {k: v for k, v in events[0].items() if k != "scores"} == {"type": "rerolled", "counts": {"0": 3}}
    if after.dice[A] != state.dice[A]:
        assert GAME.private_news(state, after, A)["dice"] == list(after.dice[A])
    assert GAME.private_news(state, after, B) is None


# --- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, move",
    [
        ("bid red 3", ("bid", 2, 3)),
        ("Bid 3 on red.", ("bid", 2, 3)),
        ("bid purple 1", ("bid", 0, 1)),
        ("pass", ("pass",)),
    ],
)
def test_parse_bids(text, move):
    state = (
        bidding(tokens=(1, 3, 3))
        if move != ("pass",)
        else bidding(tokens=(0, 3, 3), bids=((), ((A, 1, 1, False),), (), (), (), ()))
    )
    assert GAME.parse_move(state, A, text) == move


def test_parse_move_of_a_token():
    bids = ((), ((A, 2, 1, False), (B, 3, 2, False)), (), (), (), ())
    state = bidding(bids=bids, placed=2, tokens=(0, 3, 3))
    assert GAME.parse_move(state, A, "move black to red 5") == ("move", 1, 2, 2, 5)
    with pytest.raises(MoveError, match="track 'pink'"):
        GAME.parse_move(state, A, "move black to pink 5")


def test_parse_rerolls():
    state = replace(start(3), stage="tools", tool_step=1, museum=((art("red ancient tool"),), (), ()))
    assert GAME.parse_move(state, A, "reroll 3 1") == ("reroll", (1, 3))
    assert GAME.parse_move(state, A, "reroll all") == ("reroll", (1, 2, 3))
    assert GAME.parse_move(state, A, "keep") == ("reroll", ())
    with pytest.raises(MoveError, match="1 to 3"):
        GAME.parse_move(state, A, "reroll 4")


# --- properties over whole games -------------------------------------------------------------


def random_game(seed: bytes, seats: int, chooser: random.Random, check=None):
    """Movers mostly play as a timed-out player would (F15), sometimes a
    uniformly random legal move; now and then a seat's player leaves."""
    state = GAME.setup(seats, setup_rng(seed), {})
    states, records, events_seen = [state], [], []
    number = 0
    while (phase := GAME.phase(state)) is not None:
        number += 1
        new_bots = ()
        if chooser.random() < 0.003:
            seat = chooser.randrange(seats)
            if seat not in state.bots:
                new_bots = (seat,)
                state = GAME.replace_by_bot(state, seat)
        moves = {}
        for seat in phase.movers:
            legal = GAME.legal_moves(state, seat)
            assert legal, (phase.label, seat)  # a player always has a legal move
            if seat in state.bots or chooser.random() < 0.7:
                moves[seat] = GAME.random_move(state, seat, random_move_rng(seed, number, seat))
            else:
                moves[seat] = chooser.choice(legal)
            assert moves[seat] in legal
        before = state
        state, events = GAME.resolve(before, moves, resolve_rng(seed, number))
        if check:
            check(before, moves, state, events)
        states.append(state)
        records.append(PhaseRecord(number, {s: GAME.move_text(m) for s, m in moves.items()}, new_bots))
        events_seen.append(events)
    return states, records, events_seen


seeds = st.binary(min_size=1, max_size=12)
seat_counts = st.integers(2, 5)
choosers = st.integers(0, 2**32).map(random.Random)


@settings(max_examples=25, deadline=None)
@given(seeds, seat_counts, choosers)
def test_property_every_tile_is_always_somewhere_and_every_game_ends(seed, seats, chooser):
    def check(before, moves, after, events):
        assert census(after) == (EVERY_ARTIFACT, EVERY_SPECIAL)
        for s in range(seats):
            assert len(after.museum[s]) <= after.capacity(s)
            assert len(after.exhibits[s]) <= (5 if seats == 5 else 6)
            assert all(is_set(x) for x in after.exhibits[s])

    states, _, _events = random_game(seed, seats, chooser, check)
    final = states[-1]
    assert final.stage == "over" and final.round == 9 and GAME.result(final) is not None
    assert all(GAME.result(s) is None for s in states[:-1])
    per_round = Counter(s.round for s in states[:-1] if s.stage == "bidding")
    # a round's bidding ends: each bid raises a track (or ties once), and values are capped
    assert max(per_round.values()) <= 6 * (max(s.rolled() for s in states) + 4) * seats + seats * 10


@settings(max_examples=20, deadline=None)
@given(seeds, seat_counts, choosers)
def test_property_the_public_view_and_events_hold_no_unshown_die(seed, seats, chooser):
    """Two tables that differ only in dice not yet shown look the same to the
    public, and no event of a phase that shows no dice names a face."""

    def check(before, moves, after, events):
        faces = ("black", "red", "yellow", "blue", "green", "purple")
        hidden = [f for f in faces if f not in before.shown]
        if before.stage in ("bidding", "tools") and len(hidden) > 1:
            other = replace(
                before,
                dice=tuple(
                    tuple(hidden[(hidden.index(x) + 1) % len(hidden)] if x in hidden else x for x in d)
                    for d in before.dice
                ),
            )
            assert GAME.view(other, None) == GAME.view(before, None)
        for event in events:
            if event["type"] in ("rerolled", "pass"):  # what a turn or a reroll tells: never a face
                assert set(event) <= {"type", "seat", "forced", "counts", "scores"}

    random_game(seed, seats, chooser, check)


@pytest.mark.parametrize(
    "text, move",
    [
        ("bid red three", ("bid", 2, 3)),
        ("Bid 3 on the red track, please", ("bid", 2, 3)),
        ("bid red, 3", ("bid", 2, 3)),
    ],
)
def test_parse_what_people_write_for_a_bid(text, move):
    assert GAME.parse_move(bidding(), A, text) == move


def test_parse_what_people_write_for_a_move_a_reroll_and_a_tile():
    bids = ((), ((A, 1, 1, False), (B, 2, 2, False)), (), (), (), ())
    state = bidding(bids=bids, placed=2, tokens=(0, 3, 3))
    assert GAME.parse_move(state, A, "move black 1 to red 5") == ("move", 1, 1, 2, 5)
    assert GAME.parse_move(state, A, "I pass") == ("pass",)
    with pytest.raises(MoveError, match="Say the bid the token makes on red"):
        GAME.parse_move(state, A, "move black to red")
    tools = replace(start(3), stage="tools", tool_step=1, museum=((art("red ancient tool"),), (), ()))
    assert GAME.parse_move(tools, A, "reroll dice 1 and 3") == ("reroll", (1, 3))
    assert GAME.parse_move(tools, A, "re-roll 2") == ("reroll", (2,))
    assert GAME.parse_move(tools, A, "keep all") == GAME.parse_move(tools, A, "pass") == ("reroll", ())
    full = tuple(art(f"{c} ancient tool") for c in COLOURS) + (art("red medieval art"),)
    won = acquiring(full, art("blue modern weapon"))
    assert GAME.parse_move(won, A, "discard the new tile") == ("discard", art("blue modern weapon"))
    assert GAME.parse_move(acquiring((), art("blue modern weapon")), A, "place it") == ("place",)


def test_bid_the_token_a_tie_holder_moves_does_not_count_as_its_standing_tie():
    held = (frozenset({"tie"}), frozenset(), frozenset())
    bids = ((), ((A, 2, 1, True), (B, 3, 2, False)), ((C, 2, 3, False),), (), (), ())
    state = bidding(bids=bids, placed=3, tokens=(0, 3, 3), held=held)
    assert ("move", t("black"), 2, t("red"), 2) in GAME.legal_moves(state, A)  # a tie, once the old one moves


def test_bid_a_refusal_lists_every_track_first():
    first = GAME.legal_moves(bidding(), A)[:6]
    assert [m[1] for m in first] == list(range(6)) and {m[2] for m in first} == {1}


def test_setup_exhibit_dice_two_each_for_at_most_three_exhibits():
    sets = tuple((art("red ancient tool"),) * 3 for _ in range(4))
    state = replace(start(3, exhibit_dice=2), exhibits=(sets, (), ()))
    state = replace(state, stage="acquire", won=(), round=1)
    after, _ = GAME.resolve(
        replace(state, stage="bidding", turn=A, tokens=(0, 0, 0), passes=2), {A: ("pass",)}, resolve_rng(SEED, 1)
    )
    assert len(after.dice[A]) == 3 + 2 * 3 and len(after.dice[B]) == 3


def test_secret_a_reroll_that_lands_on_the_same_faces_still_tells_its_owner_their_dice():
    state = replace(start(3), stage="tools", tool_step=1, museum=((art("red ancient tool"),), (), ()))
    after = replace(state, tool_step=2, stage="bidding")  # as if the reroll rolled the same faces
    assert GAME.private_news(state, after, A) == {"round": state.round, "dice": list(state.dice[A])}
    assert GAME.private_news(state, after, B) is None


def test_powers_2_dice_extra_bid_token_and_extra_museum_room_apply_from_the_next_round():
    held = (frozenset({"twodice", "token", "room"}), frozenset(), frozenset())
    state = replace(bidding(tokens=(0, 0, 0), passes=2, turn=A), held=held)
    after, _ = GAME.resolve(state, {A: ("pass",)}, resolve_rng(SEED, 1))  # the round ends; the next begins
    assert after.round == 2
    assert len(after.dice[A]) == 3 + 2 and len(after.dice[B]) == 3
    assert after.tokens == (3 + 1, 3, 3)
    assert after.capacity(A) == 8 and after.capacity(B) == 6


def test_acquire_a_set_matching_more_than_one_attribute_is_nothing_special():
    tools = (art("red ancient tool"), art("blue ancient tool"))
    state = acquiring(tools, art("green ancient tool"))
    after, _events = GAME.resolve(state, {A: ("exhibit", (*tools, art("green ancient tool")))}, resolve_rng(SEED, 1))
    assert after.points[A] == 6  # three tiles: 6, though they share era and type


# --- F20: the token a move takes ---------------------------------------------------------


def two_on_purple(**changes) -> BluffState:
    """A 2-player game: B bid purple 1, A 2, B 3, A 4 (the issue's case); B is to move."""
    bids = (((B, 1, 1, False), (A, 2, 2, False), (B, 3, 3, False), (A, 4, 4, False)), (), (), (), (), ())
    return replace(bidding(seats=2, turn=B), bids=bids, placed=4, tokens=(2, 2), **changes)


def test_move_the_token_named_by_its_value_moves():
    state = two_on_purple()
    move = GAME.parse_move(state, B, "move purple 3 to red 1")
    assert move == ("move", t("purple"), 3, t("red"), 1)
    assert GAME.move_text(move) == "move purple 3 to red 1"  # the receipt names the token
    after, events = GAME.resolve(state, {B: move}, resolve_rng(SEED, 1))
    assert [b[:2] for b in after.bids[t("purple")]] == [(B, 1), (A, 2), (A, 4)]  # B's 1 stayed
    assert after.bids[t("red")][0][:2] == (B, 1)
    assert events[0]["type"] == "move" and events[0]["token"] == 3


def test_move_without_a_value_with_two_movable_tokens_is_ambiguous():
    state = two_on_purple()
    with pytest.raises(MoveError, match="ambiguous") as refused:
        GAME.parse_move(state, B, "move purple to red 5")
    assert "'move purple 1 to red 5' or 'move purple 3 to red 5'" in str(refused.value)
    with pytest.raises(MoveError, match="ambiguous"):
        GAME.read_move(state, B, "I'll move purple to red 5, please.")  # as a player's mail reads it


def test_move_without_a_value_takes_the_only_movable_token():
    bids = (((B, 1, 1, False), (A, 2, 2, False), (B, 3, 3, False)), (), (), (), (), ())
    state = replace(two_on_purple(), bids=bids, placed=3)  # B's 3 is the high bid: only its 1 may move
    assert GAME.parse_move(state, B, "move purple to red 5") == ("move", t("purple"), 1, t("red"), 5)
    assert GAME.read_move(state, B, "move purple to red five") == ("move", t("purple"), 1, t("red"), 5)


def test_move_a_value_the_player_has_no_token_of_or_the_locked_high_token():
    state = replace(two_on_purple(), turn=A)
    with pytest.raises(MoveError, match="no token of 3 on purple"):
        GAME.parse_move(state, A, "move purple 3 to red 1")
    with pytest.raises(MoveError, match="token of 4 on purple is the high bid there: high bids are locked in"):
        GAME.parse_move(state, A, "move purple 4 to red 1")
    assert GAME.parse_move(state, A, "move purple 2 to red 1") == ("move", t("purple"), 2, t("red"), 1)
    with pytest.raises(MoveError, match="no overbid token on red"):
        GAME.parse_move(state, A, "move red to black 1")


def test_move_every_movable_token_is_offered_and_named():
    state = two_on_purple()
    moves = {m[:3] for m in GAME.legal_moves(state, B) if m[0] == "move"}
    assert moves == {("move", t("purple"), 1), ("move", t("purple"), 3)}
    for move in GAME.legal_moves(state, B):
        assert GAME.parse_move(state, B, GAME.move_text(move)) == move
    examples = GAME.view(state, B)["examples"]
    assert any(e.startswith(("move purple 1 to ", "move purple 3 to ")) for e in examples)


def test_move_by_the_first_rulings_a_move_without_a_value_takes_the_lowest():
    """F21: records made before F20 hold 'move purple to red 1', which meant
    the lowest token that is not the high bid; they replay as they were."""
    state = two_on_purple(rulings=1)
    assert GAME.parse_move(state, B, "move purple to red 5") == ("move", t("purple"), 1, t("red"), 5)
    assert GAME.parse_move(state, B, "move purple 3 to red 5") == ("move", t("purple"), 3, t("red"), 5)
    _, events = GAME.resolve(state, {B: ("move", t("purple"), 1, t("red"), 5)}, resolve_rng(SEED, 1))
    assert "token" not in events[0]  # the first rulings' events, as recorded


# --- F16: an exhibit after every tile won, special tiles too -----------------------------------


def win_the_special(museum: tuple, **changes) -> tuple[BluffState, list]:
    """The round ends with A's bid of 1 winning Overbid with Tie on purple."""
    state = bidding(
        dice=(("purple",) * 3,) * 3,
        community=("purple",),
        bids=(((A, 1, 1, False),), (), (), (), (), ()),
        placed=1,
        museum=(museum, (), ()),
        **changes,
    )
    return resolve_now(replace(state, offer=("tie", *state.offer[1:])))


YELLOW = (
    art("yellow ancient tool"),
    art("yellow ancient art"),
    art("yellow medieval art"),
    art("yellow modern weapon"),
)


def test_acquire_a_special_tile_with_a_set_ready_offers_an_exhibit():
    state, events = win_the_special(YELLOW)
    phase = GAME.phase(state)
    assert phase is not None and phase.movers == (A,) and phase.label == "Round 1 acquisition: Overbid with Tie"
    legal = GAME.legal_moves(state, A)
    assert legal[0] == ("place",) and not any(m[0] == "discard" for m in legal)
    assert ("exhibit", YELLOW) in legal and all("tie" not in m[1] for m in legal[1:])  # it joins no set
    assert GAME.view(state, A)["beside"] is True
    exhibit = GAME.parse_move(state, A, "exhibit " + ", ".join(" ".join(x) for x in YELLOW))
    after, events = GAME.resolve(state, {A: exhibit}, resolve_rng(SEED, 2))
    assert "tie" in after.held[A] and after.museum[A] == () and after.points[A] == set_points(4)
    assert [e["type"] for e in events[:2]] == ["special", "exhibit"] and after.round == 2
    kept, events = GAME.resolve(state, {A: GAME.parse_move(state, A, "place")}, resolve_rng(SEED, 2))
    assert "tie" in kept.held[A] and kept.museum[A] == YELLOW and kept.points[A] == 0 and kept.round == 2
    assert GAME.random_move(state, A, random_move_rng(SEED, 2, A)) == ("place",)  # F15: a timeout places
    with pytest.raises(MoveError, match="Overbid with Tie goes beside your museum and joins no set"):
        GAME.parse_move(state, A, "exhibit yellow ancient tool, yellow ancient art, wild")


def test_acquire_a_special_tile_with_no_set_ready_or_no_space_asks_nothing():
    after, events = win_the_special((art("yellow ancient tool"), art("red medieval art")))
    assert after.round == 2 and "tie" in after.held[A]  # no acquisition phase: the next round began
    assert {"type": "special", "seat": A, "tile": "Overbid with Tie"} in events
    full = tuple((art("red ancient tool"),) * 3 for _ in range(6))
    after, events = win_the_special(YELLOW, exhibits=(full, (), ()))
    assert after.round == 2 and "tie" in after.held[A] and after.museum[A] == YELLOW  # no space: nothing to choose


def test_acquire_by_the_first_rulings_a_special_tile_goes_beside_the_museum_at_once():
    after, _ = win_the_special(YELLOW, rulings=1)
    assert after.round == 2 and "tie" in after.held[A] and after.museum[A] == YELLOW


# --- F21: games recorded by the first rulings keep them ---------------------------------------

# A finished 2-player game (record.json) as the referee published it before
# the second rulings (commit a61b55b, tests/forgery.py's play("bluff", 1)):
# its options have no "rulings", and its moves of tokens name no value.
OLD_RECORD = Path(__file__).parent.parent / "fixtures" / "records" / "bluff-rulings-1.json"


def test_replay_a_record_made_by_the_first_rulings_verifies_as_it_was():
    record = json.loads(OLD_RECORD.read_text())
    assert "rulings" not in record["game"]["options"]
    moves = [m["move"] for p in record["phases"] for m in p["moves"]]
    assert any(re.fullmatch(r"move [a-z]+ to [a-z]+ \d+", m) for m in moves)  # the old text
    verdict = verify(record)  # every phase's events (scores too) and the winner, as recorded
    assert verdict.ok, verdict.message
    steps = replay(
        GAME,
        bytes.fromhex(record["seed"]),
        len(record["players"]),
        GAME.stored_options(record["game"]["options"]),
        (),
        [PhaseRecord(p["number"], {m["seat"]: m["move"] for m in p["moves"]}, ()) for p in record["phases"]],
    )
    assert steps.state.rulings == 1 and steps.state.stage == "over"
    assert [s.events for s in steps.steps] == [p["events"] for p in record["phases"]]
    # the same moves by the second rulings make another game: the edition matters
    newer = copy.deepcopy(record)
    newer["game"]["options"]["rulings"] = 2
    assert not verify(newer).ok


def test_replay_an_ambiguous_old_move_takes_the_lowest_token_as_it_did():
    """The fixture holds a move of a token made when its player had two on
    that track that could move; the first rulings moved the lowest."""
    record = json.loads(OLD_RECORD.read_text())
    seed = bytes.fromhex(record["seed"])
    state = GAME.setup(len(record["players"]), setup_rng(seed), GAME.stored_options(record["game"]["options"]))
    found = 0
    for entry in record["phases"]:
        texts = {m["seat"]: m["move"] for m in entry["moves"]}
        moves = {seat: GAME.parse_move(state, seat, text) for seat, text in texts.items()}
        for seat, move in moves.items():
            if move[0] == "move":
                high = state.high(move[1])
                mine = sorted(b[1] for b in state.bids[move[1]] if b[0] == seat and b != high)
                if len(mine) > 1:
                    found += 1
                    assert move[2] == mine[0]
                    with pytest.raises(MoveError, match="ambiguous"):  # a new game asks which
                        GAME.parse_move(replace(state, rulings=2), seat, texts[seat])
        state, _ = GAME.resolve(state, moves, resolve_rng(seed, entry["number"]))
    assert found


def test_setup_a_new_game_takes_the_second_rulings_and_refuses_others():
    assert GAME.check_options({}) == {"exhibit_dice": 1, "rulings": 2}
    assert GAME.stored_options({"exhibit_dice": 2}) == {"exhibit_dice": 2, "rulings": 1}
    assert start(3, rulings=1).rulings == 1
    with pytest.raises(OptionError, match="rulings"):
        start(3, rulings=3)
