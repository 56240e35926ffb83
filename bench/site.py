"""Benchmark: how long `referee render` takes, and what a move costs the site.

1. Per kind, the CPU of a forced full render (`referee render --force`) of N
   finished games (issue 36: every kind under 2 s of CPU for 200), its
   templates read compiled, as the command line keeps them beside games.db
   (compiling them all costs about 0.2 s, once).  Pure
   Skill is played by players who never answer (every bid random at its
   deadline), the other kinds by 4 bots.  The games.db built for each kind
   is kept in --cache (building them takes minutes), keyed by kind and N.
2. For Pure Skill: a render with nothing changed, one after a move, the
   standings, a STANDINGS mail, the site's size.
3. A long game: an 8-player Auction (priority) whose players never answer,
   played to its end by the deadlines: the CPU and the bytes a render writes
   after one move at move 10, at the move that fills a block of phases (its
   history page is written), at the last move before the end, and at the
   end (which reveals every move: written once).  Flat is the goal (issue
   36: a long game's site grows by the new phase): the last move's CPU and
   bytes against move 10's are printed.

With --instructions, each kind's forced render is also counted in
instructions by Valgrind (callgrind): this virtual machine's speed moves by
half within the hour (Bluff's render: 2.1 s and 3.2 s of CPU ten minutes
apart), and the count does not move with it.  A run that stops before the
render is counted too, and taken from one that renders.  It takes a few
minutes a kind (Valgrind runs Python some fifty times slower).

Prints its figures (CPU by time.process_time, wall by time.perf_counter);
asserts nothing.
Run: python3 bench/site.py [--games 200] [--cache /tmp/referee-bench-site] [--kinds bluff,ice] [--no-long]
     [--instructions]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from referee.config import Config
from referee.engine import Engine
from referee.site.render import HISTORY_BLOCK, Report, Site
from referee.standings import standings
from referee.store import Store

KINDS = ("pure-skill", "bid", "ice", "priority", "bluff")
LONG_SEED = b"\x01" * 32  # the long game is the same at every run: 1,358 turns


class Clock:
    def __init__(self):
        self.now = datetime(2026, 11, 21, 12, tzinfo=UTC)

    def __call__(self):
        return self.now


def engine_on(database: Path, clock: Clock) -> Engine:
    config = Config(address="referee@example.org", database=database, reminder=None, outage_gap=None)
    return Engine(Store(database), config, clock)


def built(kind: str, games: int, cache: Path) -> Path:
    """A games.db of ``games`` finished games of ``kind`` (kept in ``cache``)."""
    database = cache / f"{kind}-{games}.db"
    if database.exists():
        return database
    cache.mkdir(parents=True, exist_ok=True)
    building = database.with_suffix(".building")
    building.unlink(missing_ok=True)
    clock = Clock()
    engine = engine_on(building, clock)
    start = time.process_time()
    if kind == "pure-skill":
        for number in range(games):
            players = [f"{name}{number}@example.org" for name in ("alice", "bob", "carol")]
            engine.new_game("pure-skill", players, deadline=timedelta(hours=1))
        for _ in range(13):
            clock.now += timedelta(hours=1)
            engine.tick()
    else:
        for _ in range(games):
            engine.new_game(kind, [], bots=4)
    engine.store.db.close()
    building.rename(database)
    print(f"  (built {games} games of {kind} in {time.process_time() - start:.1f} s of CPU, kept in {database})")
    return database


def compiled(engine: Engine, templates: Path) -> None:
    """The site's templates compiled into ``templates``, as the command line
    keeps them beside games.db (Config.caching_templates): ``referee render
    --force`` reads them compiled from its second run on."""
    with tempfile.TemporaryDirectory() as folder:
        site = Site(engine, Path(folder), cache=templates)
        for name in site.env.list_templates(filter_func=lambda name: name.endswith(".j2") and "mail/" not in name):
            site.env.get_template(name)  # (the mail's templates are another environment's)


def full_renders(kinds: list[str], games: int, cache: Path, instructions: bool = False) -> None:
    print(f"forced full render of {games} finished games (CPU / wall):")
    for kind in kinds:
        database = built(kind, games, cache)
        phases = _phases(database) / games
        cpu, wall, report = forced_render(database, cache)
        counted = f", {_instructions(kind, games, cache) / 1e9:.2f} billion instructions" if instructions else ""
        print(
            f"  {kind:10} {cpu:6.2f} s / {wall:6.2f} s  ({report.games_rendered} games of {phases:.0f} phases, "
            f"{cpu / report.games_rendered * 1000:.1f} ms CPU a game{counted})"
        )


def forced_render(database: Path, cache: Path) -> tuple[float, float, Report]:
    """`referee render --force` of ``database``'s games into a folder thrown
    away after: its CPU, its wall time and its report.  In --instructions'
    runs under Valgrind, the process ends where the render would start, or
    where it ended (what comes after is not the render's work)."""
    engine = engine_on(database, Clock())
    with tempfile.TemporaryDirectory() as folder:
        compiled(engine, cache / "templates")
        site = Site(engine, Path(folder) / "site", cache=cache / "templates")
        if os.environ.get(_COUNTED) == "setup":
            os._exit(0)
        cpu, wall = time.process_time(), time.perf_counter()
        report = site.render(force=True)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if os.environ.get(_COUNTED) == "render":
            os._exit(0)
        return cpu, wall, report


def _phases(database: Path) -> int:
    store = Store(database)
    try:
        return store.db.execute("select count(*) from phases").fetchone()[0]
    finally:
        store.db.close()


def _instructions(kind: str, games: int, cache: Path) -> int:
    """The instructions a forced render of ``kind``'s games runs, by
    Valgrind: this script run twice under it (_COUNTED), ending before the
    render and after it, the first count taken from the second."""
    counts = []
    for part in ("setup", "render"):
        with tempfile.NamedTemporaryFile() as out:
            command = [sys.executable, __file__, "--kinds", kind, "--games", str(games), "--cache", str(cache)]
            try:
                done = subprocess.run(
                    ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}", *command],
                    capture_output=True,
                    text=True,
                    env={**os.environ, "PYTHONHASHSEED": "0", _COUNTED: part},  # (the same hashes: the same count)
                )
            except FileNotFoundError:
                sys.exit("--instructions needs Valgrind (Debian's package valgrind)")
        if done.returncode != 0:
            sys.exit(f"valgrind failed ({done.returncode}):\n{done.stderr[-2000:]}")
        counts.append(int(re.findall(r"Collected : (\d+)", done.stderr)[-1]))
    return counts[1] - counts[0]


_COUNTED = "REFEREE_BENCH_COUNTED"  # set in --instructions' runs under Valgrind: which part is counted


def pure_skill_changes(games: int, cache: Path) -> None:
    """Renders after a full one: nothing changed, one game changed; the standings."""
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "games.db"
        shutil.copy(built("pure-skill", games, cache), database)
        clock = Clock()
        clock.now += timedelta(hours=14)
        engine = engine_on(database, clock)
        running = engine.new_game("pure-skill", ["x@example.org", "y@example.org", "z@example.org"])
        site = Site(engine, Path(folder) / "site")
        site.render()
        print("Pure Skill, after a full render:")
        start = time.process_time()
        report = site.render()
        print(f"  nothing changed: {time.process_time() - start:.3f} s CPU, {len(report.written)} files written")
        engine.resign(running, "x@example.org")  # one change: a bot takes a seat and bids
        start = time.process_time()
        report = site.render()
        print(
            f"  one game changed: {time.process_time() - start:.3f} s CPU, "
            f"{report.games_rendered} game(s), {len(report.written)} files written"
        )
        start = time.process_time()
        counted = standings(engine.store, engine.tables)
        took = time.process_time() - start
        print(f"  standings of {counted.games} games, {len(counted.overall)} players: {took * 1000:.1f} ms CPU")
        clock.now += timedelta(minutes=1)
        start = time.process_time()
        engine.ingest(b"From: zoe@example.net\r\nTo: referee@example.org\r\nSubject: hello\r\n\r\nSTANDINGS\r\n")
        print(f"  a STANDINGS mail answered: {(time.process_time() - start) * 1000:.1f} ms CPU")
        size = sum(p.stat().st_size for p in (Path(folder) / "site").rglob("*") if p.is_file())
        print(f"  site size: {size / 2**20:.1f} MiB")


def long_game() -> None:
    """An 8-player Auction played to its end by its deadlines: what a render
    after one move costs at move 10, when a block of phases fills (a history
    page written), at the last move and at the end; and the last move's
    against move 10's (flat: the same order of magnitude)."""
    turns, _ = _play_long(None)
    print(f"a long game: 8-player Auction (priority) of {turns} turns; a render after one move:")
    filled = (turns - 1) // HISTORY_BLOCK * HISTORY_BLOCK + 1  # the move that fills the last block
    _, figures = _play_long(
        {
            10: "move 10",
            filled: f"move {filled} (a block fills)",
            turns - 1: "the last move",
            turns: "the end (every move revealed)",
        }
    )
    (cpu_10, bytes_10), (cpu_last, bytes_last) = figures[10], figures[turns - 1]
    print(
        f"  the last move against move 10: {cpu_last / cpu_10:.1f}x the CPU, {bytes_last / bytes_10:.1f}x the bytes "
        "(before issue 36's split: 134 ms and 1,396 KiB against 6 ms and 32 KiB)"
    )


def _play_long(measure: dict[int, str] | None) -> tuple[int, dict[int, tuple[float, int]]]:
    """Play the long game; at each move in ``measure`` (turns resolved),
    render the site before it and after it, and print the second; the game's
    turns, and each measured render's CPU (s) and bytes written."""
    figures: dict[int, tuple[float, int]] = {}
    with tempfile.TemporaryDirectory() as folder:
        clock = Clock()
        engine = engine_on(Path(folder) / "games.db", clock)
        players = [f"p{n}@example.org" for n in range(8)]
        game = engine.new_game("priority", players, deadline=timedelta(hours=1), seed=LONG_SEED)
        site = Site(engine, Path(folder) / "site")
        resolved = 0
        while engine.table(game).row["state"] == "running":
            if measure and resolved + 1 in measure:
                site.render()
            clock.now += timedelta(days=3)  # past any deadline: one turn resolved at random
            engine.tick()
            resolved += 1
            if measure and resolved in measure:
                cpu, wall = time.process_time(), time.perf_counter()
                report = site.render()
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                print(
                    f"  {measure[resolved]:30} {cpu * 1000:6.0f} ms CPU / {wall * 1000:6.0f} ms, {_written(site, report)}"
                )
                figures[resolved] = (cpu, sum((site.folder / name).stat().st_size for name in report.written))
        return resolved, figures


def _written(site: Site, report: Report) -> str:
    sizes = {name: (site.folder / name).stat().st_size for name in report.written}
    game = {name: size for name, size in sizes.items() if name.startswith("games/")}
    biggest = sorted(game.items(), key=lambda item: -item[1])[:3]
    shown = ", ".join(f"{Path(name).name} {size / 1024:.0f}" for name, size in biggest)
    return f"{len(sizes)} files, {sum(sizes.values()) / 1024:.0f} KiB written (the biggest: {shown} KiB)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "referee-bench-site")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--no-long", action="store_true", help="skip the long game")
    parser.add_argument("--instructions", action="store_true", help="count each full render's instructions too")
    args = parser.parse_args()
    kinds = [kind for kind in args.kinds.split(",") if kind]
    if os.environ.get(_COUNTED):  # one kind's forced render, or what comes before it, under Valgrind
        forced_render(built(kinds[0], args.games, args.cache), args.cache)
    # (the figures move with the Python build: one without profile-guided optimisation takes more CPU)
    print(
        f"Python {platform.python_version()} ({os.path.realpath(sys.executable)}); load average {os.getloadavg()[0]:.2f}"
    )
    full_renders(kinds, args.games, args.cache, args.instructions)
    if "pure-skill" in kinds:
        pure_skill_changes(args.games, args.cache)
    if not args.no_long:
        long_game()


if __name__ == "__main__":
    sys.exit(main())
