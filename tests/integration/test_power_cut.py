"""Power cuts: what the referee wrote but never flushed is lost, and still
nothing a player was told is taken back.

The kill soak of test_kill_soak.py under powercut.py's shim: every SIGKILL
that lands (at random moments and at every crash point, `run --once` and
`serve`) is followed by a power cut, so games.db and its journal are what
their last fsync left.  Then every mail a player received must be known to
games.db under its Message-ID (none sent again under another), every in-time
bid must count exactly once, and every round resolve as the rules say (the
soak's checks)."""

from __future__ import annotations

import os
import subprocess
import sys

import powercut
import pytest
import required
from crashpoint import POINTS
from killsoak import Soak
from mailstack import MailStack


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    try:
        return powercut.build(tmp_path_factory.mktemp("shim"))
    except powercut.PowerCutUnavailable as error:
        required.unavailable(str(error), "gcc")


def test_the_shim_keeps_what_was_flushed_and_a_cut_loses_the_rest(shim, tmp_path):
    """The model itself: written, flushed, written again, killed; the cut
    leaves the flushed part, and a file never flushed is gone."""
    data, scratch = tmp_path / "games.db", tmp_path / "games.db-wal"
    program = (
        "import os, signal\n"
        f"with open({str(data)!r}, 'wb') as f:\n"
        "    f.write(b'flushed'); f.flush(); os.fsync(f.fileno())\n"
        "    f.write(b' and not'); f.flush()\n"
        f"with open({str(scratch)!r}, 'wb') as g:\n"
        "    g.write(b'never flushed'); g.flush()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, **powercut.environment(shim, data)}
    assert subprocess.run([sys.executable, "-c", program], env=env, check=False).returncode == -9
    assert data.read_bytes() == b"flushed and not"
    assert powercut.cut(data) == {"games.db": "reverted", "games.db-wal": "removed"}
    assert data.read_bytes() == b"flushed" and not scratch.exists()


def test_after_power_cuts_nothing_a_player_saw_is_unknown_and_no_move_is_lost(
    mailstack: MailStack, tmp_path, shim
) -> None:
    seed = int(os.environ.get("REFEREE_SOAK_SEED", "2"))
    home = tmp_path / "home"
    home.mkdir()
    report = Soak(mailstack, home, seed=seed, games=6, mails=420, kills=14, power_cut=shim).run()
    print(report.summary())
    assert report.violations == [], report.summary()
    assert set(report.fired()) == set(POINTS), report.summary()
    assert report.cuts["cuts"] >= 14 and report.cuts["reverted"] >= 2, report.summary()  # some cuts lost writes
