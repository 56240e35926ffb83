"""A simulated power cut: what a process wrote but never flushed is lost.

``build()`` compiles powercut/durable.c (an LD_PRELOAD shim: after every
fsync or fdatasync of a file under a prefix, it keeps a copy of the file as
``PATH.durable``); ``environment(prefix)`` is what a process needs to run
under it; ``cut(prefix)`` is the power cut itself, once the process is dead
(SIGKILL): each file under the prefix becomes its last flushed copy, and a
file never flushed disappears, as if the disk had never held it.  The model
is the harshest a disk may be: no write reaches it before its flush.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "powercut" / "durable.c"
SUFFIX = ".durable"


class PowerCutUnavailable(RuntimeError):
    """The shim cannot be built (no C compiler)."""


def build(folder: Path) -> Path:
    """The shim, compiled into ``folder``."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise PowerCutUnavailable("no C compiler (cc) to build the power-cut shim")
    library = folder / "durable.so"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-O2", "-o", str(library), str(SOURCE), "-ldl"], check=True, capture_output=True
    )
    return library


def environment(library: Path, prefix: Path) -> dict[str, str]:
    preload = " ".join(filter(None, [str(library), os.environ.get("LD_PRELOAD")]))
    return {"LD_PRELOAD": preload, "POWERCUT_PREFIX": str(prefix)}


def files(prefix: Path) -> list[Path]:
    """The files a cut touches: those whose path starts with ``prefix``."""
    return sorted(
        p
        for p in prefix.parent.iterdir()
        if str(p).startswith(str(prefix)) and not p.name.endswith((SUFFIX, SUFFIX + "-tmp"))
    )


def cut(prefix: Path) -> dict[str, str]:
    """Put every file under ``prefix`` back to what its last flush left;
    remove those never flushed.  Returns what became of each file: "kept"
    (all of it was flushed), "reverted" or "removed".  SQLite's shared-memory
    index (-shm) is no data: it is rebuilt from the journal after a crash,
    and a stale one misleads a read-only reader, so it goes."""
    became = {}
    for path in files(prefix):
        durable = Path(str(path) + SUFFIX)
        if path.name.endswith("-shm"):
            path.unlink()
            durable.unlink(missing_ok=True)
            became[path.name] = "removed"
        elif not durable.exists():
            path.unlink()
            became[path.name] = "removed"
        elif durable.read_bytes() == path.read_bytes():
            became[path.name] = "kept"
        else:
            shutil.copyfile(durable, path)
            became[path.name] = "reverted"
    for leftover in prefix.parent.glob(prefix.name + "*" + SUFFIX + "-tmp"):
        leftover.unlink()
    return became


def flushed(prefix: Path) -> None:
    """Take the files under ``prefix`` as they are now as flushed: after a
    process that ran without the shim (an in-process command) ended with
    its own flush, and nothing else runs."""
    for path in files(prefix):
        if not path.name.endswith("-shm"):
            shutil.copyfile(path, str(path) + SUFFIX)
