"""The public history site (`referee render`): what its pages, feeds and
calendars show, that they are valid and accessible, that nothing private
ever reaches them (nor any public mail), and that rendering is incremental
and atomic.  Games are played through the engine, by mail and the fake clock."""

from __future__ import annotations

import email
import itertools
import json
import os
import re
import sqlite3
import tempfile
import xml.etree.ElementTree as ET
from datetime import timedelta
from email import policy
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

import pytest
from conftest import PLAYERS, FakeClock, body_of, join, reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.cli import main
from referee.config import Config
from referee.engine import Engine
from referee.rules.pure_skill import card_name
from referee.site.public import score_chart
from referee.site.render import Site
from referee.store import Notify, Store
from referee.tables import own_calendar
from referee.timeutil import from_iso, show, show_duration

ALICE, BOB, CAROL = PLAYERS
DAVE, ERIN = "dave@example.org", "erin@example.org"
FINISHERS = ["frank@example.org", "grace@example.org", "heidi@example.org"]
IVAN = "ivan@example.org"  # signs up for a game that has not started
REFEREE = "referee@example.org"
ATOM = "{http://www.w3.org/2005/Atom}"
STATE_FILE = ".render-state.json"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
CARD = r"(?:A|[2-9]|10|J|Q|K)"
BID_TEXT = re.compile(rf"\bbid {CARD}\b")
_SERIAL = itertools.count(1)


# -- playing -------------------------------------------------------------------------------


def hand(engine: Engine, game: int, seat: int) -> list[int]:
    return sorted(engine.table(game).state.hands[seat])


def bid(engine: Engine, player: str, card: int, game: int = 1) -> None:
    """``player`` replies to their mail about ``game`` with a bid, received now."""
    outcome = engine.ingest(
        reply(engine, player, f"bid {card_name(card)}", game=game, message_id=f"<site-{next(_SERIAL)}@example.net>")
    )
    assert outcome.code in ("move", "replaced"), outcome


def lowest(engine: Engine, player: str, game: int = 1) -> int:
    return hand(engine, game, engine.table(game).seat_of(player))[0]


def play_to_the_end(engine: Engine, game: int) -> None:
    """Everyone bids their highest card every round, at once."""
    table = engine.table(game)
    while engine.table(game).open_phase is not None:
        number = engine.table(game).open_phase["number"]
        for seat, seat_row in enumerate(table.seats):
            if seat not in engine.store.final_moves(game, number):
                bid(engine, seat_row["address"], hand(engine, game, seat)[-1], game)


@pytest.fixture(scope="module")
def played_once(tmp_path_factory) -> tuple[Path, FakeClock]:
    """Four games, the clock at 2026-11-25 10:00 UTC:
    1. alice, bob, carol, "The first": round 1 all by mail; in round 2 only
       alice bid (bob's and carol's bids were random at the deadline); in
       round 3 (deadline 2026-11-27 12:00: round 2's deadline, when
       round 3 opened, and three days) bob has bid.
    2. dave, erin and a bot: round 1 resolved at its deadline, all random.
    3. frank, grace, heidi: played to the end.
    4. open for sign-up: ivan has signed up.
    Played once; each test gets its own copy of the database."""
    clock = FakeClock()
    database = tmp_path_factory.mktemp("played") / "games.db"
    config = Config(address=REFEREE, database=database, reminder=None, outage_gap=None)
    engine = Engine(Store(database), config, clock)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3), name="The first")
    engine.new_game("pure-skill", [DAVE, ERIN], bots=1, deadline=timedelta(days=3))
    engine.new_game("pure-skill", FINISHERS, deadline=timedelta(days=3))
    play_to_the_end(engine, 3)
    for player, card in ((ALICE, 13), (BOB, 13), (CAROL, 12)):
        bid(engine, player, card)
    clock.advance(hours=1)
    bid(engine, ALICE, 5)
    clock.advance(days=3)
    engine.tick()
    bid(engine, BOB, lowest(engine, BOB))
    clock.advance(hours=21)
    join(engine, "pure-skill", IVAN)
    return database, clock


@pytest.fixture
def played(played_once, config, clock) -> Engine:
    """The engine of played_once's games, on a copy of its database, at its time."""
    database, then = played_once
    with sqlite3.connect(database) as source, sqlite3.connect(config.database) as target:
        source.backup(target)
    source.close()
    target.close()
    clock.now = then.now
    return Engine(Store(config.database), config, clock)


@pytest.fixture
def site(played, tmp_path) -> Path:
    folder = tmp_path / "site"
    Site(played, folder).render()
    return folder


# -- reading the site ------------------------------------------------------------------------


class Page(HTMLParser):
    """An HTML page: its tags, its text, its tables, and whatever does not balance."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[str] = []
        self.tables: list[dict] = []
        self.headings: list[tuple[str, str]] = []
        self.items: list[str] = []  # the text of each <li>
        self._cell: dict | None = None
        self._heading: list[str] | None = None
        self._item: list[str] | None = None
        self.feed(text)
        self.close()
        if self.stack:
            self.problems.append(f"never closed: {self.stack}")

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "table":
            self.tables.append({"attrs": attrs, "parents": list(self.stack), "rows": [], "caption": ""})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append({"attrs": attrs, "cells": []})
        elif tag in ("td", "th") and self.tables:
            self._cell = {"tag": tag, "attrs": attrs, "text": ""}
            self.tables[-1]["rows"][-1]["cells"].append(self._cell)
        elif re.fullmatch(r"h[1-6]", tag):
            self._heading = []
        elif tag == "li":
            self._item = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID and "svg" not in self.stack:
            self.problems.append(f"<{tag}/> outside SVG")

    def handle_endtag(self, tag):
        if tag in VOID:
            self.problems.append(f"</{tag}> closes a void element")
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> while {self.stack[-1:]} is open")
            if tag in self.stack:
                del self.stack[self.stack.index(tag) :]
            return
        self.stack.pop()
        if tag in ("td", "th"):
            self._cell = None
        if re.fullmatch(r"h[1-6]", tag) and self._heading is not None:
            self.headings.append((tag, "".join(self._heading).strip()))
            self._heading = None
        if tag == "li" and self._item is not None:
            self.items.append(re.sub(r"\s+", " ", "".join(self._item)).strip())
            self._item = None

    def handle_data(self, data):
        if self.stack[-1:] in (["style"], ["script"]):  # (a script's text is not the page's)
            return
        self.texts.append(data)
        if self._cell is not None:
            self._cell["text"] += data
        if self._heading is not None:
            self._heading.append(data)
        if self._item is not None:
            self._item.append(data)
        if self.stack[-1:] == ["caption"] and self.tables:
            self.tables[-1]["caption"] += data

    @property
    def text(self) -> str:
        return re.sub(r"\s+", " ", "".join(self.texts))

    def find(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]

    def table(self, header: str) -> dict:
        """The one table with a column headed ``header``."""
        (found,) = [
            t
            for t in self.tables
            if t["rows"] and header in [c["text"].strip() for c in t["rows"][0]["cells"] if c["tag"] == "th"]
        ]
        return found


def page(folder: Path, name: str) -> Page:
    parsed = Page((folder / name).read_text(encoding="utf-8"))
    assert not parsed.problems, f"{name}: {parsed.problems}"
    return parsed


def deadlines(parsed: Page) -> list[str | None]:
    """The moments of the deadlines whose time left the reader's browser tells."""
    return [attrs["datetime"] for tag, attrs in parsed.tags if tag == "time" and "data-left" in attrs]


def site_files(folder: Path) -> dict[str, bytes]:
    """Every file in the site, hidden ones too: relative path -> contents."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def public_text(folder: Path) -> dict[str, str]:
    """What the site publishes of its games (the rules pages are the same
    on every referee's site: text shipped with it, whose examples look like
    moves)."""
    return {name: data.decode("utf-8") for name, data in site_files(folder).items() if not name.startswith("rules/")}


def stats(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


def temporary_files(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.name.startswith(".") and p.name.endswith(".tmp")]


def game_files(game: int) -> set[str]:
    return {f"games/{game}/{name}" for name in ("index.html", "record.json", "feed.atom", "deadlines.ics")}


def own_files(engine: Engine, game: int) -> set[str]:
    """The game's seats' own calendars (issue 33): written with its pages."""
    return {path for seat in engine.store.seats(game) if (path := own_calendar(engine.key, seat))}


def rounds_table(parsed: Page) -> list[list[str]]:
    """The rounds table's body rows, each as its cells' texts."""
    table = parsed.table("Prize")
    return [[cell["text"].strip() for cell in row["cells"]] for row in table["rows"][1:]]


def expected_rounds(engine: Engine, game: int) -> list[list[str]]:
    """The rows the rounds table must have, made from the store and the replay."""
    table = engine.table(game)
    names = [(s["address"] or "").partition("@")[0] or f"bot {s['seat'] + 1}" for s in table.seats]
    rows = []
    for step in table.replay.steps:
        event = step.events[0]
        sources = {seat: move["source"] for seat, move in engine.store.final_moves(game, step.number).items()}
        marks = {"random": "*", "bot": "~"}
        bids = [card_name(event["bids"][seat]) + marks.get(sources[seat], "") for seat in range(3)]
        if event["winner"] is not None:
            result = f"{names[event['winner']]} +{event['value']}"
        else:
            result = "tie: carried over" if event["outcome"] == "carried" else "tie: discarded"
        totals = " · ".join(str(score) for score in event["scores"])  # the running totals
        rows.append([str(event["round"]), card_name(event["prize"]), *bids, result, totals])
    return rows


# -- what the pages show -------------------------------------------------------------------


def test_the_index_lists_running_open_and_finished_games_with_links(site):
    index = page(site, "index.html")
    headings = [text for tag, text in index.headings if tag == "h2"]
    assert headings == ["Being played", "Open for sign-up", "Finished"]
    links = [a["href"] for a in index.find("a") if a["href"].startswith("games/")]
    assert links == ["games/2/index.html", "games/1/index.html", "games/3/index.html"]  # running first, newest first
    for link in links:
        assert (site / link).is_file()
    two, one, four, three = index.items  # in the order of the headings
    for item in (one, two):
        assert "Round" in item and "deadline 2026-11-27 12:00 UTC;" in item  # the time left: the browser's
    assert deadlines(index) == ["2026-11-27T12:00:00Z", "2026-11-27T12:00:00Z"]
    assert one.startswith("Game 1,") and "The first" in one and "Round 3 of 13" in one
    assert two.startswith("Game 2,") and "Round 2 of 13" in two
    assert three.startswith("Game 3,") and "ended 2026-11-21 12:00 UTC" in three and "deadline" not in three
    assert four.startswith("Game 4,") and "1 of 3 seats taken" in four and "ivan" not in four
    assert not (site / "games" / "4").exists()  # nothing to show of a game not started
    assert one.endswith("waiting for alice, carol")  # bob has bid in round 3
    assert two.endswith("waiting for dave, erin")
    winner = json.loads((site / "games/3/record.json").read_text())["winner"]
    assert three.endswith(f": {winner} won" if winner else ": no winner")


def test_every_link_between_pages_names_a_file_so_the_site_works_from_file_urls(site):
    """Opened from disk (`referee demo` prints a file:// address), a link to
    a folder shows a folder listing, not its page: every page links to files."""
    for path in sorted(site.rglob("*.html")):
        name = path.relative_to(site).as_posix()
        for anchor in page(site, name).find("a") + page(site, name).find("link"):
            href = (anchor["href"] or "").split("#")[0]
            if not href or "://" in href or href.startswith("mailto:"):
                continue  # a place on the same page, or another site
            assert not href.endswith("/"), f"{name} links to the folder {href}"
            assert (path.parent / href).resolve().is_file(), f"{name} links to {href}, which is not there"


def test_a_running_pure_skill_page_shows_the_prize_on_offer_and_what_is_left(played, site):
    from referee.rules.pure_skill import card_long, card_name

    state = played.table(1).state
    text = re.sub(r"\s+", " ", page(site, "games/1/index.html").text)
    assert f"Round 3 of 13: the prize is the {card_long(state.prize)}." in text
    assert "Spades still to come: " + ", ".join(card_name(c) for c in sorted(state.spades)) + "." in text
    assert "Cards each player still holds: alice 11, bob 11, carol 11." in text  # two played; bob's third is secret
    assert "On offer" not in page(site, "games/3/index.html").text  # finished


def test_a_running_bid_page_shows_the_dice_and_everyones_tiles_coins_and_pawns(engine, tmp_path):
    from referee.rules.bid import tile_name

    engine.new_game("bid", PLAYERS)
    Site(engine, tmp_path / "site").render()
    view = engine.table(1).rules.view(engine.table(1).state, None)
    text = re.sub(r"\s+", " ", page(tmp_path / "site", "games/1/index.html").text)
    assert "Auction 1: the dice show suns " in text and f"The winner takes {view['points']} point" in text
    assert "The first to 100 points ends the game." in text
    names = [name.partition("@")[0] for name in PLAYERS]
    for seat, name in enumerate(names):
        tiles = " ".join(tile_name(t) for t in view["hands"][seat])
        assert (
            f"{name}: tiles {tiles}; {view['coins'][seat]} coins; pawn to play"
            in page(tmp_path / "site", "games/1/index.html").items
        )


def test_a_games_page_title_carries_its_name(site):
    def title(name: str) -> str:
        return re.search(r"<title>(.*?)</title>", (site / name).read_text()).group(1)

    assert title("games/1/index.html") == "Game 1: Game of Pure Skill, “The first”"
    assert title("games/2/index.html") == "Game 2: Game of Pure Skill"


def test_players_are_named_by_the_local_part_of_their_address(site):
    players = page(site, "games/1/index.html").table("Player")
    assert [[c["text"] for c in row["cells"][:2]] for row in players["rows"][1:]] == [
        ["1", "alice"],
        ["2", "bob"],
        ["3", "carol"],
    ]
    players = page(site, "games/2/index.html").table("Player")
    assert [row["cells"][1]["text"] for row in players["rows"][1:]] == ["dave", "erin", "bot 3 (a random bot)"]


def test_no_players_address_appears_anywhere_in_the_site(site):
    """Only the referee's own address (footer, index, site feed) is published."""
    files = public_text(site)
    assert any(REFEREE in text for text in files.values())
    for name, text in files.items():
        for address in [*PLAYERS, DAVE, ERIN, *FINISHERS, IVAN]:
            assert address not in text, (name, address)
        assert "@example.org" not in text.replace(REFEREE, ""), name
    footer = page(site, "games/1/index.html").text
    assert f"by the referee at {REFEREE}" in footer


def test_no_hand_nor_open_bid_appears_in_the_site(played, site):
    """Of the open rounds (game 1's round 3, where bob has bid; game 2's
    round 2) the site holds no move, and no player's remaining cards."""
    files = public_text(site)
    for game in (1, 2):
        table = played.table(game)
        number = table.open_phase["number"]
        record = json.loads(files[f"games/{game}/record.json"])
        assert [p["number"] for p in record["phases"]] == list(range(1, number))
        for seat in range(3):
            cards = " ".join(card_name(c) for c in hand(played, game, seat))
            assert all(cards not in text for text in files.values()), (game, seat, cards)
    assert played.store.final_moves(1, 3)  # bob's bid is in, and secret
    for name, text in files.items():
        if not name.endswith(".json"):
            assert not BID_TEXT.search(text) and "hand" not in text.lower(), name


def test_a_game_page_shows_the_open_phase_who_moved_and_the_deadline(played, clock, site):
    text = page(site, "games/1/index.html").text
    deadline = played.table(1).open_phase["deadline"]
    assert deadline == "2026-11-27T12:00:00Z"
    assert show_duration(from_iso(deadline) - clock()) == "2 days 2 hours"
    assert "Now: Round 3 of 13" in text
    assert f"Deadline: {show(deadline)}." in text  # "(in 2 days 2 hours)" after it: the reader's browser adds it
    assert "Deadline: 2026-11-27 12:00 UTC" in text
    assert deadlines(page(site, "games/1/index.html")) == [deadline]
    assert "Moved: bob. Still to move: alice, carol." in text
    assert [row[0] for row in rounds_table(page(site, "games/1/index.html"))] == ["1", "2"]


def test_a_deadline_passed_but_not_yet_enforced_still_shows_when_it_fell(played, clock, tmp_path):
    """Past the deadline, before the tick that enforces it, the page still
    says when it fell (the reader's browser says "any moment now")."""
    clock.advance(days=2, hours=4)  # past round 3's deadline; no tick yet
    Site(played, tmp_path / "late").render()
    text = page(tmp_path / "late", "games/1/index.html").text
    assert "Deadline: 2026-11-27 12:00 UTC." in text
    assert deadlines(page(tmp_path / "late", "index.html"))[0] == "2026-11-27T12:00:00Z"
    assert "in 0 seconds" not in text and "in any moment" not in text


def test_a_game_page_shows_every_resolved_round_with_prize_and_bids(played, site):
    rows = rounds_table(page(site, "games/1/index.html"))
    assert rows == expected_rounds(played, 1)
    assert [r[0] for r in rows] == ["1", "2"]
    assert rows[0][2:5] == ["K", "K", "Q"] and rows[0][5] == "tie: discarded"
    assert rows[1][2] == "5" and rows[1][3].endswith("*") and rows[1][4].endswith("*")
    header = page(site, "games/1/index.html").table("Prize")["rows"][0]["cells"]
    assert [c["text"] for c in header] == [
        "Round",
        "Prize",
        "alice",
        "bob",
        "carol",
        "Result",
        "Totals (alice · bob · carol)",
    ]
    bots = rounds_table(page(site, "games/2/index.html"))
    assert bots == expected_rounds(played, 2)
    assert bots[0][2].endswith("*") and bots[0][3].endswith("*") and bots[0][4].endswith("~")
    assert rounds_table(page(site, "games/3/index.html")) == expected_rounds(played, 3)
    assert len(expected_rounds(played, 3)) == 13


def test_a_game_page_shows_the_totals_and_an_accessible_inline_chart(played, site):
    parsed = page(site, "games/1/index.html")
    scores = played.table(1).rules.view(played.table(1).state, None)["scores"]
    players = parsed.table("Player")
    assert [int(row["cells"][2]["text"]) for row in players["rows"][1:]] == scores
    (svg,) = parsed.find("svg")
    assert svg["role"] == "img"
    ids = {attrs.get("id") for _, attrs in parsed.tags}
    assert svg["aria-labelledby"] and set(svg["aria-labelledby"].split()) <= ids
    assert ("title", {"id": "chart-title"}) in parsed.tags
    assert "Scores after each round" in parsed.text
    for name, score in zip(["alice", "bob", "carol"], scores, strict=True):
        assert f"{name}: {score} point{'' if score == 1 else 's'} at the end" in parsed.text  # the chart's description
    lines = parsed.find("polyline")
    assert len(lines) == 3
    assert all(len(line["points"].split()) == 3 for line in lines)  # the start and 2 rounds
    # told apart without colour: a dash pattern and a marker shape each
    assert len({line.get("stroke-dasharray") for line in lines}) == 3


def test_pages_load_nothing_from_elsewhere_and_run_only_the_time_left_script(site):
    """No page loads anything from elsewhere; the one script a page may run
    is inline, the one that tells the time left before a deadline (and only
    where a deadline is shown)."""
    scripts = set()
    for name in site_files(site):
        if not name.endswith(".html"):
            continue
        parsed = page(site, name)
        assert not parsed.find("iframe") and not parsed.find("img"), name
        assert all(not attrs for attrs in parsed.find("script")), name  # no src: inline
        text = (site / name).read_text()
        assert text.lower().count("<script") == (1 if deadlines(parsed) else 0), name
        scripts.update(re.findall(r"<script>(.*?)</script>", text, re.S))
        for tag, attrs in parsed.tags:
            assert not any(k.startswith("on") for k in attrs), (name, tag, attrs)
            for key in ("src", "href", "xlink:href"):
                value = attrs.get(key) or ""
                assert not re.match(r"(?:[a-z]+:)?//", value, re.I), (name, tag, value)
                assert not value.lower().startswith("javascript:"), (name, value)
    [script] = scripts  # the same on every page
    assert "time[data-left]" in script and "http" not in script and "fetch" not in script


def test_the_seed_stays_secret_until_the_end_then_is_shown_with_how_to_verify(played, site):
    files = public_text(site)
    for game in (1, 2):
        seed = played.table(game).row["seed"]
        assert all(seed not in text for text in files.values())
        assert played.table(game).row["seed_commitment"] in files[f"games/{game}/index.html"]
        assert json.loads(files[f"games/{game}/record.json"])["seed"] is None
    finished = page(site, "games/3/index.html").text
    row = played.table(3).row
    assert row["seed"] in finished and row["seed_commitment"] in finished
    assert "run referee verify record.json" in finished
    winner = played.status(3)["winner"]
    assert ("There is no winner." in finished) if winner is None else (f"{winner.partition('@')[0]} wins." in finished)
    assert json.loads(files["games/3/record.json"])["seed"] == row["seed"]
    assert "referee verify" not in page(site, "games/1/index.html").text


# -- valid and accessible HTML ---------------------------------------------------------------


def contrast(colour: str, background: str = "#ffffff") -> float:
    def luminance(hex_colour: str) -> float:
        hex_colour = hex_colour.lstrip("#")
        if len(hex_colour) == 3:
            hex_colour = "".join(c * 2 for c in hex_colour)
        channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (0, 2, 4)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    light, dark = sorted((luminance(colour), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_every_page_is_well_formed_and_accessible(site):
    pages = [name for name in site_files(site) if name.endswith(".html")]
    rules = {f"rules/{kind}.html" for kind in ("pure-skill", "bid", "ice", "priority", "bluff")}
    games = {"games/1/index.html", "games/2/index.html", "games/3/index.html"}
    assert set(pages) == {"index.html", "standings.html", *games, "private/index.html", *rules}
    for name in pages:
        text = (site / name).read_text(encoding="utf-8")
        assert text.startswith("<!DOCTYPE html>"), name
        parsed = page(site, name)  # balanced: every non-void element closed, in order
        (html,) = parsed.find("html")
        assert html.get("lang"), name
        assert any(
            m.get("name") == "viewport" and "width=device-width" in m.get("content", "") for m in parsed.find("meta")
        ), name
        assert any(m.get("charset", "").lower() == "utf-8" for m in parsed.find("meta")), name
        assert len(parsed.find("h1")) == 1, name
        levels = [int(tag[1]) for tag, _ in parsed.headings]
        assert levels[0] == 1 and all(b - a <= 1 for a, b in itertools.pairwise(levels)), (name, levels)
        assert parsed.find("title") and all(text for _, text in parsed.headings), name
        for table in parsed.tables:
            headers = [c for row in table["rows"] for c in row["cells"] if c["tag"] == "th"]
            assert headers and all(c["attrs"].get("scope") in ("col", "row") for c in headers), name
            assert table["caption"].strip(), name
            # a wide table scrolls in its own box on a 360 px screen, not the whole page
            assert table["parents"][-1] == "div", name
        for svg in parsed.find("svg"):
            assert svg.get("role") == "img" and svg.get("aria-labelledby"), name
        # colours: text at least 4.5:1 on white, lines at least 3:1
        css = text[text.index("<style>") : text.index("</style>")]
        assert "max-width: 100%" in css and "overflow-x: auto" in css
        for colour in re.findall(r"(?<![-\w])color:\s*(#[0-9a-fA-F]{3,6})", css):
            assert contrast(colour) >= 4.5, (name, colour)
        for _, attrs in parsed.tags:
            if attrs.get("fill", "").startswith("#") and attrs["fill"].lower() not in ("#fff", "#ffffff"):
                assert contrast(attrs["fill"]) >= 4.5, (name, attrs)
            if attrs.get("stroke", "").startswith("#"):
                assert contrast(attrs["stroke"]) >= 3, (name, attrs)


def test_the_checker_finds_unbalanced_tags():
    """The well-formedness check above can fail."""
    assert Page("<p><b>bold</p></b>").problems
    assert Page("<div><span></div>").problems
    assert Page("<ul><li>one</ul>").problems
    assert Page("<div/>").problems
    assert not Page('<p>a<br>b <svg><line x1="0"/></svg></p>').problems


# -- feeds and calendars -------------------------------------------------------------------


def atom(folder: Path, name: str) -> ET.Element:
    root = ET.fromstring((folder / name).read_bytes())
    assert root.tag == f"{ATOM}feed", name
    return root


RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def test_atom_feeds_are_valid_and_the_sites_has_every_game(played, site):
    feeds = [name for name in site_files(site) if name.endswith(".atom")]
    assert set(feeds) == {"feed.atom", "games/1/feed.atom", "games/2/feed.atom", "games/3/feed.atom"}
    for name in feeds:
        root = atom(site, name)
        for field in ("id", "title", "updated"):
            assert (root.findtext(f"{ATOM}{field}") or "").strip(), (name, field)
        assert root.find(f"{ATOM}author/{ATOM}name") is not None
        entries = root.findall(f"{ATOM}entry")
        assert entries, name
        updated = []
        for entry in entries:
            for field in ("id", "title", "updated"):
                assert (entry.findtext(f"{ATOM}{field}") or "").strip(), (name, field)
            assert RFC3339.fullmatch(entry.findtext(f"{ATOM}updated"))
            assert entry.find(f"{ATOM}link").get("href")
            updated.append(entry.findtext(f"{ATOM}updated"))
        ids = [e.findtext(f"{ATOM}id") for e in entries]
        assert len(set(ids)) == len(ids), name
        assert updated == sorted(updated, reverse=True), name  # newest first
        assert root.findtext(f"{ATOM}updated") == updated[0]
    everything = [e.findtext(f"{ATOM}id") for e in atom(site, "feed.atom").findall(f"{ATOM}entry")]
    for game in (1, 2, 3):
        assert any(f":game:{game}:" in entry for entry in everything), game
        own = [e.findtext(f"{ATOM}id") for e in atom(site, f"games/{game}/feed.atom").findall(f"{ATOM}entry")]
        assert set(own) <= set(everything)
    assert not any(":game:4:" in entry for entry in everything)
    titles = [e.findtext(f"{ATOM}title") for e in atom(site, "games/3/feed.atom").findall(f"{ATOM}entry")]
    assert len(titles) == 1 + 13 + 1 and titles[0].startswith("Game 3 is over")
    assert titles[-1] == "Game 3 begins"
    one = [e.findtext(f"{ATOM}title") for e in atom(site, "games/1/feed.atom").findall(f"{ATOM}entry")]
    assert one[0].startswith("Game 1, Round 2 of 13: ") and "Round 3" not in " ".join(one)


def test_the_sites_feed_keeps_every_games_end_and_the_newest_100_other_entries(config, clock, tmp_path):
    """Eleven finished games have 165 entries: the site's feed shows each
    game's end and the newest 100 others; a render after one more game
    writes the very feed a full render does; the render state keeps no
    entry that cannot come back."""
    engine = Engine(Store(config.database), config, clock)
    for _ in range(10):
        clock.advance(minutes=1)
        engine.new_game("pure-skill", [], bots=3)
    site = Site(engine, tmp_path / "site")
    site.render()
    clock.advance(minutes=1)
    engine.new_game("pure-skill", [], bots=3)
    site.render()
    entries = [e.findtext(f"{ATOM}id") for e in atom(tmp_path / "site", "feed.atom").findall(f"{ATOM}entry")]
    ends = [e for e in entries if e.endswith(":end")]
    assert len(ends) == 11 and len(entries) - len(ends) == 100
    assert any(":game:11:" in e for e in entries if e not in ends)  # the newest game's rounds
    state = json.loads((tmp_path / "site" / ".render-state.json").read_text())
    assert sum(len(game["entries"]) for game in state.values()) == len(entries)
    Site(engine, tmp_path / "full").render(force=True)
    assert (tmp_path / "site" / "feed.atom").read_bytes() == (tmp_path / "full" / "feed.atom").read_bytes()


def resolve_links(site: Path, name: str) -> list[tuple[str, str]]:
    """(rel, the site path each link of a feed leads to), as a reader resolves it."""
    url = f"https://games.example/{name}"
    root = atom(site, name)
    base = urljoin(url, root.get("{http://www.w3.org/XML/1998/namespace}base") or "")
    found = [(link.get("rel"), urljoin(base, link.get("href"))) for link in root.iter(f"{ATOM}link")]
    return [(rel, target.split("#")[0].removeprefix("https://games.example/")) for rel, target in found]


def test_a_games_feed_links_lead_to_its_page(site):
    for game in (1, 2, 3):
        links = resolve_links(site, f"games/{game}/feed.atom")
        assert ("self", f"games/{game}/feed.atom") in links  # the feed itself
        for rel, target in links:
            if rel != "self":
                assert rel == "alternate" and target == f"games/{game}/", target
                assert (site / target / "index.html").is_file()


def test_the_sites_feed_entries_lead_to_the_game_pages(site):
    links = resolve_links(site, "feed.atom")
    assert links[1] == ("self", "feed.atom")
    entries = links[2:]
    assert entries and all(re.fullmatch(r"games/[123]/", target) for _, target in entries)


def test_the_sites_feed_alternate_link_leads_to_the_index(site):
    rel, target = resolve_links(site, "feed.atom")[0]
    assert rel == "alternate"
    assert target in ("", "index.html"), target


def test_the_deadline_calendar_is_icalendar_with_crlf(played, site):
    for game in (1, 2, 3):
        data = (site / f"games/{game}/deadlines.ics").read_bytes().rstrip(b"\r\n")  # the end: see below
        assert b"\n" not in data.replace(b"\r\n", b"") and b"\r" not in data.replace(b"\r\n", b"")
        lines = data.decode("utf-8").split("\r\n")  # CRLF line ends only
        assert lines[0] == "BEGIN:VCALENDAR" and lines[-1] == "END:VCALENDAR"
        assert {"VERSION:2.0"} <= set(lines) and any(line.startswith("PRODID:") for line in lines)
        assert all(len(line.encode()) <= 75 for line in lines)
        events = "\r\n".join(lines).split("BEGIN:VEVENT")[1:]
        assert len(events) == len(played.table(game).phases)
        uids = []
        for event in events:
            fields = dict(line.split(":", 1) for line in event.split("\r\n") if ":" in line)
            assert {"UID", "DTSTAMP", "DTSTART", "SUMMARY"} <= set(fields)
            assert re.fullmatch(r"\d{8}T\d{6}Z", fields["DTSTART"])
            uids.append(fields["UID"])
        assert len(set(uids)) == len(uids)
    text = (site / "games/1/deadlines.ics").read_bytes().decode().split("\r\n")
    (opens,) = [i for i, line in enumerate(text) if line.startswith("SUMMARY:") and "closes" in line]
    dtstart = next(line for line in reversed(text[:opens]) if line.startswith("DTSTART:"))
    deadline = played.table(1).open_phase["deadline"]
    assert dtstart == "DTSTART:" + from_iso(deadline).strftime("%Y%m%dT%H%M%SZ") == "DTSTART:20261127T120000Z"
    assert "Round 3 of 13" in text[opens]
    assert not any("closes" in line for line in (site / "games/3/deadlines.ics").read_bytes().decode().split("\r\n"))


def test_a_feed_title_is_escaped_once_and_a_calendar_text_as_icalendar_escapes(engine, clock, tmp_path):
    """A player named o'brien&co reads as o'brien&co in a feed reader (the
    title was once escaped twice, as o&#39;brien&amp;co); a calendar's text
    escapes commas and semicolons as RFC 5545 says, not as HTML; a resolved
    phase is dated when it was resolved, not at its deadline."""
    odd = "o'brien&co@example.org"
    engine.new_game("pure-skill", [odd, BOB, CAROL], deadline=timedelta(days=3))
    bid(engine, odd, max(hand(engine, 1, 0)))
    for player in (BOB, CAROL):
        bid(engine, player, lowest(engine, player))
    clock.advance(hours=1)
    engine.tick()  # round 1 resolved an hour after it opened, two days and more before its deadline
    Site(engine, tmp_path / "site").render()
    for name in ("feed.atom", "games/1/feed.atom"):
        titles = [e.findtext(f"{ATOM}title") for e in atom(tmp_path / "site", name).findall(f"{ATOM}entry")]
        assert any(title.startswith("Game 1, Round 1 of 13: o'brien&co takes the ") for title in titles), titles
        assert not any("&#39;" in title or "&amp;" in title for title in titles)
    lines = (tmp_path / "site" / "games/1/deadlines.ics").read_bytes().decode().split("\r\n")
    resolved = lines.index("SUMMARY:Game 1: Round 1 of 13 resolved")
    dtstart = next(line for line in reversed(lines[:resolved]) if line.startswith("DTSTART:"))
    phase = engine.table(1).phases[0]
    assert dtstart == "DTSTART:" + from_iso(phase["resolved_at"]).strftime("%Y%m%dT%H%M%SZ")
    assert phase["resolved_at"] < phase["deadline"]
    from referee.site.render import _ics_text

    assert _ics_text("a, b; c\\d\ne") == "a\\, b\\; c\\\\d\\ne"


def test_feeds_and_calendars_read_right_in_real_parsers(played, site):
    """What a feed reader (feedparser) and a calendar (icalendar) make of
    them: well formed, every entry titled and linked, each feed pointing at
    itself, and the calendar's events as written."""
    import feedparser
    import icalendar

    for name in ("feed.atom", "games/1/feed.atom", "games/3/feed.atom"):
        served = {"content-location": f"https://x.test/{name}", "content-type": "application/atom+xml"}
        feed = feedparser.parse((site / name).read_bytes(), response_headers=served)
        assert not feed.bozo, (name, feed.get("bozo_exception"))
        assert feed.entries and all(entry.title and entry.link for entry in feed.entries)
        assert [link.href for link in feed.feed.links if link.rel == "self"] == [f"https://x.test/{name}"]
    for game in (1, 3):
        calendar = icalendar.Calendar.from_ical((site / f"games/{game}/deadlines.ics").read_bytes())
        events = list(calendar.walk("VEVENT"))
        table = played.table(game)
        assert len(events) == len(table.phases)
        for event, phase in zip(events, table.phases, strict=True):
            assert phase["label"] in str(event["SUMMARY"])
            moment = phase["resolved_at"] or phase["deadline"]
            assert event.decoded("DTSTART") == from_iso(moment)


def test_the_calendars_last_line_ends_with_crlf(site):
    data = (site / "games/1/deadlines.ics").read_bytes()
    assert data.endswith(b"END:VCALENDAR\r\n")


# -- privacy, at every step of a game --------------------------------------------------------

PUBLIC_SUBJECTS = [  # the mail every player of a game gets alike (_announce)
    re.compile(r"A Game of Pure Skill begins"),  # pure-skill/start
    re.compile(r"Round \d+ of 13: (?:\S+ takes the |tie, the )"),  # pure-skill/round
    re.compile(r"Game over: "),  # pure-skill/final
    re.compile(r"\S+ has left game \d+$"),  # left
    re.compile(r"deadline extended to"),  # extended
]
PRIVATE_SUBJECTS = [  # the mail to one player about their own seat
    re.compile(r"Round \d+ of 13: the prize is the "),  # pure-skill/prompt
    re.compile(r"^Re: "),  # reply (answers to a player's mail)
    re.compile(r"reminder, .* left to move"),  # reminder
    re.compile(r"You have left game"),  # resigned
    re.compile(r"not accepted"),  # forged
]


_READ: dict[bytes, tuple[str, str] | None] = {}  # a queued mail's raw bytes -> (subject, body) if public


def public_mail(engine: Engine) -> list[tuple[str, str]]:
    """(subject, body) of every public mail; every mail queued must be one or the other kind."""
    found = []
    for row in engine.store.outbox(None):
        if row["raw"] not in _READ:
            subject = str(email.message_from_bytes(row["raw"], policy=policy.default)["Subject"])
            public = any(p.search(subject) for p in PUBLIC_SUBJECTS)
            private = any(p.search(subject) for p in PRIVATE_SUBJECTS)
            assert public != private, f"cannot tell whether {subject!r} is public"
            _READ[row["raw"]] = (subject, body_of(row["raw"])) if public else None
        if _READ[row["raw"]] is not None:
            found.append(_READ[row["raw"]])
    return found


def check_public_mail(engine: Engine) -> None:
    steps = {step.number: step for step in engine.table(1).replay.steps}
    for subject, body in public_mail(engine):
        assert "Your hand" not in body and "To bid, reply" not in body, subject
        assert not re.search(r"Your (?:bid|move)", body), subject
        match = re.search(r"Round (\d+) of 13: (?!the prize)", subject)
        if match:  # a round's result: its own bids, the round being resolved
            event = steps[int(match[1])].events[0]
            listed = re.search(r"The bids:\n(.*?)\n\n", body, re.S)[1].splitlines()
            assert [line.split()[1] for line in listed] == [card_name(b) for b in event["bids"]]
        elif "Game over" not in subject:
            assert "The bids:" not in body and "bids:" not in body.lower(), subject


def comparable(files: dict[str, bytes]) -> dict[str, bytes]:
    """Files without what only says when they were written."""
    drop = re.compile(rb"<p>Written .*? by the referee.*?</p>|DTSTAMP:\d{8}T\d{6}Z")
    return {name: drop.sub(b"", data) for name, data in files.items() if name != STATE_FILE}


def check_site(engine: Engine, folder: Path) -> None:
    """What the site may show of game 1 now: resolved phases in full, of the
    open phase only who has moved."""
    table = engine.table(1)
    resolved = [p["number"] for p in table.phases if p["resolved_at"]]
    record = json.loads((folder / "games/1/record.json").read_text())
    assert [p["number"] for p in record["phases"]] == resolved
    for entry in record["phases"]:
        final = engine.store.final_moves(1, entry["number"])
        assert {m["seat"]: m["move"] for m in entry["moves"]} == {s: m["move"] for s, m in final.items()}
    texts = public_text(folder)
    game_page = page(folder, "games/1/index.html")
    assert len(rounds_table(game_page) if resolved else []) == len(resolved)
    names = ["alice", "bob", "carol"]
    phase = table.open_phase
    if phase is not None:
        assert phase["number"] not in resolved
        waiting = table.waiting_for(phase)
        match = re.search(r"Moved: (.*?)\. Still to move: (.*?)\. What anyone moved stays secret", game_page.text)
        assert match, game_page.text
        assert match[1] == (", ".join(names[s] for s in phase["movers"] if s not in waiting) or "nobody yet")
        assert match[2] == (", ".join(names[s] for s in waiting) or "nobody")
    else:
        assert "Now:" not in game_page.text
    for name, text in texts.items():
        if name.endswith((".html", ".atom", ".ics")):
            assert not BID_TEXT.search(text), (name, BID_TEXT.search(text)[0])  # cards only, never a move's text
            assert "hand" not in text.lower(), name
        if table.row["state"] != "finished":
            assert table.row["seed"] not in text, name
        for seat in range(3):
            cards = hand(engine, 1, seat)
            if len(cards) >= 3 and table.row["state"] != "finished":
                assert " ".join(card_name(c) for c in cards) not in text, (name, seat)


def different_secret(engine: Engine) -> bool:
    """Change every move made so far in game 1's open phase to another card
    the seat holds, directly in the store; False if there is none to change."""
    table = engine.table(1)
    phase = table.open_phase
    changed = False
    if phase is None:
        return False
    for seat, move in engine.store.final_moves(1, phase["number"]).items():
        others = [c for c in hand(engine, 1, seat) if f"bid {card_name(c)}" != move["move"]]
        if others:
            engine.store.add_move(
                game_id=1,
                phase=phase["number"],
                seat=seat,
                move=f"bid {card_name(others[0])}",
                source=move["source"],
                message_key=None,
                received_at=move["received_at"],
                recorded_at=move["recorded_at"],
            )
            changed = True
    return changed


_SITES: dict[str, Site] = {}


def reused_site(key: str, engine: Engine, folder: Path) -> Site:
    """A Site for ``engine`` writing to ``folder``, reusing the Jinja
    environment (its compiled templates) of the previous example."""
    site = _SITES.get(key)
    if site is None:
        site = _SITES[key] = Site(engine, folder)
    site.records, site.folder = engine, folder
    return site


step_strategy = st.one_of(
    st.tuples(st.just("bid"), st.integers(0, 2), st.integers(0, 12)),
    st.tuples(st.just("all"), st.integers(0, 12), st.integers(0, 12)),
    st.tuples(st.just("wait"), st.integers(1, 80), st.just(0)),
    st.tuples(st.just("resign"), st.integers(0, 2), st.just(0)),
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step_strategy, min_size=1, max_size=24))
def test_nothing_private_reaches_the_site_or_public_mail_at_any_step(steps):
    """After every bid, change of bid, resignation and deadline: the site and
    the public mail show the resolved rounds in full and of the open round
    only who has moved; two games that differ only in the open round's bids
    give the very same site; and the incremental site is the one a full
    render would write."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        clock = FakeClock()
        config = Config(  # one secret key: the twin's seats have the same own calendars; each round's result
            # alike to everyone (NOTIFY EVERY): public mail, whose copies are told from private by subject (a
            # receipt folded in at TURNS is its reader's own: test_notify.py)
            address=REFEREE,
            database=root / "unused.db",
            reminder=None,
            outage_gap=None,
            secret_key=b"one key",
            notify=Notify.EVERY,
        )
        engine = Engine(Store(":memory:"), config, clock)
        engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
        incremental = reused_site("incremental", engine, root / "site")
        full = reused_site("full", engine, root / "full")
        for kind, a, b in [("start", 0, 0), *steps]:
            table = engine.table(1)
            number = table.open_phase["number"] if table.open_phase else None
            if kind == "bid" and number and table.human(a):
                cards = hand(engine, 1, a)
                bid(engine, PLAYERS[a], cards[b % len(cards)])
            elif kind == "all" and number:
                for seat in table.waiting_for(table.open_phase):
                    if table.human(seat) and engine.table(1).open_phase["number"] == number:
                        cards = hand(engine, 1, seat)
                        bid(engine, PLAYERS[seat], cards[(a + b * seat) % len(cards)])
            elif kind == "wait":
                clock.advance(hours=a)
                engine.tick()
            elif kind == "resign" and number and table.human(a):
                engine.resign(1, PLAYERS[a])
            incremental.render()
            check_site(engine, root / "site")
            check_public_mail(engine)
            assert not temporary_files(root)
            full.render(force=True)
            assert comparable(site_files(root / "site")) == comparable(site_files(root / "full"))
            other = Engine(Store(":memory:"), config, clock)  # the same game, other secret bids
            engine.store.db.conn.backup(other.store.db.conn)
            if different_secret(other):
                reused_site("twin", other, root / "twin").render(force=True)
                assert comparable(site_files(root / "twin")) == comparable(site_files(root / "full"))
                assert public_mail(other) == public_mail(engine)


# -- incremental and atomic ---------------------------------------------------------------


def test_a_render_with_nothing_changed_writes_nothing(played, site):
    before = stats(site)
    report = Site(played, site).render()
    assert report.written == []
    assert (report.games_rendered, report.games_unchanged) == (0, 4)
    assert stats(site) == before
    assert not temporary_files(site)


def test_a_move_rewrites_only_its_games_files_and_the_index(played, site, tmp_path):
    before = stats(site)
    old_two = site_files(site)
    bid(played, CAROL, lowest(played, CAROL))  # game 1; the clock stands still
    report = Site(played, site).render()
    # A move that resolves nothing changes the game's page (who has moved),
    # not its record, feed or calendars: those are not written again.
    assert set(report.written) == {"games/1/index.html", "index.html", "feed.atom"}
    fresh = tmp_path / "fresh"
    Site(played, fresh).render()
    for name in game_files(1) | own_files(played, 1):  # as a fresh render writes them, byte for byte
        assert (site / name).read_bytes() == (fresh / name).read_bytes(), name
    assert report.games_rendered == 1
    after = stats(site)
    for name in game_files(2) | game_files(3):
        assert after[name] == before[name], name
        assert site_files(site)[name] == old_two[name]
    for name in report.written:
        assert after[name] != before[name], name
    assert "Moved: bob, carol. Still to move: alice." in page(site, "games/1/index.html").text
    assert not temporary_files(site)


def test_a_resolved_round_shows_up_in_the_page_and_feeds(played, clock, site):
    for player in (ALICE, CAROL):
        bid(played, player, lowest(played, player))
    Site(played, site).render()
    rows = rounds_table(page(site, "games/1/index.html"))
    assert [r[0] for r in rows] == ["1", "2", "3"] and rows == expected_rounds(played, 1)
    assert "Now: Round 4 of 13" in page(site, "games/1/index.html").text
    titles = [e.findtext(f"{ATOM}title") for e in atom(site, "feed.atom").findall(f"{ATOM}entry")]
    assert any(t.startswith("Game 1, Round 3 of 13: ") for t in titles)
    assert len(json.loads((site / "games/1/record.json").read_text())["phases"]) == 3


def test_passing_time_rewrites_nothing(played, clock, site):
    """No page shows what changes with the clock (the time left before a
    deadline is the reader's browser's): an hour later, with nothing else
    happening, no file is written, not even the render's state."""
    before, contents = stats(site), site_files(site)
    clock.advance(hours=1)
    report = Site(played, site).render()
    assert report.written == [] and (report.games_rendered, report.games_unchanged) == (0, 4)
    assert stats(site) == before and site_files(site) == contents


def test_force_rewrites_every_file(played, site):
    before = stats(site)
    report = Site(played, site).render(force=True)
    pages = {"index.html", "feed.atom", "standings.html"}
    expected = pages.union(*(game_files(g) | own_files(played, g) for g in (1, 2, 3)))
    assert sorted(report.written) == sorted(expected)
    after = stats(site)
    assert all(after[name][0] != before[name][0] for name in expected)  # each file replaced by a new one
    assert not temporary_files(site)


def test_every_file_is_written_whole_and_renamed_into_place(played, tmp_path, monkeypatch):
    """Every file of the site appears by a rename of a temporary file in its own folder."""
    renamed = []
    real_replace = os.replace

    def replace(source, target):
        source, target = Path(source), Path(target)
        assert source.parent == target.parent and source.name.startswith(".") and source.name.endswith(".tmp")
        renamed.append(target.relative_to(tmp_path / "site").as_posix())
        return real_replace(source, target)

    monkeypatch.setattr("referee.site.render.os.replace", replace)
    report = Site(played, tmp_path / "site").render()
    assert set(report.written) <= set(renamed)
    assert set(renamed) == set(site_files(tmp_path / "site"))


def test_a_crash_while_renaming_keeps_the_previous_file_and_no_temporary_one(played, site, monkeypatch):
    previous = site_files(site)
    bid(played, CAROL, lowest(played, CAROL))
    real_replace = os.replace

    def failing(source, target):
        if str(target).endswith("games/1/index.html"):
            raise OSError(28, "No space left on device")
        return real_replace(source, target)

    with monkeypatch.context() as patch:
        patch.setattr("referee.site.render.os.replace", failing)
        with pytest.raises(OSError):
            Site(played, site).render()
    assert (site / "games/1/index.html").read_bytes() == previous["games/1/index.html"]  # whole, not half written
    assert not temporary_files(site)
    assert (site / STATE_FILE).read_bytes() == previous[STATE_FILE]
    report = Site(played, site).render()  # the next render finishes the job
    assert set(report.written) >= {"games/1/index.html", "index.html", "feed.atom"}
    assert "Moved: bob, carol." in page(site, "games/1/index.html").text


# -- the command ---------------------------------------------------------------------------


@pytest.fixture
def cfg(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv("REFEREE_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "referee.toml"
    path.write_text('[referee]\naddress = "referee@example.org"\ndatabase = "games.db"\n')
    return path


def test_render_without_a_folder_is_a_usage_error(cfg, clock, capsys):
    assert (
        main(["--config", str(cfg), "new", "pure-skill", *[x for p in PLAYERS for x in ("--player", p)]], clock=clock)
        == 0
    )
    capsys.readouterr()
    assert main(["--config", str(cfg), "render"], clock=clock) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "referee: say where the site goes: --dir DIR, or site_dir in [referee]\n"


def test_render_writes_the_site_to_dir_or_site_dir(cfg, clock, capsys, tmp_path):
    assert (
        main(["--config", str(cfg), "new", "pure-skill", *[x for p in PLAYERS for x in ("--player", p)]], clock=clock)
        == 0
    )
    capsys.readouterr()
    folder = tmp_path / "public"
    assert main(["--config", str(cfg), "render", "--dir", str(folder)], clock=clock) == 0
    out = capsys.readouterr().out
    # 5 of them the rules pages, 3 the players' own calendars, one private/index.html and the standings
    assert out == f"{folder}: 1 game(s) written, 0 unchanged, 16 file(s)\n"
    assert (folder / "index.html").is_file() and (folder / "games/1/record.json").is_file()
    assert main(["--config", str(cfg), "render", "--dir", str(folder)], clock=clock) == 0
    assert capsys.readouterr().out == f"{folder}: 0 game(s) written, 1 unchanged, 0 file(s)\n"
    assert main(["--config", str(cfg), "render", "--dir", str(folder), "--force"], clock=clock) == 0
    assert capsys.readouterr().out == f"{folder}: 1 game(s) written, 0 unchanged, 10 file(s)\n"
    configured = tmp_path / "configured"
    cfg.write_text(cfg.read_text() + f'site_dir = "{configured}"\n')
    assert main(["--config", str(cfg), "render"], clock=clock) == 0
    assert capsys.readouterr().out.startswith(f"{configured}: 1 game(s) written")
    assert (configured / "games/1/index.html").is_file()


# -- escaping ------------------------------------------------------------------------------

NASTY = '<script>alert(1)</script> & "quotes" </h1>'


def test_a_games_name_is_shown_as_text_everywhere(engine, clock, tmp_path):
    engine.new_game("pure-skill", PLAYERS, name=NASTY)
    for player in PLAYERS:
        bid(engine, player, 9)
    folder = tmp_path / "site"
    Site(engine, folder).render()
    texts = public_text(folder)
    for name, text in texts.items():
        if not name.endswith(".json"):  # JSON holds the name as a string; nothing renders it
            assert "alert(1)</script>" not in text.lower() and '</h1>"' not in text and "</h1>”" not in text, name
    for name in ("index.html", "games/1/index.html"):
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in texts[name]
        parsed = page(folder, name)  # still balanced: the name closed nothing
        assert NASTY in parsed.text, name
        assert parsed.find("script") == [{}]  # the time left's script alone
        assert texts[name].lower().count("<script") == 1
    (h1,) = [text for tag, text in page(folder, "games/1/index.html").headings if tag == "h1"]
    assert h1 == f"Game 1: Game of Pure Skill, “{NASTY}”"
    for name in ("feed.atom", "games/1/feed.atom"):
        root = atom(folder, name)  # still well-formed XML
        assert not [e for e in root.iter() if "script" in e.tag]
    record = json.loads(texts["games/1/record.json"])
    assert record["game"]["name"] == NASTY
    assert "BEGIN:VCALENDAR" in texts["games/1/deadlines.ics"] and "<" not in texts["games/1/deadlines.ics"]


def test_players_sharing_a_local_part_are_told_apart_without_their_full_address(engine, tmp_path):
    engine.new_game("pure-skill", ["sam@one.example", "sam@two.example", CAROL])
    folder = tmp_path / "site"
    Site(engine, folder).render()
    players = page(folder, "games/1/index.html").table("Player")
    names = [row["cells"][1]["text"] for row in players["rows"][1:]]
    assert names == ["sam (one.example)", "sam (two.example)", "carol"]
    assert all("sam@" not in text for text in public_text(folder).values())


def test_the_chart_tells_eight_players_apart_and_keeps_its_numbers_readable():
    """Auction takes 8 players: each line gets its own colour, dash pattern
    and marker, and at most ten numbers run across however many rounds there
    are (tests/unit/test_site_chart.py checks the drawn chart)."""
    names = [f"player{n}" for n in range(8)]
    phases = [{"label": f"Round {r + 1} of 14", "events": [{"scores": [0] * 7 + [r]}]} for r in range(14)]
    chart = score_chart(names, phases)
    assert len({(line["colour"], line["dash"], line["marker"]) for line in chart["lines"]}) == 8
    assert len(chart["xticks"]) <= 10 and chart["count"] == 14
    quiet = score_chart(names, [{"label": "Round 1 of 14", "events": [{"type": "play"}]}, *phases[1:4]])
    assert quiet["count"] == 3  # a round without scores adds no point


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=300))
def test_a_long_calendar_line_is_folded_at_75_octets_and_unfolds_to_itself(text):
    from referee.site.render import _fold_ics

    folded = _fold_ics(f"SUMMARY:{text}\r\nEND:VEVENT\r\n")
    assert all(len(line.encode()) <= 75 for line in folded.split("\r\n"))
    assert folded.replace("\r\n ", "") == f"SUMMARY:{text}\r\nEND:VEVENT\r\n"


def test_the_sites_feed_tells_each_auction_once_and_a_games_feed_every_turn(config, clock, tmp_path):
    """An Ice Ice Baby game of bots plays dozens of turns: its own feed has
    an entry for each, the site's one for each auction (the auction's last
    turn, which says who won it), with the start and the end; every entry
    has content a feed reader shows (the scores, the players)."""
    import feedparser

    engine = Engine(Store(config.database), config, clock)
    game = engine.new_game("ice", [], bots=3)
    Site(engine, tmp_path / "site").render()
    site = tmp_path / "site"
    own = feedparser.parse((site / f"games/{game}/feed.atom").read_bytes()).entries
    shared = feedparser.parse((site / "feed.atom").read_bytes()).entries
    table = engine.table(game)
    auctions = {re.match(r"Auction \d+", p["label"])[0] for p in table.phases}
    assert len(own) == len(table.phases) + 2  # every turn, the start and the end
    assert len(shared) == len(auctions) + 2 < len(own)
    middle = [e for e in shared if ", Auction " in e.title]
    assert all("wins the auction" in e.title for e in middle[1:]), [e.title for e in middle]
    for entry in own + shared:
        assert entry.content[0].value.strip(), entry.title
    [end] = [e for e in own if "is over" in e.title]
    assert end.content[0].value.startswith("Final scores: ")
    turn = next(e for e in own if ", turn " in e.title)
    assert "Scores: " in turn.content[0].value


def test_a_page_says_why_a_bot_with_more_points_did_not_win(config, clock, tmp_path):
    """alice plays two random bots (her own bids random too, at each
    deadline): she wins every game, being its only person, and a page that
    shows a bot ahead of her says why; one that shows none says nothing."""
    engine = Engine(Store(config.database), config, clock)
    noted = []
    for game in range(1, 13):
        engine.new_game("pure-skill", [ALICE], bots=2, deadline=timedelta(days=1))
        while engine.table(game).open_phase is not None:
            clock.advance(days=2)
            engine.tick()
        Site(engine, tmp_path / "site").render()
        text = page(tmp_path / "site", f"games/{game}/index.html").text
        scores = engine.table(game).rules.view(engine.table(game).state, None)["scores"]
        ahead = [f"bot {seat + 1} ({score})" for seat, score in enumerate(scores) if seat and score > scores[0]]
        assert "alice wins." in text
        assert ("scored more, but a seat a random bot plays" in text) == bool(ahead)
        if ahead:
            assert f"{', '.join(ahead)} scored more" in text
            noted.append(game)
    assert noted  # two bots outscore alice's random bids in most games


def test_a_player_who_left_is_a_bot_from_a_phase_named_as_the_mails_name_it(engine, clock, tmp_path):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    for player in PLAYERS:
        bid(engine, player, lowest(engine, player))
    engine.resign(1, BOB)
    Site(engine, tmp_path / "site").render()
    text = page(tmp_path / "site", "games/1/index.html").text
    assert "bob (left; a random bot from Round 2 of 13)" in text


def test_every_game_page_links_to_its_rules_and_rulings(played, site):
    docs = Path(__file__).parents[2] / "docs"
    for kind, rules, rulings in (
        ("pure-skill", "pure-skill.txt", "pure-skill.md"),
        ("bid", "bid-piecepack.txt", "bid.md"),
        ("ice", "ice-ice-baby.txt", "ice-ice-baby.md"),
        ("priority", "priority-auction.txt", "priority-auction.md"),
        ("bluff", "bluff-auction.txt", "bluff-auction.md"),
    ):
        text = page(site, f"rules/{kind}.html").text
        first_rule = next(line for line in (docs / "rules" / rules).read_text().splitlines() if line.strip())
        heading = (docs / "games" / rulings).read_text().splitlines()[0].lstrip("# ")
        assert first_rule.strip() in text and heading in text, kind
    assert 'href="../../rules/pure-skill.html"' in (site / "games/1/index.html").read_text()
    rules = (site / "rules/bid.html").read_text()
    assert "B8" in rules  # a ruling of Bid!'s
    again = Site(played, site).render()
    assert not [name for name in again.written if name.startswith("rules/")]  # written once
