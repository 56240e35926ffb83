"""A local Maildir as a mail source, for referees whose own server delivers locally.

The delivery agent writes each message into ``tmp/`` and renames it into
``new/``; a mail reader may later move it to ``cur/`` with flags appended
(``<key>:2,<flags>``).  We read both ``new/`` and ``cur/`` (never ``tmp/``,
where deliveries are still being written), and file a handled message by
renaming it into the ``cur/`` of a Maildir++ sub-folder inside the Maildir
(``.processed`` or ``.quarantine``).  Reading never changes a thing; filing
is one ``os.rename`` on the same filesystem, so a crash leaves the message
either unfiled (fetched again, and caught as a duplicate by the store) or
filed, never lost.

The receipt time is the delivery time the agent wrote into the file name
(``<seconds>.<unique>.<host>``, with ``M<usec>`` in the unique part when it
has it), else the file's mtime - never the sender's ``Date``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from referee.mail.source import Received, SourceError

log = logging.getLogger("referee")

INFO_SEPARATOR = ":"  # between a message's key and its info ("2,<flags>")
SEEN = INFO_SEPARATOR + "2,S"

_SECONDS = re.compile(r"(\d+)\.([^.]*)")  # the name's start: "<seconds>.<unique>"
_MICROSECONDS = re.compile(r"M(\d{1,6})(?!\d)")  # in the unique part: "M<usec>"


def split_name(name: str) -> tuple[str, str]:
    """A Maildir file name -> (key, info part including its separator, or "")."""
    key, separator, info = name.partition(INFO_SEPARATOR)
    return key, separator + info


def delivery_time(name: str) -> datetime | None:
    """The delivery time a Maildir file name records, in UTC, or None."""
    match = _SECONDS.match(name)
    if not match:
        return None
    usec = _MICROSECONDS.search(match.group(2))
    try:
        moment = datetime.fromtimestamp(int(match.group(1)), UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.replace(microsecond=int(usec.group(1))) if usec else moment


@dataclass(frozen=True)
class _Found:
    key: str
    path: Path
    raw: bytes
    received_at: datetime


class MaildirSource:
    """Messages from a local Maildir; handled ones are filed in sub-folders."""

    def __init__(self, path: Path, processed: str = "processed", quarantine: str = "quarantine") -> None:
        for folder in (processed, quarantine):
            if not folder or folder.startswith(".") or any(c in folder for c in "/:\0"):
                raise ValueError(f"maildir folder {folder!r}: must be a plain name like 'processed'")
        self.path = Path(path)
        self.processed = processed
        self.quarantine = quarantine
        self._seen: dict[str, Path] = {}  # key -> where the last fetch found it

    # -- the Source protocol ------------------------------------------------

    async def fetch(self) -> list[Received]:
        found = await asyncio.to_thread(self._fetch)
        self._seen = {f.key: f.path for f in found}
        return [Received(ref=f.key, raw=f.raw, received_at=f.received_at) for f in found]

    async def handled(self, since: datetime | None) -> list[Received]:
        """The messages filed in the processed folder since ``since``."""
        root = self.path / ("." + self.processed)
        if not root.is_dir():
            return []
        found = await asyncio.to_thread(self._fetch, root)
        return [
            Received(ref=f.key, raw=f.raw, received_at=f.received_at)
            for f in found
            if since is None or f.received_at >= since - timedelta(days=1)
        ]

    async def done(self, messages: Sequence[Received], quarantine: bool = False) -> None:
        folder = self.quarantine if quarantine else self.processed
        for message in messages:
            await asyncio.to_thread(self._file, message.ref, folder)

    async def close(self) -> None:
        """Nothing is held open between calls."""

    # -- reading ------------------------------------------------------------

    def _fetch(self, root: Path | None = None) -> list[_Found]:
        """The messages in new/ and cur/ of the Maildir (or of ``root``, one of its folders)."""
        entries = []
        for sub in ("new", "cur"):
            directory = (root or self.path) / sub
            try:
                with os.scandir(directory) as scan:
                    entries += [entry for entry in scan if not entry.name.startswith(".")]
            except OSError as error:
                raise self._error(f"cannot read {sub}/", error) from None
        found: dict[str, _Found] = {}
        for entry in entries:
            key, _ = split_name(entry.name)
            if key in found:  # the same message in new/ and cur/ at once: read it once
                continue
            try:
                if not entry.is_file():  # a directory or a pipe: not a message
                    continue
            except OSError:
                continue
            message = self._read(Path(entry.path), key)
            if message is not None:
                found[key] = message
        return sorted(found.values(), key=lambda f: (f.received_at, f.key, f.path.name))

    def _read(self, path: Path, key: str) -> _Found | None:
        try:
            with open(path, "rb") as file:
                status = os.fstat(file.fileno())
                if not stat.S_ISREG(status.st_mode):
                    return None
                raw = file.read()
        except (FileNotFoundError, IsADirectoryError):  # filed or moved to cur/ meanwhile
            return None
        except OSError as error:
            log.warning("maildir %s: cannot read %s, left in place: %s", self.path, path, error)
            return None
        received_at = delivery_time(path.name)
        if received_at is None:
            received_at = datetime.fromtimestamp(status.st_mtime, UTC)
        return _Found(key=key, path=path, raw=raw, received_at=received_at)

    # -- filing -------------------------------------------------------------

    def _file(self, key: str, folder: str) -> None:
        source = self._locate(key)
        if source is None:  # already filed, by us or by an earlier run that crashed
            return
        target_dir = self._folder(folder) / "cur"
        name = source.name if split_name(source.name)[1] else source.name + SEEN
        target = _free_name(target_dir, name)
        try:
            os.rename(source, target)
        except FileNotFoundError as error:
            if source.exists():  # the folder went away under us
                raise self._error(f"cannot file {key} into {target_dir}", error) from None
            return  # filed meanwhile by another source on the same Maildir
        except OSError as error:
            raise self._error(f"cannot file {key} into {target_dir}", error) from None
        self._seen.pop(key, None)

    def _locate(self, key: str) -> Path | None:
        """Where the message is now: where fetch saw it, else (a reader may have
        moved it to cur/ or changed its flags) wherever its key is in new/ or cur/."""
        known = self._seen.get(key)
        if known is not None and known.exists():
            return known
        if not key or "/" in key or key.startswith("."):
            return None
        if (self.path / "new" / key).is_file():  # the usual case, without a listing
            return self.path / "new" / key
        for sub in ("cur", "new"):
            try:
                names = os.listdir(self.path / sub)
            except OSError as error:
                raise self._error(f"cannot read {sub}/", error) from None
            for name in names:
                if split_name(name)[0] == key and (self.path / sub / name).is_file():
                    return self.path / sub / name
        return None

    def _folder(self, folder: str) -> Path:
        """The Maildir++ sub-folder ``.<folder>``, created if missing."""
        root = self.path / ("." + folder)
        try:
            for sub in ("tmp", "new", "cur"):
                os.makedirs(root / sub, mode=0o700, exist_ok=True)
            marker = root / "maildirfolder"  # Maildir++: "this is a sub-folder"
            if not marker.exists():
                marker.touch()
        except OSError as error:
            raise self._error(f"cannot create folder {root.name}", error) from None
        return root

    def _error(self, what: str, error: OSError) -> SourceError:
        return SourceError(f"maildir {self.path}: {what}: {error.strerror or error}")


def _free_name(directory: Path, name: str) -> Path:
    """``directory / name``, or, if a different message already has that name
    (os.rename would silently replace it), the same name with ``-<n>`` added
    to its key."""
    target = directory / name
    key, info = split_name(name)
    n = 1
    while os.path.lexists(target):
        target = directory / f"{key}-{n}{info}"
        n += 1
    return target
