"""A local Maildir as a mail source, for referees whose own server delivers locally.

The delivery agent writes each message into ``tmp/`` and renames it into
``new/``; a mail reader may later move it to ``cur/`` with flags appended
(``<key>:2,<flags>``).  We read both ``new/`` and ``cur/`` (never ``tmp/``,
where deliveries are still being written): first their listing and each
file's size, then the files a batch at a time, and a file over ``max_size``
only in part (its first EXCERPT bytes).  We file a handled message by
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
import heapq
import logging
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from referee.mail.source import EXCERPT, Read, Received, SourceError, Waiting

log = logging.getLogger("referee")
T = TypeVar("T")

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


class MaildirSource:
    """Messages from a local Maildir; handled ones are filed in sub-folders."""

    def __init__(
        self,
        path: Path,
        processed: str = "processed",
        quarantine: str = "quarantine",
        max_size: int | None = None,
    ) -> None:
        for folder in (processed, quarantine):
            if not folder or folder.startswith(".") or any(c in folder for c in "/:\0"):
                raise ValueError(f"maildir folder {folder!r}: must be a plain name like 'processed'")
        self.path = Path(path)
        self.name = f"maildir:{self.path}"
        self.processed = processed
        self.quarantine = quarantine
        self.max_size = max_size  # a larger message is read only in part (None: every message whole)
        # key -> where the last look at the inbox (at the processed folder) found
        # it, unless in new/ under its key alone, as most are (no memory for those)
        self._seen: dict[str, str] = {}
        self._filed: dict[str, str] = {}
        self._thread: ThreadPoolExecutor | None = None  # where the files are read and renamed

    # -- the Source protocol ------------------------------------------------

    async def waiting(self, limit: int) -> list[Waiting]:
        self._seen = {}  # (let go of the last look's first: the next may hold as many)
        found = await self._off_loop(self._scan, self.path, limit)
        self._seen = {key: path for key, path, _ in found if path}
        return [message for _, _, message in found]

    async def handled(self, since: datetime | None) -> list[Waiting]:
        """The messages filed in the processed folder since ``since``."""
        root = self.path / ("." + self.processed)
        if not root.is_dir():
            return []
        found = await self._off_loop(self._scan, root, None)
        kept = [
            (key, path, message)
            for key, path, message in found
            if since is None or message.received_at >= since - timedelta(days=1)
        ]
        self._filed = {key: path for key, path, _ in kept if path}
        return [message for _, _, message in kept]

    async def read(self, messages: Sequence[Waiting], handled: bool = False) -> Read:
        if handled:
            return await self._off_loop(self._read_all, messages, self._filed, self.path / ("." + self.processed))
        return await self._off_loop(self._read_all, messages, self._seen, self.path)

    async def fetch(self) -> list[Received]:
        """Every new message, read: the whole backlog at once, for tools and
        tests (the runner reads a batch at a time)."""
        return (await self.read(await self.waiting(sys.maxsize))).messages

    async def done(self, messages: Sequence[Waiting | Received], quarantine: bool = False) -> None:
        folder = self.quarantine if quarantine else self.processed
        for message in messages:
            await self._off_loop(self._file, message.ref, folder)

    async def close(self) -> None:
        """Nothing is held open between calls but the thread, which goes."""
        if self._thread is not None:
            self._thread.shutdown(wait=False)
            self._thread = None

    async def _off_loop(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` on the source's one thread, so the loop goes on
        meanwhile (sending, say).  One: asyncio's own pool grows to several,
        each with its stack and a malloc arena of up to 64 MB of address space."""
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="maildir")
        return await asyncio.get_running_loop().run_in_executor(self._thread, partial(function, *args))

    # -- reading ------------------------------------------------------------

    def _scan(self, root: Path, limit: int | None) -> list[tuple[str, str | None, Waiting]]:
        """The oldest ``limit`` (or all) messages in new/ and cur/ of ``root``
        (the Maildir, or one of its folders), oldest first, unread: only the
        chosen ones are held, however many the folder has."""
        entries = self._entries(root)
        chosen = heapq.nsmallest(limit, entries) if limit is not None else sorted(entries)
        found: dict[str, tuple[str, str | None, Waiting]] = {}
        for received_at, key, name, sub in chosen:
            if key in found:  # the same message in new/ and cur/ at once: read it once
                continue
            path = os.path.join(root, sub, name)  # (a str: a Path costs twice the memory, 10,000 times)
            try:
                status = os.stat(path)
            except OSError:  # filed or moved to cur/ meanwhile: the next look finds it
                continue
            if stat.S_ISREG(status.st_mode):
                where = None if sub == "new" and name == key else path
                found[key] = (key, where, Waiting(ref=key, received_at=received_at, size=status.st_size))
        return list(found.values())

    def _entries(self, root: Path) -> Iterator[tuple[datetime, str, str, str]]:
        """(receipt time, key, name, new or cur) of each file in new/ and cur/ of ``root``."""
        for sub in ("new", "cur"):
            directory = root / sub
            try:
                with os.scandir(directory) as scan:
                    for entry in scan:
                        if entry.name.startswith("."):
                            continue
                        try:
                            if not entry.is_file():  # a directory or a pipe: not a message
                                continue
                            received_at = delivery_time(entry.name)
                            if received_at is None:
                                received_at = datetime.fromtimestamp(entry.stat().st_mtime, UTC)
                        except OSError:  # gone meanwhile
                            continue
                        yield received_at, split_name(entry.name)[0], entry.name, sub
            except OSError as error:
                raise self._error(f"cannot read {sub}/", error) from None

    def _read_all(self, messages: Sequence[Waiting], where: dict[str, str], root: Path) -> Read:
        read, unreadable = [], []
        for message in messages:
            try:
                received = self._read(message, Path(where.get(message.ref) or root / "new" / message.ref))
            except OSError as error:
                log.warning("maildir %s: cannot read %s, to quarantine: %s", self.path, message.ref, error)
                unreadable.append(message)
                continue
            if received is not None:
                read.append(received)
        return Read(read, unreadable)

    def _read(self, message: Waiting, path: Path | None) -> Received | None:
        """The message, whole, or over max_size its first EXCERPT bytes; None
        if it is gone (filed meanwhile).  Raises OSError if it cannot be read."""
        for _ in range(2):  # where it was seen, else wherever a mail reader moved it since
            if path is None:
                return None
            try:
                with open(path, "rb") as file:
                    status = os.fstat(file.fileno())
                    if not stat.S_ISREG(status.st_mode):
                        return None
                    if self.max_size is not None and status.st_size > self.max_size:
                        return Received(message.ref, file.read(EXCERPT), message.received_at, size=status.st_size)
                    raw = file.read(-1 if self.max_size is None else self.max_size + 1)
            except (FileNotFoundError, IsADirectoryError):
                path = self._find(message.ref, path.parent.parent)
                continue
            if self.max_size is not None and len(raw) > self.max_size:  # it grew since: a delivery agent's bug
                return Received(message.ref, raw[:EXCERPT], message.received_at, size=len(raw))
            return Received(message.ref, raw, message.received_at)
        return None

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
        """Where the message is now: where the last look saw it, else (a reader
        may have moved it to cur/ or changed its flags) wherever its key is in
        new/ or cur/."""
        known = self._seen.get(key)
        if known is not None and os.path.exists(known):
            return Path(known)
        return self._find(key, self.path)

    def _find(self, key: str, root: Path) -> Path | None:
        """Where the message with this key is in new/ or cur/ of ``root``, if anywhere."""
        if not key or "/" in key or key.startswith("."):
            return None
        if (root / "new" / key).is_file():  # the usual case, without a listing
            return root / "new" / key
        for sub in ("cur", "new"):
            try:
                names = os.listdir(root / sub)
            except OSError as error:
                raise self._error(f"cannot read {sub}/", error) from None
            for name in names:
                if split_name(name)[0] == key and (root / sub / name).is_file():
                    return root / sub / name
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
