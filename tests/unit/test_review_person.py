"""The new features of issue 33 played as people play them, and their mail
read as people read it: a stand-in who never pressed an unsubscribe button
is not told they did, nor may they spend the seat's time away or move it to
another address; a player at a new address is told where their calendar
went; the calendar follows a deadline an absence moved; and the mails that
make an offer, or tell of a time away or a stand-in, fit a phone's screen
(78 columns) whatever the game's name and the addresses.

Each through ``Engine.ingest`` with the fake clock, every mail read from
the outbox."""

from __future__ import annotations

import email
import re
from dataclasses import replace
from datetime import timedelta
from email import policy

import icalendar
import pytest
from conftest import PLAYERS, Mailbox, answer, make_mail, send

from referee.engine import Engine
from referee.site.render import Site
from referee.store import Notify, Store
from referee.timeutil import from_iso

ALICE, BOB, CAROL = PLAYERS
FRANK = "frank.longer-name@example.net"  # a stand-in, with an address as long as many are
ERIN = "erin.on-standby@example.net"
NEW = "carol.at-her-new-job@example.net"
SITE = "https://games.example.org"
WIDTH = 78  # what a phone shows of a plain-text line without wrapping it badly


@pytest.fixture
def config(config, tmp_path):
    return replace(config, site_dir=tmp_path / "site", site_url=SITE, reminder=timedelta(days=1))


@pytest.fixture
def bid(engine: Engine) -> Engine:
    engine.new_game("bid", PLAYERS, deadline=timedelta(days=2))
    return engine


@pytest.fixture
def turns(config, clock, seeds) -> Engine:
    """Auction (priority cards): a turn-based game with a long name."""
    engine = Engine(Store(config.database), config, clock, seeds)
    engine.new_game("priority", PLAYERS, options={"turn_limit": 2})
    return engine


def newest(box: Mailbox, to: str, words: str) -> dict:
    return [m for m in box.to(to) if words in m["subject"]][-1]


def with_stand_in(engine: Engine, clock, box: Mailbox, player: str = ALICE) -> dict:
    """``player`` names Frank; Frank accepts; his welcome mail."""
    assert send(engine, clock, player, f"DELEGATE {FRANK} 5d").code == "done"
    assert answer(engine, clock, newest(box, FRANK, "Will you stand in"), "").code == "done"
    return newest(box, FRANK, "You stand in for seat")


def unsubscribe_address(mail: dict) -> str:
    header = email.message_from_bytes(mail["raw"], policy=policy.default)["List-Unsubscribe"]
    found = re.search(r"<mailto:([^?>]+)", str(header))
    assert found, header
    return found[1]


def wide_lines(mail: dict) -> list[str]:
    body = mail["body"].split("\n-- \n")[0]  # (the footer names the game's tag: not ours to wrap here)
    return [line for line in body.split("\n") if len(line) > WIDTH]


# -- a stand-in is not the seat's player ----------------------------------------------


def test_a_stand_in_is_not_told_they_unsubscribed_when_the_player_pressed_the_button(bid, clock):
    box = Mailbox(bid)
    with_stand_in(bid, clock, box)
    button = unsubscribe_address(newest(box, ALICE, "begins"))
    box.new()
    outcome = bid.ingest(make_mail(ALICE, "", to=button, subject="unsubscribe", received=clock()))
    assert outcome.code == "done"
    table = bid.table(1)
    assert table.seats[0]["notify"] == Notify.DIGEST
    told = box.new()
    assert [m["to"] for m in told] == [ALICE]  # the player who pressed it, alone
    # (Frank was told "You unsubscribed ... To leave the game instead, reply
    # RESIGN": he did not, and a stand-in may not RESIGN.)


@pytest.mark.parametrize("line", ["AWAY 2d", "AWAY 2026-11-22 to 2026-11-25", "ADDRESS frank2@example.net"])
def test_a_stand_in_may_not_spend_the_seats_time_away_or_move_it_to_another_address(bid, clock, line):
    box = Mailbox(bid)
    welcome = with_stand_in(bid, clock, box)
    deadline = bid.status(1)["phase"]["deadline"]
    box.new()
    outcome = answer(bid, clock, welcome, line)
    assert outcome.code == "refused", outcome
    fresh = box.new()
    assert [m["to"] for m in fresh] == [FRANK]  # nobody else is told anything, nobody else is mailed
    said = " ".join(fresh[0]["body"].split())
    assert f"{line.split()[0]} is for the seat's own player" in said
    assert bid.status(1)["phase"]["deadline"] == deadline
    assert bid.table(1).interventions[-1]["act"] == "delegate"  # no time away, no address change on the record
    assert bid.store.open_offers() == []  # no confirmation mailed to an address the stand-in chose


def test_a_stand_in_may_not_say_the_seat_is_back(bid, clock):
    box = Mailbox(bid)
    welcome = with_stand_in(bid, clock, box)
    assert send(bid, clock, ALICE, "AWAY 2026-11-25 to 2026-11-27").code == "done"
    box.new()
    outcome = answer(bid, clock, welcome, "BACK")
    assert outcome.code == "refused"
    assert [m["to"] for m in box.new()] == [FRANK]
    assert bid.table(1).interventions[-1]["act"] == "away"  # her time away still to come


# -- a new address, and its calendar ----------------------------------------------------


def calendar_link(mail: dict) -> str | None:
    found = re.search(rf"^    ({re.escape(SITE)}/private/[a-z2-7]{{16}}\.ics)$", mail["body"], re.M)
    return found[1] if found else None


def test_a_player_at_a_new_address_is_given_the_seats_new_calendar(bid, clock):
    box = Mailbox(bid)
    old_link = calendar_link(newest(box, CAROL, "begins"))
    assert old_link
    assert send(bid, clock, CAROL, f"ADDRESS {NEW}").code == "done"
    assert answer(bid, clock, newest(box, NEW, "Confirm your new address"), "").code == "done"
    welcome = newest(box, NEW, "you play seat 3 from this address now")
    link = calendar_link(welcome)
    assert link is not None and link != old_link  # (the calendar's name is made of the seat's address)
    assert "The seat's own calendar moved with it" in welcome["body"]
    folder = bid.config.site_dir
    Site(bid, folder).render()
    assert (folder / link.removeprefix(f"{SITE}/")).exists()
    assert not (folder / old_link.removeprefix(f"{SITE}/")).exists()


# -- the calendar follows a deadline an absence moved ---------------------------------------


def test_every_seats_calendar_follows_a_deadline_a_time_away_moved(bid, clock):
    box = Mailbox(bid)
    links = {m["to"]: calendar_link(m) for m in box.new() if "begins" in m["subject"]}
    assert send(bid, clock, BOB, "AWAY 2026-11-23 to 2026-11-25").code == "done"
    deadline = from_iso(bid.status(1)["phase"]["deadline"])
    assert deadline == from_iso("2026-11-26T00:00:00Z")
    folder = bid.config.site_dir
    Site(bid, folder).render()
    for player in PLAYERS:  # a round of Bid! waits on every seat: all of them see it move
        link = links[player]
        assert link is not None
        data = (folder / link.removeprefix(f"{SITE}/")).read_bytes()
        [event] = icalendar.Calendar.from_ical(data).walk("VEVENT")
        assert event.decoded("DTSTART") == deadline, player
        [alarm] = event.walk("VALARM")
        assert alarm.decoded("TRIGGER") == deadline - timedelta(days=1)


# -- what fits a phone -------------------------------------------------------------------


def test_a_seat_offer_of_a_game_with_a_long_name_fits_a_phone(turns, clock):
    box = Mailbox(turns)
    assert turns.ingest(make_mail(ERIN, "STANDBY priority", subject="hello", received=clock())).code == "done"
    assert answer(turns, clock, newest(box, ERIN, "STANDBY"), "").code == "done"
    assert send(turns, clock, BOB, "RESIGN").code == "done"
    offer = newest(box, ERIN, "is yours if you want it")
    assert wide_lines(offer) == []


def test_the_mails_of_a_time_away_and_a_stand_in_fit_a_phone(turns, clock):
    """Bob is away; Alice names Frank, who accepts, then ends his turn: every
    mail of it, and each answer, in lines a phone shows whole."""
    box = Mailbox(turns)
    start = len(box.new())
    assert send(turns, clock, BOB, "AWAY 2d").code == "done"
    with_stand_in(turns, clock, box)
    assert send(turns, clock, ALICE, "DELEGATE NONE").code == "done"
    box.new()
    mails = box.all[start:]
    kinds = [
        "is away until",  # to the others
        "Will you stand in",  # the offer
        "You stand in for seat",  # the stand-in's welcome
        "stands in for you",  # to the player
        "A stand-in plays seat",  # to the others
        "Your turn as stand-in",  # the stand-in's end
        "plays seat 1 alone again",  # to the others
    ]
    found = {kind: [m for m in mails if kind in m["subject"] and not m["subject"].startswith("Re:")] for kind in kinds}
    assert all(found.values()), {k: len(v) for k, v in found.items()}
    answers = [
        m for m in mails if m["subject"].startswith("Re:")
    ]  # to AWAY, DELEGATE, the offer's ACCEPT, DELEGATE NONE
    assert len(answers) == 4
    wide = {m["subject"]: wide_lines(m) for m in [*(m for ms in found.values() for m in ms), *answers] if wide_lines(m)}
    assert wide == {}


# -- HELP says what each command does now -------------------------------------------------


def test_help_says_a_resigned_seat_may_go_to_someone_on_standby(bid, clock):
    """RESIGN's line in HELP said a bot plays the seat from then on: since
    STANDBY, someone on standby may take it over (docs/playing.md says so)."""
    box = Mailbox(bid)
    box.new()
    assert send(bid, clock, ALICE, "HELP").code == "done"
    said = " ".join(box.new()[0]["body"].split())
    assert "unless someone on standby takes it over" in said
