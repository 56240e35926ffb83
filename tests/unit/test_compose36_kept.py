"""What the Store keeps between the reads of a pass (issue 36): a player's
zone and the games' lists are read once while nothing can have changed
them, and a change, by this process or another, shows in the next mail.
A game's record (Tables) likewise: a keeper's EXTEND between two moves is in
the next prompt."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import PLAYERS, Mailbox, make_mail, send
from test_sql36_batch import traced

from referee.engine import Engine
from referee.store import Store

ALICE = PLAYERS[0]


@pytest.fixture
def pure(engine: Engine) -> int:
    return engine.new_game("pure-skill", PLAYERS)


def zone_shown(engine: Engine, box: Mailbox, address: str) -> str | None:
    """The zone the last mail to ``address`` shows its times in, if any."""
    body = box.to(address)[-1]["body"]
    return next((zone for zone in ("Europe/Berlin", "America/New_York") if zone in body), None)


def test_a_timezone_chosen_between_two_moves_shows_in_the_next_mail(engine, clock, pure):
    box = Mailbox(engine)
    send(engine, clock, ALICE, "bid 5")
    assert zone_shown(engine, box, ALICE) is None
    send(engine, clock, ALICE, "TIMEZONE Europe/Berlin")
    send(engine, clock, ALICE, "bid 6")  # (a correction: its receipt gives the deadline)
    assert zone_shown(engine, box, ALICE) == "Europe/Berlin"
    send(engine, clock, ALICE, "TIMEZONE America/New_York\nbid 7")  # changed and used by one message
    assert zone_shown(engine, box, ALICE) == "America/New_York"


def test_a_timezone_another_process_sets_shows_in_the_next_mail(engine, clock, pure, config):
    box = Mailbox(engine)
    send(engine, clock, ALICE, "bid 5")
    assert zone_shown(engine, box, ALICE) is None
    other = Store(config.database)  # (a keeper's command, say: its own connection)
    with other.transaction():
        other.set_timezone(ALICE, "Europe/Berlin")
    send(engine, clock, ALICE, "bid 6")
    assert zone_shown(engine, box, ALICE) == "Europe/Berlin"


def test_a_timezone_undone_by_a_rollback_is_not_shown(engine, clock, pure):
    box = Mailbox(engine)
    with pytest.raises(RuntimeError), engine.store.transaction():
        engine.store.set_timezone(ALICE, "Europe/Berlin")
        assert engine.store.timezone(ALICE) == "Europe/Berlin"  # (read, and kept, inside)
        raise RuntimeError("undone")
    send(engine, clock, ALICE, "bid 5")
    assert zone_shown(engine, box, ALICE) is None


def test_a_player_s_zone_is_read_once_a_message(engine, clock, pure):
    send(engine, clock, ALICE, "TIMEZONE Europe/Berlin")
    with traced(engine.store) as statements:
        for player in PLAYERS:  # the third ends the round: results and prompts to every seat
            send(engine, clock, player, "bid 5")
    reads = [s for s in statements if "from [players]" in s]
    assert len(reads) <= len(PLAYERS)  # (each address at most once: 12 reads before)


def test_a_list_a_game_names_after_the_first_message_is_known_at_the_next(engine, clock, pure):
    """Mail from a club's list is never answered: a list named by a game made
    since the last message (the games' lists are kept) is known at once."""
    club = "club@lists.example.org"
    assert engine.ingest(make_mail(club, "HELP", subject="hello", received=clock())).code != "ignored"
    engine.new_game("pure-skill", ["dave@example.org", "erin@example.org", "fred@example.org"], announce_to=[club])
    outcome = engine.ingest(make_mail(club, "HELP", subject="hello", received=clock()))
    assert outcome.code == "ignored" and "club's list" in outcome.detail


def test_a_keeper_s_extension_between_two_moves_shows_in_the_next_mail(engine, clock, pure):
    box = Mailbox(engine)
    send(engine, clock, ALICE, "bid 5")
    deadline = engine.table(pure).open_phase["deadline"]
    engine.extend(pure, timedelta(days=2), "keeper@example.org", "a holiday")
    moved = engine.table(pure).open_phase["deadline"]
    assert moved != deadline
    send(engine, clock, ALICE, "bid 6")
    receipt = box.to(ALICE)[-1]["body"]
    assert f"{moved[:10]} {moved[11:16]} UTC" in receipt and f"{deadline[:10]} {deadline[11:16]}" not in receipt
