"""Review of round 41's skipped next_due (Runner._ingest, Timers.due_stamp):
a keeper's command run in another process between two transactions of a
pass (a shell's `referee pause` takes no run lock) may give a game an
earlier moment: here a pause's end.  A player's mail of that game that
writes none of NEXT_DUE_READS's tables must still bring that moment into
the pass's ``due``, as before round 41: else what falls due before the next
mail is not done first, and that mail meets the game as it was not when it
came (here: the game still paused, so the last bid resolves nothing)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from conftest import PLAYERS, make_mail, reply

from referee.engine import Engine
from referee.mail.source import Received
from referee.mail.tokens import token_address
from referee.runner import Runner
from referee.store import Store

ALICE, BOB, CAROL = PLAYERS


def test_a_pause_end_set_by_another_process_is_done_before_the_next_mail(config, clock, seeds):
    engine = Engine(Store(config.database), config, clock, seeds)
    runner = Runner.from_config(config, engine)
    game = engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=1))
    start = clock()
    due = min(engine.next_due(), default=None)  # (as a pass starts: the deadline, an hour on)
    # Between two transactions of the pass, the keeper pauses the game for ten minutes from a shell.
    keeper = Engine(Store(config.database), config, clock, seeds)
    keeper.pause(game, "keeper@example.org", until=start + timedelta(minutes=10))
    clock.advance(minutes=30)  # (the pass reads them half an hour on)
    mails = [(ALICE, "bid 3", 5), (BOB, "bid 4", 20), (CAROL, "bid 5", 25)]  # (minutes after the start)
    dues = []
    for n, (player, text, minutes) in enumerate(mails):
        with engine.store.batch():
            received = Received(str(n), reply(engine, player, text), start + timedelta(minutes=minutes))
            due = runner._ingest(received, due, [], [])
        dues.append(due)
    assert dues[0] == start + timedelta(minutes=10), "Alice's bid left the pause's end the next moment due"
    # The pause ended (at 10 minutes) before Bob's bid came: Carol's, the last, resolved the round.
    assert engine.table(game).paused is None
    assert [message["code"] for message in engine.store.messages()] == ["move"] * 3
    assert len(engine.table(game).phases) == 2


def test_a_reminder_again_after_another_process_s_extension_goes_before_the_next_mail(config, clock, seeds):
    """The keeper extends a phase whose reminder went out (the extension
    asks for a reminder again, ten minutes before the new deadline, earlier
    than the old deadline): Bob's bid, which comes after that moment, comes
    after his reminder, as it did before round 41."""
    config = replace(config, reminder=timedelta(minutes=20))
    engine = Engine(Store(config.database), config, clock, seeds)
    runner = Runner.from_config(config, engine)
    game = engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=1))
    start = clock()
    clock.advance(minutes=41)
    assert engine.tick() == ["reminded 3 player(s) in game 1 Round 1 of 13"]  # (at 40 minutes)
    due = min(engine.next_due(), default=None)  # (as a pass starts: the deadline)
    keeper = Engine(Store(config.database), config, clock, seeds)
    keeper.extend(game, timedelta(minutes=10), "keeper@example.org")  # (its reminder again at 50 minutes)
    clock.advance(minutes=19)
    before = {mail["id"] for mail in engine.store.outbox()}
    for n, (player, text, minutes) in enumerate([(ALICE, "bid 3", 45), (BOB, "bid 4", 55)]):
        with engine.store.batch():
            received = Received(str(n), reply(engine, player, text), start + timedelta(minutes=minutes))
            due = runner._ingest(received, due, [], [])
    mails = [mail for mail in engine.store.outbox() if mail["id"] not in before]
    assert [mail["recipients"] for mail in mails if "reminder" in mail["subject"]] == [[BOB], [CAROL]]


def test_an_offer_made_by_a_mail_of_no_game_lapses_before_a_later_mail(config, clock, seeds):
    """A stranger's WATCH (a mail of no game: its outcome names none) makes
    an offer of game 1 that lapses in two days; Alice's bid after it writes
    nothing next_due reads, yet it brings the game's moments (that lapse)
    into the pass's ``due``, as before round 41.  So the stranger's yes,
    three days on, finds the offer lapsed: they do not follow the game."""
    engine = Engine(Store(config.database), config, clock, seeds)
    runner = Runner.from_config(config, engine)
    game = engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=30))
    start = clock()
    due = min(engine.next_due(), default=None)  # (as a pass starts: the deadline, a month on)
    clock.advance(days=4)  # (the pass reads them four days on)
    stranger = "stranger@example.net"
    first = [
        make_mail(stranger, "watch 1", subject="watch 1"),
        reply(engine, ALICE, "bid 3"),
    ]
    for n, raw in enumerate(first):
        with engine.store.batch():
            due = runner._ingest(Received(str(n), raw, start + timedelta(minutes=1 + n)), due, [], [])
    (offer,) = [offer for offer in engine.store.open_offers() if offer["address"] == stranger]
    yes = make_mail(stranger, "yes", subject="Re: game 1", to=token_address(config.address, offer["token"]))
    with engine.store.batch():
        runner._ingest(Received("2", yes, start + timedelta(days=3)), due, [], [])
    assert engine.store.watchers(game) == []
    assert engine.store.messages()[-1]["code"] == "refused"
