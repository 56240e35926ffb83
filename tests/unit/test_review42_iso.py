"""timeutil.iso writes the instant it is given, whatever the zone: two
local times that differ only by ``fold`` (the hour a clock goes back) are
equal datetimes with the same hash, yet an hour apart."""

from datetime import datetime
from zoneinfo import ZoneInfo

from referee.timeutil import iso


def test_the_hour_a_clock_goes_back_is_written_as_its_own_instant_after_the_first():
    first = datetime(2026, 11, 1, 1, 30, tzinfo=ZoneInfo("America/New_York"))  # 01:30 EDT
    again = first.replace(fold=1)  # 01:30 EST, an hour later
    assert iso(first) == "2026-11-01T05:30:00Z"
    assert iso(again) == "2026-11-01T06:30:00Z"
