"""Helpers for the transport tests: a referee configured against the test's
MailStack (real Dovecot + aiosmtpd), driven through its CLI in-process or as a
subprocess, and players who read their prompts and reply by real mail."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

from mailstack import MailStack

from referee.cli import main
from referee.config import load
from referee.store import Store

REPO = Path(__file__).resolve().parents[2]

PROMPT = re.compile(r"^\[pure-skill-(\d+)\] Round (\d+) of 13: the prize is ")
RECEIPT = re.compile(r"^\[pure-skill-(\d+)\] Round (\d+) of 13: your bid is in$")
RESULT = re.compile(r"^\[pure-skill-(\d+)\] Round (\d+) of 13: (?!the prize is |your bid is in$)")
FINAL = re.compile(r"^\[pure-skill-(\d+)\] Game over: ")
HAND = re.compile(r"^Your hand \([a-z]+\): (.+)$", re.M)


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
        return {word: int(n) for n, word in
                (part.split()[::-1] for part in line.split(", "))}  # fmt: skip


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

    def popen(self, *args: str, **kwargs) -> subprocess.Popen:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        return subprocess.Popen(self.command(*args), cwd=self.home, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)  # fmt: skip

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


def reply(stack: MailStack, player: str, to: EmailMessage, text: str) -> bytes:
    """Answer a referee mail as a mail client does: to its Reply-To, subject
    "Re: ...", In-Reply-To and References set."""
    message_id = str(to["Message-ID"])
    return stack.send(player, str(to["Reply-To"] or to["From"]), f"Re: {subject(to)}", text,
                      headers={"In-Reply-To": message_id, "References": message_id})  # fmt: skip


def round_line(result: EmailMessage, player: str) -> str:
    """A player's line under "The bids:" of a round result."""
    for line in body(result).splitlines():
        if line.strip().startswith(player + " "):
            return line.strip()
    raise AssertionError(f"no line for {player} in\n{body(result)}")


def message_ids(stack: MailStack) -> list[str]:
    return [str(m.message["Message-ID"]) for m in stack.sent]
