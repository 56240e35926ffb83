"""What each seat was told (Store.told) is read and written once for a
phase's result to every seat and once for the next phase's prompts, not
once a seat (issue 36, item 1: statements).  Counts, not times."""

from __future__ import annotations

from conftest import PLAYERS, send
from test_sql36_batch import traced

from referee.store import Notify


def _told_statements(engine, clock, last_bid: tuple[str, str]) -> tuple[int, int]:
    with traced(engine.store) as statements:
        send(engine, clock, *last_bid)
    reads = sum(" from told" in s or " from [told]" in s for s in statements)
    writes = sum(s.startswith("insert into told") for s in statements)
    return reads, writes


def test_a_round_tells_every_seat_in_one_write_for_the_result_and_one_for_the_prompts(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    for player in PLAYERS[:-1]:
        send(engine, clock, player, "bid 7")
    reads, writes = _told_statements(engine, clock, (PLAYERS[-1], "bid 7"))
    assert (reads, writes) == (2, 2)
    told = engine.store.told(1)
    assert sorted(told) == list(range(len(PLAYERS)))
    assert {row["through"] for row in told.values()} == {1}  # each was sent the result and a prompt


def test_a_seat_at_digest_is_not_marked_told_by_a_result_or_a_prompt(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    table = engine.table(1)
    engine.notices.set_level(table, 0, Notify.DIGEST)
    for player in PLAYERS[:-1]:
        send(engine, clock, player, "bid 7")
    send(engine, clock, PLAYERS[-1], "bid 7")
    told = engine.store.told(1)
    assert told[0]["through"] == 0 and told[0]["digest_at"] is not None  # its digest tells it
    assert all(told[seat]["through"] == 1 for seat in range(1, len(PLAYERS)))
