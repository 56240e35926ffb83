"""Tests that need a real part (Dovecot, Chromium) skip without it on a
developer's machine, and fail in CI (the variable CI is set), where a
missing part must never pass unnoticed."""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str, packages: str) -> None:
    """Skip, or fail in CI, because a part the test needs cannot run."""
    if in_ci():
        pytest.fail(f"{reason}\n(CI is set: this test must run; install {packages})", pytrace=False)
    pytest.skip(reason)
