"""A game from a package of its own: examples/high-card, found as an
installed package is, through its entry point in ``referee.games`` (here
its folder on the path with the metadata pip would write), listed by
`referee kinds`, keeping the contract every game keeps
(tests/unit/test_contract.py), played by mail to the end, its site written
and its record verified."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
import test_contract as contract
from conftest import PLAYERS, FakeClock, Seeds, mails, send, to_deadline
from test_registry import dist_info

from referee.config import Config
from referee.engine import Engine
from referee.resources import game_file, rule_texts, template_folders
from referee.rules import GAMES
from referee.rules.registry import discover
from referee.site.render import Site
from referee.store import Store

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "high-card"
KIND = "high-card"


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """A folder that holds High Card's metadata as pip installs it (the
    package itself stays in examples/, put on the path beside it)."""
    site = tmp_path / "site-packages"
    dist_info(site, "referee-high-card", {KIND: "high_card:HighCard"})
    return site


@pytest.fixture
def high_card(installed: Path, monkeypatch) -> object:
    """High Card, found by its entry point, among the referee's games."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.syspath_prepend(str(installed))
    games = discover()
    assert list(games) == [*GAMES, KIND]
    monkeypatch.setitem(GAMES, KIND, games[KIND])
    # (not 2: its second round is forced, too short a game to look at midway)
    monkeypatch.setitem(contract.VARIANTS, KIND, [{"hand": 3}, {"hand": 10}])
    return games[KIND]


def referee(installed: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`python -m referee ARGS` in a new process, with High Card installed."""
    path = os.pathsep.join([str(installed), str(EXAMPLE), str(ROOT), os.environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "referee", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": path},
        timeout=120,
        check=False,
    )


def test_kinds_lists_the_installed_game_with_its_option_and_rulings(installed, tmp_path):
    done = referee(installed, "kinds", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[0] == KIND)
    assert lines[at].split(None, 1)[1] == "High Card (2 to 5 seats)"
    assert lines[at + 1].split(None, 2) == [
        "--option",
        "hand=5",
        "cards dealt to each player, and so rounds played: 2 to 10 (H1)",
    ]
    assert lines[at + 2 : at + 4] == [
        f"    rules:   {EXAMPLE / 'high_card' / 'rules.txt'}",
        f"    rulings: {EXAMPLE / 'high_card' / 'rulings.md'}",
    ]
    assert [line.split()[0] for line in lines if not line.startswith(" ")][:5] == list(GAMES)[:5]


def test_the_game_brings_its_templates_rule_text_and_rulings(high_card):
    assert game_file(high_card, "templates") == EXAMPLE / "high_card" / "templates"
    assert template_folders()[-1] == EXAMPLE / "high_card" / "templates"
    rules, rulings = rule_texts(KIND)
    assert rules.startswith("High Card\n") and rulings.startswith("# High Card: the referee's rulings")


def test_it_keeps_the_contract_by_its_rules_and_by_mail(high_card, tmp_path, monkeypatch):
    """The contract test of the referee's own games, run over High Card."""
    contract.test_rules_keep_the_contract_over_random_games_and_replay_them(KIND)
    contract.test_games_by_mail_render_every_event_and_leak_no_seats_view(KIND, tmp_path, monkeypatch)


def test_a_game_played_by_mail_to_the_end_with_its_site_and_a_record_that_verifies(high_card, installed, tmp_path):
    clock = FakeClock()
    config = Config(address="referee@example.org", database=tmp_path / "games.db", reminder=None, outage_gap=None)
    engine = Engine(Store(config.database), config, clock, Seeds(bytes(range(32))))
    game = engine.new_game(KIND, PLAYERS, options={"hand": "3"}, deadline=timedelta(days=1))
    assert "A game of High Card begins" in mails(engine, PLAYERS[0])[0]["subject"]
    site = Site(engine, tmp_path / "site")
    for number in (1, 2, 3):
        table = engine.table(game)
        hands = [high_card.view(table.state, seat)["hand"] for seat in range(3)]
        if number < 3:
            (rank, suit), words = hands[0][0], {"C": "clubs", "D": "diamonds", "H": "hearts", "S": "spades"}
            assert (
                send(engine, clock, PLAYERS[0], f"I play the {'10' if rank == 'T' else rank} of {words[suit]}.").code
                == "move"
            )
            assert send(engine, clock, PLAYERS[1], f"play {hands[1][-1].lower()}").code == "move"
            to_deadline(engine, clock)  # carol's card: at random
            engine.tick()
        site.render()
        assert engine.table(game).row["state"] == ("finished" if number >= 2 else "running")  # round 3: forced
    rounds = [m for m in mails(engine, PLAYERS[2]) if "takes the trick" in m["subject"]]
    assert [m["subject"].split("]", 1)[1].split(":")[0].strip() for m in rounds] == [
        "Round 1 of 3",
        "Round 2 of 3",
        "Round 3 of 3",
    ]
    assert "(random: none by the deadline)" in rounds[0]["body"] and "(the last card)" in rounds[2]["body"]
    final = mails(engine, PLAYERS[0])[-1]
    assert "Game over" in final["subject"] and engine.table(game).seed.hex() in final["body"]
    page = (tmp_path / "site" / "games" / str(game) / "index.html").read_text(encoding="utf-8")
    assert "High Card" in page and 'id="phase-3"' in page
    assert "Round 1 of 3:" in (tmp_path / "site" / "feed.atom").read_text(encoding="utf-8")
    assert "takes the trick, worth one point" in (tmp_path / "site" / "rules" / f"{KIND}.html").read_text(
        encoding="utf-8"
    )
    record = tmp_path / "site" / "games" / str(game) / "record.json"
    assert json.loads(record.read_text(encoding="utf-8"))["game"]["kind"] == KIND
    done = referee(installed, "verify", str(record), cwd=tmp_path)  # as a player with the package installed checks it
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("verified: 3 phases replay exactly; winner: ")
