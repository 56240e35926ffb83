"""Mail out: jinja2 templates -> RFC 5322 messages, plain text first.

A template's first line is ``Subject: ...``; the rest is the body.  Templates
live in templates/mail/ (a game's own parts in templates/mail/<kind>/); a
keeper may point ``referee.templates`` at their own copies.
"""

from __future__ import annotations

import functools
import re
import textwrap
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from email import charset, policy
from email.header import Header
from email.utils import format_datetime, formataddr, make_msgid
from typing import Any

import jinja2

from referee.config import Config
from referee.errors import Refusal
from referee.mail.parse import message_ids
from referee.resources import template_folders
from referee.rules import GAMES
from referee.templating import Environment, template_cache
from referee.timeutil import iso, show, show_duration

_UTF8_QP = charset.Charset("utf-8")
_UTF8_QP.body_encoding = charset.QP  # readable in any client, and 7-bit safe
_SMTP = policy.compat32.clone(linesep="\r\n")


@jinja2.pass_context
def _when(context: jinja2.runtime.Context, moment: datetime | str, seconds: bool = False) -> str:
    """A time in UTC, and in the reader's zone when they chose one (TIMEZONE);
    to the second with ``seconds``."""
    zone = context.get("timezone")
    return show(moment, zone or None, seconds)


_PARAGRAPHS = re.compile(r"\n[ \t]*\n")
# What reflow never breaks across lines: a moment ("2026-12-03 18:00 UTC") and a short length ("(5 days)").
_UNBROKEN = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)?(?: UTC)?|\(\d+ [a-z]+\)")
_GLUE = "\x00"  # (no template's text holds it: it holds a space through the wrapping)
REFLOW_WIDTH = 74  # a paragraph's lines (reflow): a phone shows 78 columns whole, with room for a quote's "> "


def reflow(text: str, width: int = REFLOW_WIDTH) -> str:
    """Each paragraph of ``text`` wrapped anew at ``width``, whatever the
    names, titles and times its template put into it: a paragraph any of
    whose lines is indented (a list, a link, a table) is kept as written,
    and so are the blank lines around and between paragraphs."""
    body = text.strip("\n")
    head, tail = text[: len(text) - len(text.lstrip("\n"))], text[len(text.rstrip("\n")) :]
    paragraphs = []
    for paragraph in _PARAGRAPHS.split(body):
        lines = paragraph.split("\n")
        if any(line[:1] in (" ", "\t") for line in lines):
            paragraphs.append(paragraph)
        else:
            words = _UNBROKEN.sub(lambda m: m[0].replace(" ", _GLUE), " ".join(paragraph.split()))
            wrapped = textwrap.fill(words, width, break_long_words=False, break_on_hyphens=False)
            paragraphs.append(wrapped.replace(_GLUE, " "))
    return head + "\n\n".join(paragraphs) + tail


_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # would break or hide in a header
_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_SUBJECT = 200  # characters: a header line must stay under 998 octets, and who reads more?
_MAX_REFERENCES = 10  # of a thread's Message-IDs, the latest: enough for any client to thread


def header_safe(text: str) -> str:
    """Text from a player's mail made fit for a header of ours: one line, no
    control character, nothing that cannot be written as UTF-8, and short
    enough for a header line."""
    if not _fit_already(text):
        text = " ".join(_UNSAFE.sub(" ", encodable(text)).split())
    return text if len(text) <= _MAX_SUBJECT else text[: _MAX_SUBJECT - 1] + "…"


def _fit_already(text: str) -> bool:
    """Whether ``text`` is one line of printable ASCII with single blanks
    between words and none around them: what header_safe's cleaning would
    leave as it is (every subject the referee writes itself)."""
    return text.isascii() and text.isprintable() and "  " not in text and text == text.strip()


def encodable(text: str) -> str:
    """``text`` with any lone surrogate (what a bad charset decodes to) as U+FFFD."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)  # (ASCII has none: no search)


_LINE_END = re.compile(r"\r\n|\r|\n")


# What MIMEText(body, "plain", _UTF8_QP) begins with, as it writes them.
_PLAIN_TEXT_HEADERS = [
    ("Content-Type", 'text/plain; charset="utf-8"'),
    ("MIME-Version", "1.0"),
    ("Content-Transfer-Encoding", "quoted-printable"),
]


def plain_text_bytes(headers: Iterable[tuple[str, Any]], body: str, written: Iterable[bytes] = ()) -> bytes:
    """``MIMEText(body, "plain", _UTF8_QP)`` with ``headers`` added in
    order, as ``as_bytes(policy=_SMTP)`` writes it, byte for byte, without
    building the MIMEText: its
    charset parameter machinery cost more than the rest of a mail
    (tests/unit/test_compose.py checks it against MIMEText).  ``written``:
    header lines written already (_header_line's), which go before
    ``headers``.  ``body`` holds no lone surrogate (encodable)."""
    lines = [_header_line(name, value) for name, value in headers]
    return b"".join([_MIME_HEAD, *written, *lines, b"\r\n", _body(body)])


def _header_line(name: str, value: Any) -> bytes:
    """One header field as compat32's SMTP policy writes it, at a fraction
    of the cost: a line of short, printable ASCII is written as it is (what
    compat32's folding would give it, through about thirty calls), and only
    the others are folded by the library."""
    if _plain(name, value) or _utf8_address(name, value):
        return f"{name}: {value}\r\n".encode()
    return _one_word(name, value) or _folded_text(name, value) or _SMTP.fold_binary(name, value)


def _body(body: str) -> bytes:
    """``body`` as MIMEText writes it, quoted-printable in UTF-8, with CRLF line ends."""
    if not body:
        return b""
    return _crlf(_ascii_qp(body) or _UTF8_QP.body_encode(body.encode("utf-8"))).encode("ascii")


_QP_SAFE = re.compile(r"[\t\n\x20-\x3c\x3e-\x7e]*")  # what quoted-printable writes as it is ("=" aside)
_QP_SHORT = 74  # characters: a line no longer is written as it is, a blank at its end quoted ("=20", "=09")
_QP_PIECE = 75  # characters of a longer line before each soft line break ("=")
_BLANKS = (" ", "\t")


def _ascii_qp(body: str) -> str | None:
    """What email.quoprimime.body_encode writes of ``body`` (LF line ends)
    when it is ASCII with no character to quote but blanks (every mail the
    referee writes itself), or None for another body (the library writes
    it): most lines as they are, and only the few that need it written by
    its rule (_ascii_qp_line); its loop over every line cost a fifth of
    writing a mail."""
    if not _QP_SAFE.fullmatch(body):
        return None
    lines = body.split("\n")
    return "\n".join(
        [line if len(line) <= _QP_SHORT and not line.endswith(_BLANKS) else _ascii_qp_line(line) for line in lines]
    )


def _ascii_qp_line(line: str) -> str:
    """body_encode's own rule for one line with no "=" (none to quote):
    cut into pieces of _QP_PIECE characters and a soft line break while
    more than 76 are left, and a blank at its end quoted, on the line if
    there is room for "=20", else as the library places it."""
    pieces, start, last_start = [], 0, len(line) - 77
    while start <= last_start:
        pieces.append(line[start : start + _QP_PIECE] + "=")
        start += _QP_PIECE
    if line.endswith(_BLANKS):
        room, quoted = start - last_start, "=20" if line[-1] == " " else "=09"
        end = quoted if room >= 3 else line[-1] + "=\n" if room == 2 else "=\n" + quoted
        pieces.append(line[start:-1] + end)
    else:
        pieces.append(line[start:])
    return "\n".join(pieces)


def _crlf(payload: str) -> str:
    return payload.replace("\n", "\r\n") if "\r" not in payload else _LINE_END.sub("\r\n", payload)


def _utf8_address(name: str, value: Any) -> bool:
    """An internationalised address in To (RFC 6532): written in UTF-8 as it
    is, for a server with SMTPUTF8; an encoded word there is no address."""
    return name == "To" and isinstance(value, str) and not value.isascii() and value.isprintable()


def _one_word(name: str, value: Any) -> bytes | None:
    """What compat32 folds a value of one word to (printable ASCII with none
    of the characters it breaks at: blanks, ";" and ","), or None for
    another value: on the field's line if it fits in 78 characters, else
    alone on the next, never broken (a List-Unsubscribe, whose token makes
    it too long for one line; the library took a millisecond over it)."""
    if not (isinstance(value, str) and value.isascii() and value.isprintable() and value):
        return None
    if _WORD_BREAKS.search(value):
        return None
    if len(name) + 2 + len(value) <= _LINE_LENGTH:
        return f"{name}: {value}\r\n".encode()
    return f"{name}: \r\n {value}\r\n".encode()


_WORD_BREAKS = re.compile(r"[ ;,]")  # (printable ASCII has no other blank)
_BREAKS = b" ;,"
# Every other byte an "x": a value's shape (bytes.translate, where a regex's sub of each character cost 8 us a subject).
_SHAPE = bytes(byte if byte in _BREAKS else ord("x") for byte in range(256))
_RUNS_OF_X = re.compile(r"(x+)")


def _folded_text(name: str, value: Any) -> bytes | None:
    """What compat32 folds a value of printable ASCII to (a subject with a
    seat's token, too long for one line), or None for another value.  Its
    folding looks only at the lengths of the runs between blanks, ";" and ","
    and at which of those breaks each is, never at the other characters: so
    the library folds the value's shape (every other character an "x"),
    once for all the values of that shape (a move's round mail to every seat
    has one), and the value's own characters go back where the x's are.
    tests/unit/test_compose.py checks it byte for byte against the library."""
    if not (isinstance(value, str) and value.isascii() and value.isprintable()):
        return None
    ascii_value = value.encode("ascii")
    pieces = _folded_shape(name, ascii_value.translate(_SHAPE).decode("ascii"))
    if pieces is None:
        return None
    characters = ascii_value.translate(None, _BREAKS).decode("ascii")  # (the x's, in order)
    start, written = 0, [f"{name}: "]
    for text, run in pieces:
        written.append(text)
        written.append(characters[start : start + run])
        start += run
    return "".join(written).encode()


@functools.lru_cache(maxsize=256)
def _folded_shape(name: str, shape: str) -> tuple[tuple[str, int], ...] | None:
    """The value part of compat32's folding of ``shape`` (from after "name: "),
    if it only broke lines and added blanks (it has as many x's as ``shape``):
    as pairs of what is written as it is and how many x's follow it."""
    line = _SMTP.fold(name, shape)
    prefix = f"{name}: "
    if not line.startswith(prefix) or line.count("x", len(prefix)) != shape.count("x"):
        return None
    split = _RUNS_OF_X.split(line[len(prefix) :])  # text, x's, text, ..., text
    split.append("")
    return tuple((text, len(run)) for text, run in zip(split[::2], split[1::2], strict=True))


_LINE_LENGTH = 78  # compat32's max_line_length


def _plain(name: str, value: Any) -> bool:
    return (
        isinstance(value, str)
        and value.isascii()
        and value.isprintable()
        and len(name) + len(value) <= 74
        and value == value.strip()
        and "  " not in value
    )


_MIME_HEAD = b"".join(_header_line(name, value) for name, value in _PLAIN_TEXT_HEADERS)  # the same in every mail


def _same_text(wrap: Callable[..., str]) -> Callable[..., str]:
    """``wrap`` (a filter that wraps text: wordwrap, reflow), kept by its
    arguments: it is a function of them alone, and a phase's result and
    prompts wrap the same paragraph for each seat (about 25 us a time)."""
    kept = functools.lru_cache(maxsize=256)(wrap)

    def wrapped(text: Any, *args: Any, **kwargs: Any) -> str:
        return kept(text, *args, **kwargs) if type(text) is str else wrap(text, *args, **kwargs)

    return wrapped


@jinja2.pass_context
def _map(context: jinja2.runtime.Context, value: Any, *args: Any, **kwargs: Any) -> Iterable[Any]:
    """Jinja's ``map``; ``map("card")``, a plain filter by its name (no
    ``pass_context`` or such), calls the filter itself on each item, not
    through Environment.call_filter, which looks it up again and checks its
    arguments for every item (a prompt maps some fifty cards)."""
    if len(args) == 1 and not kwargs and isinstance(args[0], str):
        plain = context.environment.filters.get(args[0])
        if plain is not None and not hasattr(plain, "jinja_pass_arg"):
            return _each(plain, value)
    return jinja2.filters.sync_do_map(context, value, *args, **kwargs)


def _each(plain: Callable[[Any], Any], value: Any) -> Iterator[Any]:
    if value:  # (as Jinja's map: nothing for an empty or false value)
        for item in value:
            yield plain(item)


REFUSALS = "mail/refusals.txt.j2"  # the wording of every Refusal, a macro per code


class TemplateError(ValueError):
    """A template that does not render to a mail."""


class Composer:
    def __init__(self, config: Config):
        folders = [config.templates] if config.templates else []
        folders += template_folders()  # the referee's, then each game's own
        self.config = config
        self.env = Environment(
            loader=jinja2.FileSystemLoader([str(f) for f in folders]),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            auto_reload=False,  # templates do not change while the referee runs: no stat per render
            # Each loaded template kept in a dict: Jinja's default LRU cache moves a template to its end at
            # every lookup, an O(n) deque.remove (a round mail looks up five); the folders' templates are few.
            cache_size=-1,
            keep_trailing_newline=True,
            autoescape=False,  # plain text; HTML templates will escape
            bytecode_cache=template_cache(config.template_cache, "mail"),
        )
        self.env.filters.update(when=_when, duration=show_duration, iso=iso, reflow=_same_text(reflow), map=_map)
        self.env.filters["wordwrap"] = _same_text(functools.partial(jinja2.filters.do_wordwrap, self.env))
        for game in GAMES.values():
            self.env.filters.update(game.filters)

    def part(self, name: str, **context: Any) -> str:
        """One answer in a reply (``templates/mail/answers/<name>.txt.j2``), trimmed."""
        text = self.env.get_template(f"mail/answers/{name}.txt.j2").render(**context)
        return "\n".join(line if line == "-- " else line.rstrip() for line in text.strip("\n").split("\n"))

    def section(self, name: str, **context: Any) -> str:
        """A piece of a mail (``templates/mail/<name>.txt.j2``, no Subject
        line), trimmed: what goes at the top of another mail (a receipt
        folded in, a seat's private news, what happened since its last mail)."""
        text = self.env.get_template(f"mail/{name}.txt.j2").render(**context)
        return "\n".join(line.rstrip() for line in text.strip("\n").split("\n"))

    def refusal(self, refusal: Refusal, timezone: str | None = None) -> str:
        """Why a line was refused, in words: the macro named by its code in
        ``templates/mail/refusals.txt.j2``, given its facts; its times also
        in ``timezone`` (the reader's TIMEZONE), as every mail gives them."""
        template = self.env.get_template(REFUSALS)
        module = template.make_module({"timezone": timezone}) if timezone else template.module
        wording = getattr(module, refusal.code.value)
        return str(wording(**refusal.facts)).strip()

    def render(self, template: str, **context: Any) -> tuple[str, str]:
        """(subject, body) of ``templates/mail/<template>.txt.j2``."""
        text = self.env.get_template(f"mail/{template}.txt.j2").render(**context)
        first, _, body = text.partition("\n")
        if not first.startswith("Subject:"):
            raise TemplateError(f"mail/{template}.txt.j2 must start with a 'Subject:' line")
        # Trailing blanks are invisible noise in plain text; "-- " keeps its
        # blank, which marks the signature for every mail client.
        lines = [line if line == "-- " else line.rstrip() for line in body.split("\n")]
        return header_safe(first[len("Subject:") :]), "\n".join(lines).lstrip("\n")

    def message(
        self,
        *,
        to: list[str],
        subject: str,
        body: str,
        now: datetime,
        reply_to: str | None = None,
        in_reply_to: str | None = None,
        references: str | None = None,
        id_tag: str | None = None,
        message_id: str | None = None,
        unsubscribe: str | None = None,
        archived_at: str | None = None,
    ) -> tuple[str, bytes]:
        """(Message-ID, bytes) of a finished mail, with CRLF line ends for SMTP.

        A mail that answers a message is ``Auto-Submitted: auto-replied``; any
        other is ``auto-generated`` (RFC 3834), so well-behaved auto-responders
        never answer the referee.  Written as MIMEText writes it
        (what plain_text_bytes writes), whose headers are
        plain strings: about ten times cheaper than EmailMessage's parsed ones.
        ``id_tag`` goes into the Message-ID (see tokens.phase_tag); a given
        ``message_id`` is used as it is.  ``unsubscribe``, an address of the
        referee's (tokens.unsubscribe_token), goes into List-Unsubscribe
        (RFC 2369) as a mailto: with the subject "unsubscribe", what a mail
        client's unsubscribe button sends.  ``archived_at``, a web address
        where the mail's matter stays published (a game's page), goes into
        Archived-At (RFC 5064).
        """
        headers: list[tuple[str, Any]] = [("To", ", ".join(to))]  # (after From, the same in every mail)
        subject = header_safe(subject)
        headers.append(("Subject", subject if subject.isascii() else Header(subject, "utf-8")))
        headers.append(("Date", format_datetime(now)))
        message_id = message_id or make_msgid(idstring=id_tag, domain=self.config.domain)
        headers.append(("Message-ID", message_id))
        if reply_to:
            headers.append(("Reply-To", reply_to))
        answered = message_ids(in_reply_to or "")[-1:]  # a player's: copied only if well formed
        thread = message_ids(references or "")[-_MAX_REFERENCES:] + answered
        if answered:
            headers.append(("In-Reply-To", answered[0]))
        if thread:
            headers.append(("References", " ".join(thread)))
        headers.append(("Auto-Submitted", "auto-replied" if in_reply_to else "auto-generated"))
        if unsubscribe:
            headers.append(("List-Unsubscribe", f"<mailto:{unsubscribe}?subject=unsubscribe>"))
        if archived_at:
            headers.append(("Archived-At", f"<{archived_at}>"))
        return message_id, plain_text_bytes(headers, encodable(body), written=(self._from_line,))

    @functools.cached_property
    def _from_line(self) -> bytes:
        """The From field of every mail, written once (as _header_line writes it)."""
        return _header_line("From", formataddr((self.config.name, self.config.address), charset="utf-8"))
