"""The rules' caches that make a replay cheaper (issue 36, full renders)
give the answer the uncached computation gives, over every state of played
games: a cache must be a pure function of its arguments."""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections import Counter
from typing import Any

import jinja2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bluff import random_game as _bluff_game
from test_ice import choosers as _choosers
from test_ice import game_options as _game_options
from test_ice import random_game as _random_game
from test_ice import seat_counts as _seat_counts
from test_ice import seeds as _seeds
from test_priority import random_game as _priority_game

from referee.rules.api import replace
from referee.rules.bluff import standing, total
from referee.rules.ice import (
    BONUS,
    COLOURS,
    SHARED_BONUS,
    TREE_POINTS,
    IceState,
    best_trees,
    pile,
    pyramids_html,
    standings,
    totals,
    uniform,
)
from referee.rules.priority import _actions, _can_act

choosers, game_options, random_game, seat_counts, seeds = _choosers, _game_options, _random_game, _seat_counts, _seeds
bluff_game, priority_game = _bluff_game, _priority_game


def standings_uncached(state: IceState) -> list[dict[str, Any]]:
    """Ice's standings as they were computed before the seats' tallies were kept."""
    collected = [pile(state.active[s] + tuple(p for tree in state.scored[s] for p in tree)) for s in range(state.seats)]
    counts = [Counter(colour for colour, _ in pyramids) for pyramids in collected]
    bonuses: list[dict[str, int]] = [{} for _ in collected]
    for colour in COLOURS:
        if colour == state.scoring_colour:
            continue
        held = [count[colour] for count in counts]
        top = max(held)
        for seat, n in enumerate(held):
            if top and n == top:
                bonuses[seat][colour] = BONUS if held.count(top) == 1 else SHARED_BONUS
    points = []
    for seat in range(state.seats):
        scored_uniform = sum(1 for tree in state.scored[seat] if uniform(tree))
        made_uniform, made_mixed = best_trees(state.active[seat])
        sizes = [size for _, size in collected[seat]]
        uniform_trees, mixed_trees = (
            scored_uniform + made_uniform,
            len(state.scored[seat]) - scored_uniform + made_mixed,
        )
        single = len(state.active[seat]) - 3 * (made_uniform + made_mixed)
        points.append(
            {
                "uniform": uniform_trees,
                "mixed": mixed_trees,
                "single": single,
                "bonuses": bonuses[seat],
                "total": TREE_POINTS[True] * uniform_trees
                + TREE_POINTS[False] * mixed_trees
                + single
                + sum(bonuses[seat].values()),
                "collected": [len(sizes), sizes.count(3), sizes.count(2)],
            }
        )
    return points


@settings(max_examples=25, deadline=None)
@given(seeds, seat_counts, game_options, choosers)
def test_ice_standings_from_kept_tallies_are_the_uncached_standings_in_every_state(seed, seats, options, chooser):
    states, _, _ = random_game(seed, seats, options, chooser)
    for state in states:
        assert standings(state) == standings_uncached(state)
        assert list(totals(state)) == [points["total"] for points in standings_uncached(state)]


def test_ice_standings_answers_are_fresh_dicts_a_caller_may_change():
    states, _, _ = random_game(b"render2", 3, {"short": True, "scoring_colour": "red"}, random.Random(1))
    first = standings(states[-1])
    first[0]["bonuses"]["red"] = 99
    first[0]["collected"].append(1)
    assert standings(states[-1]) == standings_uncached(states[-1])


@settings(max_examples=10, deadline=None)
@given(seeds, seat_counts, game_options, choosers)
def test_rules_replace_makes_what_dataclasses_replace_makes(seed, seats, options, chooser):
    states, _, _ = random_game(seed, seats, options, chooser)
    pick = random.Random(len(states))  # which fields change (the chooser's draws would be too many for hypothesis)
    for before, after in itertools.pairwise(states):
        changes = {f.name: getattr(after, f.name) for f in dataclasses.fields(after) if pick.random() < 0.3}
        made = replace(before, **changes)
        assert made == dataclasses.replace(before, **changes)
        assert type(made) is type(before) and hash(made) == hash(dataclasses.replace(before, **changes))
        assert made.__dict__ == dataclasses.replace(before, **changes).__dict__
    assert replace(states[0]) == states[0] and replace(states[0]) is not states[0]


def test_rules_replace_refuses_a_name_that_is_not_a_field_and_leaves_the_state_as_it_was():
    state = random_game(b"render2", 2, {"short": True, "scoring_colour": "red"}, random.Random(2))[0][0]
    kept = dataclasses.replace(state)
    with pytest.raises(TypeError):
        replace(state, colour="blue")
    with pytest.raises(dataclasses.FrozenInstanceError):
        replace(state, turns=3).turns = 4  # type: ignore[misc]
    assert state == kept


@dataclasses.dataclass(frozen=True)
class Checked:
    low: int
    high: int

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError("low above high")


@dataclasses.dataclass(frozen=True)
class Derived:
    a: int
    b: int = dataclasses.field(init=False, default=0)


def test_rules_replace_goes_through_init_where_copying_the_fields_would_skip_work():
    with pytest.raises(ValueError):
        replace(Checked(1, 2), low=3)  # __post_init__ ran
    with pytest.raises(ValueError):
        replace(Derived(1), b=2)  # as dataclasses.replace: a field its __init__ does not take
    assert replace(Derived(1), a=5) == Derived(5)


@pytest.mark.parametrize(("seed", "seats"), [(b"render2-a", 2), (b"render2-b", 4), (b"render2-c", 5)])
def test_bluff_total_is_the_standings_total_in_every_state(seed, seats):
    states, _, _ = bluff_game(seed, seats, random.Random(seed))
    assert states[-1].stage == "over"
    for state in states:
        for seat in range(state.seats):
            assert total(state, seat) == standing(state, seat)["total"]


@pytest.mark.parametrize(("seed", "seats", "limit"), [(b"render2-a", 3, 0), (b"render2-b", 5, 1), (b"render2-c", 8, 3)])
def test_priority_can_act_is_whether_a_seat_has_a_play_or_a_move_in_every_state(seed, seats, limit):
    states, _, _ = priority_game(seed, seats, {"turn_limit": limit}, random.Random(seed))
    assert states[-1].over
    answers = {_can_act(state, seat) for state in states for seat in range(state.seats)}
    assert answers == {True, False}  # (both seen: the comparison below is not vacuous)
    for state in states:
        for seat in range(state.seats):
            assert _can_act(state, seat) == bool(_actions(state, seat))


@given(st.lists(st.text(min_size=3).map(lambda text: "L-" + text), max_size=5))
def test_ice_pyramids_html_is_the_markup_the_template_loop_made(names):
    loop = jinja2.Environment(autoescape=True).from_string(
        '{% for p in pyramids %}<span class="pyr pyr-{{ p.split("-", 1)[1] }}">{{ p }}</span>'
        '{{ " " if not loop.last }}{% else %}nothing{% endfor %}'
    )
    assert pyramids_html(names) == loop.render(pyramids=names)
