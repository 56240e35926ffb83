"""The two ways a request is turned down, shared by every layer that may say no."""

from __future__ import annotations

from enum import Enum
from typing import Any


class EngineError(ValueError):
    """A keeper's request that cannot be carried out; the message says why."""


class Busy(RuntimeError):
    """Another referee run holds the run lock (referee.runner.RunLock)."""


class Why(Enum):
    """Why a player's command is refused: a ``Refusal``'s code.  Each has its
    wording, one macro of the same name, in ``templates/mail/refusals.txt.j2``
    (which a keeper's templates may replace); the code names it and gives
    the facts, the template says them."""

    # The mail proves no seat, or the seat can no longer play.
    SEAT_ENDED = "seat_ended"  # game: the finished game whose mail it answers
    UNKNOWN_COMMAND = "unknown_command"
    NEEDS_SEAT = "needs_seat"  # word: the command, which is about a game
    GAME_ENDED = "game_ended"  # game
    RESIGNED = "resigned"  # game
    # A line that is not a legal move.
    BAD_MOVE = "bad_move"  # error: what the game's rules say is wrong with it
    NOT_UNDERSTOOD = "not_understood"  # line, error
    AMBIGUOUS = "ambiguous"  # asked: [{number, line, move}], the moves one mail asks for
    NO_COMMAND = "no_command"
    LEFT_ALONE = "left_alone"  # a line beside a move that is neither
    TOO_LARGE = "too_large"  # size, limit: in KB
    # A move out of its time or turn.
    MOVED_ALREADY = "moved_already"  # phase, move: the label, and the move that stands
    LATE_FOR_THREAD = "late_for_thread"  # received, phase, deadline, seconds; now, mover, waiting (see thread_over)
    THREAD_OVER = "thread_over"  # phase; now (the open phase's label), mover (moves in it), waiting
    BEFORE_OPEN = "before_open"  # received, phase
    AFTER_DEADLINE = "after_deadline"  # received, phase, deadline, seconds: the times told to the second
    AFTER_CLOSE = "after_close"  # received, phase, closed, seconds
    NOT_YOUR_MOVE = "not_your_move"  # phase, waiting
    NOT_YET_YOURS = "not_yet_yours"  # phase: a bot's seat taken over in it, whose bot has moved in it
    # Sign-ups and settings.
    NO_SUCH_GAME = "no_such_game"  # kinds; command: one to show an example of ("rules"), if any
    JOIN_WHICH = "join_which"  # kinds
    SIGNED_ALREADY = "signed_already"  # game, more: the players it still waits for
    JOIN_SEATS = "join_seats"  # title, seats: as asked; least, most: the kind's
    JOIN_OPTION = "join_option"  # kind, problem: the game's words; options: the kind's option names
    NO_OPEN_GAME = "no_open_game"  # game: the number a JOIN named, of no game open for sign-up
    PLAYS_ALREADY = "plays_already"  # game: a JOIN of a game begun, from one of its players
    JOIN_BEGUN = "join_begun"  # game, kind, title: a game begun, of a kind with no standby list
    START_NOT_SIGNED = "start_not_signed"  # title: START from an address signed up for no open game of the kind
    START_BEGUN = "start_begun"  # game, title: START from a player of that game, begun already (its seats filled)
    TOO_MANY_MAILS = "too_many_mails"  # command: to send again (JOIN, STANDBY)
    LEAVE_BEGUN = "leave_begun"  # game
    LEAVE_NOT_SIGNED = "leave_not_signed"
    TIMEZONE_UNPROVEN = "timezone_unproven"
    UNKNOWN_ZONE = "unknown_zone"  # zone: as the player wrote it
    STANDBY_WHICH = "standby_which"  # kinds
    NO_STANDBY = "no_standby"  # title: a game whose rules keep a leaver's seat a bot's (Game.bots_replaceable)
    # Observers (WATCH, UNWATCH).
    WATCH_WHICH = "watch_which"  # game: the number asked for, if any (None: none named)
    WATCH_OVER = "watch_over"  # game: it has ended
    WATCH_PLAYER = "watch_player"  # game: the address plays in it (or is signed up for it)
    WATCH_FULL = "watch_full"  # game, most: [club] most_watchers
    UNWATCH_WHICH = "unwatch_which"
    # Offers (a seat, a new address, a stand-in's turn), answered by reply.
    NO_OFFER = "no_offer"  # word: ACCEPT or REJECT, in a mail that answers no offer
    OFFER_CLOSED = "offer_closed"  # reason: why it can no longer be taken (the engine's words)
    # Time away (AWAY, BACK).
    AWAY_USAGE = "away_usage"  # problem: what was wrong with how it was written, if known
    AWAY_OVER = "away_over"  # start, until: a time away that ends before it begins (or now)
    AWAY_ALREADY = "away_already"  # start, until: the absence of theirs it overlaps
    AWAY_TOO_LONG = "away_too_long"  # asked, left, most: durations; what the seat's cap leaves
    NOT_AWAY = "not_away"  # BACK from a seat with no absence in force or to come
    # A seat's move to a new address (ADDRESS).
    ADDRESS_REFUSED = "address_refused"  # reason: why it cannot be done (the engine's words)
    # Stand-ins (DELEGATE), and a stand-in's own mail.
    DELEGATE_HOW = "delegate_how"  # said: the time or duration not understood, if any
    DELEGATE_WHO = "delegate_who"  # address, problem (delegating.Unfit); seat: the other seat, if any
    DELEGATE_WHEN = "delegate_when"  # until; problem: "past" or "long"; longest: the cap (longest_delegation)
    DELEGATE_IN_FORCE = "delegate_in_force"  # address, until: the seat's stand-in now
    DELEGATE_TOO_OFTEN = "delegate_too_often"  # most: offers a seat may make in a day
    NO_STAND_IN = "no_stand_in"  # DELEGATE NONE, with no stand-in and none asked
    STAND_IN_CANNOT = (
        "stand_in_cannot"  # word: the seat's player's alone (RESIGN, DELEGATE, ADDRESS, AWAY, BACK, a NOTIFY level)
    )
    STAND_IN_OVER = "stand_in_over"  # game, seat, at: the stand-in's turn ended then
    UNKNOWN_LEVEL = "unknown_level"  # level: NOTIFY's word, as the player wrote it
    # Table talk (TELL), and the answers to it.
    TELL_HOW = "tell_how"  # problem: None (no seat named), "text" (no words), "answer" (a reply with none of its own)
    TELL_WHO = (
        "tell_who"  # name, problem: nobody, several, self, bot, left, gone, replaced, alone; names: those it could be
    )
    PRESS_NONE = "press_none"  # title; rule: the rule that forbids talk, cited ("": the keeper's choice)
    PRESS_SIGNED = "press_signed"  # title: a game whose table talk is signed only (white press)
    PRESS_TOO_LONG = "press_too_long"  # size, most: characters
    PRESS_LIMIT = "press_limit"  # most: a seat's in a day; at: when another may go (None: most is 0)
    # The keeper's commands by mail.
    KEEPERS_ONLY = "keepers_only"  # word: a keeper's command, sent by someone not proven a keeper
    KEEPER_USAGE = "keeper_usage"  # usage, example; problem: what was wrong, if known
    KEEPER_REFUSED = "keeper_refused"  # reason: the engine's (EngineError's) sentence


class Refusal(Exception):
    """A player's command that changes nothing; the player is told why:
    ``code`` and its ``facts``, worded by the templates (Composer.refusal).
    With ``legal``, the answer lists the moves the seat can make now;
    ``attempt`` says the line looked like a move (see Desk._error);
    ``suggestion`` is the legal move it was most likely meant as, if one."""

    def __init__(
        self, code: Why, *, legal: bool = False, attempt: bool = False, suggestion: str | None = None, **facts: Any
    ):
        super().__init__(code.value, facts)
        self.code, self.facts = code, facts
        self.legal, self.attempt, self.suggestion = legal, attempt, suggestion
