"""Adversarial review of NOTIFY's levels (issue 33, item 4) where they meet
the other features: the unsubscribe button, a newcomer in a seat, a level
changed mid-game, the daily digest."""

from __future__ import annotations

import random
from datetime import timedelta

from conftest import PLAYERS, START, FakeClock, Mailbox, answer, make_mail, send
from test_delegating import DORA, stand_in

from referee.engine import Engine
from referee.mail.tokens import token_address, unsubscribe_token
from referee.store import Notify, Store

ALICE, BOB, CAROL = PLAYERS
DAVE = "dave@example.org"
SINCE = "Since your last mail about this game:"


def play_round(engine: Engine, clock: FakeClock) -> None:
    """Every seat still played by a person bids its highest card, an hour apart."""
    table = engine.table(1)
    for seat in table.waiting_for(table.open_phase):
        if not table.human(seat):
            continue
        clock.advance(hours=1)
        table = engine.table(1)
        move = table.rules.legal_moves(table.state, seat)[-1]
        assert send(engine, clock, table.label(seat), table.rules.move_text(move)).code == "move"


def digests(box: Mailbox, address: str) -> list[dict]:
    return [m for m in box.to(address) if m["subject"].split("] ", 1)[-1].startswith("What happened since")]


def press_unsubscribe(engine: Engine, clock: FakeClock, player: str) -> None:
    table = engine.table(1)
    seat = table.seat_of(player)
    address = token_address(engine.config.address, unsubscribe_token(engine.key, 1, seat, player))
    engine.ingest(make_mail(player, "", to=address, subject="unsubscribe", received=clock()))


def test_the_unsubscribe_button_starts_the_digests_a_day_later_as_notify_digest_does(engine, clock):
    """Bob, at TURNS, presses unsubscribe on day 3: his mail is a digest now,
    and his first digest is due a day after he chose it (NOTIFY DIGEST's
    rule), not at once: a digest in the same minute as "you unsubscribed"
    is a mail he just asked not to get."""
    engine.new_game("pure-skill", PLAYERS)
    box = Mailbox(engine)
    for _ in range(2):
        play_round(engine, clock)
    clock.now = START + timedelta(days=2)
    engine.tick()
    box.new()
    press_unsubscribe(engine, clock, BOB)
    assert engine.table(1).seats[1]["notify"] == Notify.DIGEST
    play_round(engine, clock)  # round 3 resolved: something bob was not told of
    engine.tick()
    assert digests(box, BOB) == []
    clock.advance(days=1)
    engine.tick()
    assert len(digests(box, BOB)) == 1


def test_a_newcomer_is_not_told_since_the_last_mail_of_the_player_who_left(engine, clock):
    """Alice, at DIGEST, has had no digest yet when the keeper gives her seat
    to Dave in round 4 (at the game's TURNS).  Dave's welcome shows where the
    seat stands; his first round result does not begin "Since your last mail
    about this game" with rounds 1 to 3, which he never had a mail about
    (what Alice was told is hers, not his)."""
    engine.new_game("pure-skill", PLAYERS)
    assert send(engine, clock, ALICE, "NOTIFY DIGEST").code == "done"
    box = Mailbox(engine)
    for _ in range(3):
        play_round(engine, clock)
    engine.replace(1, "1", DAVE, "shell", "alice is away for good")
    play_round(engine, clock)
    [result] = [m for m in box.to(DAVE) if "Round 4 of 13" in m["subject"] and "resolved" in m["body"]]
    assert SINCE not in result["body"], result["body"][:600]


def test_a_digest_newcomer_s_first_digest_is_of_the_game_since_they_took_the_seat(engine, clock):
    """The game's level is DIGEST; Alice had her digest on day 1, then the
    keeper gives her seat to Dave on day 2, after rounds 4 to 6.  Dave's
    first digest tells what happened since he took the seat, not since
    Alice's last digest (rounds he was never told of as news)."""
    engine.new_game("pure-skill", PLAYERS, notify=Notify.DIGEST)
    box = Mailbox(engine)
    for _ in range(3):
        play_round(engine, clock)
    clock.now = START + timedelta(days=1)
    engine.tick()
    assert len(digests(box, ALICE)) == 1
    for _ in range(3):
        play_round(engine, clock)
    engine.replace(1, "1", DAVE, "shell", "alice is away for good")
    play_round(engine, clock)  # round 7
    clock.now = START + timedelta(days=3)
    engine.tick()
    [first] = digests(box, DAVE)
    history = first["body"].split("Round  Prize")[1].split("Totals:")[0]
    rounds = [int(row.split()[0]) for row in history.splitlines() if row.strip()[:1].isdigit()]
    assert rounds == [7], history


def _play_until(engine: Engine, clock: FakeClock, done, choose: random.Random) -> None:
    """Each mover answers with a legal move, half an hour apart, until ``done(table)``."""
    for _ in range(500):
        table = engine.table(1)
        if done(table):
            return
        seat = table.waiting_for(table.open_phase)[0]
        move = choose.choice(table.rules.legal_moves(table.state, seat))
        clock.advance(minutes=30)
        assert send(engine, clock, table.label(seat), table.rules.move_text(move)).code == "move"
    raise AssertionError("never came")


def test_private_news_held_for_a_digest_is_not_lost_when_the_player_leaves_digest(tmp_path, config, clock, seeds):
    """Bluff: Bob asks NOTIFY DIGEST at the start.  Round 2's roll gives him
    new dice while another seat opens the round: at DIGEST his news waits
    for his daily digest.  Before it comes he asks NOTIFY TURNS: there will
    be no digest now, and his round-2 dice must still reach him by mail as
    his news (it did at every level that never was DIGEST)."""
    seeds.fixed = bytes(range(32))
    engine = Engine(Store(config.database), config, clock, seeds)
    engine.new_game("bluff", PLAYERS)
    box = Mailbox(engine)
    assert send(engine, clock, BOB, "NOTIFY DIGEST").code == "done"
    choose = random.Random(3)
    _play_until(engine, clock, lambda t: t.state.round == 2, choose)
    table = engine.table(1)
    assert 1 not in table.open_phase["movers"], table.open_phase  # (the seed's: bob does not open round 2)
    news = table.rules.private_news(table.replay.steps[-1].before, table.state, 1)
    assert news is not None and news["round"] == 2
    text = engine.post.composer.section("_news", **engine.post.context(table, 1), news=news)
    text = text.split("Only for you:")[1].strip()
    assert not any(text in m["body"] for m in box.to(BOB))  # held for his digest
    assert send(engine, clock, BOB, "NOTIFY TURNS").code == "done"
    _play_until(engine, clock, lambda t: t.state.round == 3, choose)  # (no digest: he is at TURNS)
    assert digests(box, BOB) == []
    assert any(text in m["body"] for m in box.to(BOB)), "bob's round-2 dice never reached him as his news"


def test_a_stand_in_cannot_change_how_much_mail_the_seats_player_gets(engine, clock):
    """Dora stands in for Alice.  How much mail Alice gets is Alice's own
    choice (as the unsubscribe button is): Dora's NOTIFY DIGEST is refused
    and leaves Alice's level as it was; NOTIFY alone still says it."""

    engine.new_game("pure-skill", PLAYERS)
    box = Mailbox(engine)
    welcome = stand_in(engine, clock, box)

    assert answer(engine, clock, welcome, "NOTIFY DIGEST").code == "refused"
    assert engine.table(1).seats[0]["notify"] is None
    assert answer(engine, clock, welcome, "NOTIFY").code == "done"
    assert box.to(DORA)[-1]["body"].count("You get") == 1


def test_a_stand_in_gets_a_copy_of_the_receipt_folded_into_the_round_result(engine, clock):
    """Dora stands in for Alice (at TURNS).  Alice's own bid ends round 1:
    her receipt goes at the top of the round's result instead of in a
    mail of its own.  Dora still gets her copy of the answer to Alice's
    move, as she does when it goes on its own (playing.md: "Each of you
    gets a copy of the answer to the other's move")."""
    engine.new_game("pure-skill", PLAYERS)
    box = Mailbox(engine)
    stand_in(engine, clock, box)
    send(engine, clock, BOB, "bid 5")
    send(engine, clock, CAROL, "bid 6")
    box.new()
    assert send(engine, clock, ALICE, "bid 4").code == "move"
    new = box.new()
    [result] = [m for m in new if m["to"] == ALICE and "Round 1 of 13" in m["subject"]]
    assert result["body"].startswith("In answer to your mail:")  # folded
    assert any("> bid 4" in m["body"] for m in new if m["to"] == DORA), [m["subject"] for m in new if m["to"] == DORA]
