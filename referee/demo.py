"""`referee demo`: the main job on a throwaway local mail setup, for a
newcomer's first minute.  No root, no Dovecot, no network.

An aiosmtpd SMTP server on 127.0.0.1 plays the mail system: it delivers mail
for the referee into a local Maildir (as a real mail server would), and mail
for the players to three simulated players.  Alice and Bob read each prompt
and reply by SMTP; Carol never answers, so she gets a random move at every
deadline.  The referee itself runs exactly as `referee serve` does, reading
the Maildir and sending through the SMTP server.  The game is Pure Skill, or
any other three-player kind (``--game priority``): there Alice and Bob answer
with one of the moves their prompt suggests.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import socket
import time
from datetime import timedelta
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path

import aiosmtplib
from aiosmtpd.controller import Controller

from referee.config import Config, MaildirSettings, Server
from referee.engine import Engine
from referee.runner import Runner
from referee.store import GameState, Store
from referee.timeutil import utc_now

PLAYERS = ["alice@example.org", "bob@example.org", "carol@example.org"]  # carol never answers
REFEREE = "referee@example.org"
_HAND = re.compile(r"^Your hand \(\w+\): (.+)$", re.M)
_PRIZE = re.compile(r"the prize is the (\w+) of spades")
_SHORT = {"Ace": "A", "Jack": "J", "Queen": "Q", "King": "K"}
_TURN = re.compile(r": it is your turn\.")
_EXAMPLES = re.compile(r"for example:\n\n((?:    \S.*\n)+)")


class _MailSystem:
    """The SMTP server's handler: the referee's mail into its Maildir, the
    players' mail into their folders and their in-trays."""

    def __init__(self, folder: Path, loop: asyncio.AbstractEventLoop):
        self.referee_box = folder / "referee-maildir"
        self.players_dir = folder / "players"
        self.loop = loop
        self.in_trays: dict[str, asyncio.Queue] = {p: asyncio.Queue() for p in PLAYERS}
        self.count = 0
        for sub in ("new", "cur", "tmp"):
            (self.referee_box / sub).mkdir(parents=True, exist_ok=True)

    async def handle_DATA(self, server, session, envelope) -> str:  # aiosmtpd's name
        for recipient in envelope.rcpt_tos:
            stamp = f"Received: by demo-mx (referee demo); {format_datetime(utc_now())}\r\n"
            raw = stamp.encode() + envelope.content
            if recipient.split("@")[0].split("+")[0] == REFEREE.split("@")[0]:
                self._deliver_to_referee(raw)
            elif recipient in self.in_trays:
                self._deliver_to_player(recipient, raw)
        return "250 OK"

    def _deliver_to_referee(self, raw: bytes) -> None:
        """Maildir delivery: write into tmp/, then rename into new/ (atomic)."""
        self.count += 1
        now = time.time()
        name = f"{int(now)}.M{int(now % 1 * 1e6)}P{os.getpid()}Q{self.count}.demo"
        (self.referee_box / "tmp" / name).write_bytes(raw)
        os.rename(self.referee_box / "tmp" / name, self.referee_box / "new" / name)

    def _deliver_to_player(self, player: str, raw: bytes) -> None:
        self.count += 1
        folder = self.players_dir / player
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{self.count:04d}.eml").write_bytes(raw)
        self.loop.call_soon_threadsafe(self.in_trays[player].put_nowait, raw)


def _choose(address: str, prompt, body: str, chooser: random.Random) -> str | None:
    """A simulated player's move for a prompt, or None for other mail.  In
    Pure Skill Alice bids the prize's own rank when she can and Bob at random;
    in other games each picks one of the moves the prompt suggests."""
    hand = _HAND.search(body)
    if hand is not None:
        cards = hand[1].split()
        prize = _PRIZE.search(str(prompt["Subject"]))
        rank = prize and _SHORT.get(prize[1], prize[1])
        return f"bid {rank if address == PLAYERS[0] and rank in cards else chooser.choice(cards)}"
    examples = _EXAMPLES.search(body)
    if _TURN.search(body) and examples and not str(prompt["Subject"]).startswith("Re:"):
        return chooser.choice(examples[1].split("\n")[:-1]).strip()
    return None


async def _player(address: str, mail: _MailSystem, smtp_port: int, chooser: random.Random) -> None:
    """A simulated player: answers every prompt with a move it shows."""
    while True:
        raw = await mail.in_trays[address].get()
        prompt = message_from_bytes(raw, policy=policy.default)
        body = prompt.get_content().replace("\r\n", "\n")
        move = _choose(address, prompt, body, chooser)
        if address == PLAYERS[2] or move is None:
            continue  # Carol never answers; other mail needs no answer
        reply = EmailMessage()
        reply["From"] = address
        reply["To"] = str(prompt["Reply-To"] or REFEREE)
        reply["Subject"] = f"Re: {prompt['Subject']}"
        reply["In-Reply-To"] = str(prompt["Message-ID"])
        reply["Message-ID"] = make_msgid(domain="example.org")
        reply["Date"] = format_datetime(utc_now())
        reply.set_content(f"{move}\n\n> (the prompt, quoted)\n")
        await aiosmtplib.send(reply, hostname="127.0.0.1", port=smtp_port, local_hostname="players.example.org")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def demo_config(folder: Path, deadline: timedelta, maildir: Path, port: int) -> Config:
    """The demo referee's config: every phase of any game waits ``deadline``
    (a game's own longer turn deadlines too), no reminders."""
    return Config(
        address=REFEREE,
        name="Demo Referee",
        database=folder / "games.db",
        site_dir=folder / "site",
        deadline=deadline,
        turn_deadline=deadline,
        decision_deadline=deadline,
        reminder=None,
        maildir=MaildirSettings(maildir),
        smtp=Server(host="127.0.0.1", port=port, security="none"),
    )


async def run_demo(
    folder: Path, deadline: timedelta, say=print, kind: str = "pure-skill", options: dict | None = None
) -> int:
    """Play one game of ``kind`` to its end in ``folder``; returns the game's id."""
    folder.mkdir(parents=True, exist_ok=True)
    loop = asyncio.get_running_loop()
    mail = _MailSystem(folder, loop)
    port = _free_port()
    controller = Controller(mail, hostname="127.0.0.1", port=port, server_hostname="demo-mx")
    controller.start()
    try:
        config = demo_config(folder, deadline, mail.referee_box, port)
        engine = Engine(Store(config.database), config)
        runner = Runner.from_config(config, engine)
        runner.poll_interval = 0.1
        game_id = engine.new_game(kind, PLAYERS, name="demo", options=options)
        title = engine.table(game_id).rules.title
        say(
            f"Game {game_id} of {title}: {', '.join(PLAYERS)} (carol never answers); each "
            f"phase lasts {deadline.total_seconds():g} s or until all have moved."
        )
        chooser = random.Random(7)  # the simulated players' own choices, not the game's
        players = [asyncio.ensure_future(_player(p, mail, port, chooser)) for p in PLAYERS]
        stop = asyncio.Event()
        serving = asyncio.ensure_future(runner.serve(stop))
        shown = 0
        while engine.status(game_id)["state"] == GameState.RUNNING:
            await asyncio.sleep(0.1)
            steps = engine.table(game_id).replay.steps
            for step in steps[shown:]:
                say(f"  {step.phase.label} resolved")
            shown = len(steps)
        stop.set()
        await serving
        await runner.once()  # the last pass sends the final results
        await runner.close()
        for task in players:
            task.cancel()
        (folder / "history.txt").write_text(engine.history(game_id), encoding="utf-8")
        return game_id
    finally:
        controller.stop()


def demo(folder: Path, deadline: timedelta, kind: str = "pure-skill") -> int:
    game_id = asyncio.run(run_demo(folder, deadline, kind=kind))
    print()
    print(f"The game is over. Its history:   {folder / 'history.txt'}")
    print(f"Mail the players received:       {folder / 'players'}/<address>/*.eml")
    print(f"Mail the referee received:       {folder / 'referee-maildir' / '.processed'}")
    print(f"The record (sqlite, games.db):   {folder / 'games.db'}")
    print(f"The history site:                {(folder / 'site' / 'index.html').resolve().as_uri()}")
    print(f"Look again any time with:        cd {folder} && referee status {game_id}")
    return game_id
