"""Who sits at a game: new games made by the keeper, sign-up games filled by
JOIN and LEAVE, and seats handed to a random bot when their player leaves.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
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
from referee.tables import Table, Tables
from referee.timeutil import Clock, from_iso, iso

log = logging.getLogger("referee")

Seeds = Callable[[int], bytes]  # n random bytes: secrets.token_bytes, or a test's own (see Rooms)


@dataclass(eq=False)
class Seating:
    store: Store
    config: Config
    clock: Clock
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

    def _begin(self, game_id: int, addresses: list[str], bots: int = 0) -> None:
        """Seat the players, announce the game, open its first phase."""
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
        self.post.announce(table, f"{table.row['kind']}/start", context, news_since=None)
        self.phases.advance(game_id)

    # -- sign-up games (JOIN and LEAVE by mail) ----------------------------

    def open_game(self, kind: str) -> GameRow | None:
        """The game of ``kind`` open for sign-up, if there is one."""
        games = [g for g in self.store.games(GameState.OPEN) if g["kind"] == kind]
        return games[0] if games else None

    def join(self, kind: str, address: str, message_key: str | None = None) -> tuple[int, bool]:
        """Sign ``address`` up for the open game of ``kind`` (opening one if
        none is); the game starts by itself when its seats are full (rule 3).
        Returns the game's id and whether it started.  A game a JOIN by mail
        opens draws its seed from the referee's key and that mail
        (``message_key``): handled again after a restore, the mail makes the
        same game."""
        game = self.open_game(kind)
        if game is not None:
            game_id, wanted = game["id"], _seats_wanted(game)
        else:
            rules = get_game(kind)
            seed = (
                None
                if message_key is None
                else hmac.new(self.key, f"seed\0{message_key}".encode(), hashlib.sha256).digest()
            )
            wanted = rules.max_seats
            game_id = self._create(
                kind,
                rules.check_options({}),
                self._deadlines(rules),
                self.config.settle,
                None,
                GameState.OPEN,
                wanted,
                seed,
            )
        signed = [s["address"] for s in self.store.signups(game_id)]
        if address in signed:
            raise Refusal(Why.SIGNED_ALREADY, game=game_id, more=wanted - len(signed))
        self.store.add_signup(game_id, address, iso(self.clock()))
        if len(signed) + 1 < wanted:
            return game_id, False
        self._begin(game_id, signed + [address])
        log.info("game %d (%s) starts: its seats are full", game_id, kind)
        return game_id, True

    def signed_up(self, kind: str, address: str) -> bool:
        game = self.open_game(kind)
        return game is not None and any(s["address"] == address for s in self.store.signups(game["id"]))

    def leave(self, kind: str, address: str) -> None:
        """Take ``address`` off the open game of ``kind`` (the caller saw it
        there: signed_up)."""
        game = self.open_game(kind)
        if game is None:
            raise EngineError(f"no {kind} game is open for sign-up")
        self.store.remove_signup(game["id"], address)

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
        log.info("game %d: seat %d is now a bot", table.id, seat)
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
