"""Each seat's own calendar (issue 33, item 5): a private iCalendar feed of
its deadlines and the referee's reminders, at a name on the site only its
player is told (in the start mail), linked from no public page, following
the deadline as it moves, and taken down when the seat changes hands.

Played as a player lives it: the start mail read, the site written as the
runner writes it, the calendar read as a calendar program reads it."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import icalendar
import pytest
from conftest import PLAYERS, Mailbox, send, to_deadline
from test_keeping import pure as _pure
from test_keeping import turns as _turns

from referee.engine import Engine
from referee.engine.keeping import SHELL
from referee.site.render import Site
from referee.store import Store
from referee.timeutil import from_iso

ALICE, BOB, CAROL = PLAYERS
DAVE = "dave@example.net"
SITE = "https://games.example.org"
_LINK = re.compile(rf"^    ({re.escape(SITE)}/private/[a-z2-7]{{16}}\.ics)$", re.M)


@pytest.fixture
def config(config, tmp_path):
    return replace(config, site_dir=tmp_path / "site", site_url=SITE, reminder=timedelta(days=1))


pure, turns = _pure, _turns  # the fixtures


def render(engine: Engine) -> Path:
    folder = engine.config.site_dir
    Site(engine, folder).render()
    return folder


def link_in(mail: dict) -> str:
    [link] = _LINK.findall(mail["body"])
    return link


def own_links(engine: Engine) -> dict[str, str]:
    """Each player's calendar, as their start mail links it."""
    return {m["to"]: link_in(m) for m in Mailbox(engine).new() if "begins" in m["subject"]}


def read(folder: Path, link: str) -> tuple[bytes, list[icalendar.Event]]:
    data = (folder / link.removeprefix(f"{SITE}/")).read_bytes()
    return data, list(icalendar.Calendar.from_ical(data).walk("VEVENT"))


def by_uid(events: list[icalendar.Event]) -> dict[str, icalendar.Event]:
    return {str(event["UID"]): event for event in events}


def test_the_start_mail_links_each_seats_own_calendar_of_its_deadlines_and_reminders(pure, clock):
    links = own_links(pure)
    assert set(links) == set(PLAYERS) and len(set(links.values())) == 3
    folder = render(pure)
    data, events = read(folder, links[ALICE])
    # iCalendar as RFC 5545 writes it: CRLF line ends only, lines folded at 75 octets.
    assert data.endswith(b"END:VCALENDAR\r\n") and b"\n" not in data.replace(b"\r\n", b"")
    assert all(len(line) <= 75 for line in data.split(b"\r\n"))
    [event] = events
    deadline = from_iso(pure.status(1)["phase"]["deadline"])
    assert event.decoded("DTSTART") == deadline and "DTSTAMP" in event
    assert str(event["SUMMARY"]) == "Game 1 (Game of Pure Skill): Round 1 of 13, your deadline"
    [alarm] = event.walk("VALARM")
    assert alarm.decoded("TRIGGER") == deadline - timedelta(days=1)  # when the referee reminds
    # Round 1 played: it is dated when it closed, and round 2's deadline is the one ahead.
    first_uid = str(event["UID"])
    for player, card in zip(PLAYERS, (7, 6, 5), strict=True):
        send(pure, clock, player, f"bid {card}")
    _, events = read(render(pure), links[ALICE])
    closed, ahead = events
    assert str(closed["UID"]) == first_uid and "Round 1 of 13 closed" in str(closed["SUMMARY"])
    assert closed.decoded("DTSTART") == from_iso(pure.table(1).phases[0]["resolved_at"])
    assert "Round 2 of 13, your deadline" in str(ahead["SUMMARY"]) and str(ahead["UID"]) != first_uid
    # Nothing private: no card, no bid, no address.
    text = data.decode() + "".join(str(e.to_ical()) for e in events)
    assert "bid" not in text.lower() and "@example.org" not in text.replace("@1.example.org", "")


def test_a_turn_based_seats_calendar_has_only_the_turns_it_moves_in(turns, clock):
    links = own_links(turns)
    for _ in range(6):  # six turns, each at its deadline
        to_deadline(turns, clock)
        turns.tick()
    folder = render(turns)
    table = turns.table(1)
    for seat, player in enumerate(PLAYERS):
        _, events = read(folder, links[player])
        mine = [p for p in table.phases if seat in p["movers"]]
        assert [str(e["SUMMARY"]).split("): ")[1] for e in events] == [
            f"{p['label']} closed" if p["resolved_at"] else f"{p['label']}, your deadline" for p in mine
        ]
        assert len({str(e["UID"]) for e in events}) == len(events)
    assert any(seat not in table.open_phase["movers"] for seat in range(3))  # someone waits: no deadline of theirs


def test_the_calendar_follows_an_extended_deadline_under_the_same_uid(pure, clock):
    link = own_links(pure)[BOB]
    [before] = read(render(pure), link)[1]
    pure.extend(1, timedelta(days=2), SHELL, "a wedding")
    [after] = read(render(pure), link)[1]
    assert str(after["UID"]) == str(before["UID"])
    assert after.decoded("DTSTART") - before.decoded("DTSTART") == timedelta(days=2)
    [alarm] = after.walk("VALARM")
    assert alarm.decoded("TRIGGER") == after.decoded("DTSTART") - timedelta(days=1)


def test_no_public_page_links_to_or_lists_a_seats_calendar(pure, clock):
    links = own_links(pure)
    folder = render(pure)
    names = {link.rsplit("/", 1)[1] for link in links.values()}
    tokens = {name.removesuffix(".ics") for name in names}
    written = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert {f"private/{name}" for name in names} <= written
    for name in written - {f"private/{n}" for n in names}:
        text = (folder / name).read_text(encoding="utf-8")
        assert not any(token in text for token in tokens), name  # the state file, the index, every page and feed
        assert "private/" not in text, name
    # A web server that lists folders finds an index page there instead.
    assert "none is listed" in (folder / "private/index.html").read_text()


def test_a_newcomer_gets_a_new_calendar_and_the_old_one_is_taken_down(pure, clock):
    links = own_links(pure)
    folder = render(pure)
    old = folder / links[CAROL].removeprefix(f"{SITE}/")
    assert old.exists()
    box = Mailbox(pure)
    box.new()
    pure.replace(1, CAROL, DAVE, SHELL, "Carol moved away")
    welcome = next(m for m in box.new() if m["to"] == DAVE and "Welcome" in m["subject"])
    new = link_in(welcome)
    assert new != links[CAROL]
    render(pure)
    assert not old.exists()  # Carol's old calendar stops with her seat
    assert read(folder, new)[1] and read(folder, links[ALICE])[1]  # Dave's, and the others' stay
    # A player who resigns: a bot plays the seat, no calendar.
    pure.resign(1, BOB)
    render(pure)
    assert not (folder / links[BOB].removeprefix(f"{SITE}/")).exists()


def test_without_the_sites_address_the_start_mail_gives_the_path_and_without_a_site_nothing(config, clock):
    path_only = Engine(Store(config.database), replace(config, site_url=None), clock)
    path_only.new_game("pure-skill", PLAYERS)
    start = next(m for m in Mailbox(path_only).new() if m["to"] == ALICE and "begins" in m["subject"])
    assert re.search(r"^    private/[a-z2-7]{16}\.ics on the referee's site$", start["body"], re.M)
    no_site = Engine(Store(config.database), replace(config, site_url=None, site_dir=None), clock)
    no_site.new_game("pure-skill", PLAYERS)
    start = next(m for m in Mailbox(no_site).new() if m["to"] == ALICE and "game 2" in m["body"])
    assert "private/" not in start["body"] and "calendar" not in start["body"]
