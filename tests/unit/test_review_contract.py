"""Adversarial review (contract): issue 33 held item by item to its text,
and the site of a Bid! game that used AWAY, ADDRESS, DELEGATE, a takeover
from standby and a keeper's EXTEND read as a stranger reads it.  Played
through ingest."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, Mailbox, answer, mails, send
from test_keeper_mail import KEEPER, order
from test_site import public_text
from test_standby import on_standby, play_out

from referee.config import Config, load
from referee.engine import Engine
from referee.record import verify
from referee.site.public import game_record
from referee.site.render import Site
from referee.store import Store

ALICE, BOB, CAROL = PLAYERS
NEW = "alice@example.net"
DORA = "dora@example.net"  # on standby: takes over Bob's seat
ERIN = "erin@example.com"  # Carol's stand-in
NAME = "Thursday club"


@pytest.fixture
def config(config: Config, tmp_path: Path) -> Config:
    return replace(config, keepers=(KEEPER,), site_dir=tmp_path / "site", site_url="https://games.example.org/")


@pytest.fixture
def box(engine: Engine) -> Mailbox:
    return Mailbox(engine)


def subject(box: Mailbox, to: str, words: str) -> dict:
    return [m for m in box.to(to) if words in m["subject"]][-1]


def every_feature(engine: Engine, clock, box: Mailbox) -> None:
    """One Bid! game that uses every act issue 33 added, and a keeper's
    EXTEND, played by mail to its end."""
    on_standby(engine, clock, box, DORA)
    engine.new_game("bid", PLAYERS, deadline=timedelta(days=2), name=NAME, options={"max_auctions": 6})
    clock.advance(hours=1)
    assert send(engine, clock, ALICE, "AWAY 3d at my sister's wedding").code == "done"  # holds auction 1
    assert send(engine, clock, ALICE, f"ADDRESS {NEW}").code == "done"
    assert answer(engine, clock, subject(box, NEW, "Confirm your new address"), "").code == "done"
    assert send(engine, clock, CAROL, f"DELEGATE {ERIN} 4d").code == "done"
    assert answer(engine, clock, subject(box, ERIN, "Will you stand in"), "").code == "done"
    table = engine.table(1)
    move = table.rules.move_text(table.rules.legal_moves(table.state, 2)[0])  # Carol's, as her stand-in chose it
    assert answer(engine, clock, subject(box, ERIN, "You stand in for seat"), move).code == "move"
    assert order(engine, clock, "EXTEND 1 1d Bob asked for a day").code == "done"
    clock.advance(hours=2)
    assert send(engine, clock, NEW, "BACK").code == "done"
    assert send(engine, clock, BOB, "RESIGN").code == "done"
    assert answer(engine, clock, subject(box, DORA, "is yours if you want it"), "").code == "done"
    assert send(engine, clock, CAROL, "DELEGATE NONE").code == "done"
    play_out(engine, clock)
    assert engine.table(1).row["state"] == "finished"


@pytest.fixture
def played(engine: Engine, clock, box: Mailbox) -> Engine:
    every_feature(engine, clock, box)
    Site(engine, engine.config.site_dir).render()
    return engine


def test_the_game_of_every_feature_verifies(played):
    verdict = verify(game_record(played.table(1)))
    assert verdict.ok, verdict


def acts_html(engine: Engine) -> str:
    page = (engine.config.site_dir / "games" / "1" / "index.html").read_text()
    return page.split('<ul class="acts">')[1].split("</ul>")[0]


def test_an_act_names_the_player_who_made_it_not_who_plays_the_seat_now(engine, clock, box):
    """Bob says he is away and names a stand-in, then resigns, and Dora
    takes his seat over from standby: the page said "dora is away" and
    "dora named a stand-in", acts of Bob's she never made."""
    on_standby(engine, clock, box, DORA)
    engine.new_game("bid", PLAYERS, deadline=timedelta(days=2), options={"max_auctions": 4})
    assert send(engine, clock, BOB, "AWAY 3d").code == "done"
    assert send(engine, clock, BOB, f"DELEGATE {ERIN} 2d").code == "done"
    assert answer(engine, clock, subject(box, ERIN, "Will you stand in"), "").code == "done"
    clock.advance(hours=1)
    assert send(engine, clock, BOB, "RESIGN").code == "done"
    assert answer(engine, clock, subject(box, DORA, "is yours if you want it"), "").code == "done"
    play_out(engine, clock)
    Site(engine, engine.config.site_dir).render()
    acts = " ".join(acts_html(engine).split())
    assert "dora is away" not in acts and "dora named a stand-in" not in acts, acts
    assert "bob is away from" in acts and "bob named a stand-in to play seat 2" in acts, acts
    assert "as bob is away until then" in acts, acts
    assert "dora took over seat 2 from bob" in acts, acts


def test_the_acts_list_never_breaks_a_moment_and_reads_as_sentences(played):
    """On a phone (360 px) the list wrapped "2026-11-21 / 13:00 UTC" across
    lines; the stand-in's end read "..., carol playing it alone again" and
    a new address "seat 1's player moved" (the page names players)."""
    acts = acts_html(played)
    text = re.sub(r"<[^>]+>", "", " ".join(acts.split()))
    times = re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", text)
    assert len(times) == len(re.findall(r'<time class="nowrap" datetime="[0-9TZ:-]+">[^<]+</time>', acts)) >= 12
    assert "alice (seat 1) moved to another address." in text
    assert "the stand-in's turn at seat 3 ended: carol plays it alone again." in text
    assert "carol named a stand-in to play seat 3 until" in text
    assert "dora took over seat 2 from bob (from the standby list)." in text
    assert "the keeper moved the deadline from" in text and "(Bob asked for a day)." in text
    assert "’" not in acts  # one apostrophe throughout, as the heading's


def test_a_stand_ins_turn_ended_by_a_resignation_gives_its_reason_once(engine, clock, box):
    engine.new_game("bid", PLAYERS, deadline=timedelta(days=2), options={"max_auctions": 4})
    assert send(engine, clock, BOB, f"DELEGATE {ERIN} 2d").code == "done"
    assert answer(engine, clock, subject(box, ERIN, "Will you stand in"), "").code == "done"
    assert send(engine, clock, BOB, "RESIGN").code == "done"
    Site(engine, engine.config.site_dir).render()
    text = re.sub(r"<[^>]+>", "", " ".join(acts_html(engine).split()))
    assert "the stand-in's turn at seat 2 ended (seat 2&#39;s player left the game)." in text, text


def test_no_public_page_names_an_address_or_a_seats_own_calendar(played):
    """The site of the game of every feature: no player's, new, stand-in's
    or newcomer's address, and no seat's private calendar (its name or a
    link to private/), in any page, feed, calendar or record."""
    site = played.config.site_dir
    private = sorted(p.name for p in (site / "private").glob("*.ics"))
    assert len(private) == 3  # alice's (at her new address), dora's, carol's
    for name, text in public_text(site).items():
        if name.startswith("private/"):
            continue
        for address in (ALICE, NEW, BOB, CAROL, DORA, ERIN, KEEPER):
            assert address not in text, (name, address)
        assert "private/" not in text and not any(p.removesuffix(".ics") in text for p in private), name
    assert "Bob asked" in (site / "games/1/record.json").read_text()  # the keeper's words are public, by design


def test_a_referee_that_allows_no_time_away_says_so(tmp_path, clock, seeds):
    """most_away = "0s" (config.example.toml: "no time away"): AWAY was
    refused with "your seat may be away 0 seconds in this game in all"."""
    (tmp_path / "r.toml").write_text(f'[referee]\ndatabase = "{tmp_path}/g.db"\n[keepers]\nmost_away = "0s"\n')
    config = load(tmp_path / "r.toml")
    engine = Engine(Store(config.database), config, clock, seeds)
    engine.new_game("pure-skill", PLAYERS)
    assert send(engine, clock, BOB, "AWAY 2d").code == "refused"
    said = " ".join(mails(engine, BOB)[-1]["body"].split())
    assert "This referee allows no time away (its most_away is 0): deadlines run as usual." in said
    assert "0 seconds" not in said and engine.store.interventions(1) == []
