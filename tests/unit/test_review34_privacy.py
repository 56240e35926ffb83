"""Review of issue 34 (privacy): what readers (a club's list, observers at
each level) are sent depends on public facts only; table talk relays none
of a quoted prompt; standings and logs name no address."""

from __future__ import annotations

import random
import re
from datetime import timedelta
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


# -- colours: Auction's secret colours change nothing a reader is sent ----------------


def test_a_reader_s_copies_do_not_depend_on_the_colours_nobody_has_seen(tmp_path):
    """Auction (priority cards): each seat's colour is its own until it
    wins an item (P2).  Every kind of copy a reader gets (the start, a
    turn's result, the TURNS round result with its preface, a daily
    digest), made from the game with two unrevealed colours swapped, is
    byte for byte the same, for the list and for an observer."""
    from dataclasses import replace as changed

    from conftest import body_of, to_deadline
    from test_ingest_priority import FOUR

    from referee.engine.post import Reader
    from referee.record import Replay

    clock = FakeClock()
    config = Config(address="referee@example.org", database=tmp_path / "games.db", outage_gap=None)
    engine = Engine(Store(config.database), config, clock)
    game = engine.new_game("priority", FOUR, turn_deadline=timedelta(hours=6))
    engine.observers.watch(game, WATCHERS[Notify.TURNS], Notify.TURNS)
    for _ in range(5):
        to_deadline(engine, clock, game)
        engine.tick()
    real = engine.table(game)
    hidden = [seat for seat in range(len(FOUR)) if seat not in real.state.revealed]
    colours = list(real.state.colours)
    colours[hidden[0]], colours[hidden[1]] = colours[hidden[1]], colours[hidden[0]]
    other = changed(real, replay=Replay(changed(real.state, colours=tuple(colours)), real.replay.steps))
    number = real.replay.steps[-1].number
    readers = [Reader(LIST, Notify.EVERY), *engine.post.readers(real)]
    for template, extra in (
        ("priority/start", {"digest": "", "notify_help": True}),
        ("priority/round", {"digest": ""}),
        ("daily", {"rounds": [], "since": real.row["created_at"], "digest": "", "digest_help": "round"}),
    ):
        for reader in readers:
            bodies = []
            for table in (real, other):
                context = {**engine.post.context(table), "round": engine.post.round_context(table, number), **extra}
                if template == "daily":
                    context["rounds"] = [engine.post.round_context(table, n) for n in range(1, number + 1)]
                engine.post.to_reader(table, reader, template, context, ["(preface)"])
                bodies.append(body_of(engine.store.outbox(None)[-1]["raw"]))
            assert bodies[0] == bodies[1], (template, reader.address)
    # (the seat's own view does change: the swap is one a reader would notice, were it shown)
    assert engine.post.context(real, hidden[0])["view"] != engine.post.context(other, hidden[0])["view"]


# -- an observer who takes a seat -------------------------------------------------------


def _one_start_each(engine: Engine, address: str) -> list[str]:
    return [
        m["subject"] for m in engine.store.outbox(None) if m["recipients"] == [address] and "begins" in m["subject"]
    ]


def test_an_observer_who_joins_the_game_gets_its_mail_once_as_a_player(engine):
    """Zoe follows an open game (WATCH), then JOINs it: from then on she is
    a player, sent each public mail once, as a player (not a second,
    reader's copy of each, at the reader's level)."""
    from conftest import join

    zoe = "zoe@example.net"
    game, _ = join(engine, "pure-skill", PLAYERS[0])
    engine.observers.watch(game, zoe, Notify.EVERY)
    join(engine, "pure-skill", zoe)
    join(engine, "pure-skill", PLAYERS[1])
    assert engine.table(game).row["state"] == "running"
    assert len(_one_start_each(engine, zoe)) == 1, _one_start_each(engine, zoe)


def test_an_observer_given_a_seat_by_the_keeper_gets_its_mail_once_as_a_player(engine, clock):
    zoe = "zoe@example.net"
    game = engine.new_game("pure-skill", PLAYERS)
    engine.observers.watch(game, zoe, Notify.EVERY)
    engine.replace(game, "2", zoe, "shell", "bob moved away")
    before = len([m for m in engine.store.outbox(None) if m["recipients"] == [zoe]])
    engine.say(game, "Welcome, zoe.", "shell")
    said = [m["subject"] for m in engine.store.outbox(None) if m["recipients"] == [zoe]][before:]
    assert len(said) == 1, said
