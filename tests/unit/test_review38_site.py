"""Review of the site's refresh (round 38): a started game's seats' own
calendars are named from its table, no longer from a query of their own.
The table a site keeps must then follow a seat changed by another process
(a keeper's command on games.db, say): the newcomer's calendar is written
and the old one taken down, by a site that had read the game before."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import PLAYERS
from test_keeping import pure as _pure

from referee.engine import Engine
from referee.engine.keeping import SHELL
from referee.site.render import Site
from referee.store import Store
from referee.tables import PRIVATE, own_calendar

CAROL, DAVE = PLAYERS[2], "dave@example.net"

pure = _pure  # the fixture


@pytest.fixture
def config(config, tmp_path):
    return replace(config, site_dir=tmp_path / "site", site_url="https://games.example.org")


def calendars_written(site: Site) -> set[str]:
    return {p.relative_to(site.folder).as_posix() for p in (site.folder / PRIVATE).glob("*.ics")}


def calendars_due(engine: Engine) -> set[str]:
    """The calendars of the game's seats as games.db says them now (a fresh connection)."""
    seats = Store(engine.config.database).seats(1)
    return {path for seat in seats if (path := own_calendar(engine.key, seat))}


@pytest.mark.parametrize("change", ["replace", "resign"])
def test_a_seat_changed_by_another_process_changes_the_calendars_at_the_next_refresh(pure, clock, config, change):
    site = Site(pure, config.site_dir)
    site.render()
    site.render()  # (the table read and kept)
    before = calendars_written(site)
    assert before == calendars_due(pure) and len(before) == 3
    keeper = Engine(Store(config.database), config, clock)  # another process's connection
    if change == "replace":
        keeper.replace(1, CAROL, DAVE, SHELL, "Carol moved away")
    else:
        keeper.resign(1, CAROL)
    site.render()
    after = calendars_written(site)
    assert after == calendars_due(pure) and after != before
    assert len(after) == (3 if change == "replace" else 2)
