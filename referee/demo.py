"""`referee demo`: the main job on a throwaway local mail setup, for a
newcomer's first minute.  No root, no Dovecot, no network.

An aiosmtpd SMTP server on 127.0.0.1 plays the mail system: it delivers mail
for the referee into a local Maildir (as a real mail server would), and mail
for the players to three simulated players.  Alice and Bob read each prompt
and reply by SMTP with one of the moves it lists as theirs to make now (every
game's prompts list them in the same words, so they play every game the same
way); Carol never answers, so she gets a random move at every deadline.  The
referee itself runs exactly as `referee serve` does, reading the Maildir and
sending through the SMTP server.  The game is Pure Skill, or any other
three-player kind (``--game bid``).  At the end the demo says how many of
each player's moves came by mail, and fails if Alice or Bob had none counted.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import socket
import time
from collections import Counter
from datetime import timedelta
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path

import aiosmtplib
from aiosmtpd.controller import Controller

from referee.config import Config, MaildirSettings, Server
from referee.engine import Engine
from referee.record import MoveSource
from referee.runner import Runner, cancel_and_wait
from referee.store import GameState, Store
from referee.timeutil import utc_now

PLAYERS = ["alice@example.org", "bob@example.org", "carol@example.org"]
SILENT = PLAYERS[2]  # carol never answers
REFEREE = "referee@example.org"
# Every prompt lists the moves its reader can make now, in these words (templates/mail/_legal.txt.j2):
# the simulated players read them as a person does, the same way in every game.
_LEGAL = re.compile(r"^Moves you can make now(?: \(the first \d+\))?: (.+?)\.$", re.M | re.S)


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


def legal_moves(body: str) -> list[str]:
    """The moves a mail lists as the reader's to make now (a prompt's,
    a reminder's), as written there; none for any other mail."""
    listed = _LEGAL.search(body)
    if listed is None:
        return []
    moves = " ".join(listed[1].split())
    # (parted by semicolons where a move has commas in it: Bluff's exhibit)
    return [move.strip() for move in moves.split("; " if "; " in moves else ", ")]


async def _player(address: str, mail: _MailSystem, smtp_port: int, chooser: random.Random, sent: Counter[str]) -> None:
    """A simulated player: answers every mail that lists moves of theirs to
    make with one of them, chosen at random (``sent`` counts their replies)."""
    while True:
        raw = await mail.in_trays[address].get()
        prompt = message_from_bytes(raw, policy=policy.default)
        moves = legal_moves(prompt.get_content().replace("\r\n", "\n"))
        if address == SILENT or not moves:
            continue  # Carol never answers; other mail needs no answer
        reply = EmailMessage()
        reply["From"] = address
        reply["To"] = str(prompt["Reply-To"] or REFEREE)
        reply["Subject"] = f"Re: {prompt['Subject']}"
        reply["In-Reply-To"] = str(prompt["Message-ID"])
        reply["Message-ID"] = make_msgid(domain="example.org")
        reply["Date"] = format_datetime(utc_now())
        reply.set_content(f"{chooser.choice(moves)}\n\n> (the prompt, quoted)\n")
        await aiosmtplib.send(reply, hostname="127.0.0.1", port=smtp_port, local_hostname="players.example.org")
        sent[address] += 1


class DemoFailed(Exception):
    """A simulated player who answers had no move received and counted by mail."""


def by_mail(engine: Engine, game_id: int, sent: Counter[str]) -> list[str]:
    """What each player's mail did, one line each: how many moves they sent,
    how many the referee received and how many counted (the last in each
    phase); raises DemoFailed if a player who answers had no move counted
    by mail."""
    table = engine.table(game_id)
    seats = {seat["address"]: seat["seat"] for seat in table.seats}
    received = Counter(m["seat"] for m in engine.store.moves(game_id) if m["source"] == MoveSource.MAIL)
    counted = Counter(
        seat for moves in table.counted.values() for seat, move in moves.items() if move["source"] == MoveSource.MAIL
    )
    lines, silent_players = [], []
    for player in PLAYERS:
        seat = seats[player]
        if player == SILENT:
            lines.append(f"{player}: never answers; {counted[seat]} moves by mail")
            continue
        lines.append(f"{player}: sent {sent[player]} moves by mail, {received[seat]} received, {counted[seat]} counted")
        if counted[seat] == 0:
            silent_players.append(player)
    if silent_players:
        raise DemoFailed(f"no move by mail counted for {', '.join(silent_players)}: " + "; ".join(lines))
    return lines


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
    folder: Path,
    deadline: timedelta,
    say=print,
    kind: str = "pure-skill",
    options: dict | None = None,
    phases: int | None = None,
) -> int:
    """Play one game of ``kind`` to its end in ``folder`` (or, with
    ``phases``, until that many phases are resolved: a test's shorter
    game); returns the game's id."""
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
        sent: Counter[str] = Counter()
        players = [asyncio.ensure_future(_player(p, mail, port, chooser, sent)) for p in PLAYERS]
        stop = asyncio.Event()
        serving = asyncio.ensure_future(runner.serve(stop))
        shown = 0
        # (a referee that failed ends the loop too: awaiting it below raises its error)
        while (
            not serving.done()
            and engine.status(game_id)["state"] == GameState.RUNNING
            and (phases is None or shown < phases)
        ):
            await asyncio.sleep(0.1)
            steps = engine.table(game_id).replay.steps
            for step in steps[shown:]:
                say(f"  {step.phase.label} resolved")
            shown = len(steps)
        stop.set()
        await serving
        await runner.once()  # the last pass sends the final results
        await runner.close()
        for task in players:  # a reply being sent closes its connection first
            await cancel_and_wait(task)  # (again and again: aiosmtplib's wait_for can swallow a cancel)
        (folder / "history.txt").write_text(engine.history(game_id), encoding="utf-8")
        for line in by_mail(engine, game_id, sent):
            say(f"  {line}")
        return game_id
    finally:
        # Off the loop: stopping waits for the server's sessions, which need the loop to end.
        await loop.run_in_executor(None, controller.stop)


def demo(folder: Path, deadline: timedelta, kind: str = "pure-skill") -> int:
    """`referee demo`: the game's id; raises DemoFailed (after playing it) if
    a player who answers had no move counted by mail."""
    game_id = asyncio.run(run_demo(folder, deadline, kind=kind))
    print()
    print(f"The game is over. Its history:   {folder / 'history.txt'}")
    print(f"Mail the players received:       {folder / 'players'}/<address>/*.eml")
    print(f"Mail the referee received:       {folder / 'referee-maildir' / '.processed'}")
    print(f"The record (sqlite, games.db):   {folder / 'games.db'}")
    print(f"The history site:                {(folder / 'site' / 'index.html').resolve().as_uri()}")
    print(f"Look again any time with:        cd {folder} && referee status {game_id}")
    return game_id
