"""How many replies of the mail corpus a checkout reads as meant.

Runs that checkout's own tests/unit/test_fixtures.py (test_fixture_through_ingest,
one test per .eml file of its tests/fixtures/mail) against its own code, with
pending fixtures run as plain tests (--runxfail), so "read as meant" is the
fixture's test passing: the outcome, the move, the seat, the reply and what it
must (and must not) say, as its expected.toml entry has them.  Prints the count
over the whole corpus and, given fixture names, over those alone, then each
named fixture's result.  It asserts nothing.

    python3 bench/corpus_counts.py /path/to/checkout [NAME.eml ...]   (from a venv with the test extras)

To compare two commits, give each its own clone with the same fixtures and
expected.toml entries copied in, and run this on each.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

TEST = "tests/unit/test_fixtures.py::test_fixture_through_ingest"
RESULT = re.compile(r"^(PASSED|FAILED|ERROR) \S*test_fixture_through_ingest\[(?P<name>[^\]]+)\]", re.M)


def results(checkout: Path) -> dict[str, bool]:
    """Each fixture's name (with .eml) and whether its test passed in that checkout."""
    command = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:randomly", "-p", "no:cacheprovider"]
    environment = {**os.environ, "PYTHONPATH": str(checkout)}
    run = subprocess.run([*command, "--runxfail", TEST], cwd=checkout, env=environment, capture_output=True, text=True)
    return {f"{found['name']}.eml": found.group(1) == "PASSED" for found in RESULT.finditer(run.stdout)}


def main(arguments: list[str]) -> None:
    checkout, names = Path(arguments[0]).resolve(), arguments[1:]
    passed = results(checkout)
    print(f"{checkout}: {sum(passed.values())} of {len(passed)} fixtures read as meant")
    if names:
        print(f"  of the {len(names)} named: {sum(passed.get(name, False) for name in names)} read as meant")
        for name in names:
            print(
                f"  {'meant' if passed.get(name) else 'NOT  '}  {name}{'' if name in passed else ' (no such fixture)'}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
