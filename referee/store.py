"""games.db, through sqlite-utils: the record of every game, the messages
handled, and the outbox.

The record (games, seats, phases, moves) is the truth; a game's state is
always recomputed from it by replay (referee.record).  Every change a message
causes is written inside one ``transaction()``, together with the outbox rows
it queues and the row that marks the message handled.

A games.db says which schema it has (``PRAGMA user_version``); opening one
checks it is not from a newer referee, then brings an older one up to date,
after checking every page of it, all in one transaction (``MIGRATIONS``).
No plain start checks every page (``Store.check``: `referee check`).  When games.db or the
disk under it fails (full, locked, read-only, damaged) the error becomes a
``StorageFault`` here, in the store: one line naming the file and what to do.
The code outside knows that one error and no other of SQLite's or the disk's;
every statement the store runs goes through ``Store._execute``, which makes it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sqlite3
from collections.abc import Callable, Collection, Hashable, Iterator
from contextlib import closing, contextmanager
from enum import StrEnum
from functools import cached_property
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypedDict, cast

if TYPE_CHECKING:  # (imported when used: Store.db)
    import sqlite_utils

Row = dict[str, Any]  # a row as written, column by column


# -- the closed sets a column holds (written as their values) ----------------


class GameState(StrEnum):
    """Where a game is in its life: ``games.state``."""

    OPEN = "open"  # taking sign-ups (JOIN)
    RUNNING = "running"
    FINISHED = "finished"


class MailState(StrEnum):
    """What became of a mail in the outbox: ``outbox.state``."""

    QUEUED = "queued"  # to be sent (again, after a deferral, at next_try_at)
    SENT = "sent"
    FAILED = "failed"  # refused for good by the server
    RESTORED = "restored"  # made again after a restore, and sent before it: not sent again


class Act(StrEnum):
    """What a keeper (or the referee itself, or a player for their time
    away) did to a game: the ``act`` of an intervention, in games.db and in
    the game's record."""

    EXTEND = "extend"  # the open phase's deadline moved later (detail: old, new)
    OUTAGE = "outage"  # the same, by the referee, for a deadline it slept through
    PAUSE = "pause"  # no deadline, reminder or random move until resumed (detail: until)
    RESUME = "resume"  # the pause ended: the deadline moved by its length (detail: old, new)
    REPLACE = "replace"  # a newcomer took over a seat (detail: seat, was, name; a bot's stint)
    CANCEL = "cancel"  # the game ended without a winner
    SAY = "say"  # the keeper's words to the players (detail: text, or the seat told)
    # A player's time away (referee.engine.absence), on the record as the keeper's acts are.
    AWAY = "away"  # a seat's player is away (detail: seat, from, until, most_away: the cap it was granted within)
    BACK = "back"  # the seat's player is back: its absences not over end now (detail: seat)
    ABSENT = (
        "absent"  # by the referee: a deadline that fell inside an absence moved to its end (detail: seat, old, new)
    )
    ADDRESS = "address"  # a seat's player plays from another address (detail: seat, address, was_address, old_token)
    DELEGATE = "delegate"  # a seat's player named a stand-in until a time (detail: seat, until; the stand-in's address)
    DELEGATE_END = "delegate_end"  # a stand-in's turn ended before its time (detail: seat)


class Notify(StrEnum):
    """How much mail a seat wants (``seats.notify``; a game's default is
    ``games.notify``, else the config's): every public event, only what it
    must act on and each round's result, or its prompts and a daily digest."""

    EVERY = "every"  # every public event, as it happens
    TURNS = "turns"  # prompts, each round's (or auction's) result, its own receipts and private news
    DIGEST = "digest"  # prompts, its own receipts and private news, and one mail a day with everything public


class OfferKind(StrEnum):
    """What an offer mailed to an address asks it to confirm (``offers.kind``):
    the offer's token is its reply address, and the change is made when that
    address replies to it (accepts) before it expires."""

    ADDRESS = "address"  # a seat's new address: the new address confirms it reads its mail
    DELEGATE = "delegate"  # a stand-in moves for a seat for a while: the stand-in agrees first
    SEAT = "seat"  # a seat left mid-game, offered to a person on standby
    WATCH = "watch"  # an observer of a game (WATCH): the address confirms it wants the game's public mail


# -- the rows the store hands back, one kind per table (JSON columns decoded) --


class GameRow(TypedDict):
    id: int
    kind: str
    name: str | None
    options: dict[str, Any]  # (JSON in games.db)
    seed: str
    seed_commitment: str | None
    state: str  # a GameState, read back as its value
    deadline_seconds: int
    settle_seconds: int | None
    created_at: str | None
    finished_at: str | None
    seats_wanted: int | None
    turn_seconds: int | None
    decision_seconds: int | None
    notify: str | None  # the players' Notify unless they choose (None: the config's default)
    press: str | None  # a Press, read back as its value; None: the kind's own (Game.press)
    announce_to: list[str]  # (JSON in games.db) the game's own lists, besides the config's [club] announce_to
    awards: int | None  # 1: its mails carry the award text of its kind (Pure Skill's rule 5); None: the config's
    least_since: str | None  # an open game: when it last reached its kind's least players (its sign-up window)


class SeatRow(TypedDict):
    game_id: int
    seat: int
    address: str | None
    bot: int  # 1 for a bot (from the start, or since a resignation)
    bot_since_phase: int | None
    resigned_at: str | None
    notify: str | None  # a Notify, read back as its value; None: the game's default
    token: str  # (none only in a games.db older than reply tokens, until seats_without_token are given one)


class PhaseRow(TypedDict):
    game_id: int
    number: int
    label: str
    movers: list[int]  # (JSON in games.db)
    sealed: bool  # (0 or 1 in games.db)
    opened_at: str
    deadline: str
    closes_at: str | None
    resolved_at: str | None
    reminded_at: str | None


class CountedMove(TypedDict):
    """A move as a game's Table keeps it (Tables: the one that counts, by
    phase and seat): what the record, a replay and the engine read of it,
    not its row's id, game or time of recording (Store.counted_moves)."""

    phase: int
    seat: int
    move: str
    source: str  # a record.MoveSource, read back as its value
    message_key: str | None
    received_at: str


class MoveRow(CountedMove):
    """A move's whole row (Store.moves)."""

    id: int
    game_id: int
    recorded_at: str


class OutcomeCode(StrEnum):
    """What became of a message handled: its ``code`` in games.db's
    ``messages`` (written as its value), and of each line of it."""

    MOVE = "move"  # a move was made
    REPLACED = "replaced"  # a move was made, in place of the seat's earlier one
    SUPERSEDED = "superseded"  # a move was recorded, but one received after it counts
    DONE = "done"  # commands carried out, no move
    REFUSED = "refused"  # nothing counted: the sender was told why (or the seat's owner)
    BOUNCE = "bounce"  # a bounce of the referee's own mail, recorded against the player
    IGNORED = "ignored"  # mail never answered (an auto-reply, a list's); a later copy is tried afresh
    DUPLICATE = "duplicate"  # handled before (not stored: the first one's row stays)
    FAILED = "failed"  # met a bug, or could not be parsed: kept for the keeper, tried afresh if delivered again


MOVE_CODES = (OutcomeCode.MOVE, OutcomeCode.REPLACED, OutcomeCode.SUPERSEDED)  # a move was made


class MessageRow(TypedDict):
    key: str
    message_id: str | None
    sender: str | None
    subject: str | None
    received_at: str | None
    handled_at: str
    game_id: int | None
    code: str  # what became of it: an OutcomeCode, read back as its value
    detail: str  # in words, for the keeper
    raw: bytes


class FailedMessage(TypedDict):
    key: str
    sender: str | None
    subject: str | None
    handled_at: str
    code: str
    detail: str


class OutboxRow(TypedDict):
    id: int
    message_id: str
    game_id: int | None
    recipients: list[str]  # (JSON in games.db)
    subject: str
    raw: bytes
    created_at: str
    state: str  # a MailState, read back as its value
    attempts: int
    next_try_at: str | None
    last_error: str | None
    sent_at: str | None
    answers: str | None
    budget: str | None
    answer_to: str | None
    answer_from: str | None
    text: str | None  # the body as composed (schema 7): what a reply quoting it is read against; None once trimmed


class SignupRow(TypedDict):
    game_id: int
    address: str
    joined_at: str
    start: str | None  # when they sent START (schema 6): everyone's START starts the game


class StandbyRow(TypedDict):
    kind: str  # the kind of game whose seats the address would take over
    address: str
    since: str  # when it went on the list: the first on it is offered a seat first


class WatcherRow(TypedDict):
    """Someone who follows a game's public mail without a seat (WATCH): ``watchers``."""

    game_id: int
    address: str  # (lower case)
    notify: str | None  # their Notify, read back as its value; None: the config's notify
    since: str  # when they began to watch
    token: str  # the reply token of their copies (tokens.watcher_token): a reply with it and their From proves them


class ReaderToldRow(TypedDict):
    """What a reader of a game's public mail (a list, an observer) has been
    told of it, for their daily digest (``reader_told``): as ``told`` is a seat's."""

    game_id: int
    address: str  # (lower case)
    through: int  # the last resolved phase their digest (or their start as a reader) covered
    digest_at: str | None  # when their last digest went (or they chose DIGEST); None: none yet


class BounceRow(TypedDict):
    id: int
    address: str
    game_id: int | None
    message_id: str | None
    status: str  # "5.2.2"
    diagnostic: str
    at: str


class InterventionRow(TypedDict):
    id: int
    game_id: int
    phase: int  # the phase open when it was done (resolved ones never change)
    at: str
    act: str  # an Act, read back as its value
    # the keeper's address, "shell" for the keeper at the shell, the player's address (AWAY, BACK), "player"
    # for the seat's own player (a new address they confirmed); None: the referee
    by: str | None
    why: str
    detail: dict[str, Any]  # (JSON in games.db) what the act needs to be replayed and told


class ResultRow(TypedDict):
    """A seat's end of a finished game (``results``, written when the game
    ends), read with its game's kind and its seat's player now."""

    game_id: int
    kind: str
    seat: int
    score: int | None
    place: int  # 1 for the winner; then by score, a place shared by equal scores
    won: int  # 1 for the winner
    address: str | None  # the seat's player at the end (None: a bot from the start)
    bot_since_phase: int | None  # not None: its player left it to a bot


class MoveTally(TypedDict):
    """How many phases a seat of a finished game moved in by one source,
    in one stint of a player (0: its first player's; 1, after the first
    takeover...)."""

    game_id: int
    seat: int
    source: str  # a record.MoveSource, read back as its value
    stint: int
    moves: int


class OfferRow(TypedDict):
    id: int
    kind: str  # an OfferKind, read back as its value
    game_id: int | None
    seat: int | None
    address: str  # who must answer it
    token: str | None  # its reply token (made from its id, so set just after the row is made)
    made_at: str
    expires_at: str
    detail: dict[str, Any]  # (JSON in games.db) what accepting it does
    closed_at: str | None  # when it was accepted, declined, withdrawn or expired; None while open
    outcome: str | None  # "accepted", "declined", "withdrawn" or "expired"


class DelegationRow(TypedDict):
    """A stand-in's turn at a seat (a seat's DELEGATE, once the stand-in accepted)."""

    id: int
    game_id: int
    seat: int
    address: str  # the stand-in's
    token: str | None  # the stand-in's own reply token (made from its id, so set just after the row is made)
    since: str  # when the stand-in accepted
    until: str  # when its turn ends by itself
    ended_at: str | None  # when it ended (``until``, or earlier: DELEGATE NONE, the seat changed hands)


class PressTokenRow(TypedDict):
    """The reply address of one relayed message of table talk (TELL), as one
    seat got it: a reply to it from that seat's address is relayed back to
    the seat that wrote (referee.engine.talk), signed or not as it was."""

    token: str
    game_id: int
    seat: int  # the seat it was relayed to: whose reply it proves
    to_seat: int  # the seat that wrote it: where a reply goes
    signed: int  # 1: white press (signed with the writer's name); 0: grey
    press_id: int  # the ``press`` row of the message relayed


class ToldRow(TypedDict):
    """What a seat has been told of its game (``told``): mail bookkeeping,
    not the game's record (see referee.engine.notices)."""

    game_id: int
    seat: int
    through: int  # the last resolved phase whose result reached the seat (in a mail of any kind)
    digest_at: str | None  # when its last daily digest went (or it chose one); None: none yet


class MailboxRow(TypedDict):
    name: str
    uidvalidity: int
    last_uid: int


BUSY_TIMEOUT_MS = 10_000  # how long a write waits for another process's write lock
NEARLY_FULL = 1 << 20  # bytes: a disk with less free than this is full, whatever SQLite said
SCHEMA_VERSION = 7  # the user_version of a games.db this code writes; see MIGRATIONS


class RecordStamp(NamedTuple):
    """What Store.record_stamp says of a game's record."""

    rollbacks: int  # this connection's rollbacks (each may have undone any write)
    version: int  # data_version: changes with another process's commit
    writes: int  # this connection's writes to the game's record
    parts: tuple[int, ...]  # ... to each of its tables: games, seats, phases, moves, interventions

    def only_ours_since(self, earlier: RecordStamp) -> bool:
        """Whether the record changed since ``earlier`` by this connection's writes alone."""
        return (self.rollbacks, self.version) == (earlier.rollbacks, earlier.version)

    def unchanged(self, earlier: RecordStamp, table: str) -> bool:
        """Whether ``table``'s rows of the game are as they were at ``earlier`` (this connection's writes alone since)."""
        index = RECORD_TABLES.index(table)
        return self.only_ours_since(earlier) and self.parts[index] == earlier.parts[index]


# A game's record: its rows in these tables, by the column naming the game.
_RECORD = (
    ("games", "id"),
    ("seats", "game_id"),
    ("phases", "game_id"),
    ("moves", "game_id"),
    ("interventions", "game_id"),
)
RECORD_TABLES = tuple(table for table, _ in _RECORD)
_NO_WRITES = [0] * len(RECORD_TABLES)
# What a write statement writes to: "insert [or replace] into", "update", "delete from" a table.
_WRITES_TO = re.compile(r"\s*(?:insert(?:\s+or\s+\w+)?\s+into|replace\s+into|update|delete\s+from)\s+\[?(\w+)", re.I)


@functools.lru_cache(maxsize=512)
def _table_written(sql: str) -> str | None:
    """The table a write statement writes to (kept: the Store's statements are few texts)."""
    match = _WRITES_TO.match(sql)
    return match[1].lower() if match else None


class StorageFault(RuntimeError):
    """games.db, or the disk under it, failed the referee: not the fault of
    any message.  The run stops; mail not yet handled stays on the mail
    server for the next run.  The message is one line: the file, what went
    wrong, what to do."""


def _is_fault(error: BaseException) -> bool:
    """Whether an error is the machine's (SQLite's I/O, locks and limits, a
    damaged file, the file system) rather than a bug met by one message.  A
    ConnectionError is a server's, not the disk's."""
    if isinstance(error, StorageFault):
        return True
    if isinstance(error, ConnectionError):
        return False
    return isinstance(error, (sqlite3.OperationalError, OSError)) or type(error) is sqlite3.DatabaseError


_RESTORE = "stop the referee and restore the newest backup (`referee restore FILE`, docs/operations.md)"
_FULL = "the disk is full: free some space; mail not yet handled waits on the mail server"
_ADVICE = (  # (words in SQLite's or the OS's message, what the keeper should do)
    (("full", "no space", "quota"), _FULL),
    (
        ("locked", "busy"),
        "another program holds its write lock (a sqlite3 session left open?): end it; "
        "mail not yet handled waits on the mail server",
    ),
    (
        ("readonly", "read-only"),
        "it cannot be written: give the referee's user write access to it, to "
        "its -wal and -shm files and to its folder",
    ),
    (("malformed", "not a database", "corrupt"), f"it is damaged: {_RESTORE}"),
    (("unable to open",), "it cannot be opened: check the path, and that its folder exists and is writable"),
    (("i/o error",), "the disk failed a read or write: check the disk (dmesg), then run again"),
)


def storage_fault(path: Path | str, error: BaseException) -> StorageFault:
    # (for the store's own errors, and its tests: the code outside meets only the StorageFault)
    """The one line a keeper reads for ``error``, met on ``path``."""
    if isinstance(error, StorageFault):
        return error
    text = str(error) or type(error).__name__
    where = getattr(error, "filename", None) or path
    if any(word in text.lower() for word in ("i/o error", "unable to open")) and (free := _free_if_full(where)):
        # SQLite says "disk I/O error" when the disk has no room for the -shm
        # file it makes on opening (SQLITE_IOERR_SHMSIZE), not "full".
        return StorageFault(f"{where}: {text}, with {free} free on its disk: {_FULL}")
    for words, advice in _ADVICE:
        if any(word in text.lower() for word in words):
            return StorageFault(f"{where}: {text}: {advice}")
    return StorageFault(f"{where}: {text}: the referee stopped; mail not yet handled waits on the mail server")


def _as_fault(path: Path | str, error: BaseException) -> BaseException:
    """``error`` as the StorageFault it is, or itself when it is a bug (a
    constraint broken, a statement misused)."""
    return storage_fault(path, error) if _is_fault(error) else error


def _free_if_full(path: Path | str) -> str:
    """How much room the disk holding ``path`` has left ("12 KiB", or "no
    inode"), if that is next to none (under NEARLY_FULL); else ""."""
    try:
        disk = os.statvfs(Path(path).parent)
    except (OSError, ValueError):
        return ""
    if disk.f_files and not disk.f_favail:  # (a file system without inode counts reports 0 of 0)
        return "no inode"
    free = disk.f_bavail * disk.f_frsize
    return f"{free // 1024} KiB" if free < NEARLY_FULL else ""


def damage(db: sqlite3.Connection) -> str:
    """What SQLite's quick check of every page finds wrong with a database
    (its first three findings), or "" when it is whole."""
    found = [row[0] for row in db.execute("PRAGMA quick_check")]
    return "" if found == ["ok"] else "; ".join(found[:3])


def read_only(path: Path | str) -> sqlite3.Connection:
    """The SQLite file at ``path``, read only: the path taken literally (a
    URI would read "#" or "?" in a file name as its own)."""
    return sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)


def copy_database(source: sqlite3.Connection, target: Path) -> None:
    """Copy a database with SQLite's online backup: one self-contained file
    (no -wal), checked, that appears under its name only when whole."""
    partial = target.with_name(f".{target.name}.partial")
    try:
        partial.unlink(missing_ok=True)
        try:
            with closing(sqlite3.connect(partial)) as copy:
                source.backup(copy)
                copy.execute("PRAGMA journal_mode = DELETE")
                if problems := damage(copy):
                    raise StorageFault(f"{target}: the copy failed its check ({problems})")
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
    except (sqlite3.Error, OSError) as error:
        raise _as_fault(target, error) from None


class Unreadable(Exception):
    """Another games.db than the one open (a backup, the file a restore
    replaced) could not be read, or is not fit for what it was wanted for:
    the text says why."""


# Every table a games.db of this code holds (SQLite's own among them): a
# backup with any other is not one the referee made.
_TABLES = {
    "games",
    "seats",
    "phases",
    "moves",
    "messages",
    "outbox",
    "mailboxes",
    "meta",
    "deadline_changes",  # (schema 3 and before)
    "interventions",
    "offers",  # (schema 5)
    "delegations",  # (schema 5)
    "standby",  # (schema 5)
    "told",  # (schema 5)
    "watchers",  # (schema 6)
    "reader_told",  # (schema 6)
    "press",  # (schema 6)
    "press_tokens",  # (schema 6)
    "results",  # (schema 6)
    "signups",
    "players",
    "bounces",
    "sqlite_sequence",
    "sqlite_stat1",
}


class Snapshot:
    """A games.db file other than the one open, read and never written: a
    backup before `referee restore` puts it in place, or the games.db a
    restore moved aside.  Each question opens the file afresh, read only."""

    def __init__(self, path: Path | str):
        self.path = Path(path)

    def _read(self, sql: str, args: list[Any] | tuple[Any, ...] = ()) -> list[Any]:
        try:
            with closing(read_only(self.path)) as db:
                return db.execute(sql, args).fetchall()
        except sqlite3.Error as error:
            raise Unreadable(str(error)) from None

    def check_backup(self) -> None:
        """A backup fit to restore: a whole SQLite file (every page and index
        checked) of a schema this referee knows, with its tables and indexes
        and nothing else (no trigger or view: a tampered file's trigger would
        run inside the referee); else Unreadable, saying what it is (words
        that follow its path: "is not a whole backup of games.db")."""
        try:
            problems = [row[0] for row in self._read("PRAGMA integrity_check")]
            version = self._read("PRAGMA user_version")[0][0]
            objects = self._read("select type, name from sqlite_master")
        except Unreadable as error:
            raise Unreadable(f"is not a backup of games.db: {error}") from None
        tables = {name for kind, name in objects if kind == "table"}
        if problems != ["ok"] or not {"games", "messages", "outbox"} <= tables:
            raise Unreadable(f"is not a whole backup of games.db ({'; '.join(problems[:3])})")
        if version > SCHEMA_VERSION:
            raise Unreadable(f"has schema version {version}, from a newer referee than this one")
        strange = sorted(
            f"{kind} {name}"
            for kind, name in objects
            if kind not in ("table", "index") or (kind == "table" and name not in _TABLES)
        )
        if strange:
            raise Unreadable(f"holds what no games.db has ({', '.join(strange[:5])}): not restored")

    def copy_to(self, target: Path) -> None:
        """Copy it to ``target`` (see copy_database)."""
        try:
            source = read_only(self.path)
        except sqlite3.Error as error:
            raise Unreadable(str(error)) from None
        with closing(source):
            copy_database(source, target)

    def last_tick(self) -> str | None:
        """When the referee last ran over it (its last tick), if it can still
        be read."""
        try:
            rows = self._read("select value from meta where key = 'last_tick'")
        except Unreadable:
            return None
        return rows[0][0] if rows else None

    def sent_since(self, since: str) -> set[str]:
        """The Message-IDs of the mail it had sent, of mail queued since then."""
        rows = self._read("select message_id from outbox where state = ? and created_at >= ?", [MailState.SENT, since])
        return {row[0] for row in rows}


class FaultAside:
    """A pass's fault that games.db could not take when it came (another
    program held its write lock, or its disk was full), kept beside it in
    ``games.db.fault`` until games.db takes it, so ``referee status`` shows
    it all the same.  The file's room is taken when a run starts
    (``reserve``) and only written over afterwards, so a note fits even on
    a disk that has filled up since.  Blank means no note; a note means no
    pass has gone through since it was kept (one that does writes it into
    games.db and blanks the file)."""

    SIZE = 4096

    def __init__(self, database: Path | str):
        self.path = Path(f"{database}.fault")

    def reserve(self) -> None:
        """Make the file and take its room on the disk, while there is room."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                os.posix_fallocate(fd, 0, self.SIZE)
            finally:
                os.close(fd)
        except OSError:
            pass  # a folder that cannot be written: the note will not be either

    def write(self, note: dict) -> bool:
        """Keep ``note`` (``at`` and ``error``, and ``since``: when the passes
        began to fail, else ``at``, or the note kept already, which no pass
        has gone through since); whether it was kept."""
        since = note.get("since") or note["at"]
        if kept := self.read():
            since = min(since, kept.get("since", kept["at"]))
        note = {"since": since, "at": note["at"], "error": note["error"][:1000]}
        return self._overwrite(json.dumps(note).encode())

    def read(self) -> dict | None:
        try:
            text = self.path.read_bytes().strip(b" \0\n")
            note = json.loads(text) if text else None
        except (OSError, ValueError):
            return None
        if (
            isinstance(note, dict)
            and isinstance(note.get("at"), str)
            and isinstance(note.get("error"), str)
            and isinstance(note.get("since", ""), str)
        ):
            return note
        return None

    def clear(self) -> None:
        if self.path.exists():
            self._overwrite(b"")

    def _overwrite(self, data: bytes) -> bool:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, data.ljust(self.SIZE, b" "), 0)  # within the room taken: no new block
            finally:
                os.close(fd)
        except OSError:
            return False
        return True


_MISSING = object()  # (not kept: None is a value kept)
_LISTS = ("lists",)  # _Kept's key of Store.lists
_ZONES = ("zones",)  # _Kept's key of every player's zone (Store.timezone), while they are few
_ZONES_AT_ONCE = 500
_OPEN_OFFERS_AT_ONCE = 200  # Store.open_offers reads them all at once while no more are open


class _Kept:
    """Answers of the Store that a pass asks again and again (a player's
    zone, the games' lists), kept while they cannot have changed: each key's
    only writers in the Store forget it before they write, and the whole is
    forgotten when the Store's moment changes (Store._moment: a rollback,
    another process's commit).  Bounded: forgotten whole beyond _KEPT_AT_MOST
    keys (a daemon meets ever more addresses)."""

    def __init__(self) -> None:
        self._moment: tuple[int, int] | None = None
        self._values: dict[Hashable, Any] = {}

    def get(self, moment: tuple[int, int], key: Hashable) -> Any:
        if moment != self._moment:
            self._moment, self._values = moment, {}
        return self._values.get(key, _MISSING)

    def put(self, key: Hashable, value: Any) -> None:
        if len(self._values) >= _KEPT_AT_MOST:
            self._values = {}
        self._values[key] = value

    def forget(self, key: Hashable) -> None:
        self._values.pop(key, None)


_KEPT_AT_MOST = 1000


class Store:
    def __init__(self, path: Path | str):
        self.path = path
        self._rollbacks = 0
        self._statements_writing: dict[str | None, int] = {}  # table -> write statements run (_write)
        self._nested = 0  # savepoints open inside the transaction
        self._holding_lock = False  # inside transaction(): BEGIN IMMEDIATE taken, not yet ended
        self._held_version: int | None = None  # data_version as read under that lock (see data_version)
        try:
            self._conn = sqlite3.connect(str(path))
            self._conn.execute("PRAGMA recursive_triggers = on")  # (as sqlite-utils' Database sets it)
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            on_disk = str(path) != ":memory:"
            version = self._intact_version() if on_disk else 0
            if on_disk:
                self._conn.execute("PRAGMA journal_mode = wal")
            # A commit survives the process being killed, with no fsync; sync()
            # makes it survive a power cut too, before anything irreversible.
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._migrate(version)
            self._synced = self._conn.total_changes  # rows changed by this connection, at the last sync
            self._watch_records()
            self._kept = _Kept()
            self.mails_queued = 0  # by this connection, ever (the runner commits when a sender's batch is ready)
        except (sqlite3.Error, OSError) as error:
            raise storage_fault(path, error) from None

    @cached_property
    def db(self) -> sqlite_utils.Database:
        """sqlite-utils on the store's connection, for its table API, which
        makes the schema (MIGRATIONS).  Imported only when a migration runs
        (and by tests): the import costs a process that starts per cron run
        or per mail about 40 ms of CPU, a tenth of it (issue 36)."""
        import sqlite_utils

        return sqlite_utils.Database(self._conn)

    # -- opening: intact, and of a schema this code knows -----------------

    def _intact_version(self) -> int:
        """games.db's schema version.  No check of every page here: that
        grows with the file (27 ms at 23 MiB, 153 ms at 224 MiB) and a cron
        run opens it every few minutes.  A damaged page met later is a
        StorageFault all the same (_is_fault); the whole file is checked
        before an upgrade (_migrate), by `referee check` and by every backup
        and restore."""
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StorageFault(
                f"{self.path}: its schema is version {version}, from a newer referee (this one knows "
                f"up to {SCHEMA_VERSION}): upgrade referee, or restore a backup made before the upgrade "
                "(`referee restore FILE`, docs/operations.md)"
            )
        return version

    def _migrate(self, version: int) -> None:
        """Bring the schema from ``version`` to SCHEMA_VERSION, one step at a
        time, all in one transaction: a failed migration leaves games.db as
        it was."""
        if version == SCHEMA_VERSION:
            return
        self.check()  # an upgrade rewrites tables: never from a damaged file (a new one: at once)
        with self.transaction():
            for step in MIGRATIONS[version:]:
                step(self.db)
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def check(self) -> None:
        """SQLite's quick check of every page of games.db (`referee check`,
        and before an upgrade): a StorageFault saying to restore when it
        finds damage.  Its cost grows with the file, so no run does it."""
        try:
            problems = damage(self._conn)
        except sqlite3.Error as error:
            raise _as_fault(self.path, error) from None
        if problems:
            raise StorageFault(f"{self.path}: it is damaged ({problems}): {_RESTORE}")

    # -- backups -----------------------------------------------------------

    def backup(self, target: Path) -> None:
        """Copy games.db to ``target`` (see copy_database): a consistent copy
        even while the daemon writes."""
        copy_database(self._conn, target)

    # -- knowing when a game's record changed ------------------------------

    def _watch_records(self) -> None:
        """Count the writes to each game's record (its rows in games, seats,
        phases and moves) as SQLite makes them: temporary triggers, private
        to this connection, call back for every row written, whichever code
        wrote it.  A rollback counts as a change of every game."""
        self._rollbacks = 0
        writes: dict[int, list[int]] = {}  # game id -> rows written to each of RECORD_TABLES
        totals = [0] * len(RECORD_TABLES)  # rows written to each of RECORD_TABLES, of every game
        self._record_writes, self._table_writes = writes, totals

        # The callback holds the counts, never the Store: SQLite's connection
        # keeps its functions where Python's garbage collector cannot see
        # them, so a Store the callback held could never be freed, nor its
        # connection closed (a games.db, -wal and -shm open, and their page
        # cache, for every Store a long process ever opened).
        def changed(game_id: int, table: int) -> None:
            counts = writes.get(game_id)
            if counts is None:
                counts = writes[game_id] = [0] * len(RECORD_TABLES)
            counts[table] += 1
            totals[table] += 1

        self._conn.create_function("referee_record_changed", 2, changed)
        for index, (table, column) in enumerate(_RECORD):
            for event, row in (("insert", "new"), ("update", "new"), ("delete", "old")):
                self._conn.execute(
                    f"create temp trigger if not exists [record_{table}_{event}] after {event} "
                    f"on main.[{table}] begin select referee_record_changed({row}.[{column}], {index}); end"
                )

    def written(self, tables: Collection[str]) -> tuple[int, ...]:
        """A value that changes whenever a row of any of ``tables`` may have
        changed: a write to one by this connection, a rollback here, a
        commit by another process.  The record's tables count rows written
        (the triggers above); the others, the statements that write them
        (_write, which every write of the Store goes through: a trigger a
        row would cost a call back for each of a result's told rows)."""
        counts = [
            self._table_writes[RECORD_TABLES.index(table)]
            if table in RECORD_TABLES
            else self._statements_writing.get(table, 0)
            for table in tables
        ]
        return (*self._moment(), *counts)

    def record_stamp(self, game_id: int) -> RecordStamp:
        """A value that changes whenever game ``game_id``'s record may have:
        a write to it by this connection, a rollback here, or a commit by
        another process (the keeper's command, say: data_version).  Its
        ``parts`` count this connection's writes to each of the record's
        tables (RECORD_TABLES's order), so a reader can tell which of them changed."""
        parts = tuple(self._record_writes.get(game_id, _NO_WRITES))
        return RecordStamp(self._rollbacks, self.data_version(), sum(parts), parts)

    def data_version(self) -> int:
        """SQLite's ``PRAGMA data_version``: it changes whenever another
        connection (another process: a keeper's command) commits to
        games.db, never for this connection's own commits.  Cheap: in WAL
        mode a look at the WAL index in shared memory, no read of the file."""
        if self._held_version is not None:
            return self._held_version
        version = self._value("PRAGMA data_version")
        if self._holding_lock:
            # Inside our BEGIN IMMEDIATE no other connection can commit (we
            # hold the write lock), so the version cannot change until COMMIT:
            # read once a transaction, not at every read of a game's record.
            self._held_version = version
        return version

    def _rows(
        self,
        table: str,
        where: str | None = None,
        args: list[Any] | None = None,
        order_by: str | None = None,
        limit: int | None = None,
    ) -> list[Any]:
        """Rows of a table, by plain SQL: sqlite-utils' rows_where would first
        look the table up in sqlite_master and its query wraps each statement
        in a savepoint, on every call (most of the statements a message cost)."""
        sql = (
            f"select * from [{table}]"
            + (f" where {where}" if where else "")
            + (f" order by {order_by}" if order_by else "")
        )
        if limit is not None:
            sql, args = f"{sql} limit ?", [*(args or []), limit]
        return self._read(sql, args or [])

    def _read(self, sql: str, args: list[Any] | tuple[Any, ...] = ()) -> list[Any]:
        """The rows a query gives, each a dict by column name (the public
        methods say which kind of row: GameRow, PhaseRow...).  (Made by map,
        not a comprehension: a game's hundreds of phases and moves, a fifth
        cheaper; a row has as many values as the cursor has columns.)"""
        try:
            cursor = self._conn.execute(sql, args)
            columns = [d[0] for d in cursor.description]
            return list(map(dict, map(zip, repeat(columns), cursor.fetchall())))
        except sqlite3.Error as error:
            raise _as_fault(self.path, error) from None

    def _value(self, sql: str, args: list[Any] | tuple[Any, ...] = ()) -> Any:
        """The first column of the first row a query gives (None for no row)."""
        row = self._execute(sql, args).fetchone()
        return row[0] if row else None

    def _count(self, table: str, where: str, args: list[Any]) -> int:
        return self._value(f"select count(*) from [{table}] where {where}", args)

    def _execute(self, sql: str, args: list[Any] | tuple[Any, ...] = ()) -> sqlite3.Cursor:
        """Every statement the store runs: a fault of games.db or its disk
        becomes a StorageFault here, and nowhere else."""
        try:
            return self._conn.execute(sql, args)
        except sqlite3.Error as error:
            raise _as_fault(self.path, error) from None

    def _write(self, sql: str, args: list[Any]) -> sqlite3.Cursor:
        """One write by plain SQL (sqlite-utils' insert and update look the
        table up first); committed at once unless a transaction is open.
        Counted by the table it writes (Store.written)."""
        table = _table_written(sql)
        self._statements_writing[table] = self._statements_writing.get(table, 0) + 1
        if self._conn.in_transaction:
            return self._execute(sql, args)
        try:
            with self._conn:  # commits
                return self._execute(sql, args)
        except sqlite3.Error as error:  # (the commit's)
            raise _as_fault(self.path, error) from None

    def _insert(self, table: str, row: Row, replace: bool = False) -> int:
        """Insert ``row``; the new row's id."""
        columns = list(row)
        verb = "insert or replace" if replace else "insert"
        cursor = self._write(
            f"{verb} into [{table}] ({', '.join(f'[{c}]' for c in columns)}) values ({', '.join('?' * len(columns))})",
            [row[c] for c in columns],
        )
        return cursor.lastrowid or 0  # (the new row's id)

    def _update(self, table: str, where: str, args: list[Any], changes: Row) -> None:
        sets = ", ".join(f"[{column}] = ?" for column in changes)
        self._write(f"update [{table}] set {sets} where {where}", [*changes.values(), *args])

    def _upsert(self, table: str, row: Row, key: str) -> None:
        """Insert ``row``, or update the one with its ``key``."""
        columns = list(row)
        sets = ", ".join(f"[{c}] = excluded.[{c}]" for c in columns if c != key)
        self._write(
            f"insert into [{table}] ({', '.join(f'[{c}]' for c in columns)}) "
            f"values ({', '.join('?' * len(columns))}) on conflict ([{key}]) do update set {sets}",
            [row[c] for c in columns],
        )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All or nothing: what one message (or one deadline) changes.

        It takes SQLite's write lock at once (BEGIN IMMEDIATE), so two
        processes (the daemon and a keeper's `referee resign`, say) never both
        read the same state and then both act on it; the later one waits."""
        try:
            if self._conn.in_transaction:
                yield from self._savepoint()
                return
            try:
                # (inside: an interrupt as BEGIN returns must undo it too; a
                # BEGIN that failed leaves nothing to roll back)
                self._execute("BEGIN IMMEDIATE")
                self._holding_lock = True
                yield
                self._end_of_lock()
                self._execute("COMMIT")
            except BaseException:
                self._end_of_lock()
                self._rollback()
                raise
        except BaseException:
            self._rollbacks += 1  # what was read inside may have been undone
            raise

    @contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction for several messages, each handled in its own
        (transaction() inside it is a savepoint, undone alone if it fails),
        so a backlog pays one COMMIT a batch, not one a message.  Something
        that ends the batch early (a stop, memory run out, an error the
        engine does not catch) has undone its own message's savepoint on its
        way out: what the messages before it did is committed all the same,
        as when each had its own commit.  A fault of games.db itself rolls
        the whole batch back (the transaction may be gone already): its
        messages are still on the mail server, unfiled, and the next pass
        handles them afresh."""
        stopped: BaseException | None = None
        with self.transaction():
            try:
                yield
            except StorageFault:
                raise
            except BaseException as error:  # noqa: BLE001 - raised again once the rest is committed
                stopped = error
        if stopped is not None:
            raise stopped

    def _end_of_lock(self) -> None:
        """The write lock is about to go: data_version may change again."""
        self._holding_lock, self._held_version = False, None

    def _savepoint(self) -> Iterator[None]:
        """A transaction inside the open one: undone alone if it fails."""
        self._nested += 1
        name = f"referee_{self._nested}"
        try:
            self._execute(f"SAVEPOINT {name}")
            try:
                yield
            except BaseException:
                # A fault such as a full disk may have ended the whole
                # transaction, savepoints and all: then there is nothing to undo here.
                if self._conn.in_transaction:
                    self._execute(f"ROLLBACK TO {name}")
                    self._execute(f"RELEASE {name}")
                raise
            self._execute(f"RELEASE {name}")
        finally:
            self._nested -= 1

    def _rollback(self) -> None:
        try:
            self._conn.rollback()  # (nothing, when a fault already ended the transaction)
        except sqlite3.Error as error:
            raise _as_fault(self.path, error) from None

    @contextmanager
    def impatient(self) -> Iterator[None]:
        """Writes that fail at once, rather than wait for another process's
        write lock (for a note made while reporting a fault)."""
        self._execute("PRAGMA busy_timeout = 0")
        try:
            yield
        finally:
            self._execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    def sync(self, always: bool = False) -> None:
        """Make every committed change durable, even against a power cut.

        Commits run with ``synchronous = NORMAL``: in WAL mode a commit is
        then in the journal as soon as it returns, so a ``kill -9`` loses
        nothing, but the journal is not flushed to disk on each one (an fsync
        per message and per sent mark was the pass's largest single cost).
        Before the referee does what cannot be undone outside games.db (files
        messages away on the mail server, ends a pass or a command), it calls
        this: one small write committed with ``synchronous = FULL``, whose
        flush of the journal covers every commit before it, whoever made it.
        It writes only when this connection wrote since the last sync, so a
        reading command never takes the write lock; ``always`` covers the
        commits of another process too (one killed before its own sync),
        before their mail is sent."""
        if not (self.unsynced or always):
            return
        self._execute("PRAGMA synchronous = FULL")
        try:
            self._write(
                "insert into meta (key, value) values ('syncs', 1) on conflict (key) do update set value = value + 1",
                [],
            )
        finally:
            self._execute("PRAGMA synchronous = NORMAL")
        self._synced = self._conn.total_changes

    @property
    def unsynced(self) -> bool:
        """Whether this connection committed anything since the last sync()."""
        return self._conn.total_changes != self._synced

    # -- games and seats -------------------------------------------------

    def create_game(self, **row: Any) -> int:
        row["options"] = json.dumps(row.get("options") or {}, sort_keys=True)
        row["announce_to"] = json.dumps(row.get("announce_to") or [])
        self._kept.forget(_LISTS)
        return self._insert("games", row)

    def set_club(self, game_id: int, announce_to: list[str], awards: bool | None) -> None:
        """A game's own lists (games.announce_to) and whether its mail tells its award (None: the config's)."""
        self._kept.forget(_LISTS)
        self._update("games", "id = ?", [game_id], {"announce_to": json.dumps(announce_to), "awards": awards})

    def lists(self) -> set[str]:
        """Every game's own lists (games.announce_to), lower case: read once
        while nothing can have changed them (_Kept; create_game and set_club
        are their only writers), not at every message (desk._from_a_list)."""
        kept = self._kept.get(self._moment(), _LISTS)
        if kept is not _MISSING:
            return set(kept)
        # (By schema 7's partial index of the games with lists, not a read of every game.)
        rows = self._read(f"select distinct announce_to from games where {_HAS_LISTS}")
        found = {address.lower() for row in rows for address in json.loads(row["announce_to"] or "[]")}
        self._kept.put(_LISTS, found)
        return set(found)

    def _kept_since_writes(self, key: Hashable, *tables: str) -> tuple[Hashable, ...]:
        """A key of _Kept for an answer read from some of a record's
        ``tables``: it names this connection's writes to them so far (the
        triggers of _watch_records count every row written, whichever code
        wrote it), so a write makes a new key and the old answer is never
        read again; _Kept forgets it all at a rollback or another process's
        commit (_moment)."""
        return (key, *(self._table_writes[RECORD_TABLES.index(table)] for table in tables))

    def _moment(self) -> tuple[int, int]:
        """What changes whenever games.db may have changed other than by
        this connection's own writes: a rollback here (it may undo what was
        read since), a commit by another process (data_version)."""
        return (self._rollbacks, self.data_version())

    def game(self, game_id: int) -> GameRow | None:
        """A game's row.  A message asks it several times (whose seat, which
        game's table, what its site shows): kept while no row of games was
        written (_kept_since_writes), each caller given its own decoding."""
        if not 0 < game_id < 2**63:  # beyond SQLite's integers: no such game
            return None
        key = self._kept_since_writes(("game", game_id), "games")
        kept = self._kept.get(self._moment(), key)
        if kept is _MISSING:
            rows = self._rows("games", "id = ?", [game_id])
            kept = rows[0] if rows else None
            self._kept.put(key, kept)
        return _decode_game(dict(kept)) if kept else None

    def games(self, state: GameState | None = None, game_id: int | None = None) -> list[GameRow]:
        """The games in ``state`` (all with None); with ``game_id``, that game
        alone if it is in it (a look-up by key, not a read of every game:
        what falls due in one game is asked after every message)."""
        clauses: list[str] = ["state = ?"] if state else []
        args: list[Any] = [state] if state else []
        if game_id is not None:
            clauses, args = [*clauses, "id = ?"], [*args, game_id]
        where = " and ".join(clauses) or None
        return [_decode_game(r) for r in self._rows("games", where, args or None, order_by="id")]

    def games_read_by_digest(self, lists_at_digest: bool, lists: bool, default: Notify) -> list[GameRow]:
        """The running games that may have a reader at DIGEST (Notices'
        reader digests): with ``lists_at_digest`` (the club's lists get
        digests), those with a list (``lists``: the config names some; else
        the game's own), and those with an observer at DIGEST (their own
        level, else ``default``).  The other running games are not read."""
        sql = """select * from games where state = ? and id in (
                     select game_id from watchers where coalesce(notify, ?) = ?
                     union select id from games where ? and (? or coalesce(announce_to, '[]') != '[]'))
                 order by id"""
        args = [GameState.RUNNING, default, Notify.DIGEST, lists_at_digest, lists]
        return [_decode_game(r) for r in self._read(sql, args)]

    def finish_game(self, game_id: int, at: str) -> None:
        self._update("games", "id = ?", [game_id], {"state": GameState.FINISHED, "finished_at": at})

    def add_seat(self, game_id: int, seat: int, address: str | None, bot: bool, token: str) -> None:
        """A seat of a game starting; a person who watched the game (WATCH)
        and now plays it is one of its players, and no longer its reader."""
        if address is not None:
            self.remove_watcher(game_id, address)
        self._insert(
            "seats",
            {
                "game_id": game_id,
                "seat": seat,
                "address": address,
                "bot": int(bot),
                "bot_since_phase": 0 if bot else None,
                "resigned_at": None,
                "token": token,
            },
        )

    def seat_by_token(self, token: str) -> SeatRow | None:
        """The seat a reply token names.  A message asks it more than once
        (is it an unsubscribe? whose move?): kept while no row of seats
        was written (_kept_since_writes)."""
        key = self._kept_since_writes(("seat_by_token", token), "seats")
        kept = self._kept.get(self._moment(), key)
        if kept is _MISSING:
            rows = self._rows("seats", "token = ?", [token])
            kept = rows[0] if rows else None
            self._kept.put(key, kept)
        return dict(kept) if kept else None  # type: ignore[return-value]

    def seats_without_token(self) -> list[SeatRow]:
        """Seats of a games.db older than reply tokens."""
        return list(self._rows("seats", "token is null"))

    def set_token(self, game_id: int, seat: int, token: str) -> None:
        self._update("seats", "game_id = ? and seat = ?", [game_id, seat], {"token": token})

    def start_game(self, game_id: int) -> None:
        self._update("games", "id = ?", [game_id], {"state": GameState.RUNNING})

    def site_versions(self) -> dict[int, str]:
        """Per game, a text that changes whenever anything its public pages
        show may change: for the site, to write a game's pages only when
        they would change, and to find that nothing did in one query.

        It is derived from the rows themselves (no counter to bump, so no
        path that changes a game can forget to): the game's row; its last
        phase (a resolved phase never changes again, so a new phase, a
        resolution or a moved deadline all show in the last one); which
        seats have moved in that phase (not the rows: a replaced sealed
        move must not show); its seats (who plays them: the pages' names
        and the seats' own calendars); and how many interventions,
        watchers and sign-ups it has.  Each part is an index look-up, so
        the cost grows with the number of games, not with their history."""
        rows = self._execute(
            """select g.id, g.kind, g.name, g.options, g.press, g.seats_wanted, g.state, g.created_at,
                      g.finished_at, last.number, last.label, last.deadline, last.resolved_at,
                      (select count(distinct seat) from moves
                        where game_id = g.id and phase = last.number),
                      (select group_concat(seat || ' ' || coalesce(address, '') || ' '
                                           || coalesce(bot_since_phase, '-'), ',')
                         from seats where game_id = g.id),
                      (select count(*) || ' ' || coalesce(max(id), '') from interventions where game_id = g.id),
                      (select count(*) from watchers where game_id = g.id),
                      (select count(*) from signups where game_id = g.id)
               from games g
               left join phases last on last.game_id = g.id
                    and last.number = (select max(number) from phases where game_id = g.id)
               order by g.id"""
        ).fetchall()
        return {row[0]: "|".join(str(value) for value in row) for row in rows}

    # -- sign-ups and players ---------------------------------------------

    def signups(self, game_id: int) -> list[SignupRow]:
        """Who signed up for an open game, first come first."""
        return list(self._rows("signups", "game_id = ?", [game_id], order_by="joined_at, rowid"))

    def add_signup(self, game_id: int, address: str, at: str) -> None:
        self._insert("signups", {"game_id": game_id, "address": address, "joined_at": at})

    def set_signup_start(self, game_id: int, address: str, at: str) -> None:
        """A signed-up player asked to start at once (START), as of ``at``."""
        self._update("signups", "game_id = ? and address = ?", [game_id, address], {"start": at})

    def set_least_since(self, game_id: int, at: str | None) -> None:
        """When an open game last reached its kind's least players (None: it has fewer)."""
        self._update("games", "id = ?", [game_id], {"least_since": at})

    def remove_signup(self, game_id: int, address: str) -> None:
        self._write("delete from signups where game_id = ? and address = ?", [game_id, address])

    def move_signup(self, game_id: int, address: str, new: str) -> None:
        """A sign-up moves to another address, keeping its place in the queue."""
        self._update("signups", "game_id = ? and address = ?", [game_id, address], {"address": new})

    def timezone(self, address: str) -> str | None:
        """The zone an address chose (TIMEZONE), None if none.  Every mail
        and every answer shows times in it, so one message asked four times
        an address: it is read once while nothing can have changed it
        (_Kept; set_timezone is its only writer)."""
        zones = self._kept.get(self._moment(), _ZONES)
        if zones is _MISSING:
            # Only those who chose a zone have a row: while they are few, all are read at once, not one
            # statement for each new sender (a pass of 1,500 moves from 1,500 players made 1,500).
            rows = self._read("select address, timezone from players limit ?", [_ZONES_AT_ONCE + 1])
            zones = {row["address"]: row["timezone"] for row in rows} if len(rows) <= _ZONES_AT_ONCE else None
            self._kept.put(_ZONES, zones)
        if zones is not None:
            return cast(str | None, zones.get(address.lower()))
        key = ("timezone", address.lower())
        kept = self._kept.get(self._moment(), key)
        if kept is not _MISSING:
            return cast(str | None, kept)
        rows = list(self._rows("players", "address = ?", [address.lower()]))
        zone = rows[0]["timezone"] if rows else None
        self._kept.put(key, zone)
        return zone

    def set_timezone(self, address: str, zone: str | None) -> None:
        self._kept.forget(_ZONES)
        self._kept.forget(("timezone", address.lower()))
        self._upsert("players", {"address": address.lower(), "timezone": zone}, key="address")

    # -- the standby lists: who would take over a seat left mid-game ---------

    def standby(self, kind: str) -> list[StandbyRow]:
        """Who waits on standby for a game of ``kind``, first come first."""
        return list(self._rows("standby", "kind = ?", [kind], order_by="since, rowid"))

    def add_standby(self, kind: str, address: str, since: str) -> bool:
        """Put ``address`` on the standby list of ``kind``; False if it is on it already."""
        added = self._write(
            "insert or ignore into standby (kind, address, since) values (?, ?, ?)", [kind, address.lower(), since]
        )
        return added.rowcount > 0

    def remove_standby(self, kind: str, address: str) -> bool:
        """Take ``address`` off the standby list of ``kind``; False if it was not on it."""
        return self._write("delete from standby where kind = ? and address = ?", [kind, address.lower()]).rowcount > 0

    def standby_counts(self) -> dict[str, int]:
        """How many wait on standby, per kind of game (kinds nobody waits for left out)."""
        rows = self._read("select kind, count(*) as waiting from standby group by kind order by kind")
        return {row["kind"]: row["waiting"] for row in rows}

    # -- observers (WATCH) and what readers were told -----------------------

    def watchers(self, game_id: int) -> list[WatcherRow]:
        """Who follows a game's public mail, first come first."""
        return list(self._rows("watchers", "game_id = ?", [game_id], order_by="since, rowid"))

    def watcher(self, game_id: int, address: str) -> WatcherRow | None:
        rows = self._rows("watchers", "game_id = ? and address = ?", [game_id, address.lower()])
        return next(iter(rows), None)

    def watcher_by_token(self, token: str) -> WatcherRow | None:
        return next(iter(self._rows("watchers", "token = ?", [token])), None)

    def watching(self, address: str) -> list[WatcherRow]:
        """The games not over whose public mail ``address`` follows."""
        sql = """select w.* from watchers w join games g on g.id = w.game_id
                 where w.address = ? and g.state != ? order by w.game_id"""
        return self._read(sql, [address.lower(), GameState.FINISHED])

    def watcher_counts(self) -> dict[int, int]:
        """How many follow each game (games nobody follows left out)."""
        rows = self._read("select game_id, count(*) as n from watchers group by game_id")
        return {row["game_id"]: row["n"] for row in rows}

    def add_watcher(self, game_id: int, address: str, notify: str | None, since: str, token: str) -> None:
        self._insert(
            "watchers",
            {"game_id": game_id, "address": address.lower(), "notify": notify, "since": since, "token": token},
        )

    def set_watcher_notify(self, game_id: int, address: str, notify: str | None) -> None:
        self._update("watchers", "game_id = ? and address = ?", [game_id, address.lower()], {"notify": notify})

    def remove_watcher(self, game_id: int, address: str) -> bool:
        """``address`` no longer follows the game; False if it did not."""
        args = [game_id, address.lower()]
        self._write("delete from reader_told where game_id = ? and address = ?", args)
        return self._write("delete from watchers where game_id = ? and address = ?", args).rowcount > 0

    def reader_told(self, game_id: int) -> dict[str, ReaderToldRow]:
        """What each reader of a game has been told (address -> row); a
        reader without a row counts from the game's start."""
        return {row["address"]: row for row in self._rows("reader_told", "game_id = ?", [game_id])}

    def set_reader_told(self, game_id: int, address: str, through: int, digest_at: str) -> None:
        """The reader has been told of every phase up to ``through``, by a digest sent (or chosen) at ``digest_at``."""
        self._write(
            "insert into reader_told (game_id, address, through, digest_at) values (?, ?, ?, ?) "
            "on conflict (game_id, address) do update set through = excluded.through, digest_at = excluded.digest_at",
            [game_id, address.lower(), through, digest_at],
        )

    def resolved_at(self, game_id: int, number: int) -> str | None:
        """When phase ``number`` of a game was resolved (None: not yet, or no such phase)."""
        rows = self._read("select resolved_at from phases where game_id = ? and number = ?", [game_id, number])
        return rows[0]["resolved_at"] if rows else None

    def add_bounce(self, **row: Any) -> None:
        self._insert("bounces", row)

    def bounces(self, address: str) -> list[BounceRow]:
        return list(self._rows("bounces", "address = ?", [address.lower()], order_by="id"))

    def bounces_since(self, since: str) -> list[BounceRow]:
        """Every bounce recorded since then, oldest first (bounces are few)."""
        return list(self._rows("bounces", "at >= ?", [since], order_by="at, id"))

    def seats(self, game_id: int) -> list[SeatRow]:
        return list(self._rows("seats", "game_id = ?", [game_id], order_by="seat"))

    def make_bot(self, game_id: int, seat: int, phase: int, at: str | None, **row: Any) -> None:
        """A bot plays the seat from ``phase`` (its player left ``at``; None:
        a bot from the start); ``row``: other columns too (its address)."""
        self._update(
            "seats",
            "game_id = ? and seat = ?",
            [game_id, seat],
            {"bot": 1, "bot_since_phase": phase, "resigned_at": at, **row},
        )

    def set_notify(self, game_id: int, seat: int, level: Notify | None) -> None:
        """How much mail a seat wants (None: the game's default)."""
        self._update("seats", "game_id = ? and seat = ?", [game_id, seat], {"notify": level})

    def told(self, game_id: int) -> dict[int, ToldRow]:
        """What each seat of a game has been told (seat -> row); a seat
        without a row has been told of no phase yet."""
        return {row["seat"]: row for row in self._rows("told", "game_id = ?", [game_id])}

    def set_told(self, game_id: int, seats: Collection[int], through: int, digest_at: str | None = None) -> None:
        """Each of ``seats`` has been told of every phase up to ``through``;
        with ``digest_at``, by a daily digest sent then (or its digests count
        from then).  One statement for them all (a result to every seat)."""
        if not seats:
            return
        row: dict[str, Any] = {"game_id": game_id, "seat": None, "through": through}
        if digest_at is not None:
            row["digest_at"] = digest_at
        values = ", ".join(["(" + ", ".join("?" * len(row)) + ")"] * len(seats))
        sets = ", ".join(f"[{c}] = excluded.[{c}]" for c in row if c not in ("game_id", "seat"))
        self._write(
            f"insert into told ({', '.join(row)}) values {values} on conflict (game_id, seat) do update set {sets}",
            [value for seat in seats for value in {**row, "seat": seat}.values()],
        )

    def digest_seats(self, default: Notify) -> list[dict[str, Any]]:
        """The people of running games who get a daily digest (their own
        level, else their game's, else ``default``), each with what it was
        told (``through``, ``digest_at``), when its game began and when the
        first phase it was not told of was resolved (None: nothing new)."""
        # The seats at DIGEST by their own level or their game's, found by
        # schema 7's indexes on seats.notify and games.notify (every seat only
        # when DIGEST is the default): no tick reads every seat else.
        sql = """select s.game_id, s.seat, coalesce(t.through, 0) as through, t.digest_at, g.created_at,
                        (select p.resolved_at from phases p where p.game_id = s.game_id
                         and p.number = coalesce(t.through, 0) + 1) as untold_at
                 from (select rowid as id from seats where notify = ?
                       union select seats.rowid from games join seats on seats.game_id = games.id
                           where games.notify = ?
                       union select rowid from seats where ? = ?) as picked
                 cross join seats s on s.rowid = picked.id
                 join games g on g.id = s.game_id
                 left join told t on t.game_id = s.game_id and t.seat = s.seat
                 where g.state = ? and s.bot = 0 and s.address is not null
                 and coalesce(s.notify, g.notify, ?) = ?
                 order by s.game_id, s.seat"""
        digest = Notify.DIGEST
        return self._read(sql, [digest, digest, default, digest, GameState.RUNNING, default, digest])

    def take_seat(self, game_id: int, seat: int, address: str) -> None:
        """A person takes over a seat (its token stays: the seat's reply
        address); one who watched the game (WATCH) no longer does: they get
        its mail as its player, not a reader's copy of each besides."""
        self.remove_watcher(game_id, address)
        self._update(
            "seats",
            "game_id = ? and seat = ?",
            [game_id, seat],
            {"address": address, "bot": 0, "bot_since_phase": None, "resigned_at": None},
        )

    def games_of(self, address: str) -> list[GameRow]:
        """Running games in which ``address`` holds a seat it still plays."""
        sql = """select distinct games.* from games join seats on seats.game_id = games.id
                 where lower(seats.address) = lower(?) and seats.bot = 0
                 and games.state = ? order by games.id"""
        return [_decode_game(r) for r in self._read(sql, [address, GameState.RUNNING])]

    # -- phases and moves ------------------------------------------------

    def add_phase(
        self, game_id: int, number: int, label: str, movers: list[int], sealed: bool, opened_at: str, deadline: str
    ) -> PhaseRow:
        """Write a new phase into the record; the row written.  (The phase a
        game waits on is ``Table.open_phase``; those not yet resolved, ``open_phases``.)"""
        self._insert(
            "phases",
            {
                "game_id": game_id,
                "number": number,
                "label": label,
                "movers": json.dumps(movers),
                "sealed": int(sealed),
                "opened_at": opened_at,
                "deadline": deadline,
                "closes_at": None,
                "resolved_at": None,
            },
        )
        return cast(PhaseRow, self.phase(game_id, number))

    def phase(self, game_id: int, number: int) -> PhaseRow | None:
        rows = list(self._rows("phases", "game_id = ? and number = ?", [game_id, number]))
        return _decode_phase(rows[0]) if rows else None

    def phases(self, game_id: int, since: int = 1) -> list[PhaseRow]:
        """A game's phases, from number ``since`` on."""
        rows = self._rows("phases", "game_id = ? and number >= ?", [game_id, since], order_by="number")
        return _decode_phases(rows)

    def open_phases(self, game_id: int | None = None) -> list[PhaseRow]:
        """The phases not yet resolved of running games (of one game, with
        ``game_id``), by deadline.  (A cancelled game's last phase was never
        resolved, and never will be.)"""
        sql = (
            "select phases.* from phases join games on games.id = phases.game_id "
            "where phases.resolved_at is null and games.state = ?"
        )
        args: list[Any] = [GameState.RUNNING]
        if game_id is not None:
            sql, args = f"{sql} and phases.game_id = ?", [*args, game_id]
        return _decode_phases(self._read(f"{sql} order by phases.deadline", args))

    # The open phases by time, each by one of schema 7's partial indexes (of
    # the phases not yet resolved): what a tick reads follows what is due,
    # not how many games run.  "+games.state" keeps SQLite from starting at
    # games(state), which would read every running game's open phase.
    _OPEN = (
        "select phases.* from phases join games on games.id = phases.game_id "
        "where phases.resolved_at is null and +games.state = ?"
    )

    def due_phases(self, now: str) -> list[PhaseRow]:
        """The open phases of running games whose deadline or settle end has
        come by ``now``, by deadline."""
        sql = (
            f"select * from ({self._OPEN} and phases.deadline <= ? "
            f"union {self._OPEN} and phases.closes_at <= ?) order by deadline, game_id"
        )
        return _decode_phases(self._read(sql, [GameState.RUNNING, now, GameState.RUNNING, now]))

    def phases_due_between(self, after: str, through: str) -> list[PhaseRow]:
        """The open phases of running games whose deadline falls after
        ``after`` and by ``through``, by deadline."""
        sql = f"{self._OPEN} and phases.deadline > ? and phases.deadline <= ? order by phases.deadline, phases.game_id"
        return _decode_phases(self._read(sql, [GameState.RUNNING, after, through]))

    def first_open_phase(
        self, by: Literal["deadline", "closes_at"], skip: Collection[int], remind_lead: float | None = None
    ) -> PhaseRow | None:
        """The open phase of a running game outside ``skip`` whose ``by``
        (its deadline, or its settle end) comes first.  With
        ``remind_lead`` (seconds), of the phases still to be reminded that
        lead before their deadline: those lasting at least twice the lead
        (tables.reminder_time)."""
        sql, args = f"{self._OPEN} and phases.{by} is not null", list[Any]([GameState.RUNNING])
        if skip:
            sql, args = (
                f"{sql} and phases.game_id not in (select value from json_each(?))",
                [*args, json.dumps(sorted(skip))],
            )
        if remind_lead is not None:
            sql = (
                f"{sql} and phases.reminded_at is null and "
                "cast(strftime('%s', phases.deadline) as integer) - cast(strftime('%s', phases.opened_at) as integer) >= ?"
            )
            args = [*args, 2 * remind_lead]
        rows = self._read(f"{sql} order by phases.{by} limit 1", args)
        return _decode_phase(rows[0]) if rows else None

    def update_phase(self, game_id: int, number: int, **changes: Any) -> None:
        self._update("phases", "game_id = ? and number = ?", [game_id, number], changes)

    def add_move(self, **row: Any) -> None:
        self._insert("moves", row)

    def moves(self, game_id: int, phase: int | None = None, since: int = 1) -> list[MoveRow]:
        """Every move received (in ``phase``, or in phases from ``since`` on),
        in the order it counts: by receipt time, then arrival."""
        where, args = "game_id = ? and phase >= ?", [game_id, since]
        if phase is not None:
            where, args = where + " and phase = ?", args + [phase]
        return list(self._rows("moves", where, args, order_by="received_at, id"))

    def counted_moves(self, game_id: int, since: int = 1) -> list[CountedMove]:
        """Every move received in phases from ``since`` on, in the order it
        counts (as Store.moves), with the columns a game's Table keeps
        (CountedMove).  (A Bluff game's record has hundreds of moves: the
        three columns fewer are a quarter of their reading, and of the
        objects a Table holds for them.)"""
        sql = (
            "select phase, seat, move, source, message_key, received_at from [moves]"
            " where game_id = ? and phase >= ? order by received_at, id"
        )
        return self._read(sql, [game_id, since])

    def final_moves(self, game_id: int, phase: int) -> dict[int, MoveRow]:
        """Per seat, the move that counts: the last one received."""
        return {move["seat"]: move for move in self.moves(game_id, phase)}

    def intervene(
        self,
        game_id: int,
        phase: int,
        at: str,
        act: Act,
        by: str | None,
        why: str = "",
        deadline: str | None = None,
        **detail: Any,
    ) -> None:
        """Put an intervention on the game's record; with ``deadline``, the
        phase's deadline moves there, and the detail says from where to where."""
        if deadline is not None:
            old = self._value("select deadline from phases where game_id = ? and number = ?", [game_id, phase])
            detail = {"old": old, "new": deadline, **detail}
            self.update_phase(game_id, phase, deadline=deadline)
        self._insert(
            "interventions",
            {
                "game_id": game_id,
                "phase": phase,
                "at": at,
                "act": act,
                "by": by,
                "why": why,
                "detail": json.dumps(detail),
            },
        )

    def interventions(self, game_id: int) -> list[InterventionRow]:
        """A game's interventions, in the order they were made."""
        return [_decode_intervention(r) for r in self._rows("interventions", "game_id = ?", [game_id], order_by="id")]

    # -- results: what the standings count (referee.standings) -------------

    def add_results(self, game_id: int, results: list[dict[str, Any]]) -> None:
        """A finished game's result per seat (seat, score, place, won)."""
        for row in results:
            self._insert("results", {"game_id": game_id, **row}, replace=True)

    def results(self) -> list[ResultRow]:
        """Every seat's result in the finished games that have one, by game."""
        return self._read(
            """select r.game_id, g.kind, r.seat, r.score, r.place, r.won, s.address, s.bot_since_phase
               from results r join games g on g.id = r.game_id
               join seats s on s.game_id = r.game_id and s.seat = r.seat
               where g.state = ? order by r.game_id, r.seat""",
            [GameState.FINISHED],
        )

    def unscored(self) -> tuple[list[int], int]:
        """The finished games with no results written (finished before
        there were any), and how many the keeper cancelled (which have none)."""
        rows = self._read(
            """select g.id, exists (select 1 from interventions i where i.game_id = g.id and i.act = ?) as cancelled
               from games g where g.state = ? and not exists (select 1 from results r where r.game_id = g.id)
               order by g.id""",
            [Act.CANCEL, GameState.FINISHED],
        )
        return [row["id"] for row in rows if not row["cancelled"]], sum(row["cancelled"] for row in rows)

    def move_tally(self, sources: tuple[str, ...]) -> list[MoveTally]:
        """Per seat of every finished game, and per stint of a player in it
        (a takeover starts the next), in how many phases it moved by each of
        ``sources``: a move replaced by a later one counts once."""
        return self._read(
            f"""with takeovers as (select game_id, json_extract(detail, '$.seat') as seat, phase
                                   from interventions where act = ?)
                select m.game_id, m.seat, m.source,
                       (select count(*) from takeovers t
                        where t.game_id = m.game_id and t.seat = m.seat and t.phase <= m.phase) as stint,
                       count(distinct m.phase) as moves
                from moves m join games g on g.id = m.game_id
                where g.state = ? and m.source in ({", ".join("?" * len(sources))})
                group by m.game_id, m.seat, m.source, stint""",
            [Act.REPLACE, GameState.FINISHED, *sources],
        )

    def seat_changes(self) -> list[InterventionRow]:
        """The takeovers of seats and players' moves to another address in
        every finished game, in the order they were made."""
        rows = self._read(
            """select i.* from interventions i join games g on g.id = i.game_id
               where g.state = ? and i.act in (?, ?) order by i.id""",
            [GameState.FINISHED, Act.REPLACE, Act.ADDRESS],
        )
        return [_decode_intervention(row) for row in rows]

    def moved_token(self, token: str) -> InterventionRow | None:
        """The change of address that retired a seat's reply token, if one did
        (its detail keeps the token: interventions are few, so no index)."""
        sql = "select * from interventions where act = ? and json_extract(detail, '$.old_token') = ? order by id desc"
        rows = self._read(sql, [Act.ADDRESS, token])
        return _decode_intervention(rows[0]) if rows else None

    def paused(self) -> dict[int, InterventionRow]:
        """The games paused now: each one's pause (the last pause or resume
        of a running game, when it is a pause)."""
        # Asked after every message (what falls due next) and at every tick:
        # kept while no row of interventions or games was written (_kept_since_writes).
        key = self._kept_since_writes("paused", "interventions", "games")
        kept = self._kept.get(self._moment(), key)
        if kept is _MISSING:
            # From the pauses ever made (schema 7's index on act), not from every running game.
            sql = """select i.* from interventions i join games g on g.id = i.game_id
                     where i.act = ? and +g.state = ? and i.id = (select max(id) from interventions
                         where game_id = i.game_id and act in (?, ?))"""
            rows = self._read(sql, [Act.PAUSE, GameState.RUNNING, Act.PAUSE, Act.RESUME])
            kept = {row["game_id"]: _decode_intervention(row) for row in rows}
            self._kept.put(key, kept)
        return dict(kept)

    # -- offers: what an address is asked to confirm by reply ---------------

    def add_offer(self, **row: Any) -> int:
        """A new open offer (``detail`` a dict); its id."""
        return self._insert("offers", {**row, "detail": json.dumps(row.get("detail") or {})})

    def set_offer_token(self, offer_id: int, token: str) -> None:
        self._update("offers", "id = ?", [offer_id], {"token": token})

    def offer(self, offer_id: int) -> OfferRow | None:
        rows = list(self._rows("offers", "id = ?", [offer_id]))
        return _decode_offer(rows[0]) if rows else None

    def offer_by_token(self, token: str) -> OfferRow | None:
        rows = list(self._rows("offers", "token = ?", [token]))
        return _decode_offer(rows[0]) if rows else None

    def open_offers(self, kind: OfferKind | None = None, game_id: int | None = None) -> list[OfferRow]:
        """Offers not yet answered, withdrawn or expired, oldest first.
        Asked at every new phase (a seat offered waits: Phases.bot_moves):
        while few are open (each lapses within days), all are read at once
        and kept while no statement wrote to offers (Store.written)."""
        key = ("open offers", self._statements_writing.get("offers", 0))
        kept = self._kept.get(self._moment(), key)
        if kept is _MISSING:
            rows = self._rows("offers", "closed_at is null", order_by="id", limit=_OPEN_OFFERS_AT_ONCE + 1)
            kept = rows if len(rows) <= _OPEN_OFFERS_AT_ONCE else None
            self._kept.put(key, kept)
        if kept is not None:
            return [
                _decode_offer(dict(row))
                for row in kept
                if kind in (None, row["kind"]) and game_id in (None, row["game_id"])
            ]
        where, args = ["closed_at is null"], list[Any]()
        if kind is not None:
            where, args = [*where, "kind = ?"], [*args, kind]
        if game_id is not None:
            where, args = [*where, "game_id = ?"], [*args, game_id]
        return [_decode_offer(r) for r in self._rows("offers", " and ".join(where), args, order_by="id")]

    def offers_made_since(self, kind: OfferKind, since: str) -> list[OfferRow]:
        """Offers of a kind made since then, answered or not (they are few)."""
        return [_decode_offer(r) for r in self._rows("offers", "kind = ? and made_at >= ?", [kind, since])]

    def offers_due(self, now: str) -> list[OfferRow]:
        """Open offers whose time is up."""
        return [_decode_offer(r) for r in self._rows("offers", "closed_at is null and expires_at <= ?", [now])]

    def close_offer(self, offer_id: int, at: str, outcome: str) -> None:
        self._update("offers", "id = ?", [offer_id], {"closed_at": at, "outcome": outcome})

    def offers_made(self, kind: OfferKind, game_id: int, seat: int, since: str) -> int:
        """How many offers of ``kind`` a seat has made since a moment, answered or not."""
        return self._count(
            "offers", "kind = ? and game_id = ? and seat = ? and made_at >= ?", [kind, game_id, seat, since]
        )

    # -- delegations: a stand-in's turn at a seat ---------------------------

    def add_delegation(self, **row: Any) -> int:
        """A stand-in's turn at a seat, its token unset; its id."""
        return self._insert("delegations", row)

    def set_delegation_token(self, delegation_id: int, token: str) -> None:
        self._update("delegations", "id = ?", [delegation_id], {"token": token})

    def end_delegation(self, delegation_id: int, at: str) -> None:
        self._update("delegations", "id = ?", [delegation_id], {"ended_at": at})

    def delegation(self, delegation_id: int) -> DelegationRow | None:
        rows = list(self._rows("delegations", "id = ?", [delegation_id]))
        return rows[0] if rows else None

    def delegation_by_token(self, token: str) -> DelegationRow | None:
        rows = list(self._rows("delegations", "token = ?", [token]))
        return rows[0] if rows else None

    def delegations(self, game_id: int, at: str) -> list[DelegationRow]:
        """A game's stand-ins in their turn at moment ``at`` (one a seat at most)."""
        where = "game_id = ? and since <= ? and until > ? and (ended_at is null or ended_at > ?)"
        return list(self._rows("delegations", where, [game_id, at, at, at], order_by="seat"))

    def delegations_due(self, now: str | None, game_id: int | None = None) -> list[DelegationRow]:
        """Stand-ins' turns not yet ended whose time is up by ``now`` (None: whenever), of
        running games (or of one), the first due first."""
        sql = (
            "select d.* from delegations d join games g on g.id = d.game_id "
            "where d.ended_at is null and g.state = ? and (? is null or d.until <= ?) and (? is null or d.game_id = ?)"
        )
        return self._read(f"{sql} order by d.until, d.id", [GameState.RUNNING, now, now, game_id, game_id])

    # -- table talk: each message relayed (TELL), and the addresses to answer it --

    def add_press(self, game_id: int, seat: int, at: str, recipients: int, signed: bool) -> int:
        """A message of table talk relayed (never its text): the new row's id."""
        row = {"game_id": game_id, "seat": seat, "at": at, "recipients": recipients, "signed": int(signed)}
        return self._insert("press", row)

    def press_since(self, game_id: int, seat: int, since: str) -> list[str]:
        """When a seat's messages of table talk after ``since`` were relayed, the oldest first."""
        rows = self._rows("press", "game_id = ? and seat = ? and at > ?", [game_id, seat, since], order_by="at")
        return [row["at"] for row in rows]

    def press_at(self, press_id: int) -> str:
        """When a message of table talk was relayed."""
        return str(next(iter(self._rows("press", "id = ?", [press_id])))["at"])

    def add_press_token(self, row: PressTokenRow) -> None:
        self._insert("press_tokens", dict(row))

    def press_token(self, token: str) -> PressTokenRow | None:
        rows = list(self._rows("press_tokens", "token = ?", [token]))
        return rows[0] if rows else None

    # -- messages --------------------------------------------------------

    def seen(self, key: str) -> bool:
        """Whether a message was handled.  One that failed was not, nor one
        that was ignored (it had no effect): a later delivery of it is tried
        afresh.  So a mailing list's copy of a bid, ignored, never makes the
        player's own copy, with the same Message-ID, a duplicate."""
        return (
            self._count("messages", "key = ? and code not in (?, ?)", [key, OutcomeCode.FAILED, OutcomeCode.IGNORED])
            > 0
        )

    def record_message(
        self,
        key: str,
        message_id: str | None,
        sender: str | None,
        subject: str | None,
        received_at: str | None,
        handled_at: str,
        game_id: int | None,
        code: OutcomeCode,
        detail: str,
        raw: bytes,
    ) -> None:
        row = {
            "key": key,
            "message_id": message_id,
            "sender": sender,
            "subject": subject,
            "received_at": received_at,
            "handled_at": handled_at,
            "game_id": game_id,
            "code": code,
            "detail": detail,
            "raw": raw,
        }
        self._insert("messages", row, replace=True)  # replaces a failed attempt

    def failed_messages(self) -> list[FailedMessage]:
        """Messages that met a bug (kept here, quarantined on the mail
        server, and tried afresh if delivered again), newest first."""
        return self._read(
            "select key, sender, subject, handled_at, code, detail from messages "
            "where code = ? order by handled_at desc",
            [OutcomeCode.FAILED],
        )

    def count_failed_messages(self) -> int:
        """How many messages met a bug (failed_messages), from an index: cheap."""
        return self._count("messages", "code = ?", [OutcomeCode.FAILED])

    def messages(self) -> list[MessageRow]:
        return list(self._rows("messages", order_by="handled_at"))

    def last_received_at(self) -> str | None:
        """When the newest message handled was received."""
        return self._value("select max(received_at) from messages")

    # -- mailboxes and bookkeeping ------------------------------------------

    def mailbox(self, name: str) -> MailboxRow | None:
        """What the IMAP source last saw of a mailbox: UIDVALIDITY and last UID."""
        rows = list(self._rows("mailboxes", "name = ?", [name]))
        return rows[0] if rows else None

    def set_mailbox(self, name: str, uidvalidity: int, last_uid: int) -> None:
        self._upsert("mailboxes", {"name": name, "uidvalidity": uidvalidity, "last_uid": last_uid}, key="name")

    def get_meta(self, key: str) -> str | None:
        rows = list(self._rows("meta", "key = ?", [key]))
        return rows[0]["value"] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        self._upsert("meta", {"key": key, "value": value}, key="key")

    def delete_meta(self, key: str) -> None:
        self._write("delete from meta where key = ?", [key])

    # -- outbox ----------------------------------------------------------

    def queue_mail(self, **row: Any) -> bool:
        """Queue a mail, unless one of its Message-ID is queued already:
        whether it was.  One statement: the insert looks for the Message-ID
        itself (by its index), where a look first (has_mail) was a second
        statement for every mail the referee writes."""
        row = {"state": MailState.QUEUED, "attempts": 0, **row, "recipients": json.dumps(row["recipients"])}
        columns = list(row)
        cursor = self._write(
            f"insert into outbox ({', '.join(f'[{c}]' for c in columns)}) "
            f"select {', '.join('?' * len(columns))} where not exists (select 1 from outbox where message_id = ?)",
            [*(row[c] for c in columns), row["message_id"]],
        )
        if cursor.rowcount != 1:
            return False
        self.mails_queued += 1
        return True

    def mark_sent(self, mail_ids: list[int], at: str) -> None:
        """The SMTP server took these mails: one statement for all of them
        (the sender marks what it sent since its last look, between messages)."""
        self._write(
            "update outbox set state = ?, sent_at = ? where id in (select value from json_each(?))",
            [MailState.SENT, at, json.dumps(mail_ids)],
        )

    def defer_mail(self, mail_id: int, error: str, next_try_at: str) -> None:
        """A temporary failure: the mail stays queued and is tried again later."""
        self._write(
            "update outbox set attempts = attempts + 1, last_error = ?, next_try_at = ? where id = ?",
            [error, next_try_at, mail_id],
        )

    def fail_mail(self, mail_id: int, error: str) -> None:
        """A permanent failure: the mail is never tried again; status reports it."""
        self._write(
            "update outbox set state = ?, attempts = attempts + 1, last_error = ? where id = ?",
            [MailState.FAILED, error, mail_id],
        )

    def forget_sent_bodies(self, before: str) -> int:
        """Keep only the headers of mail sent before ``before`` (and none of
        its text): the outbox stops growing by whole mails, and a bounce
        still finds the mail it quotes.  Only the mails sent since the last
        call's ``before`` are read (meta's sent_trimmed_before, found by the
        index on when each was sent), so each row is read once however long
        the outbox: a mail is marked sent as of the clock's now, never
        before a cut already made (which lies ``keep_sent_mail`` in the
        past).  Returns how many mails were trimmed."""
        done = self.get_meta("sent_trimmed_before") or ""
        if before <= done:
            return 0
        cursor = self._write(
            "update outbox indexed by idx_outbox_sent_or_queued "
            "set raw = substr(raw, 1, instr(raw, X'0D0A0D0A') + 3), text = null "
            f"where {_SENT_OR_QUEUED} >= ? and {_SENT_OR_QUEUED} < ? and state in (?, ?) "
            "and instr(raw, X'0D0A0D0A') > 0 "
            "and length(raw) > instr(raw, X'0D0A0D0A') + 3",
            [done, before, MailState.SENT, MailState.RESTORED],
        )
        self.set_meta("sent_trimmed_before", before)
        return cursor.rowcount

    def forget_received_bodies(self, before: str) -> int:
        """Keep only the headers of mail handled before ``before`` (those
        handled since the last call, so each row is read once): nothing
        reads a handled mail's body again (the record keeps the moves, the
        mail server the mail).  Mail that met a bug stays whole, for the
        keeper.  Returns how many mails were trimmed."""
        done = self.get_meta("received_trimmed_before") or ""
        if before <= done:
            return 0
        cursor = self._write(
            "update messages set raw = substr(raw, 1, case when instr(raw, X'0D0A0D0A') > 0 "
            "then instr(raw, X'0D0A0D0A') + 3 else instr(raw, X'0A0A') + 1 end) "
            "where handled_at >= ? and handled_at < ? and code != ? "
            "and (instr(raw, X'0D0A0D0A') > 0 or instr(raw, X'0A0A') > 0)",
            [done, before, OutcomeCode.FAILED],
        )
        self.set_meta("received_trimmed_before", before)
        return cursor.rowcount

    def size(self) -> int:
        """Bytes on disk: games.db and its -wal."""
        if str(self.path) == ":memory:":
            return 0
        try:
            return sum(
                Path(f"{self.path}{suffix}").stat().st_size
                for suffix in ("", "-wal")
                if Path(f"{self.path}{suffix}").exists()
            )
        except OSError as error:
            raise _as_fault(self.path, error) from None

    def sent_by_id(self, message_id: str) -> OutboxRow | None:
        """A mail the referee queued, by its Message-ID (a bounce quotes it)."""
        rows = list(self._rows("outbox", "message_id = ?", [message_id]))
        return _decode_mail(rows[0]) if rows else None

    def has_mail(self, message_id: str) -> bool:
        """Whether a mail with this Message-ID was queued: sent_by_id without
        reading (and decoding) the mail, for a new mail's Message-ID."""
        return self._value("select exists (select 1 from outbox where message_id = ?)", [message_id]) == 1

    def last_sent_to(self, address: str, count: int) -> list[OutboxRow]:
        """The newest ``count`` mails queued to ``address`` alone, newest first
        (by the index on outbox.recipients, whose entries for one address
        are in id order: the first few read, however long the outbox)."""
        rows = self._rows("outbox", "recipients = ?", [json.dumps([address])], order_by="id desc", limit=count)
        return [_decode_mail(row) for row in rows]

    def answers_since(
        self,
        since: str,
        budgets: tuple[str, ...],
        address: str | None = None,
        origin: str | None = None,
        checked: bool | None = None,
    ) -> int:
        """How many answers of those ``budgets`` (see referee.limits) were
        queued since then: to the (normalised) ``address``, or to anyone;
        with ``origin``, only those to mail of that origin; with ``checked``,
        only those to mail of the origin "checked" (True) or of any other (False)."""
        where = f"budget in ({', '.join('?' * len(budgets))}) and created_at >= ?"
        values: list[Any] = [*budgets, since]
        if address is not None:
            where, values = where + " and answer_to = ?", values + [address]
        if origin is not None:
            where, values = where + " and answer_from = ?", values + [origin]
        if checked is not None:
            where += " and answer_from is 'checked'" if checked else " and answer_from is not 'checked'"
        return self._count("outbox", where, values)

    def first_answer_since(self, since: str, budget: str, address: str, origin: str | None = None) -> str | None:
        """When the first answer of ``budget`` to ``address`` (to mail of ``origin``) since then was queued."""
        where, values = "answer_to = ? and budget = ? and created_at >= ?", [address, budget, since]
        if origin is not None:
            where, values = where + " and answer_from = ?", values + [origin]
        return self._value(f"select min(created_at) from outbox where {where}", values)

    def count_refused_mail(self, since: str) -> int:
        """How many mails were refused for good since then (at the try due
        last, or when queued if it was the first)."""
        return self._count("outbox", "state = ? and coalesce(next_try_at, created_at) >= ?", [MailState.FAILED, since])

    def count_late_mail(self, before: str) -> int:
        """How many mails queued before ``before`` wait to be sent still."""
        return self._count("outbox", "state = ? and created_at < ?", [MailState.QUEUED, before])

    def outbox(
        self,
        state: MailState | None = MailState.QUEUED,
        due: str | None = None,
        game_id: int | None = None,
        after: int = 0,
        limit: int | None = None,
    ) -> list[OutboxRow]:
        """Mail in ``state`` (queued, sent, or failed: refused for good; all
        with None), oldest first; with ``due``, only mail whose next try is not
        later than that time; with ``game_id``, only that game's; with
        ``after``, only mail queued after the one with that id; ``limit`` mails at most."""
        clauses: list[str] = ["id > ?"] if after else []
        args: list[Any] = [after] if after else []
        if state:
            clauses.append("state = ?")
            args.append(state)
        if due:
            clauses.append("(next_try_at is null or next_try_at <= ?)")
            args.append(due)
        if game_id is not None:
            clauses.append("game_id = ?")
            args.append(game_id)
        where = " and ".join(clauses) or None
        rows = self._rows("outbox", where, args or None, order_by="id", limit=limit)
        return [_decode_mail(r) for r in rows]


# -- the schema, and how an older games.db is brought up to date ------------


def _schema_1(db: sqlite_utils.Database) -> None:
    """Schema 1, reached from nothing or from any games.db older than schema
    versions (user_version 0): its tables, the columns added to them before
    versions were kept, and their indexes; each step is skipped where done."""
    db.table("games").create(
        {
            "id": int,
            "kind": str,
            "name": str,
            "options": str,
            "seed": str,
            "seed_commitment": str,
            "state": str,
            "deadline_seconds": int,
            "settle_seconds": int,
            "created_at": str,
            "finished_at": str,
        },
        pk="id",
        not_null={"kind", "seed", "state"},
        if_not_exists=True,
    )
    db.table("seats").create(
        {"game_id": int, "seat": int, "address": str, "bot": int, "bot_since_phase": int, "resigned_at": str},
        pk=("game_id", "seat"),
        foreign_keys=[("game_id", "games", "id")],
        if_not_exists=True,
    )
    db.table("phases").create(
        {
            "game_id": int,
            "number": int,
            "label": str,
            "movers": str,
            "sealed": int,
            "opened_at": str,
            "deadline": str,
            "closes_at": str,
            "resolved_at": str,
        },
        pk=("game_id", "number"),
        foreign_keys=[("game_id", "games", "id")],
        if_not_exists=True,
    )
    db.table("moves").create(
        {
            "id": int,
            "game_id": int,
            "phase": int,
            "seat": int,
            "move": str,
            "source": str,
            "message_key": str,
            "received_at": str,
            "recorded_at": str,
        },
        pk="id",
        foreign_keys=[("game_id", "games", "id")],
        if_not_exists=True,
    )
    db.table("messages").create(
        {
            "key": str,
            "message_id": str,
            "sender": str,
            "subject": str,
            "received_at": str,
            "handled_at": str,
            "game_id": int,
            "outcome": str,
            "raw": bytes,
        },
        pk="key",
        if_not_exists=True,
    )
    db.table("outbox").create(
        {
            "id": int,
            "message_id": str,
            "game_id": int,
            "recipients": str,
            "subject": str,
            "raw": bytes,
            "created_at": str,
            "state": str,
            "attempts": int,
            "next_try_at": str,
            "last_error": str,
            "sent_at": str,
        },
        pk="id",
        if_not_exists=True,
    )
    db.table("mailboxes").create({"name": str, "uidvalidity": int, "last_uid": int}, pk="name", if_not_exists=True)
    db.table("meta").create({"key": str, "value": str}, pk="key", if_not_exists=True)
    db.table("deadline_changes").create(
        {"id": int, "game_id": int, "phase": int, "old": str, "new": str, "reason": str, "at": str},
        pk="id",
        foreign_keys=[("game_id", "games", "id")],
        if_not_exists=True,
    )
    db.table("signups").create(
        {"game_id": int, "address": str, "joined_at": str},
        pk=("game_id", "address"),
        foreign_keys=[("game_id", "games", "id")],
        if_not_exists=True,
    )
    db.table("players").create({"address": str, "timezone": str}, pk="address", if_not_exists=True)
    db.table("bounces").create(
        {"id": int, "address": str, "game_id": int, "message_id": str, "status": str, "diagnostic": str, "at": str},
        pk="id",
        if_not_exists=True,
    )
    # Columns added after the first release: an older games.db gains them.
    for table, column, kind in (
        ("phases", "reminded_at", str),
        ("seats", "token", str),
        ("games", "seats_wanted", int),
        ("outbox", "answers", str),
        ("outbox", "budget", str),
        ("outbox", "answer_to", str),
        ("games", "turn_seconds", int),
        ("games", "decision_seconds", int),
    ):
        if column not in db.table(table).columns_dict:
            db.table(table).add_column(column, kind)
    # What versions before 1 made and later dropped (an early notice flag and
    # its index), so every older games.db ends the same as a new one.
    db.execute("drop index if exists idx_outbox_recipients_created_at")
    if "notice" in db.table("outbox").columns_dict:
        db.execute("alter table outbox drop column notice")
    db.table("seats").create_index(["token"], if_not_exists=True)
    db.table("outbox").create_index(["message_id"], if_not_exists=True)
    db.table("moves").create_index(["game_id", "phase", "seat"], if_not_exists=True)
    db.table("outbox").create_index(["state"], if_not_exists=True)
    db.table("outbox").create_index(["answer_to", "budget", "created_at"], if_not_exists=True)
    db.table("outbox").create_index(["budget", "created_at"], if_not_exists=True)
    db.table("seats").create_index(["address"], if_not_exists=True)
    db.table("outbox").create_index(["state", "sent_at"], if_not_exists=True)
    # The outage guard measures a gap from the last tick (meta's last_tick),
    # which the first games.db did not note: without it the guard took the
    # referee for never having run, and filled the deadlines it slept through
    # at random.  Such a games.db notes the last work its record shows.
    if not db.execute("select 1 from meta where key = 'last_tick'").fetchone():
        last_work = db.execute(
            "select max(at) from (select max(handled_at) as at from messages "
            "union all select max(opened_at) from phases union all select max(resolved_at) from phases "
            "union all select max(created_at) from games union all select max(created_at) from outbox "
            "union all select max(sent_at) from outbox)"
        ).fetchone()[0]
        if last_work:
            db.execute("insert into meta (key, value) values ('last_tick', ?)", [last_work])


def _schema_2(db: sqlite_utils.Database) -> None:
    """Schema 2: ``outbox.answer_from``, the origin of the mail an answer
    answers (referee.mail.origin), which the budgets of answers to mail that
    proves no seat are counted by (referee.limits).  Older answers have none."""
    outbox = db.table("outbox")
    if "answer_from" not in outbox.columns_dict:
        outbox.add_column("answer_from", str)


def _schema_3(db: sqlite_utils.Database) -> None:
    """Schema 3: what became of a message in two columns, ``code`` (move,
    refused, failed...: what the store selects by) and ``detail`` (the rest,
    in words), in place of ``outcome``, one line of both ("refused: line 1: ...")."""
    db.execute("alter table messages add column code text")
    db.execute("alter table messages rename column outcome to detail")
    db.execute(
        "update messages set "
        "code = case when instr(detail, ': ') > 0 then substr(detail, 1, instr(detail, ': ') - 1) else detail end, "
        "detail = case when instr(detail, ': ') > 0 then substr(detail, instr(detail, ': ') + 2) else '' end"
    )


def _schema_4(db: sqlite_utils.Database) -> None:
    """Schema 4: ``interventions``, every act of a keeper on a game (extend,
    pause, resume, replace, cancel, say) and the referee's own deadline
    moves after an outage, on the game's record; the outage moves of
    ``deadline_changes`` move there, and that table goes.  And an index of
    ``messages.code``, so the messages that met a bug are counted without
    reading every message (the column comes after the mail itself in each
    row): the runner asks after every pass whether any are quarantined
    (referee.engine.watch)."""
    db.table("interventions").create(
        {"id": int, "game_id": int, "phase": int, "at": str, "act": str, "by": str, "why": str, "detail": str},
        pk="id",
        foreign_keys=[("game_id", "games", "id")],
        not_null={"game_id", "phase", "at", "act", "why", "detail"},
        if_not_exists=True,
    )
    db.table("interventions").create_index(["game_id"], if_not_exists=True)
    if "deadline_changes" in db.table_names():
        db.execute(
            "insert into interventions (game_id, phase, at, act, by, why, detail) "
            "select game_id, phase, at, 'outage', null, reason, json_object('old', old, 'new', new) "
            "from deadline_changes order by id"
        )
        db.execute("drop table deadline_changes")
    db.table("messages").create_index(["code"], if_not_exists=True)


def _schema_5(db: sqlite_utils.Database) -> None:
    """Schema 5: a seat for the whole game.  ``seats.notify`` and
    ``games.notify``, how much mail a seat wants (referee.store.Notify);
    ``offers``, what an address is asked to confirm by reply (a new address,
    a stand-in, a seat offered to a person on standby); ``delegations``, a
    stand-in's turn at a seat; ``standby``, who would take over a seat of a
    kind of game left mid-game; and ``told``, what each seat has been told
    of its game (the quieter levels of Notify)."""
    for table in ("seats", "games"):
        if "notify" not in db.table(table).columns_dict:
            db.table(table).add_column("notify", str)
    db.table("offers").create(
        {
            "id": int,
            "kind": str,
            "game_id": int,
            "seat": int,
            "address": str,
            "token": str,
            "made_at": str,
            "expires_at": str,
            "detail": str,
            "closed_at": str,
            "outcome": str,
        },
        pk="id",
        foreign_keys=[("game_id", "games", "id")],
        not_null={"kind", "address", "made_at", "expires_at", "detail"},
        if_not_exists=True,
    )
    db.table("offers").create_index(["token"], unique=True, if_not_exists=True)
    db.table("offers").create_index(["closed_at", "expires_at"], if_not_exists=True)
    # A stand-in's turn at a seat (DELEGATE, once the stand-in accepted), with its own reply token.
    db.table("delegations").create(
        {
            "id": int,
            "game_id": int,
            "seat": int,
            "address": str,
            "token": str,
            "since": str,
            "until": str,
            "ended_at": str,
        },
        pk="id",
        foreign_keys=[("game_id", "games", "id")],
        not_null={"game_id", "seat", "address", "since", "until"},
        if_not_exists=True,
    )
    db.table("delegations").create_index(["token"], unique=True, if_not_exists=True)
    db.table("delegations").create_index(["game_id", "seat"], if_not_exists=True)
    db.table("delegations").create_index(["ended_at", "until"], if_not_exists=True)
    # Who would take over a seat of a kind of game left mid-game (STANDBY, confirmed).
    db.table("standby").create(
        {"kind": str, "address": str, "since": str},
        pk=("kind", "address"),
        not_null={"since"},
        if_not_exists=True,
    )
    # What each seat has been told of its game, for NOTIFY's quieter levels:
    # mail bookkeeping, apart from the record (a write to seats is one to it).
    db.table("told").create(
        {"game_id": int, "seat": int, "through": int, "digest_at": str},
        pk=("game_id", "seat"),
        foreign_keys=[("game_id", "games", "id")],
        not_null={"through"},
        if_not_exists=True,
    )


def _schema_6(db: sqlite_utils.Database) -> None:
    """Schema 6: games for a club.  ``games.press``, ``games.announce_to``
    and ``games.awards``, a game's own table talk, lists and award text;
    ``games.least_since``, when an open game last reached its kind's least
    players (its sign-up window counts from then); ``signups.start``, when a signed-up player asked to start at once
    (START); ``watchers``, who follows a game's public mail without playing
    (WATCH), each with the reply token of their copies, and ``reader_told``,
    what each reader (a list, an observer) has been told, for their daily
    digest; ``press``, each message of table talk relayed (TELL), kept
    for its rate limit (who, when, to how many; never what it said), and
    ``press_tokens``, the reply address each reader of one was given, so a
    reply goes back to its writer through the referee; ``results``, each
    seat's score and place in a finished game, as its rules' result says
    (the standings read them, never replaying a game)."""
    games = db.table("games")
    for column in ("press", "announce_to", "least_since"):
        if column not in games.columns_dict:
            games.add_column(column, str)
    if "awards" not in games.columns_dict:
        games.add_column("awards", int)
    if "start" not in db.table("signups").columns_dict:
        db.table("signups").add_column("start", str)
    db.table("watchers").create(
        {"game_id": int, "address": str, "notify": str, "since": str, "token": str},
        pk=("game_id", "address"),
        foreign_keys=[("game_id", "games", "id")],
        not_null={"since"},
        if_not_exists=True,
    )
    if "token" not in db.table("watchers").columns_dict:  # (a games.db of schema 6 before it had one)
        db.table("watchers").add_column("token", str)
    db.table("watchers").create_index(["token"], if_not_exists=True)
    db.table("reader_told").create(
        {"game_id": int, "address": str, "through": int, "digest_at": str},
        pk=("game_id", "address"),
        foreign_keys=[("game_id", "games", "id")],
        not_null={"through"},
        if_not_exists=True,
    )
    db.table("press").create(
        {"id": int, "game_id": int, "seat": int, "at": str, "recipients": int, "signed": int},
        pk="id",
        foreign_keys=[("game_id", "games", "id")],
        not_null={"game_id", "seat", "at", "recipients", "signed"},
        if_not_exists=True,
    )
    db.table("press").create_index(["game_id", "seat", "at"], if_not_exists=True)
    db.table("press_tokens").create(
        {"token": str, "game_id": int, "seat": int, "to_seat": int, "signed": int, "press_id": int},
        pk="token",
        foreign_keys=[("game_id", "games", "id"), ("press_id", "press", "id")],
        not_null={"game_id", "seat", "to_seat", "signed", "press_id"},
        if_not_exists=True,
    )
    db.table("results").create(
        {"game_id": int, "seat": int, "score": int, "place": int, "won": int},
        pk=("game_id", "seat"),
        foreign_keys=[("game_id", "games", "id")],
        not_null={"place", "won"},
        if_not_exists=True,
    )


# When a mail was sent (or queued, for one restored: never sent by this
# file), as forget_sent_bodies reads it: the very expression schema 7
# indexes, so SQLite finds the rows in a range of it by that index.
_SENT_OR_QUEUED = "coalesce(sent_at, created_at)"


# The games with lists of their own: the very term schema 7's partial index
# of them is made with, so that Store.lists reads that index alone.
_HAS_LISTS = "announce_to not in ('', '[]')"


def _schema_7(db: sqlite_utils.Database) -> None:
    """Schema 7: the referee's own cost.  ``outbox.text``, the body of a
    mail as the referee composed it, kept beside its bytes: a reply that
    quotes a prompt is read against the prompt's text, which would
    otherwise cost a second parse of the referee's own mail for every
    reply (older rows have none: they are parsed as before).  And indexes,
    so that no run's work grows with history: outbox(recipients), for
    last_sent_to (an index outbox(recipients, created_at) served
    answers_since until schema 6 moved it to answer_to, and was dropped
    then); the outbox by when each mail was sent, so forget_sent_bodies
    reads only the mails sent since its last cut; the open phases by
    deadline and by settle end, so a tick reads only those due;
    games(state), the running ones; seats(notify) and games(notify), the
    seats at DIGEST (Store.digest_seats); interventions(act), the pauses
    (Store.paused)."""
    if "text" not in db.table("outbox").columns_dict:
        db.table("outbox").add_column("text", str)
    db.table("outbox").create_index(["recipients"], if_not_exists=True)
    db.execute(f"create index if not exists idx_outbox_sent_or_queued on outbox ({_SENT_OR_QUEUED})")
    db.execute("create index if not exists idx_phases_open_deadline on phases (deadline) where resolved_at is null")
    db.execute("create index if not exists idx_phases_open_closes_at on phases (closes_at) where resolved_at is null")
    db.table("games").create_index(["state"], if_not_exists=True)
    db.table("seats").create_index(["notify"], if_not_exists=True)
    db.table("games").create_index(["notify"], if_not_exists=True)
    db.table("interventions").create_index(["act"], if_not_exists=True)
    db.execute(f"create index if not exists idx_games_lists on games (announce_to) where {_HAS_LISTS}")
    db.table("messages").create_index(["handled_at"], if_not_exists=True)


# MIGRATIONS[n] takes a games.db from schema n to n + 1.  To change the
# schema: append a step, raise SCHEMA_VERSION, and add a fixture of the
# schema it starts from to tests/fixtures/schemas (see test_storage).
MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    _schema_1,
    _schema_2,
    _schema_3,
    _schema_4,
    _schema_5,
    _schema_6,
    _schema_7,
]


# The rows read are fresh dicts: their JSON and flag columns are decoded in place.


def _decode_game(row: Any) -> GameRow:
    row["options"] = json.loads(row["options"])
    row["announce_to"] = json.loads(row["announce_to"] or "[]")
    return row


def _decode_offer(row: Any) -> OfferRow:
    row["detail"] = json.loads(row["detail"])
    return row


def _decode_intervention(row: Any) -> InterventionRow:
    row["detail"] = json.loads(row["detail"])
    return row


def _decode_phase(row: Any) -> PhaseRow:
    row["movers"], row["sealed"] = json.loads(row["movers"]), bool(row["sealed"])
    return row


def _decode_phases(rows: list[Any]) -> list[PhaseRow]:
    """Rows of phases decoded as _decode_phase does, their movers read as one
    JSON array (a game's hundreds of phases: a json.loads each cost five
    times as much, a tenth of a full render's reading), each text once: the
    rows of the same movers share one list (a turn-based game's hundreds of
    phases have a few; nobody changes a row read)."""
    texts = dict.fromkeys(row["movers"] for row in rows)
    decoded = dict(zip(texts, json.loads(f"[{','.join(texts)}]"), strict=True))
    for row in rows:
        row["movers"], row["sealed"] = decoded[row["movers"]], bool(row["sealed"])
    return rows


def _decode_mail(row: Any) -> OutboxRow:
    row["recipients"] = json.loads(row["recipients"])
    return row
