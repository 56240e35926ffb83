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

import base64
import itertools
import quopri
import random
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from email import message_from_bytes
from email.header import decode_header, make_header
from email.utils import format_datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from hypothesis import strategies as st

from referee.engine import Engine
from referee.engine.seating import Seeds
from referee.mail.parse import parse
from referee.mail.tokens import tokens_named

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FIXTURE_KEY = b"fixture-secret"  # the key the corpus's reply tokens are computed with
STRANGER = "mallory@evil.example"
BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
T = TypeVar("T")

# What broke a mail parser or composer once, here or elsewhere.
SNIPPETS = [
    b"\x00",
    b"\x0b",
    b"\x0c",
    b"\x1b",
    b"\x1c",
    b"\x1e",
    b"\x7f",
    b"\xc2\x85",
    b"\xe2\x80\xa8",
    b"\xff\xfe",
    b"\xed\xa0\x80",
    b"\r",
    b"\n",
    b"\r\n ",
    b"\r\n\r\n",
    b"\t",
    b"=?utf-8?q?=0B=00=1C?=",
    b"=?utf-8?q?=0BName:?=",
    b"=?utf-7?q?+2AA-?=",
    b"=?unicode_escape?q?=5Cud800?=",
    b"=?utf-8?b?",
    b"?=",
    b"=?",
    b"=?x?q?",
    b"charset=idna",
    b"charset=undefined",
    b'charset="ut\x00f-8"',
    b"charset=punycode",
    b"charset=utf-7",
    b"charset=unicode_escape",
    b"charset=utf-32",
    b"charset=\xff",
    b"<![CDA[",
    b"<!--",
    b"<script>",
    b"&#0;",
    b"&#x110000;",
    b"<br",
    b"<p>",
    b"boundary=b",
    b"\r\n--b\r\n",
    b"\r\n--b--\r\n",
    b"multipart/mixed; boundary=",
    b"Content-Type: message/rfc822\r\n",
    b"Content-Transfer-Encoding: base64\r\n",
    b"<x@",
    b"<>",
    b'"',
    b"\\",
    b"(",
    b")",
    b"<",
    b">",
    b"@",
    b",",
    b";",
    b":",
    b"Fri, 31 Dec 9999 23:59:59 -1200",
    b"Mon, 1 Jan 0001 00:00:00 +9999",
    b"\r\nFrom: eve@evil.example",
    b"\r\nAuto-Submitted: (c) auto-replied",
    b"\r\nReferences: <a@b>\x01<c@d>",
    b"\r\nIn-Reply-To: <x@",
    b"\r\nTo: referee+@example.org",
    b"bid 7",
    b"bid 0",
    b"bid 99999999999999999999",
    b"pass",
    b"pawn",
    b"HAND",
    b"RESIGN",
    "J\u00fcrgen \U0001f600 \u202e".encode(),
]

# From fields: whoever they name, and the forms a mail provider would not accept.
FROMS = [
    "{a}",
    "Somebody <{a}>",
    '"{a}" <{a}>',
    "{a} (comment)",
    "=?utf-8?q?J=C3=BCrgen?= <{a}>",
    "J\u00fcrgen <{a}>",
    "{a} <{s}>",
    "<{a}> {s}",
    "=?utf-8?q?{a}?=",
    "{a}, {s}",
    "group: {a};",
    "<>",
    "",
    "{s}",
    "MAILER-DAEMON@example.org",
    "referee@example.org",
    "j\u00f6rg@b\u00fccher.example",
    "{a}\x0b",
    "a\u2028b@example.org",
]

COMMANDS = [
    "help",
    "hand",
    "status",
    "list",
    "join bid",
    "join ice",
    "leave bid",
    "timezone Europe/Berlin",
    "resign",
    "HELP\nbid 7\nbid 8",
    "",
]


# -- hostile shapes (issue 29): mail whose reading once took time growing with the square
# of its size (or a pattern backtracking over each line); bench/reading.py feeds them at
# up to 10 MB, the suite at a few dozen KB.

ATTRIBUTION = "On Sat, 21 Nov 2026 at 12:00, Referee <referee@example.org> wrote:"
LOREM = "lorem ipsum dolor sit amet "
MOST_TEXT = 64 * 1024  # characters of a hostile body in the suite


class Picks(Protocol):
    """What a generator draws with: a random.Random, or hypothesis's draw (Draws)."""

    def choice(self, seq: Sequence[T]) -> T: ...
    def randint(self, a: int, b: int) -> int: ...


class Draws:
    """Picks by hypothesis's ``draw``, so a failing mail shrinks draw by draw."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]):
        self.draw = draw

    def choice(self, seq: Sequence[T]) -> T:
        return self.draw(st.sampled_from(seq))

    def randint(self, a: int, b: int) -> int:
        return self.draw(st.integers(a, b))


# n units of text of each shape
TEXT_SHAPES: dict[str, Callable[[int], str]] = {
    "attributions": lambda n: "On x wrote:\n" * n,
    "attributions above long lines": lambda n: (ATTRIBUTION + "\n") * n + (LOREM * n + "\n") * 3,
    "a starred attribution that backtracks": lambda n: ("* " + "[1" * 149 + "\n  x\n") * n,  # above an indent
    "an address attribution that backtracks": lambda n: ("1<" * 150 + "\n  x\n") * n,
    "a verb attribution, never closed": lambda n: ("x wrote " * 37 + "x\n  x\n") * n,
    "attributions wrapped over two lines": lambda n: ("On " + "wrote " * 49 + "\nwrote wrote:\n") * n,
    "other attributions": lambda n: (
        "Bob writes:\n* Bob [2026-11-21 12:00]:\n21.11.2026 Bob <b@x.org>:\nQuoting Bob:\n" * n
    ),
    "quoted lines": lambda n: ("> " + LOREM + "\n") * n,
    "deep quote marks": lambda n: (">" * n + " bid 7\n") * 3,
    "the prompt indented": lambda n: ATTRIBUTION + "\n" + "\t    bid K\n\n" * n,
    "indented runs under attributions": lambda n: (ATTRIBUTION + "\n  " + LOREM + "\n") * n,
    "supercite": lambda n: ("Referee> " + LOREM + "\n") * n,
    "a long signature": lambda n: "-- \n" + (LOREM + "\n") * n,
    "blank lines": lambda n: "\n" * n,
    "blank lines between indented ones": lambda n: ("  x\n" + "\n" * 50) * (n // 50 + 1),
    "a line of letters": lambda n: "x" * n * 10 + "\n",
    "a line of words": lambda n: "bid 7 " * n + "\n",
    "a line of spaces": lambda n: " " * n * 10 + ">\n",
    "a line of underscores": lambda n: "_" * n * 10 + "x\n",
    "a line of dashes": lambda n: "-" * n * 10 + "x\n",
    "command words": lambda n: "help\nbid 7\nstatus\nresign\n" * n,
    "line ends of every kind": lambda n: "a\r\rb\r\n\nc\n\r" * n,
    "originals": lambda n: "  -----Original Message-----\n" * n,
    "device signatures": lambda n: "  Sent from my phone\n" * n,
    "flowed continuing": lambda n: "lorem ipsum \n" * n,
    "flowed quote depths": lambda n: "> a \n>> b \nc \n" * n,
}
HTML_SHAPES: dict[str, Callable[[int], str]] = {
    "'<a '": lambda n: "<a " * n,
    "'<p' unclosed": lambda n: "<p" * n,
    "'<!--' unclosed": lambda n: "<!--" * n,
    "'</'": lambda n: "</" * n,
    "'<!'": lambda n: "<!" * n,
    "'<![CDATA['": lambda n: "<![CDATA[" * n,
    "'&#'": lambda n: "&#" * n,
    "a character reference of thousands of digits": lambda n: "&#" + "1" * n + ";",
    "entities": lambda n: "&amp;&#128512;&eacute;" * n,
    "deep divs": lambda n: "<div>" * n + "bid 7" + "</div>" * n,
    "deep blockquotes": lambda n: "<blockquote>" * n + "bid 7<br>" * n,
    "an attribute never closed": lambda n: '<a href="' + "x" * n,
    "a script never closed": lambda n: "<script>" + "</scr" * n,
    "breaks": lambda n: "<br>" * n,
    "preformatted lines": lambda n: "<pre>" + "bid 7\n" * n + "</pre>",
    "comments": lambda n: "<!-- x -->" * n,
}
CHARSETS = ["utf-8", "latin-1", "utf-16", "utf-7", "iso-2022-jp"]
KINDS = ["plain", "flowed", "flowed delsp", "html"]
_SERIAL = itertools.count()  # each mail its own Message-ID, however often one is made again


def hostile_mail(
    picks: Picks, sender: str, to: str, subject: str, date: str = "Sat, 21 Nov 2026 12:30:00 +0000"
) -> bytes:
    """A mail from ``sender`` to ``to`` whose body is made of hostile shapes
    (a move perhaps above or below them), as plain, flowed or HTML text, in
    a charset and transfer encoding, perhaps inside MIME (nested, many
    parts, an rfc822 message), perhaps with a hostile header field."""
    kind = picks.choice(KINDS)
    shapes = {**TEXT_SHAPES, **HTML_SHAPES} if kind == "html" else TEXT_SHAPES
    text = picks.choice(["", "bid 7\n"])
    for _ in range(picks.randint(1, 3)):
        text += shapes[picks.choice(sorted(shapes))](picks.randint(1, 30_000))
    text += picks.choice(["", "\nbid 7\n"])
    text = text[:MOST_TEXT].replace("\n", picks.choice(["\n", "\r\n", "\r"]))
    part = hostile_part(kind, text, picks.choice(CHARSETS), picks.choice(["8bit", "base64", "quoted-printable"]))
    return _hostile_head(picks, sender, to, subject, date) + _wrapped(picks, part)


def hostile_part(kind: str, text: str, charset: str = "utf-8", encoding: str = "8bit") -> bytes:
    """A MIME part of ``text``: plain, flowed or HTML (KINDS), in ``charset``
    and a transfer ``encoding``."""
    data = text.encode(charset, "replace")
    data = {"8bit": data, "base64": base64.encodebytes(data), "quoted-printable": quopri.encodestring(data)}[encoding]
    content_type = {
        "plain": "text/plain",
        "flowed": "text/plain; format=flowed",
        "flowed delsp": "text/plain; format=flowed; delsp=yes",
        "html": "text/html",
    }[kind]
    return (
        f"Content-Type: {content_type}; charset={charset}\r\nContent-Transfer-Encoding: {encoding}\r\n\r\n"
    ).encode() + data


def hostile_head(sender: str, to: str, subject: str, date: str = "Sat, 21 Nov 2026 12:30:00 +0000") -> bytes:
    """An ordinary header section (without its Content-* fields): each its own Message-ID."""
    return (
        f"Received: from client.example.net by mx.example.org; {date}\r\n"
        f"From: {sender}\r\nTo: {to}\r\nSubject: {subject}\r\n"
        f"Message-ID: <hostile-{next(_SERIAL)}@example.net>\r\nMIME-Version: 1.0\r\n"
    ).encode()


def _wrapped(picks: Picks, part: bytes) -> bytes:
    """The part as it is, or inside MIME of one hostile shape or another."""
    wrapper = picks.choice(["none", "alternative", "nested", "many parts", "rfc822", "encoded word"])
    if wrapper == "alternative":
        return _multipart("alternative", [b"Content-Type: text/plain\r\n\r\nbid 7\r\n", part])
    if wrapper == "nested":
        for _ in range(picks.randint(1, 40)):
            part = _multipart("mixed", [part])
        return part
    if wrapper == "many parts":
        return _multipart("mixed", [part] + [b"Content-Type: text/plain\r\n\r\nx\r\n"] * picks.randint(1, 250))
    if wrapper == "encoded word":  # the type and boundary of a multipart in an encoded word (RFC 2047 forbids it)
        parts = [part] + [b"Content-Type: text/plain\r\n\r\nx\r\n"] * picks.randint(1, 250)
        return _multipart("mixed", parts).replace(b"multipart/mixed", b"=?utf-8?q?multipart=2Fmixed?=", 1)
    if wrapper == "rfc822":
        return b"Content-Type: message/rfc822\r\n\r\nFrom: a@example.org\r\n" + part
    return part


def _multipart(subtype: str, parts: list[bytes]) -> bytes:
    boundary = f"b{len(parts)}-{sum(map(len, parts))}".encode()
    body = b"".join(b"--" + boundary + b"\r\n" + part + b"\r\n" for part in parts)
    return (
        f'Content-Type: multipart/{subtype}; boundary="'.encode()
        + boundary
        + b'"\r\n\r\n'
        + body
        + b"--"
        + boundary
        + b"--\r\n"
    )


def _hostile_head(picks: Picks, sender: str, to: str, subject: str, date: str) -> bytes:
    """hostile_head, perhaps with a hostile field, or a hostile subject."""
    n = picks.randint(1, 2000)
    extra = picks.choice(
        [
            "",
            "X-Folded: a" + "\r\n x" * n + "\r\n",
            "".join(f"X-Fz{i}: {i}\r\n" for i in range(n)),
            "Auto-Submitted: " + "(" * n + ")" * n + " no\r\n",
            "References: " + "<a@b> " * n + "\r\n",
        ]
    )
    subject = picks.choice([subject, subject + " =?utf-8?q?b=C3=A9d?=" * n, "Re: " * n + subject, "bid 7 " * n])
    return hostile_head(sender, to, subject, date) + extra.encode()


@st.composite
def hostile_mails(draw: Callable[[st.SearchStrategy[Any]], Any], sender: str, to: str, subject: str) -> bytes:
    """hostile_mail as a hypothesis strategy."""
    return hostile_mail(Draws(draw), sender, to, subject)


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
        return self._seat_mail(hostile=pick > 0.97)

    def _seat_mail(self, hostile: bool = False) -> bytes:
        """A seat of a running game sends a legal move (or a command) from its
        own address to its reply address, as its mail client would; or,
        ``hostile``, a mail of hostile shapes (hostile_mail)."""
        running = [self.engine.table(g["id"]) for g in self.engine.store.games() if g["state"] == "running"]
        seats = [
            (table, s["seat"]) for table in running for s in table.seats if s["address"] and table.human(s["seat"])
        ]
        if not seats:  # every player resigned
            return self.rng.choice(self.corpus)
        table, seat = self.rng.choice(seats)
        text = self.rng.choice(COMMANDS)
        phase = table.open_phase
        if phase is not None and seat in phase["movers"] and self.rng.random() < 0.7:
            legal = table.rules.legal_moves(table.state, seat)
            text = table.rules.move_text(self.rng.choice(legal)) if legal else text
        token, address = table.seats[seat]["token"], table.seats[seat]["address"]
        if hostile:
            return hostile_mail(
                self.rng,
                address,
                f"referee+{token}@example.org",
                f"Re: {table.tag(seat)} Your move",
                format_datetime(self.engine.clock()),
            )
        return (
            f"Received: from client.example.net by mx.example.org; "
            f"{format_datetime(self.engine.clock())}\r\n"
            f"From: {address}\r\nTo: referee+{token}@example.org\r\n"
            f"Subject: Re: {table.tag(seat)} Your move\r\nMessage-ID: <seed@example.net>\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n"
        ).encode()

    def _with_new_id(self, raw: bytes) -> bytes:
        """Most mail gets a Message-ID of its own; some keep the seed's (a duplicate)."""
        if self.rng.random() < 0.05:
            return raw
        self.serial += 1
        return re.sub(
            rb"(?im)^Message-ID:[^\r\n]*", f"Message-ID: <fuzz-{self.serial}@example.net>".encode(), raw, count=1
        )

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
        return re.sub(rb"(?i)(?<=referee\+)[a-z0-9-]*(?=@)|(?<=\d )[a-z2-7]{16}(?=\])", lambda _: other.encode(), raw)

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
    Fuzzer.flip: 6,
    Fuzzer.insert_bytes: 4,
    Fuzzer.insert_snippet: 12,
    Fuzzer.delete: 4,
    Fuzzer.truncate: 1,
    Fuzzer.repeat_field: 3,
    Fuzzer.splice_field: 3,
    Fuzzer.many_fields: 1,
    Fuzzer.other_charset: 3,
    Fuzzer.other_token: 4,
    Fuzzer.other_from: 5,
}
_MUTATIONS, _WEIGHTS = list(_MUTATION_WEIGHTS), list(_MUTATION_WEIGHTS.values())


def _head_end(raw: bytes) -> int:
    ends = [at for at in (raw.find(b"\r\n\r\n"), raw.find(b"\n\n")) if at >= 0]
    return min(ends) if ends else len(raw)


def _field_lines(raw: bytes) -> list[bytes]:
    """The header section's first lines of fields, each with its line end."""
    head = raw[: _head_end(raw)]
    return [
        line if line.endswith(b"\n") else line + b"\r\n"
        for line in head.splitlines(keepends=True)
        if line[:1] not in (b" ", b"\t", b"")
    ]


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
    read = tokens_named(parse(raw, datetime.now(UTC)), "referee@example.org")
    return any(t in tokens for t in read)


def game_seeds(seed: int) -> Seeds:
    """An engine's seed source (Rooms' ``seeds``) drawn from ``seed``, not
    from the system: the same fuzz seed then makes the same games and the
    same mail, so a run's Nth mail can be made again."""
    return random.Random(seed).randbytes


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
            db.execute(
                f"create temp trigger if not exists count_{event}_{table} after {event} "
                f"on main.{table} begin update game_changes set n = n + 1; end"
            )
    return lambda: db.execute("select n from game_changes").fetchone()[0]
