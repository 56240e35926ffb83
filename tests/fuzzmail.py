"""A seeded mail fuzzer: the fuzz test's (tests/unit/test_fuzz.py) and the
long run's (bench/fuzz.py).

``Fuzzer(engine, seed)`` makes mail for an engine with running games: a
well-formed seed, bent by a few mutations.  Seeds are real clients' replies
(tests/fixtures/mail, whose reply tokens are game 1's under FIXTURE_KEY),
the regression fixtures (tests/fixtures/fuzz: mail that once broke the
referee), and a legal move or a command from a seat of any running game,
sent to its reply address.  Mutations are byte-level (flip, insert, delete,
truncate) and structural: a header field repeated, or taken from another
mail, or thousands more; a snippet that broke a mail parser somewhere; an
odd charset; another seat's token or From.  The same seed makes the same mail.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from unittest.mock import patch
from datetime import datetime, timezone
from email import message_from_bytes
from email.header import decode_header, make_header
from email.utils import format_datetime
from pathlib import Path

from referee.engine import Engine
from referee.mail.parse import parse
from referee.mail.tokens import tokens_named

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FIXTURE_KEY = b"fixture-secret"  # the key the corpus's reply tokens are computed with
STRANGER = "mallory@evil.example"
BASE32 = "abcdefghijklmnopqrstuvwxyz234567"

# What broke a mail parser or composer once, here or elsewhere.
SNIPPETS = [
    b"\x00", b"\x0b", b"\x0c", b"\x1b", b"\x1c", b"\x1e", b"\x7f", b"\xc2\x85", b"\xe2\x80\xa8",
    b"\xff\xfe", b"\xed\xa0\x80", b"\r", b"\n", b"\r\n ", b"\r\n\r\n", b"\t",
    b"=?utf-8?q?=0B=00=1C?=", b"=?utf-8?q?=0BName:?=", b"=?utf-7?q?+2AA-?=",
    b"=?unicode_escape?q?=5Cud800?=", b"=?utf-8?b?", b"?=", b"=?", b"=?x?q?",
    b"charset=idna", b"charset=undefined", b'charset="ut\x00f-8"', b"charset=punycode",
    b"charset=utf-7", b"charset=unicode_escape", b"charset=utf-32", b"charset=\xff",
    b"<![CDA[", b"<!--", b"<script>", b"&#0;", b"&#x110000;", b"<br", b"<p>",
    b"boundary=b", b"\r\n--b\r\n", b"\r\n--b--\r\n", b"multipart/mixed; boundary=",
    b"Content-Type: message/rfc822\r\n", b"Content-Transfer-Encoding: base64\r\n",
    b"<x@", b"<>", b'"', b"\\", b"(", b")", b"<", b">", b"@", b",", b";", b":",
    b"Fri, 31 Dec 9999 23:59:59 -1200", b"Mon, 1 Jan 0001 00:00:00 +9999",
    b"\r\nFrom: eve@evil.example", b"\r\nAuto-Submitted: (c) auto-replied",
    b"\r\nReferences: <a@b>\x01<c@d>", b"\r\nIn-Reply-To: <x@", b"\r\nTo: referee+@example.org",
    b"bid 7", b"bid 0", b"bid 99999999999999999999", b"pass", b"pawn", b"HAND", b"RESIGN",
    "J\u00fcrgen \U0001f600 \u202e".encode(),
]  # fmt: skip

# From fields: whoever they name, and the forms a mail provider would not accept.
FROMS = [
    "{a}", "Somebody <{a}>", '"{a}" <{a}>', "{a} (comment)", "=?utf-8?q?J=C3=BCrgen?= <{a}>",
    "J\u00fcrgen <{a}>", "{a} <{s}>", "<{a}> {s}", "=?utf-8?q?{a}?=", "{a}, {s}",
    "group: {a};", "<>", "", "{s}", "MAILER-DAEMON@example.org", "referee@example.org",
    "j\u00f6rg@b\u00fccher.example", "{a}\x0b", "a\u2028b@example.org",
]  # fmt: skip

COMMANDS = ["help", "hand", "status", "list", "join bid", "join ice", "leave bid",
            "timezone Europe/Berlin", "resign", "HELP\nbid 7\nbid 8", ""]  # fmt: skip


class Fuzzer:
    def __init__(self, engine: Engine, seed: int):
        self.engine = engine
        self.rng = random.Random(seed)
        self.corpus = [p.read_bytes() for p in sorted((FIXTURES / "mail").glob("*.eml"))]
        self.regressions = [p.read_bytes() for p in sorted((FIXTURES / "fuzz").glob("*.eml"))]
        self.serial = 0

    def tokens(self) -> set[str]:
        """Every seat's reply token, of every game."""
        rows = self.engine.store.db.query("select token from seats where token is not null")
        return {row["token"] for row in rows}

    def message(self) -> bytes:
        """A new mutated mail."""
        raw = self._with_new_id(self._seed())
        for _ in range(self.rng.choice((0, 1, 1, 2, 2, 3, 4, 6))):
            mutation = self.rng.choices(_MUTATIONS, weights=_WEIGHTS)[0]
            raw = mutation(self, raw)
        return raw

    # -- seeds -------------------------------------------------------------------------

    def _seed(self) -> bytes:
        pick = self.rng.random()
        if pick < 0.35:
            return self.rng.choice(self.corpus)
        if pick < 0.45:
            return self.rng.choice(self.regressions)
        return self._seat_mail()

    def _seat_mail(self) -> bytes:
        """A seat of a running game sends a legal move (or a command) from its
        own address to its reply address, as its mail client would."""
        running = [self.engine.table(g["id"]) for g in self.engine.store.games() if g["state"] == "running"]
        seats = [(table, s["seat"]) for table in running for s in table.seats
                 if s["address"] and table.human(s["seat"])]  # fmt: skip
        if not seats:  # every player resigned
            return self.rng.choice(self.corpus)
        table, seat = self.rng.choice(seats)
        text = self.rng.choice(COMMANDS)
        phase = table.open_phase
        if phase is not None and seat in phase["movers"] and self.rng.random() < 0.7:
            legal = table.rules.legal_moves(table.state, seat)
            text = table.rules.move_text(self.rng.choice(legal)) if legal else text
        token, address = table.seats[seat]["token"], table.seats[seat]["address"]
        return (f"Received: from client.example.net by mx.example.org; "
                f"{format_datetime(self.engine.clock())}\r\n"
                f"From: {address}\r\nTo: referee+{token}@example.org\r\n"
                f"Subject: Re: {table.tag(seat)} Your move\r\nMessage-ID: <seed@example.net>\r\n"
                f"Content-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n").encode()  # fmt: skip

    def _with_new_id(self, raw: bytes) -> bytes:
        """Most mail gets a Message-ID of its own; some keep the seed's (a duplicate)."""
        if self.rng.random() < 0.05:
            return raw
        self.serial += 1
        return re.sub(rb"(?im)^Message-ID:[^\r\n]*", f"Message-ID: <fuzz-{self.serial}@example.net>".encode(),
                      raw, count=1)  # fmt: skip

    # -- mutations ---------------------------------------------------------------------

    def _at(self, raw: bytes, in_head: float = 0.7) -> int:
        """A position, most often in the header section."""
        end = _head_end(raw) if self.rng.random() < in_head else len(raw)
        return self.rng.randint(0, max(end, 0))

    def flip(self, raw: bytes) -> bytes:
        if not raw:
            return raw
        at = self.rng.randrange(len(raw))
        return raw[:at] + bytes([raw[at] ^ (1 << self.rng.randrange(8))]) + raw[at + 1 :]

    def insert_bytes(self, raw: bytes) -> bytes:
        at = self._at(raw)
        return raw[:at] + self.rng.randbytes(self.rng.randint(1, 32)) + raw[at:]

    def insert_snippet(self, raw: bytes) -> bytes:
        at = self._at(raw)
        return raw[:at] + self.rng.choice(SNIPPETS) * self.rng.choice((1, 1, 2, 3, 50)) + raw[at:]

    def delete(self, raw: bytes) -> bytes:
        at = self._at(raw, in_head=0.5)
        return raw[:at] + raw[at + self.rng.randint(1, 64) :]

    def truncate(self, raw: bytes) -> bytes:
        return raw[: self._at(raw, in_head=0.3)]

    def repeat_field(self, raw: bytes) -> bytes:
        lines = _field_lines(raw)
        if not lines:
            return raw
        line = self.rng.choice(lines)
        return self._insert_fields(raw, [line] * self.rng.choice((1, 1, 2, 200)))

    def splice_field(self, raw: bytes) -> bytes:
        lines = _field_lines(self.rng.choice(self.corpus + self.regressions))
        return self._insert_fields(raw, [self.rng.choice(lines)]) if lines else raw

    def many_fields(self, raw: bytes) -> bytes:
        count = self.rng.choice((501, 1000, 3000))
        return self._insert_fields(raw, [f"X-Fz{i}: {i}\r\n".encode() for i in range(count)])

    def other_charset(self, raw: bytes) -> bytes:
        charset = self.rng.choice([s for s in SNIPPETS if s.startswith(b"charset=")])
        return re.sub(rb"(?i)charset=\"?[\w-]*\"?", lambda _: charset, raw, count=1)

    def other_token(self, raw: bytes) -> bytes:
        """Another seat's token (or a made-up one) wherever the mail has one."""
        tokens = sorted(self.tokens())
        if tokens and self.rng.random() < 0.8:
            other = self.rng.choice(tokens)
        else:
            other = "".join(self.rng.choice(BASE32) for _ in range(self.rng.choice((0, 15, 16))))
        return re.sub(rb"(?i)(?<=referee\+)[a-z0-9-]*(?=@)|(?<=\d )[a-z2-7]{16}(?=\])",
                      lambda _: other.encode(), raw)  # fmt: skip

    def other_from(self, raw: bytes) -> bytes:
        players = [s["address"] for s in self.engine.store.seats(1) if s["address"]] or [STRANGER]
        value = self.rng.choice(FROMS).format(a=self.rng.choice(players), s=STRANGER)
        replaced = re.sub(rb"(?im)^From:[^\r\n]*", lambda _: b"From: " + value.encode(), raw, count=1)
        return replaced if replaced != raw else self._insert_fields(raw, [f"From: {value}\r\n".encode()])

    def _insert_fields(self, raw: bytes, fields: list[bytes]) -> bytes:
        """``fields`` before a field of ``raw`` (or after its last)."""
        head = raw[: _head_end(raw)]
        starts = [0] + [m.end() for m in re.finditer(rb"\n(?=[^ \t])", head)]
        at = self.rng.choice(starts)
        return raw[:at] + b"".join(fields) + raw[at:]


_MUTATION_WEIGHTS: dict[Callable[[Fuzzer, bytes], bytes], int] = {
    Fuzzer.flip: 6, Fuzzer.insert_bytes: 4, Fuzzer.insert_snippet: 12, Fuzzer.delete: 4,
    Fuzzer.truncate: 1, Fuzzer.repeat_field: 3, Fuzzer.splice_field: 3, Fuzzer.many_fields: 1,
    Fuzzer.other_charset: 3, Fuzzer.other_token: 4, Fuzzer.other_from: 5,
}  # fmt: skip
_MUTATIONS, _WEIGHTS = list(_MUTATION_WEIGHTS), list(_MUTATION_WEIGHTS.values())


def _head_end(raw: bytes) -> int:
    ends = [at for at in (raw.find(b"\r\n\r\n"), raw.find(b"\n\n")) if at >= 0]
    return min(ends) if ends else len(raw)


def _field_lines(raw: bytes) -> list[bytes]:
    """The header section's first lines of fields, each with its line end."""
    head = raw[: _head_end(raw)]
    return [line if line.endswith(b"\n") else line + b"\r\n"
            for line in head.splitlines(keepends=True) if line[:1] not in (b" ", b"\t", b"")]  # fmt: skip


def names_a_token(raw: bytes, tokens: set[str]) -> bool:
    """Whether any of ``tokens`` could be read from ``raw``: in its bytes, in
    its subject as the standard library decodes it, or in its recipients and
    subject as the referee reads them (a stray quote inside a token's
    address, ``referee+abc"def@...``, is read away by an address parser)."""
    lowered = raw.lower()
    if any(t.encode() in lowered for t in tokens):
        return True
    try:
        subject = str(make_header(decode_header(str(message_from_bytes(raw)["Subject"] or ""))))
    except Exception:  # noqa: BLE001 - an undecodable subject names nothing we can see
        subject = ""
    if any(t in subject.lower() for t in tokens):
        return True
    read = tokens_named(parse(raw, datetime.now(timezone.utc)), "referee@example.org")
    return any(t in tokens for t in read)


@contextmanager
def seeded_games(seed: int) -> Iterator[None]:
    """Games created inside get their seeds from ``seed``, not from the
    system: the same fuzz seed then makes the same games and the same mail,
    so a run's Nth mail can be made again."""
    rng = random.Random(seed)
    with patch("referee.engine.seating.secrets", SimpleNamespace(token_bytes=rng.randbytes)):
        yield


GAME_TABLES = ("games", "seats", "phases", "moves")


def count_game_changes(engine: Engine) -> Callable[[], int]:
    """A counter of rows inserted, updated or deleted in the tables that hold
    games, from now on: temporary triggers on the engine's own connection, so
    checking that a mail changed no game costs nothing however many games
    the store holds (a snapshot of them all grows with every game)."""
    db = engine.store.db
    db.execute("create temp table if not exists game_changes (n integer)")
    db.execute("insert into game_changes values (0)")
    for table in GAME_TABLES:
        for event in ("insert", "update", "delete"):
            db.execute(f"create temp trigger if not exists count_{event}_{table} after {event} "
                       f"on main.{table} begin update game_changes set n = n + 1; end")  # fmt: skip
    return lambda: db.execute("select n from game_changes").fetchone()[0]
