"""How much mail each player gets (NOTIFY EVERY, TURNS or DIGEST): who is
sent a phase's result, what goes at the top of a prompt, the private news a
result not sent carried, and the daily digest.

At every level a player gets their prompts, the answers to their mails,
their private news, the start and the final result, reminders and the
keeper's announcements.  EVERY also gets every phase's result as it is
resolved (the referee's mail before there were levels).  TURNS gets the
result of each round or auction (a phase whose next belongs to another:
``Game.round_of``); what happened inside it comes at the top of their next
mail, the result or a prompt.  DIGEST gets no results but one mail a day
with everything resolved since the last (a job of ``Timers.tick``).

What each seat has been told is kept apart from the record (``Store.told``:
the last phase whose result reached it), so each phase is told once, and a
restart neither sends a digest again nor skips one.  Who won, the record
and every deadline are the same at every level: only the mail differs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from referee.config import Config
from referee.engine.post import Post, Reader
from referee.record import digest_line
from referee.store import Notify, PhaseRow, Store
from referee.tables import Table, Tables
from referee.timeutil import EventClock, from_iso, iso

log = logging.getLogger("referee")

DIGEST_EVERY = timedelta(days=1)  # a DIGEST seat's mail of what happened: once a day at most

News = Mapping[str, Any]  # a seat's private news (Game.private_news)


@dataclass(eq=False)
class Notices:
    store: Store
    config: Config
    clock: EventClock
    tables: Tables
    post: Post

    # -- the level -----------------------------------------------------------

    def set_level(self, table: Table, seat: int, level: Notify) -> list[str]:
        """The seat's own level from now on (NOTIFY).  A daily digest is
        first due a day after it was chosen.  Leaving DIGEST, returns the
        seat's private news its next digest was to carry (there will be no
        digest): the caller tells it at once.  What happened in public since
        its last digest comes at the top of its next mail, as at TURNS."""
        pending = []
        if self.post.level(table, seat) is Notify.DIGEST and level is not Notify.DIGEST:
            told = self.store.told(table.id).get(seat)
            pending = self._news_since(table, seat, told["through"] if told else 0, len(table.replay.steps))
        self.store.set_notify(table.id, seat, level)
        if level is Notify.DIGEST:
            told = self.store.told(table.id).get(seat)
            self.store.set_told(table.id, [seat], told["through"] if told else 0, digest_at=iso(self.clock()))
        log.info("game %d: seat %d gets %s mail", table.id, seat + 1, level.value)
        return pending

    # -- a phase resolved, the next one opened -------------------------------

    def result(self, table: Table, phase: PhaseRow, context: dict[str, Any], before: Any) -> dict[int, News]:
        """The result of the phase just resolved (``context``: its round
        mail's), to each person whose level asks for it, with what they were
        not told yet at its top.  Returns the private news (``before``: the
        state before it) of each seat not sent it: the caller passes it on."""
        number = phase["number"]
        following = table.phases[number] if number < len(table.phases) else None
        ends = following is None or table.rules.round_of(phase["label"]) != table.rules.round_of(following["label"])
        template = f"{table.row['kind']}/round"
        told, held, sent = self.store.told(table.id), dict[int, News](), list[int]()
        for seat in range(len(table.seats)):
            if not table.human(seat):
                continue
            level = self.post.level(table, seat)
            news = table.rules.private_news(before, table.state, seat)
            if level is Notify.EVERY or (level is Notify.TURNS and ends):
                through = told[seat]["through"] if seat in told else 0
                self.post.copy(table, seat, template, context, news, self._since(table, through, number - 1))
                sent.append(seat)
            elif news is not None:
                held[seat] = news
        self.store.set_told(table.id, sent, number)
        for reader in self.post.readers(table):
            if reader.level is Notify.EVERY:
                self.post.to_reader(table, reader, template, context)
            elif reader.level is Notify.TURNS and ends:  # with the round's phases before this one at its top
                first = _round_start(table, number)
                since = self._since(table, first - 1, number - 1, by_name=True)
                self.post.to_reader(table, reader, template, context, since)
        return held

    def prompts(self, table: Table, movers: Mapping[int, News | None]) -> None:
        """Each mover's prompt (``movers``: seat -> its private news held
        from a result it was not sent, or None), and (at EVERY and TURNS)
        what happened since its last mail at its top.  What the seats were
        told is read once and written once for them all."""
        told, last, prompted = self.store.told(table.id), len(table.replay.steps), list[int]()
        for seat, news in movers.items():
            preface = [self._news(table, seat, news)] if news is not None else []
            if self.post.level(table, seat) is not Notify.DIGEST:  # (a digest tells it)
                preface += self._since(table, told[seat]["through"] if seat in told else 0, last)
                prompted.append(seat)
            self.post.prompt(table, seat, preface)
        self.store.set_told(table.id, prompted, last)

    def news(self, table: Table, held: Mapping[int, News]) -> None:
        """Private news whose result was not sent and no prompt carried: a
        mail of its own, so it is never lost; at DIGEST, the next daily
        digest carries it (a mail for each would be no digest)."""
        for seat, news in held.items():
            if self.post.level(table, seat) is not Notify.DIGEST:
                self.post.send(table, seat, "news", {**self.post.context(table, seat), "news": news})

    def final_news(self, table: Table, held: Mapping[int, News]) -> dict[int, list[str]]:
        """For the top of the final mail: the private news of the last
        phase of each seat not sent its result; a DIGEST seat's, all its
        news since its last digest."""
        told, last = self.store.told(table.id), len(table.replay.steps)
        preface = {seat: [self._news(table, seat, news)] for seat, news in held.items()}
        for seat in range(len(table.seats)):
            if table.human(seat) and self.post.level(table, seat) is Notify.DIGEST:
                preface[seat] = self._news_since(table, seat, told[seat]["through"] if seat in told else 0, last)
        return preface

    def _news_since(self, table: Table, seat: int, after: int, through: int) -> list[str]:
        """A seat's private news of phases ``after`` + 1 to ``through``, each
        as it was when that phase was resolved (replayed: nothing is kept)."""
        steps, found = table.replay.steps, []
        for number in range(after + 1, through + 1):
            after_it = steps[number].before if number < len(steps) else table.state
            news = table.rules.private_news(steps[number - 1].before, after_it, seat)
            if news is not None:
                found.append(self._news(table, seat, news))
        return found

    def _news(self, table: Table, seat: int, news: News) -> str:
        # (a game's news may name the other seats: ``players``, as in any mail about the game)
        return self.post.composer.section("_news", **self.post.context(table, seat), news=news)

    def _since(self, table: Table, after: int, through: int, by_name: bool = False) -> list[str]:
        """What phases ``after`` + 1 to ``through`` did, for the top of a mail
        (nothing when there are none); ``by_name``: for a reader's copy."""
        if through <= after:
            return []
        rounds = [self.post.round_context(table, number) for number in range(after + 1, through + 1)]
        context = self.post.context(table)
        if by_name:
            context["players"] = self.post.by_name(table, context["players"])
            context["public_copy"] = True  # ("Earlier in this round", not "since your last mail")
        return [self.post.composer.section("_since", **context, rounds=rounds)]

    # -- the daily digest -----------------------------------------------------

    def digests(self) -> list[str]:
        """Send each digest due (Timers.tick): to a DIGEST seat that has been
        told of no phase resolved since, a day after its last digest (or
        after it chose them, or its game began); and so to each reader at
        DIGEST (a club's list at ``announce_notify = "digest"``, an observer)."""
        now, done = self.clock(), []
        for row in self.store.digest_seats(self.config.notify):
            due = _due(row)
            if due is not None and due <= now:
                with self.store.transaction():
                    done.append(self._digest(self.tables.table(row["game_id"]), row["seat"], row, now))
        for digest in self._reader_digests():
            if digest.due <= now:
                with self.store.transaction():
                    done.append(self._reader_digest(digest, now))
        return done

    def digests_due(self, game_id: int | None = None) -> list[datetime]:
        """When the next digests fall due (of one game's seats and readers, with ``game_id``)."""
        rows = self.store.digest_seats(self.config.notify)
        seats = [due for row in rows if game_id in (None, row["game_id"]) and (due := _due(row)) is not None]
        return seats + [digest.due for digest in self._reader_digests(game_id)]

    def _reader_digests(self, game_id: int | None = None) -> list[_ReaderDigest]:
        """The digests owed to the readers at DIGEST of the running games
        (of one, with ``game_id``): each once a phase they were not told of
        is resolved, a day after their last (or since they chose DIGEST,
        or the game began).  Read from the store alone: no game is replayed."""
        owed = []
        # Only the games that may have such a reader are read: the others cost nothing per tick.
        lists_at_digest = self.config.announce_notify is Notify.DIGEST
        games = self.store.games_read_by_digest(lists_at_digest, bool(self.config.announce_to), self.config.notify)
        for game in games:
            if game_id not in (None, game["id"]):
                continue
            readers = [reader for reader in self.post.readers_of(game) if reader.level is Notify.DIGEST]
            told = self.store.reader_told(game["id"]) if readers else {}
            for reader in readers:
                row = told.get(reader.address.lower())
                through = row["through"] if row else 0
                untold_at = self.store.resolved_at(game["id"], through + 1)
                if untold_at is None:
                    continue
                since = (row["digest_at"] if row else None) or game["created_at"] or untold_at
                due = max(from_iso(untold_at), from_iso(since) + DIGEST_EVERY)
                owed.append(_ReaderDigest(game["id"], reader, through, since, due))
        return owed

    def _reader_digest(self, digest: _ReaderDigest, now: datetime) -> str:
        """A reader's daily digest: what the game did in public since their last."""
        table = self.tables.table(digest.game_id)
        last = len(table.replay.steps)
        rounds = [self.post.round_context(table, number) for number in range(digest.through + 1, last + 1)]
        context = {
            **self.post.context(table),
            "rounds": rounds,
            "since": digest.since,
            "digest": digest_line(table.phases[last - 1]["label"], table.digest(last)),
            "digest_help": "round",
        }
        self.post.to_reader(table, digest.reader, "daily", context)
        self.store.set_reader_told(table.id, digest.reader.address, last, iso(now))
        return f"sent game {table.id}'s daily digest of {len(rounds)} phase(s) to a reader"

    def _digest(self, table: Table, seat: int, told: Mapping[str, Any], now: datetime) -> str:
        last = len(table.replay.steps)
        rounds = [self.post.round_context(table, number) for number in range(told["through"] + 1, last + 1)]
        context = {
            **self.post.context(table),
            "rounds": rounds,
            "since": told["digest_at"] or table.row["created_at"],
            "digest": digest_line(table.phases[last - 1]["label"], table.digest(last)),
            "digest_help": "round",
        }
        self.post.send(table, seat, "daily", context, self._news_since(table, seat, told["through"], last))
        self.store.set_told(table.id, [seat], last, digest_at=iso(now))
        return f"sent game {table.id}'s daily digest of {len(rounds)} phase(s) to seat {seat + 1}"


@dataclass(frozen=True)
class _ReaderDigest:
    """A daily digest a reader (a list, an observer) is owed (Notices._reader_digests)."""

    game_id: int
    reader: Reader
    through: int  # the last phase they were told of
    since: str  # their last digest's time (or when they chose DIGEST, or the game's start)
    due: datetime


def _round_start(table: Table, number: int) -> int:
    """The number of the first phase of the round (Game.round_of) phase ``number`` is in."""
    label = table.rules.round_of
    first = number
    while first > 1 and label(table.phases[first - 2]["label"]) == label(table.phases[number - 1]["label"]):
        first -= 1
    return first


def _due(told: Mapping[str, Any]) -> datetime | None:
    """When a DIGEST seat's next digest is due: a day after its last (or
    since it chose them, or its game began), and not before the first phase
    it has not been told of was resolved; None while there is none."""
    if told["untold_at"] is None:
        return None
    return max(from_iso(told["untold_at"]), from_iso(told["digest_at"] or told["created_at"]) + DIGEST_EVERY)
