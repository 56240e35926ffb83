"""A long game's site grows by its new phase (issue 36, item 4): its older
phases are on history pages of a fixed block, written once when the block
fills (and again at the end); its feed and calendars are a window of the
newest; every link to a phase leads to the page that has it; nothing hidden
is published before the end.  Played with a small block and window, so a
game of a few phases is "long"."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import urljoin

import icalendar
import pytest
from test_site import atom, resolve_links

import referee.record
from referee.config import Config
from referee.engine import Engine
from referee.site.render import Site
from referee.store import Store
from referee.tables import Table, own_calendar

ATOM = "{http://www.w3.org/2005/Atom}"
BLOCK = 4
WINDOW = 3
PHASE_ROW = re.compile(r'<tr id="phase-(\d+)"')
ROW = re.compile(r'(?s)(<tr id="phase-(\d+)".*?</tr>)')  # a phase's row, and its number


@pytest.fixture
def engine(config: Config, clock) -> Engine:
    return Engine(Store(config.database), config, clock)


def start(engine: Engine, kind: str = "pure-skill", players: int = 3) -> int:
    """A game whose players never answer: each tick past the deadline resolves a phase at random."""
    addresses = [f"p{n}@example.org" for n in range(players)]
    return engine.new_game(kind, addresses, deadline=timedelta(hours=1))


def next_phase(engine: Engine, clock) -> None:
    clock.advance(days=1)
    engine.tick()


def resolved(engine: Engine, game: int) -> int:
    return sum(1 for phase in engine.table(game).phases if phase["resolved_at"])


def rows(folder: Path, page: str) -> list[int]:
    return [int(n) for n in PHASE_ROW.findall((folder / page).read_text(encoding="utf-8"))]


def game_files(engine: Engine, game: int) -> set[str]:
    """What a new phase of a game writes: never a history page, nor a record part but the last."""
    own = {path for seat in engine.store.seats(game) if (path := own_calendar(engine.key, seat))}
    base = f"games/{game}"
    return {f"{base}/{name}" for name in ("index.html", "feed.atom", "deadlines.ics", "record.json")} | own


def test_a_long_games_older_phases_are_on_history_pages_and_a_new_phase_writes_only_the_newest(engine, clock, tmp_path):
    game = start(engine)
    site = Site(engine, tmp_path / "site", block=BLOCK, window=WINDOW, past=WINDOW)
    site.render()
    for _ in range(9):  # 9 phases: history-1 (1-4), history-2 (5-8), the game's page 9
        next_phase(engine, clock)
        report = site.render()
    assert resolved(engine, game) == 9
    assert rows(site.folder, f"games/{game}/history-1.html") == [1, 2, 3, 4]
    assert rows(site.folder, f"games/{game}/history-2.html") == [5, 6, 7, 8]
    assert rows(site.folder, f"games/{game}/index.html") == [9]
    assert "games/1/history-2.html" in report.written and "games/1/history-1.html" not in report.written
    page = (site.folder / f"games/{game}/index.html").read_text(encoding="utf-8")
    assert re.search(r'href="history-1.html">Round 1 to Round 4</a> <span[^>]*>phases 1 to 4<', page)
    assert re.search(r'href="history-2.html">Round 5 to Round 8</a> <span[^>]*>phases 5 to 8<', page)
    next_phase(engine, clock)  # phase 10: the game's page and the feeds, no history page
    report = site.render()
    assert set(report.written) == game_files(engine, game) | {"index.html", "feed.atom"}
    assert rows(site.folder, f"games/{game}/index.html") == [9, 10]


def test_a_long_games_feed_and_calendars_hold_a_window_of_the_newest(engine, clock, tmp_path):
    game = start(engine)
    site = Site(engine, tmp_path / "site", block=BLOCK, window=WINDOW, past=WINDOW)
    for _ in range(10):
        next_phase(engine, clock)
        site.render()
    entries = [e.findtext(f"{ATOM}id") for e in atom(site.folder, f"games/{game}/feed.atom").findall(f"{ATOM}entry")]
    assert entries == [f"urn:referee:example.org:game:{game}:phase:{n}" for n in (10, 9, 8)]
    calendar = icalendar.Calendar.from_ical((site.folder / f"games/{game}/deadlines.ics").read_bytes())
    uids = [str(event["UID"]).split("@")[0] for event in calendar.walk("VEVENT")]
    assert uids == [f"game-{game}-phase-{n}" for n in (8, 9, 10, 11)]  # 3 resolved, and the open one
    for seat in engine.store.seats(game):
        own = icalendar.Calendar.from_ical((site.folder / own_calendar(engine.key, seat)).read_bytes())
        numbers = [str(event["UID"]).split("-")[3] for event in own.walk("VEVENT")]
        assert numbers == ["8", "9", "10", "11"]  # (every seat moves in every round of Pure Skill)


def test_every_link_to_a_phase_leads_to_the_page_that_has_it(engine, clock, tmp_path):
    """The game's feed and the site's: each phase's link, resolved as a
    reader's feed reader does, names a page with that phase's row; and an
    entry kept from before its block filled is linked to its history page."""
    game = start(engine)
    site = Site(engine, tmp_path / "site", block=BLOCK, window=WINDOW, past=WINDOW)
    for _ in range(11):
        next_phase(engine, clock)
        site.render()
    for name in (f"games/{game}/feed.atom", "feed.atom"):
        root = atom(site.folder, name)
        base = urljoin(f"https://games.example/{name}", root.get("{http://www.w3.org/XML/1998/namespace}base") or "")
        for link in root.iter(f"{ATOM}link"):
            target = urljoin(base, link.get("href")).removeprefix("https://games.example/")
            if "#phase-" in target:
                page, number = target.split("#phase-")
                assert int(number) in rows(
                    site.folder, page.removesuffix("/") + ("/index.html" if page.endswith("/") else "")
                ), target
    # the site feed still has every round (kept from the renders that made them), each linked where it is now
    titles = [e.findtext(f"{ATOM}title") for e in atom(site.folder, "feed.atom").findall(f"{ATOM}entry")]
    assert len([title for title in titles if "Round" in title]) == 11
    links = [target for _, target in resolve_links(site.folder, "feed.atom")]
    assert f"games/{game}/history-1.html" in links and f"games/{game}/history-2.html" in links
    # the links between the pages
    history = (site.folder / f"games/{game}/history-2.html").read_text(encoding="utf-8")
    assert 'href="history-1.html"' in history and 'href="./"' in history
    assert re.search(r"<strong>Round 5 to Round 8</strong>", history)


def test_a_history_page_shows_what_the_games_page_showed_and_no_more_until_the_end(engine, clock, tmp_path):
    """Priority keeps each card's value hidden until the end (P17): a block's
    rows on its history page are the rows the game's page showed of those
    phases while they were the newest, the seed is not there, and the end
    writes every history page again."""
    game = start(engine, "priority", players=3)
    site = Site(engine, tmp_path / "site", block=BLOCK, window=WINDOW, past=WINDOW)
    shown: dict[int, str] = {}
    for _ in range(3 * BLOCK):
        next_phase(engine, clock)
        site.render()
        page = (site.folder / f"games/{game}/index.html").read_text(encoding="utf-8")
        shown.update({int(n): row for row, n in ROW.findall(page)})
    record = json.loads((site.folder / f"games/{game}/record.json").read_text(encoding="utf-8"))
    assert any(move["move"] is None for phase in record["phases"] for move in phase["moves"])  # hidden moves
    seed = engine.table(game).record_head()["seed"]
    for k in (1, 2):
        history = (site.folder / f"games/{game}/history-{k}.html").read_text(encoding="utf-8")
        found = ROW.findall(history)
        assert [int(n) for _, n in found] == list(range((k - 1) * BLOCK + 1, k * BLOCK + 1))
        for row, number in found:
            assert row == shown[int(number)]
        assert seed and seed not in history
    while engine.table(game).row["state"] == "running":
        next_phase(engine, clock)
    report = site.render()
    pages = {name for name in report.written if "/history-" in name}
    assert pages == {f"games/{game}/history-{k}.html" for k in range(1, len(pages) + 1)} and len(pages) >= 2


def test_a_game_of_a_block_or_less_has_one_page(engine, clock, tmp_path):
    game = start(engine)
    site = Site(engine, tmp_path / "site")  # the referee's block: Pure Skill's 13 rounds fit in it
    while engine.table(game).row["state"] == "running":
        next_phase(engine, clock)
        site.render()
    assert rows(site.folder, f"games/{game}/index.html") == list(range(1, 14))
    assert not list((site.folder / f"games/{game}").glob("history-*"))
    assert "history-" not in (site.folder / f"games/{game}/index.html").read_text(encoding="utf-8")


def test_a_render_makes_only_the_phases_it_writes(engine, clock, tmp_path, monkeypatch):
    """The record's entries made by a render after a new phase of a running
    game are those of the files it writes (the game's page's block, the
    feed's and calendars' windows, the record's last part): bounded, however
    long the game."""
    monkeypatch.setattr(referee.record, "PART_PHASES", BLOCK)
    made: list[int] = []
    record_phases = Table.record_phases  # (Table.record_phase makes its one phase by it too)

    def counted(table: Table, first: int, last: int | None = None) -> list[dict]:
        entries = record_phases(table, first, last)
        made.extend(entry["number"] for entry in entries)
        return entries

    monkeypatch.setattr(Table, "record_phases", counted)
    game = start(engine)
    site = Site(engine, tmp_path / "site", block=BLOCK, window=WINDOW, past=WINDOW)
    site.render()
    for number in range(1, 11):
        next_phase(engine, clock)
        made.clear()
        site.render()
        assert len(made) <= BLOCK + WINDOW, (number, made)
    assert resolved(engine, game) == 10 and engine.table(game).row["state"] == "running"
    # (the end makes them all once: it reveals every move)
