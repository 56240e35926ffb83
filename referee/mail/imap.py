"""Mail in over IMAP (aioimaplib): the referee's mailbox on any server.

The store remembers, per mailbox, its UIDVALIDITY and the last UID below
which every message is filed, so each poll fetches only new mail.  A
message's receipt time is its INTERNALDATE (when the server received it).
What is waiting is listed first (UID, RFC822.SIZE, INTERNALDATE: no message
read), then read a batch at a time, a message over max_size only in part
(BODY.PEEK[]<0.EXCERPT>), and none ever past max_size + 1 bytes, whatever
its RFC822.SIZE said.  Once the runner has committed a message's effects,
``done`` marks it \\Seen and moves it to the processed folder (MOVE where
the server has it, else COPY, \\Deleted and UID EXPUNGE), or to quarantine.
If UIDVALIDITY changes, every message still in the mailbox is fetched
again; the store knows the ones it handled (by Message-ID, or a hash of the
bytes), so none is lost or handled twice.

aioimaplib quirks handled here (see tests/integration/mailstack.py): commands pending
when the connection drops never fail, and neither does the wait for the
server's greeting, so every command, the greeting and STARTTLS fail as soon
as the connection is lost (or after a timeout, if the server just goes quiet);
fetches go in batches; IDLE is left before any other command.  A command
cancelled (the daemon stopping mid-pass) drops the connection: its state
is unknown.
"""

from __future__ import annotations

import asyncio
import logging
import re
import ssl
import sys
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import aioimaplib  # type: ignore[import-untyped]  # aioimaplib ships no type hints (no py.typed, no stubs)

from referee.config import Server
from referee.mail.source import (
    EXCERPT,
    Read,
    Received,
    SourceError,
    SourceRefused,
    Waiting,
    oversized,
    tls_refused,
)
from referee.store import Store

log = logging.getLogger("referee.imap")
T = TypeVar("T")

BATCH = 200  # UIDs per FETCH, STORE or MOVE: bounds the length of a command and the size of its answer
IDLE_LIMIT = 25 * 60  # re-issue IDLE well before the 29-minute rule of RFC 2177
POLL = 30.0  # seconds between looks at a server without IDLE
LOGOUT_WAIT = 3.0  # seconds a closing source waits for the server's goodbye
_UIDVALIDITY = re.compile(rb"\[UIDVALIDITY (\d+)\]", re.I)
_UID = re.compile(rb"\bUID (\d+)")
_INTERNALDATE = re.compile(rb'INTERNALDATE "([^"]+)"')
_SIZE = re.compile(rb"\bRFC822\.SIZE (\d+)")
_EXISTS = re.compile(rb"^\d+ (EXISTS|RECENT)", re.I)
_RESPONSE_CODE = re.compile(rb"\[([A-Za-z-]+)")
_FOR_NOW = {b"UNAVAILABLE", b"INUSE", b"SERVERBUG", b"LIMIT"}  # RFC 5530's codes of a passing refusal


def internaldate(text: str) -> datetime:
    """``21-Nov-2026 06:14:26 +0000`` (day may be space-padded) -> aware UTC."""
    return datetime.strptime(text.strip(), "%d-%b-%Y %H:%M:%S %z").astimezone(UTC)


class ImapSource:
    def __init__(
        self,
        server: Server,
        store: Store,
        timeout: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
        max_size: int | None = None,
    ):
        self.server, self.store, self.timeout = server, store, timeout
        self.max_size = max_size  # a larger message is read only in part (None: every message whole)
        self.ssl_context = ssl_context or ssl.create_default_context()
        self.client: aioimaplib.IMAP4 | None = None
        self._connecting: aioimaplib.IMAP4 | None = None  # the connection being set up
        self.lost = asyncio.Event()  # set when the connection drops: fails its commands, wakes IDLE
        self.uidvalidity = 0
        self.name = f"imap:{server.username}@{server.host}:{server.port}/{server.mailbox}"
        # What the last look at the inbox listed: the UIDs not filed yet, and the highest.
        self._unfiled: set[int] = set()
        self._listed_to = 0

    # -- the Source protocol --------------------------------------------------

    async def waiting(self, limit: int) -> list[Waiting]:
        client = await self._connected()
        uids = (await self._new_uids(client))[:limit]
        self._unfiled, self._listed_to = set(uids), uids[-1] if uids else 0
        return await self._waiting(client, uids)

    async def handled(self, since: datetime | None) -> list[Waiting]:
        """The processed folder's messages received since ``since`` (IMAP's
        SINCE takes a date: from the day before), unread."""

        async def listed(client: aioimaplib.IMAP4) -> list[Waiting]:
            criteria = "ALL" if since is None else f"SINCE {_imap_date(since - timedelta(days=1))}"
            found = await self._command(client.uid_search(criteria, charset=None), "SEARCH")
            return await self._waiting(client, sorted(int(n) for n in found.lines[0].split()))

        return await self._in_processed(listed)

    async def read(self, messages: Sequence[Waiting], handled: bool = False) -> Read:
        """These messages: one FETCH for those of a normal size, each read up
        to max_size + 1 bytes (one found larger is cut to its excerpt), and
        one for those over max_size, each read up to EXCERPT bytes.  A FETCH
        the server refuses (NO) is tried again a message at a time; one it
        refuses alone, or leaves out of its answer, is unreadable."""

        async def reading(client: aioimaplib.IMAP4) -> Read:
            bodies: dict[str, bytes] = {}
            refused: list[Waiting] = []
            whole = "BODY.PEEK[]" if self.max_size is None else f"BODY.PEEK[]<0.{self.max_size + 1}>"
            for part, some in (
                (whole, [m for m in messages if not oversized(m, self.max_size)]),
                (f"BODY.PEEK[]<0.{EXCERPT}>", [m for m in messages if oversized(m, self.max_size)]),
            ):
                for start in range(0, len(some), BATCH):
                    await self._bodies(client, some[start : start + BATCH], part, bodies, refused)
            read, unreadable = [], []
            for message in messages:
                raw = bodies.pop(message.ref, None)
                if raw is None:
                    if message not in refused:
                        log.warning("%s: UID %s was not in the FETCH answer; to quarantine", self.name, message.ref)
                    unreadable.append(message)
                elif oversized(message, self.max_size):
                    read.append(Received(message.ref, raw, message.received_at, size=message.size))
                elif self.max_size is not None and len(raw) > self.max_size:  # RFC822.SIZE said less
                    read.append(Received(message.ref, raw[:EXCERPT], message.received_at, size=len(raw)))
                else:
                    read.append(Received(message.ref, raw, message.received_at))
            return Read(read, unreadable)

        if handled:
            return await self._in_processed(reading)
        return await reading(await self._connected())

    async def fetch(self) -> list[Received]:
        """Every new message, read: the whole backlog at once, for tools and
        tests (the runner reads a batch at a time)."""
        return (await self.read(await self.waiting(sys.maxsize))).messages

    async def _in_processed(self, work: Callable[[aioimaplib.IMAP4], Awaitable[T]]) -> T:
        """``work`` with the processed folder selected read-only (EXAMINE),
        marking nothing; then the inbox is selected again."""
        client = await self._connected()
        folder = self.server.processed
        try:
            await self._command(client.examine(folder), f"EXAMINE {folder}", settings=True)
            return await work(client)
        finally:
            if self.client is client and client is not None:  # else the next call starts afresh
                selected = await self._command(
                    client.select(self.server.mailbox), f"SELECT {self.server.mailbox}", settings=True
                )
                if _uidvalidity(selected.lines) != self.uidvalidity:
                    self._forget()  # its UIDs are not the ones the store knows: start afresh

    async def _waiting(self, client: aioimaplib.IMAP4, uids: list[int]) -> list[Waiting]:
        """What the selected folder says of these UIDs, without reading them
        (RFC822.SIZE and INTERNALDATE, BATCH a FETCH), oldest first."""
        found = []
        for start in range(0, len(uids), BATCH):
            batch = ",".join(str(uid) for uid in uids[start : start + BATCH])
            reply = await self._command(client.uid("fetch", batch, "(UID RFC822.SIZE INTERNALDATE)"), "FETCH")
            found += _listed(reply.lines)
        return sorted(found, key=lambda message: (message.received_at, int(message.ref)))

    async def _bodies(
        self,
        client: aioimaplib.IMAP4,
        messages: list[Waiting],
        part: str,
        bodies: dict[str, bytes],
        refused: list[Waiting],
    ) -> None:
        """FETCH ``part`` of these messages into ``bodies`` (by UID); a refusal
        of a single message is noted in ``refused``, of more is tried again a
        message at a time."""
        if not messages:
            return
        uids = ",".join(message.ref for message in messages)
        reply = await self._command(client.uid("fetch", uids, f"(UID {part})"), "FETCH", refusable=True)
        if reply.result == "OK":
            bodies.update(_fetched(reply.lines))
        elif len(messages) == 1:
            log.warning("%s: FETCH of UID %s refused: %s; to quarantine", self.name, uids, _said(reply.lines))
            refused += messages
        else:
            for message in messages:
                await self._bodies(client, [message], part, bodies, refused)

    async def done(self, messages: Sequence[Waiting | Received], quarantine: bool = False) -> None:
        """File messages whose effects are committed, BATCH UIDs a command
        (one STORE and one MOVE for a whole batch, not one of each per message)."""
        if not messages:
            return
        client = await self._connected()
        folder = self.server.quarantine if quarantine else self.server.processed
        refs = [message.ref for message in messages]
        for start in range(0, len(refs), BATCH):
            uids = ",".join(refs[start : start + BATCH])
            await self._command(client.uid("store", uids, "+FLAGS.SILENT", r"(\Seen)"), "STORE")
            if client.has_capability("MOVE"):
                await self._command(client.uid("move", uids, folder), "MOVE")
            else:
                await self._command(client.uid("copy", uids, folder), "COPY")
                await self._command(client.uid("store", uids, "+FLAGS.SILENT", r"(\Deleted)"), "STORE")
                await self._command(client.uid("expunge", uids), "EXPUNGE")
        # The next look starts above the last UID below which every one listed
        # is filed: the runner files in order of receipt, a batch at a time,
        # and a UID may come before a lower one still to be handled.
        filed = {int(ref) for ref in refs}
        self._unfiled -= filed
        top = min(self._unfiled) - 1 if self._unfiled else max(self._listed_to, *filed)
        self.store.set_mailbox(self.name, self.uidvalidity, max(self._last_uid(), top))

    async def close(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            try:  # a polite LOGOUT, but no long wait for it: the daemon may be stopping
                await asyncio.wait_for(client.logout(), min(self.timeout, LOGOUT_WAIT))
            except (TimeoutError, OSError, aioimaplib.Abort, aioimaplib.CommandTimeout):
                _drop(client)

    # -- waiting for mail (the daemon) ------------------------------------------

    async def wait_for_mail(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the server to announce new mail.
        With IDLE (RFC 2177) that is a push; without it, a plain wait and
        True, so the caller polls.  Returns whether mail may have arrived."""
        client = await self._connected()
        # New mail announced in the reply to an earlier command (the MOVE that
        # filed the last message) is dropped by aioimaplib, and IDLE would not
        # announce it again: look before waiting.
        if await self._new_uids(client):
            return True
        if not client.has_capability("IDLE"):
            await asyncio.sleep(min(timeout, POLL))
            return True
        self.lost.clear()
        idle = await self._bounded(client.idle_start(timeout=min(timeout, IDLE_LIMIT)), "IDLE")
        pushed = asyncio.ensure_future(self._pushed_mail(client, min(timeout, IDLE_LIMIT) + 5))
        dropped = asyncio.ensure_future(self.lost.wait())
        try:
            await asyncio.wait({pushed, dropped}, return_when=asyncio.FIRST_COMPLETED)
            if dropped.done():  # aioimaplib never fails a wait on a lost connection
                return True  # so the caller polls, which reconnects
            return pushed.result()
        finally:
            for task in (pushed, dropped):
                task.cancel()
            # never None, but aioimaplib is untyped and mypy narrows a client by "is" to self.client's Optional
            if self.client is client and client is not None:
                client.idle_done()
                with suppress(SourceError):  # it forgot the connection: the next call starts afresh
                    await self._bounded(idle, "IDLE DONE")

    async def _pushed_mail(self, client: aioimaplib.IMAP4, timeout: float) -> bool:
        """Whether the server pushed news of mail before ``timeout``."""
        while True:
            try:
                pushed = await client.wait_server_push(timeout=timeout)
            except TimeoutError:
                return False
            if pushed == aioimaplib.STOP_WAIT_SERVER_PUSH:
                return False
            lines = pushed if isinstance(pushed, list) else [pushed]
            if any(_EXISTS.match(bytes(line)) for line in lines):
                return True  # Dovecot's "OK Still here" keep-alives are not mail

    # -- connecting -------------------------------------------------------------

    async def _connected(self) -> aioimaplib.IMAP4:
        if self.client is not None:
            return self.client
        server = self.server
        where = f"IMAP server {server.host}:{server.port}"
        self.lost.clear()
        made: list[aioimaplib.IMAP4] = []  # so the callback knows which connection it was
        try:
            # Plain IMAP4 with an ssl_context is implicit TLS; IMAP4_SSL would
            # drop conn_lost_cb, which reconnecting depends on.
            implicit_tls = self.ssl_context if server.security == "tls" else None
            client = _Client(
                server.host,
                server.port,
                timeout=self.timeout,
                conn_lost_cb=lambda error: self._lost(made, error),
                ssl_context=implicit_tls,
            )
            made.append(client)
            self._connecting = client
            await self._unless_lost(client.wait_hello_from_server())
            if server.security == "starttls":
                await self._unless_lost(self._starttls(client))
        except BaseException as error:
            self._connecting = None
            if made:
                _drop(made[0])
            if isinstance(error, SourceError):  # (STARTTLS refused: it says so itself)
                raise
            if tls_refused(error):
                raise SourceRefused(
                    f'{where}: cannot connect ({_reason(error)}): check security = "{server.security}" and the port'
                ) from None
            if isinstance(error, (OSError, asyncio.TimeoutError, aioimaplib.Abort)):
                raise SourceError(f"{where}: cannot connect ({_reason(error)})") from None
            raise
        try:
            await self._command(client.login(server.username, server.password), "LOGIN", settings=True)
            selected = await self._command(client.select(server.mailbox), f"SELECT {server.mailbox}", settings=True)
            for folder in (server.processed, server.quarantine):  # NO if it exists: fine
                await self._bounded(client.create(folder), f"CREATE {folder}")
        except BaseException:
            _drop(client)  # not yet self.client, so not forgotten by the failed command
            raise
        finally:
            self._connecting = None
        self.uidvalidity = _uidvalidity(selected.lines)
        seen = self.store.mailbox(self.name)
        if seen is None or seen["uidvalidity"] != self.uidvalidity:
            if seen is not None:
                log.warning(
                    "%s: UIDVALIDITY changed from %s to %s; reading the whole mailbox "
                    "again (mail already handled is recognised)",
                    self.name,
                    seen["uidvalidity"],
                    self.uidvalidity,
                )
            self.store.set_mailbox(self.name, self.uidvalidity, 0)
        self.client = client
        return client

    async def _starttls(self, client: aioimaplib.IMAP4) -> None:
        """aioimaplib has no STARTTLS: send the command, then upgrade the
        connection under the same protocol object and ask for capabilities anew."""
        protocol = client.protocol
        command = aioimaplib.Command("STARTTLS", protocol.new_tag(), loop=protocol.loop)
        reply = await asyncio.wait_for(protocol.execute(command), self.timeout)
        if reply.result != "OK":
            raise SourceRefused(
                f"IMAP server {self.server.host}:{self.server.port}: STARTTLS refused "
                f'(check security = "starttls" and the port)'
            )
        transport = await protocol.loop.start_tls(
            protocol.transport, protocol, self.ssl_context, server_hostname=self.server.host
        )
        protocol.transport = transport
        await asyncio.wait_for(protocol.capability(), self.timeout)

    async def _unless_lost(self, step: Awaitable[T]) -> T:
        """Await a step of connecting (the greeting, STARTTLS), failing as soon
        as the connection is lost: aioimaplib's own waits for these ignore a
        lost connection and wait out the whole timeout (30 s for a server
        that restarted while it greeted us)."""
        step, lost = asyncio.ensure_future(step), asyncio.ensure_future(self.lost.wait())
        try:
            await asyncio.wait({step, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            lost.cancel()
            if not step.done():
                step.cancel()
        if step.done() and not step.cancelled():
            return step.result()
        raise ConnectionError("the connection was lost")

    def _lost(self, made: list, error: Exception | None) -> None:
        if not made or made[0] not in (self.client, self._connecting):
            return  # an old connection, already replaced
        log.info("%s: connection lost (%s)", self.name, error)
        self.client = None
        self.lost.set()

    async def _bounded(self, call, what: str):
        """Await one IMAP step until it ends, the connection is lost (the
        server restarted, say) or the timeout passes.  A timeout, a lost
        connection or an abort is a SourceError and forgets the connection:
        the next call starts afresh.  So does being cancelled."""
        step, lost = asyncio.ensure_future(call), asyncio.ensure_future(self.lost.wait())
        try:
            await asyncio.wait({step, lost}, timeout=self.timeout, return_when=asyncio.FIRST_COMPLETED)
            if step.done():
                return step.result()
            reason = "the connection was lost" if lost.done() else f"no answer in {self.timeout:.0f} s"
        except (TimeoutError, OSError, aioimaplib.Abort, aioimaplib.CommandTimeout) as error:
            reason = _reason(error)
        except asyncio.CancelledError:
            self._forget()
            raise
        finally:
            lost.cancel()
            if not step.done():
                step.cancel()
        self._forget()
        raise SourceError(f"{self.name}: {what} failed ({reason})")

    async def _command(self, call, what: str, settings: bool = False, refusable: bool = False):
        """One IMAP command, bounded; any reply but OK is a SourceError too
        (with ``refusable``, a NO is returned: the server is there, and said
        no to this command alone).  With ``settings`` (LOGIN, SELECT), a
        refusal is the settings' fault (SourceRefused), unless its response
        code says it is for now only."""
        reply = await self._bounded(call, what)
        if reply.result == "OK" or (refusable and reply.result == "NO"):
            return reply
        self._forget()
        text = _said(reply.lines)
        code = _RESPONSE_CODE.search(text.encode())
        fault = SourceRefused if settings and not (code and code[1].upper() in _FOR_NOW) else SourceError
        raise fault(f"{self.name}: {what} refused: {text}")

    def _forget(self) -> None:
        """Close the connection we no longer trust and start afresh next time."""
        if self.client is not None:
            _drop(self.client)
            self.client = None

    async def _new_uids(self, client: aioimaplib.IMAP4) -> list[int]:
        """UIDs above the last one filed, in order ("n:*" always matches the
        newest message, even when it is older than n: filter)."""
        last = self._last_uid()
        found = await self._command(client.uid_search(f"UID {last + 1}:*", charset=None), "SEARCH")
        return sorted(int(n) for n in found.lines[0].split() if int(n) > last)

    def _last_uid(self) -> int:
        seen = self.store.mailbox(self.name)
        return seen["last_uid"] if seen and seen["uidvalidity"] == self.uidvalidity else 0


# aioimaplib's own logger, whose debug messages hold every byte the server sent
_LIBRARY_LOG = logging.getLogger("aioimaplib.aioimaplib")


class _Protocol(aioimaplib.IMAP4ClientProtocol):
    """aioimaplib's protocol, without three costs that grow with the mail read
    (a fifth of reading a move's mail, issue 36): it made a debug message of
    every chunk the server sent, logged or not (``'%s' % data``: 10 ns a
    byte); a FETCH's wait_data looked through every line of its answer
    so far, at each line (_Fetch); and its parse copied the rest of a chunk
    at each line (_handle_responses).  What it reads is the same."""

    incomplete_line: bytes  # (aioimaplib's: a line cut short at the end of the data, to finish)
    current_command: aioimaplib.Command | None  # (aioimaplib's: the command whose data is still coming)

    def data_received(self, d: bytes) -> None:
        _LIBRARY_LOG.debug("Received : %s", d)  # (made into text only when it is logged)
        try:
            self._handle_responses(self.incomplete_line + d, self._handle_line, self.current_command)
            self.incomplete_line = b""
            self.current_command = None
        except aioimaplib.IncompleteRead as incomplete_read:
            self.current_command = incomplete_read.cmd
            self.incomplete_line = incomplete_read.data

    def _handle_responses(
        self,
        data: bytes,
        line_handler: Callable[[bytes, aioimaplib.Command | None], aioimaplib.Command | None],
        current_cmd: aioimaplib.Command | None = None,
    ) -> None:
        """aioimaplib's, going through ``data`` by offsets.  Its own called
        itself once a line and once a literal, each time on a copy of the
        rest of the data: a chunk of a FETCH answer was copied whole three
        times a message in it.  Each line and literal is handled as it did,
        in the same order, and what is left at the end is the same."""
        pos, end = 0, len(data)
        while True:
            if pos == end:
                if self.pending_sync_command is not None:
                    self.pending_sync_command.flush()
                if current_cmd is not None and current_cmd.wait_data():
                    raise aioimaplib.IncompleteRead(current_cmd)
                return
            if current_cmd is not None and current_cmd.wait_literal_data():
                # (aioimaplib 2.0.3's own count of the literal's bytes still to come: append_literal_data's)
                needed = current_cmd._expected_size - len(current_cmd._resp_literal_data)
                current_cmd.append_literal_data(data[pos : pos + needed])
                pos = min(pos + needed, end)
                if current_cmd.wait_literal_data():
                    raise aioimaplib.IncompleteRead(current_cmd)
            crlf = data.find(b"\r\n", pos)
            if crlf < 0:
                raise aioimaplib.IncompleteRead(current_cmd, data[pos:])
            line, pos = data[pos:crlf], crlf + 2
            cmd = line_handler(line, current_cmd)
            begin_literal = aioimaplib.literal_data_re.match(line)
            if begin_literal:
                if cmd is None:
                    cmd = aioimaplib.Command("NIL", "unused")
                cmd.begin_literal_data(int(begin_literal.group("size")))
                current_cmd = cmd
            elif cmd is not None and cmd.wait_data():
                current_cmd = cmd
            else:
                current_cmd = None

    async def fetch(
        self, message_set: str, message_parts: str, by_uid: bool = False, timeout: float | None = None
    ) -> aioimaplib.Response:
        fetch = _Fetch(
            self.new_tag(), message_set, message_parts, prefix="UID" if by_uid else "", loop=self.loop, timeout=timeout
        )
        return await self.execute(fetch)


class _Fetch(aioimaplib.FetchCommand):
    """aioimaplib's FETCH, whose wait_data goes on from where it last looked.

    Whether a message's data is still coming: its parentheses are not all
    closed yet, counted in the text lines from its ``N FETCH (`` line on.
    aioimaplib joins and counts those lines again at every line received,
    from the answer's first: a batch of 200 messages cost as much as the
    rest of reading them.  The lines only grow, so the counts are kept."""

    def __init__(self, *args: str, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._looked = 0  # the answer's lines counted already
        self._open = 0  # parentheses opened in the text lines from the last FETCH line on, less those closed

    def wait_data(self) -> bool:
        lines = self._resp_lines
        for line in lines[self._looked :]:
            if isinstance(line, bytes):
                if self.FETCH_MESSAGE_DATA_RE.match(line):
                    self._open = 0
                self._open += line.count(b"(") - line.count(b")")
        self._looked = len(lines)
        return self._open != 0


class _Client(aioimaplib.IMAP4):
    """aioimaplib's client, on _Protocol."""

    def create_client(
        self,
        host: str,
        port: int,
        loop: asyncio.AbstractEventLoop | None,
        conn_lost_cb: Callable[[Exception | None], None] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        local_loop = loop if loop is not None else asyncio.get_running_loop()
        self.protocol = _Protocol(local_loop, conn_lost_cb)
        self._client_task = local_loop.create_task(
            local_loop.create_connection(lambda: self.protocol, host, port, ssl=ssl_context)
        )


def _reason(error: BaseException) -> str:
    """An error's text, or its kind when it has none (a bare TimeoutError)."""
    return str(error) or type(error).__name__


def _drop(client: aioimaplib.IMAP4) -> None:
    """Close a connection we no longer trust, without waiting for the server
    (or stop making it, if it is not made yet)."""
    connecting = getattr(client, "_client_task", None)
    if connecting is not None and not connecting.done():
        connecting.cancel()
    transport = getattr(client.protocol, "transport", None)
    if transport is not None:
        transport.close()


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _imap_date(moment: datetime) -> str:
    """RFC 3501's date, ``25-Nov-2026``, whatever the locale."""
    return f"{moment.day}-{_MONTHS[moment.month - 1]}-{moment.year}"


def _uidvalidity(lines: list) -> int:
    for line in lines:
        if isinstance(line, bytes) and (match := _UIDVALIDITY.search(line)):
            return int(match[1])
    raise SourceError("the server gave no UIDVALIDITY for the mailbox")


def _said(lines: list) -> str:
    """A reply's text lines, as the server said them (the first 200 characters)."""
    return b" ".join(line for line in lines if isinstance(line, bytes)).decode(errors="replace")[:200]


def _listed(lines: list) -> list[Waiting]:
    """FETCH (UID RFC822.SIZE INTERNALDATE) responses -> what is waiting."""
    found = []
    for line in lines:
        if not isinstance(line, bytes):
            continue
        uid, size, date = _UID.search(line), _SIZE.search(line), _INTERNALDATE.search(line)
        if uid is None or size is None or date is None:
            continue  # the tagged OK, or an untagged FLAGS the server sent on its own
        found.append(Waiting(ref=uid[1].decode(), received_at=internaldate(date[1].decode()), size=int(size[1])))
    return found


def _fetched(lines: list) -> dict[str, bytes]:
    """FETCH (UID BODY[...]) responses -> bodies by UID.  Each is a text line
    holding the UID (before the literal or after it), the literal, and a
    closing line."""
    bodies = {}
    for index, line in enumerate(lines):
        if not isinstance(line, bytearray):
            continue
        header = bytes(lines[index - 1]) if index else b""
        trailer = bytes(lines[index + 1]) if index + 1 < len(lines) else b""
        uid = _UID.search(header) or _UID.search(trailer)
        if uid is None:
            log.warning("a FETCH response without a UID was skipped")
            continue
        bodies[uid[1].decode()] = bytes(line)
        lines[index] = b""  # the copy is the one kept: the reply's goes now, not with the whole reply
    return bodies
