"""Review of issue 34's sign-ups that start: the window, START and LEAVE, and
handling the same mail again after a restore.  Every step by mail through
``ingest``, the clock moved by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta

from conftest import FakeClock, Mailbox, make_mail
from test_club_signup import ANN, BEN, CAT, confirmation, status

from referee.engine import Engine
from referee.site.public import game_record
from referee.store import Store
from referee.timeutil import iso

Sent = list[tuple[bytes, datetime]]


def _mail(engine: Engine, clock: FakeClock, sent: Sent, raw: bytes) -> None:
    """One mail received now, kept to be handled again."""
    sent.append((raw, clock()))
    engine.ingest(raw, received_at=clock())


def _signs_up(engine: Engine, clock: FakeClock, box: Mailbox, sent: Sent, address: str, line: str, reply: str = ""):
    """``address`` sends ``line`` and replies ``reply`` to the confirmation, a minute on."""
    _mail(engine, clock, sent, make_mail(address, line, subject="Hello referee", received=clock()))
    clock.advance(minutes=1)
    mail = confirmation(box, address)
    thread = {"In-Reply-To": mail["message_id"], "References": mail["message_id"]}
    raw = make_mail(address, reply, to=mail["reply_to"], headers=thread, subject=f"Re: {mail['subject']}")
    _mail(
        engine,
        clock,
        sent,
        raw.replace(b"Date:", f"Received: by mx; {clock():%a, %d %b %Y %H:%M:%S +0000}\r\nDate:".encode(), 1),
    )
    clock.advance(minutes=1)


def _public(engine: Engine, game: int = 1) -> str:
    return json.dumps(game_record(engine.table(game)), sort_keys=True)


def test_a_game_the_window_starts_opens_as_of_the_windows_end_and_replays_the_same(config, clock, tmp_path):
    """Bid! reaches its three players; cron runs every 5 minutes, the
    first after the window's end a minute after it.  The game starts as of
    the window's end (as a round closed at a settle's end opens the next
    then), so that the same mail handled again after a restore (catching up
    as of the window's end) makes the same game: same first phase, same
    deadline, same record.  It started as of the cron run's moment instead."""
    keyed = replace(config, secret_key=b"k" * 32)
    live = Engine(Store(tmp_path / "live.db"), keyed, clock)
    box, sent = Mailbox(live), []
    clock.advance(seconds=30)
    for address in (ANN, BEN, CAT):
        _signs_up(live, clock, box, sent, address, "JOIN bid")
    reached = sent[-1][1]
    end = reached + live.config.signup_window
    while status(live)["state"] == "open":  # cron, every 5 minutes
        clock.advance(minutes=5)
        live.tick()
    assert clock() > end
    assert live.store.phases(1)[0]["opened_at"] == iso(end)
    # Handled again, as after `referee restore` (Runner.handle_again).
    again = Engine(Store(tmp_path / "again.db"), keyed, clock)
    with again.restoring(lambda message_id: True):
        for raw, received in sent:
            again.catch_up(received)
            again.ingest(raw, received_at=received)
        again.catch_up(clock() + timedelta(seconds=1))
    assert again.store.phases(1) == live.store.phases(1)
    assert _public(again) == _public(live)


def test_a_window_that_passed_while_the_referee_was_down_starts_the_game_with_its_whole_deadline(engine, clock):
    """The window ends in a month the referee did not run: the game starts
    when it next runs, its first deadline counted from then (no phase
    opened in the past, no random move for a deadline nobody could meet)."""
    box, sent = Mailbox(engine), []
    for address in (ANN, BEN, CAT):
        _signs_up(engine, clock, box, sent, address, "JOIN bid")
    engine.tick()
    clock.advance(days=30)
    engine.tick()
    [first] = engine.store.phases(1)
    assert first["opened_at"] == iso(clock())
    assert first["deadline"] == iso(clock() + engine.config.deadline)
    assert not engine.store.moves(1)
