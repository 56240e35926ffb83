"""Issue 36 item 5, full renders: Bluff Auction's replay keeps its last
scores, caps, high bids and Tools with the very objects they were of, and
scores museums by one bit per tile.  Each kept answer is held equal to the
plain one, asked of states in an order that changes what is kept."""

from __future__ import annotations

import random

import pytest
from test_bluff import GAME
from test_bluff import random_game as _random_game

from referee.rules.bluff import (
    TRACKS,
    BluffState,
    Stage,
    _caps,
    _caps_of,
    _tools,
    phase_html,
    phases_html,
    total,
)

random_game = _random_game


def games(seats: int) -> list[list[BluffState]]:
    """The states of two games of ``seats`` (rulings 2), and one by the first rulings."""
    found = []
    for number, options in enumerate(({}, {}, {"rulings": 1})):
        chooser = random.Random(38 + seats + number)
        if options:  # (random_game sets up by the default options: the first rulings' game is made from its states)
            states, _, _ = random_game(b"kept1" + bytes([seats]), seats, chooser)
            states = [state for state in states if state.stage != Stage.OVER]
            found.append([state.__class__(**{**state.__dict__, "rulings": 1}) for state in states])
        else:
            states, _, _ = random_game(b"kept" + bytes([seats, number]), seats, chooser)
            found.append(states)
    return found


@pytest.mark.parametrize("seats", [2, 3, 4, 5])
def test_the_scores_after_every_move_are_every_seats_total_then(seats):
    said = []

    def check(before, moves, after, events):
        said.append((after, events[-1]["scores"]) if events else None)

    for number in range(3):
        random_game(b"scores" + bytes([seats, number]), seats, random.Random(number), check)
    scored = [entry for entry in said if entry is not None]
    assert len(scored) > 100
    for state, scores in scored:
        assert scores == [total(state, seat) for seat in range(seats)]
    assert len({tuple(scores) for _, scores in scored}) > 10  # (the scores changed, game by game and in a game)


@pytest.mark.parametrize("seats", [2, 3, 4, 5])
def test_a_seats_caps_high_bids_and_tools_are_those_of_the_state_asked(seats):
    states = [state for game in games(seats) for state in game]
    random.Random(seats).shuffle(states)  # (each answer kept is of some other state: the next asks of its own)
    asked = 0
    for state in states:
        for seat in range(seats):
            plain = _caps_of(state.rulings, state.rolled(), state.museum, state.held)[seat]
            assert _caps(state, seat) == plain
            assert _tools(state, seat) == sum(1 for t in state.museum[seat] if isinstance(t, tuple) and t[2] == "tool")
        for track, bids in enumerate(state.bids):
            assert state.high(track) == (max(bids, key=lambda b: (b[1], b[2])) if bids else None), TRACKS[track]
            asked += bool(bids)
    assert asked > 100
    assert len({state.rulings for state in states}) == 2


def test_the_table_of_phases_says_each_phase_as_phase_html_does():
    names = ["<b>ann</b>", "bob & co", "o'hara"]
    players = [{"name": name, "seat": seat} for seat, name in enumerate(names)]
    states, _, events = random_game(b"table", 3, random.Random(38))
    rounds = [
        {"label": GAME.phase(state).label, "number": number, "events": said}
        for number, (state, said) in enumerate(zip(states, events, strict=False), 1)
    ]
    table = phases_html(rounds, names, players)
    for entry in rounds:
        assert f"{phase_html(entry['events'], names, players)}</td></tr>" in table
    assert "&lt;b&gt;ann&lt;/b&gt;" in table and "bob &amp; co" in table and "o&#39;hara" in table
    assert "<b>" not in table
