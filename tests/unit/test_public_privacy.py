"""Nothing hidden reaches the public site, for every kind of game.

Two engines play the same game (the same seed: one starts as a copy of the
other's database) and differ only in what the rules keep hidden: in a
sealed phase each player of the twin first sends another move and then
replaces it; in a turn the twin's mover first sends a move that is refused;
and in a Bid! auction that a pawn (or a paid reroll) cancels, the twin's
other players bid other tiles, which go back unseen (ruling B4).  After
every message and every phase both sites must be byte for byte the same
(every file, `.render-state.json` too), and a replaced move must write no
file at all.  Once a game ends its seed and every move are public, and its
record verifies."""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock, reply

from referee.config import Config
from referee.engine import Engine
from referee.record import verify
from referee.site.render import Site
from referee.store import Store

ROUND = timedelta(days=2)
SETTLE = timedelta(hours=1)
CANCELLING = ("pawn", "reroll")  # Bid!'s moves that cancel an auction (B4)


def site_files(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


_SITES: dict[str, Site] = {}


def reused_site(name: str, engine: Engine, root: Path) -> Site:
    """A Site for ``engine`` writing to ``root/name``, reusing the compiled
    templates of the previous test's (compiling them costs more than a game)."""
    site = _SITES.setdefault(name, Site(engine, root / name))
    site.records, site.folder = engine, root / name
    return site


class Twins:
    """One game played by two engines whose hidden facts differ."""

    def __init__(self, root: Path, kind: str, options: dict):
        self.clock = FakeClock()
        config = Config(
            address="referee@example.org",
            database=root / "unused.db",
            reminder=None,
            outage_gap=None,
            secret_key=b"one referee's secret key",  # the twins' seats have the same own calendars
        )
        self.engine = Engine(Store(":memory:"), config, self.clock)
        self.game = self.engine.new_game(kind, PLAYERS, deadline=ROUND, settle=SETTLE, options=options)
        self.twin = Engine(Store(":memory:"), config, self.clock)
        self.engine.store.db.conn.backup(self.twin.store.db.conn)  # the same seed, seats and tokens
        self.site = reused_site("site", self.engine, root)
        self.twin_site = reused_site("twin", self.twin, root)
        self.kind = kind

    def send(self, engine: Engine, seat: int, text: str) -> str:
        label = engine.table(self.game).open_phase["label"]
        return engine.ingest(
            reply(
                engine,
                PLAYERS[seat],
                text,
                game=self.game,
                received=self.clock(),
                subject=f"Re: [{self.kind}-{self.game}] {label}",
            )
        ).code

    def render(self) -> None:
        self.site.render()
        self.twin_site.render()

    def render_and_compare(self) -> None:
        """Both sites, rendered as they would be now, hold the same bytes."""
        self.render()
        assert site_files(self.twin_site.folder) == site_files(self.site.folder)

    def running(self) -> bool:
        return self.engine.table(self.game).row["state"] == "running"


def choose(
    rules, state, seat: int, chooser: random.Random, avoid: str | None = None, verbs: tuple[str, ...] | None = None
) -> str | None:
    """A legal move's text: a verb first, uniformly (so a pawn is played
    now and then), then a move of that verb; None if there is no other."""
    texts = [rules.move_text(move) for move in rules.legal_moves(state, seat)]
    texts = [text for text in texts if text != avoid and (verbs is None or text.split()[0] in verbs)]
    if not texts:
        return None
    verb = chooser.choice(sorted({text.split()[0] for text in texts}))
    return chooser.choice([text for text in texts if text.split()[0] == verb])


def unseen_bids(twins: Twins, planned: dict[int, str], chooser: random.Random) -> dict[int, str]:
    """What the twin's players bid: in a Bid! auction a pawn or reroll cancels,
    other tiles than the engine's players (B4: those bids go back unseen)."""
    if twins.kind != "bid" or not any(text.split()[0] in CANCELLING for text in planned.values()):
        return planned
    table = twins.engine.table(twins.game)
    return {
        seat: text
        if text.split()[0] in CANCELLING
        else choose(table.rules, table.state, seat, chooser, avoid=text, verbs=("bid",)) or text
        for seat, text in planned.items()
    }


def play_phase(twins: Twins, chooser: random.Random) -> None:
    """Every human mover of the open phase moves by mail, except one now and
    then who leaves it to the deadline; then the phase resolves."""
    table = twins.engine.table(twins.game)
    phase = table.open_phase
    movers = [seat for seat in table.waiting_for(phase) if table.human(seat)]
    planned = {seat: choose(table.rules, table.state, seat, chooser) for seat in movers if chooser.random() < 0.9}
    finals = unseen_bids(twins, planned, chooser)
    for seat, text in planned.items():
        if not phase["sealed"]:  # a turn's move is final: the twin's mover is first refused
            assert twins.send(twins.twin, seat, f"{table.rules.move_word} banana") not in ("move", "replaced")
            twins.render_and_compare()
            assert twins.send(twins.engine, seat, text) == "move"
            assert twins.send(twins.twin, seat, text) == "move"
            twins.render_and_compare()
            continue
        decoy = choose(table.rules, table.state, seat, chooser, avoid=finals[seat]) or finals[seat]
        assert twins.send(twins.engine, seat, text) == "move"
        assert twins.send(twins.twin, seat, decoy) == "move"
        twins.render_and_compare()
        if decoy != finals[seat]:
            assert twins.send(twins.twin, seat, finals[seat]) == "replaced"
            assert twins.twin_site.render().written == []  # nobody may learn of a change of mind
            twins.render_and_compare()
    still = twins.engine.table(twins.game).open_phase
    if still is not None and still["number"] == phase["number"]:  # to the settle time or the deadline
        complete = phase["sealed"] and len(planned) == len(movers)
        twins.clock.advance(seconds=(SETTLE if complete else ROUND).total_seconds())
        twins.engine.tick()
        twins.twin.tick()


def check_cancelled_bids_unseen(twins: Twins) -> int:
    """The running game's record.json names no bid of a cancelled auction,
    only the pawns and rerolls its announcement names; returns how many
    cancelled auctions it holds."""
    record = json.loads((twins.site.folder / f"games/{twins.game}/record.json").read_text())
    cancelled = 0
    for entry in record["phases"]:
        for event in (e for e in entry["events"] if e["type"] == "cancelled"):
            cancelled += 1
            shown = {str(m["seat"]): m["move"] for m in entry["moves"] if m["move"] is not None}
            assert shown == event["how"], entry
    return cancelled


@pytest.mark.parametrize(
    ("kind", "options", "seed", "phases"),
    [
        ("pure-skill", {}, 1, 13),
        ("bid", {"max_auctions": 10}, 2, 99),
        ("bid", {"reroll": "coin", "max_auctions": 6}, 3, 99),
        ("ice", {}, 4, 20),  # nothing is hidden in Ice Ice Baby but a refused move: a part of a game will do
    ],
)
def test_public_files_depend_on_public_facts_only(tmp_path, kind, options, seed, phases):
    twins = Twins(tmp_path, kind, options)
    chooser = random.Random(seed)
    twins.render_and_compare()
    cancelled = 0
    for _ in range(phases):
        play_phase(twins, chooser)
        if not twins.running():
            break
        twins.render()
        if kind == "bid":
            cancelled = check_cancelled_bids_unseen(twins)
        twins.render_and_compare()
    if kind == "bid":
        assert cancelled > 0  # the check above saw a cancelled auction
    if twins.running():
        return  # a part of a game: it has no end to check
    for site in (twins.site, twins.twin_site):
        site.render()
        record = json.loads((site.folder / f"games/{twins.game}/record.json").read_text())
        assert all(move["move"] is not None for entry in record["phases"] for move in entry["moves"])
        assert verify(record).ok, verify(record).message
