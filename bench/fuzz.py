"""The long fuzz run: 10^5 mutated mails through ingest (tests/fuzzmail.py).

Prints messages per second, outcomes by code, the slowest messages (with
the seed and number that make them again) and peak memory; counts the same
faults the fuzz test asserts against (a failed outcome, a control character
in a queued header, a game changed by mail naming no token) and prints the
first of each.  Exits 1 if there was any.

Run: python3 bench/fuzz.py [--count 100000] [--seed 1] [--show N]
  --show N prints message N's bytes (to replay one the run reported).
"""

from __future__ import annotations

import argparse
import heapq
import logging
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "unit")]

from conftest import assert_clean_headers  # noqa: E402
from fuzzmail import FIXTURE_KEY, Fuzzer, count_game_changes, game_seeds, names_a_token  # noqa: E402
from test_fuzz import keep_every_kind_running, queued_after  # noqa: E402
from test_security import build  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, help="print this message's bytes and stop")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # a refusal is logged at WARNING; a failure still shows
    with tempfile.TemporaryDirectory() as tmp:
        return run(Path(tmp), args)


def run(tmp: Path, args: argparse.Namespace) -> int:
    engine = build(tmp, game_seeds(args.seed), secret_key=FIXTURE_KEY, replies_per_hour=10**6)
    keep_every_kind_running(engine)
    fuzzer, changes = Fuzzer(engine, args.seed), count_game_changes(engine)
    outcomes: Counter[str] = Counter()
    faults: dict[str, tuple[int, str]] = {}
    slowest: list[tuple[float, int, int]] = []  # (cpu seconds, number, size)
    spent, last, started = 0.0, 0, time.perf_counter()
    for number in range(1, args.count + 1):
        raw = fuzzer.message()
        if number == args.show:
            sys.stdout.buffer.write(raw)
            return 0
        tokenless = not names_a_token(raw, fuzzer.tokens())
        before = changes()
        cpu = time.process_time()
        outcome = engine.ingest(raw)
        cpu = time.process_time() - cpu
        spent += cpu
        heapq.heappush(slowest, (cpu, number, len(raw)))
        if len(slowest) > 5:
            heapq.heappop(slowest)
        outcomes[outcome.code] += 1

        def fault(kind: str, detail: str, number: int = number, raw: bytes = raw) -> None:
            """The first fault of each kind is kept, and its mail saved beside the report."""
            if kind not in faults:
                saved = Path(f"fuzz-{args.seed}-{number}.eml")
                saved.write_bytes(raw)
                faults[kind] = (number, f"{detail} (the mail: {saved})")

        if outcome.code == "failed":
            fault("failed", str(outcome))
        for mail in queued_after(engine, last):
            last = mail["id"]
            try:
                assert_clean_headers(mail["raw"])
            except AssertionError as error:
                fault("broken header", str(error))
        if tokenless and changes() != before:
            fault("changed without a token", str(outcome))
        engine.clock.advance(seconds=30)
        if number % 500 == 0:
            engine.clock.advance(days=3, seconds=1)
            engine.tick()
            keep_every_kind_running(engine)
        if number % 10_000 == 0:
            print(f"  {number} messages, {time.perf_counter() - started:.0f} s", file=sys.stderr)
    wall = time.perf_counter() - started
    report(args, outcomes, faults, slowest, spent, wall, engine)
    return 1 if faults else 0


def report(args, outcomes, faults, slowest, spent, wall, engine) -> None:
    games = Counter(g["kind"] for g in engine.store.games() if g["state"] == "finished")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"fuzz: {args.count} messages, seed {args.seed}")
    print(f"  ingest: {args.count / spent:.0f} messages/s of CPU ({spent:.1f} s; {wall:.1f} s wall with the checks)")
    print("  outcomes: " + ", ".join(f"{code} {n}" for code, n in outcomes.most_common()))
    print("  games finished along the way: " + (", ".join(f"{k} {n}" for k, n in sorted(games.items())) or "none"))
    print(
        "  slowest: "
        + ", ".join(f"#{n} {cpu * 1000:.0f} ms ({size // 1024} KB)" for cpu, n, size in sorted(slowest, reverse=True))
    )
    print(f"  peak RSS: {peak:.0f} MB")
    print(
        f"  faults: {len(faults)}"
        + "".join(f"\n    {kind}: first at #{n} {detail}" for kind, (n, detail) in faults.items())
    )


if __name__ == "__main__":
    sys.exit(main())
