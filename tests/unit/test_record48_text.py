"""record.json is written by orjson since issue 36 (site.render._record_text):
the same record as the json module wrote, read back, for every value a
record may hold, and json's own writing where orjson refuses a value (an
option a player chose beyond 64 bits), so that one game never stops the
site."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from conftest import FakeClock
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.config import Config
from referee.engine import Engine
from referee.site.render import Site, _record_text
from referee.store import GameState, Store

REFEREE = "referee@example.org"


def _as_json_wrote(record: object) -> object:
    return json.loads(json.dumps(record, sort_keys=True, ensure_ascii=False))


# What a record holds: dicts of string keys, lists, text of any characters a
# name may have (wide ones, U+2028, controls), whole numbers of any size, truth
# values, nothing, and the referee's own StrEnums.
_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
    | st.sampled_from(list(GameState)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(record=st.dictionaries(st.text(max_size=8), _values, max_size=6))
def test_record48_the_file_reads_as_the_record_json_wrote(record):
    assert json.loads(_record_text(record)) == _as_json_wrote(record)


def test_record48_keys_in_order_and_numbers_beyond_64_bits_as_json_wrote_them():
    """A key that is not a string (json wrote them in the order of the
    numbers) and a number orjson refuses: json's text, byte for byte."""
    for record in ({"b": 10**20, "a": [1, -(2**70)]}, {10: "ten", 2: "two"}):
        assert _record_text(record) == json.dumps(record, sort_keys=True, ensure_ascii=False).encode()


def test_record48_a_game_with_a_huge_option_is_on_the_site_with_the_others(tmp_path):
    """A player may ask for a Bid! game of 10**20 auctions at most (the
    option is any whole number from 1): its record, the other games' pages,
    the index and the state file are all written, forced or not."""
    clock = FakeClock(datetime(2026, 11, 21, 12, tzinfo=UTC))
    config = Config(address=REFEREE, database=tmp_path / "games.db", reminder=None, outage_gap=None)
    engine = Engine(Store(config.database), config, clock)
    huge = engine.new_game("bid", [], bots=3, options={"max_auctions": 10**20})
    other = engine.new_game("bid", [], bots=3)
    for force in (False, True):
        site = Site(engine, tmp_path / "site")
        report = site.render(force=force)
        assert report.games_rendered == 2
        record = json.loads((tmp_path / "site" / "games" / str(huge) / "record.json").read_text(encoding="utf-8"))
        assert record["game"]["options"]["max_auctions"] == 10**20
        assert (tmp_path / "site" / "games" / str(other) / "index.html").exists()
        assert (tmp_path / "site" / "index.html").exists()
        assert (tmp_path / "site" / ".render-state.json").exists()
