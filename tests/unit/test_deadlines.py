"""When a move still counts: judged by the server's receipt time against the
phase's deadline and, with a settle delay, against the moment it closes."""

from datetime import timedelta

from conftest import PLAYERS, body_of, reply

from referee.timeutil import show


def _bids(engine, game_id: int, seat: int) -> list[str]:
    return [m["move"] for m in engine.store.moves(game_id, 1) if m["seat"] == seat]


def test_a_change_received_after_the_settle_window_closed_is_refused(engine, clock):
    game_id = engine.new_game("pure-skill", PLAYERS, settle=timedelta(minutes=30))
    for seat, card in enumerate(["7", "8", "9"]):
        engine.ingest(reply(engine, PLAYERS[seat], f"bid {card}", received=clock.advance(minutes=1)))
    closes = engine.table(game_id).phases[0]["closes_at"]
    # Received 31 minutes after the last bid, but read before any tick resolved the round.
    late = clock.advance(minutes=31)
    outcome = engine.ingest(reply(engine, PLAYERS[0], "bid K", received=late))
    assert outcome.code == "refused"
    answer = [m for m in engine.store.outbox() if m["recipients"] == [PLAYERS[0]]][-1]
    assert answer["subject"].startswith("Re: ")
    assert f"closed ({show(closes)}," in body_of(answer["raw"])  # the reply says when the round closed
    assert engine.tick() == [f"resolved game {game_id} Round 1 of 13"]
    assert engine.table(game_id).replay.steps[0].moves[0] == 7


def test_a_change_inside_the_settle_window_counts(engine, clock):
    game_id = engine.new_game("pure-skill", PLAYERS, settle=timedelta(minutes=30))
    for seat, card in enumerate(["7", "8", "9"]):
        engine.ingest(reply(engine, PLAYERS[seat], f"bid {card}", received=clock.advance(minutes=1)))
    outcome = engine.ingest(reply(engine, PLAYERS[0], "bid K", received=clock.advance(minutes=29)))
    assert outcome.code == "replaced"
    assert engine.tick() == []  # the window is still open
    clock.advance(minutes=2)
    assert engine.tick() == [f"resolved game {game_id} Round 1 of 13"]
    assert engine.table(game_id).replay.steps[0].moves[0] == 13
    assert _bids(engine, game_id, 0) == ["bid 7", "bid K"]  # both kept in the record
