"""Benchmark: how fast the referee handles mail and replays games.

Prints its figures; asserts nothing.  Run: python3 bench/engine.py [--games N]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, make_msgid
from pathlib import Path

from referee.config import Config
from referee.engine import Engine
from referee.store import Store

PLAYERS = ["alice@example.org", "bob@example.org", "carol@example.org"]


class Clock:
    def __init__(self):
        self.now = datetime(2026, 11, 21, 12, tzinfo=UTC)

    def __call__(self):
        return self.now


def mail(sender: str, token: str, game_id: int, body: str, at: datetime) -> bytes:
    """A player's reply, to their private reply address."""
    return (
        f"Received: by mx.example.org; {format_datetime(at)}\r\nFrom: {sender}\r\n"
        f"To: referee+{token}@example.org\r\nSubject: Re: [pure-skill-{game_id} {token}] Round\r\n"
        f"Message-ID: {make_msgid(domain='example.net')}\r\n\r\n{body}\r\n"
    ).encode()


def hostile() -> dict[str, bytes]:
    """Mail built to make a parser slow: what ingest must survive in bounded time."""
    head = b"From: alice@example.org\r\nSubject: x\r\nMIME-Version: 1.0\r\n"
    nested = b"".join(f'Content-Type: multipart/mixed; boundary="b{i}"\r\n\r\n--b{i}\r\n'.encode() for i in range(150))
    return {
        "150-deep multipart": head + nested + b"Content-Type: text/plain\r\n\r\nbid 5\r\n",
        "1 MB To header": head + b"To: " + b"x@example.net, " * 70000 + b"\r\n\r\nbid 5\r\n",
        "1 MB Subject": b"From: alice@example.org\r\nSubject: " + b"y " * 500000 + b"\r\n\r\nbid 5\r\n",
        "4 MB one-line body": head + b"\r\n" + b"A" * 4_000_000 + b"\r\n",
        "a 200 KB line a quote's patterns backtrack on": head + b"\r\n" + b"1<" * 100_000 + b"\r\n",
    }


def play_by_mail(engine: Engine, clock: Clock, games: int) -> int:
    """Play `games` whole games by ingesting every bid; returns messages ingested."""
    count = 0
    for _ in range(games):
        game_id = engine.new_game("pure-skill", PLAYERS)
        while engine.table(game_id).row["state"] == "running":
            table = engine.table(game_id)
            for seat in table.open_phase["movers"]:
                card = max(table.state.hands[seat])
                clock.now += timedelta(seconds=1)
                token = table.seats[seat]["token"]
                outcome = engine.ingest(mail(PLAYERS[seat], token, game_id, f"bid {card}", clock.now))
                assert outcome.code == "move", outcome  # a benchmark of refusals would flatter
                count += 1
                if engine.table(game_id).row["state"] != "running":
                    break
                table = engine.table(game_id)
                if table.open_phase["movers"] != [0, 1, 2] or seat == 2:
                    break
    return count


def play_ice_by_mail(engine: Engine, clock: Clock, games: int) -> tuple[int, float]:
    """Play `games` four-player games of Ice Ice Baby, every turn by mail.
    Each player bids the cheapest legal bid while the high bid is under three
    pyramids, else passes, and scores the first tree offered.  Returns the
    messages ingested and the slowest single ingest (late in a long game,
    where a replay is longest)."""
    count, slowest = 0, 0.0
    for _ in range(games):
        game_id = engine.new_game("ice", PLAYERS + ["dave@example.org"])
        while engine.table(game_id).row["state"] == "running":
            table = engine.table(game_id)
            seat = table.open_phase["movers"][0]
            legal = table.rules.legal_moves(table.state, seat)
            high = table.state.bids[table.state.high] if table.state.high is not None else ()
            bids = [m for m in legal if m[0] == "bid"]
            if table.state.stage == "scoring":
                move = legal[-1]  # a tree (or decline, when it is the only move)
            else:
                move = bids[0] if bids and (len(high) < 3 or ("pass",) not in legal) else ("pass",)
            move = table.rules.move_text(move)
            clock.now += timedelta(seconds=1)
            token = table.seats[seat]["token"]
            start = time.perf_counter()
            outcome = engine.ingest(mail((PLAYERS + ["dave@example.org"])[seat], token, game_id, move, clock.now))
            slowest = max(slowest, time.perf_counter() - start)
            assert outcome.code == "move", outcome
            count += 1
    return count, slowest


def send_move(engine: Engine, clock: Clock, table, address: str, seat: int, move) -> float:
    """Mail ``seat``'s move to the referee a second later; returns how long ingest took."""
    clock.now += timedelta(seconds=1)
    start = time.perf_counter()
    raw = mail(address, table.seats[seat]["token"], table.id, table.rules.move_text(move), clock.now)
    outcome = engine.ingest(raw)
    assert outcome.code == "move", outcome
    return time.perf_counter() - start


def play_priority_by_mail(engine: Engine, clock: Clock, games: int) -> tuple[int, float]:
    """Play `games` eight-player games of Auction (priority cards), every
    turn by mail: each player passes one turn in three, else makes a random
    legal play or move (so rounds run long, toward the turn limit).  Returns
    the messages ingested and the slowest single ingest."""
    chooser = random.Random(1)
    players = [f"player{n}@example.org" for n in range(8)]
    count, slowest = 0, 0.0
    for _ in range(games):
        game_id = engine.new_game("priority", players)
        while engine.table(game_id).row["state"] == "running":
            table = engine.table(game_id)
            seat = table.open_phase["movers"][0]
            legal = table.rules.legal_moves(table.state, seat)
            move = legal[-1] if chooser.random() < 1 / 3 else chooser.choice(legal)
            slowest = max(slowest, send_move(engine, clock, table, players[seat], seat, move))
            count += 1
    return count, slowest


def play_bluff_by_mail(engine: Engine, clock: Clock, games: int) -> tuple[int, float]:
    """Play `games` four-player games of Bluff Auction, every move by mail,
    each player moving as a timed-out player would (ruling F15), which bids
    low and often wins.  Returns the messages ingested and the slowest."""
    from referee.record import random_move_rng

    players = [f"player{n}@example.org" for n in range(4)]
    count, slowest = 0, 0.0
    for _ in range(games):
        game_id = engine.new_game("bluff", players)
        while engine.table(game_id).row["state"] == "running":
            table = engine.table(game_id)
            phase = table.open_phase
            for seat in [s for s in phase["movers"] if s in table.waiting_for(phase)]:
                move = table.rules.random_move(table.state, seat, random_move_rng(b"bench", phase["number"], seat))
                slowest = max(slowest, send_move(engine, clock, table, players[seat], seat, move))
                count += 1
            clock.now += timedelta(hours=2)  # past any settle time
            engine.tick()
    return count, slowest


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        config = Config(address="referee@example.org", database=Path(folder) / "games.db")
        clock = Clock()
        engine = Engine(Store(config.database), config, clock)

        start = time.perf_counter()
        for _ in range(args.games):
            engine.new_game("pure-skill", [], bots=3)
        bots = time.perf_counter() - start
        print(f"bot games played to the end: {args.games / bots:8.1f} games/s ({bots / args.games * 1000:.1f} ms each)")

        start = time.perf_counter()
        messages = play_by_mail(engine, clock, args.games)
        played = time.perf_counter() - start
        print(
            f"bids ingested (whole games by mail): {messages / played:8.1f} msg/s "
            f"({played / messages * 1000:.2f} ms each, {messages} messages)"
        )
        turn_games = max(1, args.games // 10)
        for name, play in (
            ("Ice Ice Baby turns ingested (4 players", play_ice_by_mail),
            ("Auction turns ingested (8 players", play_priority_by_mail),
            ("Bluff Auction moves ingested (4 players", play_bluff_by_mail),
        ):
            start = time.perf_counter()
            moves, slowest = play(engine, clock, turn_games)
            played = time.perf_counter() - start
            print(
                f"{name}, whole games): {moves / played:8.1f} msg/s ({played / moves * 1000:.2f} ms each, "
                f"slowest {slowest * 1000:.0f} ms, {moves / turn_games:.0f} turns a game)"
            )
        for name, raw in hostile().items():
            start = time.perf_counter()
            outcome = engine.ingest(raw)
            print(f"hostile mail, {name}: {(time.perf_counter() - start) * 1000:8.0f} ms ({outcome.code})")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        print(f"peak resident memory of this process: {peak / 1024:8.1f} MiB")

        fresh = Engine(Store(config.database), config, clock)  # nothing cached: every replay from the seed
        for kind in ("pure-skill", "ice", "priority", "bluff"):
            finished = [row["id"] for row in fresh.store.games("finished") if row["kind"] == kind]
            start = time.perf_counter()
            for game_id in finished:
                fresh.table(game_id)
            replay = time.perf_counter() - start
            print(
                f"replay of a finished {kind} game from games.db, from the seed: "
                f"{replay / len(finished) * 1000:8.2f} ms"
            )
        mails = len(engine.store.outbox())
        size = (Path(folder) / "games.db").stat().st_size
        print(
            f"outbox: {mails} mails queued; games.db {size / 2**20:.1f} MiB "
            f"for {len(fresh.store.games('finished'))} games"
        )


if __name__ == "__main__":
    sys.exit(main())
