"""Reading a published game record for ``referee verify``: from a file or
an http(s) URL, within limits, every failure one polite line.

A record comes from anyone, so nothing in it or in the server that hands it
over may cost more than a record could: the reading stops past
``MAX_BYTES`` (a file's size is checked first; a body, however it is sent,
is read in pieces and never past the limit), a URL gets ``TIMEOUT`` seconds
in all (connecting, the status line, the headers and the body together: a
server that drips a byte every few seconds is cut off at the deadline, not
waited for a read at a time), and a linear scan measures the nesting
depth and counts the arrays and objects before the JSON is parsed, so a
record nested 100,000 deep is refused in a few milliseconds and never
reaches the parser's recursion, and none can make the parser build more
than ``MAX_CONTAINERS`` lists and dicts.  NaN, Infinity, a key twice in one
object and a lone surrogate escape are valid to Python but not a record.

Every failure is an ``Unreadable`` with one line a person can act on; no
input gives a traceback.  Standard library only; nothing of the referee.
"""

from __future__ import annotations

import gc
import http.client
import json
import math
import os
import re
import socket
import ssl
import stat
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, Literal

MB = 1024 * 1024

# The largest record a game can make is an 8-seat Auction (priority cards)
# at its highest turn limit (100 plays a seat a round, 14 rounds): about
# 11,200 phases of ~370 bytes, some 4 MB.  Every other kind stays under
# 0.1 MB (bots' games: Pure Skill 9 KB, Bid! 30 KB, Ice Ice Baby 27 KB,
# Bluff Auction 88 KB; an 8-seat Auction at the default limit 0.5 MB).
# 16 MB is four times that largest, and (with MAX_CONTAINERS) keeps what
# json.loads builds from any 16 MB to a few hundred MB.
MAX_BYTES = 16 * MB

# Records nest at most 9 deep (Bluff Auction; Pure Skill 6).  64 leaves room
# for any change of format and stays far below Python's recursion limit
# (1,000), which json.loads and anything that walks the record recurse
# against.
MAX_DEPTH = 64

# Arrays and objects in all: what json.loads builds from them is the most
# memory a byte of JSON can cost (about 44 bytes a byte for "[[[0]]]," and
# the like: some 700 MB at 16 MB).  Records hold one every 57 to 68 bytes
# (7,152 in the 8-seat Auction's 0.5 MB; some 62,000 in the 4 MB one).  A
# million is sixteen times that; with it, the worst 16 MB found costs 281 MB
# (a million small objects, then short strings; bench/fetch.py).
MAX_CONTAINERS = 1_000_000

# Seconds for a URL, all in: connecting (and TLS), the status line, the
# headers and the body.  The largest record (4 MB) comes in about 34 s at
# 1 Mbit/s; a typical one (under 100 KB) in a second at any speed.
TIMEOUT = 60.0

_PIECE = 64 * 1024  # read this much at a time: memory grows with what came, never ahead of it
_REDIRECTS = 10

# One step of the structure scan: past strings (escapes skipped; an
# unterminated one runs to the end) and anything else but brackets, then
# the opening brackets that follow and the closing ones after them (both
# empty at the end).  Possessive quantifiers and disjoint first characters:
# the regex never backtracks, and a string cannot fail to match once begun,
# so each step is linear in what it passes and the whole scan in the text.
# Only the spans of the runs are used, so it builds nothing (re.sub would
# build a string for every gap between its matches: 250 MB for 10 MB of
# "[],[],...").
_STEP = re.compile(r'(?:[^"\[\]{}]++|"(?:[^"\\]++|\\.)*+(?:"|\\?\Z))*+([\[{]*+)([\]}]*+)', re.DOTALL)

# Control characters, surrogates (a path's undecodable bytes), line and
# paragraph separators, bidirectional overrides: "?" in a message.
_UNPRINTABLE = re.compile(r"[^\x20-\x7e\xa0-\ud7ff\ue000-\U0010ffff]|[\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class Unreadable(Exception):
    """A record that cannot be read, and why, in one line: ``source: reason``."""

    def __init__(self, source: str, reason: str):
        self.source = printable(source, 200)
        self.reason = reason
        super().__init__(f"{self.source}: {reason}")


def load_record(
    source: str,
    *,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    timeout: float = TIMEOUT,
    max_containers: int = MAX_CONTAINERS,
) -> object:
    """The JSON value in the file or at the http(s) URL ``source``.

    Raises ``Unreadable`` for anything that keeps it from being a record's
    JSON: a missing or unreadable file, a URL that does not answer 2xx with
    a whole body within ``timeout`` seconds (all in), more than ``max_bytes`` bytes,
    text that is not UTF-8, nesting deeper than ``max_depth``, more than
    ``max_containers`` arrays and objects, invalid JSON, NaN or Infinity, a
    key twice in one object, or a string that is not text."""
    try:
        if is_url(source):
            data = _fetch(source, max_bytes, timeout)
        else:
            data = _read_file(source, max_bytes)
        return _parse(source, data, max_depth, max_containers)
    except Unreadable:
        raise
    except MemoryError:
        raise Unreadable(source, "too large to hold in memory") from None
    except RecursionError:
        raise Unreadable(source, "nested too deep to read") from None


def is_url(source: str) -> bool:
    """Only http:// and https:// are URLs; anything else names a file."""
    return source[:8].lower().startswith(("http://", "https://"))


# -- a file ------------------------------------------------------------------------------


def _read_file(source: str, max_bytes: int) -> bytearray:
    try:
        if stat.S_ISFIFO(os.stat(source).st_mode):  # opening one with no writer would wait for ever
            raise Unreadable(source, "is a pipe, not a record file")
        with open(source, "rb", buffering=0) as file:
            info = os.fstat(file.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise Unreadable(source, "is a directory, not a record file")
            if stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
                raise _too_large(source, max_bytes, "the file")
            data = _read_limited(file.read, max_bytes)
    except IsADirectoryError:
        raise Unreadable(source, "is a directory, not a record file") from None
    except FileNotFoundError:
        raise Unreadable(source, "no such file") from None
    except PermissionError:
        raise Unreadable(source, "not allowed to read it (permission denied)") from None
    except (OSError, ValueError) as error:  # ValueError: a path with a NUL in it
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise Unreadable(source, f"cannot read it ({printable(reason)})") from None
    if data is None:  # a special file that grew past the limit while read (/dev/zero)
        raise _too_large(source, max_bytes, "the file")
    return data


def _read_limited(read: Callable[[int], bytes | None], max_bytes: int) -> bytearray | None:
    """At most ``max_bytes`` + 1 bytes from ``read``, in pieces; None if more came."""
    data = bytearray()
    while len(data) <= max_bytes:
        piece = read(min(_PIECE, max_bytes + 1 - len(data)))
        if not piece:
            return data
        data += piece
    return None


def _too_large(source: str, max_bytes: int, what: str) -> Unreadable:
    return Unreadable(source, f"{what} is larger than {_size(max_bytes)}, more than any game's record")


def _size(count: int) -> str:
    if count >= MB and count % MB == 0:
        return f"{count // MB} MB"
    if count >= 1024 and count % 1024 == 0:
        return f"{count // 1024} KB"
    return f"{count:,} bytes"


# -- the JSON ------------------------------------------------------------------------------


class _NotARecord(ValueError):
    """Valid JSON for Python, but not for a record (NaN, a key twice)."""


def _parse(source: str, data: bytearray, max_depth: int, max_containers: int) -> object:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Unreadable(source, f"not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start:,})") from None
    del data[:]  # the bytes are done with: free them before the parse builds its objects
    text = text.removeprefix("\ufeff")  # a byte order mark, as an editor may save the file
    if not text.strip():
        raise Unreadable(source, "empty: no record in it")
    excess = structure_exceeds(text, max_depth, max_containers)
    if excess == "depth":
        raise Unreadable(source, f"nested more than {max_depth} deep, which no record is")
    if excess == "containers":
        raise Unreadable(source, f"holds more than {max_containers:,} arrays and objects, which no record does")
    collecting = gc.isenabled()
    gc.disable()  # JSON makes no cycles: collecting as it builds a million lists costs 6 times the parse
    try:
        value = json.loads(text, object_pairs_hook=_object, parse_constant=_constant, parse_float=_float)
        if _SURROGATE_ESCAPE.search(text):  # rare: only then is the value walked
            _check_text(value)
        return value
    except json.JSONDecodeError as error:
        raise Unreadable(source, f"not JSON: line {error.lineno} column {error.colno}: {error.msg}") from None
    except _NotARecord as error:
        raise Unreadable(source, f"not a record: {error}") from None
    except ValueError as error:  # a number of more digits than Python converts (4,300)
        raise Unreadable(source, f"not a record: {printable(str(error).split(';')[0])}") from None
    finally:
        if collecting:
            gc.enable()


def structure_exceeds(text: str, max_depth: int, max_containers: int) -> Literal["depth", "containers"] | None:
    """Whether the JSON ``text`` nests arrays and objects more than
    ``max_depth`` deep ("depth") or holds more than ``max_containers`` of
    them ("containers"); brackets inside strings do not count.  Linear in
    the length of ``text``, and it builds nothing.  The loop runs at most
    twice per array or object (each step opens one or more, or closes one
    or more), as it stops when either limit is passed or a bracket closes
    one never opened (invalid JSON: json.loads says where, having read
    nothing past the limits)."""
    depth = containers = position = 0
    while True:
        step = _STEP.match(text, position)
        assert step is not None  # it matches the empty string
        start, middle = step.span(1)
        position = step.end()
        if position == start:  # no bracket: the end
            return None
        depth += middle - start
        containers += middle - start
        if depth > max_depth:
            return "depth"
        if containers > max_containers:
            return "containers"
        depth -= position - middle
        if depth < 0:
            return None


def nesting_exceeds(text: str, max_depth: int) -> bool:
    """Whether the JSON ``text`` nests arrays and objects more than
    ``max_depth`` deep (brackets inside strings do not count)."""
    return structure_exceeds(text, max_depth, len(text)) == "depth"


def _check_text(value: object) -> None:
    """Every string in ``value`` is text: "\\ud800" alone is valid JSON, but
    no character, and cannot be printed or stored as UTF-8."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise _NotARecord("a string in it holds half a character (a lone surrogate escape)") from None
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _NotARecord(f"the key {_quoted(key)} appears twice in one object")
            seen.add(key)
    return result


def _constant(name: str) -> float:
    raise _NotARecord(f"it holds {name}, which JSON does not allow")


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NotARecord(f"the number {printable(text, 40)} is too large")
    return value


# -- a URL ---------------------------------------------------------------------------------


class _Expired(Exception):
    """The deadline passed."""


class _Watch:
    """The deadline of one fetch and the sockets it opened: at the deadline
    they are shut down, which wakes any read still waiting on them (and
    tells the server the client has gone)."""

    def __init__(self, deadline: float):
        self.deadline = deadline
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []

    def left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0 or self.expired:
            raise _Expired
        return left

    def adopt(self, connect: Callable[..., socket.socket]) -> Callable[..., socket.socket]:
        """``connect`` (socket.create_connection), its sockets watched."""

        def watched(address: Any, timeout: Any = None, *args: Any, **kwargs: Any) -> socket.socket:
            sock = connect(address, self.left(), *args, **kwargs)
            with self._lock:
                if self.expired:
                    sock.close()
                    raise _Expired
                self._sockets.append(sock.dup())  # the same connection, however it is wrapped (TLS)
            try:
                sock.settimeout(self.left())  # each read ends by the deadline too
            except _Expired:
                sock.close()
                raise
            return sock

        return watched

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            self._close(shutdown=True)

    def release(self) -> None:
        with self._lock:
            self._close(shutdown=False)

    def _close(self, shutdown: bool) -> None:
        for sock in self._sockets:
            if shutdown:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed by the server
            sock.close()
        self._sockets.clear()


def _adopted(connection: http.client.HTTPConnection, watch: _Watch) -> Callable[..., socket.socket]:
    """The connection's way to open its socket (socket.create_connection), watched."""
    connect: Callable[..., socket.socket] = getattr(connection, "_create_connection", socket.create_connection)
    return watch.adopt(connect)


class _WatchedHTTP(http.client.HTTPConnection):
    def __init__(self, *args: Any, watch: _Watch, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._create_connection = _adopted(self, watch)


class _WatchedHTTPS(http.client.HTTPSConnection):
    def __init__(self, *args: Any, watch: _Watch, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._create_connection = _adopted(self, watch)


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, watch: _Watch):
        super().__init__()
        self.watch = watch

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_WatchedHTTP, req, watch=self.watch)  # type: ignore[arg-type]


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, watch: _Watch):
        super().__init__(context=ssl.create_default_context())
        self.watch = watch

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_WatchedHTTPS, req, context=self._context, watch=self.watch)  # type: ignore[arg-type,attr-defined]


class _Redirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirects, except that the body of a redirect is never read
    (urllib reads it whole, however large) and only to http(s)."""

    max_redirections = _REDIRECTS

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        fp.close()  # urllib then reads b"" from it
        if not is_url(newurl):
            raise _Refused(f"the server redirected to {printable(newurl, 80)}, which is not an http(s) URL")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _Refused(Exception):
    """A reason found while fetching (the source is added by the caller)."""


def _fetch(source: str, max_bytes: int, timeout: float) -> bytearray:
    """The body at the URL ``source``: the fetch runs in a daemon thread,
    waited for until the deadline; then its sockets are shut down, and the
    thread (if a name lookup still holds it) is left to end alone."""
    watch = _Watch(time.monotonic() + timeout)
    outcome: list[Any] = []

    def fetch() -> None:
        try:
            outcome.append(_get(source, max_bytes, watch))
        except BaseException as error:  # noqa: BLE001 - handed to the caller, who explains it
            outcome.append(error)
        finally:
            watch.release()

    worker = threading.Thread(target=fetch, name="referee-fetch", daemon=True)
    worker.start()
    try:
        worker.join(timeout)
    except BaseException:  # the wait itself interrupted (^C)
        watch.expire()
        raise
    if worker.is_alive():  # decided before the sockets are shut, which wakes the worker to a false end
        watch.expire()
        raise Unreadable(source, _late(timeout))
    result = outcome[0] if outcome else _Expired()
    if isinstance(result, BaseException):
        raise _explain(source, result, timeout, watch)
    return result  # type: ignore[no-any-return]


def _get(source: str, max_bytes: int, watch: _Watch) -> bytearray:
    opener = urllib.request.build_opener(_HTTPHandler(watch), _HTTPSHandler(watch), _Redirects())
    opener.addheaders = [("User-Agent", "referee-verify")]
    request = urllib.request.Request(source, headers={"Accept": "application/json"})
    with opener.open(request, timeout=watch.left()) as response:
        length = response.length  # from Content-Length (None when chunked or absent)
        if length is not None and length > max_bytes:
            raise _Refused(f"the answer is larger than {_size(max_bytes)}, more than any game's record")

        came = 0

        def read(count: int) -> bytes:
            nonlocal came
            watch.left()
            try:
                piece: bytes = response.read1(count)
            except http.client.IncompleteRead as error:  # a chunked body cut short
                raise _Refused(
                    f"the connection closed before the whole answer came (after {came + len(error.partial):,} bytes)"
                ) from None
            came += len(piece)
            return piece

        data = _read_limited(read, max_bytes)
    if data is None:
        raise _Refused(f"the answer is larger than {_size(max_bytes)}, more than any game's record")
    if length is not None and len(data) < length:
        raise _Refused(f"the connection closed before the whole answer came ({len(data):,} of {length:,} bytes)")
    return data


def _late(timeout: float) -> str:
    return f"no complete answer within {timeout:g} second{'' if timeout == 1 else 's'}"


def _explain(source: str, error: BaseException, timeout: float, watch: _Watch) -> Unreadable:
    """What went wrong in the fetch, said for a person."""
    if isinstance(error, Unreadable):
        return error
    if isinstance(error, _Refused):
        return Unreadable(source, str(error))
    late = Unreadable(source, _late(timeout))
    if isinstance(error, _Expired) or watch.expired:
        return late
    if isinstance(error, MemoryError):
        return Unreadable(source, "too large to hold in memory")
    if isinstance(error, urllib.error.HTTPError):
        error.close()
        answered = f"the server answered {error.code} {printable(str(error.msg or ''), 60)}".rstrip()
        if not 300 <= error.code < 400:
            return Unreadable(source, answered)
        headers = error.headers
        location = headers.get("Location") or headers.get("URI") if headers is not None else None
        if not location:
            return Unreadable(source, f"{answered}, a redirect without saying where to")
        if not is_url(urllib.parse.urljoin(error.url or source, location)):
            return Unreadable(
                source, f"the server redirected to {printable(location, 80)}, which is not an http(s) URL"
            )
        return Unreadable(source, f"the server's redirects go round in a loop, or past {_REDIRECTS}")
    if isinstance(error, urllib.error.URLError):
        if isinstance(error.reason, BaseException):
            return _explain(source, error.reason, timeout, watch)
        return Unreadable(source, f"cannot fetch it ({printable(str(error.reason))})")
    if isinstance(error, http.client.IncompleteRead):
        return Unreadable(source, "the connection closed before the whole answer came")
    if isinstance(error, http.client.RemoteDisconnected):
        return Unreadable(source, "the server closed the connection without answering")
    if isinstance(error, http.client.BadStatusLine):
        began = printable(str(error.args[0] if error.args else "").strip(), 40)
        return Unreadable(source, f"the server's answer is not HTTP (it began {began!r})")
    if isinstance(error, http.client.LineTooLong):
        return Unreadable(source, "the server's answer has a line too long for HTTP")
    if isinstance(error, http.client.InvalidURL):
        return Unreadable(source, f"not a URL it can fetch ({printable(str(error))})")
    if isinstance(error, http.client.HTTPException):
        detail = printable(str(error)) or type(error).__name__
        return Unreadable(source, f"the server's answer is not valid HTTP ({detail})")
    if isinstance(error, TimeoutError):
        return late
    if isinstance(error, ConnectionRefusedError):
        return Unreadable(source, "the connection was refused: is the address right, and the server up?")
    if isinstance(error, socket.gaierror):
        host = urllib.parse.urlsplit(source).hostname or source
        return Unreadable(source, f"cannot find the host {printable(host, 80)} ({printable(str(error.strerror))})")
    if isinstance(error, ssl.SSLCertVerificationError):
        return Unreadable(source, f"the server's certificate is not valid ({printable(str(error.verify_message))})")
    if isinstance(error, ssl.SSLError):
        return Unreadable(source, f"the secure connection failed ({printable(str(error.reason or error))})")
    if isinstance(error, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
        return Unreadable(source, "the server closed the connection before the whole answer came")
    if isinstance(error, OSError):
        return Unreadable(source, f"cannot fetch it ({printable(error.strerror or str(error))})")
    if isinstance(error, (ValueError, UnicodeError)):  # a URL urllib cannot take apart ("http://[::1")
        return Unreadable(source, f"not a URL it can fetch ({printable(str(error))})")
    if isinstance(error, Exception):
        return Unreadable(source, f"cannot fetch it ({type(error).__name__}: {printable(str(error))})")
    raise error  # KeyboardInterrupt, SystemExit: not a reading failure


# -- words -----------------------------------------------------------------------------------


def printable(text: str, limit: int = 120) -> str:
    """``text`` on one line, without control characters, at most ``limit`` long."""
    text = _UNPRINTABLE.sub("?", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quoted(key: str) -> str:
    return '"' + printable(key, 40) + '"'
