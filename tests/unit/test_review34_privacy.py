"""Review of issue 34 (privacy): what readers (a club's list, observers at
each level) are sent depends on public facts only; table talk relays none
of a quoted prompt; standings and logs name no address."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock
from test_club_list_privacy import ROUND, SETTLE, Twins, play_phase

from referee.config import Config
from referee.engine import Engine
from referee.store import Notify, Store

LIST = "club@lists.example.org"
WATCHERS = {level: f"watch-{level.value}@example.net" for level in Notify}
_DIGEST = re.compile(rb"(Record digest [^:\n]*(?::[^:\n]*)*: )[0-9a-f-]{19}")


def readers_mail(engine: Engine) -> dict[str, list[bytes]]:
    found: dict[str, list[bytes]] = {}
    for m in engine.store.outbox(None):
        (to,) = m["recipients"]
        if to == LIST or to in WATCHERS.values():
            found.setdefault(to, []).append(_DIGEST.sub(rb"\1<digest>", m["raw"]))
    return found


class ReaderTwins(Twins):
    """Twins whose game has a list at ``level`` and an observer at each level."""

    def __init__(self, root: Path, kind: str, options: dict, level: Notify):
        self.clock = FakeClock()
        config = Config(
            address="referee@example.org",
            database=root / "unused.db",
            reminder=None,
            outage_gap=None,
            secret_key=b"one referee's secret key",
            announce_to=(LIST,),
            announce_notify=level,
        )
        self.engine = Engine(Store(":memory:"), config, self.clock)
        self.game = self.engine.new_game(kind, PLAYERS, deadline=ROUND, settle=SETTLE, options=options)
        for watching, address in WATCHERS.items():
            self.engine.observers.watch(self.game, address, watching)
        self.twin = Engine(Store(":memory:"), config, self.clock)
        self.engine.store.db.conn.backup(self.twin.store.db.conn)
        self.kind, self.players = kind, PLAYERS

    def compare(self) -> None:
        assert readers_mail(self.twin) == readers_mail(self.engine)


@pytest.mark.parametrize("level", [Notify.TURNS, Notify.DIGEST])
@pytest.mark.parametrize(
    ("kind", "options", "seed", "phases"),
    [
        ("pure-skill", {}, 1, 13),
        ("bid", {"max_auctions": 10}, 2, 99),
        ("bluff", {}, 5, 40),
        ("priority", {}, 6, 40),
    ],
)
def test_readers_at_every_level_get_mail_of_public_facts_only(tmp_path, kind, options, seed, phases, level):
    twins = ReaderTwins(tmp_path, kind, options, level)
    chooser = random.Random(seed)
    twins.compare()
    for _ in range(phases):
        play_phase(twins, chooser)
        twins.clock.advance(hours=13)
        twins.engine.tick()
        twins.twin.tick()
        twins.compare()
        if not twins.running():
            break
    got = readers_mail(twins.engine)
    assert set(got) == {LIST, *WATCHERS.values()}, {k: len(v) for k, v in got.items()}


# -- standings -----------------------------------------------------------------------


def test_standings_name_a_player_who_moved_address_as_their_game_did_never_by_the_new_address(tmp_path):
    """Bob moves mid-game to an address of another local part (and another
    player there shares it): the game's page and every public copy still
    call him "bob"; the standings must too, never "robert.smith" nor
    "robert.smith (hidden.example)", which only his new, private address
    gives away."""
    from test_club_standings import ALICE, BOB, CAROL, STRANGER, Club, page_tables

    club = Club(tmp_path)
    moved, namesake = "robert.smith@hidden.example", "robert.smith@example.org"
    club.play("pure-skill", [ALICE, BOB, CAROL], then={2: lambda game: club.engine.address(game, BOB, moved, "shell")})
    club.play("pure-skill", [ALICE, CAROL, namesake])
    assert club.engine.table(1).names[1] == "bob"
    tables = page_tables(club.site(tmp_path / "site"))
    names = list(tables["All games"])
    assert "bob" in names and not [name for name in names if "hidden" in name], names
    text = club.ask(STRANGER, "STANDINGS")
    assert "hidden" not in text and "bob" in text
