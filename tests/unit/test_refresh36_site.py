"""The site refresh after a move (issue 36, item 1): of a changed game only
the files that changed are written.  A calendar's DTSTAMP is when its event
last changed (RFC 5545, 3.8.7.2), never the time of the render, so a
calendar whose events did not change is the same file; a move that
resolves nothing renders no calendar, record or feed again."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import icalendar
from conftest import PLAYERS, reply
from test_idle36_site import two  # noqa: F401  (the fixture)
from test_site import game_files, own_files, stats

from referee.engine import Engine
from referee.engine.keeping import SHELL
from referee.site.render import Site

ALICE, BOB, CAROL = PLAYERS


def stamps(path: Path) -> dict[str, str]:
    """Each event's UID and DTSTAMP, as a calendar program reads them."""
    calendar = icalendar.Calendar.from_ical(path.read_bytes())
    return {str(event["UID"]): event.decoded("DTSTAMP").isoformat() for event in calendar.walk("VEVENT")}


def bid(engine: Engine, player: str, number: int) -> None:
    outcome = engine.ingest(reply(engine, player, "bid 5", game=1, message_id=f"<refresh36-{number}@example.net>"))
    assert outcome.code == "move", outcome


def test_a_calendar_written_later_is_the_same_file(two, clock, tmp_path):  # noqa: F811
    Site(two, tmp_path / "now").render()
    clock.advance(hours=5)
    Site(two, tmp_path / "later").render()
    for name in {"games/1/deadlines.ics", "games/2/deadlines.ics"} | own_files(two, 1) | own_files(two, 2):
        assert (tmp_path / "now" / name).read_bytes() == (tmp_path / "later" / name).read_bytes(), name


def test_dtstamp_is_when_the_event_last_changed(two, clock, tmp_path):  # noqa: F811
    site = Site(two, tmp_path / "site")
    opened = two.table(1).open_phase["opened_at"]
    site.render()
    assert set(stamps(tmp_path / "site/games/1/deadlines.ics").values()) == {opened.replace("Z", "+00:00")}
    for number, player in enumerate(PLAYERS):  # round 1 resolves
        clock.advance(minutes=10)
        bid(two, player, number)
    clock.advance(hours=2)
    two.extend(1, timedelta(hours=5), SHELL, "a wedding")  # round 2's deadline moves
    extended = clock().isoformat()
    clock.advance(hours=1)
    site.render()
    resolved = two.table(1).phases[0]["resolved_at"].replace("Z", "+00:00")
    uid = f"game-1-phase-%d@1.{two.config.domain}"
    assert stamps(tmp_path / "site/games/1/deadlines.ics") == {uid % 1: resolved, uid % 2: extended}
    for name in own_files(two, 1):  # each seat's own: the closed round, and the open one's deadline
        assert sorted(stamps(tmp_path / "site" / name).values()) == sorted([resolved, extended])


def test_a_move_that_resolves_nothing_writes_the_games_page_alone(two, clock, tmp_path):  # noqa: F811
    site = Site(two, tmp_path / "site")
    site.render()
    before = stats(tmp_path / "site")
    clock.advance(hours=1)
    bid(two, ALICE, 1)
    report = site.render()
    assert set(report.written) == {"games/1/index.html", "index.html", "feed.atom"}
    after = stats(tmp_path / "site")
    quiet = game_files(1) - {"games/1/index.html"} | own_files(two, 1)
    assert all(after[name] == before[name] for name in quiet)  # not replaced: the same inode and time
    clock.advance(minutes=10)
    bid(two, BOB, 2)
    bid(two, CAROL, 3)  # the round resolves: its record, feed and calendars change
    report = site.render()
    assert game_files(1) | own_files(two, 1) <= set(report.written)


def test_a_deleted_state_file_writes_every_file_again(two, clock, tmp_path):  # noqa: F811
    """Without the state's digests nothing is taken as written already."""
    site = Site(two, tmp_path / "site")
    site.render()
    (tmp_path / "site/.render-state.json").unlink()
    report = site.render()
    assert game_files(1) | own_files(two, 1) | game_files(2) | own_files(two, 2) <= set(report.written)
