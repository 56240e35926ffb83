"""One RFC 5322 message -> the facts the referee acts on.

The one place that reads MIME.  It keeps the player's text as written (its
first MAX_TEXT characters); choosing which lines are commands is
``referee.mail.commands``' job.
"""

from __future__ import annotations

import codecs
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.headerregistry import HeaderRegistry
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.policy import EmailPolicy
from email.utils import getaddresses, parsedate_to_datetime
from enum import Enum, auto
from functools import cached_property, lru_cache
from html import unescape
from itertools import count, islice, pairwise
from typing import TYPE_CHECKING, Any


@dataclass(frozen=True)
class Incoming:
    key: str  # the Message-ID, or a hash of the bytes when there is none
    message_id: str | None
    sender: str  # the From address, lower case ("" if there is none, or it is ambiguous)
    subject: str
    recipients: tuple[str, ...]  # Delivered-To, X-Original-To, To and Cc addresses, lower case
    received_at: datetime  # the receiving server's time, never the sender's Date
    text: str  # the plain-text body ("" if none could be read)
    headers: EmailMessage  # for classification
    raw: bytes  # the message, or of an oversized one only its start, as the source read it
    oversized: bool = False  # too large to read: only the headers were parsed
    size: int = 0  # the whole message's bytes

    @cached_property
    def thread(self) -> list[str]:
        """thread_ids of its headers, read once: the desk, the phase it
        answers and the notice it may answer each ask, and each reading of a
        field parses it again (a third of the cost of parsing a reply)."""
        return thread_ids(self.headers)


def parse(
    raw: bytes,
    now: datetime,
    received_at: datetime | None = None,
    max_size: int | None = None,
    size: int | None = None,
) -> Incoming:
    """Read a message.  Its receipt time is ``received_at`` when the source
    knows it (IMAP INTERNALDATE, Maildir delivery), else what the headers
    say, else ``now``.  A message over ``max_size`` bytes is not parsed past
    its headers (bounded time and memory whatever it holds); nor is one of
    which ``raw`` is only the start, the whole being ``size`` bytes (the
    source read no more of a message over the limit)."""
    size = len(raw) if size is None else max(size, len(raw))
    oversized = size > len(raw) or (max_size is not None and size > max_size)
    head = raw.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0]
    message = None if oversized else _parse_tamed(raw, head)
    if message is None:  # too large, or too convoluted: read the headers alone
        message = parse_headers(head[:max_size])
    message_id = one_line(header_text(message, "Message-ID")) or None
    return Incoming(
        key=message_id or "sha256:" + hashlib.sha256(raw).hexdigest(),
        message_id=message_id,
        sender=_sender(message, head),
        subject=" ".join(header_text(message, "Subject").split()),
        recipients=tuple(_addresses(message)),
        received_at=received_at or receipt_time(message) or now,
        text="" if oversized else _body_text(message),
        headers=message,
        raw=raw,
        oversized=oversized,
        size=size,
    )


def unreadable(raw: bytes, now: datetime, received_at: datetime | None = None, size: int | None = None) -> Incoming:
    """What is known of a message the parser failed on: its bytes."""
    return Incoming(
        key="sha256:" + hashlib.sha256(raw).hexdigest(),
        message_id=None,
        sender="",
        subject="",
        recipients=(),
        received_at=received_at or now,
        text="",
        headers=EmailMessage(),
        raw=raw,
        size=len(raw) if size is None else max(size, len(raw)),
    )


MAX_PARTS = 200  # MIME parts; people's mail has a handful
# Characters of a body's text read (of an HTML body, of its source): a reply
# quoting a whole game's thread has under 100 KB of text, and an HTML one,
# styles and all, under 200 KB; a player's own lines stand above or among
# the quotes, never a megabyte down.
MAX_TEXT = 2**20
MAX_FIELD = 8192  # characters of one header field; longer ones are cut
MAX_FIELDS = 500  # header fields of one part the referee reads, and others; a relayed mail has ~50
_MAX_SAME = 5  # To, Cc ... fields read for addresses (a mail has one of each)
# The MIME parser checks every line of a part against the boundary of each
# multipart around it: a mail's lines times its boundaries (plus one) it may
# cost.  A 5 MB mail of base64 attachments has 70,000 lines and a few
# boundaries; 4 million checks take the parser under a second.
MAX_LINE_CHECKS = 4_000_000
# Where the header section names a type the parser looks into (multipart/*,
# message/*; a Message-ID is no such name): else the mail has one part
_MIME_TYPE = re.compile(rb"multipart|message(?!-id)")
# Where it names a multipart that mail clients write (a reply in text and
# HTML, attachments, inline pictures), _plain_multipart may split it (below);
# a bounce's report, say, is not worth the look.
_SPLIT_SIGN = re.compile(rb"multipart/(?:alternative|mixed|related)")
# The standard library parses structured fields in time quadratic in their
# length (0.3 s for 8 KB of ";"), so those it parses are cut shorter:
# Content-* fields (a real one is under 200 characters; they are read again
# and again, in every part) and the address fields read for recipients.
_MAX_CONTENT_FIELD = 400
_MAX_ADDRESS_FIELD = 2000
_ADDRESS_FIELDS = ("delivered-to", "x-original-to", "to", "cc")  # read for recipients, in this order

# The header fields the referee reads (here and in classify, bounces, dkim
# and the desk), and those MIME needs to find the body: kept wherever they
# stand among a hostile mail's thousands of others.
_READ_FIELDS = frozenset(
    {
        "from",
        "to",
        "cc",
        "delivered-to",
        "x-original-to",
        "subject",
        "message-id",
        "in-reply-to",
        "references",
        "received",
        "delivery-date",
        "return-path",
        "auto-submitted",
        "precedence",
        "x-autoreply",
        "x-autorespond",
        "mime-version",
        "authentication-results",
        "action",
        "final-recipient",
        "original-recipient",
        "status",
        "diagnostic-code",  # a delivery-status report's
    }
)
_READ_PREFIXES = ("list-", "content-")


class _TamedMessage(EmailMessage):
    """A part whose parser keeps the first MAX_FIELDS header fields the
    referee reads and the first MAX_FIELDS others, each cut to MAX_FIELD
    characters, stored as they came: the standard library's header parsing
    takes minutes over a header of a megabyte, and a field dropped or
    rewritten could change who a mail is from."""

    _payload: (
        Any  # Message's own store of the payload (not in the stubs), which _plain_multipart sets as the parser does
    )

    def __init__(self, policy=None):
        super().__init__(policy)
        self._kept = {True: 0, False: 0}  # fields kept, of those read and of others
        self.from_fields = 0  # From fields seen, kept or not: two make the sender nobody

    def set_raw(self, name: str, value: str) -> None:  # the parser's way in: one call a field
        lowered = name.lower()
        self.from_fields += lowered == "from"
        read = lowered in _READ_FIELDS or lowered.startswith(_READ_PREFIXES)
        if self._kept[read] < MAX_FIELDS:
            self._kept[read] += 1
            limit = (
                _MAX_CONTENT_FIELD
                if lowered.startswith("content-")
                else _MAX_ADDRESS_FIELD
                if lowered in _ADDRESS_FIELDS
                else MAX_FIELD
            )
            super().set_raw(name, value[:limit])

    def _get_params_preserve(self, failobj: Any, header: str) -> Any:
        """Message's own, the parameters of a field, each of its values read
        once a process: a reply's Content-Type fields are read for the
        boundary, the type and the charset, each time parsed anew (and its
        parts' fields are the same in every mail of a client)."""
        value = self.get(header, _MISSING)
        return failobj if value is _MISSING else list(_params(str(value)))


_MISSING = object()


@lru_cache(maxsize=256)
def _params(value: str) -> tuple[Any, ...]:
    """A field's parameters as Message._get_params_preserve reads them (a function of its text alone)."""
    return tuple(Message._get_params_preserve(_ValueOnly(value), None, "value"))  # type: ignore[attr-defined]


class _ValueOnly:
    """A field's text, where Message._get_params_preserve looks it up (``get``)."""

    def __init__(self, value: str):
        self.value = value

    def get(self, name: str, failobj: Any = None) -> str:
        return self.value


if TYPE_CHECKING:  # the stubs' EmailPolicy is generic in the message it makes; the class itself is not
    _EmailPolicy = EmailPolicy[_TamedMessage]
else:
    _EmailPolicy = EmailPolicy


class _TamedPolicy(_EmailPolicy):
    """policy.default, but a field the standard library fails to decode (it
    fails many ways: an encoded word in utf-7 that decodes to a lone
    surrogate, say) reads as empty, wherever it is read, the parser's own
    look at Content-Type included.  Content-Type reads as it came (unfolded),
    as compat32 reads it: an encoded word has no place in it (RFC 2047), and
    decoded one could hide a multipart and its boundary from the cheap
    signs and the counting pass of _parse_tamed."""

    def header_fetch_parse(self, name: str, value: str) -> str:
        if not hasattr(value, "name"):  # a field as the parser stored it (not one set as an object)
            lowered = name.lower()
            unfolded = _unfolded(value)
            if lowered == "content-type":
                return unfolded
            if _plain_text(unfolded) and _reads_as_itself(lowered, unfolded):
                return unfolded
        try:
            return super().header_fetch_parse(name, value)
        except Exception:  # noqa: BLE001 - a field too broken to decode names nothing
            return ""


# The standard library's header registry parses every field it is asked for
# into an object, each time it is asked (Subject, Message-ID, the thread's
# ids, a part's Content-Transfer-Encoding ...): a third of the cost of
# parsing a reply.  Where a field is plain text (printable ASCII and tabs,
# no encoded word) that parse gives back the text itself, unfolded, for:
# - the fields it reads as unstructured text: Subject, and every field it
#   has no class for (In-Reply-To, References, Received, Delivered-To ...);
# - a Message-ID of the usual form, <dot-atom@dot-atom>;
# - a Content-Transfer-Encoding that is one token ("quoted-printable").
# So such a value is returned as it is (tests/unit/test_parse36_headers.py
# checks each rule against the registry's own parse); any other goes
# through the registry, as before.
def _plain_text(text: str) -> bool:
    """Whether ``text`` is plain text: printable ASCII and tabs, with no
    "=?" (an encoded word's start).  Told by str's own scans of the whole
    text, where an expression looked ahead at each character (3 to 7 us a
    field of a reply, a dozen fields a reply; test_parse44_plain holds the
    two to each other)."""
    if not text.isascii() or "=?" in text:
        return False
    return text.isprintable() or ("\t" in text and text.replace("\t", " ").isprintable())


def _unfolded(value: str) -> str:
    """A field's value without its line breaks (_LINE_BREAK), as the header
    registry unfolds it; most values have none, and are not searched again."""
    return _LINE_BREAK.sub("", value) if "\n" in value or "\r" in value else value


_REGISTRY_CLASSES = frozenset(HeaderRegistry().registry) - {"subject"}  # the fields it does not read as text
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]++"  # possessive, as below: one way to read each text
_DOT_ATOM = rf"{_ATEXT}(?:\.{_ATEXT})*+"
_PLAIN_MESSAGE_ID = re.compile(rf"<{_DOT_ATOM}@{_DOT_ATOM}>")
_TOKEN = re.compile(r"[A-Za-z0-9-]++")


def _reads_as_itself(name: str, plain: str) -> bool:
    """Whether the header registry's parse of field ``name`` holding the
    plain text ``plain`` gives back that very text (see _plain_text)."""
    if name not in _REGISTRY_CLASSES:
        return True
    if name == "message-id":
        return bool(_PLAIN_MESSAGE_ID.fullmatch(plain))
    if name == "content-transfer-encoding":
        return bool(_TOKEN.fullmatch(plain))
    return False


_TAMED = _TamedPolicy(message_factory=_TamedMessage)


def _parse_tamed(raw: bytes, head: bytes) -> _TamedMessage | None:
    """The message, parsed in bounded time (see _TamedMessage).  None for
    MIME nested deeper than the parser recurses, with more than MAX_PARTS
    parts, or costing the parser more than MAX_LINE_CHECKS: no person
    writes such mail.  A mail whose header section (``head``, or more)
    names no multipart or message type has one part and is parsed at once.
    Another is looked at first: the cheap signs of hostile nesting (more
    boundaries than MAX_PARTS; its lines times its boundaries, as the
    parser checks each line for every boundary open around it, over
    MAX_LINE_CHECKS); then the parse itself counts the parts as it makes
    them, and stops past MAX_PARTS.  (It is the one parse: a counting pass
    before it cost a reply in text and HTML a third of its parsing.  The
    tamed parse stores each field as it came, as compat32 does, so it
    costs no more than a counting pass would up to where it stops.)"""
    lowered_head = head.lower()
    if not _MIME_TYPE.search(lowered_head):
        return BytesParser(policy=_TAMED).parsebytes(raw)
    boundaries = raw.lower().count(b"boundary")  # at least one to each multipart, however spelt
    lines = raw.count(b"\n") + raw.count(b"\r") - raw.count(b"\r\n")
    if boundaries > MAX_PARTS or lines * (boundaries + 1) > MAX_LINE_CHECKS:
        return None
    if _SPLIT_SIGN.search(lowered_head) and (plain := _plain_multipart(raw)) is not None:
        return plain
    try:
        message = BytesParser(_counted(), policy=_TAMED).parsebytes(raw)
    except (_TooManyParts, RecursionError):
        return None
    if len(list(islice(message.walk(), MAX_PARTS + 1))) > MAX_PARTS:
        return None
    return message


# The standard library's parser compiles a regular expression for each
# multipart's boundary, and each mail has its own boundary, so re's cache
# never holds it: a third of the cost of parsing a reply in text and HTML.
# A plainly well-formed multipart of single parts (a reply's text and HTML,
# a message with attachments) is therefore split here, by a plain scan of
# its lines; the parser reads each header section, and each part's body is
# its lines as the parser would store them (it reads them a line a call);
# the result is the very tree the standard library makes
# (tests/unit/test_parse36_multipart.py compares them, over generated mails
# and the mail clients' fixtures).  Anything else (a nested multipart, a
# digest, no closing boundary, two boundary lines in a row, a defect
# anywhere) is left to the standard library's parse.
_LINE_END = re.compile(r"\r\n|\r|\n")  # the parser's line breaks


def _without_eol(text: str) -> str:
    """``text`` without the one line break (CRLF, CR or LF) it may end with,
    as the parser strips it (a regular expression searched along the whole
    of a part's text did): the break before a boundary belongs to the boundary."""
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith(("\r", "\n")) else text


# A digest's parts default to message/rfc822; a report (a bounce) holds a
# message/* part, which the split leaves to the parser: not worth a look.
_NOT_SPLIT = frozenset({"multipart/digest", "multipart/report"})
_HEADER_LINE = re.compile(r"^(From |[\041-\071\073-\176]*:|[\t ])")  # a line of a header section, to the parser


class _Boundary(Enum):
    """What a line is to a multipart: a boundary between parts, its
    closing boundary, or neither."""

    NONE = auto()
    SEPARATOR = auto()
    CLOSE = auto()


def _boundary_line(line: str, separator: str) -> _Boundary:
    """The standard library's reading of a line (with its line break) against
    "--" + boundary: the separator, "--" for the close, then spaces and tabs."""
    if not line.startswith(separator):
        return _Boundary.NONE
    rest = line[len(separator) :].rstrip("\r\n")
    closing = rest.startswith("--")
    if rest[2 if closing else 0 :].strip(" \t"):
        return _Boundary.NONE
    return _Boundary.CLOSE if closing else _Boundary.SEPARATOR


def _plain_multipart(raw: bytes) -> _TamedMessage | None:
    """A multipart of single parts, parsed as the standard library parses it
    but without compiling its boundary; None if it is not plainly such (the
    caller parses it in full then)."""
    lines = _lines(raw.decode("ascii", "surrogateescape"))  # as BytesParser reads bytes
    if (read := _header_section(lines, 0, len(lines))) is None:
        return None
    message, body = read
    boundary = message.get_boundary()
    if (
        message.get_content_maintype() != "multipart"
        or message.get_content_type() in _NOT_SPLIT
        or boundary is None
        or str(message.get("content-transfer-encoding", "8bit")).lower() not in ("7bit", "8bit", "binary")
    ):
        return None
    split = _split_parts(lines, body, "--" + boundary)
    if split is None or not 0 < len(split.parts) < MAX_PARTS:
        return None
    if split.preamble_end > body:  # the line break before the first boundary belongs to it
        message.preamble = _without_eol("".join(lines[body : split.preamble_end]))
    for start, end in split.parts:
        if (read := _header_section(lines, start, end)) is None:
            return None
        part, part_body = read
        if part.get_content_maintype() in ("multipart", "message"):
            return None
        part._payload = _without_eol("".join(lines[part_body:end]))  # as stored, not decoded
        message.attach(part)
    message.epilogue = "".join(lines[split.epilogue_start :])
    return message


def _header_section(lines: list[str], start: int, end: int) -> tuple[_TamedMessage, int] | None:
    """The part lines[start:end] holds, its header fields parsed as the
    parser parses them (no body yet), and where its body starts; None if its
    header section ends in no blank line, or has a defect."""
    at = start
    while at < end and _HEADER_LINE.match(lines[at]):
        at += 1
    if any(line.startswith("From ") for line in lines[start + 1 : at]):
        return None  # an envelope line below the first: the parser moves it, or notes a defect
    body = at
    if at < end:
        if lines[at] not in ("\r\n", "\n", "\r"):
            return None  # a line that is neither a field nor blank: the parser notes a defect
        body = at + 1
    part = _header_fields(lines, start, at)
    return None if part is None or part.defects else (part, body)


def _header_fields(lines: list[str], start: int, end: int) -> _TamedMessage | None:
    """A part with the header fields of lines[start:end] (each a field's line,
    a continuation or the envelope line, "From ", first only), stored as
    FeedParser._parse_headers stores them, and no payload; None where that
    would note a defect (a continuation first, a field with no name).  The
    parser itself cost a reply's three header sections a third of its
    parsing: its feeding machinery, for a few lines already cut."""
    part = _TamedMessage(_TAMED)
    field: list[str] = []  # the lines of the field being read
    for at in range(start, end):
        line = lines[at]
        if line[0] in " \t":
            if not field:
                return None  # a continuation of nothing: the parser notes a defect
            field.append(line)
            continue
        if field:
            part.set_raw(*_TAMED.header_source_parse(field))
        if at == start and line.startswith("From "):
            part.set_unixfrom(_without_eol(line))
            field = []
            continue
        if line[0] == ":":
            return None  # a field with no name: the parser notes a defect
        field = [line]
    if field:
        part.set_raw(*_TAMED.header_source_parse(field))
    return part


@dataclass
class _Split:
    preamble_end: int  # the first boundary line
    parts: list[tuple[int, int]]  # each part's lines, from after a boundary line to the next
    epilogue_start: int  # the line after the closing boundary


def _split_parts(lines: list[str], body: int, separator: str) -> _Split | None:
    """A multipart's body (lines[body:]) split on its boundary lines, in one
    pass: None unless it has a preamble or none, then parts each after one
    separator line, then the closing boundary."""
    candidates = (
        (at, kind)
        for at in range(body, len(lines))
        if lines[at].startswith(separator)  # the rare line worth a closer look
        and (kind := _boundary_line(lines[at], separator)) is not _Boundary.NONE
    )
    marks = list(islice(candidates, MAX_PARTS + 1))  # no further: the parser refuses so many parts anyway
    if not marks or marks[0][1] is not _Boundary.SEPARATOR or len(marks) > MAX_PARTS:
        return None
    parts = []
    for (start, _), (end, kind) in pairwise(marks):
        if end == start + 1:
            return None  # two boundary lines in a row: the parser reads them its own way
        parts.append((start + 1, end))
        if kind is _Boundary.CLOSE:
            return _Split(preamble_end=marks[0][0], parts=parts, epilogue_start=end + 1)
    return None  # no closing boundary


def _lines(text: str) -> list[str]:
    """The text's lines, each with its line break, as the parser cuts them
    (str.splitlines does, in C, where it finds no other break to cut at)."""
    lines = text.splitlines(keepends=True)
    # It cuts at every break the parser does and at others besides: as many lines as the parser's breaks
    # make (a last one without a break too) is none besides, or one that ends the text, where the parser's
    # last line ends anyway.  (Three counts cost half a search for the other breaks.)
    breaks = text.count("\n") + text.count("\r") - text.count("\r\n")
    if len(lines) == breaks + (text[-1:] not in ("\n", "\r", "")):
        return lines
    lines = []
    at = 0
    for end in _LINE_END.finditer(text):
        lines.append(text[at : end.end()])
        at = end.end()
    if at < len(text):
        lines.append(text[at:])
    return lines


class _TooManyParts(Exception):
    """The counting pass stops at once past MAX_PARTS parts."""


def _counted() -> Callable[..., _TamedMessage]:
    """The tamed message factory, which stops the parse (_TooManyParts)
    once it has made MAX_PARTS parts: tens of thousands of tiny parts cost
    no more to count than MAX_PARTS do."""
    made = count()

    def part(*args: Any, **kwargs: Any) -> _TamedMessage:
        if next(made) > MAX_PARTS + 1:  # the parser makes one first, to try the factory
            raise _TooManyParts
        return _TamedMessage(*args, **kwargs)

    return part


def parse_headers(raw: bytes) -> _TamedMessage:
    """A header block alone (a message's, or the copy of our mail a bounce
    returns), parsed as ``parse`` parses a message's; never the MIME below it."""
    return BytesParser(policy=_TAMED).parsebytes(raw, headersonly=True)


# The From as people's mail providers read it: one address, either alone
# or in angle brackets after a display name (quoted strings, comments, and
# words without specials: raw UTF-8 and encoded words are words), perhaps
# with a comment after it.  No control character, nothing an address could
# hide in.
# An internationalised address (RFC 6532) is an address: any printable
# non-ASCII character may stand where a letter may.  The classes are written
# as what they leave out: the very sets of [A-Za-z0-9!#$%&'*+/=?^_`{|}~-] and
# [A-Za-z0-9-], each with U+00A1-U+10FFFF (checked over every code point),
# which compile in a twentieth of the time (start-up: issue 16).
_ATOM = r'[^\x00-\x20"(),.:;<>@\[\\\]\x7f-\xa0]+'
_LABEL = r"[^\x00-\x2c./:-@\[-`{-\xa0]+"
_ADDRESS = rf"{_ATOM}(?:\.{_ATOM})*@{_LABEL}(?:\.{_LABEL})+"
_COMMENT = r"\([^()<>\\]*\)"
_DISPLAY_NAME = rf'(?:"(?:[^"\\]|\\.)*"|{_COMMENT}|[^"<>()\[\]@,;:\\])*'
_FROM = re.compile(
    rf"{_DISPLAY_NAME}<\s*({_ADDRESS})\s*>(?:\s*{_COMMENT})?"
    rf"|({_ADDRESS})(?:\s*{_COMMENT})?"
)
_BARE_ADDRESS = re.compile(_ADDRESS)
_PARENTHESES = re.compile(r"[()]|[^()]+")
_MESSAGE_ID = re.compile(r"<[!-;=?-~]{1,250}>")  # printable ASCII in angle brackets, as ids are
_SPACED_FROM = re.compile(rb"(?im)^from[ \t]+:")
_FOLD = re.compile(r"\r?\n(?=[ \t])")
_LINE_BREAK = re.compile(r"[\r\n]")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _sender(message: _TamedMessage, head: bytes) -> str:
    """The From address, lower case; "" unless there is exactly one From
    field and it names one address beyond doubt.  Read from the field as it
    came (a display name is never decoded: the address cannot be in one)."""
    froms = [value for name, value in message.raw_items() if name.lower() == "from"]
    # none, two (counting those dropped among thousands), or one cut: not the From as sent
    if message.from_fields != 1 or len(froms) != 1 or len(froms[0]) >= MAX_FIELD:
        return ""
    if _SPACED_FROM.search(head):
        return ""  # a "From :" line, which the parser sets aside and some servers read as a From
    value = _FOLD.sub("", froms[0]).strip()
    match = None if _CONTROL.search(value) else _FROM.fullmatch(value)
    address = (match[1] or match[2]) if match else ""
    try:  # the parser keeps 8-bit bytes as surrogates; an address in UTF-8 is an address
        address = address.encode("utf-8", "surrogateescape").decode("utf-8")
    except UnicodeError:
        return ""  # bytes that are not UTF-8: no address anyone could answer
    if any(not c.isascii() and c.lower().isascii() for c in address):
        return ""  # KELVIN SIGN and the like: lower case would name another, ASCII, address
    return address.lower() if is_address(address) else ""


def is_address(text: str) -> bool:
    """A bare mail address (local@domain.tld) that SMTP can carry: ASCII, or
    UTF-8 for a server with SMTPUTF8, with no control, space or invisible mark."""
    return bool(_BARE_ADDRESS.fullmatch(text)) and text.isprintable()


def one_line(value: str) -> str:
    """A header value with any line breaks (even encoded ones) folded away, so
    it can be copied into a header of ours."""
    return " ".join(value.split())


def receipt_time(message: EmailMessage) -> datetime | None:
    """When the receiving server got the message: the topmost Received header's
    date (the last hop, added by our own server), else Delivery-date."""
    received = header_text(message, "Received")  # the first one only: there may be thousands
    candidates = [received.rpartition(";")[2]] if received else []
    candidates.append(header_text(message, "Delivery-date"))
    for text in candidates:
        try:
            moment = parsedate_to_datetime(text.strip())
            if moment.tzinfo is None:  # RFC 5322 "-0000": UTC, origin unknown
                moment = moment.replace(tzinfo=UTC)
            return moment.astimezone(UTC)
        except (TypeError, ValueError, IndexError, OverflowError):  # no date, or none in UTC's range
            continue
    return None


def header_text(message: Message, name: str) -> str:
    """The first ``name`` field's text, decoded; "" if there is none."""
    return str(message.get(name, "") or "")


def without_comments(value: str) -> str:
    """A structured field's value without its (comments), nested ones too:
    each becomes one space; a "(" never closed stays.  One pass."""
    kept: list[str] = []
    opened: list[int] = []  # where each "(" still open stands in kept
    for piece in _PARENTHESES.findall(value):
        if piece == "(":
            opened.append(len(kept))
        elif piece == ")" and opened:
            del kept[opened.pop() :]
            piece = " "
        kept.append(piece)
    return "".join(kept)


def message_ids(text: str) -> list[str]:
    """The well-formed Message-IDs in a field (In-Reply-To, References), in order."""
    return _MESSAGE_ID.findall(text)


def thread_ids(message: EmailMessage) -> list[str]:
    """The Message-IDs a reply names, the mail it answers first: its
    In-Reply-To, then its References, newest first."""
    return message_ids(header_text(message, "In-Reply-To"))[-1:] + message_ids(header_text(message, "References"))[::-1]


def _addresses(message: EmailMessage) -> list[str]:
    texts = []
    all_plain = True
    for name in _ADDRESS_FIELDS:  # the first few fields of each name, parsed: never all of them
        for value in [v for k, v in message.raw_items() if k.lower() == name][:_MAX_SAME]:
            unfolded = _unfolded(value)
            if _PLAIN_ADDRESSES.fullmatch(unfolded):
                texts.append(unfolded)
            else:
                all_plain = False
                texts.append(str(message.policy.header_fetch_parse(name, value)))
    if all_plain:  # getaddresses joins the fields: one that is not plain may swallow the next
        found = [address for text in texts for address in _plain_list_addresses(text)]
    else:
        found = [address for _, address in getaddresses(texts) if "@" in address]
    return [address.lower() for address in found]


# A list of plain addresses, each alone or after a plain display name
# ("Referee <referee+abc@example.org>"): read as it is, it names the very
# addresses the header registry's parse of To or Cc names, and getaddresses
# reads each address in it as it stands (checked as the rules above are),
# so its addresses are read by cutting it at its commas (neither a plain
# name nor a plain address holds one), for a fifth of the cost.
_PLAIN_ONE_ADDRESS = rf"[\t ]*+(?:[A-Za-z0-9][A-Za-z0-9\t ]*+<{_DOT_ATOM}@{_DOT_ATOM}>|{_DOT_ATOM}@{_DOT_ATOM})[\t ]*+"
_PLAIN_ADDRESSES = re.compile(rf"{_PLAIN_ONE_ADDRESS}(?:,{_PLAIN_ONE_ADDRESS})*")


def _plain_list_addresses(plain: str) -> list[str]:
    """The addresses of a list _PLAIN_ADDRESSES matches, as getaddresses reads them."""
    found = []
    for one in plain.split(","):
        one = one.strip(" \t")
        found.append(one[one.rindex("<") + 1 : -1] if one.endswith(">") else one)
    return found


def _body_text(message: EmailMessage) -> str:
    """The plain-text body (HTML-only mail as a reader sees it), decoded
    whatever its transfer encoding and charset, its first MAX_TEXT
    characters; attachments are never read."""
    try:
        part = message.get_body(preferencelist=("plain", "html"))
        if part is None:
            return ""
        payload = part.get_payload(decode=True) or b""
        charset = part.get_content_charset()
    except (KeyError, LookupError, ValueError, AttributeError, TypeError, RecursionError):
        return ""  # unreadable, or nested deeper than anyone writes: no commands in it
    if not isinstance(payload, bytes):  # never: a text part decodes to bytes (the stubs allow a Message)
        return ""
    text = decode_text(payload, charset)[:MAX_TEXT].replace("\r\n", "\n").replace("\r", "\n")
    if part.get_content_subtype() == "html":
        return html_to_text(text)
    if str(part.get_param("format", "")).lower() == "flowed":
        return unflow(text, delsp=str(part.get_param("delsp", "")).lower() == "yes")
    return text


_NO_CHARSETS = {"punycode"}  # a codec no mail is written in, whose decoding takes quadratic time


def decode_text(payload: bytes, charset: str | None) -> str:
    """Bytes -> text by the declared charset; undeclared or unknown, UTF-8 if
    the bytes are valid UTF-8 (most 8-bit mail is), else Latin-1 (never fails)."""
    if charset:
        try:
            if codecs.lookup(charset).name not in _NO_CHARSETS:
                return payload.decode(charset, errors="replace")
        except (LookupError, ValueError):  # unknown to Python, or a codec that fails anyway (idna)
            pass  # guess as if undeclared
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return payload.decode("latin-1")


def unflow(text: str, delsp: bool = False) -> str:
    """RFC 3676 format=flowed -> the lines the writer meant.  A line ending
    in a space continues on the next one of the same quote depth (with
    DelSp=yes that space is not part of the text); a leading space is
    stuffing.  The text is written piece by piece and joined once: linear
    however many lines continue."""
    pieces: list[str] = []
    depth_now: int | None = None  # the quote depth of the line being written
    joining = False
    for raw in text.split("\n"):
        depth = len(raw) - len(raw.lstrip(">"))
        line = raw[depth:]
        if line.startswith(" "):
            line = line[1:]  # space-stuffing (or the space after ">")
        flowed = line.endswith(" ") and line != "-- "
        if flowed and delsp:
            line = line[:-1]
        if joining and depth == depth_now:
            pieces.append(line)
        else:
            if depth_now is not None:
                pieces.append("\n")
            pieces.append(("> " * depth if depth else "") + line)
            depth_now = depth
        joining = flowed
    return "".join(pieces)


# HTML's markup, each form read in one pass (possessive: nothing is read
# twice): a comment, a declaration, CDATA or a processing instruction, and a
# tag with its attributes (a quoted value may hold ">").  Anything left open
# runs to the end, as in a browser.  A "<" that starts none of them is text.
_MARKUP = re.compile(
    r"""
    <!--.*?(?:--!?>|\Z)
  | <!\[CDATA\[.*?(?:\]\]>|\Z)
  | <[!?][^>]*+(?:>|\Z)
  | </(?![a-zA-Z])[^>]*+(?:>|\Z)
  | <(?P<end>/?)(?P<name>[a-zA-Z][^\t\n\f\r />]*+)
      (?P<attributes>(?:[^>"'=]++|=\s*+(?:"[^"]*+(?:"|\Z)|'[^']*+(?:'|\Z))?+|["'])*+)(?:>|\Z)
""",
    re.DOTALL | re.VERBOSE,
)
# A decimal character reference of more than seven digits names no character
# (U+10FFFF is 1114111): html.unescape would fail on one of thousands
_NO_CHARACTER = re.compile(r"&#0*[1-9][0-9]{7,};?")
_RAW_TEXT = {"script": re.compile(r"</script", re.IGNORECASE), "style": re.compile(r"</style", re.IGNORECASE)}
_BLOCKS = frozenset(
    {"p", "div", "br", "li", "tr", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "pre", "hr"}
)
_HIDDEN = frozenset({"head", "style", "script", "title"})


class _TextOfHtml:
    """HTML -> the text a reader sees: block elements break lines, inline
    ones do not, and head, style and script hold no text at all; what a
    blockquote holds is marked "> ", as a plain-text reply marks a quote."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.hidden = 0
        self.quoted = 0
        self.preformatted = 0

    def read(self, html: str) -> str:
        at = 0
        while (markup := _MARKUP.search(html, at)) is not None:
            self.data(html[at : markup.start()])
            at = markup.end()
            name = (markup["name"] or "").lower()
            if name:
                closing = markup["end"] == "/"
                self.tag(name, -1 if closing else +1)
                if not closing and markup["attributes"].rstrip().endswith("/"):
                    self.tag(name, -1)  # <br/>: a start and an end
                elif not closing and name in _RAW_TEXT:  # its text is not HTML: up to its end tag
                    end = _RAW_TEXT[name].search(html, at)
                    at = end.start() if end else len(html)
        self.data(html[at:])
        return "".join(self.parts)

    def tag(self, name: str, step: int) -> None:
        if name in _HIDDEN:
            self.hidden = max(0, self.hidden + step)
        elif name == "blockquote":
            self.quoted = max(0, self.quoted + step)
        elif name == "pre":
            self.preformatted = max(0, self.preformatted + step)
        if name in _BLOCKS:
            self.parts.append("\n")

    def data(self, text: str) -> None:
        if self.hidden or not text:
            return
        text = unescape(_NO_CHARACTER.sub("\ufffd", text))
        if not self.preformatted:  # in HTML a line break in the source is a space
            text = text.replace("\r", " ").replace("\n", " ")
        if not self.quoted:
            self.parts.append(text)
            return
        for line in text.splitlines(keepends=True):
            at_line_start = not self.parts or self.parts[-1].endswith("\n")
            if at_line_start and line.strip():
                self.parts.append("> ")  # quoted, as a plain-text reply marks it
            self.parts.append(line)


def html_to_text(html: str) -> str:
    """The text of an HTML body (its first MAX_TEXT characters), a line of
    text a line: read in one pass, whatever the markup (see _MARKUP)."""
    text = _TextOfHtml().read(html[:MAX_TEXT])
    return "\n".join(" ".join(line.split()) for line in text.splitlines())
