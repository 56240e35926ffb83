"""The kill soak's own reckoning (killsoak.py) of which bids count, against
the order the referee reads mail in: no mail server needed.

The case the power-cut soak met in CI (seed 2, game 5 round 8): a player's
two bids came in one second, the closing bid a second later, and Dovecot
numbered the closing bid before her first.  The referee read all four in
one pass, in receipt order (tests/unit/test_runner.py), and counted her
first bid, numbered last; the soak, reckoning a round closed with the
third seat's first bid in UID order, took that bid for late."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from killsoak import Bid, Place, expected_moves, last_cards, misread

SECOND = datetime(2026, 11, 26, 12, 0, 5, tzinfo=UTC)
NEXT = SECOND + timedelta(seconds=1)


def bid(seat: int, card: str, serial: int) -> Bid:
    return Bid(5, 8, seat, card, False, f"<g5.r8.{serial}.2@players.example.net>", f"p5-{seat}@x", "referee@x", b"")


# As sent: seat 0 bids, seat 2 bids 2 then changes her mind to 10, seat 1 closes.
FIRST, OTHER, CHANGE, CLOSING = bid(0, "7", 288), bid(2, "2", 289), bid(2, "10", 290), bid(1, "4", 291)
SENT = [FIRST, OTHER, CHANGE, CLOSING]
PLACE: dict[str, Place] = {  # as Dovecot numbered them: her first bid last
    FIRST.message_id: (SECOND, 1),
    CHANGE.message_id: (SECOND, 2),
    CLOSING.message_id: (NEXT, 3),
    OTHER.message_id: (SECOND, 4),
}


def ids(*bids: Bid) -> list[str]:
    return [b.message_id for b in bids]


def test_a_bid_read_in_the_pass_that_closed_the_round_but_received_before_the_closing_bid_counts():
    read = ids(FIRST, CHANGE, OTHER, CLOSING)  # one pass: receipt order, UID order within the second
    assert misread(PLACE, read) == []
    moves = expected_moves(SENT, PLACE, read)[5, 8]
    assert moves == [FIRST, CHANGE, OTHER, CLOSING]  # four moves by mail for three seats
    assert last_cards(moves) == ["7", "4", "2"]  # of her two in one second, the one numbered last


def test_a_bid_read_in_a_pass_after_the_round_closed_is_late():
    read = ids(FIRST, CHANGE, CLOSING, OTHER)  # the first pass read UIDs 1 to 3; UID 4 came after it
    assert misread(PLACE, read) == []
    moves = expected_moves(SENT, PLACE, read)[5, 8]
    assert moves == [FIRST, CHANGE, CLOSING]
    assert last_cards(moves) == ["7", "4", "10"]


def test_an_order_no_pass_reads_in_is_a_violation():
    """Mail read before mail the server numbered earlier and received in
    the same second or an earlier one: no pass does that."""
    assert misread(PLACE, ids(CHANGE, FIRST, CLOSING, OTHER)) == [
        f"{FIRST.message_id} (UID 1) was read after {CHANGE.message_id} (UID 2)"
    ]
    assert misread(PLACE, ids(FIRST, CLOSING, CHANGE, OTHER)) == [
        f"{CHANGE.message_id} (UID 2) was read after {CLOSING.message_id} (UID 3)"
    ]
