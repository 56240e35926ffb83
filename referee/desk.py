"""The referee's desk: one incoming message -> who sent it -> each command
carried out -> one answer.

A pipeline in Mailman's manner, each step one small method:

1. a bounce of the referee's own mail is recorded against the player; its own
   mail come back (a list's copy: see ``_come_back``) is dropped; a
   mail to a seat's unsubscribe address (its mail's List-Unsubscribe) makes
   that seat's mail a digest, one to an observer's removes the observer,
   and is nothing else (see ``_unsubscribe``);
2. mail that must never be answered (auto-replies, lists, ourselves) is
   dropped; a reply to a notice of a mail not accepted (see 4) is read for
   nothing, only answered with how to move instead;
3. mail too large to read gets one notice (see 6);
4. the sender is identified by reply token and From (``referee.mail.tokens``);
   a seat's From without its token, or its token with another From, changes
   nothing, and the seat's real address is told, in a notice that repeats
   no word of that mail and carries no reply token; a keeper's (the config
   names them) likewise, by their keeper token, except that a keeper's
   commands from their From without it are answered, at that address only,
   with their private keeper address to send them to;
5. each line is one command (or one move), carried out in order; two
   different moves in one mail are ambiguous, and neither is made, unless
   the later one says it corrects the earlier ("actually bid 6", "bid 6
   instead": ``referee.rules.reading.correction``), which then counts;
6. one reply says, line by line, what was done, within the sender's budget
   of answers (``referee.limits``: a player's own, which unproven mail
   cannot spend; for unproven mail, one per origin, ``referee.mail.origin``,
   so one sender's mail cannot spend another's; to unproven mail, no word of
   the sender's is quoted).

Game changes go through the engine's rooms (``referee.engine.rooms``), which
the desk is handed; this module only reads and answers, and the rooms never
call it.  A keeper's commands (EXTEND, PAUSE, RESUME, CANCEL, REPLACE, SAY,
NEW, and STATUS of every game and ADDRESS of any seat) go to the rooms as
the shell's do, in the keeper's name and within the caps in the config.

Every command word has one entry in ``COMMANDS``, the command table at the
end of this module (after aiosmtpd's table of commands with their help, and
Mailman 3's registry of email commands): its words, who may use it, whether
it counts only said alone and whether it stops the reading, its handler and
its line in HELP.  The words ``referee.mail.commands`` reads a line against,
the mail that needs a reply token, the end of the reading and the HELP
answer are all the table's; the desk reaches a handler only through it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import shlex
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from referee.errors import EngineError, Refusal, Why
from referee.limits import Budget, normalised
from referee.mail.bounces import delivery_failures
from referee.mail.classify import never_answer, through_a_list
from referee.mail.commands import (
    MAX_LINES,
    Command,
    Vocabulary,
    command_lines,
    own_lines,
    without_tags,
)
from referee.mail.dkim import dkim_passed
from referee.mail.origin import origin
from referee.mail.parse import Incoming, one_line, parse
from referee.mail.tokens import (
    keeper_token,
    signup_token,
    tagged,
    token_address,
    tokens_addressed,
    tokens_named,
    unsubscribe_token,
    unwatch_token,
)
from referee.resources import rule_texts, rules_page
from referee.rules import GAMES, MoveError, kind_named, reading
from referee.rules.api import Press
from referee.standings import PAGE as STANDINGS_PAGE
from referee.store import (
    MOVE_CODES,
    DelegationRow,
    GameState,
    Notify,
    OfferRow,
    OutcomeCode,
    PressTokenRow,
    WatcherRow,
)
from referee.timeutil import iso, parse_duration, show_duration

if TYPE_CHECKING:
    from referee.engine.rooms import Rooms
    from referee.engine.seating import Wish
    from referee.store import OutboxRow
    from referee.tables import Table

log = logging.getLogger("referee")

_MAX_NOT_UNDERSTOOD = 5  # then the rest of the mail is not read (a greeting or thanks is not counted)
_RECENT_MAILS = 3  # compared with a quote in a mail whose thread names none of the referee's
_THREAD_IDS_READ = 10  # of a mail's In-Reply-To and References, looked up for a notice it answers
_RECENT_CONFIRMATIONS = 20  # of the mails last sent to a sign-up's address, looked through for its confirmation
# The words of a reply that only says yes to a confirmation ("Yes please!", "OK, count me in, thanks").
_ASSENT = frozenset(
    [
        "yes",
        "yeah",
        "yep",
        "yup",
        "y",
        "ok",
        "okay",
        "sure",
        "please",
        "confirm",
        "confirmed",
        "sign",
        "up",
        "accept",
        "accepted",
        "agreed",
        "absolutely",
        "indeed",
        "go",
        "ahead",
        "do",
        "it",
        "count",
        "me",
        "in",
        "join",
        "thanks",
        "thank",
        "you",
        "thx",
        "cheers",
        "great",
        "fine",
        "good",
    ]
)


@dataclass(frozen=True)
class Outcome:
    """What became of an ingested message."""

    code: OutcomeCode
    detail: str
    game_id: int | None = None
    keeper: bool = False  # a keeper's mail: it may have changed any game's deadlines, or made a game

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"


@dataclass(frozen=True)
class Sender:
    """Who a message is from, as far as its reply token and From prove."""

    address: str  # the From address
    game_id: int | None = None  # a running game whose seat token (with this From) it named
    seat: int | None = None
    signed: frozenset[str] = frozenset()  # kinds whose sign-up token (with this From) it named
    ended: int | None = None  # a finished game whose seat token it named
    keeper: bool = False  # a keeper's token (with this From): ``address`` is the keeper's, as configured
    offer: OfferRow | None = None  # an offer's token (with this From, the address it was made to)
    stand_in: DelegationRow | None = None  # a stand-in's token (with its From), in its turn: it speaks for ``seat``
    stood_in: DelegationRow | None = None  # a stand-in's token (with its From), after its turn ended
    press: PressTokenRow | None = None  # a relayed message's reply address (with its reader's From): an answer to it
    watcher: WatcherRow | None = None  # an observer's reply token (with their From): a game they follow

    @property
    def authenticated(self) -> bool:
        """Whether the mail proves its From: any reply token of ours with it."""
        return (
            self.game_id is not None
            or bool(self.signed)
            or self.keeper
            or self.offer is not None
            or self.watcher is not None
        )


@dataclass(frozen=True)
class Answer:
    """What one line did, for the reply: ``templates/mail/answers/<part>``."""

    line: str
    part: str
    context: dict[str, Any]
    code: OutcomeCode  # a move's code, DONE, or REFUSED


class Desk:
    """Handles one message; made afresh for each."""

    def __init__(self, rooms: Rooms, message: Incoming):
        self.store, self.config, self.key = rooms.store, rooms.config, rooms.key
        self.tables, self.post, self.phases = rooms.tables, rooms.post, rooms.phases
        self.seating, self.reports = rooms.seating, rooms.reports
        self.keeping, self.clock, self.offers = rooms.keeping, rooms.clock, rooms.offers
        self.absences = rooms.absences
        self.addresses = rooms.addresses
        self.delegating = rooms.delegating
        self.standby = rooms.standby
        self.talk = rooms.talk
        self.notices = rooms.notices
        self.observers = rooms.observers
        self.message = message
        self._line = 0  # the number of the line being carried out
        self._rules_mailed: dict[str, int] = {}  # kind -> the line whose answer holds its rules
        self._quoted: list[str] = []  # the lines of the referee's mail the message answers (see _answered)
        self._sent: dict[str, OutboxRow | None] = {}  # Message-ID -> the mail, as read (see _sent_by_id)
        self._rest_read = False  # a line took the lines below it as its own (SAY's text): they are not read

    def handle(self) -> Outcome:
        message = self.message
        bounce = self._bounce(message)
        if bounce:
            return bounce
        come_back = self._come_back(message)
        if come_back:
            return Outcome(OutcomeCode.IGNORED, come_back)
        unsubscribe = self._unsubscribe(message)
        if unsubscribe:
            return unsubscribe
        why = never_answer(message, self.config.address) or self._from_a_list(message)
        if why:
            return Outcome(OutcomeCode.IGNORED, why)
        notice = self._notice_answered(message)
        if notice is not None:
            return self._reply_to_notice(message, notice)
        # of an oversized mail, its subject
        self._quoted = self._answered(message)
        lines = command_lines(message, self._quoted, self._answered_subject)
        sender = self._identify(message, lines)
        if isinstance(sender, Outcome):
            return sender
        if message.oversized:
            refusal = Refusal(
                Why.TOO_LARGE, attempt=True, size=message.size // 1024, limit=self.config.max_message_size // 1024
            )
            self._reply(message, sender, [self._error("", refusal)])  # a player's: her own budget
            return Outcome(OutcomeCode.REFUSED, "too large to read", sender.game_id)
        if sender.press is not None:
            return self._answer_press(message, sender, sender.press)
        if sender.offer is not None and not own_lines(message.text, 1, self._quoted):
            lines = ["accept"]  # a reply to an offer that says nothing of its own (its subject aside) takes it
        elif self._assents(sender, message):
            # A reply to a sign-up's confirmation (JOIN's, STANDBY's) that says nothing of its own, or only
            # yes, confirms it, whatever became of its subject: it repeats the command the confirmation asks.
            # START in it (the sign-up's own word) starts the game too, once the sign-up is made.
            starts = [line for line in lines if _starts(line)]
            playing = {game["kind"] for game in self.store.games_of(sender.address)}
            if starts and all(self.seating.signup_of(k, sender.address) or k in playing for k in sender.signed):
                pass  # signed up already (or playing, the game begun): START alone, as written
            else:
                lines = [*(self._confirmation_asked(sender) or [line for line in lines if not _starts(line)]), *starts]
        answers = self._run_all(sender, lines)
        if sender.game_id is None or sender.seat is None or not any(a.code in MOVE_CODES for a in answers):
            self._reply(message, sender, answers)  # a mail that moved nothing changes nothing more
        elif sender.stand_in is not None:
            self._reply(message, sender, answers)  # a stand-in's receipt (to both), on its own, before the result
            self.phases.advance(sender.game_id)
        else:
            # Resolve what the moves completed only after the reply, so a
            # player reads the receipt before the result it announces (at
            # the quieter levels, at the top of the result: Post.replying).
            table = self.tables.table(sender.game_id)
            context, headers = self._reply_parts(message, sender, answers, table)
            headers.update(budget="player", origin=self._origin)  # (a seat's token proves its mail)
            with self.post.replying(table, sender.seat, context, headers):
                self.phases.advance(table.id)
        return self._outcome(sender, answers)

    # -- 1. bounces ----------------------------------------------------------

    def _bounce(self, message: Incoming) -> Outcome | None:
        """A delivery failure report about a mail the referee sent: record it
        against the address it could not reach (``status`` shows it)."""
        recorded = []
        for failure in delivery_failures(message):
            sent = failure.message_id and self.store.sent_by_id(failure.message_id)
            if not sent or failure.address not in sent["recipients"]:
                continue  # not about our mail: an ordinary bounce, ignored below
            self.store.add_bounce(
                address=failure.address,
                game_id=sent["game_id"],
                message_id=failure.message_id,
                status=failure.status,
                diagnostic=failure.diagnostic,
                at=iso(message.received_at),
            )
            recorded.append((failure, sent["game_id"]))
            log.warning("mail to %s bounced: %s %s", failure.address, failure.status, failure.diagnostic)
        if not recorded:
            return None
        failure, game_id = recorded[0]
        return Outcome(OutcomeCode.BOUNCE, f"mail to {failure.address} failed ({failure.status})", game_id)

    def _come_back(self, message: Incoming) -> str | None:
        """Why a message is the referee's own mail come back, or None: a
        list a game is announced to (``announce_to``) sends its copy on to
        its members, and the referee's address may be one.  Lists keep the
        Message-ID (Mailman, Google Groups, Sympa), whatever else they
        change; one that makes another keeps the referee as the author
        (classify.through_a_list).  Nothing in it is read or answered."""
        if message.message_id and self.store.has_mail(message.message_id):  # (not read: a mail's raw is long)
            return "the referee's own mail, come back (a list's copy)"
        if through_a_list(message, self.config.address):
            return "the referee's own mail, come back through a list"
        return None

    def _from_a_list(self, message: Incoming) -> str | None:
        """Why a message is never answered when its From is a list the
        referee copies games' public mail to (``announce_to``): an answer
        would go to every member, and anyone can put the list's address on a
        mail (a WATCH, a JOIN, a HELP in its name would mail the whole club).
        Unless it plays a seat (a keeper named a list, or a list's address,
        as a player): its moves are read as any player's."""
        sender = normalised(message.sender)
        lists = (*self.config.announce_to, *self.store.lists())
        if any(normalised(address) == sender for address in lists) and not self.store.games_of(message.sender):
            return "from a club's list the referee announces to: never answered"
        return None

    # -- 1b. unsubscribes ----------------------------------------------------

    def _unsubscribe(self, message: Incoming) -> Outcome | None:
        """A mail to a seat's unsubscribe address (the List-Unsubscribe of
        its mail: a mail client's unsubscribe button, often with no body):
        the seat's mail becomes as quiet as it gets while still prompting it
        (Notify.DIGEST), and nothing else.  Nothing in the mail is read, so
        it is never a move or a command, whatever it says or whichever
        other address of ours it names too.  The token alone is proof
        enough, whatever the From, for all it can do is make a seat's mail
        quieter; the seat's own address is told, once: an unsubscribe from
        a seat quiet already changes nothing and is not answered, so
        unsubscribes cannot loop.  Read before the auto-reply rules: a mail
        client may mark its unsubscribe mail automatic.  A mail "unsubscribe"
        to a token of ours that names no seat (a game over, a seat taken
        over, a forgery) is dropped, unanswered."""
        addressed = [
            token for token in tokens_addressed(message, self.config.address) if self.store.seat_by_token(token) is None
        ]
        if not addressed:
            return None
        # A keeper's, a sign-up's or an offer's token is no seat's unsubscribe: only the rest are looked for
        # (every running seat's token is made), so a keeper's or an offer's mail costs no such search.
        others = [token for token in addressed if self._other_token(token)]
        rest = [token for token in addressed if token not in others]
        found = self._unsubscribed_seat(rest)
        if found is None:
            watcher = self._unsubscribed_watcher(rest)
            if watcher is not None:
                return self._unwatched(message, watcher)
            if message.subject.strip().lower() == "unsubscribe" and not others:
                return Outcome(OutcomeCode.IGNORED, "an unsubscribe that names no seat still played")
            return None
        table, seat = found
        if table.seats[seat]["notify"] == Notify.DIGEST:
            return Outcome(OutcomeCode.DONE, f"seat {seat + 1} is unsubscribed already; nothing changed", table.id)
        self.notices.set_level(table, seat, Notify.DIGEST)  # (its first digest a day from now, as NOTIFY DIGEST's)
        self.post.send(
            table,
            seat,
            "unsubscribed",
            {"game": self.post.game_info(table), "referee": self.config.address},
            copy=False,  # the player's own choice: never a stand-in's news (nor theirs to undo)
            answers=message.key,
            in_reply_to=message.message_id,
            origin=self._origin,
        )
        log.info("game %d seat %d unsubscribed: its mail is a digest now", table.id, seat + 1)
        return Outcome(OutcomeCode.DONE, f"seat {seat + 1} unsubscribed: it gets prompts and a digest", table.id)

    def _unsubscribed_seat(self, tokens: list[str]) -> tuple[Table, int] | None:
        """The seat a person plays in a running game whose unsubscribe token
        is among ``tokens``, if one: the tokens are not stored, so each
        seat's is made (an HMAC each: microseconds)."""
        if not tokens:
            return None
        for game in self.store.games(GameState.RUNNING):
            for seat in self.store.seats(game["id"]):
                address = seat["address"]
                if (
                    address
                    and not seat["bot"]
                    and unsubscribe_token(self.key, game["id"], seat["seat"], address) in tokens
                ):
                    return self.tables.table(game["id"]), seat["seat"]
        return None

    def _unsubscribed_watcher(self, tokens: list[str]) -> WatcherRow | None:
        """The observer of a game not over whose unsubscribe token (an HMAC,
        not stored, as a seat's) is among ``tokens``, if one."""
        if not tokens:
            return None
        for game in self.store.games():
            if game["state"] == GameState.FINISHED:
                continue
            for watcher in self.store.watchers(game["id"]):
                if unwatch_token(self.key, game["id"], watcher["address"]) in tokens:
                    return watcher
        return None

    def _unwatched(self, message: Incoming, watcher: WatcherRow) -> Outcome:
        """A mail to an observer's unsubscribe address: they no longer
        follow the game (the token alone proves it: all it can do is stop
        mail), and are told so, once, at their address (never the From);
        a second one finds no observer, and is dropped."""
        game_id, address = watcher["game_id"], watcher["address"]
        self.observers.stop(game_id, address)
        table = self.tables.table(game_id)
        context = {"game": self.post.game_info(table), "referee": self.config.address, "unsubscribed": True}
        self.post.mail(
            game_id,
            address,
            "watch/stopped",
            context,
            answers=message.key,
            in_reply_to=message.message_id,
            origin=self._origin,
        )
        return Outcome(
            OutcomeCode.DONE, f"an observer of game {game_id} unsubscribed: they get its mail no more", game_id
        )

    def _other_token(self, token: str) -> bool:
        """Whether a token (not a seat's) is one the desk reads otherwise: a
        keeper's, the sender's sign-up's, an offer's, table talk's or an
        observer's."""
        sender = self.message.sender
        return (
            any(token == keeper_token(self.key, address) for address in self.config.keepers)
            or any(token == signup_token(self.key, kind, sender) for kind in GAMES)
            or self.store.offer_by_token(token) is not None
            or self.store.press_token(token) is not None
            or self.store.watcher_by_token(token) is not None
        )

    @cached_property
    def _origin(self) -> str:
        """Where the message came from, as the referee's own mail server says
        (referee.mail.origin): what its answers are counted by."""
        return origin(self.message, self.config.trusted_authserv_id)

    @cached_property
    def _answered_mail(self) -> OutboxRow | None:
        """The referee's mail the message's thread names, if still on record."""
        return next(filter(None, map(self._sent_by_id, self.message.thread)), None)

    def _sent_by_id(self, message_id: str) -> OutboxRow | None:
        """store.sent_by_id, asked once a message: the mail its thread names
        is looked up for what it answers and for a notice it may answer.
        Nothing this message does changes a mail already queued."""
        if message_id not in self._sent:
            self._sent[message_id] = self.store.sent_by_id(message_id)
        return self._sent[message_id]

    def _answered_subject(self) -> str:
        """The subject of the referee's mail the message answers, if known;
        "" for a confirmation whose subject is the command it confirms (JOIN
        bid, STANDBY bid): a reply that says nothing repeats that command."""
        mail = self._answered_mail
        if mail is None or (mail["budget"] == "signup" and COMMANDS.read(without_tags(mail["subject"])).word):
            return ""
        return mail["subject"]

    def _answered(self, message: Incoming) -> list[str]:
        """The lines of the referee's mail the message replies to, when it
        indents lines or has one like an attribution (a quote, perhaps, that
        only its words give away): the mail its thread names, else the last
        few sent to its From; none when those are no longer on record."""
        if not any(
            line[:1] == "\t" or line[:2] == "  " or line.rstrip().endswith(":") for line in message.text.splitlines()
        ):
            return []
        sent = self._answered_mail
        recent = [sent] if sent else self.store.last_sent_to(message.sender, _RECENT_MAILS) if message.sender else []
        return [line for mail in recent for line in _text_of(mail, message.received_at).splitlines()]

    def _assents(self, sender: Sender, message: Incoming) -> bool:
        """Whether a mail with a sign-up token (and no seat's or offer's)
        says nothing of its own, or only yes ("Yes please!", "OK, thanks"),
        as replies to a confirmation do."""
        if not sender.signed or sender.offer is not None or sender.game_id is not None:
            return False
        own = [line for line in own_lines(message.text, MAX_LINES, self._quoted) if not _starts(line)]
        if own and len(own) > 1 and any(_assent(line) for line in own[:-1]) and _sign_off(own[-1]):
            own = own[:-1]  # "Yes please!" signed "Thanks, Fay": the name below a yes is no command
        return all(_assent(line) for line in own)

    def _confirmation_asked(self, sender: Sender) -> list[str]:
        """The command the sign-up confirmation a mail answers asks to
        confirm, from a subject: the confirmation's that its thread names,
        else the reply's own where it repeats a command, else the newest
        confirmation sent to the sender with one of the mail's sign-up
        tokens; none if neither says."""
        tokens = [signup_token(self.key, kind, sender.address) for kind in sender.signed]

        def confirmation(mail: OutboxRow | None) -> bool:
            return mail is not None and mail["budget"] == "signup" and any(t in mail["subject"] for t in tokens)

        if confirmation(answered := self._answered_mail) and answered is not None:
            return [without_tags(answered["subject"])]
        if COMMANDS.read(own := without_tags(self.message.subject)).word:
            return [own]
        sent = self.store.last_sent_to(sender.address, _RECENT_CONFIRMATIONS)
        return [without_tags(mail["subject"]) for mail in sent if confirmation(mail)][:1]

    # -- 4. who is it? -------------------------------------------------------

    def _identify(self, message: Incoming, lines: list[str]) -> Sender | Outcome:
        """The sender, proven by a reply token and the From address; or, for a
        mail that must not count, the Outcome after telling the seat's owner
        (or the keeper's)."""
        tokens = tokens_named(message, self.config.address)
        keeper = self._keeper(message, tokens)
        if keeper is not None:
            return keeper
        # A token is made of what it is for (tokens.make_token: "seat", "offer", "watcher"...), so a seat's
        # is never an offer's nor an observer's: a player's move asks for neither (seat_by_token is kept).
        others = [token for token in tokens if self.store.seat_by_token(token) is None]
        offered = self._offered(message, others)
        if offered is not None:
            return offered
        watcher = self._watcher(message, others)
        if watcher is not None:
            return watcher
        ended = None
        for token in tokens:
            seat = self.store.seat_by_token(token)
            if seat is None and (stand_in := self._stand_in(message, token)) is not None:
                return stand_in
            if seat is None and (answering := self._answering(message, token)) is not None:
                return answering
            if seat is None or seat["address"] is None:
                continue
            if problem := self._unproven(message, seat["address"]):
                return self._forged_token(message, seat["game_id"], seat["address"], problem)
            game = self.tables.row(seat["game_id"])
            if game["state"] != GameState.RUNNING:
                ended = game["id"]
                continue
            return Sender(seat["address"], game["id"], seat["seat"])
        moved = self._moved(message, tokens) if ended is None else None
        if moved is not None:
            return moved
        signed = frozenset(k for k in GAMES if signup_token(self.key, k, message.sender) in tokens)
        if signed or ended is not None:
            return Sender(message.sender, signed=signed, ended=ended)
        if message.sender in self.config.keepers and any(COMMANDS.for_keeper(line) for line in lines):
            return self._keeper_address(message)
        needs_seat = any(COMMANDS.who(line) is not Who.ANYONE for line in lines)
        playing = self.store.games_of(message.sender)
        if needs_seat and playing:
            # A player's From, but no proof: perhaps forged, perhaps a fresh mail
            # instead of a reply.  Either way the player (the From) is told how.
            table = self.tables.table(playing[0]["id"]) if len(playing) == 1 else None
            return self._forged(message, message.sender, table, "no token")
        return Sender(message.sender)

    def _keeper(self, message: Incoming, tokens: list[str]) -> Sender | Outcome | None:
        """A keeper, proven as a seat is: the keeper token of an address the
        config names, and that From (and DKIM's pass, where configured); a
        keeper token with another From, or without the pass, is forged, and
        the keeper is told.  None when the mail names no keeper token."""
        keepers = {keeper_token(self.key, address): address for address in self.config.keepers}
        owner = next((keepers[token] for token in tokens if token in keepers), None)
        if owner is None:
            return None
        if problem := self._unproven(message, owner):
            return self._forged(message, owner, None, problem, keeper=True)
        return Sender(owner, keeper=True)

    def _unproven(self, message: Incoming, owner: str) -> str | None:
        """Why a mail naming the token of ``owner`` (a seat's, a keeper's, an
        offer's, a stand-in's) does not prove it is theirs: another From
        ("token", unless ``accept_token_alone``), or no DKIM pass where one
        is asked for ("dkim"); None when it proves it."""
        if message.sender != owner and not self.config.accept_token_alone:
            return "token"
        if self.config.dkim_authserv_id and not dkim_passed(message, self.config.dkim_authserv_id):
            return "dkim"
        return None

    def _offered(self, message: Incoming, tokens: list[str]) -> Sender | Outcome | None:
        """The address an offer was made to (engine.offers), proven as a
        seat is: the offer's token and that From (and DKIM's pass, where
        configured); with another From it is forged, and the offer's
        address is told. None when the mail names no offer's token."""
        offer = next(filter(None, map(self.store.offer_by_token, tokens)), None)
        if offer is None:
            return None
        if problem := self._unproven(message, offer["address"]):
            return self._forged(message, offer["address"], None, problem)
        return Sender(offer["address"], offer=offer)

    def _watcher(self, message: Incoming, tokens: list[str]) -> Sender | None:
        """An observer (engine.observers), proven as a seat is: their reply
        token and their From (and DKIM's pass, where configured).  Their
        token with another From proves nothing: the mail is read as a
        stranger's (all an observer's token can do is change or stop their
        own mail, and a stranger's UNWATCH only mails the observer a
        confirmation).  None when the mail names no observer's token."""
        for token in tokens:
            watcher = self.store.watcher_by_token(token)
            if watcher is not None and not self._unproven(message, watcher["address"]):
                return Sender(watcher["address"], watcher=watcher)
        return None

    def _moved(self, message: Incoming, tokens: list[str]) -> Outcome | None:
        """A seat's reply token that its move to another address retired
        (engine.addresses), from the address that held it (or, with
        ``accept_token_alone``, from anyone) or from the seat's address now
        (a reply to an old mail): nothing is read, and that address is told
        where to play instead, never the other address.  None when the
        mail names no such token, or from anyone else: then it proves nothing."""
        for token in tokens:
            act = self.store.moved_token(token)
            if act is None:
                continue
            table = self.tables.table(act["game_id"])
            was, now = act["detail"]["was_address"], table.seats[act["detail"]["seat"]]["address"]
            if message.sender == now:
                to = now
            elif message.sender == was or self.config.accept_token_alone:
                to = was
            else:
                continue
            context = {
                "game": self.post.game_info(table),
                "received": message.received_at,
                "moved_at": act["at"],
                "current": to == now,
                "newest": self._newest_game_mail(now, table) if to == now else None,
                "referee": self.config.address,
                "no_moves_here": to == now,
                "former": to != now,
            }
            self.post.mail(
                table.id, to, "address/old-token", context, answers=message.key, budget="player", origin=self._origin
            )
            log.info("message %s names a reply token its seat no longer has; nothing in it was read", message.key)
            return Outcome(
                OutcomeCode.REFUSED,
                f"the reply token of a seat that moved to another address; nothing in it was read; {to} was told",
                table.id,
            )
        return None

    def _stand_in(self, message: Incoming, token: str) -> Sender | Outcome | None:
        """A seat's stand-in (engine.delegating), proven as a seat is: their
        own token and their From (and DKIM's pass, where configured); with
        another From it is forged, and the stand-in is told.  In their turn
        they speak for the seat; after it, what they ask of the seat is
        refused, saying when their turn ended.  None when the token is no
        stand-in's."""
        delegation = self.store.delegation_by_token(token)
        if delegation is None:
            return None
        table = self.tables.table(delegation["game_id"])
        address = delegation["address"]
        if problem := self._unproven(message, address):
            return self._forged(message, address, table, problem)
        if table.row["state"] != GameState.RUNNING:
            return Sender(address, ended=table.id)
        if not self.delegating.in_turn(delegation, message.received_at):
            return Sender(address, stood_in=delegation)
        return Sender(address, table.id, delegation["seat"], stand_in=delegation)

    def _answering(self, message: Incoming, token: str) -> Sender | Outcome | None:
        """The reader of a message of table talk (engine.talk), answering it
        through its own reply address, proven as a seat is: that address
        and the From of the seat it went to (and DKIM's pass, where
        configured); with another From it is forged, and the seat's
        player is told.  None when the token is no such address."""
        row = self.store.press_token(token)
        if row is None:
            return None
        table = self.tables.table(row["game_id"])
        address = self.talk.reader_address(
            table, row
        )  # (whom it went to: the one who left, if the seat was taken over)
        if address is None:
            return None
        if problem := self._unproven(message, address):
            return self._forged(message, address, table, problem)
        if address != table.seats[row["seat"]]["address"]:
            return Sender(address, press=row)  # the seat is a newcomer's now: nothing is passed on
        return Sender(address, table.id, row["seat"], press=row)

    def _keeper_address(self, message: Incoming) -> Outcome:
        """A keeper's commands from their From, but not to their keeper
        address: nothing is done, and the keeper (the From, an address the
        config names, so no stranger is mailed) is sent their private
        keeper address, as a JOIN is sent its confirmation.  Whoever wrote
        the mail, only the keeper reads the answer."""
        address = message.sender
        token = keeper_token(self.key, address)
        context = {
            "game": None,
            "keeper": True,
            "referee": self.config.address,
            "received": message.received_at,
            "tag": tagged("[keeper]", token),
            "private": token_address(self.config.address, token),
            "playing": bool(self.store.games_of(address)),
        }
        self.post.mail(
            None,
            address,
            "keeper/address",
            context,
            reply_to=token_address(self.config.address, token),
            answers=message.key,
            budget="signup",  # a confirmation, as JOIN's: not a notice, whose replies are not read
            origin=self._origin,
        )
        log.info("message %s has a keeper's commands without the keeper's token; %s was told", message.key, address)
        return Outcome(
            OutcomeCode.REFUSED,
            f"a keeper's commands without the keeper's reply token; {address} was sent it",
        )

    def _forged_token(self, message: Incoming, game_id: int, owner: str, problem: str) -> Outcome:
        """A seat's token with another From, or without DKIM's pass: ``owner`` holds the seat."""
        return self._forged(message, owner, self.tables.table(game_id), problem)

    def _forged(
        self, message: Incoming, owner: str, table: Table | None, problem: str, keeper: bool = False
    ) -> Outcome:
        """A mail that claims a seat (or a keeper's place) without proving it:
        nothing changes, and the seat's real address (the keeper's, as the
        config names it; never the message's Reply-To) is told.

        The notice repeats no word the sender chose (not the subject, not a
        line), and carries no reply token: its Reply-To is the referee's plain
        address and its tag has no token, so a reply to it proves no seat,
        whatever it quotes or says (see ``_reply_to_notice``)."""
        context = {
            "game": self.post.game_info(table) if table else None,
            "problem": problem,
            "sender": message.sender,
            "owner": owner,
            "received": message.received_at,
            "newest": self._newest_game_mail(owner, table),
            "referee": self.config.address,
            "no_moves_here": True,
            "keeper": keeper,
        }
        # One such notice an hour is enough to warn, and a forger cannot use
        # them to flood the player or use up the player's own replies.
        self.post.mail(
            table.id if table else None,
            owner,
            "forged",
            context,
            answers=message.key,
            budget="notice",
            origin=self._origin,
        )
        log.warning(
            "message %s claims %s's %s without proof (%s); nothing changed",
            message.key,
            owner,
            "keeper's place" if keeper else "seat",
            problem,
        )
        detail = {
            "token": f"a {'keeper' if keeper else 'reply'} token used from another address",
            "dkim": "no passing DKIM signature of the sender's domain",
            "no token": "no valid reply token",
        }[problem]
        return Outcome(OutcomeCode.REFUSED, f"{detail}; {owner} was told", table.id if table else None)

    def _newest_game_mail(self, owner: str, table: Table | None) -> dict[str, Any] | None:
        """The newest mail to ``owner`` about the game that carries their reply
        token (its subject, the token left out, and when it was queued): what a
        notice tells them to reply to.  Only the referee's words and the owner's own."""
        seat = table.seat_of(owner) if table is not None else None
        if table is None or seat is None:
            return None
        for mail in self.store.last_sent_to(owner, _RECENT_MAILS * 3):
            if mail["game_id"] == table.id and table.tag(seat) in mail["subject"]:
                # its subject as the owner sees it, but for the token
                return {"subject": mail["subject"].replace(table.tag(seat), table.tag()), "at": mail["created_at"]}
        return None

    def _notice_answered(self, message: Incoming) -> OutboxRow | None:
        """The notice of an unaccepted mail that this message replies to (its
        thread names it, and it is from the address the notice went to), if
        any.  A notice's Message-ID is a keyed digest only its reader has seen."""
        for message_id in message.thread[:_THREAD_IDS_READ]:
            sent = self._sent_by_id(message_id)
            if (
                sent
                and sent["budget"] == "notice"
                and message.sender
                and [normalised(r) for r in sent["recipients"]] == [normalised(message.sender)]
            ):
                return sent
        return None

    def _reply_to_notice(self, message: Incoming, notice: OutboxRow) -> Outcome:
        """A reply to a notice that a mail in the sender's name was not
        accepted: nothing in it is read or carried out, not a move, not a
        RESIGN, whatever it says or quotes and whichever address it names;
        its writer is told how to move instead.  The notice's Message-ID in
        its thread shows its writer reads the owner's mail, so the answer is
        spent from the owner's own budget, which strangers cannot spend."""
        table = self.tables.table(notice["game_id"]) if notice["game_id"] is not None else None
        owner = notice["recipients"][0]
        context = {
            "game": self.post.game_info(table) if table else None,
            "received": message.received_at,
            "noticed": notice["created_at"],
            "newest": self._newest_game_mail(owner, table),
            "referee": self.config.address,
            "no_moves_here": True,
        }
        self.post.mail(
            table.id if table else None,
            owner,
            "notice-reply",
            context,
            answers=message.key,
            budget="player",
            in_reply_to=message.message_id,
        )
        log.info("message %s answers a notice to %s; nothing in it was read", message.key, owner)
        return Outcome(
            OutcomeCode.REFUSED,
            f"a reply to a notice of a mail not accepted; nothing in it was read; {owner} was told",
            table.id if table else None,
        )

    # -- 4b. an answer to table talk ---------------------------------------

    def _answer_press(self, message: Incoming, sender: Sender, reply: PressTokenRow) -> Outcome:
        """A reply to a relayed message of table talk: all the reader wrote
        (up to END), quoted lines aside, is passed on to its writer alone
        (engine.talk); none of it is read as a move or a command, whatever
        it says.  The reader is answered as for a TELL."""
        text = "\n".join(self._text_below(0))
        try:
            if sender.game_id is None:  # (the reader's seat was taken over since: see _answering)
                raise Refusal(Why.TELL_WHO, name="", problem="replaced", names=[])
            table, _ = self._seat(sender, Command("", "", ""))
            answer = Answer("", "tell", self.talk.answer(table, reply, text), OutcomeCode.DONE)
        except Refusal as refusal:
            answer = self._error("", refusal)
        self._reply(message, sender, [answer])
        return Outcome(answer.code, f"an answer to table talk: {answer.code}", reply["game_id"])

    # -- 5. the commands ---------------------------------------------------

    def _run_all(self, sender: Sender, lines: list[str]) -> list[Answer]:
        answers: list[Answer] = []
        commands = [COMMANDS.read(line, keeper=sender.keeper) for line in lines[:MAX_LINES]]
        moves, taken_back, meant, taken_within = self._moves_in(sender, commands)
        standing = {number: move for number, move in moves.items() if number not in taken_back}
        made: dict[str, int] = {}  # a move's text -> the line that made it
        for number, (line, command) in enumerate(zip(lines, commands), 1):
            self._line = number
            if COMMANDS.stops(command):
                answers.append(self._run(sender, command))
                return answers
            move = moves.get(number)
            if move is not None and len(set(standing.values())) > 1:
                answers.append(self._ambiguous(line, moves, lines))
            elif move is not None and number in taken_back:
                by = taken_back[number]
                answers.append(
                    Answer(line, "taken-back", {"move": move, "number": by, "by": lines[by - 1]}, OutcomeCode.DONE)
                )
            elif move is not None and move in made:
                answers.append(Answer(line, "repeat", {"move": move, "number": made[move]}, OutcomeCode.DONE))
            else:
                answers.append(self._run(sender, command, meant.get(number)))
                if number in taken_within:  # said in the answer, played or refused
                    answers[-1].context["taken_within"] = taken_within[number]
                if move is not None:
                    made[move] = number
                if self._rest_read:  # the lines below were its own (SAY's text)
                    return answers
            if (
                sum(a.code == OutcomeCode.REFUSED and not reading.courtesy(a.line) for a in answers)
                >= _MAX_NOT_UNDERSTOOD
                and max(moves, default=0) <= number
            ):
                answers.append(Answer("...", "stop", {"errors": True}, OutcomeCode.REFUSED))
                return answers
        if len(lines) > MAX_LINES:
            answers.append(Answer("...", "stop", {"lines": MAX_LINES}, OutcomeCode.REFUSED))
        if not answers:
            answers.append(self._error("", Refusal(Why.NO_COMMAND, legal=True, attempt=True), sender))
        return answers

    def _moves_in(
        self, sender: Sender, commands: list[Command]
    ) -> tuple[dict[int, str], dict[int, int], dict[int, str], dict[int, str]]:
        """The moves the lines ask for (line number -> the move's text), read
        before any is made: a seat's, in the phase open to it; the lines of
        those taken back by a correction below them (line number -> the
        correction's); what a correction without the verb means, read
        with the verb of the move it corrects ("make it 6" under "bid 5":
        "bid 6"), or what a line that takes back its own move means ("bid 5
        no wait, bid 6": "bid 6"); and the move each such line took back.
        A correction ("actually bid 6") takes back every different move
        above it, so only what stands after the last one can be ambiguous;
        so does one that cannot be played but asks for a move ("actually bid
        Q", the queen spent), which then makes none.  A line that corrects
        only itself takes back nothing above it."""
        if sender.game_id is None or sender.seat is None:
            return {}, {}, {}, {}
        table = self.tables.table(sender.game_id)
        phase = table.open_phase if table.row["state"] == GameState.RUNNING else None
        if phase is None or sender.seat not in phase["movers"] or not table.human(sender.seat):
            return {}, {}, {}, {}
        moves: dict[int, str] = {}
        taken_back: dict[int, int] = {}
        meant: dict[int, str] = {}
        taken_within: dict[int, str] = {}
        for number, command in enumerate(commands, 1):
            if COMMANDS.stops(command) or (command.word == "tell" and not _told(command.line).text):
                break  # nothing below is read (as a move: a TELL's words below it are its own)
            if command.word:
                continue
            move = self._move_of(table, sender.seat, command.line)
            if move is None and (within := self._corrected_within(table, sender.seat, command.line)) is not None:
                meant[number], move, taken_within[number] = within
            corrected = reading.correction(command.line, table.rules.verbs)
            if corrected is None or not moves:
                if move is not None:
                    moves[number] = move
                continue
            if move is None and number not in meant:
                with_verb = self._with_verb(table, command.line, corrected, moves[max(moves)])
                if with_verb is not None:
                    meant[number] = with_verb
                    move = self._move_of(table, sender.seat, with_verb)
                if move is None and not self._asks_a_move(table, sender.seat, corrected, with_verb, moves[max(moves)]):
                    continue  # "Sorry, I'm late": a courtesy, no correction
            taken_back |= {above: number for above, said in moves.items() if said != move and above not in taken_back}
            if move is not None:
                moves[number] = move
        return moves, taken_back, meant, taken_within

    def _corrected_within(self, table: Table, seat: int, line: str) -> tuple[str, str | None, str] | None:
        """A line that takes back its own move ("bid 5 no wait, bid 6"): what
        it is read as (with the verb of the move taken back where it has
        none: "bid 5 - no, make it 6" -> "bid 6"), the move that is if it can
        be played now, and the move taken back.  None when the line is no
        such thing: no move before the words that take back, none asked for
        after them, or a question."""
        rules = table.rules
        within = reading.corrected_within(line)
        if within is None or reading.is_question(line):
            return None
        before, after = within
        taken = self._move_of(table, seat, before)
        if taken is None and not rules.looks_like_move(before):
            return None
        taken = taken or reading.move_line(before, rules.verbs)
        corrected = reading.correction(after, rules.verbs)
        if corrected is None:
            return None
        with_verb = self._with_verb(table, line, corrected, taken)
        said = with_verb or reading.move_line(corrected, rules.verbs)
        move = self._move_of(table, seat, said)
        if move is None and not self._asks_a_move(table, seat, corrected, with_verb, taken):
            return None  # "bid 5 sorry for the delay": the game says what it makes of that
        return said, move, taken

    def _with_verb(self, table: Table, line: str, corrected: str, above: str) -> str | None:
        """A correction's words without a verb ("6" of "make it 6"), given
        the verb of the move above it that it corrects ("bid 5": "bid 6"),
        still a question if the line asked one ("actually 6?" is no move);
        None when they start with a verb of their own."""
        if table.rules.looks_like_move(corrected) or reading.phrase(corrected, table.rules.verbs) is not None:
            return None
        return f"{above.split(' ', 1)[0]} {corrected}{'?' if reading.is_question(line) else ''}"

    def _asks_a_move(self, table: Table, seat: int, corrected: str, with_verb: str | None, above: str) -> bool:
        """Whether a correction that cannot be played asks for a move all the
        same (a card spent, a bid the game reads only as a suggestion, the
        words of a move without its verb: "make it Q", "make it 2" under "bid
        purple 1", "make it blue" under "play 1 on red"), so that it takes
        back the move above it; "Actually, thanks for running this!" and
        "Sorry, 2 minutes late" do not."""
        rules = table.rules
        said = reading.move_line(corrected, rules.verbs).lower().split()
        return (
            # a verb of the game's first: Auction's looks_like_move takes a bare number too ("Sorry, 2 minutes late")
            (bool(said) and said[0] in rules.verbs)
            or rules.suggest(table.state, seat, corrected) is not None
            or (with_verb is not None and rules.suggest(table.state, seat, with_verb) is not None)
            or self._words_of_a_move(table, seat, corrected, above)
        )

    def _words_of_a_move(self, table: Table, seat: int, corrected: str, above: str) -> bool:
        """Whether every word of a correction is a word of a move: a number,
        a capital letter but "I" (a card: "Q", spent or not), or a word of the move
        it corrects or of one the seat may make now ("blue", "L-yellow")."""
        rules = table.rules
        known = {word for move in rules.legal_moves(table.state, seat) for word in rules.move_text(move).split()}
        known = {word.lower() for word in known | set(above.split())}
        said = reading.clean(corrected).split()
        return bool(said) and all(
            word.isdigit() or (len(word) == 1 and word.isupper() and word != "I") or word.lower() in known
            for word in said
        )

    def _move_of(self, table: Table, seat: int, line: str) -> str | None:
        """The move a line asks for, as its text, or None."""
        try:
            return table.rules.move_text(table.rules.read_move(table.state, seat, line))
        except MoveError:
            return None

    def _ambiguous(self, line: str, moves: dict[int, str], lines: list[str]) -> Answer:
        """Two different moves in one mail: neither is made, both are quoted."""
        asked = [{"number": number, "line": lines[number - 1], "move": move} for number, move in moves.items()]
        return self._error(line, Refusal(Why.AMBIGUOUS, attempt=True, asked=asked))

    def _run(self, sender: Sender, command: Command, meant: str | None = None) -> Answer:
        """The line carried out: by its command's handler, else as a move.
        A keeper's command from anyone else is refused as such, unless it
        reads as a move of the sender's game (the keeper's words are read
        only for a keeper: see CommandTable.read)."""
        entry = COMMANDS.entry(command.word)
        try:
            if (
                entry is None
                and (word := COMMANDS.keeper_word(command.line))
                and not self._looks_like_move(sender, command)
            ):
                raise Refusal(Why.KEEPERS_ONLY, word=word, legal=True)  # a seat's moves listed, as for any line
            if entry is None:
                return self._do_move(sender, command, meant)
            return entry.handler(self, sender, command)
        except Refusal as refusal:
            return self._error(command.line, refusal, sender)

    def _looks_like_move(self, sender: Sender, command: Command) -> bool:
        """Whether a line looks like a move of the sender's game (whether or
        not it is legal now)."""
        if sender.game_id is None or sender.seat is None:
            return False
        return self.tables.table(sender.game_id).rules.looks_like_move(command.line)

    def _error(self, line: str, refusal: Refusal, sender: Sender | None = None) -> Answer:
        """An answer that quotes the line, says why (the refusal in the
        templates' words), and lists what is legal now when the refusal
        says to (for a line that is no attempt at a move, such as "Hi,",
        only when the mail made no move, and once), or the move it most
        likely meant."""
        context: dict[str, Any] = {
            "reason": self.post.composer.refusal(refusal, self.store.timezone(sender.address) if sender else None),
            "legal": [],
            "more_legal": False,
            "attempt": refusal.attempt,
            "suggestion": refusal.suggestion,
            "elsewhere": self._move_elsewhere(sender, line) if refusal.code in _MAYBE_ELSEWHERE else None,
        }
        if refusal.legal and sender is not None and sender.game_id is not None:
            table = self.tables.table(sender.game_id)
            phase = table.open_phase
            if phase and sender.seat in phase["movers"] and table.human(sender.seat):
                context.update(self.post.legal(table, sender.seat))
            context["game"] = self.post.game_info(table)
        return Answer(line, "error", context, OutcomeCode.REFUSED)

    def _move_elsewhere(self, sender: Sender | None, line: str) -> dict[str, Any] | None:
        """Another running game of the sender's of which the line, no move of
        the game its mail is about, is a move (its number and title): "bid 5"
        sent in reply to Auction's mail by a player who also plays Bid!."""
        if sender is None or sender.game_id is None or sender.stand_in is not None or not line:
            return None
        if self.tables.table(sender.game_id).rules.looks_like_move(line):
            return None  # a move of this game, only not now or not legal: said so
        for row in self.store.games_of(sender.address):
            kind = GAMES.get(row["kind"])
            if row["id"] == sender.game_id or kind is None or not kind.looks_like_move(line):
                continue  # (read by its kind's words first: a game is costlier to load)
            other = self.tables.table(row["id"])
            seat = other.seat_of(sender.address)
            if seat is None or not other.human(seat):
                continue
            try:
                other.rules.read_move(other.state, seat, line)
            except MoveError:
                continue
            return {"id": other.id, "title": other.rules.title}
        return None

    def _seat(self, sender: Sender, command: Command) -> tuple[Table, int]:
        """The game a seat's command is about, and the seat; refused when the
        mail proves no seat."""
        if sender.game_id is None or sender.seat is None:  # (a token proves both, or neither)
            if sender.ended is not None:
                raise Refusal(Why.SEAT_ENDED, game=sender.ended)
            if (over := sender.stood_in) is not None:
                at = min(over["until"], over["ended_at"] or over["until"])
                raise Refusal(Why.STAND_IN_OVER, game=over["game_id"], seat=over["seat"], at=at)
            if not command.word:
                raise Refusal(Why.UNKNOWN_COMMAND)
            raise Refusal(Why.NEEDS_SEAT, word=command.word)
        table = self.tables.table(sender.game_id)
        if table.row["state"] != GameState.RUNNING:
            raise Refusal(Why.GAME_ENDED, game=table.id)
        if not table.human(sender.seat):
            raise Refusal(Why.RESIGNED, game=table.id)
        return table, sender.seat

    def _do_move(self, sender: Sender, command: Command, meant: str | None = None) -> Answer:
        """The line played as a move; ``meant``: read as that text instead (a
        correction without its verb, "make it 6" -> "bid 6"), the line
        still quoted."""
        table, seat = self._seat(sender, command)
        rules = table.rules
        text = meant or command.line
        if table.open_phase is not None:  # a reply about a phase that is over
            self.phases.check_thread(table, table.open_phase, seat, self.message)
        try:
            move = rules.read_move(table.state, seat, text)
        except MoveError as error:
            if table.open_phase is not None:  # out of turn, what was wrong with it matters less
                self.phases.check_mover(table, table.open_phase, seat)
            suggestion = rules.suggest(table.state, seat, command.line) or (
                meant and rules.suggest(table.state, seat, meant)
            )
            if rules.looks_like_move(text) and not reading.courtesy(command.line):  # "Keep well," is no Bluff keep
                raise Refusal(Why.BAD_MOVE, legal=True, attempt=True, suggestion=suggestion, error=str(error)) from None
            raise Refusal(
                Why.NOT_UNDERSTOOD, legal=suggestion is None, suggestion=suggestion, line=command.line, error=str(error)
            ) from None
        code, context = self.phases.take_move(table, seat, move, self.message)
        return Answer(command.line, "move", context, code)

    def _do_status(self, sender: Sender, command: Command) -> Answer:
        if sender.keeper:
            return self._keeper_status(command)
        table, seat = self._seat(sender, command)
        phase = table.open_phase
        context = self.post.context(table, seat)
        owed = table.waiting_for(phase) if phase else []
        moved = [table.label(s) for s in phase["movers"] if s not in owed] if phase else []
        context.update(
            moved=moved, waiting=[table.label(s) for s in owed], timezone=self.store.timezone(sender.address)
        )
        return Answer(command.line, "status", context, OutcomeCode.DONE)

    def _do_hand(self, sender: Sender, command: Command) -> Answer:
        table, seat = self._seat(sender, command)
        return Answer(command.line, "hand", self.post.context(table, seat), OutcomeCode.DONE)

    def _own_seat(self, sender: Sender, command: Command) -> tuple[Table, int]:
        """As ``_seat``, for a command that is the seat's player's alone: a
        stand-in moves for the seat, but never gives it up or away, moves it, nor spends its time away."""
        table, seat = self._seat(sender, command)
        if sender.stand_in is not None:
            raise Refusal(Why.STAND_IN_CANNOT, word=command.word)
        return table, seat

    def _do_resign(self, sender: Sender, command: Command) -> Answer:
        table, seat = self._own_seat(sender, command)
        self.seating.resign_seat(table, seat, confirm=False)
        return Answer(command.line, "resign", self.post.context(table), OutcomeCode.DONE)

    def _do_delegate(self, sender: Sender, command: Command) -> Answer:
        """DELEGATE bob@example.org UNTIL 2026-12-10 (a date or a time, in the
        player's TIMEZONE, else UTC), DELEGATE bob@example.org 5d (or "for
        5d"), DELEGATE NONE: see engine.delegating."""
        table, seat = self._own_seat(sender, command)
        words = command.argument.split()
        words = words[1:] if words and words[0].lower() == "to" else words  # "DELEGATE to bob@example.org ..."
        if [word.lower() for word in words] == ["none"]:
            return Answer(command.line, "delegate", self.delegating.stop(table, seat), OutcomeCode.DONE)
        if len(words) < 2:
            raise Refusal(Why.DELEGATE_HOW)
        address, said = words[0].strip("<>,;"), words[1:]
        when = " ".join(said[1:] if said[0].lower() in ("until", "till", "for") else said)
        try:
            if said[0].lower() != "until" and _is_duration(when):
                until = self.clock() + parse_duration(when)
            else:
                until = _utc_moment(when, self.store.timezone(sender.address))
        except ValueError:
            raise Refusal(Why.DELEGATE_HOW, said=when) from None
        return Answer(command.line, "delegate", self.delegating.ask(table, seat, address, until), OutcomeCode.DONE)

    def _do_accept(self, sender: Sender, command: Command) -> Answer:
        return self._answer_offer(sender, command, True)

    def _do_reject(self, sender: Sender, command: Command) -> Answer:
        return self._answer_offer(sender, command, False)

    def _answer_offer(self, sender: Sender, command: Command, accepted: bool) -> Answer:
        """The answer to an offer (engine.offers) this mail replies to."""
        if sender.offer is None:
            raise Refusal(Why.NO_OFFER, word=command.word)
        offer = self.store.offer(sender.offer["id"]) or sender.offer  # as of now: a line above may have answered it
        try:
            done = self.offers.answer(offer, accepted)
        except EngineError as error:
            raise Refusal(Why.OFFER_CLOSED, reason=str(error)) from None
        return Answer(command.line, "offer", {"done": done, "accepted": accepted}, OutcomeCode.DONE)

    def _do_help(self, sender: Sender, command: Command) -> Answer:
        """The commands, as the table lists them, and the games."""
        table = self.tables.table(sender.game_id) if sender.game_id is not None else None
        context = {
            "game": self.post.game_info(table) if table else None,
            "kinds": [{"kind": k, "title": g.title, "seats": g.seat_range} for k, g in GAMES.items()],
            **COMMANDS.help(keeper=sender.keeper),
            "longest_extension": show_duration(self.config.longest_extension),
            "most_pause": show_duration(self.config.most_pause),
            "most_away": show_duration(self.config.most_away),
        }
        return Answer(command.line, "help", context, OutcomeCode.DONE)

    def _do_end(self, sender: Sender, command: Command) -> Answer:
        """END or QUIT: the rest of the mail is not read (the table says it stops)."""
        return Answer(command.line, "stop", {}, OutcomeCode.DONE)

    def _do_rules(self, sender: Sender, command: Command) -> Answer:
        """A game's rules and the referee's rulings: the game named, else the
        game the mail is about (its seat's, a finished game's or its one
        sign-up's); with the site's address known, their page there, else
        the texts themselves, one game's a mail (they run to 10-26 kB).
        With no game named or known, the games and how to ask."""
        named = command.argument.strip()
        of, _, rest = named.partition(" ")
        named = rest if of.lower() in ("of", "for") else named  # "rules of bluff", "rules for ice"
        kind = kind_named(named) if named else self._kind_of(sender)
        site = self.config.site_url
        if named and kind is None:
            raise Refusal(Why.NO_SUCH_GAME, kinds=list(GAMES), command="rules")
        if kind is None:
            kinds = [{"kind": k, "title": g.title, "url": site and f"{site}/{rules_page(k)}"} for k, g in GAMES.items()]
            return Answer(command.line, "rules", {"kinds": kinds}, OutcomeCode.DONE)
        context: dict[str, Any] = {
            "kind": kind,
            "title": GAMES[kind].title,
            "url": site and f"{site}/{rules_page(kind)}",
        }
        if not site:
            if kind in self._rules_mailed:
                context["above"] = self._rules_mailed[kind]
            elif self._rules_mailed:
                context["other"] = GAMES[next(iter(self._rules_mailed))].title
            else:
                self._rules_mailed[kind] = self._line
                context["rules"], context["rulings"] = rule_texts(kind)
        return Answer(command.line, "rules", context, OutcomeCode.DONE)

    def _kind_of(self, sender: Sender) -> str | None:
        """The kind of game a mail is about, by the token it names, if one."""
        game_id = sender.game_id if sender.game_id is not None else sender.ended
        if game_id is not None:
            game = self.store.game(game_id)
            return game["kind"] if game is not None else None
        return next(iter(sender.signed)) if len(sender.signed) == 1 else None

    def _do_list(self, sender: Sender, command: Command) -> Answer:
        return Answer(command.line, "list", self.reports.listing(), OutcomeCode.DONE)

    def _do_standings(self, sender: Sender, command: Command) -> Answer:
        """STANDINGS, or STANDINGS <game>: every player's games, wins, places
        and share of moves by mail over the finished games (of that kind),
        by name, as the site's standings page shows them."""
        named = command.argument.strip()
        kind = kind_named(named) if named else None
        if named and kind is None:
            raise Refusal(Why.NO_SUCH_GAME, kinds=list(GAMES), command="standings")
        site = self.config.site_url
        context = {**self.reports.standings(kind), "url": site and f"{site}/{STANDINGS_PAGE}"}
        return Answer(command.line, "standings", context, OutcomeCode.DONE)

    def _kind_asked(self, sender: Sender, named: str) -> str:
        """The kind of game a line names ("" for none); none named, the kind
        of the one sign-up token the mail carries, if one."""
        if named:
            return kind_named(named) or named.lower()
        return next(iter(sender.signed)) if len(sender.signed) == 1 else ""

    def _confirm_first(self, sender: Sender, kind: str, word: str, **more: Any) -> None:
        """Mail ``sender`` the confirmation of a command (``word``: JOIN's,
        STANDBY's; its template ``<word>-confirm``) to reply to, whose reply
        address carries the sign-up token of ``kind``: the reply proves the
        address reads its mail, and its subject repeats the command."""
        token = signup_token(self.key, kind, sender.address)
        context: dict[str, Any] = {
            "kind": kind,
            "title": GAMES[kind].title,
            "tag": tagged(f"[{kind}]", token),
            "game": None,
            "referee": self.config.address,
            **more,
        }
        sent = self.post.mail(
            None,
            sender.address,
            f"{word}-confirm",
            context,
            reply_to=token_address(self.config.address, token),
            answers=self.message.key,
            budget="signup",
            origin=self._origin,
        )
        if not sent:
            raise Refusal(Why.TOO_MANY_MAILS, command=word.upper())

    def _do_join(self, sender: Sender, command: Command) -> Answer:
        """JOIN <kind> [<seats>] [<option>=<value>...] [press=...]: the oldest
        open game of the kind with what it names (else a new one); JOIN
        <number>: that open game.  From mail that proves no sign-up of the
        kind, a confirmation to reply to first, naming the game it would
        join (or the JOIN that opens one)."""
        number, wish = self._join_asked(sender, command.argument)
        game = self.store.game(number) if number is not None else None
        if wish is not None:
            game = self.seating.matching(wish)
        if number is not None and (game is None or game["state"] == GameState.FINISHED):
            raise Refusal(Why.NO_OPEN_GAME, game=number)
        kind = game["kind"] if game is not None else wish.kind if wish is not None else ""
        title = GAMES[kind].title
        if game is not None and game["state"] == GameState.RUNNING and not GAMES[kind].bots_replaceable:
            raise Refusal(Why.JOIN_BEGUN, game=game["id"], kind=kind, title=title)
        if kind not in sender.signed:
            asked = f"JOIN game {game['id']}" if game is not None else wish.command if wish is not None else ""
            shown = self.reports.listing(game["id"])["open"] if game is not None else []
            self._confirm_first(sender, kind, "join", command=asked, open=shown[0] if shown else None)
            return Answer(command.line, "join", {"confirm": True, "title": title}, OutcomeCode.DONE)
        if game is not None and game["state"] == GameState.RUNNING:
            if self.tables.table(game["id"]).seat_of(sender.address) is not None:  # (an old confirmation's reply)
                raise Refusal(Why.PLAYS_ALREADY, game=game["id"])
            return self._beyond_seats(command, game["id"], kind, sender.address)
        if game is not None:
            game_id, started = self.seating.join_game(game["id"], sender.address)
        elif wish is not None:
            game_id, started = self.seating.join(wish, sender.address, self.message.key)
        context = {
            "confirm": False,
            "beyond": False,
            "signed": True,  # a sign-up made: its answer is its confirmation (Desk._reply)
            "title": title,
            "game_id": game_id,
            "started": started,
            "signup": self.reports.listing(game_id),
            "window": show_duration(self.config.signup_window),
            "least": GAMES[kind].min_seats,
        }
        return Answer(command.line, "join", context, OutcomeCode.DONE)

    def _beyond_seats(self, command: Command, game_id: int, kind: str, address: str) -> Answer:
        """A JOIN of a game that began (its seats filled) before it was
        confirmed: onto the standby list of its kind instead."""
        added = self.standby.join(kind, address)
        place, waiting = self.standby.place(kind, address)
        context = {
            "confirm": False,
            "beyond": True,
            "signed": added,
            "game_id": game_id,
            "title": GAMES[kind].title,
            "kind": kind,
            "place": place,
            "waiting": waiting,
            "answer": show_duration(self.config.standby_answer),
        }
        return Answer(command.line, "join", context, OutcomeCode.DONE)

    def _join_asked(self, sender: Sender, argument: str) -> tuple[int | None, Wish | None]:
        """What a JOIN line asks for: a game by its number (JOIN 12, JOIN
        game 12), else a kind (the one sign-up token's, when the line names
        none) with the seats, options and press it names, checked."""
        words = _SPACED_EQUALS.sub("=", argument).replace(",", " ").split()  # (the reading spaces out "=")
        said = [w.lower() for w in words]
        if len(said) in (1, 2) and said[-1].isdigit() and said[:-1] in ([], ["game"]) and int(said[-1]) > 0:
            return int(said[-1]), None
        seats: int | None = None
        options: dict[str, str] = {}
        press, named = None, []
        for word in words:
            key, is_option, value = word.partition("=")
            key = key.strip().lower().replace("-", "_")
            if is_option and key == "press":
                press = value
            elif is_option:
                options[key] = value
            elif word.isdigit() and seats is None:
                seats = int(word)
            elif word.lower() not in _JOIN_FILLER:
                named.append(word)
        kind = self._kind_asked(sender, " ".join(named))
        if kind not in GAMES:
            raise Refusal(Why.NO_SUCH_GAME if kind else Why.JOIN_WHICH, kinds=list(GAMES))
        return None, self.seating.wish(kind, seats, options, press)

    def _do_start(self, sender: Sender, command: Command) -> Answer:
        """START: start the open game the sender is signed up for as soon as
        it has its least players and everyone signed up has sent START."""
        # In the games' order (GAMES), never a set's (whose order is the process's hash seed's): a mail that
        # names two kinds' sign-up tokens starts the same game each time it is handled (after a restore too).
        kinds = [k for k in GAMES if k in sender.signed and self.seating.signup_of(k, sender.address) is not None]
        if not kinds:
            known = self._kind_of(sender)
            asked = set(sender.signed) or ({known} if known else set())
            begun = [game for game in self.store.games_of(sender.address) if game["kind"] in asked]
            if begun:  # the game they signed up for began (its seats filled) before their START came
                raise Refusal(Why.START_BEGUN, game=begun[-1]["id"], title=GAMES[begun[-1]["kind"]].title)
            raise Refusal(Why.START_NOT_SIGNED, title=GAMES[known].title if known else "any kind")
        started = self.seating.start(kinds[0], sender.address)
        context = {
            "title": GAMES[kinds[0]].title,
            "game_id": started.game_id,
            "started": started.started,
            "more": started.more,
            "waiting": list(started.waiting),
            "window": show_duration(self.config.signup_window),
        }
        return Answer(command.line, "start", context, OutcomeCode.DONE)

    def _do_leave(self, sender: Sender, command: Command) -> Answer:
        if sender.game_id is not None:
            raise Refusal(Why.LEAVE_BEGUN, game=sender.game_id)
        kinds = [k for k in GAMES if k in sender.signed and self.seating.signup_of(k, sender.address) is not None]
        if not kinds:
            raise Refusal(Why.LEAVE_NOT_SIGNED)
        for kind in kinds:
            self.seating.leave(kind, sender.address)
        return Answer(command.line, "leave", {"titles": [GAMES[k].title for k in kinds]}, OutcomeCode.DONE)

    def _do_standby(self, sender: Sender, command: Command) -> Answer:
        """STANDBY <game>, or STANDBY <game> OFF: onto (or off) the list of
        those offered a seat a player leaves mid-game (engine.standby). From
        mail that proves no address (a reply to any of the referee's mails
        to it does), a confirmation to reply to first, as for JOIN."""
        words = command.argument.split()
        off = bool(words) and words[-1].lower() == "off"
        kind = self._kind_asked(sender, " ".join(words[:-1] if off else words))
        if kind not in GAMES:
            listed = [k for k, game in GAMES.items() if game.bots_replaceable]  # those with a standby list
            if kind:
                raise Refusal(Why.NO_SUCH_GAME, kinds=listed, command="standby")
            raise Refusal(Why.STANDBY_WHICH, kinds=listed)
        title = GAMES[kind].title
        if not GAMES[kind].bots_replaceable:
            raise Refusal(Why.NO_STANDBY, title=title)
        context: dict[str, Any] = {"title": title, "kind": kind, "off": off, "confirm": not sender.authenticated}
        if not sender.authenticated:
            self._confirm_first(sender, kind, "standby", off=off)
        elif off:
            context["was_on"] = self.standby.leave(kind, sender.address)
        else:
            context["added"] = self.standby.join(kind, sender.address)
            context["place"], context["waiting"] = self.standby.place(kind, sender.address)
            context["answer"] = show_duration(self.config.standby_answer)
        return Answer(command.line, "standby", context, OutcomeCode.DONE)

    def _do_timezone(self, sender: Sender, command: Command) -> Answer:
        if not sender.authenticated:
            raise Refusal(Why.TIMEZONE_UNPROVEN)
        zone = command.argument.strip()
        if zone.upper() in ("UTC", "GMT", "NONE", "OFF"):
            self.store.set_timezone(sender.address, None)
            return Answer(command.line, "timezone", {"zone": None}, OutcomeCode.DONE)
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: "Europe" is a folder
            raise Refusal(Why.UNKNOWN_ZONE, zone=zone) from None
        self.store.set_timezone(sender.address, zone)
        return Answer(command.line, "timezone", {"zone": zone}, OutcomeCode.DONE)

    def _do_away(self, sender: Sender, command: Command) -> Answer:
        """AWAY 5d, AWAY until 2026-12-10, AWAY 2026-12-03 to 2026-12-10
        (dates in the player's TIMEZONE, else UTC; a date "to" is the whole
        of it), AWAY 2026-12-03 for 5d; words after it are a reason, for
        the keepers alone."""
        self._own_seat(sender, command)
        try:
            start, until, why = away_time(_words_after(command), self.clock(), self.store.timezone(sender.address))
        except ValueError as error:
            raise Refusal(Why.AWAY_USAGE, problem=str(error)) from None
        context = self._time_away(
            sender, command, lambda table, seat: self.absences.away(table, seat, start, until, why)
        )
        return Answer(command.line, "away", context, OutcomeCode.DONE)

    def _do_back(self, sender: Sender, command: Command) -> Answer:
        context = self._time_away(sender, command, self.absences.back)
        return Answer(command.line, "back", context, OutcomeCode.DONE)

    def _time_away(
        self, sender: Sender, command: Command, act: Callable[[Table, int], dict[str, Any]]
    ) -> dict[str, Any]:
        """AWAY's or BACK's ``act`` on the seat, after what fell due before
        the mail came is done, as of then (a deadline passed unread: the
        time away meets the game as it is, as a keeper's act does), all of
        it or nothing (a Refusal undoes it)."""
        table, _ = self._own_seat(sender, command)  # (the seat's player's time away, never its stand-in's)
        with self.store.transaction():
            self.phases.advance(table.id, deadlines=True)
            return act(*self._seat(sender, command))

    def _do_address(self, sender: Sender, command: Command) -> Answer:
        """ADDRESS new@example.net: the seat the mail proves plays from that
        address once it confirms (engine.addresses); ALL after it, every
        seat and sign-up of the sender's; the address played from already
        takes back a change not yet confirmed.  A keeper's ADDRESS <game>
        <seat> <new> [<why>] moves a seat at once."""
        if sender.keeper:
            return self._keeper_moves_seat(sender, command)
        words = command.argument.split()
        every = len(words) == 2 and words[1].lower() == "all"
        if len(words) != 1 and not every:
            raise Refusal(Why.ADDRESS_REFUSED, reason=f"write it as {_ADDRESS_USAGE}")
        if sender.game_id is not None or not sender.signed:
            self._own_seat(sender, command)  # a running game's seat its player plays, else the refusal that says so
        try:
            with self.store.transaction():
                asked = self.addresses.ask(sender.address, words[0], sender.game_id, sender.signed, every)
        except EngineError as error:
            raise Refusal(Why.ADDRESS_REFUSED, reason=str(error)) from None
        return Answer(command.line, "address", asked, OutcomeCode.DONE)

    def _keeper_moves_seat(self, sender: Sender, command: Command) -> Answer:
        game_id, words = self._keeper_game(command)
        seat, words = _seat_named(words)
        if seat is None or not words:
            entry = COMMANDS.entry("address")
            assert entry is not None
            raise Refusal(
                Why.KEEPER_USAGE,
                usage=entry.keeper_usage,
                example=_KEEPER_ADDRESS_EXAMPLE,
                problem="name the seat and its new address",
            )
        address, why = words[0].strip("<>,;"), " ".join(words[1:])
        return self._keeper_does(sender, command, lambda who: self.addresses.move(game_id, seat, address, who, why))

    def _do_notify(self, sender: Sender, command: Command) -> Answer:
        """NOTIFY EVERY, TURNS or DIGEST: how much mail the seat gets from
        now on; NOTIFY alone: how much it gets now.  From an observer (in a
        reply to their copy of a game's mail), the same of their copies."""
        if sender.game_id is None and sender.watcher is not None:
            return self._observer_notify(sender, command)
        table, seat = self._seat(sender, command)
        said = command.argument.strip().rstrip(".!").strip()
        news: list[str] = []
        if said and sender.stand_in is not None:  # the player's own mail: theirs to choose (as the unsubscribe)
            raise Refusal(Why.STAND_IN_CANNOT, word=command.word)
        if said:
            level = next((level for level in Notify if level.value == said.lower()), None)
            if level is None:
                raise Refusal(Why.UNKNOWN_LEVEL, level=said)
            news = self.notices.set_level(table, seat, level)  # (leaving DIGEST: what its digest was to say)
            table = self.tables.table(table.id)
        context = {
            "game": self.post.game_info(table),
            "news": news,
            "level": self.post.level(table, seat).value,
            "changed": bool(said),
            "own": table.seats[seat]["notify"] is not None,  # else the game's (or the referee's) default
        }
        return Answer(command.line, "notify", context, OutcomeCode.DONE)

    def _do_tell(self, sender: Sender, command: Command) -> Answer:
        """TELL bob <words>, TELL 2 <words>, TELL ALL <words>, GREY before
        or after whom for unsigned words (engine.talk).  With no words on
        its line, the lines below it are the words, up to END, and are not
        read as moves or commands; nor are they when that TELL is refused.
        A seat's table talk is its player's own word: never its stand-in's."""
        lines = self._own_lines_whole
        told = _told(lines[self._line - 1] if len(lines) >= self._line else command.line)
        text = told.text
        if not text:
            text, self._rest_read = "\n".join(self._text_below(self._line)), True
        table, seat = self._own_seat(sender, command)
        return Answer(command.line, "tell", self.talk.tell(table, seat, told.whom, text, told.grey), OutcomeCode.DONE)

    def _observer_notify(self, sender: Sender, command: Command) -> Answer:
        watcher = sender.watcher
        assert watcher is not None
        game_id = watcher["game_id"]
        said = command.argument.strip().rstrip(".!").strip()
        if said:
            level = next((level for level in Notify if level.value == said.lower()), None)
            if level is None:
                raise Refusal(Why.UNKNOWN_LEVEL, level=said)
            self.observers.set_level(game_id, sender.address, level)
        row = self.store.watcher(game_id, sender.address)
        assert row is not None
        context = {
            "game": self.post.game_info(self.tables.table(game_id)),
            "news": [],
            "level": row["notify"] or self.config.notify.value,
            "changed": bool(said),
            "own": row["notify"] is not None,
            "observer": True,
        }
        return Answer(command.line, "notify", context, OutcomeCode.DONE)

    # -- observers (WATCH, UNWATCH) -------------------------------------------------

    def _do_watch(self, sender: Sender, command: Command) -> Answer:
        """WATCH 7, WATCH 7 DIGEST: follow game 7's public mail (engine.observers),
        once the address confirms by a reply to the offer it is sent; from
        mail that proves its From already, at once."""
        words = _past_filler(command.argument.split())
        game_id = _game_number(words[0]) if words else None
        if game_id is None:
            raise Refusal(Why.WATCH_WHICH, game=None)
        level = None
        if len(words) > 1:
            said = words[1].rstrip(".!").lower()
            level = next((level for level in Notify if level.value == said), None)
            if level is None:
                raise Refusal(Why.UNKNOWN_LEVEL, level=words[1])
        if sender.authenticated:
            return Answer(command.line, "watch", self.observers.watch(game_id, sender.address, level), OutcomeCode.DONE)
        answering = {"answers": self.message.key, "budget": "signup", "origin": self._origin}
        asked = self.observers.ask(game_id, sender.address, level, answering)
        return Answer(command.line, "watch", asked, OutcomeCode.DONE)

    def _do_unwatch(self, sender: Sender, command: Command) -> Answer:
        """UNWATCH 7, UNWATCH ALL, or UNWATCH alone in a reply to an
        observer's copy (that game): from mail that proves its From, at once;
        else the observer's address is mailed a confirmation to reply to
        (with their reply token): a forged From stops nobody's mail."""
        words = _past_filler(command.argument.split())
        every = bool(words) and words[0].lower() == "all"
        game_id = _game_number(words[0]) if words and not every else None
        if game_id is None and not every:
            if words or sender.watcher is None:
                raise Refusal(Why.UNWATCH_WHICH)
            game_id = sender.watcher["game_id"]
        watching = [w for w in self.store.watching(sender.address) if every or w["game_id"] == game_id]
        if not watching:  # (nothing to stop: as STANDBY OFF off the list, it is done)
            asked = self.store.game(game_id) if game_id is not None else None
            over = asked is not None and asked["state"] == GameState.FINISHED
            context = {"confirm": False, "games": [], "asked": game_id, "over": over}
            return Answer(command.line, "unwatch", context, OutcomeCode.DONE)
        games = [w["game_id"] for w in watching]
        if not sender.authenticated:
            self._confirm_unwatch(sender, watching[0], "ALL" if every else str(game_id))
            return Answer(command.line, "unwatch", {"confirm": True, "games": games}, OutcomeCode.DONE)
        for game in games:
            self.observers.stop(game, sender.address)
        return Answer(command.line, "unwatch", {"confirm": False, "games": games}, OutcomeCode.DONE)

    def _confirm_unwatch(self, sender: Sender, watcher: WatcherRow, which: str) -> None:
        """A bare UNWATCH from an observer's From: the observer (that
        address: a forger reads none of it) is mailed a confirmation whose
        reply address is their reply token, and whose subject is the
        command, so a reply that says nothing confirms it; its
        List-Unsubscribe works too."""
        table = self.tables.table(watcher["game_id"])
        context = {
            "game": {**self.post.game_info(table), "tag": tagged(table.tag(), watcher["token"])},
            "which": which,
            "referee": self.config.address,
            "observer": True,
        }
        sent = self.post.mail(
            table.id,
            sender.address,
            "watch/unwatch-confirm",
            context,
            answers=self.message.key,
            budget="signup",
            origin=self._origin,
            reply_to=token_address(self.config.address, watcher["token"]),
            unsubscribe=token_address(self.config.address, unwatch_token(self.key, table.id, sender.address)),
        )
        if not sent:
            raise Refusal(Why.TOO_MANY_MAILS, command=f"UNWATCH {which}")

    # -- the keeper's commands (Who.KEEPER) ---------------------------------------

    def _keeper_status(self, command: Command) -> Answer:
        """A keeper's STATUS: the games not over (each one's open phase, its
        deadline, whom it waits for, a pause), the newest finished, and the
        referee's health, as ``referee status`` shows them; STATUS <game>:
        that game, its players and what the keepers did to it.  What any
        player may know, and the addresses: never a hand, never a move
        before its phase is resolved."""
        words = _past_filler(command.argument.split())
        if words:
            game_id = _game_number(words[0])
            if game_id is None or self.store.game(game_id) is None:
                raise Refusal(Why.KEEPER_REFUSED, reason=f"there is no game {words[0]}")
            return Answer(command.line, "keeper-status", {"one": self.reports.status(game_id)}, OutcomeCode.DONE)
        finished = self.store.games(GameState.FINISHED)
        context = {
            "games": [self.reports.status(g["id"]) for g in self.store.games() if g["state"] != GameState.FINISHED],
            "finished": [self.reports.status(g["id"]) for g in finished[-_FINISHED_SHOWN:]],
            "more_finished": max(0, len(finished) - _FINISHED_SHOWN),
            # (by mail, no mail's subject: one to a seat carries its reply token, a player's their words)
            "health": self.reports.health_lines(self.reports.health(), subjects=False),
        }
        return Answer(command.line, "keeper-status", context, OutcomeCode.DONE)

    def _whole_argument(self, command: Command) -> str:
        """What follows a keeper's command word on its line, the line whole
        (a long line is cut where commands are read: an address, a reason
        cut short must never be taken as written)."""
        lines = self._own_lines_whole
        whole = lines[self._line - 1] if len(lines) >= self._line else command.line
        parts = whole.split(None, 1)
        return parts[1] if len(parts) > 1 and parts[0].lower() == command.word else command.argument

    def _keeper_game(self, command: Command) -> tuple[int, list[str]]:
        """The game a keeper's command is about (its first word: 7, #7, or
        "game 7") and the words after it."""
        words = _past_filler(self._whole_argument(command).split())
        game_id = _game_number(words[0]) if words else None
        if game_id is None:
            raise self._usage(command, "name the game by its number (STATUS lists them)")
        return game_id, words[1:]

    def _usage(self, command: Command, problem: str | None = None) -> Refusal:
        """A keeper's command not written as its entry shows."""
        entry = COMMANDS.entry(command.word)
        assert entry is not None  # (only a command's handler asks)
        return Refusal(Why.KEEPER_USAGE, usage=entry.keeper_usage, example=entry.example, problem=problem)

    def _keeper_does(self, sender: Sender, command: Command, act: Callable[[str], str]) -> Answer:
        """One of the keeper's acts, in the keeper's name and within the
        caps (no force by mail): all of it, or nothing of it and a refusal
        that says why, in the engine's words."""
        if not sender.keeper:  # (only a keeper's mail reads a keeper's word: see CommandTable.read)
            raise Refusal(Why.KEEPERS_ONLY, word=command.word)
        try:
            with self.store.transaction():
                done = act(sender.address)
        except EngineError as error:
            raise Refusal(Why.KEEPER_REFUSED, reason=str(error)) from None
        return Answer(command.line, "keeper", {"done": done}, OutcomeCode.DONE)

    def _do_extend(self, sender: Sender, command: Command) -> Answer:
        game_id, words = self._keeper_game(command)
        if not words:
            raise self._usage(command, "say how much later")
        length = self._duration(command, words[0])
        why = " ".join(words[1:])
        return self._keeper_does(sender, command, lambda who: self.keeping.extend(game_id, length, who, why))

    def _do_pause(self, sender: Sender, command: Command) -> Answer:
        """PAUSE 7, PAUSE 7 5d (or "for 5d"), PAUSE 7 until 2026-12-01T18:00:00Z; a reason after."""
        game_id, words = self._keeper_game(command)
        until = None
        said = words[0].lower() if words else ""
        if said in ("for", "until") and len(words) < 2:
            raise self._usage(command, f"say {'how long' if said == 'for' else 'until when'}")
        if said == "until":
            try:
                until = _utc_moment(words[1])
            except ValueError:
                raise self._usage(command, f"'{words[1]}' is no time such as 2026-12-01T18:00:00Z (UTC)") from None
            words = words[2:]
        elif said == "for" or (words and _is_duration(words[0])):
            words = words[1:] if said == "for" else words
            until = self.clock() + self._duration(command, words[0])
            words = words[1:]
        why = " ".join(words)
        return self._keeper_does(sender, command, lambda who: self.keeping.pause(game_id, who, why, until=until))

    def _do_resume(self, sender: Sender, command: Command) -> Answer:
        game_id, words = self._keeper_game(command)
        why = " ".join(words)
        return self._keeper_does(sender, command, lambda who: self.keeping.resume(game_id, who, why))

    def _do_cancel(self, sender: Sender, command: Command) -> Answer:
        game_id, words = self._keeper_game(command)
        if not words:
            raise self._usage(command, "say why the game is cancelled: the players are told")
        why = " ".join(words)
        return self._keeper_does(sender, command, lambda who: self.keeping.cancel(game_id, who, why))

    def _do_replace(self, sender: Sender, command: Command) -> Answer:
        game_id, words = self._keeper_game(command)
        seat, words = _seat_named(words)
        if seat is None or not words:
            raise self._usage(command, "name the seat and the newcomer's address")
        address, why = words[0].strip("<>,;"), " ".join(words[1:])
        return self._keeper_does(sender, command, lambda who: self.keeping.replace(game_id, seat, address, who, why))

    def _do_say(self, sender: Sender, command: Command) -> Answer:
        """SAY 7 <text>, SAY 7 to <seat> <text>; with no text on its line,
        the lines below it are the text, up to END (and are not read as
        commands).  The text as written: the line whole, however long.
        A SAY refused reads nothing below it either: its words might be."""
        try:
            return self._say(sender, command)
        except Refusal:
            self._rest_read = True
            raise

    def _say(self, sender: Sender, command: Command) -> Answer:
        game_id, words = self._keeper_game(command)
        seat = None
        if words and words[0].lower() == "to":
            seat, rest = _seat_named(words[1:])
            if seat is None:
                raise self._usage(command, "name the seat after 'to': its player's address or its number")
            words = rest
        lines = self._own_lines_whole
        line = lines[self._line - 1] if len(lines) >= self._line else command.line
        # (the words read before the text: the command's, the game's, "to" and the seat's)
        text = _after_words(line, 1 + len(command.argument.split()) - len(words)) if words else ""
        if not text:
            text, self._rest_read = "\n".join(self._text_below(self._line)), True
        return self._keeper_does(sender, command, lambda who: self.keeping.say(game_id, text, who, seat))

    def _do_new(self, sender: Sender, command: Command) -> Answer:
        """NEW <kind> <address>... with bots=, deadline=, turn_deadline=,
        decision_deadline=, settle=, name=, notify=, press=, announce_to= (again
        for more lists), awards=on|off and the game's options, each as
        key=value, as ``referee new`` takes them."""
        try:
            words = shlex.split(self._whole_argument(command))
        except ValueError as error:
            raise self._usage(command, str(error)) from None
        if not words:
            raise self._usage(command, "name the kind of game")
        kind = kind_named(words[0]) or words[0].lower()
        players = [word.strip("<>,;") for word in words[1:] if "=" not in word]
        settings: dict[str, Any] = {}
        options: dict[str, str] = {}
        for word in words[1:]:
            key, is_setting, value = word.partition("=")
            key = key.strip().lower().replace("-", "_")
            if not is_setting:
                continue
            if key in _NEW_DURATIONS:
                settings[key] = self._duration(command, value)
            elif key == "bots":
                if not value.strip().isdigit():
                    raise self._usage(command, f"bots={value} is no number of bots")
                settings[key] = int(value)
            elif key == "name":
                settings[key] = value
            elif key == "notify":
                if value.lower() not in tuple(Notify):
                    raise self._usage(command, f"notify={value}: say {', '.join(Notify)}")
                settings[key] = Notify(value.lower())
            elif key == "press":
                if value.lower() not in tuple(Press):
                    raise self._usage(command, f"press={value}: say {', '.join(Press)}")
                settings[key] = Press(value.lower())
            elif key == "announce_to":  # again for more lists, or several at once: a,b
                lists = [address.strip("<>;") for address in value.split(",") if address.strip("<>;")]
                settings[key] = [*settings.get(key, []), *lists]
            elif key == "awards":
                if value.lower() not in _ON_OFF:
                    raise self._usage(command, f"awards={value}: say on or off")
                settings[key] = _ON_OFF[value.lower()]
            else:
                options[key] = value

        # Its seed from the referee's key and this mail, as JOIN's: handled
        # again after a restore, the mail makes the same game.
        seed = hmac.new(self.key, f"seed\0{self.message.key}\0{self._line}".encode(), hashlib.sha256).digest()

        def new(who: str) -> str:
            game_id = self.seating.new_game(kind, players, options=options, seed=seed, **settings)
            seats = len(self.store.seats(game_id))
            log.info("game %d made by %s by mail", game_id, who)
            return f"game {game_id}: {GAMES[kind].title}, {seats} seats, begun; its players were told"

        return self._keeper_does(sender, command, new)

    def _duration(self, command: Command, text: str) -> timedelta:
        try:
            return parse_duration(text)
        except ValueError as error:
            raise self._usage(command, str(error)) from None

    def _text_below(self, line: int) -> list[str]:
        """The sender's own lines (each whole) below line ``line`` (0: all
        of them), up to one that stops the reading (END): the words of a
        SAY, a TELL or an answer to table talk, never read as commands."""
        below = []
        for later in self._own_lines_whole[line:]:
            if COMMANDS.stops(COMMANDS.read(later)):
                break
            below.append(later)
        return below

    @cached_property
    def _own_lines_whole(self) -> list[str]:
        """The lines the sender wrote, each whole (command_lines cuts a long
        one), in the same order; none when the mail's subject was read instead.
        Read once a message: every keeper's line of it asks."""
        return own_lines(self.message.text, None, self._quoted)

    # -- 6. the answer ---------------------------------------------------------

    def _reply(self, message: Incoming, sender: Sender, answers: list[Answer]) -> None:
        """One mail that answers the message line by line.  To mail that
        proves nothing it quotes nothing (no line, no subject): a forger
        must not make the referee repeat their words to someone else."""
        table = self.tables.table(sender.game_id) if sender.game_id is not None else None
        context, headers = self._reply_parts(message, sender, answers, table)
        budget: Budget = "player" if sender.authenticated else "open"
        if table is not None and sender.seat is not None:  # (a token proves both, or neither)
            # A receipt of a move is the seat's news: its stand-in's (or its player's, if the stand-in wrote) too.
            moved = any(answer.code in MOVE_CODES for answer in answers)
            if sender.stand_in is not None:
                wrote = {**context, "wrote": sender.stand_in["address"]}
                self.post.to_stand_in(
                    table, sender.stand_in, "reply", wrote, budget=budget, origin=self._origin, **headers
                )
                if moved:
                    own = self._subject(message, table, Sender(sender.address, table.id, sender.seat))
                    self.post.send(table, sender.seat, "reply", {**wrote, "subject": own}, copy=False)
            else:
                self.post.send(
                    table, sender.seat, "reply", context, copy=moved, budget=budget, origin=self._origin, **headers
                )
        elif sender.watcher is not None:  # an observer's: their reply token and unsubscribe address again
            watched = sender.watcher["game_id"]
            self.post.mail(
                watched,
                sender.address,
                "reply",
                context,
                budget=budget,
                origin=self._origin,
                reply_to=token_address(self.config.address, sender.watcher["token"]),
                unsubscribe=token_address(self.config.address, unwatch_token(self.key, watched, sender.address)),
                **headers,
            )
        elif sender.keeper:  # to the keeper's address, carrying their keeper token
            reply_to = token_address(self.config.address, keeper_token(self.key, sender.address))
            self.post.mail(
                None, sender.address, "reply", context, budget=budget, origin=self._origin, reply_to=reply_to, **headers
            )
        else:
            # A sign-up made (or a place on standby) is never left unconfirmed by the cap on answers.
            signed = any(answer.context.get("signed") for answer in answers)
            # An answer to a reply to a sign-up's confirmation carries its token too, so START or LEAVE in a
            # reply to the answer ("You have signed up ...", the newest mail) works as it does to the confirmation.
            kinds = sorted(sender.signed) if sender.game_id is None else []
            token = signup_token(self.key, kinds[0], sender.address) if len(kinds) == 1 else None
            self.post.mail(
                None,
                sender.address,
                "reply",
                context,
                budget=budget,
                origin=self._origin,
                always=signed,
                reply_to=token and token_address(self.config.address, token),
                **headers,
            )

    def _reply_parts(
        self, message: Incoming, sender: Sender, answers: list[Answer], table: Table | None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """What a reply shows (reply.txt.j2's context: each line's answer)
        and its threading headers."""
        proven = sender.authenticated  # else its lines, subject and thread ids are a stranger's words
        quote = (lambda line: line) if proven else _command_word
        texts = [
            # ("move": a stand-in's copy of the answer has the seat's moves only: Post.send)
            {"line": quote(a.line), "number": number, "text": self._render(a), "move": a.code in MOVE_CODES}
            for number, a in self._trim_legal(answers)
        ]
        context = {
            "answers": texts,
            "subject": self._subject(message, table, sender),
            "game": self.post.game_info(table) if table else None,
            "referee": self.config.address,
            "keeper": sender.keeper,
        }
        headers = {
            "in_reply_to": message.message_id,
            "answers": message.key,
            # their References, or (RFC 5322 3.6.4) their In-Reply-To when they sent none: the reply hangs under
            # their mail in the thread of the mail they answered, not beside it
            "references": (proven and one_line(_thread_above(message))) or None,
        }
        return context, headers

    def _render(self, answer: Answer) -> str:
        timezone = self.store.timezone(self.message.sender)
        return self.post.composer.part(
            answer.part, **{"referee": self.config.address, "timezone": timezone, **answer.context}
        )

    def _trim_legal(self, answers: list[Answer]) -> list[tuple[int, Answer]]:
        """List the legal moves under a line that tried a move, and under the
        first other line not understood when the mail made no move.  When it
        made one, another line not understood is only said to be left alone
        (and a "Hi," or "Thanks" around it gets no answer: _without_courtesies)."""
        numbered = _without_courtesies(answers)  # (each keeps its line's number in the mail)
        moved = any(a.code in MOVE_CODES for _, a in numbered)
        trimmed, shown = [], False
        for number, answer in numbered:
            context = answer.context
            if (
                answer.part == "error"
                and not context["attempt"]
                and moved
                and not context["suggestion"]
                and answer.line
                and not COMMANDS.read(answer.line).word
                and not COMMANDS.keeper_word(answer.line)
            ):
                alone = self.post.composer.refusal(Refusal(Why.LEFT_ALONE))
                answer = Answer(answer.line, "error", {**context, "legal": [], "reason": alone}, answer.code)
            elif answer.part == "error" and context["legal"] and not context["attempt"]:
                if moved or shown:
                    answer = Answer(answer.line, "error", {**context, "legal": []}, answer.code)
                shown = True
            trimmed.append((number, answer))
        return trimmed

    def _subject(self, message: Incoming, table: Table | None, sender: Sender) -> str:
        """ "Re: " and their subject, with the seat's own tag (and token) in front."""
        said = (sender.authenticated and without_tags(message.subject)) or "your mail to the referee"
        if sender.keeper:
            return f"Re: {tagged('[keeper]', keeper_token(self.key, sender.address))} {said}"
        if table is not None and sender.stand_in is not None:
            return f"Re: {tagged(table.tag(), sender.stand_in['token'] or '')} {said}"
        return f"Re: {table.tag(sender.seat)} {said}" if table else f"Re: {said}"

    def _outcome(self, sender: Sender, answers: list[Answer]) -> Outcome:
        moves = [a for a in answers if a.code in MOVE_CODES]
        # A line taken back by a correction did nothing: with the correction refused, nothing counted.
        done = [a for a in answers if a.code != OutcomeCode.REFUSED and a.part != "taken-back"]
        # Line numbers, never the lines: this is printed and logged, and a line may be a sealed bid.
        summary = "; ".join(f"line {number}: {a.code}" for number, a in enumerate(answers, 1))
        code = moves[-1].code if moves else OutcomeCode.DONE if done else OutcomeCode.REFUSED
        # A sign-up is about its game too: it may start that game's sign-up window (the runner's next moment).
        signed = (a.context["game_id"] for a in answers if a.context.get("signed"))
        game_id = sender.game_id if sender.game_id is not None else next(signed, None)
        return Outcome(code, summary, game_id, keeper=sender.keeper and bool(done))


# Refusals of a line that may be a move of another of the player's games, sent in reply to the wrong game's mail
_MAYBE_ELSEWHERE = frozenset([Why.NOT_YOUR_MOVE, Why.NOT_UNDERSTOOD])
_FINISHED_SHOWN = 5  # of the finished games, a keeper's STATUS shows the newest few
_ADDRESS_USAGE = "ADDRESS new@example.net (or ADDRESS new@example.net ALL: in every game you play)"
_KEEPER_ADDRESS_EXAMPLE = "ADDRESS 7 2 bob@example.net Bob's new mail"
_JOIN_FILLER = ("players", "player", "seats", "seat", "for", "with", "a", "game", "of")  # JOIN bid for 3 players
_NEW_DURATIONS = ("deadline", "turn_deadline", "decision_deadline", "settle")  # NEW's settings that are durations
_ON_OFF = {"on": True, "yes": True, "off": False, "no": False}  # NEW's settings that are on or off (awards=)
_FILLER = ("of", "for", "game")  # "STATUS of game 7", "EXTEND game 7 2d"
_SPACED_COLON = re.compile(r"\s*:\s*")
_SPACED_EQUALS = re.compile(r"\s*=\s*")


def _text_of(mail: OutboxRow, now: datetime) -> str:
    """The text of a mail the referee sent, as it composed it (outbox.text,
    kept since schema 7): parsing its bytes again cost as much as reading
    the reply that quotes it.  A mail queued before schema 7 has none, and
    is parsed."""
    return mail["text"] if mail["text"] is not None else parse(mail["raw"], now).text


def _starts(line: str) -> bool:
    """Whether a line is START (in a reply to a sign-up's confirmation)."""
    return COMMANDS.read(line).word == "start"


_REFUSING = frozenset(["no", "not", "nope", "never", "stop", "cancel", "remove", "unsubscribe", "wrong", "mistake"])


def _sign_off(line: str) -> bool:
    """Whether a line is a short sign-off under a yes ("Thanks, Fay", "Ann"):
    three words at most, no command and no word of refusal."""
    words = re.findall(r"[a-z']+", line.lower())
    return len(line.split()) <= 3 and not COMMANDS.read(line).word and not _REFUSING.intersection(words)


def _thread_above(message: Incoming) -> str:
    """The ids above a mail in its thread: its References, else its In-Reply-To."""
    return str(message.headers.get("References", "") or message.headers.get("In-Reply-To", "") or "")


def _without_courtesies(answers: list[Answer]) -> list[tuple[int, Answer]]:
    """The answers without those to a greeting, thanks or a sign-off (and a
    name signed under it at the mail's end) beside a line that did or asked
    something: "Hi ref," and "Cheers, / Carol" around a move need no answer
    of their own.  A mail of nothing else keeps them, so it is still told
    what it can do."""

    def unread(answer: Answer) -> bool:
        return not_a_move(answer) and not answer.context.get("suggestion")

    def not_a_move(answer: Answer) -> bool:  # a signed "Jack" or "K" is offered a card ("bid J?"), and is a name
        return answer.part == "error" and not answer.context.get("attempt")

    kinds = [reading.courtesy(answer.line) if unread(answer) else None for answer in answers]
    courteous = {at for at, kind in enumerate(kinds) if kind}
    tail = len(answers)  # the mail's last lines, each courteous or a name: where a signature is
    while tail and (
        (unread(answers[tail - 1]) and kinds[tail - 1])
        or (not_a_move(answers[tail - 1]) and reading.name_line(answers[tail - 1].line))
    ):
        tail -= 1
    signed = False
    for at in range(tail, len(answers)):
        courteous |= {at} if kinds[at] or signed else set()
        signed = signed or kinds[at] is reading.Courtesy.SIGN_OFF
    if len(courteous) == len(answers):
        courteous = set()
    return [(at + 1, answer) for at, answer in enumerate(answers) if at not in courteous]


def _assent(line: str) -> bool:
    """Whether a line only says yes ("Yes please!", "OK, count me in")."""
    words = re.findall(r"[a-z]+", line.lower())
    return bool(words) and all(word in _ASSENT for word in words)


def _past_filler(words: list[str]) -> list[str]:
    """The words, without a leading "of", "for" or "game"."""
    while words and words[0].lower() in _FILLER and len(words) > 1:
        words = words[1:]
    return words


def _game_number(word: str) -> int | None:
    """A game's number as a keeper writes it: 7, #7 (or "7," or "7:")."""
    number = word.strip().lstrip("#").rstrip(",.:;")
    return int(number) if number.isdigit() and len(number) <= 9 else None


def _words_after(command: Command) -> list[str]:
    """The words of a command's line after its word, as written (the
    command's argument is read for moves: "18:00" would come apart)."""
    words = command.line.split()
    for at, word in enumerate(words):
        if word.lower().strip("*_:,.!") == command.word:
            return words[at + 1 :]
    return command.argument.split()


_AWAY_UNTIL = ("to", "until", "till", "-", "–")  # between the two ends of a time away
_DATE = re.compile(r"\d{4}-\d\d-\d\d")


def away_time(words: list[str], now: datetime, zone: str | None) -> tuple[datetime | None, datetime, str]:
    """A time away as AWAY writes it: (its start, None for now; its end;
    the words after it, a reason).  A date is read in ``zone`` (else UTC),
    from its start, or to its end when it ends the time away; a time
    without an offset likewise.  ValueError says what is wrong."""
    said = [word.lower().rstrip(",;") for word in words]
    at = 1 if said[:1] == ["from"] else 0
    if at >= len(said):
        raise ValueError("say how long, or until when")
    if said[at] == "for" or _is_duration(said[at]):
        at += 1 if said[at] == "for" else 0
        return None, now + _away_duration(said, at), " ".join(words[at + 1 :])
    if said[at] in _AWAY_UNTIL:
        return None, _away_moment(said, at + 1, zone, end=True), " ".join(words[at + 2 :])
    start = _away_moment(said, at, zone, end=False)
    if at + 1 < len(said) and said[at + 1] == "for":
        return start, start + _away_duration(said, at + 2), " ".join(words[at + 3 :])
    if at + 1 < len(said) and said[at + 1] in _AWAY_UNTIL:
        return start, _away_moment(said, at + 2, zone, end=True), " ".join(words[at + 3 :])
    raise ValueError("say until when it lasts (AWAY 2026-12-03 to 2026-12-10), or for how long")


def _away_duration(said: list[str], at: int) -> timedelta:
    if at >= len(said):
        raise ValueError("say for how long")
    return parse_duration(said[at])


def _away_moment(said: list[str], at: int, zone: str | None, end: bool) -> datetime:
    """A date (from its start, or to its end) or a time, in ``zone`` when it gives no offset."""
    if at >= len(said):
        raise ValueError("say until when")
    text, where = said[at], ZoneInfo(zone) if zone else UTC
    try:
        if _DATE.fullmatch(text):
            day = datetime.fromisoformat(text).replace(tzinfo=where)
            return (day + timedelta(days=1) if end else day).astimezone(UTC)
        moment = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
        return (moment.replace(tzinfo=where) if moment.tzinfo is None else moment).astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValueError(f"'{text[:40]}' is no date such as 2026-12-03, nor a time such as 2026-12-03T18:00") from None


def _utc_moment(text: str, zone: str | None = None) -> datetime:
    """A time as a keeper or a player writes it: 2026-12-01T18:00:00Z, or
    with an offset, or a date alone (its midnight); without an offset, in
    ``zone`` (a player's TIMEZONE), else UTC.  As UTC."""
    text = _SPACED_COLON.sub(":", text.strip().rstrip("."))  # (a line's reading spaces a colon out: "18 : 00")
    moment = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    return (
        moment.replace(tzinfo=ZoneInfo(zone) if zone else UTC).astimezone(UTC)
        if moment.tzinfo is None
        else moment.astimezone(UTC)
    )


def _is_duration(word: str) -> bool:
    try:
        parse_duration(word)
    except ValueError:
        return False
    return True


def _seat_named(words: list[str]) -> tuple[str | None, list[str]]:
    """A seat as a keeper names it (its player's address, its number, "seat
    2" or "bot 2"), and the words after it."""
    if not words:
        return None, []
    if words[0].lower() in ("bot", "seat") and len(words) > 1 and words[1].isdigit():
        return f"{words[0]} {words[1]}", words[2:]
    return words[0].strip("<>,;"), words[1:]


def _after_words(line: str, count: int) -> str:
    """The line after its first ``count`` words, as written."""
    rest = line.strip()
    for _ in range(count):
        rest = rest.split(None, 1)[1] if len(rest.split(None, 1)) > 1 else ""
    return rest.strip()


_GREY = ("grey", "gray", "anon")  # TELL's words for unsigned (grey press)


@dataclass(frozen=True)
class _Told:
    """A TELL line read: whom (as written; "" when none), whether unsigned,
    and the words after them, as written ("": the lines below are)."""

    whom: str
    grey: bool
    text: str


def _told(line: str) -> _Told:
    """TELL's line: "TELL [to] [GREY] <whom> [GREY] <words>"."""
    words = line.split()
    at = next((i for i, word in enumerate(words) if word.lower().strip("*_:,.!") == "tell"), 0) + 1
    whom, grey = "", False
    while at < len(words):
        word = words[at].lower().strip("*_:,;.!")
        if word in _GREY and not grey:
            grey = True
        elif word == "to" and not whom:
            pass
        elif not whom:
            whom = words[at]
        else:
            break
        at += 1
    return _Told(whom, grey, _after_words(line, at))


def _command_word(line: str) -> str:
    """What a reply to unproven mail quotes of a line: its command word, if
    it has one we know ("HELP", "EXTEND"), and nothing of what the sender wrote."""
    return (COMMANDS.read(line).word or COMMANDS.keeper_word(line)).upper()


# -- the command table -----------------------------------------------------------


class Who(Enum):
    """Who may use a command."""

    ANYONE = "anyone"  # needs no reply token: a stranger may ask
    PLAYER = "player"  # a player's, in a reply that proves it (a seat's token; LEAVE's and TIMEZONE's, a sign-up's too)
    KEEPER = "keeper"  # a keeper's (the config names them), in a reply that proves it (their keeper token)
    OFFERED = "offered"  # the address an offer was made to, in a reply to it (the offer's token)


Handler = Callable[[Desk, Sender, Command], Answer]

_HELP_WIDTH = 56  # characters of a command's line in HELP, beside its column of usages
_KEEPER_HELP_WIDTH = 68  # characters of a keeper's command's line in HELP, under its usage


@dataclass(frozen=True)
class Entry:
    """One command of the table: every fact about it in one place."""

    word: str  # the command word, in lower case, as a line is read
    who: Who  # who may use it: a mail that needs proof and carries none is not read for a stranger's
    handler: Handler  # carries a line out (or raises Refusal)
    help: str  # its line in HELP, one sentence (wrapped there)
    argument: str = ""  # what HELP shows after the word: "<game>", "[<game>]"
    synonyms: tuple[str, ...] = ()  # other words for it, each read (and quoted back) as said
    alone: bool = False  # counts only said alone on its line, never in a sentence (it cannot be undone, or stops)
    stops: bool = False  # nothing below it in the mail is read
    example: str = ""  # a keeper's command as written, for HELP and a refusal of one written otherwise
    keeper_help: str = ""  # what it does for a keeper, where that differs (a keeper's STATUS), in HELP for keepers
    keeper_argument: str = ""  # and its argument then

    @property
    def words(self) -> tuple[str, ...]:
        return (self.word, *self.synonyms)

    @property
    def usage(self) -> str:
        """How HELP shows it: "JOIN <game>", "END (or QUIT)"."""
        usage = f"{self.word.upper()} {self.argument}".rstrip()
        return f"{usage} (or {' or '.join(s.upper() for s in self.synonyms)})" if self.synonyms else usage

    @property
    def for_keepers(self) -> bool:
        """Whether HELP for keepers lists it: a keeper's command, or one that does more for a keeper."""
        return self.who is Who.KEEPER or bool(self.keeper_help)

    @property
    def keeper_usage(self) -> str:
        """How HELP for keepers shows it: "EXTEND <game> <duration> [<why>]", "STATUS [<game>]"."""
        return self.usage if self.who is Who.KEEPER else f"{self.word.upper()} {self.keeper_argument}".rstrip()


class CommandTable:
    """The commands, each word once; built once, at import.

    A player's line is read against the vocabulary of every command but the
    keeper's, as a player writes ("*Status*", "I resign"): the keeper's words
    ("new", "say", "pause") are common words, and a player's sentence or
    move must never read as one.  A keeper's line is read for the keeper's
    words first, only as the keeper's commands are written: the word first,
    alone ("EXTEND 7 2d"); then as anyone's."""

    def __init__(self, *entries: Entry):
        self.entries = entries
        self._by_word: dict[str, Entry] = {}
        for entry in entries:
            for word in entry.words:
                if word in self._by_word:
                    raise ValueError(f"the command word {word!r} has two entries")
                self._by_word[word] = entry
        everyones = [e for e in entries if e.who is not Who.KEEPER]
        self.vocabulary = Vocabulary.of(
            (w for e in everyones for w in e.words), (w for e in everyones if e.alone for w in e.words)
        )
        self.keeper_words = frozenset(w for e in entries if e.who is Who.KEEPER for w in e.words)

    def read(self, line: str, keeper: bool = False) -> Command:
        """The line read as a command (its word "" when it names none); for
        a keeper (``keeper``), a keeper's command too."""
        if keeper and line.split():
            first, *rest = line.split(None, 1)
            word = first.lower().rstrip(":")
            if word in self.keeper_words:
                return Command(word, rest[0].strip() if rest else "", line.strip())
        return Command.read(line, self.vocabulary)

    def keeper_word(self, line: str) -> str:
        """The keeper's command a line names, as a keeper writes it (its
        word first, then a game's number, "EXTEND 7 ..."; NEW's a kind of
        game), from anyone: what is refused as a keeper's to a non-keeper.
        "" for any other line ("New to this: how do I join?")."""
        words = line.split()
        word = words[0].lower().rstrip(":") if words else ""
        if word not in self.keeper_words:
            return ""
        rest = _past_filler(words[1:])
        named = bool(rest) and (kind_named(rest[0]) is not None if word == "new" else _game_number(rest[0]) is not None)
        return word if named else ""

    def for_keeper(self, line: str) -> bool:
        """Whether a line, read for a keeper, is one of the keeper's commands
        (a keeper's STATUS too)."""
        entry = self.entry(self.read(line, keeper=True).word)
        return entry is not None and entry.for_keepers

    def entry(self, word: str) -> Entry | None:
        """The command a word (or synonym) names; None for "" (a move, perhaps)."""
        return self._by_word.get(word)

    def who(self, line: str) -> Who:
        """Who may send the line: a command's users; a move is a player's."""
        entry = self.entry(self.read(line).word)
        return entry.who if entry is not None else Who.PLAYER

    def stops(self, command: Command) -> bool:
        """Whether the line stops the reading."""
        entry = self.entry(command.word)
        return entry is not None and entry.stops

    def help(self, keeper: bool = False) -> dict[str, Any]:
        """What the HELP answer lists (``templates/mail/answers/help.txt.j2``):
        each command's usage and its line wrapped, and the words that count
        only said alone; for a keeper (``keeper``), the keeper's commands too
        (for anyone else, none of them)."""
        everyones = [e for e in self.entries if e.who is not Who.KEEPER]
        return {
            "commands": [
                {"usage": e.usage, "lines": textwrap.wrap(e.help, _HELP_WIDTH, break_on_hyphens=False)}
                for e in everyones
            ],
            "alone": [w.upper() for e in everyones if e.alone for w in e.words],
            "keeper_commands": [
                {
                    "usage": e.keeper_usage,
                    "lines": textwrap.wrap(e.keeper_help or e.help, _KEEPER_HELP_WIDTH, break_on_hyphens=False),
                    "example": e.example,
                }
                for e in self.entries
                if keeper and e.for_keepers
            ],
        }


COMMANDS = CommandTable(
    Entry(
        "status",
        Who.PLAYER,
        Desk._do_status,
        "your private view: hand, scores, the round, its deadline, and who has moved (never what)",
        keeper_help="every game not over (its open phase, deadline, whom it waits for, a pause) and the newest "
        "finished, then the referee's health: the last pass, the outbox, quarantined mail; STATUS 7: game 7's "
        "players, the keepers' acts and mail that failed. Never a hand, nor a move before its phase is resolved",
        keeper_argument="[<game>]",
    ),
    Entry("hand", Who.PLAYER, Desk._do_hand, "just your hand"),
    Entry(
        "resign",
        Who.PLAYER,
        Desk._do_resign,
        "leave the game; a bot plays your seat from now on, at random, unless someone on standby takes it over",
        alone=True,
    ),
    Entry(
        "list",
        Who.ANYONE,
        Desk._do_list,
        "games open for sign-up, games being played, and how many wait on standby for each kind",
    ),
    Entry(
        "standings",
        Who.ANYONE,
        Desk._do_standings,
        "each player's finished games, wins, places and share of moves made by mail, over all games and per "
        "kind of game; STANDINGS bid: Bid!'s alone",
        argument="[<game>]",
    ),
    Entry(
        "join",
        Who.ANYONE,
        Desk._do_join,
        "sign up for the next game of that kind, e.g. JOIN priority; with how many players and its options, "
        "JOIN priority 5 turn_limit=3 press=grey (a game open with those, else a new one); JOIN 12: that open "
        "game. It starts when its seats are full, when everyone signed up sends START, or when it has had "
        "the players it needs for the sign-up window",
        argument="<game> [<players>] [<options>]",
    ),
    Entry(
        "start",
        Who.PLAYER,
        Desk._do_start,
        "in a reply to your sign-up's mail: start the game now with those signed up, once it has the players "
        "it needs and everyone signed up has sent START",
        alone=True,
    ),
    Entry("leave", Who.PLAYER, Desk._do_leave, "take back your sign-up (before the game starts)", alone=True),
    Entry(
        "standby",
        Who.ANYONE,
        Desk._do_standby,
        "wait to take over a seat of that kind of game a player leaves mid-game: the first on standby is "
        "offered it by mail; STANDBY <game> OFF takes you off the list",
        argument="<game> [OFF]",
    ),
    Entry(
        "rules",
        Who.ANYONE,
        Desk._do_rules,
        "the game's rules and the referee's rulings on them (in a reply to a game's mail, RULES alone: that game's)",
        argument="[<game>]",
    ),
    Entry(
        "timezone",
        Who.PLAYER,
        Desk._do_timezone,
        "show deadlines in your zone as well as UTC, e.g. TIMEZONE Europe/Berlin (TIMEZONE UTC: UTC only)",
        argument="<zone>",
    ),
    Entry(
        "away",
        Who.PLAYER,
        Desk._do_away,
        "you will be away, e.g. AWAY 5d, AWAY until 2026-12-10, AWAY 2026-12-03 to 2026-12-10 (dates in your "
        "TIMEZONE, else UTC): a deadline that waits on you and falls inside that time moves to its end; the "
        "others are told when, not why",
        argument="<time>",
    ),
    Entry("back", Who.PLAYER, Desk._do_back, "you are back early: your time away ends now", alone=True),
    Entry(
        "address",
        Who.PLAYER,
        Desk._do_address,
        "play from another address, e.g. ADDRESS alice@example.net: it is sent a mail to confirm, and your "
        "seat moves there with all it has when it replies; ADDRESS alice@example.net ALL: in every game you "
        "play or are signed up for",
        argument="<new>",
        keeper_help="move a seat (named by its player's address or its number) to a new address at once: it gets "
        f"the seat's new reply address and hand, the old address is told; e.g. {_KEEPER_ADDRESS_EXAMPLE}",
        keeper_argument="<game> <seat> <new> [<why>]",
    ),
    Entry(
        "delegate",
        Who.PLAYER,
        Desk._do_delegate,
        "a stand-in moves for your seat until then (a date, a time, or a duration such as 5d): they agree first, "
        "then get its hand, prompts and private mail, and their moves count as yours still do; DELEGATE NONE ends it",
        argument="<address> UNTIL <date>",
    ),
    Entry(
        "notify",
        Who.PLAYER,
        Desk._do_notify,
        "how much mail you get in this game: EVERY turn's result; TURNS, your turns and each round's or "
        "auction's result (what others did comes with your next prompt); DIGEST, your turns and one mail a "
        "day. NOTIFY alone says which you get",
        argument="[EVERY|TURNS|DIGEST]",
    ),
    Entry(
        "tell",
        Who.PLAYER,
        Desk._do_tell,
        "table talk: your words to one player of this game (by name, address or seat number) or to ALL, signed with "
        "your name (GREY after the name: unsigned, where the game allows it); with nothing after the name, "
        "the lines below are the words, up to END. Replies come back through the referee. Never a move",
        argument="<name>|ALL [GREY] <words>",
    ),
    Entry(
        "watch",
        Who.ANYONE,
        Desk._do_watch,
        "follow a game without playing: its public mail only (the start, the results, the end), at a level of "
        "mail (EVERY, TURNS, DIGEST) as NOTIFY's; you are sent a mail to confirm first",
        argument="<game> [EVERY|TURNS|DIGEST]",
    ),
    Entry(
        "unwatch",
        Who.ANYONE,
        Desk._do_unwatch,
        "stop following a game (UNWATCH ALL: every game you follow); at once in a reply to its mail, else you "
        "are sent a mail to confirm",
        argument="<game>|ALL",
    ),
    Entry("help", Who.ANYONE, Desk._do_help, "this list"),
    Entry(
        "accept",
        Who.OFFERED,
        Desk._do_accept,
        "in a reply to the referee's offer (a seat, a new address to confirm, a stand-in's turn): take it "
        "(a reply that says nothing more takes it too)",
        synonyms=("yes",),
        alone=True,
    ),
    Entry(
        "reject",
        Who.OFFERED,
        Desk._do_reject,
        "in a reply to the referee's offer: say no to it; nothing changes",
        synonyms=("no",),
        alone=True,
    ),
    Entry(
        "end",
        Who.ANYONE,
        Desk._do_end,
        "stop reading here: put it above your signature",
        synonyms=("quit",),
        alone=True,
        stops=True,
    ),
    # The keeper's (docs/operations.md, "The keeper by mail"): read only in a keeper's mail, word first.
    Entry(
        "extend",
        Who.KEEPER,
        Desk._do_extend,
        "move the deadline of a game's open phase later (by longest_extension at most); the players are "
        "told, with your reason",
        argument="<game> <duration> [<why>]",
        example="EXTEND 7 2d Bob is at a wedding",
    ),
    Entry(
        "pause",
        Who.KEEPER,
        Desk._do_pause,
        "stop a game's clock: no deadline, reminder or random move until RESUME, or for the time given "
        "(5d, or until 2026-12-01T18:00:00Z); a game's pauses add up to most_pause at most, and one without "
        "a time ends there by itself",
        argument="<game> [<duration>] [<why>]",
        example="PAUSE 7 5d the holidays",
    ),
    Entry(
        "resume",
        Who.KEEPER,
        Desk._do_resume,
        "start a paused game's clock again: its deadline moves by the pause",
        argument="<game> [<why>]",
        example="RESUME 7",
    ),
    Entry(
        "cancel",
        Who.KEEPER,
        Desk._do_cancel,
        "end a game without a winner, saying why; its seed is published, so every phase played can still be checked",
        argument="<game> <why>",
        example="CANCEL 7 the club closed",
    ),
    Entry(
        "replace",
        Who.KEEPER,
        Desk._do_replace,
        "a newcomer takes over a seat (named by its player's address, its number, or bot 2): the seat's "
        "reply address, hand and a fresh deadline if it owes a move; the old address is told",
        argument="<game> <old> <new> [<why>]",
        example="REPLACE 7 bob@example.org dave@example.org Bob moved away",
    ),
    Entry(
        "say",
        Who.KEEPER,
        Desk._do_say,
        "your words to every player of a game, or to one seat (to 2, to bob@example.org), on its record; "
        "with SAY 7 alone on its line, the lines below it are the words, up to END",
        argument="<game> [to <seat>] <text>",
        example="SAY 7 to 2 Please move before Friday",
    ),
    Entry(
        "new",
        Who.KEEPER,
        Desk._do_new,
        "start a game, as referee new does: the players' addresses in seating order, then any of bots=N, "
        "deadline=, turn_deadline=, decision_deadline=, settle=, name=, notify= (every, turns or digest: "
        "the players' mail unless they choose), press= (none, white or grey: its table talk), announce_to= "
        "(a list that gets its public mail; again for more), awards=on|off (the game-over mail tells the kind's "
        "award) and the game's options, as key=value",
        argument="<kind> <address>... [<key>=<value>...]",
        example="NEW priority alice@example.org bob@example.org bots=1 deadline=2d turn_limit=2",
    ),
)
