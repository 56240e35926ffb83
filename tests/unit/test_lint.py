"""The code stays as ruff's lint and formatter keep it (the rules, and the
reason for each rule left out, are in pyproject.toml's [tool.ruff.lint]).  The ruff
version is pinned in the test extras, so CI and a keeper's checkout judge
alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_finds_nothing_to_say_about_the_code():
    result = ruff("check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_file_is_as_ruff_format_lays_it_out():
    result = ruff("format", "--check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_two_test_files_share_a_name():
    """CI runs the unit and integration tests in one pytest, which imports
    each test file by its base name: two of one name fail the whole run."""
    tests = Path(__file__).parents[1]
    names = [path.name for path in tests.rglob("test_*.py")]
    assert sorted({name for name in names if names.count(name) > 1}) == []
