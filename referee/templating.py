"""Compiled templates kept between processes, and the Jinja environment
the mail and the site render with (issue 36).

Jinja compiles each template to Python the first time a process uses it:
a cold ``referee ingest -`` compiled about fifteen (its receipt's and the
site's), a third of its CPU.  A process started per mail or per cron run
reads them compiled from a folder instead (``template-cache`` beside
games.db: ``Config.caching_templates``, which the command line calls).

Why it is right: Jinja's own bytecode cache keys each file on the
template's name and path, and stores the SHA-1 of the source it was
compiled from: a template changed by an upgrade or by the keeper's own
``templates`` folder does not match and is compiled again.  What the source
alone does not decide is kept apart by folder: the Jinja and Python
versions (the compiled code calls Jinja's runtime and is marshalled
Python), and the environment (mail and site templates compile with their
own settings, autoescape among them).  The cache is only ever a shortcut:
a folder that cannot be made or written, or a file that cannot be read
back, leaves the template compiled in the process as before.
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import jinja2
from jinja2.bccache import Bucket


class Environment(jinja2.Environment):
    """Jinja's environment (the mail's and the site's), reading ``a.b`` of a dict as ``a["b"]`` first.

    Jinja tries the attribute first, then the item: for a dict that is an
    AttributeError raised and caught on almost every ``a.b`` of a page (a
    tenth of a full render).  A dict has no attribute of a name that is not
    in ``dir(dict)``, so for those names the item is what Jinja would find
    anyway; ``a.items`` and the like still go Jinja's way."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        """A template's globals as a plain dict of its own, not Jinja's
        ChainMap over the environment's: every render and every include
        copies them into a new context, key by key through the ChainMap
        (4 us each, more than the rest of making a context).  Right because
        nothing changes the environment's globals once it is made (Jinja's
        documentation asks as much: "avoid modifying any globals after a
        template is loaded"), and a template's own stay its own."""
        return {**self.globals, **(d or {})}


_DICT_ATTRIBUTES = frozenset(dir(dict))


class TemplateCache(jinja2.FileSystemBytecodeCache):
    """Jinja's file cache, never a fault: a cache file that cannot be read
    or written is a template compiled in the process instead."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, EOFError, ValueError, TypeError, pickle.UnpicklingError):  # unreadable, or cut short
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:  # the folder became unwritable, or the disk is full: compiled again next time
            pass


def template_cache(folder: Path | None, environment: str) -> TemplateCache | None:
    """The cache of one environment's compiled templates (``mail``,
    ``site``) under ``folder``; None when there is none or it cannot be made."""
    if folder is None:
        return None
    versions = f"jinja2-{jinja2.__version__}-py{sys.version_info.major}.{sys.version_info.minor}"
    where = folder / versions / environment
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return TemplateCache(str(where), "%s.cache")
