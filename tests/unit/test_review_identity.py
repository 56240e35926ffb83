"""Adversarial review (identity): who may act for a seat when ADDRESS,
DELEGATE, STANDBY, offers and unsubscribes meet. Played through ingest."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import PLAYERS, Mailbox, answer, make_mail, send

from referee.engine import Engine
from referee.timeutil import iso

ALICE, BOB, CAROL = PLAYERS
DORA = "dora@example.net"
NEW = "alice@example.net"


@pytest.fixture
def pure(engine: Engine) -> Engine:
    engine.new_game("pure-skill", PLAYERS)
    return engine


@pytest.fixture
def box(engine: Engine) -> Mailbox:
    return Mailbox(engine)


def offer_to(box: Mailbox, address: str, words: str) -> dict:
    return [m for m in box.to(address) if words in m["subject"]][-1]


def stand_in(engine: Engine, clock, box: Mailbox, player: str = ALICE, who: str = DORA) -> dict:
    assert send(engine, clock, player, f"DELEGATE {who} 5d").code == "done"
    assert answer(engine, clock, offer_to(box, who, "Will you stand in"), "").code == "done"
    return [m for m in box.to(who) if "You stand in for seat" in m["subject"]][-1]


def persons_at(engine: Engine, game: int = 1) -> list[str]:
    """Every address that plays a seat of the game or stands in for one now, once each."""
    table = engine.table(game)
    seats = [s["address"] for s in table.seats if s["address"] and table.human(s["seat"])]
    stand_ins = [d["address"] for d in engine.store.delegations(game, iso(engine.clock()))]
    return seats + stand_ins


def test_an_address_change_to_another_seats_stand_in_is_refused(pure, clock, box):
    stand_in(pure, clock, box)  # Dora stands in for Alice's seat
    assert send(pure, clock, BOB, f"ADDRESS {DORA.upper()}").code == "refused"
    assert "stands in for a seat of game 1" in " ".join(box.to(BOB)[-1]["body"].split())
    assert not [m for m in box.to(DORA) if "Confirm your new address" in m["subject"]]
    people = persons_at(pure)
    assert len(people) == len(set(people)) == 4, people  # nobody plays a seat and stands in for another


def test_a_stand_in_who_confirms_an_address_asked_before_does_not_get_two_seats(pure, clock, box):
    assert send(pure, clock, BOB, f"ADDRESS {DORA}").code == "done"  # asked first
    confirm = offer_to(box, DORA, "Confirm your new address")
    stand_in(pure, clock, box)  # then Dora agrees to stand in for Alice
    assert answer(pure, clock, confirm, "").code == "refused"
    assert "stands in for a seat of game 1" in " ".join(box.to(DORA)[-1]["body"].split())
    assert pure.table(1).seats[1]["address"] == BOB
    people = persons_at(pure)
    assert len(people) == len(set(people)) == 4, people


def test_a_stand_in_is_not_offered_another_seat_of_the_game_from_standby(engine, clock, box):
    from test_standby import on_standby

    on_standby(engine, clock, box, DORA)
    on_standby(engine, clock, box, "erin@example.net")
    engine.new_game("bid", PLAYERS, deadline=timedelta(days=2))
    stand_in(engine, clock, box)
    engine.resign(1, BOB)
    assert not [m for m in box.to(DORA) if "is yours if you want it" in m["subject"]]
    offer = offer_to(box, "erin@example.net", "is yours if you want it")  # the next on the list
    assert answer(engine, clock, offer, "").code == "done"
    people = persons_at(engine)
    assert len(people) == len(set(people)) == 4, people


def test_the_keeper_cannot_give_a_stand_in_another_seat(engine, clock, box):
    from referee.engine.keeping import SHELL
    from referee.errors import EngineError

    engine.new_game("bid", PLAYERS, deadline=timedelta(days=2))
    stand_in(engine, clock, box)
    engine.resign(1, BOB)
    with pytest.raises(EngineError, match="stands in for seat 1 of game 1"):
        engine.replace(1, "seat 2", "Dora+games@example.net", SHELL)
    engine.replace(1, "seat 1", DORA, SHELL, "Alice left it to her")  # her own seat: her turn ends, she plays it
    assert persons_at(engine) == [DORA, CAROL]


def test_a_stand_in_cannot_move_the_seat_to_another_address(pure, clock, box):
    welcome = stand_in(pure, clock, box)
    outcome = answer(pure, clock, welcome, "ADDRESS mallory@example.com")
    assert outcome.code == "refused"
    assert not box.to("mallory@example.com")  # no stranger is mailed in the seat's name


@pytest.mark.parametrize("line", ["AWAY 3d", "BACK"])
def test_a_stand_in_cannot_send_the_seat_away_or_back(pure, clock, box, line):
    welcome = stand_in(pure, clock, box)
    if line == "BACK":
        assert send(pure, clock, ALICE, "AWAY 3d").code == "done"
    before = pure.store.interventions(1)
    assert answer(pure, clock, welcome, line).code == "refused"
    assert pure.store.interventions(1) == before
    assert "is for the seat's own player" in box.to(DORA)[-1]["body"]


def test_a_game_that_uses_every_feature_names_no_address_in_public(engine, clock, box, tmp_path, caplog):
    """ADDRESS, DELEGATE, AWAY, an unsubscribe, RESIGN and a takeover from
    standby in one Bid! game: its record, its site and the mail to the
    others never name the new address, the stand-in, nor the newcomer's
    old standing; the record verifies."""
    import logging

    from test_site import public_text
    from test_standby import on_standby, play_out
    from test_unsubscribe import unsubscribe, unsubscribe_address

    from referee.record import verify
    from referee.site.public import game_record
    from referee.site.render import Site

    caplog.set_level(logging.INFO, logger="referee")
    erin = "erin@example.com"
    on_standby(engine, clock, box, erin)
    engine.new_game("bid", PLAYERS, deadline=timedelta(days=2), options={"max_auctions": 8})
    assert send(engine, clock, ALICE, f"ADDRESS {NEW}").code == "done"
    assert answer(engine, clock, offer_to(box, NEW, "Confirm your new address"), "").code == "done"
    stand_in(engine, clock, box, player=BOB)
    assert send(engine, clock, CAROL, "AWAY 1d").code == "done"
    [prompt] = [m for m in box.to(CAROL) if "List-Unsubscribe" in m["raw"].decode()][-1:]
    import email
    from email import policy

    parsed = {**prompt, "message": email.message_from_bytes(prompt["raw"], policy=policy.default)}
    assert unsubscribe(engine, clock, unsubscribe_address(parsed), sender=CAROL).code == "done"
    clock.advance(hours=2)
    assert send(engine, clock, CAROL, "RESIGN").code == "done"
    assert answer(engine, clock, offer_to(box, erin, "is yours if you want it"), "").code == "done"
    play_out(engine, clock)
    table = engine.table(1)
    assert table.row["state"] == "finished"
    published = game_record(table)
    assert "@" not in str(published)
    verdict = verify(published)
    assert verdict.ok, verdict
    Site(engine, tmp_path / "site").render()
    for name, text in public_text(tmp_path / "site").items():
        for address in (ALICE, NEW, BOB, DORA, CAROL, erin):
            assert address not in text, (name, address)
    for mail in box.all:
        if mail["to"] not in (BOB, DORA):
            assert DORA not in mail["raw"].decode(errors="replace"), (mail["to"], mail["subject"])
    for record in caplog.records:
        if record.levelno > logging.DEBUG and not record.getMessage().startswith("message "):
            for address in (NEW, DORA, erin):
                assert address not in record.getMessage(), record.getMessage()


def test_a_seat_that_moves_keeps_its_stand_in_who_is_not_told_they_play_from_there(pure, clock, box):
    welcome = stand_in(pure, clock, box)
    seen = len(box.to(DORA))
    assert send(pure, clock, ALICE, "ADDRESS alice@example.net all").code == "done"
    assert answer(pure, clock, offer_to(box, NEW, "Confirm your new address"), "").code == "done"
    assert pure.table(1).seats[0]["address"] == NEW
    told = box.to(DORA)[seen:]
    assert not [m for m in told if "from this address now" in m["subject"]], [m["subject"] for m in told]
    # Her turn goes on: her move counts, and the seat's new address gets the copy, the old one nothing.
    old = len(box.to(ALICE))
    assert answer(pure, clock, welcome, "bid 7").code == "move"
    assert pure.store.final_moves(1, 1)[0]["move"] == "bid 7"
    assert "wrote to the referee for your seat" in box.to(NEW)[-1]["body"]
    assert len(box.to(ALICE)) == old


def test_a_seat_that_moves_is_told_its_new_own_calendar(config, clock, seeds, tmp_path):
    from dataclasses import replace

    from test_own_calendar import SITE, link_in, own_links, render

    from referee.store import Store

    site = replace(config, site_dir=tmp_path / "site", site_url=SITE)
    engine = Engine(Store(site.database), site, clock, seeds)
    engine.new_game("pure-skill", PLAYERS)
    old = own_links(engine)[ALICE]
    folder = render(engine)
    assert (folder / old.removeprefix(f"{SITE}/")).exists()
    box = Mailbox(engine)
    box.new()
    assert send(engine, clock, ALICE, f"ADDRESS {NEW}").code == "done"
    assert answer(engine, clock, offer_to(box, NEW, "Confirm your new address"), "").code == "done"
    welcome = offer_to(box, NEW, "from this address now")
    render(engine)
    assert not (folder / old.removeprefix(f"{SITE}/")).exists()  # the old address's calendar is taken down
    new = link_in(welcome)  # and the new address is told where its own is
    assert new != old and (folder / new.removeprefix(f"{SITE}/")).exists()


def test_a_newcomer_does_not_inherit_the_unsubscribe_of_the_player_who_left(engine, clock, box):
    from test_standby import on_standby
    from test_unsubscribe import read, unsubscribe, unsubscribe_address

    erin = "erin@example.com"
    on_standby(engine, clock, box, erin)
    engine.new_game("bid", PLAYERS, deadline=timedelta(days=2))
    [prompt] = [m for m in read(box) if m["to"] == CAROL][-1:]
    assert unsubscribe(engine, clock, unsubscribe_address(prompt), sender=CAROL).code == "done"
    assert engine.table(1).seats[2]["notify"] == "digest"
    assert send(engine, clock, CAROL, "RESIGN").code == "done"
    assert answer(engine, clock, offer_to(box, erin, "is yours if you want it"), "").code == "done"
    assert engine.table(1).seats[2]["address"] == erin
    assert engine.table(1).seats[2]["notify"] is None  # the game's default: Carol's choice was hers


def test_a_from_in_other_case_proves_an_offer_and_a_stand_in_as_the_address_does(pure, clock, box):
    assert send(pure, clock, ALICE, "DELEGATE Dora@Example.NET 5d").code == "done"
    offer = offer_to(box, DORA, "Will you stand in")
    assert answer(pure, clock, {**offer, "to": "Dora@EXAMPLE.net"}, "").code == "done"
    welcome = [m for m in box.to(DORA) if "You stand in for seat" in m["subject"]][-1]
    assert answer(pure, clock, {**welcome, "to": "DORA@example.NET"}, "bid 4").code == "move"
    assert pure.store.final_moves(1, 1)[0]["move"] == "bid 4"


def test_a_stand_ins_unsubscribe_does_not_quiet_the_seat(pure, clock, box):
    welcome = stand_in(pure, clock, box)
    assert "List-Unsubscribe" not in welcome["raw"].decode()
    outcome = pure.ingest(make_mail(DORA, "", to=welcome["reply_to"], subject="unsubscribe", received=clock()))
    assert outcome.code != "done" or "unsubscribed" not in outcome.detail
    assert pure.table(1).seats[0]["notify"] is None
