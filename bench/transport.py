"""Benchmark: the referee against a real Dovecot (IMAP) and SMTP server on loopback.

G games of Pure Skill; every player's round-1 bid is put in the referee's
INBOX; then one pass receives them all (FETCH, ingest, resolve, MOVE to
processed) and sends what they caused (receipts, round results, prompts)
over one SMTP connection to a counting aiosmtpd server.  Prints msg/s for
each step, to set beside tests/integration/mailstack.py's raw ceilings (aioimaplib
FETCH ~4,150 msg/s; aiosmtplib send ~380-580 msg/s).  Asserts nothing.

Run from the top of the checkout (needs dovecot-imapd and dovecot-lmtpd):
    python3 bench/transport.py [--games 50]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from email.utils import make_msgid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "integration"))

from mailstack import Dovecot, MailStack  # the test suite's real servers

from referee.config import Config, Server
from referee.engine import Engine
from referee.mail.tokens import token_address
from referee.runner import Runner
from referee.store import Store


def bid(player: str, referee: str, token: str, game_id: int, card: str) -> bytes:
    """A player's reply to the referee's mail: to their seat's reply address
    (its token authenticates it), so the referee accepts it as a move."""
    return (
        f"From: {player}\r\nTo: {token_address(referee, token)}\r\n"
        f"Subject: Re: [pure-skill-{game_id} {token}] Round 1 of 13\r\n"
        f"Message-ID: {make_msgid(domain='bench.invalid')}\r\n\r\nbid {card}\r\n"
    ).encode()


def timed(label: str, count: int, seconds: float) -> None:
    print(f"{label:52} {count:6} in {seconds:6.2f} s = {count / seconds:8.1f} msg/s")


async def bench(games: int) -> None:
    dovecot = Dovecot()
    dovecot.add_user("referee@example.org", "secret", wait=False)
    dovecot.start()
    stack = MailStack(dovecot)
    stack.start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            config = Config(
                address="referee@example.org",
                database=Path(folder) / "games.db",
                imap=Server(
                    host="127.0.0.1",
                    port=dovecot.imap_port,
                    security="none",
                    username="referee@example.org",
                    password="secret",
                ),
                smtp=Server(host="127.0.0.1", port=stack.smtp_port, security="none"),
            )
            engine = Engine(Store(config.database), config)
            runner = Runner.from_config(config, engine)
            seats = {}
            for g in range(games):  # players outside Dovecot: the SMTP server only counts
                players = [f"{name}{g}@bench.invalid" for name in ("alice", "bob", "carol")]
                seats[engine.new_game("pure-skill", players)] = players

            start = time.perf_counter()
            sent = (await runner.sender.drain()).sent
            timed("send: announcements and prompts (SMTP)", sent, time.perf_counter() - start)

            start = time.perf_counter()
            for game_id, players in seats.items():
                tokens = [seat["token"] for seat in engine.table(game_id).seats]
                for card, player, token in zip(("7", "9", "K"), players, tokens, strict=True):
                    dovecot.append("referee@example.org", bid(player, config.address, token, game_id, card))
            appended = 3 * games
            timed("seed the inbox (IMAP APPEND, the test's client)", appended, time.perf_counter() - start)

            start = time.perf_counter()
            received = await runner.receive()
            took = time.perf_counter() - start
            timed("receive: FETCH, ingest, resolve, MOVE (IMAP)", received, took)
            accepted = sum(m["code"] == "move" for m in engine.store.messages())
            print(f"{'moves accepted (authenticated replies)':52} {accepted:6}")
            resolved = sum(len(engine.table(g).replay.steps) for g in seats)
            print(f"{'rounds resolved':52} {resolved:6}")

            start = time.perf_counter()
            sent = (await runner.sender.drain()).sent
            timed("send: receipts, round results, prompts (SMTP)", sent, time.perf_counter() - start)
            await runner.close()
    finally:
        stack.stop()
        dovecot.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=50)
    asyncio.run(bench(parser.parse_args().games))


if __name__ == "__main__":
    main()
