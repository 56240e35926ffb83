"""Who sits at a game: new games made by the keeper, sign-up games filled by
JOIN and LEAVE, and seats handed to a random bot when their player leaves.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from referee.config import Config
from referee.engine.delegating import Delegating
from referee.engine.phases import Phases
from referee.engine.post import Post
from referee.errors import EngineError, Refusal, Why
from referee.limits import normalised
from referee.mail.parse import is_address
from referee.mail.tokens import seat_token
from referee.record import commitment, digest_line
from referee.rules import Game, OptionError, get_game
from referee.rules.api import Press
from referee.store import Act, GameRow, GameState, Notify, Store
from referee.tables import Table, Tables, name_seats
from referee.timeutil import EventClock, from_iso, iso

log = logging.getLogger("referee")

Seeds = Callable[[int], bytes]  # n random bytes: secrets.token_bytes, or a test's own (see Rooms)


@dataclass(frozen=True)
class Wish:
    """What a JOIN asks for: a kind of game, and perhaps how many seats,
    which of its options (checked: Game.check_options) and which press."""

    kind: str
    seats: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)  # only those named, as the game reads them
    press: Press | None = None

    def fits(self, game: GameRow) -> bool:
        """Whether an open game has all the wish names."""
        press = Press(game["press"]) if game["press"] else get_game(game["kind"]).press
        return (
            game["kind"] == self.kind
            and self.seats in (None, game["seats_wanted"])
            and all(game["options"].get(name) == value for name, value in self.options.items())
            and self.press in (None, press)
        )

    @property
    def command(self) -> str:
        """The JOIN that asks for it, as the confirmation's subject repeats it."""
        named = [f"{name}={shown_option(value)}" for name, value in self.options.items()]
        said = [str(self.seats)] if self.seats else []
        return " ".join(["JOIN", self.kind, *said, *named, *([f"press={self.press}"] if self.press else [])])


def shown_option(value: Any) -> str:
    """An option's value as a JOIN writes it (true, not True)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


class Began(Enum):
    """Why a sign-up game started (the start mail says which)."""

    FULL = "full"  # its seats were full
    WINDOW = "window"  # it had its least players for [club] signup_window
    START = "start"  # everyone signed up sent START


@dataclass(frozen=True)
class Started:
    """What a START did: the game, whether it started, how many more players
    it needs at least, and the names (as the game will name them) of those
    signed up who have not sent START."""

    game_id: int
    started: bool
    more: int
    waiting: Sequence[str]


@dataclass(eq=False)
class Seating:
    store: Store
    config: Config
    clock: EventClock
    key: bytes
    tables: Tables
    post: Post
    phases: Phases
    seeds: Seeds  # each new game's secret seed, drawn as seeds(32)
    delegating: Delegating  # a seat's stand-in, whose turn ends when its player leaves
    # Told of each seat a player leaves mid-game (game id, seat), once a bot
    # plays it: the standby room offers it on (see Rooms).
    on_leaving: Callable[[int, int], None] | None = None

    def token(self, game_id: int, seat: int) -> str:
        return seat_token(self.key, game_id, seat)

    # -- the keeper's games ------------------------------------------------

    def new_game(
        self,
        kind: str,
        players: list[str],
        bots: int = 0,
        deadline: timedelta | None = None,
        settle: timedelta | None = None,
        name: str | None = None,
        options: dict[str, Any] | None = None,
        turn_deadline: timedelta | None = None,
        decision_deadline: timedelta | None = None,
        seed: bytes | None = None,
        notify: Notify | None = None,
        press: Press | None = None,
        announce_to: Sequence[str] = (),
        awards: bool | None = None,
    ) -> int:
        """Create a game, announce it, open its first phase; returns its id.
        Its secret seed is ``seed``, or drawn afresh (a NEW by mail gives one
        made from its mail, so that handled again it makes the same game).

        ``deadline`` is how long a sealed round lasts; ``turn_deadline`` one
        player's turn (default: the deadline), ``decision_deadline`` a choice
        inside a resolution such as a scoring offer (default: the turn's).
        ``notify``: how much mail its players get unless they choose (None:
        the config's ``notify``); ``press``: the table talk it relays (None:
        its kind's, Game.press).  ``announce_to``: the game's own lists, which
        get its public mail besides the config's ``[club] announce_to``;
        ``awards``: whether its game-over mail tells its kind's award (None:
        the config's ``[club] awards``)."""
        try:
            rules = get_game(kind)
            options = rules.check_options(options or {})
        except (KeyError, OptionError) as error:
            raise EngineError(str(error).strip("'\"")) from None
        addresses = [address.strip().lower() for address in players]
        self._check_seats(rules, addresses, bots)
        deadlines = self._deadlines(rules, deadline, turn_deadline, decision_deadline)
        settle = settle if settle is not None else self.config.settle
        lists = self._lists(announce_to)
        with self.store.transaction():
            game_id = self._create(
                kind, options, deadlines, settle, name, GameState.RUNNING, seed=seed, notify=notify, press=press
            )
            if lists or awards is not None:
                self.store.set_club(game_id, lists, awards)
            self._begin(game_id, addresses, bots)
        log.info("game %d (%s) created with %d seats", game_id, kind, len(addresses) + bots)
        return game_id

    def _check_seats(self, rules: Game, addresses: list[str], bots: int) -> None:
        for address in addresses:
            check_player_address(address, self.config.address)
        if len(set(addresses)) != len(addresses):
            raise EngineError("each player may hold only one seat")
        if bots < 0:
            raise EngineError("--bots cannot be negative")
        seats = len(addresses) + bots
        if not rules.min_seats <= seats <= rules.max_seats:
            raise EngineError(f"{rules.title} needs {rules.seat_range} seats (players + bots), not {seats}")

    def _lists(self, announce_to: Sequence[str]) -> list[str]:
        """A game's own lists (lower case, each once), each a mail address and
        not the referee's own (its mail to itself is dropped as its own)."""
        lists = list(dict.fromkeys(address.strip().lower() for address in announce_to))
        for address in lists:
            if not is_address(address):
                raise EngineError(f"'{address}' is not a mail address: announce_to names the lists to copy")
            if normalised(address) == normalised(self.config.address):
                raise EngineError(f"{address} is the referee's own address: no list can be announced to at it")
        return lists

    def _deadlines(
        self,
        rules: Game,
        deadline: timedelta | None = None,
        turn: timedelta | None = None,
        decision: timedelta | None = None,
    ) -> dict[str, timedelta]:
        """A new game's deadline per kind of phase (see Phase.timer), from the
        keeper's choices, else the config's defaults, else the game's own
        (Game.deadlines: Bluff's turns are many and short)."""
        own = rules.deadlines
        round_ = deadline if deadline is not None else self.config.deadline
        turn = turn or self.config.turn_deadline or own.get("turn") or round_  # unset or zero: the one before
        decision = decision or self.config.decision_deadline or own.get("decision") or turn
        deadlines = {"round": round_, "turn": turn, "decision": decision}
        for kind, length in deadlines.items():
            if length < timedelta(seconds=1):  # times are stored to the second
                raise EngineError(f"the {'' if kind == 'round' else kind + ' '}deadline must be at least 1 second")
        return deadlines

    def _create(
        self,
        kind: str,
        options: dict[str, Any],
        deadlines: dict[str, timedelta],
        settle: timedelta,
        name: str | None,
        state: GameState,
        seats_wanted: int | None = None,
        seed: bytes | None = None,
        notify: Notify | None = None,
        press: Press | None = None,
    ) -> int:
        seed = seed or self.seeds(32)
        return self.store.create_game(
            kind=kind,
            name=name,
            options=options,
            seed=seed.hex(),
            seed_commitment=commitment(seed),
            state=state,
            deadline_seconds=int(deadlines["round"].total_seconds()),
            turn_seconds=int(deadlines["turn"].total_seconds()),
            decision_seconds=int(deadlines["decision"].total_seconds()),
            settle_seconds=int(settle.total_seconds()),
            created_at=iso(self.clock()),
            finished_at=None,
            seats_wanted=seats_wanted,
            notify=notify,
            press=press,
        )

    def _begin(
        self, game_id: int, addresses: list[str], bots: int = 0, preface: Mapping[int, Sequence[str]] | None = None
    ) -> None:
        """Seat the players, announce the game (``preface``: what goes at the
        top of a seat's copy), open its first phase."""
        for seat, address in enumerate(addresses):
            self.store.add_seat(game_id, seat, address, bot=False, token=self.token(game_id, seat))
        for seat in range(len(addresses), len(addresses) + bots):
            self.store.add_seat(game_id, seat, None, bot=True, token=self.token(game_id, seat))
        self.store.start_game(game_id)
        table = self.tables.table(game_id)
        context = {
            **self.post.context(table),
            "digest": digest_line(None, table.digest()),
            "digest_help": "start",
            "notify_help": True,  # (each copy says how much mail its reader gets, and how to change it)
        }
        self.post.announce(table, f"{table.row['kind']}/start", context, news_since=None, preface=preface)
        self.phases.advance(game_id)

    # -- sign-up games (JOIN, START and LEAVE by mail) --------------------

    def wish(self, kind: str, seats: int | None, options: Mapping[str, str], press: str | None) -> Wish:
        """What a JOIN asks for, checked against the kind's rules: its seats
        within the kind's range, its options the game's own (Game.check_options)
        and ``press`` one of none, white or grey (none only, where the rules
        forbid table talk).  Refused, saying what is wrong, otherwise."""
        rules = get_game(kind)
        if seats is not None and not rules.min_seats <= seats <= rules.max_seats:
            raise Refusal(Why.JOIN_SEATS, title=rules.title, seats=seats, least=rules.min_seats, most=rules.max_seats)
        try:
            checked = rules.check_options(options)
        except OptionError as error:
            problem = str(error).strip("'\"")
            raise Refusal(Why.JOIN_OPTION, kind=kind, problem=problem, options=list(rules.options)) from None
        chosen = None
        if press is not None:
            if press.lower() not in tuple(Press):
                raise Refusal(Why.JOIN_OPTION, kind=kind, problem=f"press must be {', '.join(Press)}", options=[])
            chosen = Press(press.lower())
            if rules.press is Press.NONE and chosen is not Press.NONE:
                raise Refusal(Why.JOIN_OPTION, kind=kind, problem=f"{rules.title} allows no table talk", options=[])
        return Wish(kind, seats, {name: checked[name] for name in options}, chosen)

    def open_games(self, kind: str) -> list[GameRow]:
        """The games of ``kind`` open for sign-up, oldest first."""
        return [g for g in self.store.games(GameState.OPEN) if g["kind"] == kind]

    def matching(self, wish: Wish) -> GameRow | None:
        """The oldest open game that has what ``wish`` names (what it leaves
        unnamed may be anything), if one."""
        return next((game for game in self.open_games(wish.kind) if wish.fits(game)), None)

    def signup_of(self, kind: str, address: str) -> GameRow | None:
        """The open game of ``kind`` that ``address`` is signed up for (one
        at most: a player waits for one game of a kind at a time)."""
        for game in self.open_games(kind):
            if any(s["address"] == address for s in self.store.signups(game["id"])):
                return game
        return None

    def join(self, wish: Wish | str, address: str, message_key: str | None = None) -> tuple[int, bool]:
        """Sign ``address`` up for the oldest open game that fits ``wish`` (a
        kind alone: any open game of it),
        opening one if none does (with the seats and options it names; the
        kind's most seats and its defaults for what it leaves unnamed).
        Returns the game's id and whether it started (its seats are full).
        A game a JOIN by mail opens draws its seed from the referee's key and
        that mail (``message_key``): handled again after a restore, the mail
        makes the same game."""
        wish = Wish(wish) if isinstance(wish, str) else wish
        self._not_waiting_already(wish.kind, address)
        game = self.matching(wish)
        if game is not None:
            return self.join_game(game["id"], address)
        rules = get_game(wish.kind)
        seed = (
            None
            if message_key is None
            else hmac.new(self.key, f"seed\0{message_key}".encode(), hashlib.sha256).digest()
        )
        game_id = self._create(
            wish.kind,
            rules.check_options(wish.options),
            self._deadlines(rules),
            self.config.settle,
            None,
            GameState.OPEN,
            wish.seats or rules.max_seats,
            seed,
            press=wish.press,
        )
        return self.join_game(game_id, address)

    def join_game(self, game_id: int, address: str) -> tuple[int, bool]:
        """Sign ``address`` up for the open game ``game_id`` (the caller saw
        it open); it starts by itself when its seats are full (rule 3).
        Returns the game's id and whether it started."""
        game = self.tables.row(game_id)
        self._not_waiting_already(game["kind"], address)
        wanted = _seats_wanted(game)
        signed = [s["address"] for s in self.store.signups(game_id)]
        self.store.add_signup(game_id, address, iso(self.clock()))
        if len(signed) + 1 == get_game(game["kind"]).min_seats:  # its sign-up window opens now
            self.store.set_least_since(game_id, iso(self.clock()))
        if len(signed) + 1 < wanted:
            return game_id, False
        self._begin_signed(game_id, Began.FULL)
        return game_id, True

    def _not_waiting_already(self, kind: str, address: str) -> None:
        waiting = self.signup_of(kind, address)
        if waiting is not None:
            signed = len(self.store.signups(waiting["id"]))
            raise Refusal(Why.SIGNED_ALREADY, game=waiting["id"], more=_seats_wanted(waiting) - signed)

    def start(self, kind: str, address: str) -> Started:
        """``address``, signed up for an open game of ``kind``, asks to start
        it now (START): it starts once it has its kind's least players and
        all of them asked.  Refused when they are signed up for none."""
        game = self.signup_of(kind, address)
        if game is None:
            raise Refusal(Why.START_NOT_SIGNED, title=get_game(kind).title)
        now = iso(self.clock())
        self.store.set_signup_start(game["id"], address, now)
        signups = self.store.signups(game["id"])
        least = get_game(kind).min_seats
        names = name_seats([s["address"] for s in signups])
        waiting = [name for name, s in zip(names, signups, strict=True) if not s["start"]]
        started = len(signups) >= least and not waiting
        if started:
            self._begin_signed(game["id"], Began.START)
        return Started(game["id"], started, max(least - len(signups), 0), waiting)

    def leave(self, kind: str, address: str) -> None:
        """Take ``address`` off the open game of ``kind`` it is signed up for
        (the caller saw it there: signup_of); the game starts at once if
        everyone left has sent START and they are at least its fewest."""
        game = self.signup_of(kind, address)
        if game is None:
            raise EngineError(f"{address} is signed up for no {kind} game")
        self.store.remove_signup(game["id"], address)
        # The one everyone else waited for has gone: if those left are enough and all sent START, it starts.
        signups = self.store.signups(game["id"])
        if len(signups) < get_game(kind).min_seats:  # below its least: the window closes, to open again when reached
            self.store.set_least_since(game["id"], None)
        if len(signups) >= get_game(kind).min_seats and all(s["start"] for s in signups):
            self._begin_signed(game["id"], Began.START)

    # -- the sign-up window ----------------------------------------------------

    def window_opened(self, game: GameRow) -> datetime | None:
        """When an open game last reached its kind's least players, if it has
        them: ``games.least_since``, which a LEAVE that keeps them leaves as
        it was (a game opened before schema 6 kept none: the sign-up that
        makes up the least, as they stand now)."""
        signups = self.store.signups(game["id"])
        least = get_game(game["kind"]).min_seats
        if len(signups) < least:
            return None
        return from_iso(game["least_since"] or signups[least - 1]["joined_at"])

    def windows_end(self, game_id: int | None = None) -> list[datetime]:
        """When each open game (or ``game_id`` alone) with its least players
        starts by itself: ``[club] signup_window`` after it reached them."""
        moments = []
        for game in self.store.games(GameState.OPEN, game_id):
            opened = self.window_opened(game)
            moments += [] if opened is None else [opened + self.config.signup_window]
        return moments

    def start_due(self) -> list[str]:
        """Start every open game whose sign-up window has passed (Timers.tick),
        with the players it has; returns what it did, one line each.  It
        starts as of the window's end, as a phase opens when the one before
        it became due (Phases._insert), not when the referee next ran: a
        restore, which catches up as of that moment, makes the same game."""
        done = []
        now = self.clock()
        for game in self.store.games(GameState.OPEN):
            opened = self.window_opened(game)
            if opened is not None and opened + self.config.signup_window <= now:
                # As of the window's end, not of the tick that saw it pass (cron's, or the
                # runner's a second on): its first phase opens then, as it does when the
                # same mail is handled again after a restore (catch_up ticks at that very
                # moment); a referee that was down opens it late instead (Phases' LATE_OPEN).
                with self.store.transaction(), self.clock.at(opened + self.config.signup_window):
                    self._begin_signed(game["id"], Began.WINDOW)
                done.append(f"started game {game['id']}: its sign-up window passed")
        return done

    def _begin_signed(self, game_id: int, began: Began) -> None:
        """Start an open game with everyone signed up: each is told in the
        start mail that their sign-up holds and why it starts now (a mail
        no cap holds back: the one confirmation of a sign-up a capped answer
        would drop)."""
        game = self.tables.row(game_id)
        addresses = [s["address"] for s in self.store.signups(game_id)]
        started = self.post.composer.section(
            "signup-started",
            game=game_id,
            title=get_game(game["kind"]).title,
            began=began.value,
            players=len(addresses),
            wanted=_seats_wanted(game),
            window=self.config.signup_window,
        )
        self._begin(game_id, addresses, preface={seat: [started] for seat in range(len(addresses))})
        log.info("game %d (%s) starts with %d players: %s", game_id, game["kind"], len(addresses), began.value)

    # -- a player leaves a running game (rule 8) ---------------------------

    def resign(self, game_id: int, address: str) -> None:
        """The keeper's `referee resign`: see resign_seat."""
        with self.store.transaction():
            table = self.tables.running(game_id)
            seat = table.seat_of(address)
            if seat is None or not table.human(seat):
                raise EngineError(f"{address} plays no seat in game {game_id}")
            try:
                self.resign_seat(table, seat, confirm=True)
            except Refusal as refusal:
                raise EngineError(self.post.composer.refusal(refusal)) from None

    def resign_seat(self, table: Table, seat: int, confirm: bool) -> None:
        """A random bot takes the seat from now on.  With ``confirm`` the
        player gets a mail saying so (a RESIGN by mail is confirmed in the
        reply to it); everyone else is told."""
        # A phase that closed or passed its deadline before the player left is
        # resolved first, as of then: they leave in the next (the record says so).
        self.phases.advance(table.id, deadlines=True)
        table = self.tables.table(table.id)
        phase = table.open_phase
        if phase is None:
            raise Refusal(Why.GAME_ENDED, game=table.id)
        # Left as of the mail's receipt, but never before the phase it is
        # recorded in (a RESIGN read after phases were resolved meanwhile).
        now = max(self.clock(), from_iso(phase["opened_at"]))
        address = table.label(seat)
        self.delegating.seat_changed(table.id, seat, f"seat {seat + 1}'s player left the game")
        if confirm:
            self.post.send(table, seat, "resigned", {**self.post.context(table, seat), "address": address})
        taken = _taken_from_a_bot(table, seat, phase["number"])
        if taken is None:
            self.store.make_bot(table.id, seat, phase["number"], iso(now))
        else:  # they took a bot's seat over in this phase and leave before playing it: that bot plays on
            since, left = taken["bot_from_phase"], taken["left_at"]
            self.store.make_bot(table.id, seat, since, left, **({"address": None} if since == 0 else {}))
        table = self.tables.table(table.id)
        self.post.announce(table, "left", {**self.post.context(table), "seat": seat, "address": address})
        log.info("game %d: seat %d is now a bot", table.id, seat + 1)
        if self.on_leaving is not None:  # offered to someone on standby first: its bot then waits for them
            self.on_leaving(table.id, seat)
        self.phases.bot_moves(self.tables.table(table.id), phase, now)
        self.phases.advance(table.id)


def _taken_from_a_bot(table: Table, seat: int, phase: int) -> dict[str, Any] | None:
    """The takeover of a bot's seat made in ``phase``, if the seat's player
    took it so: a person plays it only from the next phase (record.stints),
    unless its bot waited for them in this one."""
    for act in reversed(table.interventions):
        if act["act"] == Act.REPLACE and act["detail"]["seat"] == seat:
            taken = act["phase"] == phase and act["detail"]["bot_from_phase"] is not None
            # (a newcomer whose bot waited for them plays this phase: they leave it as any player does)
            return act["detail"] if taken and not act["detail"].get("bot_waited") else None
    return None


def check_player_address(address: str, own: str) -> None:
    """EngineError unless ``address`` is one a player may hold a seat with:
    a mail address, and not the referee's own (its mail to itself is
    dropped as its own: that seat would play at random, and nobody know)."""
    if not is_address(address):
        raise EngineError(f"'{address}' is not a mail address")
    if normalised(address) == normalised(own):
        raise EngineError(f"{address} is the referee's own address: no player can hold a seat with it")


def _seats_wanted(game: GameRow) -> int:
    """How many seats a sign-up game waits for (join makes every one with its
    number: only a keeper's game, running from the start, has none)."""
    wanted = game["seats_wanted"]
    if wanted is None:
        raise EngineError(f"game {game['id']} is open for sign-up but says no number of seats")
    return wanted
