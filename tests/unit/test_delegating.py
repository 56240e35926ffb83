"""A stand-in for a seat (issue 33, item 2: DELEGATE): a seat's player names
someone to move for the seat until a time; the stand-in agrees first, then
gets a reply address of their own and what the seat knows, and their moves
count for the seat until the turn ends. Played by mail through ``ingest``,
as a player and a friend live it, with the engine's clock."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from conftest import PLAYERS, Mailbox, answer, make_mail, send, to_deadline
from test_keeping import play_out, record
from test_keeping import pure as _pure
from test_keeping import turns as _turns
from test_site import page

from referee.engine import Engine
from referee.record import verify
from referee.site.render import Site
from referee.timeutil import from_iso, iso

ALICE, BOB, CAROL = PLAYERS
DORA = "dora@example.net"  # Alice's friend, who stands in for her


pure, turns = _pure, _turns  # the fixtures


def offer_to(box: Mailbox, address: str = DORA) -> dict:
    """The newest offer mailed to ``address``."""
    return [m for m in box.to(address) if "Will you stand in" in m["subject"]][-1]


def welcome(box: Mailbox, address: str = DORA) -> dict:
    return [m for m in box.to(address) if "You stand in for seat" in m["subject"]][-1]


def stand_in(engine: Engine, clock, box: Mailbox, until: str = "5d", player: str = ALICE) -> dict:
    """``player`` names Dora; Dora accepts; her welcome mail (its Reply-To is her own address)."""
    assert send(engine, clock, player, f"DELEGATE {DORA} {until}").code == "done"
    assert answer(engine, clock, offer_to(box), "").code == "done"
    return welcome(box)


def bid_of(engine: Engine, seat: int, phase: int) -> str:
    return engine.table(1).counted[phase][seat]["move"]


def test_a_stand_ins_move_counts_and_one_after_the_turn_ended_does_not(pure, clock):
    box = Mailbox(pure)
    box.new()
    assert send(pure, clock, ALICE, f"DELEGATE {DORA} UNTIL 2026-11-24").code == "done"
    asked = " ".join(box.to(ALICE)[-1]["body"].split())  # what it says, however it is wrapped
    assert f"I have asked {DORA} to stand in for your seat until 2026-11-24 00:00 UTC" in asked
    offer = offer_to(box)
    assert "alice@example.org plays seat 1 of game 1" in offer["body"]
    clock.advance(hours=1)
    assert answer(pure, clock, offer, "ACCEPT").code == "done"
    fresh = box.new()
    told = {m["to"]: m["subject"] for m in fresh}
    mail, prompt, accepted = [m for m in fresh if m["to"] == DORA]  # the seat owes a move: its prompt
    assert "Accepted: you stand in for seat 1 of game 1" in accepted["body"]
    seat_token = pure.table(1).seats[0]["token"]
    assert seat_token not in mail["reply_to"] and seat_token not in mail["subject"]  # a token of her own
    hand = pure.table(1).rules.view(pure.table(1).state, 0)["hand"]
    assert "Your hand (" in mail["body"] and len(hand) == 13  # the seat's private facts
    assert "Round 1 of 13: the prize" in prompt["subject"] and prompt["reply_to"] == mail["reply_to"]
    assert "A stand-in plays seat 1 (alice) until" in told[BOB] and DORA not in told[BOB]
    assert f"{DORA} stands in for you until" in told[ALICE]
    # Her bid counts for the seat; Alice gets a copy of the answer.
    outcome = answer(pure, clock, prompt, "bid 9")
    assert outcome.code == "move" and bid_of(pure, 0, 1) == "bid 9"
    receipts = box.new()
    [hers] = [m for m in receipts if m["to"] == DORA]
    assert "You wrote as the stand-in for seat 1 (alice)" in hers["body"] and "bid 9" in hers["body"]
    [copied] = [m for m in receipts if m["to"] == ALICE]
    assert f"Your stand-in, {DORA}, wrote to the referee for your seat" in copied["body"]
    assert seat_token in copied["subject"] and mail["reply_to"] not in str(copied)
    # Past her turn's end, in the same round (its deadline is at noon), her mail counts no more.
    clock.advance(days=2, hours=12)  # 2026-11-24T01:00: her turn ended at midnight
    assert pure.tick() == ["game 1: the stand-in's turn at seat 1 ended at 2026-11-24T00:00:00Z"]
    assert "Your turn as stand-in for seat 1 of game 1 is over" in box.to(DORA)[-1]["subject"]
    assert "Your stand-in's turn is over" in box.to(ALICE)[-1]["subject"]
    refused = answer(pure, clock, hers, "bid 2")
    assert refused.code == "refused" and bid_of(pure, 0, 1) == "bid 9"
    assert "Your turn as stand-in for seat 1 of game 1 ended at 2026-11-24 00:00 UTC" in box.to(DORA)[-1]["body"]
    assert send(pure, clock, ALICE, "bid 2").code == "replaced" and bid_of(pure, 0, 1) == "bid 2"  # Alice's alone again
    play_out(pure, clock)
    published = record(pure)
    [given] = published["interventions"]
    assert given == {
        "phase": 1,
        "at": "2026-11-21T13:00:00Z",
        "act": "delegate",
        "by": "player",
        "why": "",
        "seat": 0,
        "until": "2026-11-24T00:00:00Z",
    }
    assert DORA not in str(published)
    assert verify(published).ok


def test_the_seats_own_moves_still_count_and_the_stand_in_gets_a_copy(pure, clock):
    box = Mailbox(pure)
    stand_in(pure, clock, box)
    box.new()
    assert send(pure, clock, ALICE, "bid 5").code == "move"
    copies = [m for m in box.new() if m["to"] == DORA]
    assert len(copies) == 1 and "The seat's own player wrote to the referee" in copies[0]["body"]
    assert bid_of(pure, 0, 1) == "bid 5"
    clock.advance(minutes=5)
    assert answer(pure, clock, welcome(box), "bid 8").code == "replaced"  # the last received counts
    assert bid_of(pure, 0, 1) == "bid 8"
    clock.advance(minutes=5)
    assert send(pure, clock, ALICE, "bid 6").code == "replaced"
    assert bid_of(pure, 0, 1) == "bid 6"


def test_the_stand_ins_copy_of_the_players_answer_has_only_the_move(pure, clock):
    """Alice's mail has her bid and her own business (a time away with its
    reason, for the keepers alone): Dora's copy is of the bid's receipt only."""
    box = Mailbox(pure)
    stand_in(pure, clock, box)
    box.new()
    assert send(pure, clock, ALICE, "bid 5\nAWAY 2d at my sister's wedding\nTIMEZONE Europe/Berlin").code == "move"
    [copy] = [m for m in box.new() if m["to"] == DORA]
    assert "bid 5" in copy["body"]
    assert "wedding" not in copy["body"]
    assert "AWAY" not in copy["body"]
    assert "TIMEZONE" not in copy["body"]
    [own] = [m for m in box.to(ALICE)][-1:]
    assert "wedding" in own["body"] and "Europe/Berlin" in own["body"]


def test_a_forged_acceptance_changes_nothing_and_the_stand_in_is_told(pure, clock):
    box = Mailbox(pure)
    send(pure, clock, ALICE, f"DELEGATE {DORA} 5d")
    offer = offer_to(box)
    forged = make_mail("mallory@example.com", "ACCEPT", to=offer["reply_to"], received=clock())
    assert pure.ingest(forged).code == "refused"
    assert pure.store.delegations(1, iso(clock())) == []
    assert not box.to("mallory@example.com")
    assert box.to(DORA)[-1]["subject"] == "A mail in your name was not accepted"  # Dora hears of it
    assert pure.store.open_offers()[0]["closed_at"] is None  # she may still answer it herself
    assert answer(pure, clock, offer, "ACCEPT").code == "done"


def test_a_stand_in_who_says_no_leaves_the_seat_as_it_was_and_the_player_is_told(pure, clock):
    box = Mailbox(pure)
    send(pure, clock, ALICE, f"DELEGATE {DORA} 5d")
    assert answer(pure, clock, offer_to(box), "REJECT").code == "done"
    assert pure.store.delegations(1, iso(clock())) == []
    assert f"{DORA} does not stand in for you" in box.to(ALICE)[-1]["subject"]
    assert "has said no" in box.to(ALICE)[-1]["body"]
    assert not [m for m in box.to(DORA) if "You stand in" in m["subject"]]
    assert pure.store.interventions(1) == []


def test_delegate_none_ends_the_turn_early_on_the_record(pure, clock):
    box = Mailbox(pure)
    mail = stand_in(pure, clock, box)
    clock.advance(hours=2)
    box.new()
    assert send(pure, clock, ALICE, "DELEGATE NONE").code == "done"
    told = {m["to"]: m for m in box.new()}
    assert f"{DORA} no longer stands in for your seat" in told[ALICE]["body"]
    assert "has ended your turn as stand-in" in told[DORA]["body"]
    assert "alice plays seat 1 alone again" in told[BOB]["subject"]
    assert answer(pure, clock, mail, "bid 4").code == "refused"
    assert 0 not in pure.table(1).counted.get(1, {})
    play_out(pure, clock)
    published = record(pure)
    assert [(i["act"], i["by"], i["seat"]) for i in published["interventions"]] == [
        ("delegate", "player", 0),
        ("delegate_end", "player", 0),
    ]
    assert verify(published).ok


def test_the_stand_in_gets_the_seats_next_prompts_but_not_every_public_mail(pure, clock):
    box = Mailbox(pure)
    stand_in(pure, clock, box)
    box.new()
    to_deadline(pure, clock)
    pure.tick()  # round 1 resolved (random bids), round 2 opens
    fresh = box.new()
    assert sorted(m["subject"].split("] ")[1][:18] for m in fresh if m["to"] == DORA) == ["Round 2 of 13: the"]
    [alices, doras] = [m for m in fresh if "Round 2 of 13: the prize" in m["subject"] and m["to"] in (ALICE, DORA)]
    assert doras["body"].split("\n-- \n")[0] == alices["body"].split("\n-- \n")[0]  # the seat's own prompt
    assert doras["reply_to"] != alices["reply_to"]


def test_a_turn_based_seats_stand_in_is_prompted_at_once_and_plays_on(turns, clock):
    box = Mailbox(turns)
    mover = turns.table(1).phase_to_move()["movers"][0]
    player = PLAYERS[mover]
    stand_in(turns, clock, box, "2d", player=player)
    [prompt] = [m for m in box.to(DORA) if "your turn" in m["subject"]]  # the seat owes a move now
    assert answer(turns, clock, prompt, "pass").code == "move"
    assert turns.table(1).counted[1][mover]["move"] == "pass"
    play_out(turns, clock)
    assert verify(record(turns)).ok


def test_a_stand_ins_token_from_another_address_changes_nothing_and_the_stand_in_is_told(pure, clock):
    box = Mailbox(pure)
    mail = stand_in(pure, clock, box)
    forged = make_mail("mallory@example.com", "bid 2", to=mail["reply_to"], received=clock())
    assert pure.ingest(forged).code == "refused"
    assert 0 not in pure.table(1).counted.get(1, {})
    assert box.to(DORA)[-1]["subject"] == "[pure-skill-1] A mail in your name was not accepted"
    assert not box.to("mallory@example.com")


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("DELEGATE bob@example.org 5d", "bob@example.org plays seat 2 of this game: nobody plays two seats"),
        ("DELEGATE Alice+away@example.org 5d", "That is your own address"),
        ("DELEGATE referee@example.org 5d", "is the referee's own address"),
        ("DELEGATE dora.example.net 5d", '"dora.example.net" is not a mail address'),
        ("DELEGATE dora@example.net UNTIL 2026-11-20", "2026-11-20 00:00 UTC is not to come"),
        ("DELEGATE dora@example.net 31d", "for 30 days at most (this referee's longest_delegation)"),
        ("DELEGATE dora@example.net UNTIL next week", '"next week" is no date, time or duration'),
        ("DELEGATE dora@example.net", "Write DELEGATE, your stand-in's address and until when"),
        ("DELEGATE NONE", "Your seat has no stand-in, and has asked nobody to be one"),
    ],
)
def test_a_delegate_that_cannot_be_is_refused_politely_and_changes_nothing(pure, clock, line, says):
    box = Mailbox(pure)
    box.new()
    assert send(pure, clock, ALICE, line).code == "refused"
    [reply] = box.new()
    assert reply["to"] == ALICE and says in " ".join(reply["body"].split())
    assert pure.store.open_offers() == [] and pure.store.interventions(1) == []


def test_nobody_stands_in_for_two_seats_nor_a_seat_for_two_stand_ins(pure, clock):
    box = Mailbox(pure)
    assert send(pure, clock, BOB, f"DELEGATE {DORA} 2d").code == "done"  # asked, not yet answered
    assert send(pure, clock, ALICE, f"DELEGATE {DORA} 2d").code == "refused"
    assert "dora@example.net stands in for seat 2 of this game already, or is asked to" in box.to(ALICE)[-1]["body"]
    assert answer(pure, clock, offer_to(box), "").code == "done"  # Dora takes Bob's
    assert send(pure, clock, CAROL, f"DELEGATE {DORA} 3d").code == "refused"
    assert "stands in for seat 2 of this game already" in box.to(CAROL)[-1]["body"]
    assert send(pure, clock, BOB, "DELEGATE erin@example.net 1d").code == "refused"
    assert f"{DORA} stands in for your seat until" in box.to(BOB)[-1]["body"]
    assert [d["seat"] for d in pure.store.delegations(1, iso(clock()))] == [1]


def test_a_seat_asks_three_stand_ins_a_day_at_most(pure, clock):
    for name in ("erin", "frank", "gina"):
        assert send(pure, clock, ALICE, f"DELEGATE {name}@example.net 2d").code == "done"
    assert len(pure.store.open_offers()) == 1  # each took back the one before
    assert send(pure, clock, ALICE, "DELEGATE hal@example.net 2d").code == "refused"
    clock.advance(days=1, seconds=1)
    assert send(pure, clock, ALICE, "DELEGATE hal@example.net 2d").code == "done"


def test_a_date_is_read_in_the_players_zone(pure, clock):
    box = Mailbox(pure)
    send(pure, clock, ALICE, "TIMEZONE Europe/Berlin")
    assert send(pure, clock, ALICE, f"delegate to {DORA} until 2026-11-24").code == "done"
    assert pure.store.open_offers()[0]["detail"]["until"] == "2026-11-23T23:00:00Z"
    assert send(pure, clock, ALICE, f"*Delegate: {DORA} until 2026-11-24T18:00Z.*").code == "done"
    assert pure.store.open_offers()[0]["detail"]["until"] == "2026-11-24T18:00:00Z"
    assert "Your earlier request to dora@example.net is withdrawn" in " ".join(box.to(ALICE)[-1]["body"].split())


def test_an_offer_unanswered_lapses_and_the_player_is_told(pure, clock):
    box = Mailbox(pure)
    send(pure, clock, ALICE, f"DELEGATE {DORA} 12h")
    offer = offer_to(box)
    [made] = pure.store.open_offers()
    clock.advance(hours=12)  # the offer lasts until the turn would end, as that is sooner than a day
    assert pure.tick() == [f"offer {made['id']} (delegate) expired unanswered"]
    assert "did not answer in time" in box.to(ALICE)[-1]["body"]
    assert answer(pure, clock, offer, "ACCEPT").code == "refused"
    assert pure.store.delegations(1, iso(clock())) == []


def test_a_seat_that_changes_hands_ends_its_stand_ins_turn(pure, clock):
    box = Mailbox(pure)
    mail = stand_in(pure, clock, box)
    clock.advance(hours=1)
    assert send(pure, clock, ALICE, "RESIGN").code == "done"
    assert "Seat 1 of game 1 (Game of Pure Skill) has changed hands" in " ".join(box.to(DORA)[-1]["body"].split())
    assert answer(pure, clock, mail, "bid 3").code == "refused"
    assert "ended at 2026-11-21 13:00 UTC" in box.to(DORA)[-1]["body"]
    play_out(pure, clock)
    published = record(pure)
    assert [(i["act"], i["by"], i["why"]) for i in published["interventions"]] == [
        ("delegate", "player", ""),
        ("delegate_end", "referee", "seat 1's player left the game"),
    ]
    assert verify(published).ok


def test_the_keepers_takeover_ends_the_old_players_stand_ins_turn(pure, clock):
    box = Mailbox(pure)
    stand_in(pure, clock, box)
    pure.replace(1, ALICE, "erin@example.net", "shell", "Alice moved away")
    assert pure.store.delegations(1, iso(clock())) == []
    assert [i["act"] for i in pure.store.interventions(1)] == ["delegate", "delegate_end", "replace"]
    box.new()
    assert send(pure, clock, "erin@example.net", "bid 4").code == "move"
    assert not [m for m in box.new() if m["to"] == DORA]  # the newcomer's mail is not copied to Alice's friend


def test_verify_refuses_a_record_whose_stand_ins_were_altered(pure, clock, tmp_path):
    box = Mailbox(pure)
    stand_in(pure, clock, box, "2d")
    clock.advance(hours=3)
    send(pure, clock, ALICE, "DELEGATE NONE")
    play_out(pure, clock)
    published = record(pure)
    assert verify(published).ok
    given, ended = published["interventions"]
    Site(pure, tmp_path / "site").render()
    text = page(tmp_path / "site", "games/1/index.html").text
    assert "alice named a stand-in to play seat 1 until" in text and DORA not in text
    assert "the stand-in's turn at seat 1 ended: alice plays it alone again" in text
    tampered = []
    for field, value in (("until", given["at"]), ("until", "2026-11-21T12:30:00Z"), ("by", "keeper"), ("seat", 7)):
        forged = copy.deepcopy(published)
        forged["interventions"][0][field] = value
        tampered.append(forged)
    forged = copy.deepcopy(published)
    forged["interventions"][1]["seat"] = 1  # ends a turn seat 2 never had
    tampered.append(forged)
    forged = copy.deepcopy(published)
    forged["interventions"][0]["address"] = DORA  # a field the record never has
    tampered.append(forged)
    forged = copy.deepcopy(published)
    forged["interventions"].insert(1, {**given, "at": ended["at"]})  # a second stand-in while the first's turn lasts
    tampered.append(forged)
    for forged in tampered:
        verdict = verify(forged)
        assert not verdict.ok, forged["interventions"]
    assert from_iso(given["until"]) - from_iso(given["at"]) == timedelta(days=2)


def test_a_player_the_keeper_resigns_has_the_mail_saying_so_and_their_stand_in_only_the_end(pure, clock):
    box = Mailbox(pure)
    stand_in(pure, clock, box)
    box.new()
    pure.resign(1, ALICE)
    fresh = box.new()
    assert [m["subject"] for m in fresh if m["to"] == DORA] == [
        "[pure-skill-1] Your turn as stand-in for seat 1 of game 1 is over"
    ]
    assert any("You have left game 1" in m["body"] for m in fresh if m["to"] == ALICE)
