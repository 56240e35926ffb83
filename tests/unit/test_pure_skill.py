"""The Game of Pure Skill against its rule text (docs/rules/pure-skill.txt).

Test names start with the clause they check: test_2_..., test_4a_... test_4h_...,
test_8_...; the house variant is test_carry_...; test_property_... are Hypothesis
properties over whole games.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from itertools import chain

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.rules import MoveError, OptionError, Rng
from referee.rules.pure_skill import PureSkill, PureSkillState

GAME = PureSkill()
CARDS = list(range(1, 14))
ALL = frozenset(CARDS)
# The rule text's names (4b), written out here rather than taken from the code.
WORDS = ["ace", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "jack", "queen", "king"]
SHORT = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]


# --- helpers ---------------------------------------------------------------


def new_game(seed: bytes = b"seed", **options) -> PureSkillState:
    return GAME.setup(3, Rng(seed, "setup"), options)


def make_state(
    *,
    round=1,
    prize=7,
    hands=None,
    takes=((), (), ()),
    pot=(),
    spades=None,
    discarded=(),
    bots=(),
    ties="discard",
) -> PureSkillState:
    """A state built by hand; undrawn spades default to those not accounted for."""
    if hands is None:
        hands = (ALL, ALL, ALL)
    if spades is None:
        spades = ALL - {prize} - set(pot) - set(discarded) - set(chain.from_iterable(takes))
    return PureSkillState(
        round=round,
        prize=prize,
        pot=tuple(pot),
        spades=frozenset(spades),
        hands=tuple(frozenset(h) for h in hands),
        takes=tuple(tuple(t) for t in takes),
        discarded_prizes=tuple(discarded),
        bots=frozenset(bots),
        ties=ties,
    )


def finished(takes, bots=()) -> PureSkillState:
    """A game after round 13: spades nobody took were discarded."""
    won = set(chain.from_iterable(takes))
    return make_state(
        round=14,
        prize=None,
        hands=((), (), ()),
        takes=takes,
        spades=(),
        discarded=sorted(ALL - won),
        bots=bots,
    )


def bid(state, b0, b1, b2, label="test resolve"):
    return GAME.resolve(state, {0: b0, 1: b1, 2: b2}, Rng(b"seed", label))


def playout(seed: bytes, choices, ties="discard"):
    """A whole game; each bid is legal_moves[choice % len].  Returns (before, moves, after, events)."""
    state = GAME.setup(3, Rng(seed, "setup"), {"ties": ties})
    steps = []
    for n in range(1, 100):  # a bound, so a game that never ends fails instead of hanging
        if GAME.phase(state) is None:
            break
        moves = {}
        for seat in range(3):
            legal = GAME.legal_moves(state, seat)
            moves[seat] = legal[choices[(3 * (n - 1) + seat) % len(choices)] % len(legal)]
        after, events = GAME.resolve(state, moves, Rng(seed, f"phase {n} resolve"))
        steps.append((state, moves, after, events))
        state = after
    return steps


def prizes_of(steps):
    return [before.prize for before, *_ in steps]


# --- rule 2: exactly 3 players ---------------------------------------------


def test_2_the_game_takes_exactly_three_seats():
    assert GAME.min_seats == GAME.max_seats == 3
    assert len(new_game().hands) == 3


@pytest.mark.parametrize("seats", [1, 2, 4, 5])
def test_2_setup_with_other_than_three_seats_raises_option_error(seats):
    with pytest.raises(OptionError):
        GAME.setup(seats, Rng(b"seed", "setup"), {})


# --- 4a: the packs ----------------------------------------------------------


def test_4a_each_seat_holds_thirteen_cards_ace_to_king():
    state = new_game()
    for seat in range(3):
        assert state.hands[seat] == ALL
        assert GAME.legal_moves(state, seat) == CARDS


@pytest.mark.parametrize("seed", [b"a", b"b", b"c", bytes(32)])
def test_4a_the_prize_is_drawn_from_the_referees_spades_and_removed_from_them(seed):
    state = new_game(seed)
    assert state.prize in ALL
    assert state.prize not in state.spades
    assert state.spades | {state.prize} == ALL


def test_4a_take_piles_start_empty():
    state = new_game()
    assert state.takes == ((), (), ())
    assert state.discarded_prizes == ()


# --- 4b: card values and how bids are written ------------------------------


def _spellings():
    for value in CARDS:
        for word in {WORDS[value - 1], SHORT[value - 1], str(value)}:
            for variant in {word.lower(), word.upper(), word.capitalize()}:
                yield variant, value


@pytest.mark.parametrize(("word", "value"), sorted(_spellings()))
def test_4b_every_spelling_of_a_card_has_its_value(word, value):
    assert GAME.parse_move(new_game(), 0, f"bid {word}") == value


@pytest.mark.parametrize("text", ["BID K", "  bid   k  ", "Bid King"])
def test_4b_the_word_bid_and_spacing_are_read_in_any_case(text):
    assert GAME.parse_move(new_game(), 1, text) == 13


@pytest.mark.parametrize("seat", [0, 1, 2])
def test_4b_a_bid_may_name_the_bidders_own_suit(seat):
    state = new_game()
    suit = GAME.view(state, seat)["suit"]
    assert GAME.parse_move(state, seat, f"bid 7 of {suit}") == 7
    assert GAME.parse_move(state, seat, f"bid queen of {suit.upper()}") == 12


def test_4b_seat_0_bids_hearts():
    assert GAME.parse_move(new_game(), 0, "bid 7 of hearts") == 7


@pytest.mark.parametrize("suit", ["spades", "diamonds", "clubs"])
def test_4b_a_bid_of_spades_or_another_players_suit_is_refused(suit):
    with pytest.raises(MoveError, match="hearts"):  # seat 0 is told its own suit
        GAME.parse_move(new_game(), 0, f"bid 7 of {suit}")


@pytest.mark.parametrize("word", ["14", "0", "joker", "X"])
def test_4b_an_unknown_card_gives_a_move_error_naming_it_and_the_real_cards(word):
    with pytest.raises(MoveError) as error:
        GAME.parse_move(new_game(), 0, f"bid {word}")
    message = str(error.value)
    assert f"'{word}'" in message
    assert re.search(r"\bA\b", message) and re.search(r"\bK\b", message)


@pytest.mark.parametrize("text", ["bid", "bid  ", "bid of hearts"])
def test_4b_a_missing_card_gives_a_move_error_with_an_example(text):
    with pytest.raises(MoveError, match=r"'bid \w+'"):
        GAME.parse_move(new_game(), 0, text)


@pytest.mark.parametrize("text", ["", "hello", "pass", "bid 7 8"])
def test_4b_text_that_is_not_one_bid_is_refused(text):
    with pytest.raises(MoveError):
        GAME.parse_move(new_game(), 0, text)


@pytest.mark.parametrize(("text", "value"), [("bid K.", 13), ("bid 7.", 7)])
def test_4b_a_bid_ending_in_a_full_stop_is_read(text, value):
    assert GAME.parse_move(new_game(), 0, text) == value


@pytest.mark.parametrize("text", ["bid ²", "bid ¹³"])
def test_4b_any_text_is_answered_with_a_move_error_not_a_crash(text):
    with pytest.raises(MoveError):
        GAME.parse_move(new_game(), 0, text)


# --- 4c: thirteen sealed rounds ---------------------------------------------


def test_4c_a_game_is_exactly_thirteen_rounds_then_there_is_no_phase():
    steps = playout(b"seed", [0])
    assert len(steps) == 13
    assert all(GAME.result(before) is None for before, *_ in steps)
    final = steps[-1][2]
    assert GAME.phase(final) is None
    assert GAME.result(final) is not None


def test_4c_each_round_is_sealed_with_all_three_seats_and_labelled_round_n_of_13():
    for number, (before, *_) in enumerate(playout(b"seed", [3, 1, 4]), start=1):
        phase = GAME.phase(before)
        assert phase.sealed
        assert phase.movers == (0, 1, 2)
        assert phase.label == f"Round {number} of 13"


def test_4c_no_bid_is_taken_after_the_thirteenth_round():
    final = playout(b"seed", [0])[-1][2]
    assert GAME.legal_moves(final, 0) == []
    with pytest.raises(MoveError):
        GAME.parse_move(final, 0, "bid K")


# --- 4d: the prize ------------------------------------------------------------


def test_4d_each_rounds_prize_is_a_spade_not_drawn_before():
    prizes = prizes_of(playout(b"seed", [5, 2]))
    for number, prize in enumerate(prizes):
        assert prize in ALL
        assert prize not in prizes[:number]


@pytest.mark.parametrize("seed", [b"one", b"two", bytes(32)])
def test_4d_over_thirteen_rounds_every_spade_is_drawn_exactly_once(seed):
    assert sorted(prizes_of(playout(seed, [7]))) == CARDS


def test_4d_the_prize_is_announced_to_every_seat_before_bidding():
    for before, *_ in playout(b"seed", [0]):
        assert GAME.view(before, None)["prize"] == before.prize
        assert all(GAME.view(before, seat)["prize"] == before.prize for seat in range(3))


def test_4d_the_same_seed_draws_the_same_prizes():
    assert prizes_of(playout(b"same", [1])) == prizes_of(playout(b"same", [1]))


def test_4d_different_seeds_draw_different_prizes():
    sequences = {tuple(prizes_of(playout(seed, [0]))) for seed in (b"a", b"b", b"c", b"d")}
    assert len(sequences) == 4


def test_4d_the_prizes_do_not_depend_on_the_bids():
    assert prizes_of(playout(b"seed", [0])) == prizes_of(playout(b"seed", [12, 5, 3, 9]))


# --- 4e: bids -------------------------------------------------------------------


def test_4e_a_card_already_bid_is_refused():
    state, _ = bid(new_game(), 7, 7, 7)
    with pytest.raises(MoveError):
        GAME.parse_move(state, 0, "bid 7")
    assert 7 not in GAME.legal_moves(state, 0)


def test_4e_the_refusal_names_the_cards_you_still_hold():
    state = make_state(round=11, hands=({3, 8, 12}, {1, 2, 3}, {1, 2, 3}))
    with pytest.raises(MoveError) as error:
        GAME.parse_move(state, 0, "bid K")
    message = str(error.value)
    for held in ("3", "8", "Q"):
        assert re.search(rf"\b{held}\b", message)
    assert not re.search(r"\b5\b", message)


def test_4e_legal_moves_are_the_cards_still_in_the_pack():
    state = make_state(round=11, hands=({3, 8, 12}, {1, 2, 13}, {4, 5, 6}))
    assert [GAME.legal_moves(state, seat) for seat in range(3)] == [[3, 8, 12], [1, 2, 13], [4, 5, 6]]


def test_4e_resolve_refuses_a_bid_of_a_card_not_in_the_pack():
    state = make_state(round=11, hands=({3, 8, 12}, {1, 2, 13}, {4, 5, 6}))
    with pytest.raises(MoveError):
        bid(state, 13, 1, 4)


def test_4e_a_random_bid_is_always_a_card_still_in_the_pack():
    state = make_state(round=11, hands=({3, 8, 12}, {1, 2, 13}, {4, 5, 6}))
    for i in range(300):
        for seat in range(3):
            assert GAME.random_move(state, seat, Rng(b"seed", f"r{i}")) in state.hands[seat]


def test_4e_a_random_bid_can_be_any_card_of_a_full_pack():
    state = new_game()
    chosen = {GAME.random_move(state, 0, Rng(b"seed", f"r{i}")) for i in range(1000)}
    assert chosen == ALL


def test_4e_a_random_bid_is_uniform_over_the_pack():
    state = make_state(round=11, hands=({2, 7, 11}, {1, 2, 3}, {1, 2, 3}))
    counts = Counter(GAME.random_move(state, 0, Rng(b"seed", f"r{i}")) for i in range(3000))
    assert set(counts) == {2, 7, 11}
    assert all(800 <= count <= 1200 for count in counts.values())  # 1000 expected, sd ~26


# --- 4f: resolving a round ------------------------------------------------------


def test_4f_the_single_highest_bid_takes_the_prize():
    after, _ = bid(make_state(prize=7), 5, 9, 3)
    assert after.takes == ((), (7,), ())
    assert after.discarded_prizes == ()


def test_4f_a_single_highest_bid_takes_the_prize_even_when_the_lower_bids_tie():
    after, _ = bid(make_state(prize=7), 3, 3, 10)
    assert after.takes == ((), (), (7,))


def test_4f_a_tie_for_highest_discards_the_prize_even_if_the_third_bid_is_lower():
    state = new_game()  # no options: the rule text's 4f
    after, _ = bid(state, 9, 9, 3)
    assert after.takes == ((), (), ())
    assert after.discarded_prizes == (state.prize,)
    assert state.prize not in after.spades and state.prize != after.prize


def test_4f_a_three_way_tie_discards_the_prize():
    after, _ = bid(make_state(prize=7), 4, 4, 4)
    assert after.takes == ((), (), ())
    assert after.discarded_prizes == (7,)


@pytest.mark.parametrize("bids", [(5, 9, 3), (9, 9, 3), (4, 4, 4), (3, 3, 10)])
def test_4f_all_bid_cards_leave_the_hands_whatever_the_outcome(bids):
    before = make_state(prize=7)
    after, _ = bid(before, *bids)
    for seat in range(3):
        assert after.hands[seat] == before.hands[seat] - {bids[seat]}


# --- 4g: the announcement -----------------------------------------------------


def test_4g_the_round_event_reports_prize_bids_winner_outcome_and_scores():
    before = make_state(round=3, prize=6, takes=((13,), (), (2,)), hands=(ALL - {1}, ALL - {2}, ALL - {3}))
    _, events = bid(before, 4, 12, 11)
    (event,) = events
    assert event["round"] == 3
    assert event["prize"] == 6
    assert event["bids"] == [4, 12, 11]
    assert event["winner"] == 1
    assert event["outcome"] == "taken"
    assert event["scores"] == [13, 6, 2]


def test_4g_a_tied_round_is_announced_with_no_winner():
    (event,) = bid(make_state(prize=6), 12, 12, 1)[1]
    assert event["bids"] == [12, 12, 1]
    assert event["winner"] is None
    assert event["outcome"] == "discarded"
    assert event["scores"] == [0, 0, 0]


def test_4g_events_can_be_published_as_json():
    for *_, events in playout(b"seed", [4, 8], ties="carry"):
        assert json.loads(json.dumps(events)) == events


# --- 4h: the end of the game ------------------------------------------------------


def test_4h_totals_are_the_sums_of_the_prize_values_taken():
    result = GAME.result(finished(((13, 2), (12, 1), (11,))))
    assert result.scores == (15, 13, 11)


def test_4h_totals_count_value_not_quantity():
    result = GAME.result(finished(((1, 2, 3, 4), (13,), ())))
    assert result.scores == (10, 13, 0)
    assert result.winner == 1


def test_4h_the_single_highest_total_wins():
    assert GAME.result(finished(((13, 2), (12, 1), (11,)))).winner == 0


def test_4h_a_tie_for_the_highest_total_means_no_winner():
    assert GAME.result(finished(((13,), (12, 1), (5,)))).winner is None


def test_4h_a_player_with_no_cards_scores_zero():
    assert GAME.result(finished(((13,), (), (12,)))).scores == (13, 0, 12)
    nobody = GAME.result(finished(((), (), ())))
    assert nobody.scores == (0, 0, 0)
    assert nobody.winner is None


def test_4h_there_is_no_result_before_the_game_ends():
    assert GAME.result(new_game()) is None
    assert GAME.result(make_state(round=13, prize=1)) is None


# --- rule 8: bots -------------------------------------------------------------------


def test_8_replace_by_bot_marks_the_seat_and_the_bot_still_bids():
    state = new_game()
    botted = GAME.replace_by_bot(state, 1)
    assert botted.bots == {1}
    assert GAME.phase(botted) == GAME.phase(state)
    assert GAME.legal_moves(botted, 1) == CARDS


def test_8_a_bot_with_the_top_total_is_not_the_winner_the_best_human_is():
    state = GAME.replace_by_bot(finished(((13, 12), (11,), (10,))), 0)
    result = GAME.result(state)
    assert result.scores == (25, 11, 10)
    assert result.winner == 1


def test_8_two_humans_tied_below_a_bot_means_no_winner():
    state = GAME.replace_by_bot(finished(((13, 12), (11,), (10, 1))), 0)
    assert GAME.result(state).winner is None


def test_8_when_every_seat_is_a_bot_there_is_no_winner():
    state = finished(((13, 12), (11,), (10,)))
    for seat in range(3):
        state = GAME.replace_by_bot(state, seat)
    assert GAME.result(state).winner is None


# --- option ties="carry" (house variant) ------------------------------------------


def test_carry_a_tied_prize_goes_with_the_next_prize_to_the_next_single_winner():
    state = make_state(round=3, prize=5, ties="carry")
    tied, events = bid(state, 9, 9, 1)
    assert events[0]["outcome"] == "carried"
    assert tied.discarded_prizes == ()
    assert tied.takes == ((), (), ())
    won, _ = bid(tied, 2, 3, 8)
    assert sorted(won.takes[2]) == sorted([tied.prize, 5])
    assert won.pot == ()


def test_carry_the_pot_grows_over_several_ties():
    state = make_state(round=3, prize=5, ties="carry")
    first, _ = bid(state, 9, 9, 1, label="a")
    second, _ = bid(first, 2, 2, 2, label="b")
    won, _ = bid(second, 13, 3, 8, label="c")
    assert sorted(won.takes[0]) == sorted([5, first.prize, second.prize])


def test_carry_a_tie_in_round_13_discards_the_prize_and_the_pot():
    state = make_state(round=13, prize=5, pot=(9,), hands=({4}, {4}, {1}), ties="carry")
    after, _ = bid(state, 4, 4, 1)
    assert sorted(after.discarded_prizes) == [5, 9]
    assert after.takes == ((), (), ())
    assert GAME.phase(after) is None


@pytest.mark.parametrize("options", [{"ties": "split"}, {"ties": None}, {"jokers": True}])
def test_carry_unknown_options_and_option_values_raise_option_error(options):
    with pytest.raises(OptionError):
        GAME.setup(3, Rng(b"seed", "setup"), options)


# --- views: what each seat may know --------------------------------------------


def test_view_the_public_view_shows_no_hand():
    public = GAME.view(new_game(), None)
    assert "hand" not in public


def _but_unbid(view: dict) -> dict:
    return {key: value for key, value in view.items() if key != "unbid"}


def test_view_the_public_view_is_the_same_whatever_cards_the_seats_hold_but_the_unbid():
    """Every bid is shown when its round resolves (4a: each seat holds a whole
    suit; 4f), so the cards a seat has not bid are the table's knowledge and
    the public view shows them; nothing else in it depends on the hands."""
    one = make_state(round=11, hands=({1, 2, 3}, {4, 5, 6}, {7, 8, 9}))
    other = make_state(round=11, hands=({11, 12, 13}, {1, 2, 3}, {4, 5, 10}))
    assert _but_unbid(GAME.view(one, None)) == _but_unbid(GAME.view(other, None))
    assert GAME.view(one, None)["unbid"] == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]


def test_view_a_seat_sees_its_own_hand_only():
    one = make_state(round=11, hands=({1, 2, 3}, {4, 5, 6}, {7, 8, 9}))
    other = make_state(round=11, hands=({1, 2, 3}, {11, 12, 13}, {4, 5, 10}))
    assert GAME.view(one, 0)["hand"] == [1, 2, 3]
    assert _but_unbid(GAME.view(one, 0)) == _but_unbid(GAME.view(other, 0))  # others' cards change nothing else


def test_view_a_seats_view_is_the_public_view_plus_its_secrets():
    state = new_game()
    public, private = GAME.view(state, None), GAME.view(state, 2)
    assert {key: private[key] for key in public} == public


# --- canonical move text --------------------------------------------------------------


@pytest.mark.parametrize("seat", [0, 1, 2])
@pytest.mark.parametrize("card", CARDS)
def test_move_text_reads_back_as_the_same_card(card, seat):
    assert GAME.parse_move(new_game(), seat, GAME.move_text(card)) == card


@pytest.mark.parametrize("card", CARDS)
def test_move_text_uses_the_short_card_name(card):
    assert GAME.move_text(card) == f"bid {SHORT[card - 1]}"


# --- properties over whole games ----------------------------------------------------

seeds = st.binary(min_size=1, max_size=32)
choices = st.lists(st.integers(min_value=0, max_value=12), min_size=39, max_size=39)
ties = st.sampled_from(["discard", "carry"])


def _spades_accounted_for(state):
    prize = [] if state.prize is None else [state.prize]
    return sorted([*state.spades, *prize, *state.pot, *chain.from_iterable(state.takes), *state.discarded_prizes])


@settings(max_examples=80, deadline=None)
@given(seeds, choices, ties)
def test_property_cards_are_conserved(seed, picks, tie_rule):
    steps = playout(seed, picks, tie_rule)
    bid_so_far = [[], [], []]
    assert _spades_accounted_for(steps[0][0]) == CARDS
    for _, moves, after, _ in steps:
        for seat in range(3):
            bid_so_far[seat].append(moves[seat])
            assert sorted([*after.hands[seat], *bid_so_far[seat]]) == CARDS
        assert _spades_accounted_for(after) == CARDS


@settings(max_examples=80, deadline=None)
@given(seeds, choices, ties)
def test_property_each_score_is_the_sum_of_the_prizes_won_in_the_round_events(seed, picks, tie_rule):
    steps = playout(seed, picks, tie_rule)
    won = [0, 0, 0]
    for *_, events in steps:
        for event in events:
            if event["winner"] is not None:
                won[event["winner"]] += event["prize"] + sum(event["pot"])
            assert event["scores"] == won
    assert GAME.result(steps[-1][2]).scores == tuple(won)


@settings(max_examples=80, deadline=None)
@given(seeds, choices, ties)
def test_property_a_game_ends_after_exactly_13_resolutions(seed, picks, tie_rule):
    steps = playout(seed, picks, tie_rule)
    assert len(steps) == 13
    assert all(GAME.phase(before) is not None for before, *_ in steps)
    assert GAME.phase(steps[-1][2]) is None


@pytest.mark.parametrize(("word", "value"), [("one", 1), ("eleven", 11), ("Twelve", 12), ("THIRTEEN", 13)])
def test_4b_number_words_name_the_card_of_that_value(word, value):
    assert GAME.parse_move(new_game(), 0, f"bid {word}") == value
