"""The games the referee runs, by short name: its own and every installed
package's (``referee.rules.registry``: the entry point group
``referee.games``)."""

from referee.rules.api import Game, MoveError, OptionError, Phase, Result
from referee.rules.registry import discover
from referee.rules.rng import Rng

# (A game's module may import the names above from here: they are bound
# before discover() imports it.)
GAMES: dict[str, Game] = discover()


def get_game(kind: str) -> Game:
    """The rules of ``kind``; raises KeyError with the known kinds if unknown."""
    try:
        return GAMES[kind]
    except KeyError:
        raise KeyError(f"unknown game kind {kind!r} (known: {', '.join(sorted(GAMES))})") from None


def kind_named(text: str) -> str | None:
    """The kind a person named, by its short name or its title, in any case
    and spacing: "pure-skill", "Pure Skill", "Game of Pure Skill", "BID!"."""
    wanted = _squeezed(text)
    for kind, game in GAMES.items():
        title = _squeezed(game.title)
        if wanted and wanted in (_squeezed(kind), title, title.removeprefix("gameof"), title.removeprefix("agameof")):
            return kind
    return None


def _squeezed(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


__all__ = ["GAMES", "Game", "MoveError", "OptionError", "Phase", "Result", "Rng", "get_game", "kind_named"]
