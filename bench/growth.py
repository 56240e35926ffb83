"""Benchmark: does the cost of a message grow with the referee's age?

Issue 16, item 4: the time to ingest a move (parse, check, record, receipt
queued, the phase resolved when it completes) with 10, 100 and 1,000 games in
games.db; with 600 and 30,000 rows in the outbox; in round 1 against round 12
of Pure Skill; in early against late turns of Ice Ice Baby.  Each figure is
the median of its samples, in ms, taken both warm (the daemon, its caches
full) and cold (a new process per cron run: nothing cached).  Prints its
figures; asserts nothing.

Issue 36, item 4: no cost that grows with history.  ``--history`` (the
default) prints, in ms of CPU (time.process_time, the median of its
samples; wall in brackets), at 10 / 100 / 1,000 / 10,000 games and at
1,000 / 10,000 / 100,000 sent mails in the outbox: a tick() with nothing
due, a cold start (Store opened, Engine made), a cold and a warm ingest of
a move, last_sent_to and a pass of forget_sent_bodies.  The games past the
first ten, and the sent mails, are bulk inserts (copies of the first ten
games' rows; old mails already sent), not made through the engine.
``--ingest`` prints the older figures above (issue 16).

Run from the top of the checkout:  python3 bench/growth.py [--history] [--ingest] [--most N]
"""

from __future__ import annotations

import argparse
import json
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
from referee.timeutil import iso

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


# -- issue 36: the cost of a tick, a start, an ingest, with history -----------

GAME_COUNTS = (10, 100, 1_000, 10_000)
SENT_COUNTS = (1_000, 10_000, 100_000)
TEMPLATES = 10  # games made through the engine; the rest copy their rows
_COPIED = ("seats", "phases", "moves")  # a game's rows beyond games' own: enough to tick and read it
OLD = "2026-01-01T00:00:00Z"  # long before the bench clock: past keep_sent_mail


def cpu_ms(work) -> tuple[float, float]:
    """CPU and wall ms that ``work()`` took."""
    cpu, wall = time.process_time(), time.perf_counter()
    work()
    return (time.process_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000


def median_ms(samples: list[tuple[float, float]]) -> str:
    cpu = statistics.median(c for c, _ in samples)
    wall = statistics.median(w for _, w in samples)
    return f"{cpu:7.2f} ({wall:7.2f})"


def copy_games(engine: Engine, total: int) -> None:
    """Make ``total`` games from the first TEMPLATES by copying their rows
    (new ids; seat tokens made unique), in one transaction."""
    conn = engine.store.db.conn
    for table in ("games", *_COPIED):
        columns = [c[1] for c in conn.execute(f"PRAGMA table_info([{table}])")]
        for copy in range(1, total // TEMPLATES):
            offset = copy * TEMPLATES
            if table == "games":
                chosen = [f"id + {offset}" if c == "id" else c for c in columns]
                where = f"id <= {TEMPLATES}"
            else:
                chosen = [f"game_id + {offset}" if c == "game_id" else c for c in columns]
                chosen = [f"token || '-{copy}'" if c == "token" else c for c in chosen]
                where = f"game_id <= {TEMPLATES}"
            conn.execute(
                f"insert into [{table}] ({', '.join(columns)}) select {', '.join(chosen)} from [{table}] where {where}"
            )
    conn.commit()


def add_sent_mail(engine: Engine, rows: int) -> None:
    """``rows`` old mails in the outbox, sent long ago, each to one of 100
    addresses (none of them a player's): a bulk insert."""
    raw = b"From: referee@example.org\r\nSubject: old\r\n\r\n" + b"a line of an old mail\r\n" * 10
    engine.store.db.conn.executemany(
        "insert into outbox (message_id, game_id, recipients, subject, raw, created_at, state, attempts,"
        " sent_at, answers, budget) values (?, 1, ?, 'old', ?, ?, 'sent', 1, ?, ?, 'player')",
        [
            (
                f"<old-{n}@example.org>",
                json.dumps([f"reader{n % 100}@example.org"]),
                raw,
                OLD,
                OLD,
                f"<in-{n}@example.net>",
            )
            for n in range(rows)
        ],
    )
    engine.store.db.conn.commit()


def history_figures(config: Config, clock: Clock, engine: Engine, template_ids: list[int]) -> str:
    """One line of figures for the games.db at ``config.database``."""
    warm_engine = fresh_engine(config, clock)
    ticks = [cpu_ms(warm_engine.tick) for _ in range(5)]
    starts = [cpu_ms(lambda: fresh_engine(config, clock)) for _ in range(5)]
    cold = [
        cpu_ms(lambda g=g: move(warm_engine, clock, g, lowest_bid, fresh_engine(config, clock)))
        for g in template_ids[:5]
    ]
    warm = [cpu_ms(lambda g=g: move(warm_engine, clock, g, lowest_bid)) for g in template_ids[5:10]]
    # (the cold figure holds the start: it is what a cron run pays for one mail)
    looks = [cpu_ms(lambda: warm_engine.store.last_sent_to("reader7@example.org", 3)) for _ in range(5)]
    looks += [cpu_ms(lambda: warm_engine.store.last_sent_to("nobody@example.org", 3)) for _ in range(5)]
    passes = []
    for hours in range(1, 6):  # each a tick's pass, an hour on (the first trimmed every old body)
        cut = iso(clock.now - timedelta(days=90) + timedelta(hours=hours))
        passes.append(cpu_ms(lambda cut=cut: warm_engine.store.forget_sent_bodies(cut)))
    return "  ".join(median_ms(f) for f in (ticks, starts, cold, warm, looks, passes))


HEADER = "tick idle     cold start    cold ingest   warm ingest   last_sent_to  forget pass"


def by_history(folder: Path, most: int) -> None:
    print(f"ms of CPU (wall), median; games.db's size in MiB\n{'':34}{HEADER}")
    for total in [n for n in GAME_COUNTS if n <= most]:
        config = Config(address="referee@example.org", database=folder / f"games-{total}.db")
        clock = Clock()
        engine = fresh_engine(config, clock)
        ids = [engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3)) for _ in range(TEMPLATES)]
        copy_games(engine, total)
        add_sent_mail(engine, 1_000)
        engine.tick()  # the first forget pass trims the old mail: then steady
        line = history_figures(config, clock, engine, ids)
        print(f"  {total:6} games, 1,000 sent mails, {engine.store.size() / 2**20:5.1f}: {line}")
    for rows in SENT_COUNTS:
        config = Config(address="referee@example.org", database=folder / f"outbox-{rows}.db")
        clock = Clock()
        engine = fresh_engine(config, clock)
        ids = [engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3)) for _ in range(TEMPLATES)]
        copy_games(engine, 100)
        add_sent_mail(engine, rows)
        engine.tick()
        line = history_figures(config, clock, engine, ids)
        print(f"  100 games, {rows:7,} sent mails, {engine.store.size() / 2**20:5.1f}: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--history", action="store_true", help="issue 36's figures (the default)")
    parser.add_argument("--ingest", action="store_true", help="issue 16's figures")
    parser.add_argument("--most", type=int, default=10_000, help="the most games (default 10,000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if args.history or not args.ingest:
            by_history(Path(folder), args.most)
        if args.ingest:
            print("ms to ingest one move (median):")
            for measure in (by_games_in_db, by_outbox_rows, by_pure_skill_round, by_ice_turn):
                measure(Path(folder))


if __name__ == "__main__":
    main()
