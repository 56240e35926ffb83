"""A move refused as late gives its times as every other mail does (issue 35,
the smaller points): "2026-11-24 12:00 UTC", in the player's TIMEZONE as well
when they set one, to the second where a settle window is shorter than five
minutes (as the receipt gives its close), never the bare ISO form.
"""

from __future__ import annotations

import re
from datetime import timedelta

from conftest import PLAYERS, last_id
from conftest import send as play
from test_reading35_corrections import reply_body

from referee.timeutil import from_iso

BARE_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


def test_a_move_after_the_deadline_gives_both_times_in_the_players_zone(engine, clock):
    game = engine.new_game("pure-skill", PLAYERS)
    play(engine, clock, PLAYERS[0], "TIMEZONE Europe/Berlin", game=game)
    deadline = from_iso(engine.table(game).open_phase["deadline"])
    before = last_id(engine)
    play(engine, clock, PLAYERS[0], "bid 5", game=game, received=deadline + timedelta(minutes=10, seconds=7))
    body = reply_body(engine, PLAYERS[0], before)
    late, local_late = deadline + timedelta(minutes=10), deadline + timedelta(hours=1, minutes=10)
    local = deadline + timedelta(hours=1)  # Berlin in November
    assert (
        f"reached the server at {late:%Y-%m-%d %H:%M} UTC ({local_late:%H:%M} Europe/Berlin), after the deadline "
        f"of Round 1 of 13 ({deadline:%Y-%m-%d %H:%M} UTC ({local:%H:%M} Europe/Berlin))"
    ) in body, body
    assert not BARE_ISO.search(body)


def test_a_move_seconds_after_the_deadline_gives_its_arrival_to_the_second(engine, clock):
    game = engine.new_game("pure-skill", PLAYERS)
    deadline = from_iso(engine.table(game).open_phase["deadline"])
    before = last_id(engine)
    play(engine, clock, PLAYERS[0], "bid 5", game=game, received=deadline + timedelta(seconds=20))
    body = reply_body(engine, PLAYERS[0], before)
    assert f"at {deadline + timedelta(seconds=20):%Y-%m-%d %H:%M:%S} UTC, after the deadline" in body, body


def test_a_move_after_a_short_settle_window_gives_the_close_to_the_second_in_the_players_zone(engine, clock):
    engine.new_game("pure-skill", PLAYERS, settle=timedelta(seconds=20))
    play(engine, clock, PLAYERS[0], "TIMEZONE America/New_York")
    clock.advance(seconds=7)
    for player in PLAYERS:
        play(engine, clock, player, "bid 4")
    closed = clock() + timedelta(seconds=20)
    received = clock.advance(seconds=85)  # past the close, before the round is resolved
    before = last_id(engine)
    play(engine, clock, PLAYERS[0], "bid 5")
    body = reply_body(engine, PLAYERS[0], before)
    east = timedelta(hours=5)  # New York in November
    assert (
        f"at {received:%Y-%m-%d %H:%M:%S} UTC ({received - east:%H:%M:%S} America/New_York), after Round 1 of 13 "
        f"closed ({closed:%Y-%m-%d %H:%M:%S} UTC ({closed - east:%H:%M:%S} America/New_York), when its settle time"
    ) in body, body
    assert not BARE_ISO.search(body)
