"""mypy finds no error in ``referee/`` (issue 31, item 6): run as a keeper
would, ``python -m mypy referee`` from the top of the checkout, with the
settings in pyproject.toml's ``[tool.mypy]``.  Its cache (``.mypy_cache``
there) makes a run after the first take a fraction of a second."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_finds_no_error_in_the_referee():
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "referee"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found"), done.stdout
