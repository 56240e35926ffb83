"""Shared test helpers: a clock tests move by hand, a seed source they fix,
a mail builder, an engine."""

from __future__ import annotations

import email
import logging
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from email import policy
from email.utils import format_datetime, make_msgid
from pathlib import Path

import pytest

from referee.config import Config
from referee.engine import Engine
from referee.mail.tokens import token_address
from referee.store import Store
from referee.timeutil import from_iso

START = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
PLAYERS = ["alice@example.org", "bob@example.org", "carol@example.org"]


class FakeClock:
    """The engine's clock, moved by the test instead of by sleeping."""

    def __init__(self, now: datetime = START):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


class Seeds:
    """The engine's seed source (Rooms' ``seeds``), set by the test as
    FakeClock's time is: the system's (secrets.token_bytes) until ``fixed``
    is set, then every draw is that seed (its first n bytes)."""

    def __init__(self, fixed: bytes | None = None):
        self.fixed = fixed

    def __call__(self, n: int) -> bytes:
        return secrets.token_bytes(n) if self.fixed is None else self.fixed[:n]


def make_mail(
    sender: str,
    body: str,
    *,
    subject: str = "Re: [pure-skill-1] Round 1 of 13",
    received: datetime | None = None,
    to: str = "referee@example.org",
    message_id: str | None = None,
    headers: dict[str, str] | None = None,
) -> bytes:
    """A plain-text mail as the referee's server would hand it over: with a
    Received header whose date is the server's receipt time."""
    lines = []
    if received is not None:
        lines.append(f"Received: from client.example.net by mx.example.org; {format_datetime(received)}")
    lines += [
        f"From: {sender}",
        f"To: {to}",
        f"Subject: {subject}",
        f"Date: {format_datetime(received or START)}",
        f"Message-ID: {message_id or make_msgid(domain='example.net')}",
    ]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    lines += ["Content-Type: text/plain; charset=utf-8", "", body]
    return ("\r\n".join(lines) + "\r\n").encode()


def dsn(
    failed: str,
    original_id: str,
    *,
    part: str = "text/rfc822-headers",
    message_id: str | None = None,
    received: datetime = START,
) -> bytes:
    """A delivery status notification (RFC 3464) saying mail to ``failed``
    (the one with Message-ID ``original_id``) failed with 5.2.2, received
    by the referee's server at ``received``."""
    original = (
        f"From: Referee <referee@example.org>\r\nTo: {failed}\r\n"
        f"Subject: [pure-skill-1] Round 1 of 13\r\nMessage-ID: {original_id}\r\n"
    )
    if part == "message/rfc822":
        original += "Content-Type: text/plain\r\n\r\nThe prize is ...\r\n"
    lines = [
        "Received: from mx.example.org by mx.example.org; " + format_datetime(received),
        "From: Mail Delivery System <MAILER-DAEMON@mx.example.org>",
        "To: referee@example.org",
        "Subject: Undelivered Mail Returned to Sender",
        f"Date: {format_datetime(received)}",
        f"Message-ID: {message_id or make_msgid(domain='mx.example.org')}",
        "Auto-Submitted: auto-replied",
        "MIME-Version: 1.0",
        'Content-Type: multipart/report; report-type=delivery-status; boundary="BOUNDARY"',
        "",
        "--BOUNDARY",
        "Content-Type: text/plain; charset=us-ascii",
        "",
        f"I'm sorry to have to inform you that your message could not be delivered to {failed}.",
        "",
        "--BOUNDARY",
        "Content-Type: message/delivery-status",
        "",
        "Reporting-MTA: dns; mx.example.org",
        "",
        f"Final-Recipient: rfc822; {failed}",
        "Action: failed",
        "Status: 5.2.2",
        "Diagnostic-Code: smtp; 552 5.2.2 Mailbox full",
        "",
        "--BOUNDARY",
        f"Content-Type: {part}",
        "",
        original,
        "--BOUNDARY--",
        "",
    ]
    return "\r\n".join(lines).encode()


def seat_address(engine: Engine, player: str, game: int = 1) -> str:
    """The player's private reply address in a game (``referee+TOKEN@...``):
    where their mail client sends a reply to the referee's mail."""
    table = engine.table(game)
    return token_address(engine.config.address, table.seats[table.seat_of(player)]["token"])


def reply(engine: Engine, player: str, body: str, game: int = 1, **kwargs) -> bytes:
    """A player's reply about a game, as make_mail builds it, sent to their
    private reply address (so it authenticates like a real reply)."""
    return make_mail(player, body, to=seat_address(engine, player, game), **kwargs)


def send(engine: Engine, clock: FakeClock, sender: str, text: str, game: int = 1, **kwargs):
    """``sender`` replies to their mail about ``game`` (to their private reply
    address), received now unless ``received`` says when; returns the Outcome."""
    kwargs.setdefault("received", clock())
    return engine.ingest(reply(engine, sender, text, game=game, **kwargs))


def mails(engine: Engine, to: str | None = None, after: int = 0) -> list[dict]:
    """The referee's mail, queued or not (optionally only to ``to``, only rows
    with id > ``after``), each row with its decoded ``body``, the parsed
    ``message`` and its ``reply_to``."""
    found = []
    for row in engine.store.outbox(None):
        if row["id"] > after and (to is None or row["recipients"] == [to]):
            message = email.message_from_bytes(row["raw"], policy=policy.default)
            found.append({**row, "body": body_of(row["raw"]), "message": message, "reply_to": str(message["Reply-To"])})
    return found


def last_id(engine: Engine) -> int:
    """The id of the last mail the referee made (0: none yet)."""
    rows = engine.store.outbox(None)
    return rows[-1]["id"] if rows else 0


def to_deadline(engine: Engine, clock: FakeClock, game: int = 1) -> None:
    """Move the clock to the deadline of ``game``'s open phase."""
    deadline = from_iso(engine.status(game)["phase"]["deadline"])
    clock.advance(seconds=(deadline - clock()).total_seconds())


def join(engine: Engine, kind: str, address: str) -> tuple[int, bool]:
    """``address`` signs up for the open game of ``kind`` as a JOIN by mail
    does (Seating.join), in a transaction of its own, without the mail."""
    with engine.store.transaction():
        return engine.seating.join(kind, address)


_HEADER_LINE = re.compile(
    r"[!-9;-~]+:[^\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]*"
    r"|[ \t][^\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]*"
)  # a field, or its fold


def assert_clean_headers(raw: bytes) -> None:
    """A mail of ours whose header section is UTF-8 (ASCII but for an
    internationalised address) with no control or line-breaking character
    from input, so no mail reader or server splits it where a player's text
    meant it to be split, and no line longer than a server takes."""
    head, blank, _ = raw.partition(b"\r\n\r\n")
    assert blank, "no end of the header section"
    for line in head.decode("utf-8").split("\r\n"):
        assert _HEADER_LINE.fullmatch(line), f"header line {line[:80]!r}"
        assert len(line.encode()) <= 998, f"header line of {len(line.encode())} octets (RFC 5322: 998)"


def examples(body: str) -> list[str]:
    """The example moves a prompt shows (indented lines after "for example:"),
    or, in a prompt that shows none (Auction's when it lists every move), the
    moves it lists."""
    if not re.search(r"for example:", body, flags=re.I):
        return re.search(r"^Moves you can make now: (.+)\.$", body, re.M)[1].split(", ")
    part = re.split(r"for example:", body, flags=re.I)[1].split("\nDeadline:")[0]
    return re.findall(r"^    (\S.*)$", part, re.M)


def body_of(raw: bytes) -> str:
    """The decoded text of a mail the referee queued (queued as CRLF for SMTP)."""
    text = email.message_from_bytes(raw, policy=policy.default).get_content()
    return text.replace("\r\n", "\n")


@contextmanager
def info_log() -> Iterator[list[str]]:
    """The referee's log lines at INFO and above while the block runs (for
    tests that play a whole game once, outside a test's own caplog)."""
    lines: list[str] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("referee")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def config(tmp_path: Path) -> Config:
    # The core's tests run without reminders and the outage guard; their own tests turn them on.
    return Config(address="referee@example.org", database=tmp_path / "games.db", reminder=None, outage_gap=None)


@pytest.fixture
def seeds() -> Seeds:
    return Seeds()


@pytest.fixture
def engine(config: Config, clock: FakeClock, seeds: Seeds) -> Engine:
    return Engine(Store(config.database), config, clock, seeds)


class Mailbox:
    """The referee's queued mail, read once: ``new()`` gives what was queued
    since the last call (so a whole game does not parse every mail again)."""

    def __init__(self, engine: Engine):
        self.engine, self.seen, self.all = engine, 0, []

    def new(self) -> list[dict]:
        fresh = []
        for row in self.engine.store.outbox():
            if row["id"] > self.seen:
                message = email.message_from_bytes(row["raw"], policy=policy.default)
                fresh.append(
                    {
                        **row,
                        "to": row["recipients"][0],
                        "body": body_of(row["raw"]),
                        "reply_to": str(message["Reply-To"]),
                    }
                )
                self.seen = row["id"]
        self.all += fresh
        return fresh

    def to(self, address: str) -> list[dict]:
        self.new()
        return [m for m in self.all if m["to"] == address]


def answer(engine: Engine, clock: FakeClock, mail: dict, text: str):
    """Reply to a queued ``mail`` (as Mailbox reads it) as a mail client does:
    to its Reply-To, "Re:" its subject, In-Reply-To its Message-ID."""
    thread = {"In-Reply-To": mail["message_id"], "References": mail["message_id"]}
    return engine.ingest(
        make_mail(
            mail["to"], text, to=mail["reply_to"], headers=thread, subject=f"Re: {mail['subject']}", received=clock()
        )
    )
