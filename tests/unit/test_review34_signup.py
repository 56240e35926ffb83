"""Review of issue 34's sign-ups that start: the window, START and LEAVE, and
handling the same mail again after a restore.  Every step by mail through
``ingest``, the clock moved by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from conftest import FakeClock, Mailbox, make_mail
from test_club_signup import ANN, BEN, CAT, DAN, confirmation, flat, status

from referee.engine import Engine
from referee.site.public import game_record
from referee.site.render import Site
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


def _answer(mail: dict, text: str, received: datetime) -> bytes:
    """A reply to ``mail`` as a mail client makes it."""
    thread = {"In-Reply-To": mail["message_id"], "References": mail["message_id"]}
    return make_mail(
        mail["to"], text, to=mail["reply_to"], headers=thread, subject=f"Re: {mail['subject']}", received=received
    )


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


def test_when_the_one_who_had_not_sent_start_leaves_the_game_starts_at_once(engine, clock):
    """Four sign up for Auction (priority), which needs three; three send
    START, the fourth LEAVEs instead: now everyone signed up has sent START,
    and there are enough of them, so the game starts (it waited for the
    window, two days, with nobody left to send START)."""
    box, sent = Mailbox(engine), []
    for address in (ANN, BEN, CAT, DAN):
        _signs_up(engine, clock, box, sent, address, "JOIN priority")
    for address in (ANN, BEN, CAT):
        engine.ingest(_answer(confirmation(box, address), "START", clock()), received_at=clock())
    assert status(engine)["state"] == "open"
    assert engine.ingest(_answer(confirmation(box, DAN), "LEAVE", clock()), received_at=clock()).code == "done"
    assert status(engine)["state"] == "running"
    assert [p["address"] for p in status(engine)["players"]] == [ANN, BEN, CAT]
    [begins] = [m for m in box.to(ANN) if " begins" in m["subject"]]
    body = flat(begins["body"])
    assert "everyone signed up sent START" in body
    assert not [m for m in box.to(DAN) if " begins" in m["subject"]]


def test_a_leave_that_leaves_too_few_starts_nothing(engine, clock):
    box, sent = Mailbox(engine), []
    for address in (ANN, BEN, CAT):
        _signs_up(engine, clock, box, sent, address, "JOIN priority")
    for address in (ANN, BEN):
        engine.ingest(_answer(confirmation(box, address), "START", clock()), received_at=clock())
    engine.ingest(_answer(confirmation(box, CAT), "LEAVE", clock()), received_at=clock())
    assert status(engine)["state"] == "open"


def _again(config, clock: FakeClock, path, sent: Sent) -> Engine:
    """The same mail handled again, as after `referee restore` (Runner.handle_again)."""
    again = Engine(Store(path), config, clock)
    with again.restoring(lambda message_id: True):
        for raw, received in sent:
            again.catch_up(received)
            again.ingest(raw, received_at=received)
        again.catch_up(clock() + timedelta(seconds=1))
    return again


@pytest.mark.parametrize("how", ["full", "start"])
def test_a_game_joined_with_seats_and_options_replays_the_same(config, clock, tmp_path, how):
    keyed = replace(config, secret_key=b"k" * 32)
    live = Engine(Store(tmp_path / "live.db"), keyed, clock)
    box, sent = Mailbox(live), []
    line = "JOIN priority 5 press=grey" if how == "full" else "JOIN bid 4 reroll=coin"
    for address in (ANN, BEN, CAT, DAN, *(["eve@example.net"] if how == "full" else [])):
        _signs_up(live, clock, box, sent, address, line)
    if how == "start":
        for address in (ANN, BEN, CAT, DAN):
            raw = _answer(confirmation(box, address), "START", clock())
            _mail(live, clock, sent, raw)
            clock.advance(minutes=3)
    assert status(live)["state"] == "running"
    clock.advance(hours=1)
    again = _again(keyed, clock, tmp_path / "again.db", sent)
    assert again.store.game(1) == live.store.game(1)
    assert again.store.phases(1) == live.store.phases(1)
    assert _public(again) == _public(live)


def test_the_sites_index_names_the_join_that_joins_each_open_game_and_its_options(engine, clock, tmp_path):
    """Two open games of Bid!: the oldest with the defaults, the other asked
    for with reroll=coin and press=grey.  `JOIN bid` joins the oldest, so the
    index must not tell a visitor to mail it for the second: it names each
    game's own JOIN (by its number), and the options it was asked for."""
    box, sent = Mailbox(engine), []
    _signs_up(engine, clock, box, sent, ANN, "JOIN bid")
    _signs_up(engine, clock, box, sent, BEN, "JOIN bid reroll=coin press=grey")
    Site(engine, tmp_path / "site").render()
    index = flat((tmp_path / "site" / "index.html").read_text())
    second = index.split("Game 2, Bid!")[1].split("</li>")[0]
    assert "reroll=coin" in second and "press=grey" in second
    assert "<code>JOIN 2</code>" in second
    first = index.split("Game 1, Bid!")[1].split("</li>")[0]
    assert "<code>JOIN 1</code>" in first and "reroll" not in first
    assert ANN not in index and BEN not in index


def test_a_leave_that_keeps_the_least_players_does_not_restart_the_window(engine, clock):
    """ann, ben and cat make Auction's three at 12:0x; dan joins a day later;
    ann leaves.  The game never had fewer than three, so (docs/operations.md:
    "counted from when it last reached them (a LEAVE below them stops the
    count)") it starts two days after cat's sign-up, not two days after dan's."""
    box, sent = Mailbox(engine), []
    for address in (ANN, BEN, CAT):
        _signs_up(engine, clock, box, sent, address, "JOIN priority")
    reached = sent[-1][1]
    clock.advance(days=1)
    _signs_up(engine, clock, box, sent, DAN, "JOIN priority")
    engine.ingest(_answer(confirmation(box, ANN), "LEAVE", clock()), received_at=clock())
    assert reached + engine.config.signup_window in engine.timers.next_due()
