"""The kill soak, short: a few hundred players' mails, each crash point and
random moments, `run --once` and `serve` SIGKILLed (see killsoak.py; the
long one is bench/soak.py).  Like every integration test it fails, not
skips, in CI when Dovecot cannot run (the mailstack fixture)."""

from __future__ import annotations

import os

from crashpoint import POINTS
from killsoak import Soak
from mailstack import MailStack


def test_killed_at_random_and_at_every_crash_point_the_referee_loses_and_doubles_nothing(
    mailstack: MailStack, tmp_path
) -> None:
    seed = int(os.environ.get("REFEREE_SOAK_SEED", "1"))  # another seed: another schedule of kills
    report = Soak(mailstack, tmp_path, seed=seed, games=8, mails=600, kills=14).run()
    print(report.summary())  # pytest shows it with -s, or when the test fails
    assert report.violations == [], report.summary()
    assert set(report.fired()) == set(POINTS), report.summary()
    programs = [kill.program for kill in report.kills]
    assert len(programs) >= 12 and programs.count("serve") >= 2, report.summary()
