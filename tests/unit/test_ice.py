"""Ice Ice Baby against its rule text (docs/rules/ice-ice-baby.txt) and the
rulings I1-I17 (docs/games/ice-ice-baby.md).

test_example_... are the rule text's examples; the other names start with the
part of the rules they check (setup_, auction_, payment_, scoring_, fill_,
final_, parse_); test_property_... are Hypothesis properties over whole games.

Seats: A 0, B 1, C 2, D 3.  Pyramids are written as the rulings write them
(I17): "L-blue M-green S-colourless".  A state for a situation is a real
setup state changed with dataclasses.replace; the bag is then whatever the
hand-built areas leave of the 60 pyramids.  Draws in a resolve come from
``Draws``, a stand-in stream that takes the bag's first candidate (or a
scoring-colour one while it is told to), so each test knows its next lot.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.record import PhaseRecord, random_move_rng, resolve_rng, setup_rng
from referee.rules import MoveError, OptionError, Rng, get_game
from referee.rules.ice import (
    IceIceBaby,
    IceState,
    _next_auction,
    best_trees,
    pile,
    standings,
    uniform,
    value,
)

GAME = IceIceBaby()
SEED = b"ice ice baby rules tests"
A, B, C, D = 0, 1, 2, 3
COLOURS = ("red", "yellow", "green", "blue")
COLOURLESS = "colourless"
LETTER = {"L": 3, "M": 2, "S": 1}
ALL_SIXTY = Counter({(colour, size): 5 for colour in COLOURS for size in (1, 2, 3)})


# --- helpers -----------------------------------------------------------------------


def pyr(text: str) -> tuple[str, int]:
    """ "L-blue" -> ("blue", 3)."""
    size, colour = text.split("-")
    return (colour, LETTER[size])


def written_order(pyramid: tuple[str, int]) -> tuple[int, int]:
    """I17: a pile is written large to small, then red, yellow, green, blue, colourless."""
    return (-pyramid[1], [*COLOURS, COLOURLESS].index(pyramid[0]))


def pl(text: str = "") -> tuple:
    """A pile, in the order the referee keeps and writes piles."""
    return tuple(sorted((pyr(t) for t in text.split()), key=written_order))


def names(text: str = "") -> list[str]:
    return [f"{'SML'[size - 1]}-{colour}" for colour, size in pl(text)]


def census_list(state: IceState) -> list:
    """Every pyramid: bag, track, lot, dead area, active areas, scored trees."""
    every = [*state.bag, *state.track, *state.lot, *state.dead]
    for seat in range(state.seats):
        every += [*state.active[seat], *(p for tree in state.scored[seat] for p in tree)]
    return every


def census(state: IceState) -> Counter:
    """Every pyramid of the game wherever it is, a colourless one counted as the
    scoring-colour pyramid it was (I1, I11)."""
    return Counter((state.scoring_colour if c == COLOURLESS else c, s) for c, s in census_list(state))


def new_game(seats: int = 3, seed: bytes = SEED, **options) -> IceState:
    return GAME.setup(seats, setup_rng(seed), options)


def make(
    seats: int = 3,
    options=None,
    *,
    active,
    scored=None,
    dead="",
    lot="L-yellow M-yellow S-yellow",
    track="",
    bids=None,
    **fields,
) -> IceState:
    """A real setup state at the start of an auction (A starts and moves), with
    the areas given; the bag holds the rest of the 60 pyramids."""
    base = new_game(seats, **(options or {}))
    state = replace(
        base,
        active=tuple(pl(a) for a in active),
        scored=tuple(tuple(pl(t) for t in trees) for trees in (scored or [[]] * seats)),
        dead=pl(dead),
        lot=pl(lot),
        track=pl(track),
        drawn=len(pl(track)),
        start=A,
        turn=A,
        auction=1,
        turns=0,
        stage="auction",
        bids=tuple(pl(b) if b is not None else None for b in (bids or [None] * seats)),
        high=None,
        cards=(),
        scoring_due=False,
        final=False,
        offers=(),
        trees_scored=0,
    )
    state = replace(state, bag=(), **fields)
    used = census(state)
    assert not used - ALL_SIXTY, f"a hand-built state uses pyramids that do not exist: {used - ALL_SIXTY}"
    return replace(state, bag=tuple(sorted((ALL_SIXTY - used).elements(), key=written_order)))


class Draws:
    """Stands in for a resolve stream in the draws of a lot: each draw takes the
    first candidate, but a scoring-colour one while ``scoring`` of them are
    still to be drawn."""

    def __init__(self, scoring: int = 0, colour: str = "red"):
        self.scoring, self.colour = scoring, colour

    def choice(self, items):
        if self.scoring > 0:
            hits = [p for p in items if p[0] == self.colour]
            if hits:
                self.scoring -= 1
                return hits[0]
        others = [p for p in items if p[0] != self.colour]
        return (others or list(items))[0]


def play(state: IceState, *steps, rng=None):
    """Play ``(seat, text)`` turns as mail would: the seat must be the one asked."""
    rng = rng or Draws()
    events = []
    for seat, text in steps:
        phase = GAME.phase(state)
        assert phase is not None and phase.movers == (seat,), f"{text!r}: the mover is {phase}, not seat {seat}"
        state, more = GAME.resolve(state, {seat: GAME.parse_move(state, seat, text)}, rng)
        events += more
    return state, events


def breakdown(state: IceState, seat: int) -> dict:
    """The seat's points if the game ended now, with their parts."""
    return standings(state)[seat]


def like(actual, expected) -> bool:
    """Events (or lists of them) match when they hold at least the expected keys
    and values: the last event of a resolve also carries the standings."""
    if isinstance(expected, list):
        return len(actual) == len(expected) and all(like(a, e) for a, e in zip(actual, expected, strict=True))
    return set(expected) <= set(actual) and all(actual[k] == v for k, v in expected.items())


def of_type(events, kind):
    return [e for e in events if e["type"] == kind]


def mover(state):
    return GAME.phase(state).movers


# --- the rule text's examples -----------------------------------------------------------


def test_example_three_smalls_are_worth_more_than_two_larges():
    assert value(pl("S-blue S-green S-yellow")) > value(pl("L-blue L-green"))
    # in an auction: three smalls raise two larges, and a seat with only two larges cannot answer
    state = make(2, active=["L-blue L-green", "S-blue S-green S-yellow"])
    state, events = play(
        state,
        (A, "bid L-blue"),
        (B, "bid S-blue S-green"),
        (A, "bid L-blue L-green"),
        (B, "bid S-blue S-green S-yellow"),
    )
    assert like(
        of_type(events, "pass"),
        [{"type": "pass", "seat": A, "card": 1, "forced": True, "bid": names("L-blue L-green")}],
    )
    (won,) = of_type(events, "won")
    assert won["seat"] == B
    assert state.active[A] == pl("S-blue S-green S-yellow")  # B's three smalls paid to A
    assert state.dead == pl("L-blue L-green")  # A's own bid to the dead area
    assert state.active[B] == pl("L-yellow M-yellow S-yellow")  # the lot


def test_example_large_medium_and_two_smalls_are_worth_more_than_four_mediums():
    assert value(pl("L-blue M-green S-green S-blue")) > value(pl("M-yellow M-yellow M-green M-blue"))
    state = make(2, active=["M-yellow M-yellow M-green M-blue", "L-blue M-green S-green S-blue S-yellow"])
    state, events = play(
        state,
        (A, "bid M-yellow"),
        (B, "bid S-green S-blue"),
        (A, "bid 2 M-yellow M-green"),
        (B, "bid L-blue S-green S-blue"),
        (A, "bid M-yellow M-yellow M-green M-blue"),
        (B, "bid L-blue M-green S-green S-blue"),
    )
    (won,) = of_type(events, "won")
    assert won["seat"] == B and won["bid"] == names("L-blue M-green S-green S-blue")
    assert of_type(events, "pass")[0]["forced"]  # four mediums cannot beat it, and five are not there
    assert state.active[A] == pl("L-blue M-green S-green S-blue")
    assert state.dead == pl("M-yellow M-yellow M-green M-blue")


def test_example_four_mediums_do_not_beat_a_large_a_medium_and_two_smalls():
    state = make(
        2,
        active=["L-blue M-green S-green S-blue", "M-yellow M-yellow M-green M-blue"],
        bids=["L-blue M-green S-green S-blue", None],
        high=A,
        turn=B,
        turns=5,
    )
    with pytest.raises(MoveError, match="beat the high bid"):
        GAME.parse_move(state, B, "bid M-yellow M-yellow M-green M-blue")


def track_of(count: int, colour: str = "red") -> str:
    """``count`` scoring pyramids on the track, small, medium and large in turn."""
    return " ".join(f"{'SML'[k % 3]}-{colour}" for k in range(count))


def auction_about_to_end(short=False, drawn=8):
    """3 seats, A holds the high bid and B and C are to pass: the next lot is drawn
    with the track at ``drawn``; every seat has a tree to score."""
    return make(
        active=["L-blue M-blue S-blue S-green", "L-green M-green S-green M-yellow", "L-green M-blue S-green"],
        track=track_of(drawn),
        bids=["S-blue", None, None],
        high=A,
        turn=B,
        turns=1,
        options={"short": short},
    )


def test_example_eight_on_the_track_a_draw_to_twelve_gives_one_scoring_round_and_the_end():
    state = auction_about_to_end(drawn=8)
    rng = Draws(scoring=4)  # the next lot's draw puts 4 scoring pyramids on the track: 8 -> 12
    state, events = play(state, (B, "pass"), (C, "pass"), rng=rng)
    (lot,) = of_type(events, "lot")
    assert (lot["track"], lot["scoring_due"], lot["final"]) == (12, True, True)
    assert len(lot["to_track"]) == 4 and state.drawn == 12
    assert of_type(events, "scoring") == []  # the auction that drew nothing scores nothing
    # the final auction: A starts, wins; one scoring round (it crossed 9 and 12), then the end
    assert mover(state) == (A,) and GAME.result(state) is None
    state, events = play(state, (A, "bid S-green"), (B, "pass"), (C, "pass"), rng=rng)
    assert len(of_type(events, "scoring")) == 1
    assert GAME.phase(state).label == f"Auction {state.auction} scoring, offer 1"
    state, more = play(state, (A, "score tree yellow"), (C, "decline"), (B, "decline"), rng=rng)
    events += more
    assert len(of_type(events, "scoring")) == 1 and of_type(events, "lot") == []
    assert GAME.phase(state) is None and state.stage == "over"
    (end,) = of_type(events, "over")
    assert GAME.result(state) is not None and end["winner"] == GAME.result(state).winner


def test_example_a_draw_to_nine_scores_and_plays_on():
    state = auction_about_to_end(drawn=8)
    state, events = play(state, (B, "pass"), (C, "pass"), rng=Draws(scoring=1))
    state, events = play(state, (A, "bid S-green"), (B, "pass"), (C, "pass"))
    assert len(of_type(events, "scoring")) == 1
    state, events = play(state, (A, "decline"), (C, "decline"), (B, "decline"))
    assert of_type(events, "lot") and GAME.phase(state).label == "Auction 3, turn 1"  # the game goes on


@pytest.mark.parametrize(
    "short, before, drawn, due, final",
    [
        (False, 0, 0, False, False),
        (False, 0, 2, False, False),
        (False, 2, 1, True, False),  # reaches 3
        (False, 5, 4, True, False),  # 6 and 9 in one draw: one scoring round
        (False, 7, 1, False, False),  # 8 is no threshold of the normal game
        (False, 8, 1, True, False),
        (False, 8, 4, True, True),  # the rule text's example
        (False, 11, 3, True, True),  # past 12: "placed with the scoring track with no effect"
        (True, 0, 1, False, False),
        (True, 1, 1, True, False),  # 2
        (True, 3, 2, True, False),  # passes 4
        (True, 4, 1, False, False),
        (True, 5, 1, True, False),  # 6
        (True, 6, 2, True, True),  # 8 ends the short game
        (True, 7, 3, True, True),
    ],
)
def test_example_triggers_normal_3_6_9_12_and_short_2_4_6_8(short, before, drawn, due, final):
    state = make(active=["L-blue", "L-green", "L-yellow"], track=track_of(before), options={"short": short})
    after, event = _next_auction(state, B, Draws(scoring=drawn))
    assert (after.drawn, after.scoring_due, after.final) == (before + drawn, due, final)
    assert (event["track"], event["scoring_due"], event["final"]) == (before + drawn, due, final)


def test_example_short_game_ends_after_the_auction_that_reaches_8():
    state = auction_about_to_end(short=True, drawn=6)
    state, events = play(state, (B, "pass"), (C, "pass"), rng=Draws(scoring=2))
    assert state.drawn == 8 and state.final and state.scoring_due
    state, events = play(
        state, (A, "bid S-green"), (B, "pass"), (C, "pass"), (A, "decline"), (C, "decline"), (B, "decline")
    )
    assert GAME.phase(state) is None and GAME.result(state) is not None
    assert len(of_type(events, "scoring")) == 1


# --- setup ---------------------------------------------------------------------------


@pytest.mark.parametrize("seats", [2, 3, 4])
@pytest.mark.parametrize("seed", [b"one", b"two", b"three", b"four", b"five"])
@pytest.mark.parametrize("colour", ["red", "blue"])
def test_setup_one_of_each_size_each_no_scoring_colour_and_all_60_accounted(seats, seed, colour):
    state = new_game(seats, seed, scoring_colour=colour)
    assert state.scoring_colour == colour
    for mine in state.active:
        assert sorted(size for _, size in mine) == [1, 2, 3]
        assert all(c != colour for c, _ in mine)
    assert state.scored == ((),) * seats and state.dead == ()
    assert census(state) == ALL_SIXTY and sum(census(state).values()) == 60
    assert sorted(size for _, size in state.lot) == [1, 2, 3]
    assert all(c != colour for c, _ in state.lot)
    assert all(c == colour for c, _ in state.track) and len(state.track) == state.drawn
    assert state.stage == "auction" and mover(state) == (state.start,)
    assert GAME.phase(state).label == "Auction 1, turn 1" and not GAME.phase(state).sealed


def test_setup_scoring_colour_pyramids_drawn_for_the_lot_go_to_the_track():
    drew = [new_game(3, f"seed {n}".encode()) for n in range(40)]
    assert any(state.drawn > 0 for state in drew)
    for state in drew:
        assert Counter(state.track) == Counter(p for p in state.track if p[0] == "red")
        assert census(state) == ALL_SIXTY
    assert len({state.start for state in drew}) == 3  # the starting seat is drawn
    state = make(active=["L-blue", "L-green", "L-yellow"], lot="")  # the last lot was won
    after, event = _next_auction(state, A, Draws(scoring=2))
    assert len(after.track) == 2 and all(c == "red" for c, _ in after.track)
    assert all(c != "red" for c, _ in after.lot) and sorted(s for _, s in after.lot) == [1, 2, 3]
    assert event["to_track"] == ["S-red", "S-red"]  # the first two smalls drawn were scoring ones
    assert census(after) == ALL_SIXTY


class Recording:
    """A real stream that logs what setup asks of it."""

    def __init__(self, rng):
        self.rng, self.log = rng, []

    def choice(self, items):
        pick = self.rng.choice(items)
        self.log.append(("choice", list(items), pick))
        return pick

    def randbelow(self, n):
        pick = self.rng.randbelow(n)
        self.log.append(("randbelow", n, pick))
        return pick


@pytest.mark.parametrize("seats", [2, 4])
def test_setup_order_of_chance_seat_by_seat_small_medium_large_then_start_then_lot(seats):
    """I2: each seat a small, a medium, a large among the non-scoring pyramids of
    that size; then the starting seat; then the lot, small, medium, large, a
    scoring one going to the track and that size drawn again."""
    rng = Recording(Rng(SEED, "setup"))
    state = GAME.setup(seats, rng, {})
    log = rng.log
    for seat in range(seats):
        for k, size in enumerate((1, 2, 3)):
            kind, items, pick = log[3 * seat + k]
            assert kind == "choice" and {s for _, s in items} == {size}
            assert len(items) == 15 - seat and all(c != "red" for c, _ in items)
            assert pick in state.active[seat]
    assert log[3 * seats] == ("randbelow", seats, state.start)
    lot_draws = log[3 * seats + 1 :]
    sizes = [items[0][1] for _, items, _ in lot_draws]
    assert sizes == sorted(sizes) and set(sizes) == {1, 2, 3}
    assert [pick for _, _, pick in lot_draws if pick[0] == "red"] == sorted(state.track, key=lambda p: p[1])
    assert Counter(pick for _, _, pick in lot_draws if pick[0] != "red") == Counter(state.lot)


@pytest.mark.parametrize("seats", [1, 5])
def test_setup_refuses_other_than_2_to_4_seats(seats):
    with pytest.raises(OptionError):
        new_game(seats)


@pytest.mark.parametrize("options", [{"scoring_colour": "pink"}, {"short": "maybe"}, {"colour": "red"}])
def test_setup_refuses_bad_options(options):
    with pytest.raises(OptionError):
        new_game(**options)


def test_setup_is_registered_as_ice():
    assert isinstance(get_game("ice"), IceIceBaby)


# --- the auction -----------------------------------------------------------------------


def test_auction_first_bid_is_exactly_one_pyramid():
    state = make(active=["L-blue M-blue S-green", "L-green M-green", "S-yellow S-blue"])
    with pytest.raises(MoveError, match="at most"):
        GAME.parse_move(state, A, "bid L-blue M-blue")
    with pytest.raises(MoveError, match="at least one"):
        GAME.parse_move(state, A, "bid")
    legal = GAME.legal_moves(state, A)
    assert legal[0] == ("pass",)
    assert sorted(m[1] for m in legal[1:]) == sorted([pl("L-blue"), pl("M-blue"), pl("S-green")])
    assert GAME.legal_moves(state, B) == [] and GAME.legal_moves(state, C) == []  # not their turn


def test_auction_raise_by_at_most_one_pyramid_and_must_beat_the_high_bid():
    state = make(active=["L-blue M-blue S-green", "L-green M-green S-yellow S-blue", "S-green S-blue"])
    state, _ = play(state, (A, "bid M-blue"))
    with pytest.raises(MoveError, match="at most one pyramid"):
        GAME.parse_move(state, B, "bid L-green M-green S-yellow")
    with pytest.raises(MoveError, match="beat the high bid"):
        GAME.parse_move(state, B, "bid M-green")  # equal value: not a raise
    with pytest.raises(MoveError, match="beat the high bid"):
        GAME.parse_move(state, B, "bid S-yellow")
    assert GAME.parse_move(state, B, "bid L-green") == ("bid", pl("L-green"))
    assert GAME.parse_move(state, B, "bid S-yellow S-blue") == ("bid", pl("S-yellow S-blue"))
    bids = [m[1] for m in GAME.legal_moves(state, B) if m[0] == "bid"]
    assert all(len(b) == 2 or b == pl("L-green") for b in bids)
    assert pl("M-green") not in bids and pl("L-green M-green S-yellow") not in bids


def test_auction_equal_value_in_other_colours_is_not_a_raise():
    state = make(2, active=["L-blue S-green S-blue", "L-green S-yellow M-yellow"])
    state, _ = play(state, (A, "bid L-blue"), (B, "bid L-green S-yellow"))
    with pytest.raises(MoveError, match="beat the high bid"):
        GAME.parse_move(state, A, "bid L-blue S-green")
    assert ("bid", pl("L-blue S-green")) not in GAME.legal_moves(state, A)


def test_auction_bids_come_from_the_active_area_not_the_trees():
    state = make(active=["S-green M-yellow", "L-green", "L-yellow"], scored=[["L-blue M-blue S-blue"], [], []])
    with pytest.raises(MoveError, match="no L-blue in your active area"):
        GAME.parse_move(state, A, "bid L-blue")
    with pytest.raises(MoveError, match="no L-red"):
        GAME.parse_move(state, A, "bid L-red")
    assert all(len(m[1]) == 1 and m[1][0] in state.active[A] for m in GAME.legal_moves(state, A)[1:])


def test_auction_pass_takes_the_lowest_card_left_with_the_last_bid_on_it():
    state = make(
        4,
        active=[
            "L-blue M-blue S-blue",
            "L-green M-green S-green",
            "M-yellow S-yellow S-green",
            "S-blue S-green M-green",
        ],
    )
    state, events = play(
        state,
        (A, "bid S-blue"),
        (B, "pass"),
        (C, "bid M-yellow"),
        (D, "bid S-blue S-green"),
        (A, "bid M-blue S-blue"),
        (C, "pass"),
    )
    assert like(
        of_type(events, "pass"),
        [
            {"type": "pass", "seat": B, "card": 1, "forced": False, "bid": []},  # not a bidding player
            {"type": "pass", "seat": C, "card": 2, "forced": False, "bid": names("M-yellow")},
        ],
    )
    assert state.cards == (B, C) and mover(state) == (D,)
    assert state.active[C] == pl("M-yellow S-yellow S-green")  # the bid stays in the active area until the end (I1)


def test_auction_a_seat_that_cannot_raise_passes_at_once_and_is_never_asked():
    state = make(active=["L-blue M-blue", "L-green", "S-green S-blue"])
    state, events = play(state, (A, "bid L-blue"))
    # B's one large cannot beat a large (equal) and it has no second pyramid
    assert like(events[0], {"type": "bid", "seat": A, "bid": names("L-blue")})
    assert like(events[1], {"type": "pass", "seat": B, "card": 1, "forced": True, "bid": []})
    assert mover(state) == (C,) and state.cards == (B,)
    assert GAME.legal_moves(state, B) == []
    # C raises to two; A can answer with L M; C with two smalls cannot beat that
    state, events = play(state, (C, "bid S-green S-blue"), (A, "bid L-blue M-blue"))
    assert like(
        of_type(events, "pass"),
        [{"type": "pass", "seat": C, "card": 2, "forced": True, "bid": names("S-green S-blue")}],
    )
    assert of_type(events, "won")[0]["seat"] == A


def test_auction_very_rare_case_the_last_seat_must_bid_one_pyramid():
    state = make(active=["L-blue M-blue", "L-green S-green", "M-green S-blue"])
    state, events = play(state, (A, "pass"), (B, "pass"))
    assert mover(state) == (C,)
    assert ("pass",) not in GAME.legal_moves(state, C)
    assert {m[1] for m in GAME.legal_moves(state, C)} == {pl("M-green"), pl("S-blue")}
    with pytest.raises(MoveError, match="must bid"):
        GAME.parse_move(state, C, "pass")
    with pytest.raises(MoveError, match="at most"):
        GAME.parse_move(state, C, "bid M-green S-blue")
    state, events = play(state, (C, "bid S-blue"))
    (won,) = of_type(events, "won")
    assert won["seat"] == C and won["card"] == 3
    assert like(won["payments"], [{"from": C, "to": None, "pyramids": names("S-blue")}])
    assert state.dead == pl("S-blue")
    assert state.active == (pl("L-blue M-blue"), pl("L-green S-green"), pl("M-green L-yellow M-yellow S-yellow"))


def test_auction_very_rare_case_a_last_seat_with_no_pyramids_takes_the_lot_free():
    state = make(active=["L-blue M-blue", "L-green S-green", ""], dead="S-blue")
    state, events = play(state, (A, "pass"), (B, "pass"))
    (won,) = of_type(events, "won")
    assert won["seat"] == C and won["bid"] == []
    assert state.active[C] == pl("L-yellow M-yellow S-yellow")
    assert state.dead == pl("S-blue")  # nothing paid
    assert state.start == C


def test_auction_the_turn_goes_round_in_seat_order_from_the_starting_player():
    state = make(
        4, active=["L-blue", "L-green M-green", "M-yellow S-yellow S-green", "S-blue M-blue L-yellow"], start=C, turn=C
    )
    state, _ = play(
        state, (C, "bid S-yellow"), (D, "bid M-blue"), (A, "pass"), (B, "bid L-green"), (C, "bid M-yellow S-yellow")
    )
    assert mover(state) == (D,)


# --- paying for an auction ---------------------------------------------------------------


def test_payment_chain_down_the_bidding_passers_skipping_non_bidders():
    state = make(
        4,
        active=["S-yellow M-green S-blue", "M-blue L-blue S-blue", "S-green S-yellow", "L-green S-green L-yellow"],
        dead="M-yellow",
    )
    state, events = play(
        state,
        (A, "bid S-yellow"),
        (B, "bid M-blue"),
        (C, "pass"),
        (D, "bid L-green S-green"),
        (A, "pass"),
        (B, "bid L-blue M-blue S-blue"),
        (D, "pass"),
    )
    cards = {e["seat"]: e["card"] for e in of_type(events, "pass")}
    assert cards == {C: 1, A: 2, D: 3}
    (won,) = of_type(events, "won")
    assert won["seat"] == B and won["card"] == 4 and won["lot"] == names("L-yellow M-yellow S-yellow")
    assert like(
        won["payments"],
        [
            {"from": B, "to": D, "pyramids": names("L-blue M-blue S-blue")},  # to the highest card
            {"from": D, "to": A, "pyramids": names("L-green S-green")},  # its own bid on down
            {"from": A, "to": None, "pyramids": names("S-yellow")},  # the lowest bidding passer's to dead
        ],
    )
    assert state.active == (
        pl("M-green S-blue L-green S-green"),
        pl("L-yellow M-yellow S-yellow"),
        pl("S-green S-yellow"),  # passed without bidding: nothing changes
        pl("L-yellow L-blue M-blue S-blue"),
    )
    assert state.dead == pl("M-yellow S-yellow")
    assert census(state) == ALL_SIXTY
    # the winner starts the next auction, everyone's card back
    assert state.start == B and mover(state) == (B,) and state.cards == ()
    assert state.bids == (None,) * 4 and GAME.phase(state).label == "Auction 2, turn 1"


def test_payment_without_bidding_passers_the_winners_bid_goes_dead():
    state = make(active=["L-blue M-blue", "L-green S-green", "M-green S-blue"])
    state, events = play(state, (A, "bid L-blue"), (B, "pass"), (C, "pass"))
    (won,) = of_type(events, "won")
    assert like(won["payments"], [{"from": A, "to": None, "pyramids": names("L-blue")}])
    assert state.dead == pl("L-blue")
    assert state.active[A] == pl("M-blue L-yellow M-yellow S-yellow")
    assert state.active[B] == pl("L-green S-green") and state.active[C] == pl("M-green S-blue")
    assert state.start == A


def test_payment_a_single_bidding_passer_takes_the_winning_bid_and_its_own_goes_dead():
    state = make(active=["M-blue S-blue", "L-green S-green", "M-green S-green"])
    state, events = play(state, (A, "pass"), (B, "bid S-green"), (C, "bid M-green"), (B, "pass"))
    (won,) = of_type(events, "won")
    assert won["seat"] == C
    assert like(
        won["payments"],
        [{"from": C, "to": B, "pyramids": names("M-green")}, {"from": B, "to": None, "pyramids": names("S-green")}],
    )
    assert state.active == (pl("M-blue S-blue"), pl("L-green M-green"), pl("S-green L-yellow M-yellow S-yellow"))
    assert state.dead == pl("S-green")


# --- scoring rounds ------------------------------------------------------------------------


def scoring_auction(dead="L-green M-yellow S-blue"):
    """4 seats; A bids, B, C, D pass without bidding, so A wins (card 4) and the
    offers go A, D (card 3), C (card 2), B (card 1).  D has no tree."""
    return make(
        4,
        active=[
            "L-blue M-blue S-blue S-yellow",
            "L-green M-green S-green",
            "L-yellow M-green S-blue",
            "L-green M-yellow",
        ],
        dead=dead,
        track="S-red M-red L-red",
        scoring_due=True,
    )


def test_scoring_offers_winner_first_then_descending_cards_skipping_seats_without_a_tree():
    state, events = play(scoring_auction(), (A, "bid S-yellow"), (B, "pass"), (C, "pass"), (D, "pass"))
    assert like(of_type(events, "scoring"), [{"type": "scoring", "offers": [A, D, C, B]}])
    phase = GAME.phase(state)
    assert phase.movers == (A,) and phase.timer == "decision" and phase.deadline_kind == "decision"
    assert phase.label == "Auction 1 scoring, offer 1"
    assert state.dead == pl("L-green M-yellow S-blue S-yellow")  # A's bid is already dead

    state, events = play(state, (A, "decline"))
    assert like(events[:2], [{"type": "declined", "seat": A}, {"type": "no tree", "seat": D}])
    assert mover(state) == (C,)

    with pytest.raises(MoveError, match="take 2"):
        GAME.parse_move(state, C, "score tree L-yellow M-green S-blue take L-green")
    state, events = play(state, (C, "score tree L-yellow M-green S-blue take L-green M-yellow"))
    assert like(
        events[0],
        {
            "type": "tree",
            "seat": C,
            "tree": names("L-yellow M-green S-blue"),
            "uniform": False,
            "took": names("L-green M-yellow"),
        },
    )
    assert state.scored[C] == (pl("L-yellow M-green S-blue"),) and state.active[C] == pl("L-green M-yellow")
    assert state.dead == pl("S-yellow S-blue")
    assert mover(state) == (B,)  # the second tree earns one
    assert {len(m[2]) for m in GAME.legal_moves(state, B) if m[0] == "score"} == {1}

    state, events = play(state, (B, "score tree green take S-blue"))
    assert events[0]["uniform"] and events[0]["took"] == ["S-blue"]
    assert like(of_type(events, "scoring over"), [{"trees": 2}])
    assert state.scored[B] == (pl("L-green M-green S-green"),) and state.active[B] == pl("S-blue")
    assert state.dead == pl("S-yellow")
    assert state.stage == "auction" and mover(state) == (A,) and state.auction == 2
    assert census(state) == ALL_SIXTY


def test_scoring_no_third_tree_in_a_round():
    state = make(
        active=["L-blue M-blue S-blue", "L-green M-green S-green", "L-yellow M-yellow S-yellow"],
        lot="L-green M-yellow S-green",
        dead="S-blue M-green L-yellow",
        scoring_due=True,
        track="S-red M-red L-red",
    )
    state, events = play(state, (A, "bid S-blue"), (B, "pass"), (C, "pass"))
    offered = []
    while state.stage == "scoring":
        (seat,) = mover(state)
        offered.append(seat)
        state, events = play(state, (seat, GAME.move_text(GAME.legal_moves(state, seat)[1])))
    assert offered == [A, C]  # B (card 1) never asked
    assert like(of_type(events, "scoring over"), [{"trees": 2}])
    assert state.scored[B] == () and len(state.scored[A]) == len(state.scored[C]) == 1


def test_scoring_a_seat_scores_at_most_one_tree_per_round():
    state = make(
        active=["L-blue M-blue S-blue L-green M-green S-green S-yellow", "M-yellow", "L-yellow"],
        dead="S-blue M-blue",
        scoring_due=True,
        track="S-red M-red L-red",
    )
    state, events = play(state, (A, "bid S-yellow"), (B, "pass"), (C, "pass"))
    state, events = play(state, (A, "score tree blue take S-blue S-yellow"))
    assert like(of_type(events, "scoring over"), [{"trees": 1}])  # B and C have no tree; A is not asked again
    assert state.stage == "auction" and len(state.scored[A]) == 1
    assert pl("L-green M-green S-green") == tuple(p for p in state.active[A] if p[0] == "green")


def test_scoring_the_first_tree_takes_what_the_dead_area_has_when_fewer_than_two():
    state = make(
        active=["L-blue M-blue S-blue S-yellow", "L-green M-green S-green", "M-yellow"],
        dead="",
        scoring_due=True,
        track="S-red M-red L-red",
    )
    state, events = play(state, (A, "bid S-yellow"), (B, "pass"), (C, "pass"))
    assert state.dead == pl("S-yellow")
    assert {m[2] for m in GAME.legal_moves(state, A) if m[0] == "score"} == {pl("S-yellow")}
    state, events = play(state, (A, "score tree blue"))  # no choice: take may be left out
    assert events[0]["took"] == ["S-yellow"] and state.dead == ()
    state, events = play(state, (B, "score tree green"))  # the dead area is empty: it takes nothing
    assert events[0]["took"] == [] and state.active[B] == ()
    assert GAME.move_text(("score", pl("L-green M-green S-green"), ())) == "score tree L-green M-green S-green"


def test_scoring_parse_forms():
    state = make(
        active=["L-red M-blue S-blue L-blue", "M-green", "S-green"],
        dead="L-green M-yellow S-yellow",
        stage="scoring",
        offers=(A, C, B),
        turn=A,
        scoring_due=True,
    )
    # the ruling's own examples (I10)
    assert GAME.parse_move(state, A, "score tree L-red M-blue S-blue take L-green M-yellow") == (
        "score",
        pl("L-red M-blue S-blue"),
        pl("L-green M-yellow"),
    )
    assert GAME.parse_move(state, A, "Score tree blue take M-yellow S-yellow.") == (
        "score",
        pl("L-blue M-blue S-blue"),
        pl("M-yellow S-yellow"),
    )
    assert GAME.parse_move(state, A, "decline") == ("decline",)
    with pytest.raises(MoveError, match="Say which 2"):  # three ways to take two
        GAME.parse_move(state, A, "score tree blue")
    with pytest.raises(MoveError, match="take 2 pyramid"):
        GAME.parse_move(state, A, "score tree blue take L-green M-yellow S-yellow")
    with pytest.raises(MoveError, match="no L-blue in the dead area"):
        GAME.parse_move(state, A, "score tree blue take L-blue M-yellow")
    with pytest.raises(MoveError, match="no L-green"):
        GAME.parse_move(state, A, "score tree green")
    with pytest.raises(MoveError):
        GAME.parse_move(state, A, "bid L-blue")  # not an auction turn
    with pytest.raises(MoveError, match="one large, one medium and one small"):
        GAME.parse_move(state, A, "score tree L-red L-blue S-blue take L-green M-yellow")
    # the dead area leaves no choice: two alike
    state = make(
        active=["M-blue S-blue L-blue", "M-green", "S-green"],
        dead="S-yellow S-yellow",
        stage="scoring",
        offers=(A, C, B),
        turn=A,
        scoring_due=True,
    )
    assert GAME.parse_move(state, A, "score tree blue") == (
        "score",
        pl("L-blue M-blue S-blue"),
        pl("S-yellow S-yellow"),
    )


# --- the end-game fill (I11) ---------------------------------------------------------------


def test_fill_an_empty_bag_fills_the_lot_from_the_track_with_colourless_pyramids():
    """The last non-scoring pyramids are all in play; the bag holds only scoring
    pyramids: they all go to the track (11 -> 15), then each size of the lot
    comes off the track, colourless."""
    trees = [f"L-{c} M-{c} S-{c}" for c in ("blue", "green", "yellow") for _ in range(4)]
    state = make(
        2,
        active=[" ".join(trees[:6]), " ".join(trees[6:])],
        lot="",
        track="S-red S-red S-red M-red M-red M-red M-red L-red L-red L-red L-red",
        dead="L-blue M-blue S-green L-green M-yellow S-yellow L-yellow M-green S-blue",
    )
    assert Counter(state.bag) == Counter(pl("S-red S-red M-red L-red"))  # no other pyramid left
    after, event = _next_auction(state, B, Draws())
    assert event["to_track"] == names("S-red S-red M-red L-red")
    assert sorted(event["filled"]) == ["L-colourless", "M-colourless", "S-colourless"]
    assert after.lot == pl("L-colourless M-colourless S-colourless")
    assert after.drawn == 15  # the track's count does not drop (I11)
    assert Counter(after.track) == Counter(pl(track_of(12)))
    assert after.final and after.scoring_due and after.bag == ()
    assert census(after) == ALL_SIXTY


def test_fill_colourless_trees_are_mixed_and_colourless_never_wins_a_colour_bonus():
    tree = pl("L-colourless M-colourless S-colourless")
    assert not uniform(tree)
    assert best_trees(tree) == (0, 1)
    assert best_trees(pl("L-colourless M-blue S-blue L-blue M-blue S-blue")) == (1, 1)
    state = make(
        2,
        active=["L-colourless M-colourless S-colourless S-colourless", "S-blue"],
        scored=[[], ["L-colourless M-green S-green"]],
        track=track_of(9),
        stage="over",
        turn=None,
    )
    a, b = breakdown(state, A), breakdown(state, B)
    assert (a["uniform"], a["mixed"], a["single"], a["bonuses"], a["total"]) == (0, 1, 1, {}, 6)
    # B: a mixed scored tree, one single; most blue and most green (A holds none)
    assert (b["uniform"], b["mixed"], b["single"], b["bonuses"], b["total"]) == (0, 1, 1, {"green": 5, "blue": 5}, 16)
    assert "red" not in a["bonuses"] and COLOURLESS not in a["bonuses"]


def test_fill_a_won_colourless_tree_scores_as_mixed():
    state = make(
        2,
        active=["L-blue", "M-green S-green"],
        lot="L-colourless M-colourless S-colourless",
        track=track_of(12),
        dead="",
        scoring_due=True,
        final=True,
    )
    state, events = play(state, (A, "bid L-blue"), (B, "bid M-green S-green"))  # A cannot answer two
    assert state.active == (pl("M-green S-green"), pl("L-colourless M-colourless S-colourless"))
    assert state.dead == pl("L-blue") and mover(state) == (B,)
    state, events = play(state, (B, "score tree colourless"))  # one pyramid dead: no choice of take
    assert like(
        events[0],
        {
            "type": "tree",
            "seat": B,
            "tree": names("L-colourless M-colourless S-colourless"),
            "uniform": False,
            "took": ["L-blue"],
        },
    )
    assert like(of_type(events, "no tree"), [{"type": "no tree", "seat": A}])
    assert GAME.phase(state) is None
    b = breakdown(state, B)
    # a mixed tree (5), L-blue left over (1), most blue (5); A: two left over and most green
    assert (b["uniform"], b["mixed"], b["single"], b["total"]) == (0, 1, 1, 11)
    assert GAME.result(state).scores == (2 + 5, 11) and GAME.result(state).winner == B


# --- final scoring -----------------------------------------------------------------------------


def over(seats=2, track=None, **kwargs):
    return make(seats, stage="over", turn=None, track=track_of(12) if track is None else track, **kwargs)


def test_final_seven_a_uniform_tree_five_a_mixed_one_a_leftover():
    state = over(
        3,
        active=["L-blue M-blue S-blue L-green M-yellow S-yellow S-green", "S-blue", "L-yellow"],
        scored=[["L-yellow M-green S-green"], ["L-green M-green S-green"], []],
    )
    a = breakdown(state, A)
    # active: the blue tree (7), a mixed tree L-green M-yellow S-* (5), one left (1); scored: mixed (5)
    assert (a["uniform"], a["mixed"], a["single"]) == (1, 2, 1)
    # colours: blue A 3, B 1; yellow A 3, C 1; green A 4, B 3: A has the most of each
    assert a["bonuses"] == {"blue": 5, "yellow": 5, "green": 5}
    assert a["total"] == 7 + 5 + 5 + 1 + 15
    b = breakdown(state, B)
    assert (b["uniform"], b["mixed"], b["single"], b["bonuses"], b["total"]) == (1, 0, 1, {}, 8)
    c = breakdown(state, C)
    assert c["total"] == 1
    assert GAME.result(state).scores == (a["total"], 8, 1) and GAME.result(state).winner == A


def test_final_colour_bonus_single_most_tied_and_nobody():
    state = over(3, active=["S-blue S-blue M-green", "S-blue M-green", "L-green S-green"])
    assert breakdown(state, A)["bonuses"] == {"blue": 5}  # two blue to one
    assert breakdown(state, B)["bonuses"] == {}
    assert breakdown(state, C)["bonuses"] == {"green": 5}  # two green to one each
    # nobody has yellow: no yellow bonus, not even 3 each for the "tie" at zero
    assert all("yellow" not in breakdown(state, s)["bonuses"] for s in range(3))
    state = over(3, active=["M-green S-blue", "S-green S-blue", "L-yellow"])
    assert [breakdown(state, s)["bonuses"] for s in range(3)] == [
        {"green": 3, "blue": 3},
        {"green": 3, "blue": 3},
        {"yellow": 5},
    ]
    assert [breakdown(state, s)["total"] for s in range(3)] == [2 + 6, 2 + 6, 1 + 5]
    state = over(3, active=["M-green", "S-green", "L-green"])
    assert [breakdown(state, s)["bonuses"] for s in range(3)] == [{"green": 3}] * 3


def test_final_the_scoring_colour_never_gives_a_bonus():
    state = over(
        2,
        active=["S-red S-red S-colourless", "S-green"],
        options={"scoring_colour": "blue"},
        track=track_of(12, "blue"),
    )
    assert breakdown(state, A)["bonuses"] == {"red": 5}  # red is an ordinary colour here
    assert breakdown(state, B)["bonuses"] == {"green": 5}
    state = over(2, active=["S-colourless S-colourless", "S-green"], track=track_of(9))
    assert breakdown(state, A)["bonuses"] == {} and breakdown(state, A)["total"] == 2


def test_final_tie_broken_by_the_value_of_all_pyramids_collected():
    # both: a uniform tree (7), one leftover (1), a colour bonus (5), yellow tied (3) = 16
    state = over(2, active=["L-blue M-blue S-blue S-yellow", "M-yellow"], scored=[[], ["L-green M-green S-green"]])
    assert GAME.result(state).scores == (16, 16)
    assert GAME.result(state).winner == B  # (4 pyramids, 1 large, 2 mediums) beats (4, 1, 1)
    state = over(2, active=["L-blue M-blue S-blue S-yellow", "S-yellow"], scored=[[], ["L-green M-green S-green"]])
    assert GAME.result(state).scores == (16, 16) and GAME.result(state).winner is None  # still tied


def test_final_a_bot_never_wins():
    state = over(3, active=["L-blue M-blue S-blue", "S-green", "M-yellow S-yellow S-blue S-blue"])
    assert GAME.result(state).winner == A
    assert GAME.result(GAME.replace_by_bot(state, A)).winner == C
    assert GAME.result(GAME.replace_by_bot(GAME.replace_by_bot(state, A), C)).winner == B
    everyone = replace(state, bots=frozenset({A, B, C}))
    assert GAME.result(everyone).winner is None


def test_final_result_is_none_while_the_game_runs():
    assert GAME.result(new_game()) is None


def tree_points(tree) -> int:
    colours = {c for c, _ in tree}
    return 7 if len(colours) == 1 and COLOURLESS not in colours else 5


def brute_best(pyramids: tuple) -> int:
    """The most points over every way of making trees (rule text: 7, 5, 1)."""
    if not pyramids:
        return 0
    first, rest = pyramids[0], pyramids[1:]
    best = 1 + brute_best(rest)  # the first pyramid is left over
    others = [s for s in (1, 2, 3) if s != first[1]]
    for i, j in itertools.permutations(range(len(rest)), 2):
        if (rest[i][1], rest[j][1]) == tuple(others):
            left = tuple(p for k, p in enumerate(rest) if k not in (i, j))
            best = max(best, tree_points((first, rest[i], rest[j])) + brute_best(left))
    return best


pyramids = st.tuples(st.sampled_from(["yellow", "green", "blue", COLOURLESS]), st.sampled_from([1, 2, 3]))


@settings(max_examples=150, deadline=None)
@given(st.lists(pyramids, max_size=9))
def test_final_best_trees_is_optimal_against_brute_force(active):
    uniform_trees, mixed_trees = best_trees(tuple(active))
    points = 7 * uniform_trees + 5 * mixed_trees + (len(active) - 3 * (uniform_trees + mixed_trees))
    assert points == brute_best(tuple(active))
    assert uniform_trees >= 0 and mixed_trees >= 0


# --- parsing --------------------------------------------------------------------------------


def auction_for_b(active_b, high="S-green"):
    """B to move against A's one-pyramid bid, so B may bid one or two pyramids."""
    return make(active=[high + " M-green", active_b, "L-yellow"], bids=[high, None, None], high=A, turn=B, turns=1)


@pytest.mark.parametrize(
    "text",
    [
        "bid L-blue",
        "bid large blue",
        "bid blue L",
        "bid Lblue",
        "BID l-BLUE",
        "bid blue large.",
        "bid 1 large blue",
        "bid L blue",
    ],
)
def test_parse_ways_of_writing_a_pyramid(text):
    state = auction_for_b("L-blue L-green M-blue")
    assert GAME.parse_move(state, B, text) == ("bid", pl("L-blue"))


def test_parse_two_pyramids_in_several_ways():
    state = auction_for_b("L-blue L-green M-blue")
    for text in ("bid L-blue M-blue", "bid M-blue, L-blue", "bid large blue and medium blue", "bid Lblue Mblue"):
        assert GAME.parse_move(state, B, text) == ("bid", pl("L-blue M-blue"))


def test_parse_a_size_without_colour_only_when_there_is_no_choice():
    assert GAME.parse_move(auction_for_b("L-blue L-blue M-green"), B, "bid 2L") == ("bid", pl("L-blue L-blue"))
    assert GAME.parse_move(auction_for_b("L-blue L-green M-green"), B, "bid 2L") == ("bid", pl("L-blue L-green"))
    assert GAME.parse_move(auction_for_b("L-blue L-green M-green"), B, "bid M") == ("bid", pl("M-green"))
    with pytest.raises(MoveError, match=r"L-yellow, L-green, L-blue"):
        GAME.parse_move(auction_for_b("L-blue L-green L-yellow"), B, "bid 2L")
    with pytest.raises(MoveError, match=r"L-green, L-blue"):
        GAME.parse_move(auction_for_b("L-blue L-green M-green"), B, "bid L")
    assert GAME.parse_move(auction_for_b("L-blue L-green M-green"), B, "bid L-blue L") == ("bid", pl("L-blue L-green"))


def test_parse_counts_with_a_colour():
    assert GAME.parse_move(auction_for_b("L-blue L-blue M-green"), B, "bid 2 large blue") == (
        "bid",
        pl("L-blue L-blue"),
    )
    with pytest.raises(MoveError, match="no L-blue in your active area"):
        GAME.parse_move(auction_for_b("L-blue L-green M-green"), B, "bid 2 large blue")


@pytest.mark.parametrize(
    "text",
    [
        "bid L-purple",
        "bid potato",
        "bid 2",
        "bid L-blue please",
        "offer L-blue",
        "bid blue",
        "hello",
        "pass L-blue",
        "bid 0L",
        "decline",
    ],
)
def test_parse_unknown_words_and_incomplete_pyramids_are_refused(text):
    with pytest.raises(MoveError):
        GAME.parse_move(auction_for_b("L-blue L-green M-blue"), B, text)


@pytest.mark.parametrize("text", ["bid Lgren", "bid sorry", "bid mine", "bid L-blue sure"])
def test_parse_a_word_that_only_starts_like_a_size_is_refused(text):
    """I17: "A word the referee does not know is an error, never a guess": not
    "Lgren" read as a large, nor "sorry" as a small."""
    state = auction_for_b("L-blue M-green S-yellow")
    with pytest.raises(MoveError):
        GAME.parse_move(state, B, text)


def test_parse_move_text_writes_piles_large_to_small_then_red_yellow_green_blue_colourless():
    mixed_up = [pyr(t) for t in ["S-colourless", "S-blue", "L-green", "M-red", "L-red", "S-yellow"]]
    assert GAME.move_text(("bid", pile(mixed_up))) == "bid L-red L-green M-red S-yellow S-blue S-colourless"
    assert GAME.move_text(("pass",)) == "pass" and GAME.move_text(("decline",)) == "decline"


# --- properties over whole games -------------------------------------------------------------

MAX_PHASES = 3000


def random_game(seed: bytes, seats: int, options: dict, chooser: random.Random, check=None):
    """A whole game with random legal moves (passes and declines a bit more
    often than uniform, so auctions of every length happen); now and then a
    seat's player leaves and a bot plays it by ``random_move``.  ``check(before,
    seat, move, after, events)`` is called after every resolve."""
    state = GAME.setup(seats, setup_rng(seed), options)
    states, records, events_seen = [state], [], []
    for number in range(1, MAX_PHASES + 1):
        phase = GAME.phase(state)
        if phase is None:
            break
        new_bots = ()
        if chooser.random() < 0.01:
            seat = chooser.randrange(seats)
            if seat not in state.bots:
                new_bots = (seat,)
                state = GAME.replace_by_bot(state, seat)
        (seat,) = phase.movers
        legal = GAME.legal_moves(state, seat)
        if seat in state.bots:
            move = GAME.random_move(state, seat, random_move_rng(seed, number, seat))
        elif legal[0] in (("pass",), ("decline",)) and chooser.random() < 0.3:
            move = legal[0]
        else:
            move = chooser.choice(legal)
        before = state
        state, events = GAME.resolve(before, {seat: move}, resolve_rng(seed, number))
        if check:
            check(before, seat, move, state, events)
        states.append(state)
        records.append(PhaseRecord(number, {seat: GAME.move_text(move)}, new_bots))
        events_seen.append(events)
    return states, records, events_seen


seeds = st.binary(min_size=1, max_size=16)
seat_counts = st.sampled_from([2, 3, 4])
game_options = st.fixed_dictionaries(
    {"short": st.booleans(), "scoring_colour": st.sampled_from(["red", "red", "green"])}
)
choosers = st.randoms(use_true_random=False)


def beats(bid, high) -> bool:
    """The rule text's order: more pyramids; then more larges; then more mediums."""
    if len(bid) != len(high):
        return len(bid) > len(high)
    for size in (3, 2):
        mine, theirs = sum(s == size for _, s in bid), sum(s == size for _, s in high)
        if mine != theirs:
            return mine > theirs
    return False


def can_raise(active, high) -> bool:
    return any(beats(bid, high) for n in range(1, len(high) + 2) for bid in itertools.combinations(active, n))


@settings(max_examples=40, deadline=None)
@given(seeds, seat_counts, game_options, choosers)
def test_property_all_60_pyramids_are_always_somewhere(seed, seats, options, chooser):
    scoring = options["scoring_colour"]

    def check(before, seat, move, after, events):
        assert census(after) == ALL_SIXTY  # 5 of every colour and size; 60 in all
        colourless = sum(c == COLOURLESS for c, _ in census_list(after))
        assert after.drawn == len(after.track) + colourless  # the track's count never drops (I11)
        assert all(c == scoring for c, _ in after.track)
        for seat_ in range(after.seats):
            assert all(c != scoring for c, _ in after.active[seat_])  # only ever colourless
            assert all(len(t) == 3 and sorted(s for _, s in t) == [1, 2, 3] for t in after.scored[seat_])
            bid = after.bids[seat_]
            assert bid is None or not Counter(bid) - Counter(after.active[seat_])  # a bid is in the active area
        if after.stage == "auction":
            assert len(after.lot) == 3 and sorted(s for _, s in after.lot) == [1, 2, 3]
        assert all(c != scoring for c, _ in after.lot + after.dead)

    random_game(seed, seats, options, chooser, check)


@settings(max_examples=30, deadline=None)
@given(seeds, seat_counts, game_options, choosers)
def test_property_auctions_and_payments_follow_the_rules(seed, seats, options, chooser):
    """Every bid beats the last by at most one pyramid more; the mover can always
    bid; a forced pass is a seat that could not have raised; the winner pays
    down the bidding passers in descending card order; a scoring round has at
    most two trees, from different seats, earning 2 then 1 (or what is left)."""
    auction = {"high": (), "cards": {}, "due": None}
    step, end = (2, 8) if options["short"] else (3, 12)

    def check(before, seat, move, after, events):
        if auction["due"] is None:  # the setup's lot
            auction["due"], auction["drawn"] = before.scoring_due, before.drawn
        legal = GAME.legal_moves(before, seat)
        assert len(set(legal)) == len(legal)  # distinct moves (I13)
        if before.stage == "auction":
            assert seat not in before.cards
            assert any(m[0] == "bid" for m in GAME.legal_moves(before, seat))
            assert (("pass",) in GAME.legal_moves(before, seat)) == (
                before.high is not None or len(before.cards) < before.seats - 1
            )
        actives = before.active
        types = [e["type"] for e in events]
        for index, event in enumerate(events):
            if event["type"] == "bid":
                bid = pl(" ".join(event["bid"]))
                assert beats(bid, auction["high"]) and len(bid) <= len(auction["high"]) + 1
                auction["high"] = bid
            elif event["type"] == "pass":
                auction["cards"][event["card"]] = (event["seat"], pl(" ".join(event["bid"])))
                assert event["card"] == len(auction["cards"])
                if event["forced"]:
                    assert not can_raise(actives[event["seat"]], auction["high"])
            elif event["type"] == "won":
                chain = [event["seat"]] + [s for _, (s, bid) in sorted(auction["cards"].items(), reverse=True) if bid]
                assert [(p["from"], p["to"]) for p in event["payments"]] == list(
                    zip(chain, [*chain[1:], None], strict=True)
                )
                assert pl(" ".join(event["bid"])) == auction["high"]
                assert event["card"] == before.seats == len(auction["cards"]) + 1
                assert ("scoring" in types[index:]) == auction["due"]  # a round follows a due auction only
                auction["offers"] = [event["seat"]] + [
                    s for _, (s, _) in sorted(auction["cards"].items(), reverse=True)
                ]
                auction["high"], auction["cards"] = (), {}
            elif event["type"] == "scoring":
                assert event["offers"] == auction["offers"]  # the winner, then descending cards (I10)
                actives = None  # the next auction's forced passes are checked by the mover rule
            elif event["type"] == "lot":
                actives = after.active
                crossed = any(auction["drawn"] < m <= event["track"] for m in range(step, end + 1, step))
                assert (event["scoring_due"], event["final"]) == (crossed, event["track"] >= end)
                assert event["track"] - auction["drawn"] == len(event["to_track"])
                auction["due"], auction["drawn"] = event["scoring_due"], event["track"]
            elif event["type"] == "tree":
                tree = pl(" ".join(event["tree"]))
                assert event["uniform"] == (len({c for c, _ in tree}) == 1 and tree[0][0] != COLOURLESS)
        if before.stage == "scoring" and move[0] == "score":
            earned = 2 if before.trees_scored == 0 else 1
            assert len(move[2]) == min(earned, len(before.dead))
            assert len(after.scored[seat]) == len(before.scored[seat]) + 1
        if after.stage == "scoring":
            assert after.trees_scored < 2

    states, _, events = random_game(seed, seats, options, chooser, check)
    trees = [[e["seat"] for e in phase_events if e["type"] == "tree"] for phase_events in events]
    rounds, current = [], []
    for phase_events in events:
        for event in phase_events:
            if event["type"] == "scoring":
                current = []
            elif event["type"] == "tree":
                current.append(event["seat"])
            elif event["type"] == "scoring over":
                rounds.append(current)
                assert event["trees"] == len(current)
    assert all(len(r) <= 2 and len(set(r)) == len(r) for r in rounds)
    assert sum(map(len, trees)) == sum(len(s) for s in states[-1].scored)


values = st.lists(st.tuples(st.sampled_from([*COLOURS, COLOURLESS]), st.sampled_from([1, 2, 3])), max_size=6)


@settings(max_examples=300, deadline=None)
@given(values, values, values)
def test_property_bid_value_is_a_total_order_by_count_then_larges_then_mediums(a, b, c):
    va, vb, vc = value(a), value(b), value(c)
    assert (va > vb) == beats(a, b) and (vb > va) == beats(b, a)
    assert va <= vb or vb <= va  # total
    if va <= vb and vb <= va:  # antisymmetric: equal value is the same sizes
        assert Counter(s for _, s in a) == Counter(s for _, s in b)
    if va <= vb and vb <= vc:
        assert va <= vc  # transitive
    recoloured = [(COLOURS[(COLOURS.index(col) + 1) % 4] if col in COLOURS else "blue", s) for col, s in a]
    assert value(recoloured) == va  # colours never count
    assert value([*a, ("yellow", 1)]) > va  # one pyramid more always beats


@settings(max_examples=40, deadline=None)
@given(seeds, seat_counts, game_options, choosers)
def test_property_every_game_ends_and_the_result_is_set_exactly_then(seed, seats, options, chooser):
    states, _records, events = random_game(seed, seats, options, chooser)
    final = states[-1]
    assert GAME.phase(final) is None, f"no end after {MAX_PHASES} phases"
    assert all(GAME.phase(s) is not None and GAME.result(s) is None for s in states[:-1])
    result = GAME.result(final)
    assert result is not None and final.stage == "over"
    end = 8 if options["short"] else 12
    assert final.drawn >= end
    # non-scoring pyramids of each size: 15, one per seat at setup and one per lot (I11)
    assert final.auction <= 16 - seats
    assert result.scores == tuple(breakdown(final, s)["total"] for s in range(seats))
    held = [Counter(c for c, _ in final.active[s] + tuple(p for t in final.scored[s] for p in t)) for s in range(seats)]
    for colour in COLOURS:  # I14's colour bonuses, counted again here
        top = max(h[colour] for h in held)
        winners = [s for s in range(seats) if top and held[s][colour] == top]
        for s in range(seats):
            expected = 0 if s not in winners or colour == options["scoring_colour"] else 5 if len(winners) == 1 else 3
            assert breakdown(final, s)["bonuses"].get(colour, 0) == expected
    assert events[-1][-1]["type"] == "over"
    # I16: the best person by points, then by the value of all collected; a tie on both is no winner
    people = [s for s in range(seats) if s not in final.bots]
    rank = {
        s: (result.scores[s], value(final.active[s] + tuple(p for t in final.scored[s] for p in t))) for s in people
    }
    best = [s for s in people if rank[s] == max(rank.values(), default=None)]
    assert result.winner == (best[0] if len(best) == 1 else None)  # (no people: no winner)
    scoring_rounds = sum(e["type"] == "scoring" for phase_events in events for e in phase_events)
    assert scoring_rounds <= end // (2 if options["short"] else 3)
    for before in states[:-1]:  # (each move's text read back: test_contract.py)
        assert not GAME.phase(before).sealed  # every phase is a turn
