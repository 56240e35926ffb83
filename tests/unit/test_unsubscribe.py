"""List-Unsubscribe (issue 33, item 4): every mail to a seat carries a
mailto: address of its own (RFC 2369), and a mail to it, as a mail client's
unsubscribe button sends it, makes the seat's mail a digest (prompts still
come), answered once, and does nothing else: never a move, whatever it says.

Played through ``Engine.ingest``: a game of Pure Skill, a player's
unsubscribe, a second one, a forged one, and one whose body bids."""

from __future__ import annotations

import email
import re
from email import policy

import pytest
from conftest import PLAYERS, Mailbox, make_mail, seat_address, send

from referee.engine import Engine
from referee.mail.tokens import token_address, unsubscribe_token
from referee.store import Notify

ALICE, BOB, CAROL = PLAYERS
_HEADER = re.compile(r"<mailto:(referee\+([a-z2-7]{16})@example\.org)\?subject=unsubscribe>")


@pytest.fixture
def pure(engine: Engine) -> Engine:
    engine.new_game("pure-skill", PLAYERS)
    return engine


def unsubscribe_address(mail: dict) -> str:
    """The address a mail's List-Unsubscribe names (a mail client's button mails it)."""
    match = _HEADER.fullmatch(str(mail["message"]["List-Unsubscribe"]).strip())
    assert match, mail["message"]["List-Unsubscribe"]
    return match[1]


def read(box: Mailbox) -> list[dict]:
    """The new mail, each with its parsed ``message``."""
    return [{**m, "message": email.message_from_bytes(m["raw"], policy=policy.default)} for m in box.new()]


def unsubscribe(engine: Engine, clock, address: str, sender: str = ALICE, body: str = "", **kwargs):
    """What a mail client's unsubscribe button sends: to the address, subject "unsubscribe"."""
    kwargs.setdefault("subject", "unsubscribe")
    return engine.ingest(make_mail(sender, body, to=address, received=clock(), **kwargs))


def notify(engine: Engine, player: str) -> str | None:
    table = engine.table(1)
    return table.seats[table.seat_of(player)]["notify"]


def test_a_prompt_a_receipt_and_a_round_mail_each_carry_the_seats_own_unsubscribe_address(pure, clock):
    box = Mailbox(pure)
    start = read(box)
    prompt = next(
        m for m in start if m["to"] == ALICE and "Round 1 of 13" in m["subject"] and "begins" not in m["subject"]
    )
    send(pure, clock, ALICE, "bid 7")
    [receipt] = read(box)
    send(pure, clock, BOB, "bid 6")
    send(pure, clock, CAROL, "bid 5")
    round_mail = next(m for m in read(box) if m["to"] == ALICE and "Round 1 of 13" in m["subject"])
    own = token_address(pure.config.address, unsubscribe_token(pure.key, 1, 0, ALICE))
    assert {unsubscribe_address(m) for m in (prompt, receipt, round_mail)} == {own}
    # Each seat its own; never its reply address (a mail to it must never be a move).
    addresses = {m["to"]: unsubscribe_address(m) for m in start}
    assert len(set(addresses.values())) == 3
    assert all(addresses[p] != seat_address(pure, p) for p in PLAYERS)


def test_mail_to_a_stranger_carries_no_unsubscribe_address(engine, clock):
    box = Mailbox(engine)
    engine.ingest(make_mail("dave@example.net", "join pure-skill", subject="hello", received=clock()))
    answers = read(box)  # the confirmation, and the reply that says it was sent
    assert len(answers) == 2 and all(m["to"] == "dave@example.net" for m in answers)
    assert all(m["message"]["List-Unsubscribe"] is None for m in answers)  # no list's mail


def test_an_unsubscribe_makes_the_seats_mail_a_digest_and_is_answered_once(pure, clock):
    box = Mailbox(pure)
    address = unsubscribe_address(next(m for m in read(box) if m["to"] == ALICE))
    outcome = unsubscribe(pure, clock, address)
    assert (outcome.code, outcome.game_id) == ("done", 1)
    assert notify(pure, ALICE) == Notify.DIGEST and notify(pure, BOB) is None
    [answer] = read(box)
    assert answer["to"] == ALICE and answer["reply_to"] == seat_address(pure, ALICE)
    assert "you now get a daily digest" in answer["subject"]
    assert "NOTIFY EVERY" in answer["body"] and "You still play your seat" in answer["body"]
    assert answer["message"]["Auto-Submitted"] == "auto-replied"
    # Clicked again (or the answer's own button): nothing changes, nobody is mailed.
    again = unsubscribe(pure, clock, unsubscribe_address(answer))
    assert again.code == "done" and "already" in again.detail
    assert read(box) == [] and notify(pure, ALICE) == Notify.DIGEST
    # The seat still plays, from its reply address.
    assert send(pure, clock, ALICE, "bid 7").code == "move"


def test_the_token_alone_proves_an_unsubscribe_and_the_seats_own_address_is_told(pure, clock):
    """A mail client sending from an alias: the token suffices (it can only
    quiet the seat), and the answer goes to the seat, never to the From."""
    box = Mailbox(pure)
    address = unsubscribe_address(next(m for m in read(box) if m["to"] == BOB))
    assert (
        unsubscribe(
            pure, clock, address, sender="bob.alias@example.net", headers={"Auto-Submitted": "auto-generated"}
        ).code
        == "done"
    )
    assert notify(pure, BOB) == Notify.DIGEST
    assert [m["to"] for m in read(box)] == [BOB]


def test_a_forged_or_unknown_unsubscribe_token_changes_nothing_and_is_not_answered(pure, clock):
    box = Mailbox(pure)
    read(box)
    forged = token_address(pure.config.address, unsubscribe_token(b"another key", 1, 0, ALICE))
    outcome = unsubscribe(pure, clock, forged)
    assert outcome.code == "ignored"
    assert [notify(pure, p) for p in PLAYERS] == [None, None, None]
    assert read(box) == []
    # An old player's token, after a newcomer took the seat over, quiets nobody.
    old = token_address(pure.config.address, unsubscribe_token(pure.key, 1, 2, CAROL))
    pure.replace(1, CAROL, "dave@example.net", "shell")
    read(box)
    assert unsubscribe(pure, clock, old, sender=CAROL).code == "ignored"
    assert notify(pure, "dave@example.net") is None and read(box) == []


def test_a_mail_to_the_unsubscribe_address_is_never_a_move_whatever_it_says(pure, clock):
    box = Mailbox(pure)
    address = unsubscribe_address(next(m for m in read(box) if m["to"] == ALICE))
    # Its body bids, its subject carries the seat's tag and token, and it is
    # copied to the seat's reply address: still only an unsubscribe.
    tag = pure.table(1).tag(0)
    outcome = unsubscribe(
        pure,
        clock,
        address,
        body="bid 5",
        subject=f"Re: {tag} Round 1 of 13",
        headers={"Cc": seat_address(pure, ALICE)},
    )
    assert outcome.code == "done"
    assert pure.store.moves(1) == []
    assert notify(pure, ALICE) == Notify.DIGEST
    [answer] = read(box)
    assert "bid 5" not in answer["body"]  # nothing of it is read, or quoted
    # A second one, bidding again, is not a move either, and not answered.
    assert unsubscribe(pure, clock, address, body="bid 5").code == "done"
    assert pure.store.moves(1) == [] and read(box) == []
