"""The rules' caches that make a replay cheaper (issue 36, full renders)
give the answer the uncached computation gives, over every state of played
games: a cache must be a pure function of its arguments."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from hypothesis import given, settings
from test_ice import choosers as _choosers
from test_ice import game_options as _game_options
from test_ice import random_game as _random_game
from test_ice import seat_counts as _seat_counts
from test_ice import seeds as _seeds

from referee.rules.ice import BONUS, COLOURS, SHARED_BONUS, TREE_POINTS, IceState, best_trees, pile, standings, uniform

choosers, game_options, random_game, seat_counts, seeds = _choosers, _game_options, _random_game, _seat_counts, _seeds


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


def test_ice_standings_answers_are_fresh_dicts_a_caller_may_change():
    states, _, _ = random_game(b"render2", 3, {"short": True, "scoring_colour": "red"}, random.Random(1))
    first = standings(states[-1])
    first[0]["bonuses"]["red"] = 99
    first[0]["collected"].append(1)
    assert standings(states[-1]) == standings_uncached(states[-1])
