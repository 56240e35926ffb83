"""The long forgery run: every single-field change of genuine records of
every kind, as made and as a forger would complete it (tests/forgery.py;
tests/unit/test_forgery.py is its short version).

Plays ``--games`` finished games of each kind through the engine, tries
every change of each record (``--per-game N``: a spread sample of N) and
prints per kind: records, variants tried, caught by the record alone,
caught only by the digests the players' mails carried, caught by neither
(by field path; the ones docs/design.md allows counted apart), variants
that change the outcome yet only a digest may catch (a rename, an option, a
mail move: counted apart), and the time taken.  Asserts nothing; exits 1 if
any variant breaks the property (uncaught outside the allowed list, or an
outcome changed that the record alone does not refuse), printing each.

Run: python3 bench/forgery.py [--games 20] [--per-game all|N] [--seed 1]
     [--kinds bid,ice] [--jobs N]
The default (20 games of each kind, every change) takes some 2.3 CPU hours,
nearly all of them Bluff's (some 150 phases and 20,000 changes a game): an
hour and more on two cores.  --kinds, --games or --per-game 2000 for less.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS)]

import forgery  # noqa: E402 - tests/forgery.py: the tests' folder goes ahead of this script's on the path

from referee.record import verify  # noqa: E402


@dataclass
class Tally:
    """One kind's counts, summed over its games."""

    records: int = 0
    changes: int = 0
    variants: int = 0
    forged: int = 0  # of the variants, those completed by the forger
    by_record: int = 0
    by_digest: int = 0
    uncaught: Counter[str] = field(default_factory=Counter)  # by field pattern
    allowed: Counter[str] = field(default_factory=Counter)
    exempt: Counter[str] = field(default_factory=Counter)  # outcome changed, a digest-only change
    last_mail_misses: int = 0  # caught by the digests, but not by the last mail's alone
    seconds: float = 0.0
    faults: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in (
            "records",
            "changes",
            "variants",
            "forged",
            "by_record",
            "by_digest",
            "last_mail_misses",
            "seconds",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("uncaught", "allowed", "exempt"):
            getattr(self, name).update(getattr(other, name))
        self.faults += other.faults


def run_game(kind: str, seed: int, per_game: int | None) -> Tally:
    """Play one game and judge its changes (all, or a spread sample)."""
    logging.disable(logging.WARNING)
    started = time.process_time()
    genuine = forgery.play(kind, seed)
    tally = Tally(records=1)
    verdict = verify(genuine.record)
    if not verdict.ok:
        tally.faults.append(f"{genuine.name}: the genuine record does not verify: {verdict.message}")
    if not genuine.held <= forgery.digest_set(genuine.record):
        tally.faults.append(f"{genuine.name}: a mail's digest line is not the record's")
    found = forgery.changes(genuine, every_move=per_game is None)
    if per_game is not None:
        found = forgery.sample(found, per_game, random.Random(f"{kind} {seed}"))
    tally.changes = len(found)
    for change in found:
        for judged in forgery.judge(genuine, change):
            tally.variants += 1
            tally.forged += judged.forged
            if judged.caught == "record":
                tally.by_record += 1
            elif judged.caught == "digest":
                tally.by_digest += 1
                tally.last_mail_misses += not judged.by_last
            elif judged.allowed:
                tally.allowed[judged.change.pattern] += 1
            else:
                tally.uncaught[judged.change.pattern] += 1
            if judged.outcome and judged.exempt and judged.caught != "record":
                tally.exempt[judged.change.pattern] += 1
            if judged.fault:
                tally.faults.append(f"{genuine.name}: {judged.fault}: {judged.describe()}")
    tally.seconds = time.process_time() - started
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20, help="games of each kind (default 20)")
    parser.add_argument("--per-game", default="all", help="changes tried per game: all, or a number")
    parser.add_argument("--seed", type=int, default=1, help="the first game's seed; then seed+1 ...")
    parser.add_argument("--kinds", default=",".join(forgery.KINDS))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--show", type=int, default=20, help="faults printed (default 20)")
    args = parser.parse_args()
    per_game = None if args.per_game == "all" else int(args.per_game)
    kinds = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    started = time.perf_counter()
    tasks = [(kind, seed, per_game) for kind in kinds for seed in range(args.seed, args.seed + args.games)]
    tallies = {kind: Tally() for kind in kinds}
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = pool.map(run_game, *zip(*tasks), chunksize=1)
            for (kind, _, _), tally in zip(tasks, results):
                tallies[kind].add(tally)
    else:
        for kind, seed, per in tasks:
            tallies[kind].add(run_game(kind, seed, per))
    print(
        f"{'kind':<11} {'records':>7} {'changes':>8} {'variants':>8} {'forged':>7} {'record':>8} "
        f"{'digest':>7} {'allowed':>7} {'uncaught':>8} {'cpu s':>7}"
    )
    total = Tally()
    for kind, tally in tallies.items():
        total.add(tally)
        print(_row(kind, tally))
    print(_row("all", total))
    print(
        f"(wall time {time.perf_counter() - started:.1f} s, {args.jobs} job(s); 'record': refused by the "
        "record alone; 'digest': verified, but its digests are not the mails'; 'allowed': uncaught, "
        "as docs/design.md allows)"
    )
    for kind, tally in tallies.items():
        for name, counter in (
            ("uncaught", tally.uncaught),
            ("allowed uncaught", tally.allowed),
            ("outcome changed, caught by a digest only (allowed)", tally.exempt),
        ):
            if counter:
                print(f"{kind}: {name}: " + ", ".join(f"{pattern} {n}" for pattern, n in sorted(counter.items())))
        if tally.last_mail_misses:
            print(f"{kind}: {tally.last_mail_misses} variants the last mail's digest alone does not catch")
    faults = total.faults
    for line in faults[: args.show]:
        print("FAULT", line)
    if len(faults) > args.show:
        print(f"... and {len(faults) - args.show} more faults")
    print(f"{len(faults)} faults")
    return 1 if faults else 0


def _row(kind: str, tally: Tally) -> str:
    return (
        f"{kind:<11} {tally.records:>7} {tally.changes:>8} {tally.variants:>8} {tally.forged:>7} "
        f"{tally.by_record:>8} {tally.by_digest:>7} {sum(tally.allowed.values()):>7} "
        f"{sum(tally.uncaught.values()):>8} {tally.seconds:>7.1f}"
    )


if __name__ == "__main__":
    sys.exit(main())
