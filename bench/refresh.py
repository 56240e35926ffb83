"""Benchmark: the site refresh at the end of a pass, per changed game (issue 36, item 1).

N running Pure Skill games of three players, rendered once; then
1. one move in each game (the phase stays open: who has moved changes,
   nothing else), and a refresh;
2. the other two moves in each (the phase resolves: a new round, a new
   deadline), and a refresh.
For each: the CPU (time.process_time) and wall (time.perf_counter) of
Site.refresh, per changed game, and the files it wrote per game.
Prints its figures; asserts nothing.
Run: python3 bench/refresh.py [--games 500] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, make_msgid
from pathlib import Path

from referee.config import Config
from referee.engine import Engine
from referee.mail.tokens import token_address
from referee.site.render import Report, Site
from referee.store import Store

PLAYERS = ("alice", "bob", "carol")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 21, 12, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def move(engine: Engine, game: int, seat: int) -> None:
    """The player of ``seat`` bids the lowest card they hold, replying to their seat's address."""
    table = engine.table(game)
    text = table.rules.move_text(table.rules.legal_moves(table.state, seat)[0])
    mail = (
        f"From: {table.seats[seat]['address']}\r\nTo: {token_address(engine.config.address, table.seats[seat]['token'])}"
        f"\r\nSubject: Re: move\r\nDate: {format_datetime(engine.clock())}\r\nMessage-ID: {make_msgid()}\r\n"
        f"Content-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n"
    )
    outcome = engine.ingest(mail.encode())
    assert outcome.code == "move", outcome


def timed(site: Site) -> tuple[float, float, Report]:
    cpu, wall = time.process_time(), time.perf_counter()
    report = site.render()
    return time.process_time() - cpu, time.perf_counter() - wall, report


def run(games: int) -> dict[str, tuple[float, float, float]]:
    with tempfile.TemporaryDirectory() as folder:
        clock = Clock()
        database = Path(folder) / "games.db"
        config = Config(address="referee@example.org", database=database, reminder=timedelta(days=1))
        engine = Engine(Store(database), config, clock)
        ids = [
            engine.new_game("pure-skill", [f"{p}{g}@example.org" for p in PLAYERS], deadline=timedelta(days=3))
            for g in range(games)
        ]
        site = Site(engine, Path(folder) / "site")
        site.render()
        figures = {}
        clock.now += timedelta(minutes=5)
        for game in ids:
            move(engine, game, 0)
        cpu, wall, report = timed(site)
        figures["one move, the phase open"] = (cpu / games, wall / games, len(report.written) / games)
        clock.now += timedelta(minutes=5)
        for game in ids:
            move(engine, game, 1)
            move(engine, game, 2)
        cpu, wall, report = timed(site)
        figures["the phase resolved"] = (cpu / games, wall / games, len(report.written) / games)
        engine.store.db.close()
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = [run(args.games) for _ in range(args.runs)]
    print(f"Site.refresh after a change in each of {args.games} Pure Skill games (median of {args.runs} runs):")
    for name in runs[0]:
        cpu, wall, files = (statistics.median(r[name][i] for r in runs) for i in range(3))
        print(f"  {name}: {cpu * 1000:.2f} ms CPU, {wall * 1000:.2f} ms wall a game; {files:.1f} files written a game")


if __name__ == "__main__":
    main()
