"""A Game of Pure Skill's feed titles are written by the site's own
function of its headline macro (render._HEADLINE_FILTERS), not by a macro call
a round: the same lines as site/pure-skill/summary.txt.j2 writes, for each
way a round ends (taken, a tie carried over, a tie discarded); and a
keeper's own headline macro is still what the feed says."""

from __future__ import annotations

import re

from referee.engine import Engine
from referee.resources import template_folders
from referee.site.public import page_context
from referee.site.render import Site


def _round(number: int, winner: int | None, outcome: str, prize: int) -> dict:
    event = {"type": "round", "round": number, "prize": prize, "winner": winner, "outcome": outcome, "value": prize}
    return {"number": number, "label": f"Round {number}", "events": [event]}


def _summary_lines(site: Site, rounds: list, names: list, game: dict) -> list[str]:
    written = site.env.get_template("site/pure-skill/summary.txt.j2").render(rounds=rounds, names=names, game=game)
    return [line.strip() for line in written.split("\n") if line.strip()]


def test_site42_every_way_a_round_ends_is_titled_as_the_template_says(engine, tmp_path):
    site = Site(engine, tmp_path / "site")
    names = ["ann", "bob <b>", "zoë"]
    rounds = [
        _round(1, 0, "taken", 1),
        _round(2, None, "carried", 12),
        _round(3, None, "discarded", 13),
        _round(4, 2, "taken", 10),
        _round(5, 1, "taken", 7),
    ]
    game = {"id": 1}
    titles = site._titles("pure-skill", rounds, names, game)
    assert site._headline_filter("pure-skill") is not None  # (the function made them, not the template)
    assert titles == _summary_lines(site, rounds, names, game)
    assert titles[:3] == [
        "Round 1: ann takes the A",
        "Round 2: tie, the Q carries over",
        "Round 3: tie, the K is discarded",
    ]


def test_site42_a_played_games_titles_are_the_templates(engine: Engine, tmp_path):
    site = Site(engine, tmp_path / "site")
    game = engine.new_game("pure-skill", [], bots=3)  # bots play it to its end at once
    context = page_context(engine.tables.table(game))
    rounds, names = context["rounds"], context["names"]
    assert len(rounds) == 13
    assert site._titles("pure-skill", rounds, names, context["game"]) == _summary_lines(
        site, rounds, names, context["game"]
    )


def test_site42_a_keepers_own_pure_skill_headline_names_the_entries(engine, tmp_path):
    keeper = tmp_path / "templates"
    (keeper / "events").mkdir(parents=True)
    shipped = (template_folders()[0] / "events" / "pure-skill.txt.j2").read_text()
    ours = re.sub(
        r"\{% macro headline\(.*?\{% endmacro %\}",
        "{% macro headline(round, names, html=false) %}a round{% endmacro %}",
        shipped,
        flags=re.S,
    )
    assert ours != shipped
    (keeper / "events" / "pure-skill.txt.j2").write_text(ours)
    game = engine.new_game("pure-skill", [], bots=3)
    Site(engine, tmp_path / "site", templates=keeper).render()
    feed = (tmp_path / "site" / "games" / str(game) / "feed.atom").read_text()
    titles = re.findall(r"<title>(.*?)</title>", feed)
    assert len([title for title in titles if title.endswith(": a round")]) == 13
