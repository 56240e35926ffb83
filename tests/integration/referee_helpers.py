"""Helpers for the transport tests: a referee configured against the test's
MailStack (real Dovecot + aiosmtpd), driven through its CLI in-process or as a
subprocess, and players who read their prompts and reply by real mail."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path
from typing import Self

from mailstack import MailStack

from referee.cli import main
from referee.config import load
from referee.engine import Engine
from referee.runner import Runner, run_lock
from referee.store import Store
from referee.timeutil import from_iso

REPO = Path(__file__).resolve().parents[2]

# Every mail to a seat has the seat's reply token in its tag: "[pure-skill-1 TOKEN]".
TOKEN = r"[a-z2-7]{16}"
PROMPT = re.compile(rf"^\[pure-skill-(\d+) {TOKEN}\] Round (\d+) of 13: the prize is ")
# The one reply to a player's mail: "Re: [pure-skill-1 TOKEN] <their subject without tags
# and Re:>", say "... Round 3 of 13: the prize is ...".  It answers each line of theirs,
# accepting a bid or refusing it: receipts() are those that accepted one.
RECEIPT = re.compile(rf"^Re: \[pure-skill-(\d+) {TOKEN}\] (.*)$")
RESULT = re.compile(rf"^\[pure-skill-(\d+) {TOKEN}\] Round (\d+) of 13: (?!the prize is )")
FINAL = re.compile(rf"^\[pure-skill-(\d+) {TOKEN}\] Game over: ")
# (without the seat's token: a reply to it must never count as the seat's)
NOTICE = re.compile(r"^(\[pure-skill-(\d+)\] )?A mail in your name was not accepted$")
MOVE_ANSWER = re.compile(r"^Your bid for Round (\d+) of 13 is in: (.+)\.$", re.MULTILINE)
HAND = re.compile(r"^Your hand \([a-z]+\): (.+)$", re.MULTILINE)


def config_text(stack: MailStack, extra: str = "", *, smtp_port: int | None = None) -> str:
    return f"""\
[referee]
address = "{stack.referee}"
database = "games.db"

[imap]
host = "127.0.0.1"
port = {stack.dovecot.imap_port}
security = "none"
username = "{stack.referee}"
password = "{stack.referee_password}"

[smtp]
host = "127.0.0.1"
port = {smtp_port or stack.smtp_port}
security = "none"
{extra}"""


@dataclass
class Result:
    status: int
    out: str
    err: str

    @property
    def counts(self) -> dict[str, int]:
        """``received 3, sent 9, deferred 0, failed 0`` -> a dict."""
        line = next(x for x in self.out.splitlines() if x.startswith("received "))
        return {word: int(n) for n, word in (part.split()[::-1] for part in line.split(", "))}


class Process:
    """A subprocess run in ``home`` whose stdout and stderr go to files in
    ``logs`` (default: ``home``)."""

    def __init__(self, argv: list[str], home: Path, name: str, logs: Path | None = None):
        self.out_path, self.err_path = (logs or home) / f"{name}.out", (logs or home) / f"{name}.err"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                argv, cwd=home, stdout=out, stderr=err, env={**os.environ, "PYTHONUNBUFFERED": "1"}
            )

    @property
    def out(self) -> str:
        return self.out_path.read_text(errors="replace")

    @property
    def err(self) -> str:
        return self.err_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float = 10) -> int:
        return self.proc.wait(timeout)

    def stop(self, timeout: float = 10) -> int:
        """SIGTERM, then wait; SIGKILL if it does not go."""
        if self.alive():
            self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise


class Referee:
    """A referee home (config + games.db in ``home``) for one MailStack."""

    def __init__(self, stack: MailStack, home: Path, extra: str = ""):
        self.stack = stack
        self.home = home
        self.cfg = home / "referee.toml"
        self.extra = extra
        self.write_config()

    @property
    def db(self) -> Path:
        return self.home / "games.db"

    def write_config(self, **kwargs) -> None:
        self.cfg.write_text(config_text(self.stack, self.extra, **kwargs))

    @property
    def config(self):
        return load(self.cfg)

    def store(self) -> Store:
        return Store(self.db)

    # -- the CLI ------------------------------------------------------------

    def cli(self, *args: str) -> Result:
        """``referee --config CFG ARGS`` in-process, with the real clock."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["--config", str(self.cfg), *args])
        return Result(status, out.getvalue(), err.getvalue())

    def run_once(self, expect: int | None = 0) -> Result:
        result = self.cli("run", "--once")
        if expect is not None:
            assert result.status == expect, (result.out, result.err)
        return result

    def new_game(self, *args: str, players: list[str] | None = None) -> int:
        players = players or self.stack.players
        argv = ["new", "pure-skill", *[x for p in players for x in ("--player", p)], *args]
        result = self.cli(*argv)
        assert result.status == 0, result.err
        return int(result.out.splitlines()[-1])

    def status(self, game_id: int) -> dict:
        result = self.cli("status", str(game_id), "--json")
        assert result.status == 0, result.err
        return json.loads(result.out)

    def command(self, *args: str) -> list[str]:
        """The argv of ``python -m referee --config CFG ARGS`` for a subprocess."""
        return [sys.executable, "-m", "referee", "--config", str(self.cfg), *args]

    def popen(self, *args: str, name: str = "referee", logs: Path | None = None) -> Process:
        """Start ``referee ARGS`` as a subprocess, its output going to files
        in ``logs`` or the home (a pipe nobody reads would block a chatty
        daemon once it fills)."""
        return Process(self.command(*args), self.home, name, logs)

    # -- what the store says ---------------------------------------------------

    def moves(self, game_id: int) -> list[dict]:
        return self.store().moves(game_id)

    def outbox(self, state: str | None = "queued") -> list[dict]:
        return self.store().outbox(state)

    def make_queue_due(self) -> None:
        """The SMTP backoff is a minute at least: pretend it has passed, by
        clearing next_try_at of every queued mail (through the Store's own
        sqlite-utils handle, as an operator could with sqlite3)."""
        store = self.store()
        with store.transaction():
            for mail in store.outbox("queued"):
                store.db["outbox"].update(mail["id"], {"next_try_at": None})


# -- players --------------------------------------------------------------------


def subject(message: EmailMessage) -> str:
    return " ".join(str(message["Subject"]).split())


def body(message: EmailMessage) -> str:
    return message.get_content().replace("\r\n", "\n")


def hand(prompt: EmailMessage) -> list[str]:
    """The cards a prompt shows as the player's hand."""
    match = HAND.search(body(prompt))
    assert match, body(prompt)
    return match[1].split()


def mails(stack: MailStack, player: str, pattern: re.Pattern, from_inbox: bool = False) -> list[EmailMessage]:
    """The player's mails whose subject matches: as their Dovecot INBOX has them
    (``from_inbox``), or as the SMTP server recorded them."""
    if from_inbox:
        found = [m.message for m in stack.messages(player)]
    else:
        found = [m.message for m in stack.sent_to(player)]
    return [m for m in found if pattern.match(subject(m))]


def receipts(stack: MailStack, player: str, from_inbox: bool = False) -> list[EmailMessage]:
    """The replies to the player that accept a bid ("Your bid for Round 3 of
    13 is in: bid 5."), not those that only refuse one."""
    return [m for m in mails(stack, player, RECEIPT, from_inbox) if MOVE_ANSWER.search(body(m))]


def reply(stack: MailStack, player: str, to: EmailMessage, text: str) -> bytes:
    """Answer a referee mail as a mail client does: to its Reply-To, subject
    "Re: ...", In-Reply-To and References set."""
    message_id = str(to["Message-ID"])
    return stack.send(
        player,
        str(to["Reply-To"] or to["From"]),
        f"Re: {subject(to)}",
        text,
        headers={"In-Reply-To": message_id, "References": message_id},
    )


def round_line(result: EmailMessage, player: str) -> str:
    """A player's line under "The bids:" of a round result."""
    for line in body(result).splitlines():
        if line.strip().startswith(player + " "):
            return line.strip()
    raise AssertionError(f"no line for {player} in\n{body(result)}")


def message_ids(stack: MailStack) -> list[str]:
    return [str(m.message["Message-ID"]) for m in stack.sent]


# -- time --------------------------------------------------------------------------


def wait_until(moment: datetime, margin: float = 0.05) -> None:
    """Sleep (really) until ``moment`` has passed."""
    left = (moment - datetime.now(UTC)).total_seconds() + margin
    if left > 0:
        time.sleep(left)


def deadline_of(referee: Referee, game_id: int) -> datetime:
    return from_iso(referee.status(game_id)["phase"]["deadline"])


# -- the daemon, in-process ----------------------------------------------------------


class Daemon:
    """``Runner.serve`` on a real Engine in a thread of its own (the store's
    sqlite connection is made there), stopped by setting its stop event."""

    def __init__(self, referee: Referee, imap_timeout: float | None = None):
        self.referee = referee
        self.imap_timeout = imap_timeout  # ImapSource's per-command timeout (default 30 s)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stop: asyncio.Event | None = None
        self.error: BaseException | None = None
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._main, daemon=True)

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # noqa: BLE001 - reported by stop()
            self.error = error
            self.ready.set()

    async def _serve(self) -> None:
        config = self.referee.config
        runner = Runner.from_config(config, Engine(Store(config.database), config))
        if self.imap_timeout is not None:
            runner.source.timeout = self.imap_timeout
        self.loop, self.stop = asyncio.get_running_loop(), asyncio.Event()
        self.ready.set()
        with run_lock(config.database):
            await runner.serve(self.stop)

    def __enter__(self) -> Self:
        self.thread.start()
        assert self.ready.wait(10), "the daemon did not start"
        return self

    def __exit__(self, *exc) -> None:
        self.finish()

    def finish(self, timeout: float = 10) -> float:
        """Stop it; returns how long that took."""
        started = time.monotonic()
        if self.loop is not None and self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the daemon did not stop"
        if self.error is not None:
            raise self.error
        return time.monotonic() - started

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()
