"""The engine: the only part of the referee that changes a game.

A phase's life: it opens (each human mover gets a private prompt, each bot
moves at once) -> moves are taken until all are in, or the deadline passes
-> missing moves are filled at random -> it resolves -> the public
announcement goes out -> the next phase opens, or the game ends.

The work is done in rooms (see referee.engine.rooms); ``Engine`` is their
front door, what the command line, the runner and the tests drive.  A
message goes in through ``ingest`` to the desk (referee.desk), which reads it
and calls the rooms; the rooms never call the desk.

Every entry point that writes runs in one store transaction (a new game, a
message, a resignation with the outage guard before it, a restore's
notices, the keepers' mail with the note of what they were told; a tick
and the outage guard in one per game they change, and a tick in one more
for its bookkeeping), so the record entries and the mail each causes are
committed together or not at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from referee.desk import Desk, Outcome
from referee.engine.rooms import Rooms
from referee.errors import EngineError
from referee.interrupt import reading
from referee.mail.parse import Incoming, parse, unreadable
from referee.store import GameState, OutcomeCode, StorageFault
from referee.tables import Table
from referee.timeutil import iso

__all__ = ["Engine", "EngineError"]

KEPT_HEADER = 64 * 1024  # bytes of an oversized mail's header section kept
KEPT_EXCERPT = 4 * 1024  # bytes of its body


def kept(raw: bytes, max_size: int, size: int | None = None) -> bytes:
    """What games.db keeps of a received mail: all of it, up to the largest
    mail the referee reads; of a larger one (it stays whole on the mail
    server; ``raw`` may be only its start, the whole being ``size`` bytes)
    its header section, up to KEPT_HEADER, and the first KEPT_EXCERPT bytes
    of its body, so a flood of large mail cannot fill the disk."""
    whole = len(raw) if size is None else size
    if whole <= max_size and whole == len(raw):
        return raw
    for blank in (b"\r\n\r\n", b"\n\n"):
        end = raw.find(blank, 0, KEPT_HEADER)
        if end >= 0:
            body = end + len(blank)
            return raw[: body + KEPT_EXCERPT]
    return raw[:KEPT_HEADER]


log = logging.getLogger("referee")


def _the_machines(error: BaseException) -> bool:
    """Whether an error met while a message is handled is the machine's, not
    the message's: games.db's (the StorageFault), a file the referee reads
    or writes beside it (a template the disk cannot read, no file descriptor
    left), or memory run out (MemoryError: the machine's, perhaps, as much as
    the mail's; the runner tries the mail again alone before it gives up on
    it, see Runner.receive).  A ConnectionError is a server's."""
    return isinstance(error, (StorageFault, MemoryError)) or (
        isinstance(error, OSError) and not isinstance(error, ConnectionError)
    )


class Engine(Rooms):
    # -- mail in -----------------------------------------------------------

    def ingest(self, raw: bytes, received_at: datetime | None = None, size: int | None = None) -> Outcome:
        """Handle one received message, exactly once.  ``received_at`` is the
        server's receipt time when the mail source knows it; ``size`` the
        whole message's bytes when ``raw`` is only its start (the source reads
        no more of a message over max_message_size).

        A message that meets a bug is kept, unanswered, as ``failed`` (the
        runner quarantines it).  A storage fault (games.db full, locked,
        read-only or damaged; see referee.store) is no fault of the message:
        it raises StorageFault and records nothing, so the message stays on
        the mail server for the next run; so does an OSError of a file the
        referee reads beside it (a template the disk cannot read)."""
        now = self.clock()
        try:
            # A stop signal may end it here: it changes nothing (referee.interrupt).
            message = reading(parse, raw, now, received_at, max_size=self.config.max_message_size, size=size)
        except Exception as error:  # (a parser bug must not stop the daemon on this mail)
            if isinstance(error, MemoryError):  # the machine's, perhaps: see _the_machines
                raise
            log.exception("a message of %d bytes could not be parsed", len(raw))
            message = unreadable(raw, now, received_at, size)
            outcome = Outcome(OutcomeCode.FAILED, "the message could not be parsed; it is kept in the store")
            with self.store.transaction():
                if not self.store.seen(message.key):
                    self._record(message, now, outcome)
            return outcome
        outcome = self._handle(message, now)
        log.info("message %s from %s: %s", message.key, message.sender, outcome.code)
        return outcome

    def set_aside(self, key: str, received_at: datetime, detail: str) -> None:
        """Record a mail the runner quarantined without handling it (it could
        not be read, or passes died on it): failed, so ``referee status``
        lists it, with none of its bytes (the quarantine folder has it whole)."""
        with self.store.transaction():
            self.store.record_message(
                key=key,
                message_id=None,
                sender="",
                subject="",
                received_at=iso(received_at),
                handled_at=iso(self.clock()),
                game_id=None,
                code=OutcomeCode.FAILED,
                detail=detail,
                raw=b"",
            )

    def _handle(self, message: Incoming, now: datetime) -> Outcome:
        try:
            with self.store.transaction():
                if self.store.seen(message.key):
                    return Outcome(OutcomeCode.DUPLICATE, f"{message.key} was handled before")
                with self.clock.at(message.received_at):  # see EventClock
                    self.keeping.resume_due()  # a pause over when the mail came is over for it
                    outcome = Desk(self, message).handle()
                self._record(message, now, outcome)
        except Exception as error:
            if _the_machines(error):  # no fault of the message: it stays on the mail server
                raise
            # A bug must neither lose the message nor fail on it at every
            # redelivery: keep it, unanswered, for the keeper to look at.
            log.exception("message %s from %s could not be handled", message.key, message.sender)
            outcome = Outcome(OutcomeCode.FAILED, "an internal error; the message is kept in the store")
            with self.store.transaction():
                self._record(message, now, outcome)
        return outcome

    def _record(self, message: Incoming, now: datetime, outcome: Outcome) -> None:
        self.store.record_message(
            key=message.key,
            message_id=message.message_id,
            sender=message.sender,
            subject=message.subject,
            received_at=iso(message.received_at),
            handled_at=iso(now),
            game_id=outcome.game_id,
            code=outcome.code,
            detail=outcome.detail,
            raw=kept(message.raw, self.config.max_message_size, message.size),
        )

    # -- the keeper's and the runner's entry points --------------------------

    def new_game(self, kind: str, players: list[str], **choices: Any) -> int:
        """See Seating.new_game."""
        return self.seating.new_game(kind, players, **choices)

    def resign(self, game_id: int, address: str) -> None:
        with self._acting():  # the guard's deadline moves too: all or nothing
            # then the seat's phase is resolved first if it is due (Seating.resign_seat)
            self.seating.resign(game_id, address)

    # The keeper's acts (Keeping): each in one transaction, after the outage
    # guard (a deadline the referee slept through moves first) and the end
    # of any pause whose time has come (the act meets the game as it is),
    # each returning its one line for the keeper.

    @contextmanager
    def _acting(self) -> Iterator[None]:
        with self.store.transaction():
            self.guard_outage()
            self.keeping.resume_due()
            yield

    def extend(self, game_id: int, length: timedelta, who: str, why: str = "", **how: Any) -> str:
        with self._acting():
            return self.keeping.extend(game_id, length, who, why, **how)

    def pause(self, game_id: int, who: str, why: str = "", **how: Any) -> str:
        with self._acting():
            return self.keeping.pause(game_id, who, why, **how)

    def resume(self, game_id: int, who: str, why: str = "") -> str:
        with self._acting():
            return self.keeping.resume(game_id, who, why)

    def cancel(self, game_id: int, who: str, why: str) -> str:
        with self._acting():
            return self.keeping.cancel(game_id, who, why)

    def replace(self, game_id: int, seat: str, address: str, who: str, why: str = "") -> str:
        with self._acting():
            return self.keeping.replace(game_id, seat, address, who, why)

    def say(self, game_id: int, text: str, who: str, seat: str | None = None) -> str:
        with self._acting():
            return self.keeping.say(game_id, text, who, seat)

    def address(self, game_id: int, seat: str, address: str, who: str, why: str = "") -> str:
        with self._acting():
            return self.addresses.move(game_id, seat, address, who, why)

    def tick(self) -> list[str]:
        return self.timers.tick()

    def guard_outage(self) -> list[str]:
        return self.timers.guard_outage()

    def next_due(self, game_id: int | None = None) -> list[datetime]:
        return self.timers.next_due(game_id)

    def due_stamp(self) -> tuple[int, ...]:
        return self.timers.due_stamp()

    # -- after a restore (see Runner.handle_again) ---------------------------

    def catch_up(self, until: datetime) -> list[str]:
        return self.timers.catch_up(until)

    @contextmanager
    def restoring(self, sent_before: Callable[[str], bool]) -> Iterator[None]:
        """Inside, the mail handled is mail handled before a restore, by a
        referee that was running: what it makes was sent then if
        ``sent_before`` says so (by Message-ID), and is kept as "restored",
        not sent again; the rest is queued as usual."""
        self.post.sent_before, self.clock.replaying = sent_before, True
        try:
            yield
        finally:
            self.post.sent_before, self.clock.replaying = None, False

    def announce_restore(self, game_ids: list[int], backup_at: str | None, again: int) -> int:
        """One short notice to each person who plays in ``game_ids`` (the
        games the mail handled again changed): the referee restored its
        records, and nothing they were told changes.  Returns how many."""
        with self.store.transaction():
            return self._announce_restore(game_ids, backup_at, again)

    def _announce_restore(self, game_ids: list[int], backup_at: str | None, again: int) -> int:
        addresses: dict[str, list[str]] = {}
        for game_id in game_ids:
            table = self.tables.table(game_id)
            if table.row["state"] != GameState.RUNNING:
                continue
            for seat in table.seats:
                if table.human(seat["seat"]):
                    addresses.setdefault(table.label(seat["seat"]), []).append(table.tag())
        for address, tags in addresses.items():
            context = {
                "game": None,
                "referee": self.config.address,
                "backup_at": backup_at,
                "again": again,
                "tags": tags,
            }
            self.post.mail(None, address, "restored", context)
        return len(addresses)

    def status(self, game_id: int) -> dict[str, Any]:
        return self.reports.status(game_id)

    def history(self, game_id: int) -> str:
        return self.reports.history(game_id)

    def health(self) -> dict[str, Any]:
        return self.reports.health()

    def tell_keepers(self) -> int:
        """See Watch.check: the runner asks after every pass."""
        return self.watch.check()

    # -- reading a game from outside ------------------------------------------

    def table(self, game_id: int) -> Table:
        return self.tables.table(game_id)
