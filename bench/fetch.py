"""Benchmark: ``referee verify``'s reading of a record (referee.fetch) on
pathological files of 10 KB, 100 KB, 1 MB and 10 MB.

For each shape, the time load_record takes (the best of a few runs) and
its peak memory (tracemalloc, a separate run), with the time per MB: if the
reading is linear, the time per MB stays flat as the size grows tenfold.
Shapes: nesting 100,000s deep (refused at depth 65, at once); groups
nested just as deep as allowed, repeated; one long string full of brackets,
escaped quotes and backslashes; the same string left unterminated (the
trap of a backtracking scan); a wide flat array of numbers; a wide array of
empty arrays (the most objects a byte can make) and one of small objects.
Past a million arrays and objects (MAX_CONTAINERS) a file is refused
unparsed.  Asserts nothing.

Run from the top of the checkout (the referee installed):  python3 bench/fetch.py
"""

from __future__ import annotations

import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from referee.fetch import MAX_BYTES, MAX_CONTAINERS, MAX_DEPTH, Unreadable, load_record

SIZES = [10 * 1024, 100 * 1024, 1024 * 1024, 10 * 1024 * 1024]


def fill(unit: str, size: int, head: str = "", tail: str = "") -> str:
    return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail


def deep(size: int) -> str:
    return "[" * (size // 2) + "]" * (size // 2)


def deep_allowed(size: int) -> str:
    group = "[" * (MAX_DEPTH - 1) + "0" + "]" * (MAX_DEPTH - 1)
    return fill(group + ",", size, "[", "0]")


SHAPES: dict[str, Callable[[int], str]] = {
    "nested all the way": deep,
    f"nested {MAX_DEPTH} deep, repeated": deep_allowed,
    'a string of [{\\" and \\\\': lambda size: fill('[{\\"\\\\]}', size, '["', '"]'),
    "the same, unterminated": lambda size: fill('\\"[', size, '["'),
    "a flat array of numbers": lambda size: fill("0,", size, "[", "0]"),
    "an array of empty arrays": lambda size: fill("[],", size, "[", "[]]"),
    "an array of small objects": lambda size: fill('{"ab":1000},', size, "[", "{}]"),
}


def outcome(path: Path) -> str:
    try:
        load_record(str(path))
    except Unreadable as error:
        return error.reason.split(":")[0][:28]
    return "read"


def timed(path: Path, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        try:
            load_record(str(path))
        except Unreadable:
            pass
        best = min(best, time.perf_counter() - start)
    return best


def peak(path: Path) -> int:
    tracemalloc.start()
    try:
        load_record(str(path))
    except Unreadable:
        pass
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def main() -> None:
    print(
        f"load_record with its limits ({MAX_BYTES // (1024 * 1024)} MB, depth {MAX_DEPTH}, "
        f"{MAX_CONTAINERS:,} arrays and objects); "
        "time: best of 3; peak: tracemalloc"
    )
    print(f"{'shape':32} {'size':>7} {'outcome':28} {'time ms':>9} {'ms/MB':>7} {'peak MB':>8} {'peak/size':>9}")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "record.json")
        for name, make in SHAPES.items():
            for size in SIZES:
                text = make(size)
                path.write_text(text)
                del text
                mb = size / (1024 * 1024)
                took = timed(path, 3)
                top = peak(path)
                label = f"{size // 1024} KB" if size < 1024 * 1024 else f"{size // (1024 * 1024)} MB"
                print(
                    f"{name:32} {label:>7} {outcome(path):28} {took * 1000:9.1f} {took * 1000 / mb:7.1f} "
                    f"{top / (1024 * 1024):8.1f} {top / size:9.1f}"
                )
            print()


if __name__ == "__main__":
    main()
