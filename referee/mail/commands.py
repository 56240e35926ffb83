"""Which lines of a message are a player's commands.

One command per line, in any case, read in order: every line the player
wrote themselves.  Quoted lines, the "On ... wrote:" line above a quote,
and everything from a signature (``-- ``), a phone's "Sent from my ..." or
an unquoted original message (Outlook) onward are not theirs.  A mail with
no such line is read from its subject instead, so a move typed as the
subject counts too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from referee.mail.parse import Incoming

MAX_LINES = 25  # a mail is read no further: a move is a line, not an essay
MAX_LINE = 200  # characters of a line kept (and quoted back): no command is longer

# The words of the command language; anything else may be a game's move.
WORDS = ("help", "status", "hand", "resign", "list", "join", "leave", "timezone", "quit", "end")

_TAG = re.compile(r"\[(?P<kind>[a-z][a-z-]*)-(?P<id>\d+)(\s+[a-z2-7]+)?\]", re.I)
_ANY_TAG = re.compile(r"\[[a-z][a-z0-9-]*(\s+[a-z2-7]+)?\]", re.I)
_REPLY_PREFIX = re.compile(r"^\s*((re|fwd?|aw|sv|antw)\s*(\[\d+\])?\s*:\s*)+", re.I)
# "On <date>, <name> wrote:" above a quote, in the languages players write in
_ATTRIBUTION = re.compile(
    r"^(on|am|le|el|il|op|den|em)\b.*\b(wrote|schrieb|a écrit|escribió|ha scritto|schreef|skrev"
    r"|escreveu)\b[^:]*:$", re.I)  # fmt: skip
_CUT = re.compile(r"^\[\s*(\.\.\.|…|snip|snipped|cut)\s*\]$", re.I)  # "[...]" where a quote was trimmed
_OPENER = re.compile(r"^(on|am|le|el|il|op|den|em)\s", re.I)  # an attribution wrapped over lines
# Outlook and webmail put the original below an unquoted header block
_ORIGINAL = re.compile(
    r"^(-{3,}\s*(original message|ursprüngliche nachricht|message d'origine|mensaje original)"
    r"\s*-{3,}|_{10,}$|(from|von|de|van|da)\s?:\s)", re.I)  # fmt: skip
# What phones and webmail sign with, unasked
_DEVICE_SIGNATURE = re.compile(
    r"^(sent from (my )?\w|get outlook for|von meinem \w+ gesendet|envoyé de mon|enviado desde mi"
    r"|inviato da|verzonden vanaf)", re.I)  # fmt: skip


@dataclass(frozen=True)
class Command:
    """One line of a mail, read as a command."""

    word: str  # one of WORDS, or "" when the line is not a command word (perhaps a move)
    argument: str  # the rest of the line
    line: str  # the line as written

    @classmethod
    def read(cls, line: str) -> Command:
        first, _, rest = line.strip().partition(" ")
        word = first.lower().rstrip(".:!,")
        return cls(word if word in WORDS else "", rest.strip(), line.strip())


def tag(kind: str, game_id: int) -> str:
    """The game's subject tag, ``[pure-skill-7]``."""
    return f"[{kind}-{game_id}]"


def without_tags(subject: str) -> str:
    """A subject without Re:/Fwd: prefixes and game tags: what it says itself."""
    return " ".join(_ANY_TAG.sub(" ", _REPLY_PREFIX.sub("", subject)).split())


def command_lines(message: Incoming) -> list[str]:
    """The lines to read as commands, at most MAX_LINES + 1 (so a caller can
    tell the mail was longer): the player's own lines, else the subject."""
    lines = own_lines(message.text, MAX_LINES + 1)
    if not lines and (subject := without_tags(message.subject)):
        lines = [subject]
    return [line if len(line) <= MAX_LINE else line[:MAX_LINE] + "…" for line in lines]


def own_lines(text: str, limit: int | None = None) -> list[str]:
    """The non-blank lines the player wrote, stripped, up to ``limit``.

    Quoted lines and the "On ... wrote:" line above them are skipped (so
    top-posted, bottom-posted and inline replies all count); a signature
    or Outlook's unquoted original message ends the text."""
    lines = text.splitlines()
    own: list[str] = []
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith(">") or _ATTRIBUTION.match(stripped) or _CUT.match(stripped):
            continue
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if _OPENER.match(stripped) and _ATTRIBUTION.match(f"{stripped} {following}"):
            continue  # Gmail wraps a long "On ... wrote:" over two lines
        if line.rstrip("\r") == "-- " or stripped == "--" or _ORIGINAL.match(stripped) \
                or _DEVICE_SIGNATURE.match(stripped):  # fmt: skip
            break
        if index and _ATTRIBUTION.match(f"{lines[index - 1].strip()} {stripped}") \
                and _OPENER.match(lines[index - 1].strip()):  # fmt: skip
            continue  # the second half of such a wrapped line
        own.append(stripped)
        if limit is not None and len(own) >= limit:
            break
    return own


def first_own_line(text: str) -> str | None:
    """The first line the player wrote, if any."""
    lines = own_lines(text, 1)
    return lines[0] if lines else None
