"""Files shipped beside the code: the templates, the example config, and
the games' rule texts and rulings (docs/rules, docs/games) the site publishes
and RULES mails.

In a source checkout they sit at the top of the repository; a built wheel
carries them inside the package (see pyproject.toml).
"""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent

# Each kind's rule text (docs/rules, as its authors wrote it) and rulings (docs/games).
RULES = {"pure-skill": ("pure-skill.txt", "pure-skill.md"), "bid": ("bid-piecepack.txt", "bid.md"),
         "ice": ("ice-ice-baby.txt", "ice-ice-baby.md"),
         "priority": ("priority-auction.txt", "priority-auction.md"),
         "bluff": ("bluff-auction.txt", "bluff-auction.md")}  # fmt: skip


def shipped(name: str) -> Path:
    """The path of a shipped file or folder, e.g. ``shipped("templates")``."""
    inside = _PACKAGE / name
    return inside if inside.exists() else _PACKAGE.parent / name


def rule_texts(kind: str) -> tuple[str, str]:
    """A kind's rule text and the referee's rulings on it, as shipped."""
    rules, rulings = RULES[kind]
    return (shipped(f"docs/rules/{rules}").read_text(encoding="utf-8"),
            shipped(f"docs/games/{rulings}").read_text(encoding="utf-8"))  # fmt: skip


def rules_page(kind: str) -> str:
    """Where the site publishes a kind's rules with its rulings, from the site's root."""
    return f"rules/{kind}.html"
