"""Published records keep verifying: each finished ``record.json`` in
tests/fixtures/records (its README says how each was made), as the site
published it, is checked the way a player checks one, with `referee verify`.
A change to the rules, the record format or the verifier that would make a
record published today fail tomorrow fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import main
from referee.rules.registry import BUILT_IN

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "records"
FILES = sorted(RECORDS.glob("*.json"))


def test_every_kind_of_game_has_a_frozen_record():
    """Every game of the referee's own (a game from another package, also
    installed where the tests run, keeps its records in its own tests)."""
    assert {json.loads(path.read_text(encoding="utf-8"))["game"]["kind"] for path in FILES} >= set(BUILT_IN)


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_a_frozen_record_verifies_as_a_player_would_check_it(path, tmp_path, capsys):
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["game"]["state"] == "finished"
    assert main(["verify", str(path)]) == 0
    winner = record["winner"] or "nobody"
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"verified: {len(record['phases'])} phases replay exactly; winner: {winner}"
    )
    # and the same record naming another winner does not
    record["winner"] = None if record["winner"] else record["players"][0]["name"]
    altered = tmp_path / "record.json"
    altered.write_text(json.dumps(record), encoding="utf-8")
    assert main(["verify", str(altered)]) == 1
    assert capsys.readouterr().out.splitlines()[-1].startswith("NOT verified: ")
