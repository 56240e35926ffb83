"""Times and durations.  Everything stored is UTC, as ISO 8601 text ending in Z."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

Clock = Callable[[], datetime]

MAX_DURATION = timedelta(days=366)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PART = re.compile(r"(\d+)\s*([smhdw])", re.I)


def utc_now() -> datetime:
    """The real clock; tests inject their own."""
    return datetime.now(timezone.utc)


def ceil_second(moment: datetime) -> datetime:
    """The moment rounded up to a whole second: stored times are whole
    seconds, and a deadline rounded down would cut a phase short."""
    whole = moment.replace(microsecond=0)
    return whole if whole == moment else whole + timedelta(seconds=1)


def iso(moment: datetime) -> str:
    """``2026-11-21T06:14:26Z``: sortable as text, the form every stored time takes."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def from_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def show(moment: datetime | str, zone: str | None = None) -> str:
    """A time as players read it: ``2026-11-24 06:14 UTC``; with a zone
    (a player's TIMEZONE), ``2026-11-24 06:14 UTC (07:14 Europe/Berlin)``."""
    if isinstance(moment, str):
        if zone is None and moment.endswith("Z"):  # stored UTC text: reshaping it is enough
            return f"{moment[:10]} {moment[11:16]} UTC"
        moment = from_iso(moment)
    utc = moment.astimezone(timezone.utc)
    text = utc.strftime("%Y-%m-%d %H:%M UTC")
    if zone:
        local = utc.astimezone(ZoneInfo(zone))
        day = "" if local.date() == utc.date() else local.strftime("%a %d %b ")
        text += f" ({day}{local:%H:%M} {zone})"
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
