"""Review of deadlines, the record and replay across the features of issue
33 together (AWAY/BACK, DELEGATE, STANDBY, ADDRESS) and the keeper's acts
and the outage guard: honest records verify, tampered ones do not, and a
restore handles the new mail again to the same record and Message-IDs."""

from __future__ import annotations

import copy
import email
import json
from dataclasses import replace
from datetime import timedelta
from email import policy

import pytest
from conftest import PLAYERS, Mailbox, Seeds, answer, make_mail, reply, send, to_deadline
from test_delegating import offer_to
from test_keeper_mail import KEEPER
from test_restore import Club, _sent, deliver, public
from test_restore import maildir as _maildir
from test_standby import offers_to, on_standby
from test_standby import play_out as bid_play_out

from referee.engine import Engine
from referee.engine.keeping import SHELL
from referee.record import verify
from referee.site.public import game_record
from referee.store import Store
from referee.timeutil import from_iso

ALICE, BOB, CAROL = PLAYERS
DORA, ERIN = "dora@example.net", "erin@example.net"
maildir = _maildir  # the fixture


@pytest.fixture
def config(config):
    return replace(config, keepers=(KEEPER,))


def at(clock, when: str) -> None:
    clock.advance(seconds=(from_iso(when) - clock()).total_seconds())


def to_the_end(engine: Engine, clock, game: int = 1) -> dict:
    """Every phase to its deadline until the game ends; its published record."""
    for _ in range(500):
        if engine.status(game)["state"] != "running":
            break
        to_deadline(engine, clock, game)
        engine.tick()
    return game_record(engine.table(game))


def mail_moves(engine: Engine, clock, skip=(), game: int = 1) -> None:
    """Everyone the open phase waits on (but ``skip``) mails a legal move, half
    an hour apart; when nobody does, the clock goes to the deadline."""
    table = engine.table(game)
    phase = table.phase_to_move()
    movers = [s for s in table.waiting_for(phase) if table.human(s) and table.label(s) not in skip]
    if not movers:
        to_deadline(engine, clock, game)
    for seat in movers:
        table = engine.table(game)
        if table.open_phase is None or table.open_phase["number"] != phase["number"]:
            break
        clock.advance(minutes=30)
        move = table.rules.move_text(table.rules.legal_moves(table.state, seat)[0])
        assert send(engine, clock, table.label(seat), move, game=game).code in ("move", "done")
    engine.tick()


def away_now(engine: Engine, clock, player: str) -> bool:
    table = engine.table(1)
    seat = table.seat_of(player)
    return any(a.seat == seat and a.ended is None and a.start <= clock() < a.until for a in table.absences)


# -- honest records that verify ------------------------------------------------------------


def test_a_move_received_during_an_outage_from_a_seat_the_guard_then_held_verifies(config, clock):
    """Carol will be away on the 25th and bids on the 24th while the referee
    is down; back on the 25th, its outage guard moves round 1's deadline
    into her absence and so on to its end (it has not read her mail yet),
    then reads her bid.  The honest record said 'seat 3 had moved by then'."""
    engine = Engine(Store(config.database), replace(config, outage_gap=timedelta(hours=6)), clock)
    engine.new_game("pure-skill", PLAYERS)
    engine.tick()
    assert send(engine, clock, CAROL, "AWAY 2026-11-25 to 2026-11-26").code == "done"
    at(clock, "2026-11-25T06:00:00Z")
    engine.guard_outage()
    assert engine.status(1)["phase"]["deadline"] == "2026-11-27T00:00:00Z"
    received = from_iso("2026-11-24T10:00:00Z")
    assert engine.ingest(reply(engine, CAROL, "bid 5", received=received)).code == "move"
    published = to_the_end(Engine(engine.store, config, clock), clock)
    assert [i["act"] for i in published["interventions"]] == ["away", "outage", "absent"]
    verdict = verify(published)
    assert verdict.ok, verdict


def test_a_move_read_after_a_keepers_extension_it_came_before_verifies(config, clock):
    """Cron reads mail hourly; Carol (away from the 25th) bids at 10:10, the
    keeper extends at the shell at 10:30 (into her absence: held to its end),
    and cron reads her bid at 11:00."""
    engine = Engine(Store(config.database), config, clock)
    engine.new_game("pure-skill", PLAYERS)
    assert send(engine, clock, CAROL, "AWAY 2026-11-25 to 2026-11-26").code == "done"
    at(clock, "2026-11-22T10:10:00Z")
    received = clock()
    clock.advance(minutes=20)
    engine.extend(1, timedelta(days=2), SHELL, "a holiday")
    clock.advance(minutes=30)
    assert engine.ingest(reply(engine, CAROL, "bid 5", received=received)).code == "move"
    published = to_the_end(engine, clock)
    assert [i["act"] for i in published["interventions"]] == ["away", "extend", "absent"]
    verdict = verify(published)
    assert verdict.ok, verdict


def test_an_away_mail_received_during_an_outage_verifies(config, clock):
    """Bob writes AWAY 3d while the referee is down; back, it moves the
    deadline it slept through (an outage, dated now), then reads his mail,
    which acts as of its receipt: the honest record had its away 'listed
    after one made later'."""
    engine = Engine(Store(config.database), replace(config, outage_gap=timedelta(hours=6)), clock)
    engine.new_game("pure-skill", PLAYERS)
    engine.tick()
    at(clock, "2026-11-25T06:00:00Z")
    engine.guard_outage()
    received = from_iso("2026-11-24T10:00:00Z")
    assert engine.ingest(reply(engine, BOB, "AWAY 3d", received=received)).code == "done"
    assert engine.status(1)["phase"]["deadline"] == "2026-11-27T10:00:00Z"
    published = to_the_end(Engine(engine.store, config, clock), clock)
    assert [i["act"] for i in published["interventions"]] == ["outage", "away", "absent"]
    verdict = verify(published)
    assert verdict.ok, verdict


@pytest.fixture
def left_while_away(engine, clock, seeds) -> dict:
    """Bid!: Bob says he is away (auction 1's deadline held), names Dora to
    stand in, then resigns; Erin, on standby, takes the seat; the game is
    played to its end by mail."""
    seeds.fixed = bytes([7]) * 32
    box = Mailbox(engine)
    on_standby(engine, clock, box, ERIN)
    engine.new_game("bid", PLAYERS, deadline=timedelta(days=2), options={"max_auctions": 6})
    assert send(engine, clock, BOB, "AWAY 2026-11-22 to 2026-11-24").code == "done"
    assert engine.status(1)["phase"]["deadline"] == "2026-11-25T00:00:00Z"
    assert send(engine, clock, BOB, f"DELEGATE {DORA} 3d").code == "done"
    assert answer(engine, clock, offer_to(box, DORA), "").code == "done"
    clock.advance(hours=2)
    assert send(engine, clock, BOB, "RESIGN").code == "done"
    [offer] = offers_to(box, ERIN)
    clock.advance(hours=3)
    assert answer(engine, clock, offer, "").code == "done"
    bid_play_out(engine, clock)
    return game_record(engine.table(1))


def test_a_player_who_resigns_after_his_absence_held_the_deadline_leaves_a_record_that_verifies(left_while_away):
    """The bot's move for Bob's seat comes after the hold (when he left):
    the honest record said 'seat 2 had moved by then'."""
    assert [(i["act"], i["by"]) for i in left_while_away["interventions"]] == [
        ("away", "player"),
        ("absent", "referee"),
        ("delegate", "player"),
        ("delegate_end", "referee"),
        ("replace", "referee"),
    ]
    verdict = verify(left_while_away)
    assert verdict.ok, verdict


# -- held: many phases, keepers' acts, two seats away ----------------------------------------


@pytest.mark.parametrize("kind", ["priority", "ice", "bluff", "bid"])
def test_many_phases_two_seats_away_back_and_away_again_with_keepers_acts(config, clock, kind):
    engine = Engine(Store(config.database), config, clock, Seeds(bytes([5]) * 32))
    engine.new_game(kind, PLAYERS)
    assert send(engine, clock, BOB, "AWAY 4d").code == "done"
    assert send(engine, clock, CAROL, "AWAY 2026-11-22 to 2026-11-25").code == "done"
    for step in range(3000):
        if engine.status(1)["state"] != "running":
            break
        if step == 3:
            assert send(engine, clock, BOB, "BACK").code in ("done", "refused")
            assert send(engine, clock, BOB, "AWAY 3d").code in ("done", "refused")
        if step == 5:
            engine.extend(1, timedelta(days=2), SHELL, "x")
        if step == 6:
            engine.pause(1, SHELL, "y")
            clock.advance(hours=5)
            assert send(engine, clock, ALICE, "AWAY 2d").code == "done"
            engine.resume(1, SHELL)
        if step == 8:
            assert send(engine, clock, CAROL, "AWAY 5d").code in ("done", "refused")
        mail_moves(engine, clock, skip=[p for p in (BOB, CAROL) if away_now(engine, clock, p)])
    assert engine.status(1)["state"] == "finished"
    published = game_record(engine.table(1))
    assert {"away", "absent", "extend", "pause", "resume"} <= {i["act"] for i in published["interventions"]}
    verdict = verify(published)
    assert verdict.ok, verdict


# -- tampered records -------------------------------------------------------------------------


def _refused(published: dict, change) -> None:
    forged = copy.deepcopy(published)
    change(forged)
    verdict = verify(forged)
    assert not verdict.ok or verdict.digests != verify(published).digests, verdict


def test_tampered_records_are_refused_or_disagree_with_the_mails_digests(left_while_away):
    acts = [i["act"] for i in left_while_away["interventions"]]
    absent, away, delegate, taken = (acts.index(a) for a in ("absent", "away", "delegate", "replace"))

    def moved(r):  # the held deadline, an hour later (the phase's too)
        r["interventions"][absent]["new"] = r["phases"][0]["deadline"] = "2026-11-25T01:00:00Z"

    def dropped_away(r):
        del r["interventions"][away]

    def relabelled(r):
        r["interventions"][away]["by"] = "keeper"

    def until(r):  # a stand-in's turn longer than it was (nothing else contradicts it: only the digests)
        r["interventions"][delegate]["until"] = "2026-11-30T12:00:00Z"

    def dropped_takeover(r):
        del r["interventions"][taken]

    for change in (moved, dropped_away, relabelled, until, dropped_takeover):
        _refused(left_while_away, change)
    # These verify alone refuses. (Not the dropped takeover: Erin's bot waited for her in the auction Bob
    # left, so no bot moved for the seat, and a record without her takeover reads as hers from the start;
    # the mails' digests, which cover every intervention, refuse it.)
    for change in (moved, dropped_away, relabelled):
        forged = copy.deepcopy(left_while_away)
        change(forged)
        assert not verify(forged).ok, change.__name__


# -- a restore handles AWAY, BACK, ADDRESS, DELEGATE and STANDBY mail again -----------------------


def _mail(club: Club, address: str, word: str) -> dict:
    return [m for m in club.engine.store.outbox(None) if m["recipients"] == [address] and word in m["subject"]][-1]


def _answer(club: Club, mail: dict, address: str, text: str = "") -> None:
    message = email.message_from_bytes(mail["raw"], policy=policy.default)
    thread = {"In-Reply-To": mail["message_id"], "References": mail["message_id"]}
    to, subject = str(message["Reply-To"]), f"Re: {mail['subject']}"
    deliver(
        club.box, make_mail(address, text, to=to, headers=thread, subject=subject, received=club.clock()), club.clock()
    )


def _say(club: Club, player: str, text: str, game: int = 1) -> None:
    deliver(club.box, reply(club.engine, player, text, game=game, received=club.clock()), club.clock())


def _hourly(club: Club, hours: int) -> None:
    for _ in range(hours):
        club.clock.advance(hours=1)
        club.run()


def test_a_restore_handles_the_new_commands_again_to_the_same_record_and_message_ids(config, clock, maildir, tmp_path):
    club = Club(replace(config, keepers=()), clock, maildir, b"r" * 32)
    deliver(club.box, make_mail(ERIN, "STANDBY bid", subject="hello", received=clock()), clock())
    club.run()
    _answer(club, _mail(club, ERIN, "STANDBY bid"), ERIN)
    club.run()
    game = club.engine.new_game("bid", PLAYERS, deadline=timedelta(days=2), options={"max_auctions": 6})
    club.run()
    _sent(club)
    assert club.cli(tmp_path, "backup", str(tmp_path / "backup.db")) == 0
    clock.advance(minutes=10)
    _say(club, CAROL, "AWAY 2026-11-24 to 2026-11-26")  # holds a later auction's deadline as it opens
    clock.advance(minutes=10)
    _say(club, ALICE, "ADDRESS alice@example.net")
    clock.advance(minutes=10)
    _say(club, BOB, f"DELEGATE {DORA} 2d")
    club.run()
    clock.advance(minutes=10)
    _answer(club, _mail(club, "alice@example.net", ""), "alice@example.net")
    club.run()
    clock.advance(minutes=10)
    _answer(club, _mail(club, DORA, "stand in"), DORA)
    club.run()
    club.move(game)  # auction 1
    _hourly(club, 30)
    club.move(game, skip=CAROL)
    clock.advance(hours=2)
    _say(club, CAROL, "BACK")
    club.run()
    clock.advance(hours=2)
    _say(club, BOB, "RESIGN")  # his stand-in's turn ends; Erin is offered the seat
    club.run()
    _hourly(club, 3)
    _answer(club, _mail(club, ERIN, "is yours"), ERIN)
    club.run()
    _hourly(club, 400)
    acts = [i["act"] for i in club.engine.store.interventions(game)]
    assert {"away", "address", "delegate", "back", "delegate_end", "replace"} <= set(acts)
    record = public(club.engine, game)
    had = [(m["recipients"], m["message_id"]) for m in club.engine.store.outbox(None)]
    _sent(club)
    club.close()
    assert club.cli(tmp_path, "restore", str(tmp_path / "backup.db")) == 0
    club.open()
    club.run()
    assert public(club.engine, game) == record
    again = [(m["recipients"], m["message_id"]) for m in club.engine.store.outbox(None)]
    assert [x for x in again if x not in had] == [
        (m["recipients"], m["message_id"])
        for m in club.engine.store.outbox(None)
        if "restored its records" in m["subject"]
    ]
    assert all(x in again for x in had)
    assert club.engine.status(game)["state"] == "finished" and verify(json.loads(record)).ok
