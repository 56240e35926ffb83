"""A game's moves are worded once for its mail and its site: Ice Ice Baby's
in templates/events/ice.txt.j2, imported by both template environments (the
mail's, which never escapes, and the site's, which escapes HTML), and safe
in both: plain text unless the caller asks for HTML, and then escaped
(which every page of the site does)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markupsafe import Markup

from referee.mail.compose import Composer
from referee.site.render import Site

NAMES = ["ann", "<b>o'b&c</b>"]
ROUND = {
    "how": {1: "mail"},
    "events": [{"type": "bid", "seat": 1, "bid": ["L-red", "S-blue"]}, {"type": "won", "seat": 0}],
}


@pytest.fixture
def both(config, tmp_path):
    """The macros as the mail and as the site load them."""
    return {
        "mail": Composer(config).env.get_template("events/ice.txt.j2").module,
        "site": Site(None, tmp_path).env.get_template("events/ice.txt.j2").module,
    }


@pytest.mark.parametrize("where", ["mail", "site"])
def test_the_headline_is_the_same_plain_text_for_mail_and_site(both, where):
    said = both[where].headline(ROUND, NAMES)
    assert said == "<b>o'b&c</b> bids L-red S-blue; ann wins the auction"
    assert not isinstance(said, Markup)  # so a page escapes it as any text


@pytest.mark.parametrize(
    ("event", "said"),
    [
        ({"type": "bid", "bid": ["L-red"]}, "bids L-red"),
        ({"type": "pass", "card": 3, "bid": ["M-blue"]}, "passes"),
        ({"type": "tree", "tree": ["L-red", "M-red", "S-red"], "took": []}, "scores a tree"),
        ({"type": "declined"}, "declines"),
    ],
)
def test_the_move_in_brief(both, event, said):
    assert both["mail"].move(event) == both["site"].move(event) == said


def test_on_a_page_a_name_is_escaped_once_and_the_coloured_pyramids_are_markup(config, tmp_path):
    page = Site(None, tmp_path).env.from_string(  # an HTML page of the site: it escapes
        '{% import "events/ice.txt.j2" as ice %}{{ ice.headline(round, names, html=true) }} | '
        "{{ ice.move(event, show=coloured, detail=true, html=true) }}"
    )
    coloured = lambda pyramids: Markup("<i>{}</i>").format(" ".join(pyramids))  # the site's own is a macro
    event = {"type": "pass", "card": 3, "bid": ["M-<blue>"]}
    assert page.render(round=ROUND, names=NAMES, event=event, coloured=coloured) == (
        "&lt;b&gt;o&#39;b&amp;c&lt;/b&gt; bids L-red S-blue; ann wins the auction | "
        "passes (card 3, <i>M-&lt;blue&gt;</i>)"
    )


def test_in_detail_in_plain_text(both):
    tree = {"type": "tree", "tree": ["L-red"], "took": ["S-red"]}
    assert both["mail"].move(tree, detail=True) == "scores [L-red], takes S-red"


def test_every_page_that_words_a_move_with_them_asks_for_html():
    """jinja2 takes a macro's output as safe in a page that escapes, so a
    page that forgot html=true would show a player's name unescaped."""
    pages = Path(__file__).parents[2] / "templates" / "site"
    calls = [
        (page.name, call)
        for page in pages.rglob("*.html.j2")
        if '"events/' in (text := page.read_text(encoding="utf-8"))
        for call in re.findall(r"\b(?:ice)\.\w+\([^{}]*?\)(?= *}})", text)
    ]
    assert calls
    assert [c for c in calls if "html=true" not in c[1]] == []
