"""A newcomer from standby plays the phase they take the seat in (issue 33,
item 3: "a fresh deadline for the open phase"): while a seat is offered,
its bot does not move; the phase waits for it as for a person, until the
newcomer takes it (and gets the whole deadline for it), its deadline (the
bot moves then, as a bot), or nobody is left to ask (the bot moves at once).

Played by mail through ``ingest``, the clock moved by hand."""

from __future__ import annotations

import copy
from datetime import timedelta

from conftest import PLAYERS, answer, send, to_deadline
from test_standby import DORA, ERIN, OFFER, bid, offers_to, on_standby, play_out, record
from test_standby import box as _box

from referee.record import verify
from referee.timeutil import from_iso, iso, show

box = _box  # the fixture

ALICE, BOB, CAROL = PLAYERS


def seat_moves(engine, seat: int, game: int = 1) -> dict[int, dict]:
    """The move that counts for ``seat`` in each phase it moved in: phase -> its row."""
    counted = engine.table(game).counted
    return {number: moves[seat] for number, moves in counted.items() if seat in moves}


def a_bid(engine, seat: int, game: int = 1) -> str:
    """A legal bid of ``seat``'s, as text, of a total no other seat bids in
    the first two auctions (low in auction 1, higher in auction 2), so that
    the people playing them do not tie."""
    table = engine.table(game)
    bids = [m for m in table.rules.legal_moves(table.state, seat) if m[0] == "bid"]
    size = len(bids[0][1])  # one tile a bid, or two (under the Ace of Suns)
    target = seat + size - 1 + (0 if table.phase_to_move()["label"] == "Auction 1" else 3 + size - 1)
    return table.rules.move_text(min(bids, key=lambda m: (abs(sum(m[1]) - target), m[1])))


def into_the_second_auction(engine, clock) -> int:
    """Auction 1 played by everyone by mail, and Alice's bid in auction 2: its number."""
    for seat, address in enumerate(PLAYERS):
        assert send(engine, clock, address, a_bid(engine, seat)).code == "move"
    clock.advance(hours=1)
    engine.tick()
    phase = engine.table(1).phase_to_move()
    assert phase["label"] == "Auction 2"
    assert send(engine, clock, ALICE, a_bid(engine, 0)).code == "move"
    return phase["number"]


# -- Bid!: the auction Bob left is Dora's ------------------------------------------------


def test_a_newcomer_from_standby_bids_in_the_auction_the_player_left_with_a_fresh_deadline(engine, clock, box, seeds):
    seeds.fixed = bytes([7]) * 32  # (no tie for the bot to make by chance: the phases follow as written)
    on_standby(engine, clock, box, DORA)
    bid(engine, max_auctions=4)
    number = into_the_second_auction(engine, clock)
    clock.advance(hours=2)
    assert send(engine, clock, BOB, "RESIGN").code == "done"
    table = engine.table(1)
    assert table.waiting_for(table.phase_to_move()) == [1, 2]  # its bot waits for whoever takes the seat
    assert number not in seat_moves(engine, 1)

    clock.advance(hours=1)
    [offer] = offers_to(box, DORA)
    assert answer(engine, clock, offer, "yes").code == "done"
    accepted = clock()
    welcome, prompt, reply = box.to(DORA)[-3:]
    assert "Auction 2: " in prompt["subject"] and "Accepted" in reply["body"]
    fresh = iso(accepted + timedelta(days=2))  # the game's deadline, counted from her takeover
    assert engine.status(1)["phase"]["deadline"] == fresh
    assert f"Deadline: {show(fresh)} (in 2 days)" in prompt["body"]
    assert "Welcome" in welcome["subject"] and "has moved in it" not in welcome["body"]  # the auction is hers
    told = next(m for m in box.to(ALICE) if "dora takes over seat 2" in m["subject"])
    assert "deadline" in told["body"]  # the others are told the deadline moved

    clock.advance(hours=5)
    hers = a_bid(engine, 1)
    assert send(engine, clock, DORA, hers).code == "move"
    assert send(engine, clock, CAROL, a_bid(engine, 2)).code == "move"
    clock.advance(hours=1)
    engine.tick()
    move = seat_moves(engine, 1)[number]
    assert (move["move"], move["source"]) == (hers, "mail")  # her bid counted in that auction
    assert engine.table(1).phase_to_move()["number"] == number + 1

    play_out(engine, clock)
    published = record(engine)
    [taken] = published["interventions"]
    assert taken["bot_waited"] is True and taken["new"] == fresh
    assert verify(published).ok, verify(published)

    # The takeover relabelled as one after its bot moved: her bid would be the bot's seat's, made after Bob left.
    forged = copy.deepcopy(published)
    forged["interventions"][0]["bot_waited"] = False
    verdict = verify(forged)
    assert not verdict.ok and "seat 2's move by mail was received at" in verdict.message, verdict
    assert "after its player left at" in verdict.message
    # Her bid relabelled as the bot's, made while it waited: a person's seat in that auction moves as none.
    forged = copy.deepcopy(published)
    [moved] = [m for m in forged["phases"][number - 1]["moves"] if m["seat"] == 1]
    moved["source"] = "bot"
    assert not verify(forged).ok


def test_a_bot_waiting_for_a_newcomer_bids_as_a_bot_at_the_deadline_and_waits_again(engine, clock, box, seeds):
    seeds.fixed = bytes([7]) * 32  # (no tie for the bot to make by chance: the phases follow as written)
    on_standby(engine, clock, box, DORA)
    engine.new_game("bid", PLAYERS, deadline=timedelta(hours=12), options={"max_auctions": 4})
    number = into_the_second_auction(engine, clock)
    assert send(engine, clock, BOB, "RESIGN").code == "done"
    assert send(engine, clock, CAROL, a_bid(engine, 2)).code == "move"
    deadline = engine.status(1)["phase"]["deadline"]
    to_deadline(engine, clock)
    engine.tick()
    move = seat_moves(engine, 1)[number]
    assert (move["source"], move["received_at"]) == ("bot", deadline)  # a bot's, not random for a missed deadline
    table = engine.table(1)
    assert 1 in table.waiting_for(table.phase_to_move())  # the next auction: the bot waits again

    clock.advance(hours=1)
    [offer] = offers_to(box, DORA)
    assert answer(engine, clock, offer, "").code == "done"
    assert engine.status(1)["phase"]["deadline"] == iso(clock() + timedelta(hours=12))
    assert send(engine, clock, DORA, a_bid(engine, 1)).code == "move"
    assert seat_moves(engine, 1)[number + 1]["source"] == "mail"
    play_out(engine, clock)
    assert verify(record(engine)).ok


def test_an_offer_that_lapses_with_nobody_else_on_standby_lets_the_bot_bid_at_once(engine, clock, box, seeds):
    seeds.fixed = bytes([7]) * 32  # (no tie for the bot to make by chance: the phases follow as written)
    on_standby(engine, clock, box, DORA)
    bid(engine, max_auctions=4)
    number = into_the_second_auction(engine, clock)
    assert send(engine, clock, CAROL, a_bid(engine, 2)).code == "move"
    assert send(engine, clock, BOB, "RESIGN").code == "done"
    assert number not in seat_moves(engine, 1) and engine.table(1).phase_to_move()["number"] == number

    [offer] = engine.store.open_offers()
    clock.advance(days=1)  # the offer's day (standby_answer), well before the auction's deadline
    engine.tick()
    assert engine.store.open_offers() == []
    move = seat_moves(engine, 1)[number]
    assert (move["source"], move["received_at"]) == ("bot", offer["expires_at"])  # at once, as the chain ended
    assert engine.table(1).phase_to_move()["number"] == number + 1  # every bid in: the auction went on
    assert number + 1 in seat_moves(engine, 1)  # and in the next the bot moves at once, as bots do
    play_out(engine, clock)
    assert verify(record(engine)).ok


def test_with_nobody_on_standby_the_bot_bids_at_once_when_the_player_leaves(engine, clock, box, seeds):
    seeds.fixed = bytes([7]) * 32  # (no tie for the bot to make by chance: the phases follow as written)
    on_standby(engine, clock, box, ERIN, "ice")  # on standby for another kind of game: not asked
    bid(engine, max_auctions=4)
    number = into_the_second_auction(engine, clock)
    clock.advance(minutes=30)
    assert send(engine, clock, BOB, "RESIGN").code == "done"
    move = seat_moves(engine, 1)[number]
    assert (move["source"], from_iso(move["received_at"])) == ("bot", clock())
    assert engine.store.open_offers() == [] and not any(OFFER in m["subject"] for m in box.all)


# -- a turn-based game: the turn Bob left is Dora's ------------------------------------------


def test_a_newcomer_takes_the_turn_the_player_left_open_in_a_turn_based_game(engine, clock, box, seeds):
    seeds.fixed = bytes([7]) * 32  # (no tie for the bot to make by chance: the phases follow as written)
    on_standby(engine, clock, box, DORA, "priority")
    engine.new_game("priority", PLAYERS, options={"turn_limit": 1})
    for _ in range(20):  # on to Bob's turn
        table = engine.table(1)
        if table.waiting_for(table.phase_to_move()) == [1]:
            break
        to_deadline(engine, clock)
        engine.tick()
    table = engine.table(1)
    phase = table.phase_to_move()
    assert table.waiting_for(phase) == [1]
    assert send(engine, clock, BOB, "RESIGN").code == "done"
    assert engine.table(1).phase_to_move()["number"] == phase["number"]  # the turn waits

    clock.advance(hours=1)
    [offer] = offers_to(box, DORA)
    assert answer(engine, clock, offer, "accept").code == "done"
    table = engine.table(1)
    length = from_iso(phase["deadline"]) - from_iso(phase["opened_at"])
    assert table.phase_to_move()["deadline"] == iso(clock() + length)
    assert any(phase["label"] in m["subject"] and "Welcome" not in m["subject"] for m in box.to(DORA))  # her prompt
    move = table.rules.legal_moves(table.state, 1)[0]
    assert send(engine, clock, DORA, table.rules.move_text(move)).code == "move"
    assert seat_moves(engine, 1)[phase["number"]]["source"] == "mail"
    assert engine.table(1).phase_to_move()["number"] > phase["number"]  # her move played the turn

    for _ in range(300):
        if engine.status(1)["state"] != "running":
            break
        to_deadline(engine, clock)
        engine.tick()
    published = record(engine)
    assert published["interventions"][0]["bot_waited"] is True
    assert verify(published).ok, verify(published)
