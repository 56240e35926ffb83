"""The site feed's entries (render.py's atom_entries), the rows of Bid!'s
table of auctions and Priority's tallies (referee.site.rows) are written
by Python since round 40, where the templates' loops wrote them: the same
bytes as those templates (tests/fixtures/templates40), for any names,
labels, bids, results and scores; and a keeper's own copy of an old
template still renders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.site.render import Site

OLD = Path(__file__).parents[1] / "fixtures" / "templates40"
SITE = Site(None, Path("unused"))  # type: ignore[arg-type]  # (its environment alone: no records read)
BEFORE = SITE.env.overlay(loader=jinja2.ChoiceLoader([jinja2.FileSystemLoader(str(OLD)), SITE.env.loader]))  # type: ignore[list-item]

# What a name or a label may hold that HTML or XML escapes, or that is wide, or not there.
text = st.text(st.sampled_from(list("ab<&\"'> éZ漢\u200b-_.xyQ;:")), max_size=30)
moment = st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))


def _same(name: str, context: dict[str, Any]) -> str:
    written = SITE.env.get_template(name).render(**context)
    assert written == BEFORE.get_template(name).render(**context)
    return written


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_site40_a_feed_is_what_its_template_wrote(data):
    """Entries with and without content, any text in them."""
    entry = st.fixed_dictionaries(
        {"title": text, "id": text, "updated": moment, "link": text, "content": st.none() | text}
    )
    context = {
        "title": data.draw(text),
        "entries": data.draw(st.lists(entry, max_size=6)),
        "updated": data.draw(moment),
        "feed_id": data.draw(text),
        "link": data.draw(text),
        "base": data.draw(st.sampled_from(["", "../../"])),
    }
    written = _same("site/feed.atom.j2", context)
    assert written.count("<entry>") == len(context["entries"])


def _players(names: list[str]) -> list[dict[str, Any]]:
    return [{"seat": seat, "name": name} for seat, name in enumerate(names)]


@settings(max_examples=200, deadline=None)
@given(names=st.lists(text, min_size=2, max_size=5), data=st.data())
def test_site40_bid_rows_are_what_the_loop_wrote(names, data):
    """Won, tied, crowned, cancelled auctions; coins bid; moves by mail, random or a bot's."""
    seats = len(names)
    tiles = st.lists(st.integers(0, 5), max_size=3)
    keys = st.sampled_from([str(seat) for seat in range(seats)])

    def auction(number: int) -> dict[str, Any]:
        kind = data.draw(st.sampled_from(["won", "tie", "cancelled", "crowned", "nobody"]))
        event: dict[str, Any] = {
            "type": {"won": "auction", "crowned": "auction", "nobody": "auction"}.get(kind, kind),
            "dice": data.draw(tiles),
            "bids": [data.draw(tiles) for _ in range(seats)],
            "points": data.draw(st.integers(-9, 20)),
            "crowned": kind == "crowned",
            "how": data.draw(st.dictionaries(keys, text, max_size=seats)),
        }
        if kind == "won":
            event["winner"] = data.draw(st.integers(0, seats - 1))
        if data.draw(st.booleans()):
            event["coins_bid"] = data.draw(st.dictionaries(keys, st.integers(0, 9), max_size=seats))
        if data.draw(st.booleans()):
            event["scores"] = data.draw(st.lists(st.integers(-50, 99), min_size=seats, max_size=seats))
        how = data.draw(st.dictionaries(st.integers(0, seats - 1), st.sampled_from(["mail", "random", "bot"])))
        return {"number": number, "label": data.draw(text), "events": [event], "how": how}

    context = {
        "rounds": [auction(number) for number in range(1, data.draw(st.integers(0, 4)) + 1)],
        "players": _players(names),
        "names": names,
        "game": {"options": {"reroll": data.draw(st.sampled_from(["pawn", "coin"]))}},
    }
    written = _same("site/bid/rounds.html.j2", context)
    assert written.count("<tr id=") == len(context["rounds"])


@settings(max_examples=200, deadline=None)
@given(names=st.lists(text, min_size=2, max_size=5), data=st.data())
def test_site40_priority_tallies_are_what_the_loop_wrote(names, data):
    """Tallies won or discarded (colours tied for the lowest), cards shown or none, among other events.
    (The fixture is the loop alone, the lines site/priority/rounds.html.j2 had before.)"""
    seats = len(names)
    colours = data.draw(st.lists(text, min_size=1, max_size=5, unique=True))
    board = st.dictionaries(st.sampled_from(colours), st.integers(0, 9) | st.lists(st.integers(0, 9), max_size=3))

    def event() -> dict[str, Any]:
        if data.draw(st.booleans()):
            return {"type": "play"}
        return {
            "type": "tally",
            "round": data.draw(st.integers(1, 9)),
            "item": data.draw(text),
            "winner": data.draw(st.none() | st.integers(0, seats - 1)),
            "colour": data.draw(text),
            "lowest": data.draw(st.lists(st.sampled_from(colours), max_size=3)),
            "boards": [data.draw(board) for _ in range(seats)],
            "totals": {colour: data.draw(st.integers(0, 40)) for colour in colours},
        }

    rounds = [
        {"number": number, "events": [event() for _ in range(data.draw(st.integers(0, 3)))]}
        for number in range(1, data.draw(st.integers(0, 4)) + 1)
    ]
    context = {"rounds": rounds, "players": _players(names), "view": {"colours": colours}}
    written = SITE.env.from_string("{{ rounds|priority_tallies_html(players, view.colours) }}").render(**context)
    assert written == BEFORE.get_template("site/priority/tallies.html.j2").render(**context)
    assert written.count("<p id=") == sum(e["type"] == "tally" for r in rounds for e in r["events"])
