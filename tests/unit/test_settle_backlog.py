"""Two ways a change of mind made in time was refused, found by
bench/powercut.py (no power cut needed: an outage, or mail read out of
receipt order, is enough).  pure-skill.md R6/R7: with a settle delay the
round closes that long after the last bid arrives, and bids changed
meanwhile count, however late the referee reads them."""

from datetime import timedelta

from conftest import PLAYERS, START, reply

ALICE, BOB, CAROL = PLAYERS


def ingest(engine, player, body, received):
    return engine.ingest(reply(engine, player, body, received=received), received_at=received)


def test_a_backlog_read_after_the_settle_window_counts_the_changes_made_inside_it(engine, clock):
    """The referee was down (killed, restarted, or cron had not run) while
    every bid and a change of mind arrived; it reads the backlog, in
    receipt order, after the round's close.  Bob's bid completes the round
    at +3 min (it closes at +33 min); the change at +10 min must count."""
    engine.new_game("pure-skill", PLAYERS, settle=timedelta(minutes=30))
    clock.advance(minutes=60)  # the referee comes back
    assert ingest(engine, ALICE, "bid 4", START + timedelta(minutes=1)).code == "move"
    assert ingest(engine, CAROL, "bid 6", START + timedelta(minutes=2)).code == "move"
    assert ingest(engine, BOB, "bid 5", START + timedelta(minutes=3)).code == "move"  # Round 1 waits for its close
    assert ingest(engine, ALICE, "bid 10", START + timedelta(minutes=10)).code == "replaced"
    engine.tick()
    first, second = engine.store.phases(1)
    assert first["resolved_at"] == "2026-11-21T12:33:00Z" == second["opened_at"]  # as of its close
    assert engine.store.final_moves(1, 1)[0]["move"] == "bid 10"


def test_the_round_closes_the_settle_time_after_the_last_bid_received_not_the_last_read(engine, clock):
    """IMAP UID order is not always receipt order (the bench saw bids read
    in the reverse of their arrival, seconds apart): Carol's bid arrived
    last (+20 min), Bob's is read last (it arrived at +2 min)."""
    engine.new_game("pure-skill", PLAYERS, settle=timedelta(minutes=30))
    clock.advance(minutes=21)
    ingest(engine, ALICE, "bid 4", START + timedelta(minutes=1))
    ingest(engine, CAROL, "bid 6", START + timedelta(minutes=20))
    ingest(engine, BOB, "bid 5", START + timedelta(minutes=2))
    assert engine.store.phases(1)[0]["closes_at"] == "2026-11-21T12:50:00Z"  # not 12:32, from Bob's
    clock.advance(minutes=20)  # 12:41: inside R6's window, after the recorded close
    assert ingest(engine, CAROL, "bid 8", START + timedelta(minutes=40)).code == "replaced"
