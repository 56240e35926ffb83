"""A backlog's messages share transactions (issue 36, item 1: batched
statements and commits), yet each message is still handled alone: a bug in
one undoes that message only, a fault of games.db loses nothing and the
next pass doubles no move.  And a game read again after a move reads only
what the move wrote.  Counts, not times."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from conftest import PLAYERS, reply
from test_runner import deliver, make_runner
from test_runner import maildir as _maildir

import referee.engine
import referee.runner
from referee.store import StorageFault

maildir = _maildir  # the fixture

ALICE, BOB, CAROL = PLAYERS
GAMES = 12


def bid_backlog(config, clock, maildir, games: int = GAMES):
    """``games`` Pure Skill games, and a bid of Alice's in each waiting in the Maildir."""
    engine, runner = make_runner(config, clock, maildir)
    for _ in range(games):
        engine.new_game("pure-skill", PLAYERS)
    asyncio.run(runner.once())  # the start mails and prompts
    for game in range(1, games + 1):
        deliver(maildir, reply(engine, ALICE, "bid 7", game=game), clock())
    return engine, runner


@contextmanager
def traced(store) -> Iterator[list[str]]:
    """The SQL statements ``store``'s games.db runs meanwhile, in order."""
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    try:
        yield statements
    finally:
        store.db.conn.set_trace_callback(None)


def _moves(engine) -> list[tuple[int, int]]:
    return [(m["game_id"], m["seat"]) for game in range(1, GAMES + 1) for m in engine.store.moves(game)]


def _filed(maildir) -> int:
    return sum(1 for _ in (maildir / ".processed" / "cur").iterdir()) if (maildir / ".processed").exists() else 0


def test_a_backlog_commits_once_for_many_messages(config, clock, maildir):
    engine, runner = bid_backlog(config, clock, maildir)
    with traced(engine.store) as statements:
        report = asyncio.run(runner.once())
    assert report.received == GAMES and len(_moves(engine)) == GAMES
    # A message each had its own BEGIN and COMMIT: 12 and more.  Now 1, 2, 4, then the rest (5) share one each.
    reading = [s for s in statements if s == "BEGIN IMMEDIATE"]
    assert len(reading) <= 4 + 3, "\n".join(statements)  # (and the pass's own few: the tick, the note)
    assert sum(s.startswith("SAVEPOINT") for s in statements) >= GAMES  # each message alone inside


def test_a_transaction_ends_once_it_has_held_the_write_lock_long_enough(config, clock, maildir, monkeypatch):
    """A keeper's command from another process waits for the write lock (10 s
    at most): a shared transaction ends after SECONDS_A_COMMIT, however few
    messages it has handled (none may wait: every message its own)."""
    engine, runner = bid_backlog(config, clock, maildir)
    monkeypatch.setattr(referee.runner, "SECONDS_A_COMMIT", -1.0)
    with traced(engine.store) as statements:
        report = asyncio.run(runner.once())
    assert report.received == GAMES and len(_moves(engine)) == GAMES
    assert sum(s == "BEGIN IMMEDIATE" for s in statements) >= GAMES


def test_a_message_that_fails_in_a_shared_transaction_is_undone_alone(config, clock, maildir, monkeypatch):
    """A bug after a message's move was written: that move is undone and the
    message kept as failed (quarantined); the others in its transaction count."""
    engine, runner = bid_backlog(config, clock, maildir)
    handle = referee.engine.Desk.handle

    def buggy(desk):
        outcome = handle(desk)
        if outcome.game_id == 3:
            raise RuntimeError("a bug, after the move was written")
        return outcome

    monkeypatch.setattr(referee.engine.Desk, "handle", buggy)
    report = asyncio.run(runner.once())
    assert report.received == GAMES
    assert sorted(game for game, _ in _moves(engine)) == [g for g in range(1, GAMES + 1) if g != 3]
    assert [m["code"] for m in engine.store.messages() if m["code"] == "failed"] == ["failed"]
    assert len(list((maildir / ".quarantine" / "cur").iterdir())) == 1 and _filed(maildir) == GAMES - 1


def test_a_storage_fault_mid_batch_files_nothing_and_the_next_pass_doubles_no_move(config, clock, maildir):
    engine, runner = bid_backlog(config, clock, maildir)
    ingest, seen = engine.ingest, []

    def failing(raw, **kwargs):
        seen.append(raw)
        if len(seen) == 6:  # inside the third transaction (messages 4 to 7)
            raise StorageFault("games.db: disk I/O error")
        return ingest(raw, **kwargs)

    engine.ingest = failing
    with pytest.raises(StorageFault):
        asyncio.run(runner.once())
    assert _filed(maildir) == 0  # every message still in the inbox
    assert len(_moves(engine)) == 3  # the first two transactions' (1, then 2); the third's rolled back
    engine.ingest = ingest
    report = asyncio.run(runner.once())
    assert report.received == GAMES and _filed(maildir) == GAMES
    moves = _moves(engine)
    assert len(moves) == len(set(moves)) == GAMES  # each bid once
    codes = [m["code"] for m in engine.store.messages()]
    assert codes.count("move") == GAMES and codes.count("duplicate") == 0  # (a duplicate is not recorded again)


def test_a_game_read_again_after_a_move_reads_the_moves_alone(engine, clock):
    """Of a game's record (its row, seats, phases, moves, interventions), a
    read after a move was written reads the moves again, and nothing else."""
    engine.new_game("pure-skill", PLAYERS)
    before = engine.table(1)
    at = before.open_phase["opened_at"]
    engine.store.add_move(
        game_id=1, phase=1, seat=0, move="bid 7", source="mail", message_key="k", received_at=at, recorded_at=at
    )
    with traced(engine.store) as statements:
        table = engine.table(1)
    reads = [s for s in statements if s.startswith("select")]
    assert len(reads) == 1 and "from [moves]" in reads[0], "\n".join(statements)
    assert list(table.counted[1]) == [0] and not before.counted  # Alice's bid counts now
    assert table.waiting_for(table.open_phase) == [1, 2]
