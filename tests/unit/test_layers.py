"""The referee's parts import each other one way only (docs/design.md,
"Modules"): the rules import nothing of ours; the record, the store and
``referee.tables`` nothing above them; the engine's rooms never the desk nor
the Engine that sits on them; the desk no engine module when it runs; the
site none of the engine, the desk or the mail it does not need.

Read from the source with ``ast``, so an import added inside a function or
under TYPE_CHECKING is seen too (the latter is allowed only where said)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import referee

PACKAGE = Path(referee.__file__).parent


def imports(path: Path, typing_too: bool = True) -> set[str]:
    """The modules of ours a file imports (``referee.x.y``), anywhere in it;
    without ``typing_too``, leaving out those under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    if not typing_too:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped.update(id(child) for child in ast.walk(node))
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "referee" or name.startswith("referee.")}


def files(*parts: str) -> list[Path]:
    target = PACKAGE.joinpath(*parts)
    return sorted(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]


def offending(paths: list[Path], forbidden: tuple[str, ...], typing_too: bool = True) -> dict[str, set[str]]:
    found = {}
    for path in paths:
        bad = {
            name for name in imports(path, typing_too) if any(name == f or name.startswith(f + ".") for f in forbidden)
        }
        if bad:
            found[str(path.relative_to(PACKAGE))] = bad
    return found


def test_the_rules_import_nothing_else_of_ours():
    found = {}
    for path in files("rules"):
        bad = {name for name in imports(path) if not name.startswith("referee.rules")}
        if bad:
            found[path.name] = bad
    assert found == {}


def test_the_record_store_and_tables_import_nothing_that_acts():
    below = files("record") + files("store") + files("tables") + files("standings") + files("errors")
    assert offending(below, ("referee.engine", "referee.desk", "referee.site", "referee.cli", "referee.runner")) == {}


def test_the_engines_rooms_never_call_up_to_the_desk_or_the_engine():
    rooms = [path for path in files("engine") if path.name != "__init__.py"]
    assert len(rooms) >= 5
    assert offending(rooms, ("referee.desk", "referee.site", "referee.cli", "referee.runner")) == {}
    # A room imports its siblings by their own names, never the package's
    # front door (referee.engine itself), which imports the desk.
    assert {str(p.name): "referee.engine" for p in rooms if "referee.engine" in imports(p)} == {}


def test_the_desk_sits_above_the_engine_and_imports_none_of_it_when_it_runs():
    assert offending(files("desk"), ("referee.engine",), typing_too=False) == {}
    assert offending(files("desk"), ("referee.site", "referee.cli", "referee.runner")) == {}
    assert "referee.desk" in imports(PACKAGE / "engine" / "__init__.py")


def test_the_site_reads_the_record_not_the_engine():
    assert (
        offending(files("site"), ("referee.engine", "referee.desk", "referee.mail", "referee.runner", "referee.cli"))
        == {}
    )


def test_the_engine_and_its_rooms_have_no_method_only_the_tests_call():
    """Every public method of the Engine and of its rooms is called in
    referee/ on an object named for it (``engine.tick``, ``self.engine.tick``,
    ``self.seating.join``) or by its own class (``self.join``): what only
    tests need lives in the tests' helpers (issue 31, item 7)."""
    from referee.engine import Engine
    from referee.engine.delegating import Delegating
    from referee.engine.notices import Notices
    from referee.engine.phases import Phases
    from referee.engine.post import Post
    from referee.engine.reports import Reports
    from referee.engine.seating import Seating
    from referee.engine.timers import Timers
    from referee.engine.watch import Watch

    called: dict[tuple[Path | None, str], set[str]] = {}  # (file, receiver's name) -> attributes taken of it
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute):
                receiver = node.value
                name = receiver.id if isinstance(receiver, ast.Name) else getattr(receiver, "attr", None)
                called.setdefault((path if name == "self" else None, str(name)), set()).add(node.attr)
    for room, name in (
        (Engine, "engine"),
        (Delegating, "delegating"),
        (Notices, "notices"),
        (Phases, "phases"),
        (Post, "post"),
        (Reports, "reports"),
        (Seating, "seating"),
        (Timers, "timers"),
        (Watch, "watch"),
    ):
        used = called.get((None, name), set()) | called.get((Path(inspect.getfile(room)), "self"), set())
        own = [key for key, value in vars(room).items() if callable(value) or isinstance(value, staticmethod)]
        unused = [key for key in own if not key.startswith("_") and key not in used]
        assert unused == [], f"{room.__name__}: {unused} called only from outside referee/"


def test_only_the_store_speaks_sql():
    """One store (issue 31): every read and write of games.db, and of the
    other games.db files a restore meets (a backup, the file it replaced),
    goes through referee.store, which alone turns SQLite's faults into
    StorageFault; no other module opens a database of its own."""
    speaking = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name.split(".")[0] in ("sqlite3", "sqlite_utils") for name in names):
                speaking.add(str(path.relative_to(PACKAGE)))
    assert speaking == {"store.py"}
