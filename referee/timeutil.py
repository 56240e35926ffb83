"""Times and durations.  Everything stored is UTC, as ISO 8601 text ending in Z."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

Clock = Callable[[], datetime]

MAX_DURATION = timedelta(days=366)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PART = re.compile(r"(\d+)\s*([smhdw])", re.I)


def utc_now() -> datetime:
    """The real clock; tests inject their own."""
    return datetime.now(UTC)


class EventClock:
    """The engine's clock: the real one, except while the engine works on
    behalf of a past event, when it reads that event's time.

    Handling a message, the engine acts at the moment the server received
    it, not the moment it was read: a mail read late (a backlog after an
    outage, mail read out of order, or mail handled again after a restore)
    does what it would have done read at once, and every time the record
    keeps follows from the mail and the record, never from when the
    referee happened to run (docs/design.md, "Time").  ``real`` is the
    clock itself, for what is about now: a mail's Date, its sending.
    ``awake()`` is when the referee came to do what it does: the real time,
    except while ``replaying`` mail after a restore, when the event's own
    (the referee that did it the first time was running then)."""

    def __init__(self, real: Clock = utc_now):
        self.real = real
        self.replaying = False
        self._at: datetime | None = None

    def awake(self) -> datetime:
        return self() if self.replaying else self.real()

    def __call__(self) -> datetime:
        return self._at if self._at is not None else self.real()

    def __getattr__(self, name: str) -> Any:  # a test's clock: its advance() and the like
        return getattr(self.real, name)

    @contextmanager
    def at(self, moment: datetime) -> Iterator[None]:
        """Read ``moment`` inside the block (never a time still to come)."""
        before, self._at = self._at, min(moment, self.real())
        try:
            yield
        finally:
            self._at = before


def ceil_second(moment: datetime) -> datetime:
    """The moment rounded up to a whole second: stored times are whole
    seconds, and a deadline rounded down would cut a phase short."""
    whole = moment.replace(microsecond=0)
    return whole if whole == moment else whole + timedelta(seconds=1)


def iso(moment: datetime) -> str:
    """``2026-11-21T06:14:26Z``: sortable as text, the form every stored time takes."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def from_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def show(moment: datetime | str, zone: str | None = None, seconds: bool = False) -> str:
    """A time as players read it: ``2026-11-24 06:14 UTC``; with a zone
    (a player's TIMEZONE), ``2026-11-24 06:14 UTC (07:14 Europe/Berlin)``;
    with ``seconds``, to the second (``06:14:20``), for a moment that is
    only seconds away."""
    clock = "%H:%M:%S" if seconds else "%H:%M"
    if isinstance(moment, str):
        if zone is None and moment.endswith("Z"):  # stored UTC text: reshaping it is enough
            return f"{moment[:10]} {moment[11 : 19 if seconds else 16]} UTC"
        moment = from_iso(moment)
    utc = moment.astimezone(UTC)
    text = utc.strftime(f"%Y-%m-%d {clock} UTC")
    if zone:
        local = utc.astimezone(ZoneInfo(zone))
        day = "" if local.date() == utc.date() else local.strftime("%a %d %b ")
        text += f" ({day}{local.strftime(clock)} {zone})"
    return text


def parse_duration(text: str) -> timedelta:
    """``90s``, ``30m``, ``2h``, ``3d``, ``1w`` or a sum such as ``1d12h``."""
    cleaned = text.strip()
    if not cleaned or _PART.sub("", cleaned).strip():
        raise ValueError(f"'{text}' is not a duration (use forms like 90s, 30m, 2h, 3d, 1d12h)")
    seconds = sum(int(n) * _UNITS[u.lower()] for n, u in _PART.findall(cleaned))
    if seconds > MAX_DURATION.total_seconds():
        raise ValueError(f"'{text}' is longer than a year, the longest a deadline may be")
    return timedelta(seconds=seconds)


def show_duration(span: timedelta) -> str:
    """A duration in words, to the two largest units: ``2 days 3 hours``."""
    seconds = int(span.total_seconds())
    if seconds <= 0:
        return "0 seconds"
    parts = []
    for name, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count} {name}{'s' if count != 1 else ''}")
    return " ".join(parts[:2])
