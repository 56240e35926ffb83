"""Benchmark: how long `referee render` takes for many finished games.

Builds N games of Pure Skill played to the end (players who never answer, so
every bid is random at the deadline), then times a full render, the
standings over them (the site's page, STANDINGS by mail), a render with
nothing changed, and a render after one move.  Then the same for N
finished games of each other kind (played by bots), with the phases a game
has, since a page's cost follows its game's length.  Prints its figures;
asserts nothing.  Targets (issue 16): 200 Pure Skill games in under a
second, the others in proportion, one changed game under 50 ms.
Run: python3 bench/site.py [--games 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from referee.config import Config
from referee.engine import Engine
from referee.site.render import Site
from referee.standings import standings
from referee.store import Store


class Clock:
    def __init__(self):
        self.now = datetime(2026, 11, 21, 12, tzinfo=UTC)

    def __call__(self):
        return self.now


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        config = Config(
            address="referee@example.org", database=Path(folder) / "games.db", reminder=None, outage_gap=None
        )
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
        print(f"built {finished} finished games of 13 rounds (+1 running) in {time.perf_counter() - start:.1f} s")

        site = Site(engine, Path(folder) / "site")
        start = time.perf_counter()
        report = site.render()
        full = time.perf_counter() - start
        print(
            f"full render: {full:.3f} s for {report.games_rendered} games, {len(report.written)} files "
            f"({full / report.games_rendered * 1000:.2f} ms a game)"
        )

        start = time.perf_counter()
        report = site.render()
        print(f"render with nothing changed: {time.perf_counter() - start:.3f} s, {len(report.written)} files written")

        engine.resign(running, "x@example.org")  # one change: a bot takes a seat and bids
        start = time.perf_counter()
        report = site.render()
        print(
            f"render after one game changed: {time.perf_counter() - start:.3f} s, "
            f"{report.games_rendered} game(s), {len(report.written)} files written"
        )
        start = time.perf_counter()
        counted = standings(engine.store, engine.tables)
        took = time.perf_counter() - start
        print(f"standings of {counted.games} games, {len(counted.overall)} players: {took * 1000:.1f} ms")
        clock.now += timedelta(minutes=1)
        start = time.perf_counter()
        engine.ingest(b"From: zoe@example.net\r\nTo: referee@example.org\r\nSubject: hello\r\n\r\nSTANDINGS\r\n")
        print(f"a STANDINGS mail answered: {(time.perf_counter() - start) * 1000:.1f} ms")

        size = sum(p.stat().st_size for p in (Path(folder) / "site").rglob("*") if p.is_file())
        print(f"site size: {size / 2**20:.1f} MiB")
    for kind in ("bid", "ice", "priority", "bluff"):
        other_kind(kind, args.games)


def other_kind(kind: str, games: int) -> None:
    """A site of ``games`` finished bot games of ``kind``: a full render, and one changed game."""
    with tempfile.TemporaryDirectory() as folder:
        config = Config(
            address="referee@example.org", database=Path(folder) / "games.db", reminder=None, outage_gap=None
        )
        clock = Clock()
        engine = Engine(Store(config.database), config, clock)
        for _ in range(games):
            engine.new_game(kind, [], bots=4)
        phases = engine.store.db.execute("select count(*) from phases").fetchone()[0] / games
        site = Site(engine, Path(folder) / "site")
        start = time.perf_counter()
        report = site.render()
        full = time.perf_counter() - start
        engine.new_game(kind, [], bots=4)
        start = time.perf_counter()
        site.render()
        one = time.perf_counter() - start
        print(
            f"{kind}: full render {full:.3f} s for {report.games_rendered} games of {phases:.0f} phases "
            f"({full / report.games_rendered * 1000:.2f} ms a game, {full / report.games_rendered / phases * 1e6:.0f} "
            f"us a phase); one game more {one * 1000:.0f} ms"
        )


if __name__ == "__main__":
    sys.exit(main())
