"""Issue 36, full renders: a game's moves and headlines are worded by Python
functions (ice.move_said, priority.headline_said, bluff.did_said ...,
registered as filters) which the macros of templates/events/<kind>.txt.j2
call, where those macros wrote the words themselves: the site says a
headline per phase in its feed and a move per turn in its table, and a
macro call cost more than the words.  They must say what the macros said,
in mail and on a page (escaped once there), over whole random games of
every size, with names that need escaping; the macros' old text is kept
here as the reference."""

from __future__ import annotations

import random
from typing import Any

import jinja2
import pytest
from test_bluff import random_game as bluff_game
from test_ice import random_game as ice_game
from test_priority import random_game as priority_game

from referee.mail.compose import Composer
from referee.rules.bluff import phase_html
from referee.site.render import Site

# templates/events/<kind>.txt.j2's macros as they were (their comments left out).
OLD_ICE = """\
{% macro _text(pyramids) %}{{ pyramids|pyramids }}{% endmacro %}
{% macro move(event, show=_text, detail=false, html=false) %}{% autoescape html %}
{%- if event.type == "bid" %}bids {{ show(event.bid) }}
{%- elif event.type == "pass" %}passes{% if detail %} (card {{ event.card }}{% if event.bid %}, {{ show(event.bid) }}{% endif %}){% endif %}
{%- elif event.type == "tree" %}{% if detail %}scores [{{ show(event.tree) }}]{% if event.took %}, takes {{ show(event.took) }}{% endif %}{% else %}scores a tree{% endif %}
{%- else %}declines{% endif %}
{%- endautoescape %}{% endmacro %}
{% macro headline(round, names, html=false) %}{% autoescape html %}{{ names[round.how.keys()|first] }} {{ move(round.events[0], html=html) }}{% for e in round.events if e.type == "won" %}; {{ names[e.seat] }} wins the auction{% endfor %}{% for e in round.events if e.type == "over" %}; game over{% endfor %}{% endautoescape %}{% endmacro %}
"""

OLD_PRIORITY = """\
{% macro move(event, html=false) %}{% autoescape html %}
{%- if event.type == "play" %}plays on {{ event.colour }}
{%- elif event.type == "move" %}moves {{ event.from }} to {{ event.to }}
{%- else %}passes{% endif %}
{%- endautoescape %}{% endmacro %}
{% macro tally(event, names, html=false) %}{% autoescape html %}
{%- if event.winner is not none %}{{ names[event.winner] }} ({{ event.colour }}) wins {{ event.item }}
{%- else %}tie, {{ event.item }} discarded{% endif %}
{%- endautoescape %}{% endmacro %}
{% macro headline(round, names, html=false) %}{% autoescape html %}{{ names[round.how.keys()|first] }} {{ move(round.events[0], html=html) }}{% for e in round.events if e.type == "tally" %}; {{ tally(e, names, html=html) }}{% endfor %}{% for e in round.events if e.type == "over" %}; game over{% endfor %}{% endautoescape %}{% endmacro %}
"""

OLD_BLUFF = """\
{% macro did(e, detail=false, html=false) %}{% autoescape html %}
{%- if e.type == "bid" %}bids {{ e.value }} on {{ e.track }}{{ " (tie)" if detail and e.tied }}
{%- elif e.type == "move" %}moves {% if detail %}{{ e.from }}{{ " %d"|format(e.token) if e.token is defined }}{% else %}{{ "a token" if e.token is not defined else "their token of " ~ e.token }} from {{ e.from }}{% endif %} to {{ e.track }} at {{ e.value }}
{%- elif e.type == "pass" %}passes{{ " (nothing else to do)" if detail and e.forced }}
{%- elif e.type == "oneshot" %}{{ "uses" if e.used else "keeps" }} the 1-shot tile
{%- elif e.type == "exhibit" %}exhibits {% if detail %}{{ e.set|join(", ") }} for {{ e.points }}{% else %}a set of {{ e.set|length }} for {{ e.points }} points{% endif %}
{%- elif e.type == "discard" %}discards {{ e.discarded }}
{%- elif e.type == "special" %}takes {{ e.tile }}
{%- else %}places {{ e.tile }}{% endif %}
{%- endautoescape %}{% endmacro %}
{% macro move(e, names, detail=false, html=false) %}{% autoescape html %}
{%- if e.type == "rerolled" %}{% if detail %}{% for seat, n in e.counts.items() %}{{ names[seat|int] }} {{ "rerolls %d"|format(n) if n else "keeps their dice" }}{{ ", " if not loop.last }}{% endfor %}{% else %}rerolls{% endif %}
{%- else %}{{ names[e.seat] }} {{ did(e, detail=detail, html=html) }}{% endif %}
{%- endautoescape %}{% endmacro %}
{% macro won(e, names, detail=false, html=false) %}{% autoescape html %}{{ names[e.winner] }} wins {{ e.tile }}{% if detail %} with {{ e.value }}{% endif %}{% endautoescape %}{% endmacro %}
{% macro headline(round, names, html=false) %}{% autoescape html %}
{%- set e = round.events[0] %}{{ move(e, names, html=html) }}
{%- if e.type == "special" %}{% for x in round.events if x.type == "exhibit" %} and {{ did(x, html=html) }}{% endfor %}{% endif %}
{%- for a in round.events if a.type == "auction" and a.winner is not none %}; {{ won(a, names, html=html) }}{% endfor %}
{%- for e in round.events if e.type == "over" %}; game over{% endfor %}
{%- endautoescape %}{% endmacro %}
"""

# site/ice/rounds.html.j2's rows of the table of turns, as they were.
OLD_ICE_ROWS = """\
{% for round in rounds %}
{% set event = round.events[0] %}
{% set mover, how = round.how.items()|first %}
<tr id="phase-{{ round.number }}"><th scope="row" class="line">{{ round.label }}</th>
<td class="wrap line">{{ names[mover] }}: {{ ice.move(event, show, detail=true, html=true) }}{% if how == "random" %}<abbr title="random: none by the deadline">*</abbr>{% elif how == "bot" %}<abbr title="a bot's random move">~</abbr>{% endif %}</td>
<td class="wrap line">{% for e in round.events[1:] %}{% if e.type == "pass" %}{{ names[e.seat] }} {{ "has no pyramids" if e.why == "no pyramids" else "cannot raise" }}: passes (card {{ e.card }}){% elif e.type == "won" %}<span class="win">{{ names[e.seat] }} wins {{ show(e.lot) }}</span>{% for pay in e.payments if pay.pyramids %}; {{ show(pay.pyramids) }} to {{ names[pay.to] if pay.to is not none else "the dead area" }}{% endfor %}{% elif e.type == "scoring" %}scoring round{% elif e.type == "no tree" %}{{ names[e.seat] }} has no tree{% elif e.type == "scoring over" %}scoring over ({{ e.trees }} tree{{ "s" if e.trees != 1 }}){% elif e.type == "lot" %}auction {{ e.auction }}: {{ show(e.lot) }}{% if e.to_track %}; track +{{ e.to_track|length }} = {{ e.track }}{% endif %}{% if e.final %} (last){% elif e.scoring_due %} (scoring follows){% endif %}{% elif e.type == "over" %}game over{% endif %}{{ "<br>"|safe if not loop.last }}{% endfor %}</td>
<td class="line nowrap" data-label="Points now">{{ round.events[-1].get("scores", [])|join(" · ") }}</td></tr>
{% endfor %}
"""

# site/priority/rounds.html.j2's rows of the table of turns, as they were.
OLD_PRIORITY_ROWS = """\
{% set ns = namespace(round="") %}
{% for round in rounds %}
{% set part = round.label.split(", ") %}
{% if part[0] != ns.round %}{% set ns.round = part[0] %}
<tr><th scope="rowgroup" colspan="3">{{ part[0] }}</th></tr>
{% endif %}
{% set event = round.events[0] %}
{% set mover, how = round.how.items()|first %}
<tr id="phase-{{ round.number }}"><th scope="row" class="num" data-label="Turn">{{ part[1]|replace("turn ", "") }}</th>
<td class="wrap">{{ names[mover] }}: {{ priority.move(event, html=true) }}{% if how == "random" %}<abbr title="random: none by the deadline">*</abbr>{% elif how == "bot" %}<abbr title="a bot's random move">~</abbr>{% endif %}</td>
<td class="wrap line">{% for e in round.events[1:] %}{% if e.type == "pass" %}{{ names[e.seat] }} passes ({{ "turn limit" if e.why == "turn limit" else "board full" }}){% elif e.type == "tally" %}<a href="#tally-{{ e.round }}">tally</a>: {% if e.winner is not none %}<span class="win">{{ priority.tally(e, names, html=true) }}</span>{% else %}{{ priority.tally(e, names, html=true) }}{% endif %}{% elif e.type == "item" %}round {{ e.round }}: item {{ e.item }}, {{ names[e.first] }} opens{% elif e.type == "over" %}game over{% endif %}{{ "; " if not loop.last }}{% endfor %}</td></tr>
{% endfor %}
"""

# site/bluff/rounds.html.j2's table of phases, as it was.
OLD_BLUFF_TABLE = """\
{% set ns = namespace(round="") %}
<div class="scroll">
<table>
<caption class="note">Every phase: the move, and what followed it</caption>
<thead><tr><th scope="col">Phase</th><th scope="col">What happened</th></tr></thead>
<tbody>
{% for round in rounds %}
{% set part = round.label.split(" ", 2) %}
{% if part[1] != ns.round %}{% set ns.round = part[1] %}
<tr><th scope="rowgroup" colspan="2">Round {{ part[1] }}</th></tr>
{% endif %}
<tr id="phase-{{ round.number }}"><td class="nowrap">{% if part[2].startswith("acquisition") %}a tile won{% elif "1-shot" in part[2] %}1-shot tile{% else %}{{ part[2]|replace("bidding, ", "") }}{% endif %}</td>
<td class="wrap who">{{ round.events|bluff_phase_html(names, players)|safe }}</td></tr>
{% endfor %}
"""

OLD = {"ice": OLD_ICE, "priority": OLD_PRIORITY, "bluff": OLD_BLUFF}

NAMES = ["<ann>", "bob & co", 'o"neil', "d'arcy", "eve", "<b>f</b>", "g&amp;", "h"]

# What each kind's mail and pages ask of the macros, per round (``round``, its
# first event ``e``); a line per round.  ``plain`` as a Subject and a feed's
# title ask (no escaping), ``page`` as the site's tables do.
MOVES = ("bid", "move", "pass", "rerolled", "oneshot", "special", "place", "exhibit", "discard")
CALLS = {
    "ice": {
        "plain": "{{ m.headline(round, names) }}|{{ m.move(e) }}|{{ m.move(e, detail=true) }}",
        "page": '{% from "site/ice/_pyramids.html.j2" import show %}'
        "{{ m.headline(round, names, html=true) }}|{{ m.move(e, show, detail=true, html=true) }}"
        "|{{ m.move(e, detail=true, html=true) }}|{{ m.move(e, html=true) }}",
    },
    "priority": {
        "plain": '{{ m.headline(round, names) }}|{{ m.move(e) }}{% for x in round.events if x.type == "tally" %}'
        "|{{ m.tally(x, names) }}{% endfor %}",
        "page": '{{ m.headline(round, names, html=true) }}|{{ m.move(e, html=true) }}{% for x in round.events if x.type == "tally" %}'
        "|{{ m.tally(x, names, html=true) }}{% endfor %}",
    },
    "bluff": {
        "plain": "{{ m.headline(round, names) }}{% for x in round.events if x.type in moves %}|{{ m.move(x, names) }}"
        '{% if x.type != "rerolled" %}|{{ m.did(x) }}{% endif %}{% endfor %}'
        '{% for x in round.events if x.type == "auction" and x.winner is not none %}|{{ m.won(x, names) }}{% endfor %}',
        "page": "{{ m.headline(round, names, html=true) }}{% for x in round.events if x.type in moves %}"
        "|{{ m.move(x, names, html=true) }}|{{ m.move(x, names, detail=true, html=true) }}"
        '{% if x.type != "rerolled" %}|{{ m.did(x, html=true) }}|{{ m.did(x, detail=true, html=true) }}{% endif %}{% endfor %}'
        '{% for x in round.events if x.type == "auction" and x.winner is not none %}'
        "|{{ m.won(x, names, html=true) }}|{{ m.won(x, names, detail=true, html=true) }}{% endfor %}",
    },
}
# The site's summary (site/<kind>/summary.txt.j2, a feed's titles) is a text template: it does not escape.
TEXT = "{% autoescape false %}{{ m.headline(round, names) }}{% endautoescape %}|"


def games(kind: str) -> list[tuple[list[str], list[dict[str, Any]]]]:
    """Whole random games of every size: each one's names and its rounds as
    the mail and the site see them (the movers' sources, the events)."""
    played = []
    for seats in {"ice": (2, 3, 4), "priority": (3, 5, 8), "bluff": (2, 3, 4, 5)}[kind]:
        for seed in (b"w", b"x"):
            chooser = random.Random(seed + bytes([seats]))
            if kind == "ice":
                _, records, events_seen = ice_game(seed + bytes([seats]), seats, {}, chooser)
            elif kind == "priority":
                _, records, events_seen = priority_game(seed + bytes([seats]), seats, {}, chooser)
            else:
                _, records, events_seen = bluff_game(seed + bytes([seats]), seats, chooser)
            rounds = [
                {"how": dict.fromkeys(record.moves or {}, "mail"), "events": events}
                for record, events in zip(records, events_seen, strict=True)
            ]
            played.append((NAMES[:seats], rounds))
    return played


def said(env: jinja2.Environment, macros: str, calls: str, names: list[str], rounds: list[dict[str, Any]]) -> list[str]:
    template = env.from_string(
        f'{{% import "{macros}" as m %}}{{% for round in rounds %}}{{% set e = round.events[0] %}}{calls}{{{{ "\\n" }}}}{{% endfor %}}'
    )
    return template.render(names=names, rounds=rounds, moves=MOVES).split("\n")


def with_old(env: jinja2.Environment, kind: str) -> jinja2.Environment:
    """``env`` with the old macros beside the new, as old/<kind>.txt.j2."""
    assert env.loader is not None
    return env.overlay(loader=jinja2.ChoiceLoader([jinja2.DictLoader({f"old/{kind}.txt.j2": OLD[kind]}), env.loader]))


@pytest.mark.parametrize("kind", sorted(OLD))
def test_the_words_of_every_round_are_the_old_macros_words_in_mail_and_on_a_page(config, tmp_path, kind):
    mail = with_old(Composer(config).env, kind)
    site = with_old(Site(None, tmp_path).env, kind)
    seen: set[str] = set()
    for names, rounds in games(kind):
        seen.update(event["type"] for round_ in rounds for event in round_["events"])
        for env, calls in ((mail, CALLS[kind]["plain"]), (site, TEXT + CALLS[kind]["page"])):
            new = said(env, f"events/{kind}.txt.j2", calls, names, rounds)
            assert new == said(env, f"old/{kind}.txt.j2", calls, names, rounds)
        assert any(name in line for line in new for name in ("&lt;", "&amp;", "&#34;", "&#39;"))  # names escaped
    # every kind of event was worded
    assert (
        seen
        >= {
            "ice": {"bid", "pass", "tree", "declined", "won", "over"},
            "priority": {"play", "move", "pass", "tally", "over"},
            "bluff": {"bid", "move", "pass", "rerolled", "oneshot", "special", "exhibit", "place", "auction", "over"},
        }[kind]
    )


def test_the_rows_of_ices_table_of_turns_are_what_its_loop_said(tmp_path):
    env = Site(None, tmp_path).env
    head = '{% import "events/ice.txt.j2" as ice %}{% from "site/ice/_pyramids.html.j2" import show %}'
    old = env.from_string(head + OLD_ICE_ROWS)
    new = env.from_string(head + "{{ rounds|ice_turns_html(names, ice.move)|safe }}")
    seen: set[str] = set()
    for names, rounds in games("ice"):
        seen.update(event["type"] for round_ in rounds for event in round_["events"])
        for i, round_ in enumerate(rounds):  # the label and how each move was made, as the site has them
            round_.update(number=i + 1, label=f"Round {i // 5 + 1}, <turn> {i % 5 + 1}")
            round_["how"] = {seat: ("mail", "random", "bot")[i % 3] for seat in round_["how"]}
        assert new.render(names=names, rounds=rounds) == old.render(names=names, rounds=rounds)
    assert seen >= {"bid", "pass", "tree", "declined", "won", "scoring", "no tree", "scoring over", "lot", "over"}


def test_the_rows_of_auctions_table_of_turns_are_what_its_loop_said(tmp_path):
    env = Site(None, tmp_path).env
    head = '{% import "events/priority.txt.j2" as priority %}'
    old = env.from_string(head + OLD_PRIORITY_ROWS)
    new = env.from_string(head + "{{ rounds|priority_turns_html(names, priority.move, priority.tally)|safe }}")
    seen: set[str] = set()
    for names, rounds in games("priority"):
        seen.update(event["type"] for round_ in rounds for event in round_["events"])
        for i, round_ in enumerate(rounds):  # the label and how each move was made, as the site has them
            round_.update(number=i + 1, label=f"Round {i // 7 + 1} of 8, turn {i % 7 + 1}")
            round_["how"] = {seat: ("mail", "random", "bot")[i % 3] for seat in round_["how"]}
        assert new.render(names=names, rounds=rounds) == old.render(names=names, rounds=rounds)
    assert seen >= {"play", "move", "pass", "tally", "item", "over"}


def test_the_rows_of_bluffs_table_of_phases_are_what_its_loop_said(tmp_path):
    env = Site(None, tmp_path).env
    with_cells = env.overlay()  # the old loop's filter for a row's cell (test_bluff36_render.py holds it to the macros)
    with_cells.filters = {**env.filters, "bluff_phase_html": phase_html}
    old = with_cells.from_string(OLD_BLUFF_TABLE)
    new = env.from_string(
        '<div class="scroll">\n<table>\n<caption class="note">Every phase: the move, and what followed it</caption>\n'
        '<thead><tr><th scope="col">Phase</th><th scope="col">What happened</th></tr></thead>\n<tbody>\n'
        "{{ rounds|bluff_phases_html(names, players)|safe }}"
    )
    stages = ["bidding, turn 3", "acquisition: red <art>", "red auction: the 1-shot tile", "tools", "bidding & <b>"]
    for names, rounds in games("bluff"):
        players = [{"name": name, "seat": seat} for seat, name in enumerate(names)]
        for i, round_ in enumerate(rounds):  # labels of every kind, as the site has them
            round_.update(number=i + 1, label=f"Round {i // 7 + 1} {stages[i % len(stages)]}")
        assert new.render(names=names, players=players, rounds=rounds) == old.render(
            names=names, players=players, rounds=rounds
        )
