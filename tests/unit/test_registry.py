"""Which games the referee runs (referee/rules/registry.py): the entry
points of the group ``referee.games``, the referee's own among them, with
``BUILT_IN`` standing in for the referee's own in a source tree that was
never installed; and `referee kinds`, which lists them."""

from __future__ import annotations

import logging
import tomllib
from pathlib import Path

import pytest

from referee.cli import main
from referee.resources import game_file
from referee.rules import GAMES
from referee.rules.bid import Bid
from referee.rules.registry import BUILT_IN, GROUP, discover

ROOT = Path(__file__).resolve().parents[2]


def dist_info(root: Path, name: str, entries: dict[str, str]) -> Path:
    """An installed distribution's metadata, as pip writes it: ``name``'s
    dist-info in ``root``, with these entry points in ``referee.games``."""
    folder = root / f"{name.replace('-', '_')}-0.1.dist-info"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    lines = "".join(f"{kind} = {value}\n" for kind, value in entries.items())
    (folder / "entry_points.txt").write_text(f"[{GROUP}]\n{lines}", encoding="utf-8")
    return folder


def test_pyproject_registers_the_built_in_games_as_the_table_says():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["entry-points"][GROUP] == BUILT_IN
    assert list(GAMES)[: len(BUILT_IN)] == list(BUILT_IN)


def test_a_source_tree_never_installed_has_the_built_in_games_from_the_table():
    games = discover(found=[])
    assert list(games) == list(BUILT_IN)
    assert [type(game) for game in games.values()] == [type(GAMES[kind]) for kind in BUILT_IN]


def test_an_installed_referees_own_entry_points_name_its_games(tmp_path, monkeypatch):
    """Installed, the referee's games are what its entry points name (here
    its Bid! is another class, to tell the entry point from the table)."""
    (tmp_path / "other_bid.py").write_text("from referee.rules.bid import Bid\n\n\nclass OtherBid(Bid):\n    pass\n")
    dist_info(tmp_path, "referee", {**BUILT_IN, "bid": "other_bid:OtherBid"})
    monkeypatch.syspath_prepend(str(tmp_path))
    games = discover()
    assert list(games)[: len(BUILT_IN)] == list(BUILT_IN)
    assert type(games["bid"]).__name__ == "OtherBid" and isinstance(games["bid"], Bid)
    assert type(games["ice"]) is type(GAMES["ice"])


def test_another_packages_game_that_cannot_be_its_kind_is_left_out_with_a_warning(tmp_path, monkeypatch, caplog):
    (tmp_path / "broken_game.py").write_text("raise ImportError('no such thing')\n")
    (tmp_path / "not_a_game.py").write_text("class Thing:\n    kind = 'thing'\n")
    (tmp_path / "misnamed.py").write_text("from referee.rules.bid import Bid\n\n\nclass Misnamed(Bid):\n    pass\n")
    dist_info(
        tmp_path,
        "referee-extras",
        {
            "broken": "broken_game:Game",
            "thing": "not_a_game:Thing",
            "misnamed": "misnamed:Misnamed",
            "bid": "misnamed:Misnamed",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="referee.rules.registry"):
        games = discover()
    assert list(games) == list(BUILT_IN) and type(games["bid"]) is Bid
    said = "\n".join(caplog.messages)
    for kind, why in (
        ("broken", "no such thing"),
        ("thing", "no referee.rules.api.Game"),
        ("misnamed", "of kind 'bid', registered as 'misnamed'"),
        ("bid", "already in"),
    ):
        assert f"the game {kind!r} of referee-extras is left out" in said and why in said


def test_kinds_lists_each_games_seats_options_with_defaults_and_lines_and_its_rulings(capsys):
    assert main(["kinds"]) == 0
    out = capsys.readouterr().out
    blocks = {block.split()[0]: block for block in out.replace("\n    ", "\t").splitlines()}
    assert list(blocks) == list(GAMES)
    for kind, game in GAMES.items():
        lines = blocks[kind].split("\t")
        assert lines[0].split(None, 1) == [kind, f"{game.title} ({game.seat_range} seats)"]
        options = [line for line in lines if line.startswith("--option ")]
        assert [line.split()[1].split("=")[0] for line in options] == list(game.options)
        for line, (name, help_line) in zip(options, game.option_help.items(), strict=True):
            assert line.split(None, 2)[2] == help_line, name
        assert f"rulings: {game_file(game, game.rulings_page)}" in lines
        assert f"rules:   {game_file(game, game.rule_text)}" in lines
    assert "--option short=false " in blocks["ice"] and "--option max_auctions=300 " in blocks["bid"]


@pytest.mark.parametrize("kind", sorted(GAMES))
def test_every_option_has_its_line_and_every_game_its_files(kind):
    game = GAMES[kind]
    assert set(game.option_help) == set(game.options)
    assert all(line and "\n" not in line for line in game.option_help.values())
    assert game_file(game, game.rule_text).is_file() and game_file(game, game.rulings_page).is_file()
    assert (game_file(game, game.templates) / "mail" / kind).is_dir()
    assert (game_file(game, game.templates) / "site" / kind).is_dir()
