"""Benchmark: does the cost of a message grow with the referee's age?

Issue 16, item 4: the time to ingest a move (parse, check, record, receipt
queued, the phase resolved when it completes) with 10, 100 and 1,000 games in
games.db; with 600 and 30,000 rows in the outbox; in round 1 against round 12
of Pure Skill; in early against late turns of Ice Ice Baby.  Each figure is
the median of its samples, in ms, taken both warm (the daemon, its caches
full) and cold (a new process per cron run: nothing cached).  Prints its
figures; asserts nothing.

Run from the top of the checkout:  python3 bench/growth.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine import PLAYERS, Clock, mail  # bench/engine.py

from referee.config import Config
from referee.engine import Engine
from referee.store import Store

ICE_PLAYERS = PLAYERS + ["dave@example.org"]


def fresh_engine(config: Config, clock: Clock) -> Engine:
    """As a cron run starts: a new connection, nothing cached."""
    return Engine(Store(config.database), config, clock)


def move(engine: Engine, clock: Clock, game_id: int, choose, cold: Engine | None = None) -> float:
    """Ingest the first waiting seat's move (``choose(table, seat)``); ms taken.
    With ``cold``, that engine ingests it (a cron run's), the others' caches unused."""
    table = engine.table(game_id)
    seat = table.waiting_for(table.open_phase)[0]
    clock.now += timedelta(seconds=1)
    raw = mail(table.label(seat), table.seats[seat]["token"], game_id, choose(table, seat), clock.now)
    start = time.perf_counter()
    outcome = (cold or engine).ingest(raw)
    took = (time.perf_counter() - start) * 1000
    assert outcome.code == "move", outcome
    return took


def lowest_bid(table, seat) -> str:
    return table.rules.move_text(table.rules.legal_moves(table.state, seat)[0])


def ice_move(table, seat) -> str:
    """Bid cheaply while the high bid is small, else pass; score the first tree."""
    state, legal = table.state, table.rules.legal_moves(table.state, seat)
    if state.stage == "scoring":
        return table.rules.move_text(legal[-1])
    bids = [m for m in legal if m[0] == "bid"]
    high = state.bids[state.high] if state.high is not None else ()
    return table.rules.move_text(bids[0] if bids and (len(high) < 3 or ("pass",) not in legal) else ("pass",))


def round_bids(engine: Engine, clock: Clock, games: list[int], config: Config, cold: bool) -> float:
    """Median ms of every round-1 bid in ``games`` (a cold engine per bid if ``cold``)."""
    times = [
        move(engine, clock, g, lowest_bid, fresh_engine(config, clock) if cold else None)
        for g in games
        for _ in range(3)
    ]
    return statistics.median(times)


def by_games_in_db(folder: Path) -> None:
    for total in (10, 100, 1000):
        config = Config(address="referee@example.org", database=folder / f"games-{total}.db", reminder=None)
        clock = Clock()
        engine = fresh_engine(config, clock)
        ids = [engine.new_game("pure-skill", PLAYERS) for _ in range(total)]
        warm = round_bids(engine, clock, ids[:5], config, cold=False)
        cold = round_bids(engine, clock, ids[5:10], config, cold=True)
        print(f"  {total:5} games in games.db: {warm:6.2f} warm, {cold:6.2f} cold")


def by_outbox_rows(folder: Path) -> None:
    for rows in (600, 30_000):
        config = Config(address="referee@example.org", database=folder / f"outbox-{rows}.db", reminder=None)
        clock = Clock()
        engine = fresh_engine(config, clock)
        ids = [engine.new_game("pure-skill", PLAYERS) for _ in range(10)]
        queued = len(engine.store.outbox())
        raw = b"From: referee@example.org\r\nSubject: old\r\n\r\n" + b"a line of an old mail\r\n" * 40
        engine.store.db.conn.executemany(
            "insert into outbox (message_id, game_id, recipients, subject, raw, created_at, state, attempts,"
            " sent_at, answers, budget) values (?, ?, '[]', 'old', ?, ?, 'sent', 1, ?, ?, 'player')",
            [
                (
                    f"<old-{n}@example.org>",
                    ids[n % 10],
                    raw,
                    "2026-01-01T00:00:00Z",
                    "2026-01-01T00:00:00Z",
                    f"<in-{n}@example.net>",
                )
                for n in range(rows - queued)
            ],
        )
        engine.store.db.conn.commit()
        warm = round_bids(engine, clock, ids[:5], config, cold=False)
        cold = round_bids(engine, clock, ids[5:10], config, cold=True)
        print(f"  {rows:6} rows in the outbox: {warm:6.2f} warm, {cold:6.2f} cold")


def by_pure_skill_round(folder: Path) -> None:
    config = Config(address="referee@example.org", database=folder / "rounds.db", reminder=None)
    clock = Clock()
    engine = fresh_engine(config, clock)
    ids = [engine.new_game("pure-skill", PLAYERS) for _ in range(10)]
    samples: dict[int, list[float]] = {1: [], 12: []}
    for game_id in ids:
        for number in range(1, 13):
            cold = fresh_engine(config, clock) if game_id in ids[5:] else None
            times = [move(engine, clock, game_id, lowest_bid, cold) for _ in range(3)]
            if number in samples:
                samples[number] += [(t, cold is not None) for t in times]
    for number, times in samples.items():
        warm = statistics.median(t for t, cold in times if not cold)
        cold = statistics.median(t for t, cold in times if cold)
        print(f"  round {number:2} of Pure Skill: {warm:6.2f} warm, {cold:6.2f} cold")


def by_ice_turn(folder: Path) -> None:
    config = Config(address="referee@example.org", database=folder / "ice.db", reminder=None)
    clock = Clock()
    engine = fresh_engine(config, clock)
    games = []
    for n in range(4):
        game_id = engine.new_game("ice", ICE_PLAYERS)
        times = []
        while engine.table(game_id).row["state"] == "running":
            times.append(
                (move(engine, clock, game_id, ice_move, fresh_engine(config, clock) if n % 2 else None), bool(n % 2))
            )
        games.append(times)
    for label, part in (("first 20", slice(0, 20)), ("last 20", slice(-20, None))):
        warm = statistics.median(t for g in games for t, cold in g[part] if not cold)
        cold = statistics.median(t for g in games for t, cold in g[part] if cold)
        print(f"  Ice Ice Baby, {label} turns: {warm:6.2f} warm, {cold:6.2f} cold")
    print(f"  ({statistics.mean(len(g) for g in games):.0f} turns a game)")


def main() -> None:
    print("ms to ingest one move (median):")
    with tempfile.TemporaryDirectory() as folder:
        for measure in (by_games_in_db, by_outbox_rows, by_pure_skill_round, by_ice_turn):
            measure(Path(folder))


if __name__ == "__main__":
    main()
