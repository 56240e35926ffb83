"""A feed entry's title is its phase's line of site/<kind>/summary.txt.j2
("Round 2 bidding, turn 3: ann bids green 2").  Since round 41 the kinds
whose headline macro is a filter of theirs (render._HEADLINE_FILTERS) have
their titles written by that filter, not by a macro call a phase: the same
lines as the templates write, for every phase of games played to their end;
and a keeper's own copy of either template is still what the feeds say."""

from __future__ import annotations

import re

import pytest

from referee.engine import Engine
from referee.resources import template_folders
from referee.site.public import page_context
from referee.site.render import _HEADLINE_FILTERS, Site


def _played(engine: Engine, kind: str) -> int:
    return engine.new_game(kind, [], bots=4)  # bots play it to its end at once


@pytest.mark.parametrize("kind", sorted(_HEADLINE_FILTERS.keys() - {"pure-skill"}))  # (13 rounds: test_site42)
def test_site41_the_titles_are_the_summary_templates_lines(engine, tmp_path, kind):
    site = Site(engine, tmp_path / "site")
    table = engine.tables.table(_played(engine, kind))
    context = page_context(table)
    rounds, names, game = context["rounds"], context["names"], context["game"]
    written = site.env.get_template(f"site/{kind}/summary.txt.j2").render(rounds=rounds, names=names, game=game)
    lines = [line.strip() for line in written.split("\n") if line.strip()]
    titles = site._titles(kind, rounds, names, game)
    assert site._headline_filter(kind) is not None  # (the filter made them, not the template)
    assert len(rounds) > 20
    assert titles == lines


def test_site41_a_keepers_own_summary_template_names_the_entries(engine, tmp_path):
    keeper = tmp_path / "templates"
    (keeper / "site" / "bluff").mkdir(parents=True)
    (keeper / "site" / "bluff" / "summary.txt.j2").write_text(
        '{% import "events/bluff.txt.j2" as bluff %}{% for round in rounds %}'
        "{{ round.label }} - {{ bluff.headline(round, names) }} (ours)\n{% endfor %}"
    )
    game = _played(engine, "bluff")
    Site(engine, tmp_path / "site", templates=keeper).render()
    feed = (tmp_path / "site" / "games" / str(game) / "feed.atom").read_text()
    titles = re.findall(r"<title>(.*?)</title>", feed)
    assert len([title for title in titles if title.endswith(" (ours)")]) >= 20  # (a game's phases, its feed's newest)
    assert not [title for title in titles if re.match(r"Game \d+, ", title) and " (ours)" not in title]


def test_site41_a_keepers_own_headline_macro_names_the_entries(engine, tmp_path):
    keeper = tmp_path / "templates"
    (keeper / "events").mkdir(parents=True)
    shipped = (template_folders()[0] / "events" / "ice.txt.j2").read_text()
    ours = re.sub(
        r"\{% macro headline\(.*?\{% endmacro %\}",
        "{% macro headline(round, names, html=false) %}a move{% endmacro %}",
        shipped,
    )
    assert ours != shipped
    (keeper / "events" / "ice.txt.j2").write_text(ours)
    game = _played(engine, "ice")
    Site(engine, tmp_path / "site", templates=keeper).render()
    feed = (tmp_path / "site" / "games" / str(game) / "feed.atom").read_text()
    titles = re.findall(r"<title>(.*?)</title>", feed)
    assert len([title for title in titles if title.endswith(": a move")]) >= 20  # (a game's length depends on its seed)
    assert not [title for title in titles if re.match(r"Game \d+, ", title) and ": a move" not in title]
