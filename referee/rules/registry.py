"""Which games the referee runs: the entry points of the group
``referee.games`` (docs/adding-a-game.md), the referee's own five among them.

An entry point is named for the game's kind and names its ``Game``
subclass (or an instance of it)::

    [project.entry-points."referee.games"]
    high-card = "high_card:HighCard"

The referee's own are in its pyproject.toml, so an installed referee
(``pip install -e .``, as ``.ci/run`` does, or a wheel) finds its games as
it finds any other.  A source tree that was never installed (``python -m
referee`` from a checkout, or ``PYTHONPATH``) has no entry points of the
referee's: ``BUILT_IN``, the same table as pyproject.toml's (a test holds
them equal), stands in for them, so the five games are there either way.

The referee's kinds come first, in the table's order; then every other
package's, by kind.  Another package's game that fails to load, whose
kind is the referee's or another package's already, or whose entry point's
name is not its kind, is left out with a warning on the log: the games that
load still run (a game of a kind left out cannot be read until its package
is mended).

This module reads the installed packages' metadata: the one part of
``referee.rules`` that reads anything, once, when the package is imported.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points

from referee.rules.api import Game

GROUP = "referee.games"
OWN = "referee"  # the distribution whose entry points are the built-in games

# The referee's own games, as its pyproject.toml registers them.
BUILT_IN = {
    "pure-skill": "referee.rules.pure_skill:PureSkill",
    "bid": "referee.rules.bid:Bid",
    "ice": "referee.rules.ice:IceIceBaby",
    "priority": "referee.rules.priority:PriorityAuction",
    "bluff": "referee.rules.bluff:BluffAuction",
}

log = logging.getLogger(__name__)


def discover(found: Iterable[EntryPoint] | None = None) -> dict[str, Game]:
    """Every game, by kind: the referee's own (by its entry points, else by
    ``BUILT_IN``), then those of the other packages' entry points in
    ``found`` (default: the installed packages' ``referee.games``)."""
    points = list(entry_points(group=GROUP) if found is None else found)
    own = {point.name: point.value for point in points if _distribution(point) == OWN}
    games = {kind: load(kind, value) for kind, value in {**BUILT_IN, **own}.items()}
    for point in sorted(points, key=lambda point: (point.name, _distribution(point))):
        source = _distribution(point)
        if source == OWN:
            continue
        if point.name in games:
            log.warning(
                "the game %r of %s is left out: a game of that kind is already in (%s)",
                point.name,
                source,
                type(games[point.name]).__module__,
            )
            continue
        try:
            games[point.name] = load(point.name, point.value)
        except Exception as error:  # noqa: BLE001 - one package's fault leaves the other games running
            log.warning("the game %r of %s is left out: %s", point.name, source, error)
    return games


def load(kind: str, value: str) -> Game:
    """The game an entry point's ``value`` ("module:Class") names, which
    must be a ``Game`` (a subclass, or an instance) of ``kind``."""
    named = EntryPoint(name=kind, value=value, group=GROUP).load()
    game = named() if isinstance(named, type) and issubclass(named, Game) else named
    if not isinstance(game, Game):
        raise TypeError(f"{value} is no referee.rules.api.Game")
    if game.kind != kind:
        raise ValueError(f"{value} is a game of kind {game.kind!r}, registered as {kind!r}")
    return game


def _distribution(point: EntryPoint) -> str:
    dist = getattr(point, "dist", None)
    return dist.name if dist is not None else "(no package)"
