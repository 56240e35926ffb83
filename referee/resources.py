"""Files shipped beside the code: the templates, the example config, and
the games' rule texts and rulings (docs/rules, docs/games) the site publishes.

In a source checkout they sit at the top of the repository; a built wheel
carries them inside the package (see pyproject.toml).
"""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def shipped(name: str) -> Path:
    """The path of a shipped file or folder, e.g. ``shipped("templates")``."""
    inside = _PACKAGE / name
    return inside if inside.exists() else _PACKAGE.parent / name
