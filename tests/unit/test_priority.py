"""Auction (priority cards) against its rule text
(docs/rules/priority-auction.txt) and the rulings P1-P17
(docs/games/priority-auction.md).

Names start with the part of the rules they check (setup_, turn_, limit_,
tally_, final_, secret_, parse_); test_property_... are Hypothesis
properties over whole random games.  A state for a situation is a real
setup state changed with dataclasses.replace.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.record import PhaseRecord, random_move_rng, resolve_rng, setup_rng
from referee.rules import MoveError, OptionError, Rng, get_game
from referee.rules.priority import PriorityAuction, PriorityState

GAME = PriorityAuction()
SEED = b"priority auction rules tests"

# The rule text's table, typed from it: players -> {item value: how many}, rounds.
TABLE = {
    3: ({1: 3, 2: 1}, 5, 4),
    4: ({1: 3, 2: 2, 3: 1}, 10, 6),
    5: ({1: 2, 2: 3, 3: 2, 5: 1}, 19, 8),
    6: ({1: 2, 2: 2, 3: 3, 5: 2, 8: 1}, 33, 10),
    7: ({1: 2, 2: 2, 3: 2, 5: 3, 8: 2, 13: 1}, 56, 12),
    8: ({1: 2, 2: 2, 3: 2, 5: 2, 8: 3, 13: 2, 21: 1}, 93, 14),
}


def start(seats: int = 4, seed: bytes = SEED, **options) -> PriorityState:
    return GAME.setup(seats, setup_rng(seed), options)


def at(state: PriorityState, seat: int, **changes) -> PriorityState:
    """``state`` with ``seat`` to move (and any other changes)."""
    return replace(state, turn=seat, **changes)


def play(state: PriorityState, text: str, seed: bytes = SEED, number: int = 1):
    seat = state.turn
    move = GAME.parse_move(state, seat, text)
    assert move in GAME.legal_moves(state, seat)
    return GAME.resolve(state, {seat: move}, resolve_rng(seed, number))


def bare(event: dict) -> dict:
    """An event without the scores every resolve's last event carries."""
    return {k: v for k, v in event.items() if k != "scores"}


def boards(state: PriorityState, *cards: dict[str, int]) -> PriorityState:
    """Boards given as {colour: card} per seat."""
    cards = cards + ({},) * (state.seats - len(cards))
    rows = tuple(tuple(c.get(colour, 0) for colour in state.in_play) for c in cards)
    return replace(state, boards=rows)


# --- setup ------------------------------------------------------------------------------


@pytest.mark.parametrize("seats", sorted(TABLE))
def test_setup_the_item_deck_is_the_texts_table_for_every_player_count(seats):
    counts, total, rounds = TABLE[seats]
    for seed in (b"a", b"b", b"c"):
        state = start(seats, seed)
        items = Counter([state.item, *state.deck])
        assert items == Counter(counts)
        assert sum(items.elements()) == total and state.rounds == rounds == len(list(items.elements()))


@pytest.mark.parametrize("seats", sorted(TABLE))
def test_setup_the_first_item_is_never_the_highest_and_any_other_can_come_first(seats):
    counts, _, _ = TABLE[seats]
    firsts = Counter(start(seats, bytes([n, seats])).item for n in range(200))
    assert max(counts) not in firsts
    assert set(firsts) == set(counts) - {max(counts)}


@pytest.mark.parametrize("seats", sorted(TABLE))
def test_setup_one_secret_colour_each_empty_boards_cards_one_to_n(seats):
    state = start(seats)
    assert sorted(state.colours) == sorted(state.in_play) and len(state.in_play) == seats
    assert all(state.hand(s) == tuple(range(1, seats + 1)) for s in range(seats))
    assert all(not any(board) for board in state.boards)
    assert state.first == state.turn == (state.dealer + 1) % seats  # left of the dealer (P4)
    assert state.round == 1 and state.won == ((),) * seats and not state.revealed


def test_setup_colours_and_dealer_vary_with_the_seed():
    states = [start(5, bytes([n])) for n in range(60)]
    assert len({s.colours for s in states}) > 20
    assert {s.dealer for s in states} == set(range(5))


@pytest.mark.parametrize("seats", [2, 9])
def test_setup_refuses_other_than_3_to_8_players(seats):
    with pytest.raises(OptionError):
        start(seats)


@pytest.mark.parametrize("options", [{"turn_limit": "many"}, {"turn_limit": -1}, {"limit": 3}])
def test_setup_refuses_bad_options(options):
    with pytest.raises(OptionError):
        start(4, **options)


def test_setup_turn_limit_default_is_twice_the_players():
    assert start(3).turn_limit == 6 and start(8).turn_limit == 16
    assert start(4, turn_limit=3).turn_limit == 3


def test_setup_is_registered_as_priority():
    assert get_game("priority").title == "Auction (priority cards)"


# --- turns ------------------------------------------------------------------------------


def test_turn_play_a_card_face_down_on_an_empty_colour_of_your_own_board():
    state = at(start(4), 0)
    after, events = play(state, "play 3 on blue")
    assert after.boards[0] == (0, 3, 0, 0) and after.hand(0) == (1, 2, 4)
    assert bare(events[0]) == {"type": "play", "seat": 0, "colour": "blue"}  # never the card
    assert after.turn == 1


def test_turn_one_card_a_colour_and_moves_go_to_an_empty_colour():
    state = at(boards(start(4), {"red": 2, "blue": 4}), 0)
    with pytest.raises(MoveError, match="holds a card already"):
        GAME.parse_move(state, 0, "play 1 on red")
    with pytest.raises(MoveError, match="holds a card already"):
        GAME.parse_move(state, 0, "move red to blue")
    with pytest.raises(MoveError, match="on red already"):
        GAME.parse_move(state, 0, "play 2 on green")
    with pytest.raises(MoveError, match="no card on green"):
        GAME.parse_move(state, 0, "move green to yellow")
    after, events = play(state, "move red to green")
    assert after.boards[0] == (0, 4, 2, 0)
    assert bare(events[0]) == {"type": "move", "seat": 0, "from": "red", "to": "green"}


def test_turn_goes_clockwise_and_skips_those_who_passed_until_all_have_passed():
    state = at(start(4), 1, first=1)
    order = []
    for text in ["pass", "play 1 on red", "play 1 on red", "play 1 on red", "play 2 on blue", "pass", "pass", "pass"]:
        order.append(state.turn)
        state, events = play(state, text)
    assert order == [1, 2, 3, 0, 2, 3, 0, 2]
    assert events[-2]["type"] == "tally" and state.round == 2


def test_turn_a_pass_is_for_the_rest_of_the_round():
    state = at(start(3), 0, first=0)
    state, _ = play(state, "pass")
    assert 0 in state.passed and state.turn == 1
    state, _ = play(state, "play 1 on red")
    state, _ = play(state, "play 1 on blue")
    assert state.turn == 1  # seat 0 is skipped


def test_turn_the_next_round_opens_one_seat_further_left():
    state = at(start(3), 2, first=2)
    for _ in range(3):
        state, events = play(state, "pass")
    assert state.first == state.turn == 0 and state.round == 2
    assert events[-1]["type"] == "item" and events[-1]["first"] == 0


# --- a round that ends (P7) --------------------------------------------------------------


def test_limit_a_seat_at_its_turn_limit_passes_without_being_asked():
    state = at(start(3, turn_limit=2), 2, first=0, taken=(2, 1, 1))
    state, events = play(state, "play 1 on red")
    # seat 0 has made its 2 plays and moves: its turn comes and it passes at once
    assert bare(events[1]) == {"type": "pass", "seat": 0, "forced": True, "why": "turn limit"}
    assert state.turn == 1 and state.passed == (0,)
    state, events = play(state, "play 1 on red")  # seat 1's second: everyone is at the limit
    assert [(e["type"], e.get("seat"), e.get("why")) for e in events[:4]] == [
        ("play", 1, None),
        ("pass", 2, "turn limit"),
        ("pass", 1, "turn limit"),
        ("tally", None, None),
    ]
    assert state.round == 2


def test_limit_a_full_board_with_an_empty_hand_passes_without_being_asked():
    state = at(boards(start(3, turn_limit=9), {"red": 1, "blue": 2}), 0, first=0)
    state, events = play(state, "play 3 on green")
    state, events = play(state, "pass")  # seat 1
    state, events = play(state, "pass")  # seat 2: seat 0 is next, with nothing but pass
    assert events[0]["type"] == "pass" and bare(events[1]) == {
        "type": "pass",
        "seat": 0,
        "forced": True,
        "why": "board full",
    }


def test_limit_parse_refuses_plays_past_the_limit():
    state = at(start(3, turn_limit=1), 0, taken=(1, 0, 0))
    with pytest.raises(MoveError, match="pass"):
        GAME.parse_move(state, 0, "play 1 on red")
    assert GAME.parse_move(state, 0, "pass") == ("pass",)


# --- the tally ------------------------------------------------------------------------------


def tally(state: PriorityState, first: int = 0):
    """Everyone passes now, starting with ``first``: the round's tally event."""
    state = at(state, first, first=first)
    for _ in range(state.seats):
        state, events = play(state, "pass")
    return state, next(e for e in events if e["type"] == "tally")


def test_tally_the_single_lowest_colour_wins_the_item_for_its_owner_who_is_revealed():
    state = replace(start(3), colours=("green", "red", "blue"), item=2, deck=(1, 1, 1))
    state = boards(state, {"red": 3, "blue": 1}, {"blue": 2, "green": 3}, {"red": 1})
    after, event = tally(state)
    assert event["totals"] == {"red": 4, "blue": 3, "green": 3}
    assert event["lowest"] == ["blue", "green"] and event["winner"] is None  # a tie: discarded
    assert after.discarded == (2,) and after.won == ((), (), ())
    state = boards(state, {"red": 3, "blue": 1}, {"blue": 2, "green": 1}, {"red": 1})
    after, event = tally(state)
    assert event["lowest"] == ["green"] and event["colour"] == "green" and event["winner"] == 0
    assert after.won[0] == (2,) and after.revealed == {0}
    assert event["boards"] == [{"red": 3, "blue": 1}, {"blue": 2, "green": 1}, {"red": 1}]  # P9: every card
    assert all(not any(board) for board in after.boards)  # cards back to hand
    assert after.taken == (0, 0, 0) and after.passed == ()


def test_tally_a_colour_without_cards_counts_zero():
    state = replace(start(4), colours=("red", "blue", "green", "yellow"))
    state = boards(state, {"red": 1}, {"blue": 1, "green": 2}, {"green": 1}, {})
    _, event = tally(state)
    assert event["totals"]["yellow"] == 0 and event["winner"] == 3


def test_tally_the_last_round_ends_the_game():
    state = replace(start(3), deck=(), round=4, item=1)
    after, _event = tally(boards(state, {}, {}, {"red": 1}))
    assert after.over and GAME.phase(after) is None and GAME.result(after) is not None


# --- the end ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scores, bots, winner",
    [
        ((8, 3, 5, 1), (), 0),
        ((8, 8, 5, 3), (), 2),  # "the next highest total wins"
        ((8, 8, 5, 5, 3), (), 4),  # and again
        ((5, 5, 2, 2), (), None),  # every total shared: no winner
        ((9, 8, 5), (0,), 1),  # a bot is not a player when the winner is decided
        ((9, 9, 5), (0,), 1),  # nor does a bot's total knock a player's out
    ],
)
def test_final_the_highest_total_no_one_shares_wins(scores, bots, winner):
    seats = max(3, len(scores))
    state = replace(
        start(seats),
        item=None,
        deck=(),
        turn=None,
        bots=frozenset(bots),
        won=tuple((s,) if s else () for s in scores) + ((),) * (seats - len(scores)),
    )
    result = GAME.result(state)
    assert result.winner == winner and result.scores[: len(scores)] == scores


def test_final_result_is_none_while_the_game_runs():
    assert GAME.result(start(3)) is None


# --- secrets ---------------------------------------------------------------------------------


def test_secret_the_public_view_shows_filled_spaces_never_values_or_unrevealed_colours():
    state = boards(replace(start(4), colours=("red", "blue", "green", "yellow")), {"red": 3}, {"green": 4})
    view = GAME.view(state, None)
    assert view["filled"] == [["red"], ["green"], [], []]
    assert view["known"] == [None, None, None, None]
    text = json.dumps(view)
    assert '"board"' not in text and '"hand"' not in text and '"colour"' not in text


def test_secret_a_seat_sees_its_own_colour_its_right_neighbours_and_its_own_cards():
    state = boards(replace(start(4), colours=("red", "blue", "green", "yellow")), {"red": 3}, {"green": 4})
    view = GAME.view(state, 1)
    assert view["colour"] == "blue" and view["right"] == 0 and view["right_colour"] == "red"
    assert view["known"] == ["red", "blue", None, None]
    assert view["board"] == {"green": 4} and view["hand"] == [1, 2, 3]
    assert GAME.view(state, 0)["right"] == 3  # seat 1's right is the last seat


def test_secret_with_three_players_the_third_colour_follows_and_the_start_news_says_so():
    state = replace(start(3), colours=("green", "red", "blue"))
    news = GAME.private_news(None, state, 0)
    assert news == {"colour": "green", "right": 2, "right_colour": "blue", "deduced": [{"seat": 1, "colour": "red"}]}


def test_secret_a_colour_that_follows_from_a_reveal_is_news_for_that_seat_only():
    state = replace(start(4), colours=("red", "blue", "green", "yellow"), item=3)
    assert GAME.private_news(None, state, 1)["deduced"] == []
    after, event = tally(boards(state, {}, {}, {"red": 1, "blue": 1, "yellow": 1}, {}), first=0)
    assert event["winner"] == 2  # green revealed
    assert GAME.private_news(state, after, 1) == {"deduced": [{"seat": 3, "colour": "yellow"}]}
    # seat 0 knows red, yellow (its right) and now green: blue follows
    assert GAME.private_news(state, after, 0) == {"deduced": [{"seat": 1, "colour": "blue"}]}
    assert GAME.view(after, 0)["known"] == ["red", "blue", "green", "yellow"]
    assert GAME.private_news(state, after, 2) is None  # its own colour: nothing new
    assert GAME.private_news(state, after, 3) is None  # yellow, green: two still unknown
    assert GAME.view(after, None)["known"] == [None, None, "green", None]


# --- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "play 3 on blue",
        "PLAY 3 BLUE",
        "play blue 3",
        "put 3 on blue",
        "3 on blue",
        "play three on blue",
        "Play 3 on blu.",
        "place card 3 onto blue",
        "Blue 3",
        "play 3 on blue, thanks",
    ],
)
def test_parse_ways_of_writing_a_play(text):
    assert GAME.parse_move(at(start(4), 0), 0, text) == ("play", 3, "blue")


@pytest.mark.parametrize(
    "text",
    [
        "move red to green",
        "move red green",
        "move from red to green",
        "move 2 to green",
        "move 2 from red to green",
        "move my card on red to gre",
    ],
)
def test_parse_ways_of_writing_a_move(text):
    state = at(boards(start(4), {"red": 2}), 0)
    assert GAME.parse_move(state, 0, text) == ("move", "red", "green")


@pytest.mark.parametrize(
    "text",
    [
        "pass",
        "Pass.",
        "I pass",
        "I'll pass",
        "ok, pass",
        "pass for now",
        "pass this turn",
        "pass for the rest of the round",
    ],
)
def test_parse_ways_of_writing_a_pass(text):
    assert GAME.parse_move(at(start(4), 0), 0, text) == ("pass",)


@pytest.mark.parametrize(
    "text, why",
    [
        ("play 3 on pink", "colours of this game are red, blue, green, yellow"),
        ("play 3 on purple", "colours of this game"),  # not in a 4-player game
        ("play 9 on red", "1 to 4"),
        ("play 3", "one card and one colour"),
        ("play 3 on bl", "do not know the colour 'bl'"),
        ("bid 3 on red", "A move is"),
        ("move red", "which colour to move from"),
        ("move 2 from blue to green", "not on blue"),
        ("play 1 on blue and 3 on green", "One move a turn"),
    ],
)
def test_parse_refuses_with_a_reason(text, why):
    state = at(boards(start(4), {"red": 2}), 0)
    with pytest.raises(MoveError, match=why):
        GAME.parse_move(state, 0, text)


def test_parse_looks_like_move():
    assert GAME.looks_like_move("play 3 on pink") and GAME.looks_like_move("3 on red")
    assert GAME.looks_like_move("I'll pass") and GAME.looks_like_move("Red 9")
    assert not GAME.looks_like_move("Hi referee,")


# --- properties over whole games -----------------------------------------------------------


def random_game(seed: bytes, seats: int, options: dict, chooser: random.Random, check=None):
    """A random game: movers pass now and then, else play or move at random;
    now and then a seat's player leaves and a bot plays it by ``random_move``."""
    state = GAME.setup(seats, setup_rng(seed), options)
    states, records, events_seen = [state], [], []
    number = 0
    while (phase := GAME.phase(state)) is not None:
        number += 1
        new_bots = ()
        if chooser.random() < 0.005:
            seat = chooser.randrange(seats)
            if seat not in state.bots:
                new_bots = (seat,)
                state = GAME.replace_by_bot(state, seat)
        (seat,) = phase.movers
        if seat in state.bots:
            move = GAME.random_move(state, seat, random_move_rng(seed, number, seat))
        elif chooser.random() < 0.25:
            move = ("pass",)
        else:
            move = chooser.choice(GAME.legal_moves(state, seat))
        before = state
        state, events = GAME.resolve(before, {seat: move}, resolve_rng(seed, number))
        if check:
            check(before, seat, move, state, events)
        states.append(state)
        records.append(PhaseRecord(number, {seat: GAME.move_text(move)}, new_bots))
        events_seen.append(events)
    return states, records, events_seen


seeds = st.binary(min_size=1, max_size=12)
seat_counts = st.integers(3, 8)
limits = st.sampled_from([0, 0, 1, 3])
choosers = st.integers(0, 2**32).map(random.Random)  # long games: a few bytes of entropy each


@settings(max_examples=30, deadline=None)
@given(seeds, seat_counts, limits, choosers)
def test_property_every_card_is_in_hand_or_on_one_space_and_totals_are_the_sums(seed, seats, limit, chooser):
    def check(before, seat, move, after, events):
        for s in range(seats):
            on_board = [card for card in after.boards[s] if card]
            assert len(on_board) == len(set(on_board))  # one space at most
            assert sorted(on_board + list(after.hand(s))) == list(range(1, seats + 1))
        for event in events:
            if event["type"] == "tally":
                cards = before.boards if move[0] == "pass" else None
                totals = {c: sum(b.get(c, 0) for b in event["boards"]) for c in before.in_play}
                assert event["totals"] == totals
                if cards is not None:  # the round ended on this pass: the boards as they were
                    assert event["boards"] == [
                        {c: v for c, v in zip(before.in_play, b, strict=True) if v} for b in cards
                    ]
                low = min(totals.values())
                lowest = [c for c in before.in_play if totals[c] == low]
                assert event["winner"] == (before.colours.index(lowest[0]) if len(lowest) == 1 else None)

    random_game(seed, seats, {"turn_limit": limit}, chooser, check)


@settings(max_examples=30, deadline=None)
@given(seeds, seat_counts, limits, choosers)
def test_property_every_round_ends_within_the_bound_and_the_game_after_its_items(seed, seats, limit, chooser):
    states, _, events = random_game(seed, seats, {"turn_limit": limit}, chooser)
    bound = seats * (limit or 2 * seats)  # P7: each seat is asked at most the limit
    turns = Counter(s.round for s in states[:-1])
    assert max(turns.values()) <= bound
    final = states[-1]
    assert final.over and GAME.result(final) is not None
    assert final.round == TABLE[seats][2] == len(turns)
    assert sum(map(len, final.won)) + len(final.discarded) == TABLE[seats][2]
    assert sum(map(sum, final.won)) + sum(final.discarded) == TABLE[seats][1]
    assert events[-1][-1]["type"] == "over"
    assert all(GAME.result(s) is None for s in states[:-1])


def twin(state: PriorityState, chooser: random.Random) -> PriorityState:
    """The same table with other secrets: unrevealed colours swapped among
    their seats, and each board's cards changed for others of its owner's,
    on the same spaces."""
    hidden = [s for s in range(state.seats) if s not in state.revealed]
    colours = list(state.colours)
    for s, c in zip(hidden, chooser.sample([colours[s] for s in hidden], len(hidden)), strict=True):
        colours[s] = c
    rows = []
    for board in state.boards:
        cards = chooser.sample(range(1, state.seats + 1), sum(1 for c in board if c))
        it = iter(cards)
        rows.append(tuple(next(it) if c else 0 for c in board))
    return replace(state, colours=tuple(colours), boards=tuple(rows))


@settings(max_examples=25, deadline=None)
@given(seeds, seat_counts, choosers)
def test_property_the_public_view_and_turn_events_hold_no_secret(seed, seats, chooser):
    """Two tables that differ only in secrets look the same to the public,
    and a turn's own event names no card; every secret a seat's view holds
    is its own, its right-hand neighbour's, or public."""

    def check(before, seat, move, after, events):
        assert GAME.view(twin(before, chooser), None) == GAME.view(before, None)
        assert set(events[0]) <= {"type", "seat", "colour", "from", "to", "forced", "why", "scores"}
        for s in range(seats):
            known = GAME.view(after, s)["known"]
            untold = [o for o in range(seats) if o not in {s, after.right_of(s), *after.revealed}]
            if len(untold) > 1 and not after.over:  # at the end every colour is public
                assert all(known[o] is None for o in untold)
            else:  # the last colour follows from the others (P13)
                assert known == list(after.colours)

    random_game(seed, seats, {}, chooser, check)


def test_random_move_is_uniform_over_plays_moves_and_pass():
    state = at(boards(start(3), {"red": 2}), 0)
    legal = GAME.legal_moves(state, 0)
    assert legal[-1] == ("pass",) and len(legal) == 2 * 2 + 1 * 2 + 1  # plays, moves, pass
    picks = Counter(GAME.random_move(state, 0, Rng(n.to_bytes(2, "big"), "r")) for n in range(700))
    assert set(picks) == set(legal) and min(picks.values()) > 60
