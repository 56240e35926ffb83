"""A game's moves are worded once for its mail and its site: each game's in
templates/events/<kind>.txt.j2, imported by both template environments (the
mail's, which never escapes, and the site's, which escapes HTML), and safe
in both: plain text unless the caller asks for HTML, and then escaped
(which every page of the site does).  A round's mail says in its Subject
what the site's feed calls it: the game's ``headline`` macro, in both."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from markupsafe import Markup, escape

from referee.mail.compose import Composer
from referee.site.render import Site

NAMES = ["ann", "<b>o'b&c</b>", "carol"]
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
        for alias in re.findall(r'{% import "events/[\w-]+\.txt\.j2" as (\w+) %}', page.read_text(encoding="utf-8"))
        for call in re.findall(rf"\b{alias}\.\w+\([^{{}}]*?\)(?= *}}}})", page.read_text(encoding="utf-8"))
    ]
    assert {page for page, _ in calls} >= {"rounds.html.j2"}
    assert [c for c in calls if "html=true" not in c[1]] == []


# -- a round's Subject and its feed title, every game ---------------------------------------

# A round of each game (as its round mail and the site's feed see it: its
# label, the movers' sources, its events), the game's options, and what its
# mail's Subject and its feed's title say of it after the label; the names
# are as players might choose them.
OVER = {"type": "over", "winner": 0}  # a game's end, in its last round's events
BLUFF = {  # Bluff Auction's moves, by type, as its events hold them
    "bid": {"type": "bid", "seat": 1, "track": "red", "value": 3, "tied": True},
    "move": {"type": "move", "seat": 1, "from": "purple", "track": "red", "value": 1, "token": 3, "tied": False},
    "pass": {"type": "pass", "seat": 1, "forced": True},
    "rerolled": {"type": "rerolled", "counts": {"1": 2, "0": 1}},
    "oneshot": {"type": "oneshot", "seat": 1, "used": True},
    "special": {"type": "special", "seat": 1, "tile": "Overbid with Tie"},
    "exhibit": {"type": "exhibit", "seat": 1, "tile": "red art", "set": ["red art", "2 Dice"], "points": 3},
    "discard": {"type": "discard", "seat": 1, "tile": "blue art", "discarded": "blue ancient art"},
    "place": {"type": "place", "seat": 1, "tile": "green modern art"},
}
PAWN, COIN = {"reroll": "pawn"}, {"reroll": "coin"}  # Bid!'s two ways to reroll the dice
HEADLINES: dict[str, list[tuple[dict[str, Any], dict[str, Any], str]]] = {
    "pure-skill": [
        (
            {"label": "Round 2 of 13", "how": {}, "events": [{"winner": 1, "prize": 12, "value": 12}]},
            {},
            "<b>o'b&c</b> takes the Q",
        ),
        (
            {"label": "Round 3 of 13", "how": {}, "events": [{"winner": None, "outcome": "carried", "prize": 1}]},
            {},
            "tie, the A carries over",
        ),
        (
            {"label": "Round 4 of 13", "how": {}, "events": [{"winner": None, "outcome": "discarded", "prize": 10}]},
            {},
            "tie, the 10 is discarded",
        ),
    ],
    "bid": [
        (
            {"label": "Auction 2", "how": {}, "events": [{"type": "auction", "winner": 1, "points": 9}]},
            PAWN,
            "<b>o'b&c</b> wins 9",
        ),
        ({"label": "Auction 3", "how": {}, "events": [{"type": "tie"}]}, PAWN, "a tie, coins decide"),
        (
            {"label": "Auction 4", "how": {}, "events": [{"type": "cancelled"}]},
            PAWN,
            "cancelled, the dice are rolled again",
        ),
        ({"label": "Auction 4", "how": {}, "events": [{"type": "cancelled"}]}, COIN, "dice rerolled, bid again"),
        (
            {
                "label": "Auction 5",
                "how": {},
                "events": [{"type": "auction", "winner": None, "crowned": [0, 1], "points": 4}],
            },
            PAWN,
            "a tie under the Ace of Crowns",
        ),
        ({"label": "Auction 6", "how": {}, "events": [{"type": "auction", "crowned": []}]}, PAWN, "nobody wins"),
    ],
    "priority": [
        (
            {
                "label": "Round 1 of 8, turn 3",
                "how": {1: "mail"},
                "events": [{"type": "play", "seat": 1, "colour": "red"}],
            },
            {},
            "<b>o'b&c</b> plays on red",
        ),
        (
            {
                "label": "Round 1 of 8, turn 4",
                "how": {2: "random"},
                "events": [
                    {"type": "move", "seat": 2, "from": "red", "to": "blue"},
                    {"type": "tally", "round": 1, "item": 5, "winner": 1, "colour": "blue"},
                ],
            },
            {},
            "carol moves red to blue; <b>o'b&c</b> (blue) wins 5",
        ),
        (
            {
                "label": "Round 2 of 8, turn 9",
                "how": {0: "bot"},
                "events": [{"type": "pass", "seat": 0}, {"type": "tally", "round": 2, "item": 3, "winner": None}],
            },
            {},
            "ann passes; tie, 3 discarded",
        ),
        (
            {
                "label": "Round 8 of 8, turn 9",
                "how": {2: "mail"},
                "events": [
                    {"type": "play", "seat": 2, "colour": "red"},
                    {"type": "tally", "round": 8, "item": 1, "winner": 0, "colour": "red"},
                    OVER,
                ],
            },
            {},
            "carol plays on red; ann (red) wins 1; game over",
        ),
    ],
    "bluff": [
        (
            {"label": "Round 1 bidding, turn 2", "how": {1: "mail"}, "events": [BLUFF["bid"]]},
            {},
            "<b>o'b&c</b> bids 3 on red",
        ),
        (
            {"label": "Round 1 bidding, turn 5", "how": {1: "mail"}, "events": [BLUFF["move"]]},
            {},
            "<b>o'b&c</b> moves their token of 3 from purple to red at 1",
        ),
        (  # a first-rulings record: its tokens are not told apart
            {
                "label": "Round 1 bidding, turn 6",
                "how": {0: "mail"},
                "events": [{key: value for key, value in BLUFF["move"].items() if key != "token"} | {"seat": 0}],
            },
            {},
            "ann moves a token from purple to red at 1",
        ),
        (
            {
                "label": "Round 1 bidding, turn 9",
                "how": {2: "random"},
                "events": [
                    {**BLUFF["pass"], "seat": 2},
                    {"type": "dice", "colour": "red", "counts": [1, 2, 0]},
                    {"type": "auction", "track": "red", "tile": "red modern art", "winner": 1, "value": 5},
                    {"type": "auction", "track": "blue", "tile": "Purple 5", "winner": None, "bids": {}},
                    {"type": "auction", "track": "black", "tile": "black ancient tool", "winner": 0, "value": 2},
                ],
            },
            {},
            "carol passes; <b>o'b&c</b> wins red modern art; ann wins black ancient tool",
        ),
        ({"label": "Round 2 tools", "how": {}, "events": [BLUFF["rerolled"]]}, {}, "rerolls"),
        (
            {"label": "Round 2 red auction: the 1-shot tile", "how": {1: "mail"}, "events": [BLUFF["oneshot"]]},
            {},
            "<b>o'b&c</b> uses the 1-shot tile",
        ),
        (
            {"label": "Round 2 acquisition: Overbid with Tie", "how": {1: "mail"}, "events": [BLUFF["special"]]},
            {},
            "<b>o'b&c</b> takes Overbid with Tie",
        ),
        (
            {
                "label": "Round 2 acquisition: 2 Dice",
                "how": {1: "mail"},
                "events": [{**BLUFF["special"], "tile": "2 Dice"}, BLUFF["exhibit"]],
            },
            {},
            "<b>o'b&c</b> takes 2 Dice and exhibits a set of 2 for 3 points",
        ),
        (
            {"label": "Round 3 acquisition: red art", "how": {1: "mail"}, "events": [BLUFF["exhibit"]]},
            {},
            "<b>o'b&c</b> exhibits a set of 2 for 3 points",
        ),
        (
            {"label": "Round 3 acquisition: blue art", "how": {1: "mail"}, "events": [BLUFF["discard"]]},
            {},
            "<b>o'b&c</b> discards blue ancient art",
        ),
        (
            {"label": "Round 3 acquisition: green art", "how": {1: "mail"}, "events": [BLUFF["place"]]},
            {},
            "<b>o'b&c</b> places green modern art",
        ),
        (
            {"label": "Round 9 acquisition: green art", "how": {1: "mail"}, "events": [BLUFF["place"], OVER]},
            {},
            "<b>o'b&c</b> places green modern art; game over",
        ),
    ],
    "ice": [
        ({**ROUND, "label": "Round 1, turn 1"}, {}, "<b>o'b&c</b> bids L-red S-blue; ann wins the auction"),
        (
            {"label": "Round 4, turn 2", "how": {0: "mail"}, "events": [{"type": "declined", "seat": 0}, OVER]},
            {},
            "ann declines; game over",
        ),
    ],
}
CASES = [(kind, *case) for kind, cases in HEADLINES.items() for case in cases]


def subject(composer: Composer, kind: str, round_: dict[str, Any], options: dict[str, Any]) -> str:
    """The Subject of ``round_``'s mail, as mail/<kind>/round.txt.j2 writes
    it: the template's lines up to its Subject line, rendered."""
    source = composer.env.loader.get_source(composer.env, f"mail/{kind}/round.txt.j2")[0]
    head = source[: source.index("\n", source.index("Subject:"))]
    players = [{"seat": seat, "label": name, "bot": False} for seat, name in enumerate(NAMES)]
    over = any(event.get("type") == "over" for event in round_["events"])
    context = {"game": {"tag": f"[{kind}-1]", "options": options}, "players": players, "view": {"over": over}}
    return composer.env.from_string(head).render(round=round_, **context).removeprefix("Subject: ")


def title(site: Site, kind: str, round_: dict[str, Any], options: dict[str, Any]) -> str:
    """Its feed entry's title, as site/<kind>/summary.txt.j2 writes it."""
    game = {"id": 1, "kind": kind, "options": options}
    return site.env.get_template(f"site/{kind}/summary.txt.j2").render(rounds=[round_], names=NAMES, game=game).strip()


def test_every_games_words_are_held_here():
    events = Path(__file__).parents[2] / "templates" / "events"
    assert {path.name.removesuffix(".txt.j2") for path in events.glob("*.txt.j2")} == set(HEADLINES) == set(TABLE)


@pytest.mark.parametrize(("kind", "round_", "options", "said"), CASES)
def test_a_rounds_mail_and_its_feed_entry_say_the_same(config, tmp_path, kind, round_, options, said):
    assert title(Site(None, tmp_path), kind, round_, options) == f"{round_['label']}: {said}"
    assert subject(Composer(config), kind, round_, options) == f"[{kind}-1] {round_['label']}: {said}"


@pytest.mark.parametrize("kind", sorted(HEADLINES))
def test_the_words_are_the_macros_changed_once_both_change(config, tmp_path, kind):
    """A keeper's own templates folder rewords a game's events for its mail
    and its site at once: the macro is the only place they are worded."""
    ours = tmp_path / "templates"
    (ours / "events").mkdir(parents=True)
    (ours / "events" / f"{kind}.txt.j2").write_text(
        '{% macro headline() %}reworded{{ "" if varargs or kwargs }}{% endmacro %}', encoding="utf-8"
    )
    round_, options, _ = HEADLINES[kind][0]
    composer = Composer(dataclasses.replace(config, templates=ours))
    assert subject(composer, kind, round_, options) == f"[{kind}-1] {round_['label']}: reworded"
    assert title(Site(None, tmp_path / "site", templates=ours), kind, round_, options) == f"{round_['label']}: reworded"


ESCAPED = "&lt;b&gt;o&#39;b&amp;c&lt;/b&gt;"  # NAMES[1] on a page

# Each game's words in brief for its site's table (in a page that escapes), and what they say.
TABLE = {
    "pure-skill": [
        (
            '{{ m.result({"winner": 1, "value": 7}, names, compact=true, html=true) }}',
            f"{ESCAPED} +7",
        ),
        ('{{ m.result({"winner": none, "outcome": "carried"}, names, compact=true, html=true) }}', "tie: carried over"),
        ('{{ m.result({"winner": none, "outcome": "x"}, names, compact=true, html=true) }}', "tie: discarded"),
    ],
    "priority": [
        ('{{ m.move({"type": "move", "from": "<red>", "to": "blue"}, html=true) }}', "moves &lt;red&gt; to blue"),
        (
            '{{ m.tally({"winner": 1, "colour": "red", "item": 5}, names, html=true) }}',
            f"{ESCAPED} (red) wins 5",
        ),
        ('{{ m.tally({"winner": none, "item": 5}, names, html=true) }}', "tie, 5 discarded"),
    ],
    "bluff": [
        *(
            (f"{{{{ m.move({event!r}, names, detail=true, html=true) }}}}", shown)
            for event, shown in [
                (BLUFF["bid"], f"{ESCAPED} bids 3 on red (tie)"),
                (BLUFF["move"], f"{ESCAPED} moves purple 3 to red at 1"),
                (BLUFF["pass"], f"{ESCAPED} passes (nothing else to do)"),
                (BLUFF["rerolled"], f"{ESCAPED} rerolls 2, ann rerolls 1"),
                ({**BLUFF["rerolled"], "counts": {"1": 0, "0": 1}}, f"{ESCAPED} keeps their dice, ann rerolls 1"),
                (BLUFF["oneshot"], f"{ESCAPED} uses the 1-shot tile"),
                (BLUFF["special"], f"{ESCAPED} takes Overbid with Tie"),
                (BLUFF["exhibit"], f"{ESCAPED} exhibits red art, 2 Dice for 3"),
                (BLUFF["discard"], f"{ESCAPED} discards blue ancient art"),
                (BLUFF["place"], f"{ESCAPED} places green modern art"),
            ]
        ),
        (
            '{{ m.won({"winner": 1, "tile": "red <art>", "value": 5}, names, detail=true, html=true) }}',
            f"{ESCAPED} wins red &lt;art&gt; with 5",
        ),
    ],
    "ice": [  # (its names and pyramids: test_on_a_page_a_name_is_escaped_once_and_the_coloured_pyramids_are_markup)
        (
            '{{ m.move({"type": "pass", "card": 3, "bid": ["M-blue"]}, detail=true, html=true) }}',
            "passes (card 3, M-blue)",
        ),
    ],
    "bid": [
        (
            '{{ m.result({"type": "auction", "winner": 1, "points": 9}, names, {}, compact=true, html=true) }}',
            f"{ESCAPED} +9",
        ),
        (
            '{{ m.result({"type": "cancelled"}, names, {"reroll": "coin"}, compact=true, html=true) }}',
            "cancelled: rolled again",
        ),
        ('{{ m.result({"type": "tie"}, names, {}, compact=true, html=true) }}', "tie: coins decide"),
        (
            '{{ m.result({"type": "auction", "crowned": [0], "points": 4}, names, {}, compact=true, html=true) }}',
            "Crowns: tied lose 4",
        ),
        ('{{ m.result({"type": "auction", "crowned": []}, names, {}, compact=true, html=true) }}', "no winner"),
    ],
}


@pytest.mark.parametrize(("kind", "call", "shown"), [(kind, *case) for kind, cases in TABLE.items() for case in cases])
def test_on_a_page_the_tables_words_escape_a_name_once(tmp_path, kind, call, shown):
    page = Site(None, tmp_path).env.from_string(f'{{% import "events/{kind}.txt.j2" as m %}}{call}')
    assert page.render(names=NAMES) == shown


@pytest.mark.parametrize(("kind", "round_", "options", "said"), CASES)
def test_on_a_page_a_headline_escapes_a_name_once(tmp_path, kind, round_, options, said):
    env = Site(None, tmp_path).env
    more = ", options" if "options" in env.get_template(f"events/{kind}.txt.j2").module.headline.arguments else ""
    page = env.from_string(
        f'{{% import "events/{kind}.txt.j2" as m %}}{{{{ m.headline(round, names{more}, html=true) }}}}'
    )
    assert page.render(round=round_, names=NAMES, options=options) == escape(said)
