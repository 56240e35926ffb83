"""A forced render (`referee render --force`) makes the feed entries the
feeds can show, not one for every phase of every game (issue 36, item 5):
a game's feed shows its newest ``window``, the site's the newest
_FEED_ENTRIES across games (and every game's end).  The feeds it writes are
those the renders made along the way wrote.  Played with a small window and
site feed, so a few games of a few phases fill them."""

from __future__ import annotations

import gc

import pytest
from test_longgame36_site import next_phase, resolved, start

from referee.config import Config
from referee.engine import Engine
from referee.site import render
from referee.site.render import Site
from referee.store import Store

WINDOW = 3
SITE_ENTRIES = 4


@pytest.fixture
def engine(config: Config, clock) -> Engine:
    return Engine(Store(config.database), config, clock)


def feeds(site: Site, games: list[int]) -> dict[str, bytes]:
    names = ["feed.atom", *(f"games/{game}/feed.atom" for game in games)]
    return {name: (site.folder / name).read_bytes() for name in names}


def test_a_forced_render_writes_the_feeds_the_renders_along_the_way_wrote(engine, clock, tmp_path, monkeypatch):
    monkeypatch.setattr(render, "_FEED_ENTRIES", SITE_ENTRIES)
    games = [start(engine) for _ in range(3)]  # their phases resolve at the same times: the site feed's order is kept
    along = Site(engine, tmp_path / "along", window=WINDOW)
    along.render()
    for _ in range(6):
        next_phase(engine, clock)
        along.render()
    forced = Site(engine, tmp_path / "forced", window=WINDOW)
    made: list[int] = []  # the phases each game's entries were made of
    entries = Site._entries

    def counted(self: Site, context, kind, rounds, *rest):  # type: ignore[no-untyped-def]
        made.append(len(rounds))
        return entries(self, context, kind, rounds, *rest)

    monkeypatch.setattr(Site, "_entries", counted)
    forced.render(force=True)
    assert feeds(forced, games) == feeds(along, games)
    assert [resolved(engine, game) for game in games] == [6, 6, 6]
    # the first game's rounds fill the site feed: the others make their feed's newest only
    assert made == [6, WINDOW, WINDOW]


def test_a_render_leaves_the_garbage_collectors_thresholds_as_they_were(engine, clock, tmp_path, monkeypatch):
    start(engine)
    next_phase(engine, clock)
    thresholds = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    entries = Site._entries

    def watched(self: Site, *args):  # type: ignore[no-untyped-def]
        seen.append(gc.get_threshold())
        return entries(self, *args)

    monkeypatch.setattr(Site, "_entries", watched)
    Site(engine, tmp_path / "site").render(force=True)
    assert seen and seen[0][0] > thresholds[0]  # collecting less while the pages are made
    assert gc.get_threshold() == thresholds
