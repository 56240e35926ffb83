"""Reply tokens: the private addresses that authenticate a player's mail.

Anyone can forge a From header, but only the player (and their mail
provider) sees the mail the referee sent them.  So every mail to a seat
carries a token in its Reply-To (``referee+TOKEN@example.org``) and in its
subject tag (``[pure-skill-7 TOKEN]``): a reply names the token, and the
referee takes a move only from a message that names the seat's token and
comes from the seat's address.  A keeper named in the config has a token
of their own (``[keeper TOKEN]``), for the keeper's commands by mail.

Two more tokens name no sender: a seat's unsubscribe address (its mail's
List-Unsubscribe), which only makes the seat's mail quieter and is never
read for moves, and the name of the seat's own calendar on the site.  An
observer of a game (WATCH) has a reply token of their own, and an
unsubscribe address that stops their copies.

A token is an HMAC of what it stands for under the referee's secret key:
16 lowercase base32 characters, 80 bits, so it cannot be guessed, and it
fits in a local part and a subject.

Beside the token, a game's mail names the phase it belongs to in its
Message-ID (``<...g7p12@example.org>``: game 7, phase 12), which a reply
carries back in In-Reply-To and References; so a move can be told apart
from one meant for a phase that is over.  The tag proves nothing and needs
not: naming an old phase can only get one's own move refused.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import re

from referee.mail.parse import Incoming

TOKEN_LENGTH = 16
_TOKEN = rf"[a-z2-7]{{{TOKEN_LENGTH}}}"
# "[pure-skill-7 TOKEN]" (a seat) or "[pure-skill TOKEN]" (a sign-up), anywhere in a subject
_SUBJECT_TOKEN = re.compile(rf"\[[a-z][a-z0-9-]*\s+({_TOKEN})\]", re.I)


@functools.lru_cache(maxsize=4096)
def make_token(key: bytes, *parts: object) -> str:
    """The token of ``parts`` (say "seat", 7, 0) under ``key``.  Kept for the
    same parts (a pure function of them): each seat's mail names its
    unsubscribe address and its calendar, two HMACs a mail otherwise."""
    message = "\x1f".join(str(part) for part in parts).encode()
    digest = hmac.new(key, message, hashlib.sha256).digest()
    return base64.b32encode(digest).decode().lower()[:TOKEN_LENGTH]


def seat_token(key: bytes, game_id: int, seat: int, address: str | None = None, change: int = 0) -> str:
    """What a seat's mail carries: it authenticates moves and commands.  A
    seat that moved to another address (its ``change``-th move, to
    ``address``) gets a token of its own there, unlike any it had before,
    so the old address's mail no longer proves the seat."""
    if address is None:
        return make_token(key, "seat", game_id, seat)
    return make_token(key, "seat", game_id, seat, address.lower(), change)


def signup_token(key: bytes, kind: str, address: str) -> str:
    """What a sign-up confirmation carries: it proves ``address`` reads its
    mail, before it may JOIN or LEAVE a game of ``kind``."""
    return make_token(key, "signup", kind, address.lower())


def keeper_token(key: bytes, address: str) -> str:
    """What the referee's mail to a keeper carries (their private keeper
    address): with their From, it proves a keeper's command by mail."""
    return make_token(key, "keeper", address.lower())


def unsubscribe_token(key: bytes, game_id: int, seat: int, address: str) -> str:
    """What a seat's mail carries in its List-Unsubscribe (RFC 2369): mail to
    it makes that seat's mail as quiet as it gets, and does nothing else.
    Never a reply token: a mail to it is never read for moves or commands.
    Of the seat's address too, so a newcomer in the seat (or the player at a
    new address) has another, and an old mail cannot quiet them."""
    return make_token(key, "unsubscribe", game_id, seat, address.lower())


def watcher_token(key: bytes, game_id: int, address: str) -> str:
    """What an observer's copies of a game's mail carry (WATCH): their reply
    token, which with their From proves a mail theirs (NOTIFY, UNWATCH).
    Stored with the observer; of the address, so nobody else's copy names it."""
    return make_token(key, "watcher", game_id, address.lower())


def unwatch_token(key: bytes, game_id: int, address: str) -> str:
    """What an observer's copies carry in their List-Unsubscribe: mail to it
    stops their copies of the game, and does nothing else (never read)."""
    return make_token(key, "unwatch", game_id, address.lower())


def calendar_token(key: bytes, game_id: int, seat: int, address: str) -> str:
    """The name of a seat's own calendar on the site (tables.own_calendar):
    of the seat's address too, so a newcomer in the seat (or the player at a
    new address) gets a new one, and the old one is taken down."""
    return make_token(key, "calendar", game_id, seat, address.lower())


def token_address(own_address: str, token: str) -> str:
    """``referee+TOKEN@example.org``: where a player's replies go."""
    local, _, domain = own_address.rpartition("@")
    return f"{local}+{token}@{domain}"


def tagged(tag: str, token: str) -> str:
    """A subject tag with its token: ``[pure-skill-7]`` -> ``[pure-skill-7 TOKEN]``."""
    return f"{tag[:-1]} {token}]"


def tokens_named(message: Incoming, own_address: str) -> list[str]:
    """Every token the message names, in its recipients' plus-addresses
    (Delivered-To, X-Original-To, To, Cc) or its subject tags, first seen first."""
    found = tokens_addressed(message, own_address)
    found += [m[1].lower() for m in _SUBJECT_TOKEN.finditer(message.subject)]
    return list(dict.fromkeys(found))


def tokens_addressed(message: Incoming, own_address: str) -> list[str]:
    """The tokens of the message's recipients' plus-addresses alone (where
    it was sent, not what its subject says), first seen first."""
    local, _, domain = own_address.lower().rpartition("@")
    plus = re.compile(rf"{re.escape(local)}\+({_TOKEN})@{re.escape(domain)}")
    return list(dict.fromkeys(m[1] for r in message.recipients if (m := plus.fullmatch(r.lower()))))


def phase_tag(game_id: int, phase: int | None) -> str:
    """What a game's Message-ID carries: its game, and the phase open when it
    was sent (0 before the first)."""
    return f"g{game_id}p{phase or 0}"


def phase_answered(message: Incoming, own_domain: str, game_id: int) -> int | None:
    """The phase of ``game_id`` that the message answers, by the referee's
    mail it replies to (In-Reply-To, else the newest of References that is
    ours); None when the thread does not say."""
    tagged_id = re.compile(rf"\.g(\d+)p(\d+)@{re.escape(own_domain)}>", re.I)
    for message_id in message.thread:
        if (match := tagged_id.search(message_id)) and int(match[1]) == game_id:
            return int(match[2]) or None
    return None
