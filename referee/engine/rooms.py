"""The engine's rooms, built once over one store and shared.

Each room is handed only the rooms below it, so arrows run one way:

    tables (referee.tables)   a game read from its record, state by replay
    post                      mail contexts and every mail queued
    offers                    what an address is asked to confirm by reply
    absences                  a player's time away (AWAY, BACK), and the deadlines it holds
    notices                   how much mail each player gets (NOTIFY): results, prompts, digests
    phases                    open, take moves, resolve, open the next
    delegating                stand-ins: who moves for a seat until a time
    seating, keeping          games and seats; the keeper's acts (extend, pause, replace...)
    addresses                 a seat's move to a new address (confirmed by it, or the keeper's)
    standby                   who takes over a seat left mid-game (offered it by an offer)
    talk                      table talk (TELL) relayed between seats, and its answers
    observers                 who follows a game's public mail without a seat (WATCH, confirmed by an offer)
    timers                    deadlines, reminders, the ends of pauses
    reports                   LIST, status, history, health (reads only)
    watch                     the keepers' mail about the health

The desk (one message) is handed the Rooms; the Engine (referee.engine) is
the Rooms with a front door for mail.

The rooms' time comes from one clock and their secrets from one seed
source, both handed in (a test's own, or the system's): ``seeds(n)`` gives
n random bytes, each new game's seed and, when games.db makes its own, the
referee's key.
"""

from __future__ import annotations

import secrets

from referee.config import Config
from referee.engine.absence import Absences
from referee.engine.addresses import Addresses
from referee.engine.delegating import Delegating
from referee.engine.keeping import Keeping
from referee.engine.notices import Notices
from referee.engine.observers import Observers
from referee.engine.offers import Offers, Terms
from referee.engine.phases import Phases
from referee.engine.post import Post
from referee.engine.reports import Reports
from referee.engine.seating import Seating, Seeds
from referee.engine.standby import Standby
from referee.engine.talk import TableTalk
from referee.engine.timers import Timers
from referee.engine.watch import Watch
from referee.mail.compose import Composer
from referee.standings import replayed_results
from referee.store import OfferKind, Store
from referee.tables import Tables
from referee.timeutil import Clock, EventClock, utc_now


class Rooms:
    def __init__(self, store: Store, config: Config, clock: Clock = utc_now, seeds: Seeds = secrets.token_bytes):
        self.store = store
        self.config = config
        self.clock = clock if isinstance(clock, EventClock) else EventClock(clock)
        self.key = config.secret_key or _stored_key(store, seeds)
        self.composer = Composer(config)
        self.tables = Tables(store)
        self.post = Post(store, config, self.clock, self.composer, self.key)
        self.offers = Offers(store, config, self.clock, self.post, self.key)  # each kind's Terms: the room that offers
        # every room reads the one clock (see EventClock)
        self.absences = Absences(store, config, self.clock, self.tables, self.post)
        self.notices = Notices(store, config, self.clock, self.tables, self.post)
        self.phases = Phases(store, config, self.clock, self.tables, self.post, self.absences, self.notices)
        self.delegating = Delegating(store, config, self.clock, self.tables, self.post, self.offers, self.key)
        self.offers.register(OfferKind.DELEGATE, Terms(self.delegating.begin, self.delegating.declined))
        self.seating = Seating(
            store, config, self.clock, self.key, self.tables, self.post, self.phases, seeds, self.delegating
        )
        self.keeping = Keeping(
            store, config, self.clock, self.tables, self.post, self.phases, self.absences, self.delegating
        )
        self.addresses = Addresses(
            store, config, self.clock, self.key, self.tables, self.post, self.phases, self.offers
        )
        self.offers.register(OfferKind.ADDRESS, Terms(self.addresses.confirmed, self.addresses.lapsed))
        self.standby = Standby(store, config, self.clock, self.tables, self.offers, self.keeping, self.phases)
        self.offers.register(OfferKind.SEAT, Terms(self.standby.accept, self.standby.lapse))
        self.seating.on_leaving = self.standby.seat_left  # a seat left mid-game is offered to standby
        self.talk = TableTalk(store, config, self.clock, self.key, self.post)
        self.observers = Observers(store, config, self.clock, self.tables, self.post, self.offers, self.key)
        self.offers.register(OfferKind.WATCH, Terms(self.observers.accepted))
        self.timers = Timers(
            store,
            config,
            self.clock,
            self.tables,
            self.post,
            self.phases,
            self.keeping,
            self.absences,
            self.offers,
            self.delegating,
            self.notices,
            self.seating,
        )
        self.reports = Reports(store, self.tables, self.post)
        self.watch = Watch(store, config, self.clock, self.post, self.reports)
        for seat in store.seats_without_token():  # a games.db from before reply tokens
            store.set_token(seat["game_id"], seat["seat"], self.seating.token(seat["game_id"], seat["seat"]))
        unscored, _ = store.unscored()  # games finished before their results were kept (referee.standings)
        if unscored:
            with store.transaction():  # (a game that cannot be replayed has none, and stops nothing)
                for game_id in unscored:
                    store.add_results(game_id, replayed_results(self.tables, game_id) or [])


def _stored_key(store: Store, seeds: Seeds) -> bytes:
    """Without a configured secret key, one made at first use and kept in games.db."""
    key = store.get_meta("secret_key")  # read first: most commands then write nothing
    if key is not None:
        return key.encode()
    with store.transaction():
        key = store.get_meta("secret_key")
        if key is None:
            key = seeds(32).hex()
            store.set_meta("secret_key", key)
    return key.encode()
