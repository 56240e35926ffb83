"""A process started per mail or per cron run (issue 36, items 3 and 6):
it imports only what its command needs, and reads the templates an earlier
process compiled, unless a template changed since; a cache it cannot use
never keeps a mail from being written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PLAYERS, reply
from test_cli import cfg as _cfg
from test_cli import new_game
from test_cli import run as _run

import referee
from referee import config as config_module
from referee.config import Config
from referee.engine import Engine
from referee.mail.compose import Composer
from referee.store import Store

cfg = _cfg  # the fixture
run = _run  # the fixture

ALICE = PLAYERS[0]
HEAVY = ("referee.engine", "referee.runner", "referee.site.render", "asyncio", "ssl", "sqlite_utils", "aioimaplib")


def modules_imported(cfg: Path, *argv: str, stdin: bytes = b"") -> set[str]:
    """Which of HEAVY a fresh process imported to run ``referee *argv``."""
    script = (
        "import sys\n"
        "from referee.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print('imported:', ','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    here = {**os.environ, "PYTHONPATH": str(Path(referee.__file__).parents[1])}  # this checkout's referee
    done = subprocess.run(
        [sys.executable, "-c", script, *argv], input=stdin, capture_output=True, cwd=cfg.parent, env=here, timeout=120
    )
    said = done.stderr.decode().splitlines()[-1].removeprefix("imported: ")
    return set(filter(None, said.split(",")))


def test_help_and_a_bad_command_line_import_no_engine(cfg):
    assert modules_imported(cfg, "--help") == set()
    assert modules_imported(cfg, "--config", str(cfg), "no-such-command") == set()


def test_ingest_from_stdin_imports_neither_the_mail_clients_nor_the_site_it_does_not_render(run, cfg, clock):
    new_game(run)  # (games.db made: no migration, so no sqlite-utils)
    config = config_module.load(cfg)
    raw = reply(Engine(Store(config.database), config, clock), ALICE, "bid 5", received=clock())
    assert modules_imported(cfg, "--config", str(cfg), "ingest", "-", stdin=raw) == {"referee.engine"}


# -- compiled templates kept between processes (referee.templating) ---------


def composer(tmp_path: Path, cache: Path | None) -> Composer:
    """A new process's mail templates: the keeper's own folder first."""
    return Composer(Config(database=tmp_path / "games.db", templates=tmp_path / "own", template_cache=cache))


def own_part(tmp_path: Path, text: str) -> None:
    folder = tmp_path / "own" / "mail" / "answers"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "coldstart.txt.j2").write_text(text, encoding="utf-8")


def compiles(composer: Composer) -> list[str]:
    """The templates ``composer`` compiles from now on, by name."""
    compiled: list[str] = []
    compile_source = composer.env.compile

    def counting(source, name=None, filename=None, *args, **kwargs):
        compiled.append(name)
        return compile_source(source, name, filename, *args, **kwargs)

    composer.env.compile = counting  # type: ignore[method-assign]
    return compiled


def test_a_later_process_reads_the_template_compiled_and_sees_a_changed_one(tmp_path):
    cache = tmp_path / "template-cache"
    own_part(tmp_path, "Hello {{ who }}.")
    first = composer(tmp_path, cache)
    assert first.part("coldstart", who="Alice") == "Hello Alice."
    second = composer(tmp_path, cache)
    compiled = compiles(second)
    assert second.part("coldstart", who="Bob") == "Hello Bob."
    assert compiled == []  # read as the first process compiled it
    own_part(tmp_path, "Good day {{ who }}.")  # an upgrade, or the keeper's edit
    third = composer(tmp_path, cache)
    compiled = compiles(third)
    assert third.part("coldstart", who="Carol") == "Good day Carol."
    assert compiled == ["mail/answers/coldstart.txt.j2"]


def test_mail_and_site_templates_are_kept_apart_and_by_jinjas_version(tmp_path):
    cache = tmp_path / "template-cache"
    own_part(tmp_path, "Hello.")
    composer(tmp_path, cache).part("coldstart")
    (versions,) = cache.iterdir()
    assert versions.name.startswith("jinja2-")
    assert [folder.name for folder in versions.iterdir()] == ["mail"]


@pytest.mark.parametrize("fault", ["cache is a file", "folder gone after start", "cache file damaged"])
def test_a_cache_that_cannot_be_used_leaves_the_mail_written(tmp_path, fault):
    cache = tmp_path / "template-cache"
    own_part(tmp_path, "Hello {{ who }}.")
    if fault == "cache is a file":
        cache.write_text("not a folder")
    if fault == "cache file damaged":
        composer(tmp_path, cache).part("coldstart", who="Alice")
        for kept in cache.rglob("*.cache"):
            kept.write_bytes(kept.read_bytes()[:40])
    later = composer(tmp_path, cache)
    if fault == "folder gone after start":
        for kept in sorted(cache.rglob("*"), reverse=True):
            kept.rmdir() if kept.is_dir() else kept.unlink()
    assert later.part("coldstart", who="Bob") == "Hello Bob."


def test_the_command_line_keeps_compiled_templates_beside_games_db(run, cfg):
    new_game(run)
    assert list((cfg.parent / "template-cache").rglob("*.cache"))
    assert config_module.load(cfg).template_cache is None  # only the command line's processes keep them
