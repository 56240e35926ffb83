"""Issue 36, full renders: the site's table of phases of Bluff Auction is
written by bluff.phase_html, one Python function, where a macro per event
of events/bluff.txt.j2 (with detail) wrote it.  It must say what those
macros say, escaped as Jinja escapes them."""

from __future__ import annotations

import random

import jinja2
import pytest
from test_bluff import random_game as _random_game
from test_words36_render import OLD_BLUFF

from referee.resources import template_folders
from referee.rules.bluff import _bids, _can_bid, phase_html

random_game = _random_game

# The cell as site/bluff/rounds.html.j2 wrote it with the macros (and its
# site/bluff/_events.html.j2, removed since: an auction, a new round, the end).
MACROS = """{% import "events/bluff.txt.j2" as bluff %}
{% set MOVES = ("bid", "move", "pass", "rerolled", "oneshot", "special", "place", "exhibit", "discard") %}
{% macro auction(e, names, players) %}<br>{{ e.track }} (dice: {% for p in players %}{{ p.name }} \
{{ e.dice[p.seat] }}{{ ", " if not loop.last }}{% endfor %}{% if e.community %}, community {{ e.community }}\
{% endif %}): {% if e.winner is not none %}<span class="win">{{ bluff.won(e, names, detail=true, html=true) }}\
</span>{% elif e.bids %}every bid over ({% for seat, v in e.worth.items() %}{{ names[seat|int] }} could bid \
{{ v }}{{ ", " if not loop.last }}{% endfor %}): {{ e.tile }} leaves{% else %}no bids: {{ e.tile }} leaves\
{% endif %}{% endmacro %}
{% macro event(e, names, players) %}
{%- if e.type in MOVES %}{{ bluff.move(e, names, detail=true, html=true) }}
{%- elif e.type == "auction" %}{{ auction(e, names, players) }}
{%- elif e.type == "round" %}<br>round {{ e.round }}: {{ names[e.start] }} starts
{%- elif e.type == "over" %}<br>game over
{%- endif %}
{%- endmacro %}
{% set shown = events|rejectattr("type", "equalto", "dice")|list %}
{% for e in shown %}{{ event(e, names, players) }}\
{{ "; " if not loop.last and shown[loop.index0 + 1].type not in ("auction", "round", "over") }}{% endfor %}"""

NAMES = ["<ann>", "bob & co", 'o"neil', "d'arcy", "eve"]


@pytest.fixture(scope="module")
def macros() -> jinja2.Template:
    env = jinja2.Environment(
        # events/bluff.txt.j2's macros as they wrote the words (they call bluff.did_said and the rest now)
        loader=jinja2.ChoiceLoader(
            [
                jinja2.DictLoader({"events/bluff.txt.j2": OLD_BLUFF}),
                jinja2.FileSystemLoader([str(folder) for folder in template_folders()]),
            ]
        ),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.from_string(MACROS)


@pytest.mark.parametrize("seats", [2, 3, 4, 5])
def test_bluff_phase_html_says_what_the_event_macros_said_in_every_phase(macros, seats):
    seen: set[str] = set()
    for seed in (b"a", b"b", b"c"):
        _, _, events_seen = random_game(seed + bytes([seats]), seats, random.Random(seed))
        names = NAMES[:seats]
        players = [{"name": name, "seat": seat} for seat, name in enumerate(names)]
        for events in events_seen:
            seen.update(event["type"] for event in events)
            assert phase_html(events, names, players) == macros.render(events=events, names=names, players=players)
    # every kind of event was compared (a 1-shot tile is not offered in every game)
    assert seen >= {"round", "rerolled", "bid", "pass", "dice", "auction", "place", "over"}


def test_bluff_phase_html_escapes_names_and_tiles_once():
    events = [
        {"type": "bid", "seat": 0, "track": "red", "value": 3, "tied": True},
        {"type": "move", "seat": 1, "from": "purple", "token": 3, "track": "red", "value": 1, "tied": False},
        {"type": "exhibit", "seat": 0, "tile": "x", "set": ["red <art>", "a & b"], "points": 3},
    ]
    text = phase_html(events, ["<ann>", "b&b"], [])
    assert text == (
        "&lt;ann&gt; bids 3 on red (tie); b&amp;b moves purple 3 to red at 1; "
        "&lt;ann&gt; exhibits red &lt;art&gt;, a &amp; b for 3"
    )


@pytest.mark.parametrize("seats", [2, 3, 4, 5])
def test_bluff_can_bid_is_whether_a_seat_has_a_bid_or_a_move_in_every_state(seats):
    for seed in (b"d", b"e"):
        states, _, _ = random_game(seed + bytes([seats]), seats, random.Random(seed))
        for state in states:
            for seat in range(seats):
                assert _can_bid(state, seat) == (next(_bids(state, seat), None) is not None)
