"""A game's Table keeps, of each move that counts, the columns its readers
use (Store.counted_moves): the same moves, in the same order, as the rows."""

from __future__ import annotations

from datetime import timedelta
from typing import get_type_hints

from conftest import PLAYERS

from referee.store import CountedMove
from referee.timeutil import iso


def test_the_moves_a_table_counts_are_the_rows_last_received(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    phase = engine.table(1).open_phase["number"]
    start = clock()
    # (written in this order; received in another: the last received counts)
    for seat, move, minutes, key in [(0, "bid 3", 5, "<a@x>"), (0, "bid 7", 2, "<b@x>"), (1, "bid 4", 1, None)]:
        engine.store.add_move(
            game_id=1,
            phase=phase,
            seat=seat,
            move=move,
            source="mail",
            message_key=key,
            received_at=iso(start + timedelta(minutes=minutes)),
            recorded_at=iso(start + timedelta(minutes=9)),
        )
    rows = engine.store.moves(1)
    columns = list(get_type_hints(CountedMove))
    assert engine.store.counted_moves(1) == [{column: row[column] for column in columns} for row in rows]
    assert [row["move"] for row in engine.store.counted_moves(1, since=phase)] == ["bid 4", "bid 7", "bid 3"]
    counted = engine.table(1).counted[phase]
    assert {seat: (move["move"], move["message_key"]) for seat, move in counted.items()} == {
        0: ("bid 3", "<a@x>"),
        1: ("bid 4", None),
    }
    assert engine.store.counted_moves(1, since=phase + 1) == []
