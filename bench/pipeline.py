"""Benchmark: the referee's whole pipeline against its own mail servers' ceiling.

One command; it starts a real Dovecot (IMAP) and an aiosmtpd SMTP sink on
loopback itself, as the integration tests do.  Each repetition measures, on
the same servers:

- the raw ceiling: a batched aioimaplib FETCH of N messages, and aiosmtplib
  sending M mails (bytes) to the sink;
- the referee: a backlog of bid mails across games of every kind (authenticated
  replies, so each is a move), handled by one ``Runner.once()``: FETCH, parse,
  authenticate, apply, resolve, file on the server, send receipts and
  announcements, write the site.

It prints moves/s, mails/s, SQL statements per message, and the ratio
raw time / referee time, where raw time = N_in / fetch rate + N_out / send
rate; the median of three repetitions, with the load average.  Asserts nothing.

Not yet measured here (issue 16, item 1): receipt latency in ``serve`` and the
idle daemon's CPU and RSS.

Run from the top of the checkout (needs dovecot-imapd and dovecot-lmtpd):
    python3 bench/pipeline.py [--games 500] [--bids 5000] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from email.utils import make_msgid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "integration"))

import aioimaplib  # noqa: E402
import aiosmtplib  # noqa: E402
from mailstack import Dovecot, MailStack  # noqa: E402 (the test suite's real servers)

from referee.config import Config, Server  # noqa: E402
from referee.engine import Engine  # noqa: E402
from referee.mail.tokens import token_address  # noqa: E402
from referee.runner import Runner  # noqa: E402
from referee.store import Store  # noqa: E402

KINDS = ("pure-skill", "bid", "ice", "priority", "bluff")
REFEREE, PASSWORD = "referee@example.org", "secret"


def reply(player: str, token: str, tag: str, text: str) -> bytes:
    """A player's reply to the referee's mail, to their seat's reply address."""
    return (f"From: {player}\r\nTo: {token_address(REFEREE, token)}\r\nSubject: Re: [{tag} {token}] Your move\r\n"
            f"Message-ID: {make_msgid(domain='bench.invalid')}\r\n\r\n{text}\r\n").encode()  # fmt: skip


async def raw_fetch(dovecot: Dovecot, user: str, password: str, count: int) -> float:
    """Messages per second of a batched FETCH of ``count`` messages (APPENDed first, untimed)."""
    mail = b"From: someone@bench.invalid\r\nSubject: raw\r\n\r\n" + b"bid 7\r\n" * 5
    for _ in range(count):
        dovecot.append(user, mail)
    client = aioimaplib.IMAP4(host="127.0.0.1", port=dovecot.imap_port, timeout=60)
    await client.wait_hello_from_server()
    await client.login(user, password)
    await client.select("INBOX")
    start = time.perf_counter()
    for first in range(1, count + 1, 200):
        await client.fetch(f"{first}:{min(first + 199, count)}", "(UID INTERNALDATE BODY.PEEK[])")
    took = time.perf_counter() - start
    await client.logout()
    return count / took


async def raw_send(port: int, count: int) -> float:
    """Mails per second that aiosmtplib sends to the sink over one connection."""
    mail = b"From: referee@example.org\r\nTo: x@bench.invalid\r\nSubject: raw\r\n\r\n" + b"a line\r\n" * 40
    client = aiosmtplib.SMTP(hostname="127.0.0.1", port=port)
    await client.connect()
    start = time.perf_counter()
    for _ in range(count):
        await client.sendmail(REFEREE, ["x@bench.invalid"], mail)
    took = time.perf_counter() - start
    await client.quit()
    return count / took


def backlog(engine: Engine, games: list[int], target: int, chooser: random.Random) -> list[bytes]:
    """Every human mover's move in every game and, in sealed phases, changes
    of mind (each counts: the last one stands) until ``target`` mails.  A
    game's changes of mind come before its last mover's bid, which completes
    the phase: they all arrive while it is open."""
    per_game: dict[int, list[tuple]] = {}
    for game_id in games:
        table = engine.table(game_id)
        phase = table.open_phase
        per_game[game_id] = [(table, seat, table.rules.legal_moves(table.state, seat)) for seat in phase["movers"]]
    count = sum(map(len, per_game.values()))
    extras: dict[int, list[tuple]] = {game_id: [] for game_id in games}
    sealed = [g for g in games if engine.table(g).open_phase["sealed"] and len(per_game[g]) > 1]
    while sealed and count < target:
        game_id = sealed[count % len(sealed)]
        extras[game_id].append(chooser.choice(per_game[game_id][:-1]))  # not the last mover
        count += 1
    mails = []
    for game_id in games:
        for table, seat, legal in sorted(extras[game_id], key=lambda e: e[1]) + per_game[game_id]:
            text = table.rules.move_text(chooser.choice(legal[:20]))
            mails.append(reply(table.label(seat), table.seats[seat]["token"], table.tag(), text))
    return mails


async def referee_run(dovecot: Dovecot, stack: MailStack, games: int, target: int, folder: Path) -> dict:
    config = Config(
        address=REFEREE, database=folder / "games.db", site_dir=folder / "site", reminder=None,
        imap=Server(host="127.0.0.1", port=dovecot.imap_port, security="none", username=REFEREE,
                    password=PASSWORD),
        smtp=Server(host="127.0.0.1", port=stack.smtp_port, security="none"),
    )  # fmt: skip
    engine = Engine(Store(config.database), config)
    runner = Runner.from_config(config, engine)
    ids = [engine.new_game(KINDS[g % len(KINDS)], [f"{p}{g}@bench.invalid" for p in ("alice", "bob", "carol")])
           for g in range(games)]  # fmt: skip
    await runner.sender.drain()  # the start mails and prompts: not part of the backlog
    runner.site.render()
    mails = backlog(engine, ids, target, random.Random(1))
    for raw in mails:
        dovecot.append(REFEREE, raw)
    before_out = len(engine.store.outbox(None))
    statements = []
    engine.store.db.conn.set_trace_callback(statements.append)
    start = time.perf_counter()
    report = await runner.once()
    took = time.perf_counter() - start
    engine.store.db.conn.set_trace_callback(None)
    await runner.close()
    moves = sum(m["outcome"].split(":")[0] in ("move", "replaced", "superseded") for m in engine.store.messages())
    return {"received": report.received, "moves": moves, "sent": report.mail.sent,
            "queued": len(engine.store.outbox(None)) - before_out, "seconds": took,
            "statements": len(statements) / max(report.received, 1)}  # fmt: skip


async def one_run(games: int, target: int, run: int) -> dict:
    dovecot = Dovecot()
    dovecot.add_user(REFEREE, PASSWORD, wait=False)
    dovecot.add_user("raw@example.org", "raw", wait=False)
    dovecot.start()
    stack = MailStack(dovecot)
    stack.start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            result = await referee_run(dovecot, stack, games, target, Path(folder))
        fetch_rate = await raw_fetch(dovecot, "raw@example.org", "raw", result["received"])
        send_rate = await raw_send(stack.smtp_port, result["sent"])
    finally:
        stack.stop()
        dovecot.close()
    raw_time = result["received"] / fetch_rate + result["sent"] / send_rate
    result.update(fetch_rate=fetch_rate, send_rate=send_rate, raw_time=raw_time, ratio=raw_time / result["seconds"])
    print(f"run {run}: {result['received']} mails in, {result['moves']} moves, {result['sent']} mails out in "
          f"{result['seconds']:.1f} s; raw FETCH {fetch_rate:.0f} msg/s, SMTP {send_rate:.0f} msg/s; "
          f"ratio {result['ratio']:.2f}", flush=True)  # fmt: skip
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=500)
    parser.add_argument("--bids", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    results = [asyncio.run(one_run(args.games, args.bids, run + 1)) for run in range(args.runs)]

    def median(key: str) -> float:
        return statistics.median(r[key] for r in results)

    print(f"median of {args.runs} ({args.games} games of {', '.join(KINDS)}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}):")
    print(f"  moves/s {median('moves') / median('seconds'):8.1f}   mails out/s {median('sent') / median('seconds'):8.1f}")
    print(f"  SQL statements per message {median('statements'):8.1f}")
    print(f"  raw ceiling: FETCH {median('fetch_rate'):.0f} msg/s, SMTP send {median('send_rate'):.0f} msg/s")
    print(f"  ratio raw time / referee time {median('ratio'):8.2f}  (target 0.70)")


if __name__ == "__main__":
    main()
