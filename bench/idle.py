"""Benchmark: what the passing of time costs the site (issue 36, item 3).

Builds N running games of the five kinds (three players each, deadlines
three days away, on the real clock), renders the site once, then measures
what a refresh costs when nothing changed but the clock (five minutes on):
the files it writes and its CPU; and a whole `referee run --once` with no
mail (a Maildir source), in a child process, with the site on and without
it, its CPU and wall time (getrusage of the children: process start-up and
imports included) and the site's files it wrote.
Prints its figures; asserts nothing.  Targets: no file written, a refresh
under 30 ms of CPU and an idle run under 0.3 s of CPU at 1,000 games.
Run: python3 bench/idle.py [--games 10 1000] [--runs 3]
(Against another checkout, set PYTHONPATH to it: the child runs the same.)
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from referee.config import Config, MaildirSettings
from referee.engine import Engine
from referee.rules import GAMES
from referee.site.render import Site
from referee.store import Store

KEY = b"bench idle"


class Clock:
    """The real time, moved on by ``ahead`` (the in-process refresh's five minutes)."""

    def __init__(self) -> None:
        self.ahead = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.ahead


def build(home: Path, games: int) -> tuple[Config, Engine, Clock]:
    (home / "Maildir").mkdir()
    for sub in ("new", "cur", "tmp"):
        (home / "Maildir" / sub).mkdir()
    common = f'address = "referee@example.org"\ndatabase = "games.db"\nsecret_key = "{KEY.decode()}"\n'
    maildir = '[maildir]\npath = "Maildir"\n'
    (home / "referee.toml").write_text(f'[referee]\n{common}site_dir = "site"\n{maildir}')
    (home / "no-site.toml").write_text(f"[referee]\n{common}{maildir}")  # the same run without a site
    config = Config(
        address="referee@example.org",
        database=home / "games.db",
        secret_key=KEY,
        site_dir=home / "site",
        maildir=MaildirSettings(home / "Maildir"),
    )
    clock = Clock()
    engine = Engine(Store(config.database), config, clock)
    kinds = list(GAMES)
    for number in range(games):
        players = [f"{name}{number}@example.org" for name in ("alice", "bob", "carol")]
        engine.new_game(kinds[number % len(kinds)], players, deadline=timedelta(days=3))
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    # the start mails: sent (an idle run has nothing to send)
    engine.store.mark_sent([mail["id"] for mail in engine.store.outbox()], now)
    engine.store.sync()
    return config, engine, clock


def child_run(home: Path, config: str = "referee.toml") -> tuple[float, float, str]:
    """One `referee run --once` in ``home`` with ``config``: its CPU (user +
    system) and wall time, and its last line of output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "referee", "--config", config, "run", "--once"],
        cwd=home,
        env=child_environment(home),
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, (done.stdout.strip().splitlines() or [""])[-1]


def child_environment(home: Path) -> dict[str, str]:
    """The child's modules' bytecode cached, as an installed referee has it
    (pip compiles it on install), whatever PYTHONDONTWRITEBYTECODE says here:
    else every run compiles every module again (~0.2 s of CPU).  The first
    run writes the cache; the runs measured read it."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(home / "pycache")}


def marks(folder: Path) -> dict[Path, tuple[int, int]]:
    """Each of the site's files, by inode and time: a file replaced (renamed over) has another."""
    return {path: (path.stat().st_ino, path.stat().st_mtime_ns) for path in folder.rglob("*") if path.is_file()}


def changed_files(folder: Path, since: dict[Path, tuple[int, int]]) -> int:
    """How many of the site's files are new or were replaced since ``since``."""
    return sum(1 for path, mark in marks(folder).items() if since.get(path) != mark)


def measure(games: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        started = time.perf_counter()
        config, engine, clock = build(home, games)
        built = time.perf_counter() - started
        assert config.site_dir is not None
        started = time.process_time()
        Site(engine, config.site_dir).render()
        full = time.process_time() - started
        print(f"{games} running games: built in {built:.1f} s; first render {full:.2f} s CPU")

        refreshes, written = [], []
        for _ in range(runs):
            clock.ahead += timedelta(minutes=5)
            before = marks(config.site_dir)
            started_cpu, started_wall = time.process_time(), time.perf_counter()
            Site(engine, config.site_dir).refresh()
            refreshes.append((time.process_time() - started_cpu, time.perf_counter() - started_wall))
            written.append(changed_files(config.site_dir, before))
        cpu = statistics.median(r[0] for r in refreshes) * 1000
        wall = statistics.median(r[1] for r in refreshes) * 1000
        print(f"  refresh, nothing changed: {cpu:.1f} ms CPU, {wall:.1f} ms wall; files written {written}")

        engine.store.sync()
        child_run(home)  # the first run: its own checks, the state it keeps, its bytecode and templates compiled
        idle, written = [], []
        for _ in range(runs):
            before = marks(config.site_dir)
            idle.append(child_run(home))
            written.append(changed_files(config.site_dir, before))
        cpu = statistics.median(r[0] for r in idle)
        wall = statistics.median(r[1] for r in idle)
        print(f"  `referee run --once`, no mail: {cpu:.3f} s CPU, {wall:.3f} s wall; site files written {written}")
        print(f"    (its output: {idle[-1][2]!r})")
        bare = [child_run(home, "no-site.toml") for _ in range(runs)]
        cpu = statistics.median(r[0] for r in bare)
        wall = statistics.median(r[1] for r in bare)
        print(f"  the same without a site: {cpu:.3f} s CPU, {wall:.3f} s wall")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for games in args.games:
        measure(games, args.runs)


if __name__ == "__main__":
    main()
