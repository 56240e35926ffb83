"""Files shipped beside the code: the templates, the example config, and
the games' rule texts and rulings (docs/rules, docs/games) the site publishes
and RULES mails; and the files a game from another package brings.

In a source checkout the referee's own sit at the top of the repository; a
built wheel carries them inside the package (see pyproject.toml).  A game
names its files relative to its home (``game_file``).
"""

import sys
from pathlib import Path

from referee.rules import GAMES, Game

_PACKAGE = Path(__file__).resolve().parent


def shipped(name: str) -> Path:
    """The path of a shipped file or folder, e.g. ``shipped("templates")``."""
    inside = _PACKAGE / name
    return inside if inside.exists() else _PACKAGE.parent / name


def game_file(game: Game, name: str) -> Path:
    """A file or folder a game brings (``game.rule_text``,
    ``game.rulings_page``, ``game.templates``), named relative to its home:
    the referee's shipped files for a game of its own (in ``referee.``),
    else the folder of the game's module."""
    module = type(game).__module__
    if module.startswith("referee."):
        return shipped(name)
    return Path(sys.modules[module].__file__ or ".").resolve().parent / name


def template_folders() -> list[Path]:
    """Where templates are found, after the keeper's own: the referee's,
    then each game's that brings its own (a game's folder holds
    ``mail/<kind>/`` and ``site/<kind>/``; the referee's come first, so a
    game cannot replace the shared ones)."""
    folders = [shipped("templates")]
    for game in GAMES.values():
        folder = game_file(game, game.templates)
        if folder not in folders:
            folders.append(folder)
    return folders


def rule_texts(kind: str) -> tuple[str, str]:
    """A kind's rule text and the referee's rulings on it, as shipped."""
    game = GAMES[kind]
    return (
        game_file(game, game.rule_text).read_text(encoding="utf-8"),
        game_file(game, game.rulings_page).read_text(encoding="utf-8"),
    )


def rules_page(kind: str) -> str:
    """Where the site publishes a kind's rules with its rulings, from the site's root."""
    return f"rules/{kind}.html"


def game_folder(game_id: int) -> str:
    """Where the site publishes a game (its page is the folder's index.html), from the site's root."""
    return f"games/{game_id}"


def game_record(game_id: int) -> str:
    """Where the site publishes a game's record, for `referee verify`, from the site's root."""
    return f"{game_folder(game_id)}/record.json"
