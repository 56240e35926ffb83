"""Which words of a message are a player's command, and which game it is for.

For now a message carries one move: the first line the player wrote
themselves (not quoted, not a signature), or else the subject.
"""

from __future__ import annotations

import re

from referee.mail.parse import Incoming

_TAG = re.compile(r"\[(?P<kind>[a-z][a-z-]*)-(?P<id>\d+)\]", re.I)
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


def tag(kind: str, game_id: int) -> str:
    """The game's subject tag, ``[pure-skill-7]``."""
    return f"[{kind}-{game_id}]"


def reply_address(address: str, kind: str, game_id: int) -> str:
    """The address replies about a game go to: ``referee+pure-skill-7@example.org``."""
    local, _, domain = address.rpartition("@")
    return f"{local}+{kind}-{game_id}@{domain}"


def named_games(message: Incoming, own_address: str) -> set[int]:
    """Game ids the message names by subject tag or by +tag reply address."""
    ids = {int(m["id"]) for m in _TAG.finditer(message.subject)}
    local, _, domain = own_address.lower().rpartition("@")
    plus = re.compile(rf"^{re.escape(local)}\+[a-z][a-z-]*-(\d+)@{re.escape(domain)}$")
    for recipient in message.recipients:
        if match := plus.match(recipient):
            ids.add(int(match[1]))
    return ids


def candidate_lines(message: Incoming) -> list[str]:
    """Where a move may stand, in order: the first line of the player's own
    text, then the subject (without Re: prefixes and game tags)."""
    lines = []
    first = first_own_line(message.text)
    if first:
        lines.append(first)
    subject = _TAG.sub(" ", _REPLY_PREFIX.sub("", message.subject)).strip()
    if subject:
        lines.append(subject)
    return lines


def first_own_line(text: str) -> str | None:
    """The first non-blank line the player wrote: quoted lines and the "On ...
    wrote:" line above them are skipped (a bottom-posted reply still counts);
    a signature or Outlook's unquoted original message ends the search."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith(">") or _ATTRIBUTION.match(stripped) or _CUT.match(stripped):
            continue
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if _OPENER.match(stripped) and _ATTRIBUTION.match(f"{stripped} {following}"):
            continue  # Gmail wraps a long "On ... wrote:" over two lines
        if line.rstrip("\r") == "-- " or stripped == "--" or _ORIGINAL.match(stripped):
            return None
        if index and _ATTRIBUTION.match(f"{lines[index - 1].strip()} {stripped}") \
                and _OPENER.match(lines[index - 1].strip()):
            continue  # the second half of such a wrapped line
        return stripped
    return None
