"""A long game's published record is in parts (referee.record.split_record):
a new phase writes the head and the last part, never the parts before it,
and `referee verify` reads the head and its parts into the whole record
again, as strictly as ever.  The parts are made small here (PART_PHASES) so
that a game of Pure Skill (13 rounds) is a long game."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock
from test_verify import fresh_engine
from test_verify import web_folder as _web_folder

import referee.record
from referee.cli import main
from referee.site.render import Site

web_folder = _web_folder  # the fixture
PART = 4  # phases a part here: a game of 13 rounds has parts of 4, 4, 4 and 1


@pytest.fixture(autouse=True)
def small_parts(monkeypatch):
    monkeypatch.setattr(referee.record, "PART_PHASES", PART)


@pytest.fixture
def site(tmp_path) -> Path:
    """A site of two finished games of Pure Skill, played by bots."""
    engine = fresh_engine(FakeClock())
    for _ in range(2):
        engine.new_game("pure-skill", [], bots=3)
    Site(engine, tmp_path / "site").render()
    return tmp_path / "site"


def verify(path: Path | str, capsys) -> tuple[int, str]:
    status = main(["verify", str(path)])
    captured = capsys.readouterr()
    return status, (captured.out + captured.err).strip().splitlines()[-1]


def test_a_long_record_is_published_in_parts_and_verifies_whole(site, capsys):
    head = json.loads((site / "games/1/record.json").read_text())
    assert "phases" not in head
    assert head["parts"] == ["record-1.json", "record-2.json", "record-3.json", "record-4.json"]
    parts = [json.loads((site / "games/1" / name).read_text()) for name in head["parts"]]
    assert [[p["number"] for p in part["phases"]] for part in parts] == [
        [1, 2, 3, 4],
        [5, 6, 7, 8],
        [9, 10, 11, 12],
        [13],
    ]
    assert verify(site / "games/1/record.json", capsys) == (0, "verified: 13 phases replay exactly; winner: nobody")


def test_a_changed_move_in_an_old_part_fails(site, capsys):
    path = site / "games/1/record-1.json"
    part = json.loads(path.read_text())
    move = part["phases"][1]["moves"][0]
    move["move"] = "bid A" if move["move"] != "bid A" else "bid 2"
    path.write_text(json.dumps(part))
    status, line = verify(site / "games/1/record.json", capsys)
    assert status == 1
    assert line.startswith("NOT verified")


def test_a_missing_part_fails(site, capsys):
    (site / "games/1/record-2.json").unlink()
    status, line = verify(site / "games/1/record.json", capsys)
    assert status == 2
    assert "record-2.json" in line and "no such file" in line


def test_a_head_that_leaves_a_part_out_fails(site, capsys):
    path = site / "games/1/record.json"
    head = json.loads(path.read_text())
    head["parts"] = head["parts"][:-1]  # the last round left out: the game would not have ended
    path.write_text(json.dumps(head))
    assert verify(path, capsys)[0] == 1
    head["parts"] = ["record-1.json", "record-3.json", "record-4.json"]
    path.write_text(json.dumps(head))
    assert verify(path, capsys)[0] == 1


def test_a_part_from_another_game_fails(site, capsys):
    shutil.copy(site / "games/2/record-2.json", site / "games/1/record-2.json")
    status, line = verify(site / "games/1/record.json", capsys)
    assert (status, line) == (1, "NOT verified: record-2.json is part 2 of game 2, not part 2 of game 1")
    part = json.loads((site / "games/2/record-2.json").read_text())
    part["game"] = 1  # claimed for game 1: its moves are game 2's, drawn from another seed
    (site / "games/1/record-2.json").write_text(json.dumps(part))
    assert verify(site / "games/1/record.json", capsys)[0] == 1


def test_a_new_phase_writes_the_head_and_the_last_part_only(tmp_path):
    """A running game whose players never answer: each deadline resolves a
    round; the site's render after it writes the game's record.json and its
    last part, never a part before the last."""
    clock = FakeClock()
    engine = fresh_engine(clock)
    game = engine.new_game("pure-skill", list(PLAYERS), deadline=timedelta(hours=1))
    site = Site(engine, tmp_path / "site")
    site.render()
    written = []
    for _ in range(10):  # (the game ends at round 12: its round 13 is forced, and the end rewrites it all)
        clock.advance(hours=1)
        engine.tick()
        records = sorted(name for name in site.render().written if "/record" in name)
        written.append(records)
    folder = f"games/{game}"
    assert len(engine.table(game).replay.steps) == 10
    for number, records in enumerate(written, 1):  # after round `number` is resolved
        if number <= PART:
            assert records == [f"{folder}/record.json"]  # whole, one part's phases or fewer
        else:
            last = (number - 1) // PART + 1
            # The first time a game has parts, every part is written; after, only the last.
            expected = range(1, last + 1) if number == PART + 1 else [last]
            # The head (every field but the phases, with its parts' names) only when it names a new part:
            # a head that did not change is not written again.
            head = [f"{folder}/record.json"] if (number - 1) % PART == 0 else []
            assert records == sorted([*head, *(f"{folder}/record-{n}.json" for n in expected)])


def test_a_long_record_verifies_from_its_web_address(site, web_folder, capsys):
    """The parts are read beside the head's address; one missing is a 404."""
    folder, base = web_folder
    shutil.copytree(site / "games", folder / "games")
    assert verify(f"{base}/games/1/record.json", capsys) == (0, "verified: 13 phases replay exactly; winner: nobody")
    (folder / "games/1/record-3.json").unlink()
    status, line = verify(f"{base}/games/1/record.json", capsys)
    assert status == 2 and "record-3.json" in line and "404" in line
