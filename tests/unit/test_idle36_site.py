"""No work for the passing of time (issue 36, item 3): a game's pages change
only when the game does.  An hour passing rewrites no file; a move, a
moved deadline, a pause, a seat changing hands and a new observer each
rewrite the pages that show them, and only those.  A refresh that finds
nothing changed runs one query, however many games there are."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock, Mailbox, reply
from test_club_watch import watch
from test_site import deadlines, game_files, own_files, page, site_files, stats
from test_sql36_batch import traced

from referee.engine import Engine
from referee.engine.keeping import SHELL
from referee.site.render import Site

ALICE, BOB, CAROL = PLAYERS
DORA, OLIVE = "dora@example.net", "olive@example.net"


@pytest.fixture
def two(engine: Engine) -> Engine:
    """Two running games of the same three players; the second is paused."""
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    engine.pause(2, SHELL, "holidays")
    return engine


def statements(engine: Engine, work: Callable[[], object]) -> list[str]:
    """The SQL statements ``work`` runs on the engine's games.db."""
    with traced(engine.store) as ran:
        work()
    return ran


def test_an_hour_later_the_pages_are_the_same_bytes_and_no_file_is_written(two, clock, tmp_path):
    site = tmp_path / "site"
    Site(two, site).render()
    before, contents = stats(site), site_files(site)
    for _ in range(3):
        clock.advance(hours=1)
        report = Site(two, site).render()
        assert report.written == [] and (report.games_rendered, report.games_unchanged) == (0, 2)
    assert stats(site) == before  # the same inodes and times: nothing was replaced, the state file neither
    assert site_files(site) == contents
    deadline = two.table(1).open_phase["deadline"]
    assert deadlines(page(site, "games/1/index.html")) == [deadline]  # the browser tells the time left from it
    assert deadlines(page(site, "index.html")) == [deadline]  # the paused game shows its pause, no deadline
    assert deadlines(page(site, "games/2/index.html")) == []


def test_a_refresh_that_finds_nothing_changed_runs_one_query_however_many_games(engine, clock, tmp_path):
    site = tmp_path / "site"
    counts = []
    for _ in range(2):
        for _ in range(3):
            engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
        Site(engine, site).render()
        clock.advance(minutes=5)
        counts.append(len(statements(engine, Site(engine, site).refresh)))
    assert counts == [1, 1]


def move(engine: Engine, clock: FakeClock) -> None:
    outcome = engine.ingest(reply(engine, ALICE, "bid 5", game=1, message_id="<idle36-move@example.net>"))
    assert outcome.code == "move", outcome


def extend(engine: Engine, clock: FakeClock) -> None:
    engine.extend(1, timedelta(hours=5), SHELL, "a wedding")


def pause(engine: Engine, clock: FakeClock) -> None:
    engine.pause(1, SHELL, "holidays")


def takeover(engine: Engine, clock: FakeClock) -> None:
    engine.replace(1, BOB, DORA, SHELL, "bob moved abroad")


def observer(engine: Engine, clock: FakeClock) -> None:
    assert watch(engine, clock, Mailbox(engine), OLIVE).code == "done"


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        (move, "Moved: alice."),
        (extend, "Deadline: 2026-11-24 17:00 UTC."),
        (pause, "Paused by the keeper since 2026-11-21 13:00 UTC"),
        (takeover, "dora took over seat 2 from bob"),
        (observer, "Followed by mail by 1 observer"),
    ],
    ids=["move", "extend", "pause", "takeover", "observer"],
)
def test_each_change_to_a_game_rewrites_its_pages_and_the_index_only(two, clock, tmp_path, change, shown):
    site = tmp_path / "site"
    Site(two, site).render()
    before = stats(site)
    clock.advance(hours=1)
    change(two, clock)
    report = Site(two, site).render()
    assert report.games_rendered == 1 and report.games_unchanged == 1
    written = set(report.written)
    assert (
        {"games/1/index.html", "index.html"}
        <= written
        <= game_files(1) | own_files(two, 1) | {"index.html", "feed.atom"}
    )
    # its record, feed and calendars are written only if they changed: each is what a fresh render writes
    Site(two, tmp_path / "fresh").render()
    for name in game_files(1) | own_files(two, 1):
        assert (site / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes(), name
    if change in (move, observer):  # who has moved, who follows: shown on the page alone
        assert written == {"games/1/index.html", "index.html", "feed.atom"}
    else:  # an act: in the record, and moving (or stopping) the deadline in the calendars
        assert {"games/1/record.json", "games/1/deadlines.ics"} | own_files(two, 1) <= written
    after = stats(site)
    if change is takeover:  # dora's own calendar is new, bob's was taken down
        assert len(own_files(two, 1) - set(before)) == 1 and own_files(two, 1) <= written
        assert len([name for name in set(before) - set(after) if name.startswith("private/")]) == 1
    assert all(after[name] == before[name] for name in game_files(2) | own_files(two, 2))
    assert shown in page(site, "games/1/index.html").text
    again = Site(two, site).render()  # and then nothing more
    assert again.written == [] and stats(site) == after


def test_a_page_written_later_is_the_same_as_one_written_now_but_for_its_footer(two, clock, tmp_path):
    """What a page shows does not depend on when it was written: only the
    footer's "Written ..." does (the time left is the browser's)."""
    Site(two, tmp_path / "now").render()
    clock.advance(hours=7, minutes=13)
    Site(two, tmp_path / "later").render()

    def body(folder: Path, name: str) -> str:
        return (folder / name).read_text().split("<footer>")[0]

    for name in ("index.html", "games/1/index.html", "games/2/index.html"):
        assert body(tmp_path / "now", name) == body(tmp_path / "later", name), name
