"""Benchmark: how long `referee render` takes for many finished games.

Builds N games of Pure Skill played to the end (players who never answer, so
every bid is random at the deadline), then times a full render, a render
with nothing changed, and a render after one move.  Prints its figures;
asserts nothing.  Run: python3 bench/site.py [--games 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from referee.config import Config
from referee.engine import Engine
from referee.site.render import Site
from referee.store import Store


class Clock:
    def __init__(self):
        self.now = datetime(2026, 11, 21, 12, tzinfo=timezone.utc)

    def __call__(self):
        return self.now


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        config = Config(address="referee@example.org", database=Path(folder) / "games.db",
                        reminder=None, outage_gap=None)  # fmt: skip
        clock = Clock()
        engine = Engine(Store(config.database), config, clock)
        start = time.perf_counter()
        for number in range(args.games):
            players = [f"{name}{number}@example.org" for name in ("alice", "bob", "carol")]
            engine.new_game("pure-skill", players, deadline=timedelta(hours=1))
        for _ in range(13):
            clock.now += timedelta(hours=1)
            engine.tick()
        running = engine.new_game("pure-skill", ["x@example.org", "y@example.org", "z@example.org"])
        finished = len(engine.store.games("finished"))
        print(f"built {finished} finished games of 13 rounds (+1 running) in "
              f"{time.perf_counter() - start:.1f} s")  # fmt: skip

        site = Site(engine, Path(folder) / "site")
        start = time.perf_counter()
        report = site.render()
        full = time.perf_counter() - start
        print(f"full render: {full:.3f} s for {report.games_rendered} games, {len(report.written)} files "
              f"({full / report.games_rendered * 1000:.2f} ms a game)")  # fmt: skip

        start = time.perf_counter()
        report = site.render()
        print(f"render with nothing changed: {time.perf_counter() - start:.3f} s, "
              f"{len(report.written)} files written")  # fmt: skip

        engine.resign(running, "x@example.org")  # one change: a bot takes a seat and bids
        start = time.perf_counter()
        report = site.render()
        print(f"render after one game changed: {time.perf_counter() - start:.3f} s, "
              f"{report.games_rendered} game(s), {len(report.written)} files written")  # fmt: skip
        size = sum(p.stat().st_size for p in (Path(folder) / "site").rglob("*") if p.is_file())
        print(f"site size: {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    sys.exit(main())
