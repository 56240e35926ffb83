"""referee.fetch: a published record read from a file or an http(s) URL
within limits (size, nesting, time in all), every failure one polite line.

The URLs are real servers on 127.0.0.1, plain sockets in threads, so a
test can answer exactly as a broken or hostile server would (a short body,
an SSH banner, a byte every half second) and watch from the server's side
when the client stopped reading."""

from __future__ import annotations

import gc
import json
import select
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.fetch import (
    MAX_BYTES,
    MAX_CONTAINERS,
    MAX_DEPTH,
    TIMEOUT,
    Unreadable,
    load_record,
    nesting_exceeds,
    structure_exceeds,
)

RECORD = {
    "format": "referee-record/2",
    "game": {"id": 7, "kind": "pure-skill", "title": "Game of Pure Skill", "name": "[{tricky}]"},
    "players": [{"seat": 0, "name": "alice", "bot": False}, {"seat": 1, "name": 'bob "[["', "bot": True}],
    "phases": [{"number": 1, "moves": [{"seat": 0, "move": "bid 7", "source": "mail"}], "events": []}],
    "seed": None,
    "winner": None,
}
BODY = json.dumps(RECORD).encode()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    """The servers are on loopback: a proxy in the environment must not stand between."""
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def refused(source: str, **limits) -> str:
    with pytest.raises(Unreadable) as caught:
        load_record(source, **limits)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{source}: "), message
    return message


def deep(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


# -- servers -------------------------------------------------------------------------------


class Server:
    """A loopback server: each connection's request head is read, then
    ``answer(server, conn)`` answers it.  ``sent`` counts the bytes it got
    out; ``cut`` is set when the client closed the connection under it."""

    def __init__(self, answer: Callable[[Server, socket.socket], None], tls: ssl.SSLContext | None = None):
        self.answer = answer
        self.tls = tls
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.listener.getsockname()[1]}"
        self.sent = 0
        self.cut = threading.Event()
        self.done = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # the test is over: the listener is closed
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        if self.tls:
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except OSError:  # the client did not trust the certificate
                conn.close()
                self.done.set()
                return
        with conn:
            head = b""
            try:
                while b"\r\n\r\n" not in head:
                    piece = conn.recv(4096)
                    if not piece:
                        return
                    head += piece
                self.answer(self, conn)
            except (BrokenPipeError, ConnectionResetError):
                self.cut.set()
            finally:
                self.done.set()

    def send(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)
        self.sent += len(data)

    def drip(self, conn: socket.socket, data: bytes, every: float = 0.5) -> None:
        """``data`` a byte every ``every`` seconds, until the client has gone."""
        for byte in data:
            self.send(conn, bytes([byte]))
            readable, _, _ = select.select([conn], [], [], every)
            if readable and conn.recv(1, socket.MSG_PEEK) == b"":  # the client closed the connection
                self.cut.set()
                return


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(answer: Callable[[Server, socket.socket], None], tls: ssl.SSLContext | None = None) -> Server:
        servers.append(Server(answer, tls))
        return servers[-1]

    yield start
    for server in servers:
        server.listener.close()


def ok(body: bytes, status: str = "200 OK", headers: str = "") -> Callable[[Server, socket.socket], None]:
    def answer(server: Server, conn: socket.socket) -> None:
        server.send(
            conn,
            f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{headers}\r\n".encode()
            + body,
        )

    return answer


def endless(length: int | None) -> Callable[[Server, socket.socket], None]:
    """A 64 MB body (announced as ``length`` if given), sent as fast as the client takes it."""

    def answer(server: Server, conn: socket.socket) -> None:
        announced = f"Content-Length: {length}\r\n" if length is not None else ""
        server.send(conn, f"HTTP/1.1 200 OK\r\n{announced}Connection: close\r\n\r\n".encode())
        piece = b"[" + b" " * 65534 + b"]"
        for _ in range(1024):
            server.send(conn, piece)

    return answer


# -- good records --------------------------------------------------------------------------


def test_a_record_from_a_file(tmp_path):
    path = tmp_path / "record.json"
    path.write_bytes(BODY)
    assert load_record(str(path)) == RECORD


def test_a_record_from_a_url(serve):
    server = serve(ok(BODY))
    assert load_record(f"{server.url}/games/7/record.json") == RECORD


def test_a_record_in_chunks(serve):
    def answer(server: Server, conn: socket.socket) -> None:
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(BODY[i : i + 50]), BODY[i : i + 50]) for i in range(0, len(BODY), 50))
        server.send(conn, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n")

    url = serve(answer).url
    assert load_record(url) == RECORD
    assert refused(url, max_bytes=100) == f"{url}: the answer is larger than 100 bytes, more than any game's record"


def test_a_record_after_a_redirect(serve):
    target = serve(ok(BODY))
    server = serve(ok(b"moved", "302 Found", f"Location: {target.url}/record.json\r\n"))
    assert load_record(f"{server.url}/old.json") == RECORD


def test_a_byte_order_mark_is_allowed(tmp_path):
    path = tmp_path / "record.json"
    path.write_bytes(b"\xef\xbb\xbf" + BODY)
    assert load_record(str(path)) == RECORD


def test_the_limits_leave_room_for_every_record():
    assert MAX_DEPTH >= 16 and MAX_BYTES >= 4 * 1024 * 1024 and 10 <= TIMEOUT <= 300


# -- nesting -------------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [1_000, 100_000])
def test_deep_nesting_in_a_file_is_refused_before_parsing(tmp_path, levels):
    path = tmp_path / "deep.json"
    path.write_bytes(deep(levels))
    start = time.process_time()
    assert refused(str(path)).endswith(f": nested more than {MAX_DEPTH} deep, which no record is")
    assert time.process_time() - start < 10  # milliseconds when linear; a quadratic scan takes minutes


@pytest.mark.parametrize("levels", [1_000, 100_000])
def test_deep_nesting_from_a_url_is_refused(serve, levels):
    server = serve(ok(b'{"a": ' * levels + b"1" + b"}" * levels))
    assert refused(server.url + "/deep.json").endswith(f"nested more than {MAX_DEPTH} deep, which no record is")


def test_nesting_at_the_limit_is_read_and_one_more_is_refused(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(deep(MAX_DEPTH))
    assert load_record(str(path)) is not None
    path.write_bytes(deep(MAX_DEPTH + 1))
    assert "nested more than" in refused(str(path))


def test_more_arrays_and_objects_than_a_record_holds_are_refused_before_parsing(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("[" + "[]," * MAX_CONTAINERS + "{}]")
    assert refused(str(path)).endswith(f": holds more than {MAX_CONTAINERS:,} arrays and objects, which no record does")
    path.write_text('["[[[[", {"a": [{}]}]')
    assert load_record(str(path), max_containers=4) == ["[[[[", {"a": [{}]}]
    assert "holds more than 3 arrays" in refused(str(path), max_containers=3)


def test_the_garbage_collector_is_on_again_after_a_parse(tmp_path):
    path = tmp_path / "r.json"
    for text in ("[[1], {}]", "[1, NaN]", "[1,"):
        path.write_text(text)
        try:
            load_record(str(path))
        except Unreadable:
            pass
        assert gc.isenabled()


def test_brackets_inside_strings_do_not_count(tmp_path):
    text = json.dumps({"a": ["[" * 500 + '\\"{' * 300, '"' * 200 + "\\", "]]]}}}" * 100]})
    assert text.count("[") > 500
    path = tmp_path / "r.json"
    path.write_text(text)
    assert load_record(str(path), max_depth=2) == json.loads(text)
    assert nesting_exceeds(json.dumps(["x\\", ['[\\"[']]), 2) is False
    assert nesting_exceeds(json.dumps(["x\\", [["]"]]]), 2) is True


def test_an_unterminated_string_full_of_escaped_quotes_is_scanned_at_once():
    text = '["' + '\\"[' * 300_000
    start = time.process_time()
    assert nesting_exceeds(text, 1) is False
    assert time.process_time() - start < 10  # milliseconds when linear; a quadratic scan takes minutes


def depth_of(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    return 0


TRICKY = st.text(alphabet='[]{}"\\ab\n', max_size=8)
VALUES = st.recursive(
    st.none() | st.integers() | TRICKY,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY, inner, max_size=3),
    max_leaves=20,
)


def containers_in(value: object) -> int:
    if isinstance(value, list):
        return 1 + sum(map(containers_in, value))
    if isinstance(value, dict):
        return 1 + sum(map(containers_in, value.values()))
    return 0


@given(value=VALUES, limit=st.integers(0, 6), most=st.integers(0, 12))
def test_the_scan_measures_the_nesting_and_the_arrays_and_objects_json_has(value, limit, most):
    text = json.dumps(value)
    assert nesting_exceeds(text, limit) is (depth_of(value) > limit)
    assert structure_exceeds(text, 100, most) == ("containers" if containers_in(value) > most else None)
    passed = {"depth"} if depth_of(value) > limit else set()
    passed |= {"containers"} if containers_in(value) > most else set()
    assert structure_exceeds(text, limit, most) in (passed or {None})  # which is met first, if both


# -- not a record ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a": NaN}', "not a record: it holds NaN, which JSON does not allow"),
        ("[1, Infinity]", "not a record: it holds Infinity, which JSON does not allow"),
        ("[-Infinity]", "not a record: it holds -Infinity, which JSON does not allow"),
        ("[1e400]", "not a record: the number 1e400 is too large"),
        ('{"seed": 1, "players": [], "seed": 2}', 'not a record: the key "seed" appears twice in one object'),
        ('{"a": [{"b": 1, "b": 1}]}', 'not a record: the key "b" appears twice in one object'),
        ('{\n  "a": 1,\n  "b": ]\n}', "not JSON: line 3 column 8: Expecting value"),
        ('{"a": "unterminated', "not JSON: line 1 column 7: Unterminated string starting at"),
        ("[1] [2]", "not JSON: line 1 column 5: Extra data"),
        ("]]]", "not JSON: line 1 column 1: Expecting value"),
        ("[" + "9" * 5000 + "]", "not a record: Exceeds the limit (4300 digits) for integer string conversion"),
        (r'["ok", ["\ud800"]]', "not a record: a string in it holds half a character (a lone surrogate escape)"),
        (r'{"\udc00x": 1}', "not a record: a string in it holds half a character (a lone surrogate escape)"),
        ("", "empty: no record in it"),
        (" \n", "empty: no record in it"),
    ],
)
def test_what_is_not_a_record(tmp_path, text, reason):
    path = tmp_path / "r.json"
    path.write_text(text)
    assert refused(str(path)).startswith(f"{path}: {reason}")


def test_escapes_that_make_whole_characters_are_text(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(r'{"name": "\ud83d\ude00 \\ud800 \u00e9"}')
    assert load_record(str(path)) == {"name": "\U0001f600 \\ud800 \u00e9"}


def test_a_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(b'{"name": "caf\xe9"}')
    assert refused(str(path)) == f"{path}: not UTF-8 text (byte 0xe9 at offset 13)"


# -- files -----------------------------------------------------------------------------------


def test_a_file_larger_than_the_limit_is_refused_by_its_size(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(b"[" + b" " * 2000 + b"]")
    assert refused(str(path), max_bytes=1024) == f"{path}: the file is larger than 1 KB, more than any game's record"
    assert load_record(str(path), max_bytes=2002) == []


def test_a_special_file_is_read_only_to_the_limit():
    assert (
        refused("/dev/zero", max_bytes=1000)
        == "/dev/zero: the file is larger than 1,000 bytes, more than any game's record"
    )


def test_a_directory(tmp_path):
    assert refused(str(tmp_path)) == f"{tmp_path}: is a directory, not a record file"


def test_a_missing_file(tmp_path):
    assert refused(str(tmp_path / "nope.json")) == f"{tmp_path / 'nope.json'}: no such file"


def test_a_path_with_a_nul():
    with pytest.raises(Unreadable, match=r"^a\?b: cannot read it \(embedded null byte\)$"):
        load_record("a\0b")


def test_a_name_is_said_on_one_line_without_control_characters(tmp_path):
    name = str(tmp_path / "a\nb\x1b[31m\udce9.json")
    with pytest.raises(Unreadable) as caught:
        load_record(name)
    assert str(caught.value) == f"{tmp_path}/a?b?[31m?.json: no such file"


def test_a_path_that_looks_like_another_scheme_is_a_file():
    assert refused("ftp://example.org/record.json") == "ftp://example.org/record.json: no such file"


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.binary(max_size=300)
    | st.text(alphabet='[]{}"\\:,0-1.eE tnrufalsNIy\ufeff\x00é', max_size=60).map(str.encode)
)
def test_any_bytes_load_or_are_unreadable(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "r.json")
        path.write_bytes(data)
        try:
            value = load_record(str(path), max_depth=4)
        except Unreadable as error:
            assert "\n" not in str(error)
            return
    assert value == json.loads(data.decode().removeprefix("\ufeff"))


# -- URLs ----------------------------------------------------------------------------------


def test_a_short_body(serve):
    def answer(server: Server, conn: socket.socket) -> None:
        server.send(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + b"[" * 120)

    url = serve(answer).url + "/r.json"
    assert refused(url) == f"{url}: the connection closed before the whole answer came (120 of 5,000 bytes)"


def test_a_chunked_body_cut_short(serve):
    def answer(server: Server, conn: socket.socket) -> None:
        server.send(conn, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n[1, 2, 3, 4, 5, \r\n100\r\n6, 7")

    url = serve(answer).url + "/r.json"
    assert refused(url).startswith(f"{url}: the connection closed before the whole answer came")


def test_an_answer_that_is_not_http(serve):
    def answer(server: Server, conn: socket.socket) -> None:
        server.send(conn, b"SSH-2.0-x\r\n")

    url = serve(answer).url
    assert refused(url) == f"{url}: the server's answer is not HTTP (it began 'SSH-2.0-x')"


def test_no_answer_at_all(serve):
    url = serve(lambda server, conn: None).url
    assert refused(url) == f"{url}: the server closed the connection without answering"


def test_a_header_line_too_long(serve):
    url = serve(lambda server, conn: server.send(conn, b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000 + b"\r\n\r\n")).url
    assert refused(url) == f"{url}: the server's answer has a line too long for HTTP"


def test_not_found(serve):
    url = serve(ok(b"no such game", "404 Not Found")).url + "/games/9/record.json"
    assert refused(url) == f"{url}: the server answered 404 Not Found"


def test_a_redirect_loop(serve):
    url = serve(ok(b"", "302 Found", "Location: /again\r\n")).url
    assert refused(url) == f"{url}: the server's redirects go round in a loop, or past 10"


def test_a_redirect_to_nowhere(serve):
    url = serve(ok(b"", "302 Found")).url
    assert refused(url) == f"{url}: the server answered 302 Found, a redirect without saying where to"


@pytest.mark.parametrize("target", ["file:///etc/passwd", "ftp://example.org/record.json"])
def test_a_redirect_away_from_http(serve, target):
    url = serve(ok(b"", "301 Moved Permanently", f"Location: {target}\r\n")).url
    assert refused(url) == f"{url}: the server redirected to {target}, which is not an http(s) URL"


def test_a_connection_refused():
    with socket.create_server(("127.0.0.1", 0)) as spare:
        port = spare.getsockname()[1]
    url = f"http://127.0.0.1:{port}/record.json"
    assert refused(url) == f"{url}: the connection was refused: is the address right, and the server up?"


def test_a_body_larger_than_the_limit_is_cut_off(serve):
    server = serve(endless(None))
    start = time.monotonic()
    assert refused(server.url, max_bytes=100_000).endswith(
        ": the answer is larger than 100,000 bytes, more than any game's record"
    )
    assert server.done.wait(5) and server.cut.is_set()  # the client closed the connection under it
    assert server.sent < 16 * 1024 * 1024  # of 64 MB: it stopped reading at the limit
    assert time.monotonic() - start < 30


def test_a_body_announced_larger_than_the_limit_is_not_read(serve):
    server = serve(endless(64 * 1024 * 1024))
    assert refused(server.url, max_bytes=100_000).endswith(
        "the answer is larger than 100,000 bytes, more than any game's record"
    )
    assert server.done.wait(5) and server.cut.is_set()
    assert server.sent < 16 * 1024 * 1024


def test_the_body_of_a_redirect_is_not_read(serve):
    target = serve(ok(BODY))

    def answer(server: Server, conn: socket.socket) -> None:
        server.send(
            conn,
            f"HTTP/1.1 302 Found\r\nLocation: {target.url}/record.json\r\nContent-Length: 67108864\r\n\r\n".encode(),
        )
        piece = b" " * 65536
        for _ in range(1024):
            server.send(conn, piece)

    server = serve(answer)
    assert load_record(server.url, max_bytes=100_000) == RECORD
    assert server.done.wait(5) and server.cut.is_set()
    assert server.sent < 16 * 1024 * 1024


def test_a_body_dripped_a_byte_at_a_time_is_given_up_at_the_deadline(serve):
    def answer(server: Server, conn: socket.socket) -> None:
        server.send(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        server.drip(conn, b"[" + b" " * 998 + b"]")

    server = serve(answer)
    start = time.monotonic()
    assert refused(server.url, timeout=2) == f"{server.url}: no complete answer within 2 seconds"
    assert 1.9 < time.monotonic() - start < 2 + 10  # cut off at the deadline, with room for a loaded machine
    assert server.done.wait(3) and server.cut.is_set()  # and the connection is closed, not left dripping


def test_a_status_line_dripped_a_byte_at_a_time_is_given_up_at_the_deadline(serve):
    server = serve(lambda server, conn: server.drip(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]", 0.25))
    start = time.monotonic()
    assert refused(server.url, timeout=1) == f"{server.url}: no complete answer within 1 second"
    assert 0.9 < time.monotonic() - start < 1 + 5  # (it would take 10 s to drip whole)
    assert server.done.wait(3) and server.cut.is_set()


# -- https -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, ssl.SSLContext]:
    """A throwaway certificate for 127.0.0.1, and a server context that presents it."""
    if shutil.which("openssl") is None:
        pytest.skip("needs openssl")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return cert, context


def test_a_record_over_https(serve, certificate, monkeypatch):
    cert, context = certificate
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the client trusts it as it would a real CA's
    server = serve(ok(BODY), context)
    assert load_record(server.url + "/record.json") == RECORD


def test_a_certificate_that_is_not_valid(serve, certificate):
    server = serve(ok(BODY), certificate[1])
    assert refused(server.url) == f"{server.url}: the server's certificate is not valid (self-signed certificate)"


def test_a_server_that_never_begins_tls_is_given_up_at_the_deadline(serve):
    server = serve(lambda server, conn: None)  # it reads the TLS hello as a request head that never ends
    url = server.url.replace("http:", "https:")
    start = time.monotonic()
    assert refused(url, timeout=0.5) == f"{url}: no complete answer within 0.5 seconds"
    assert 0.4 < time.monotonic() - start < 0.5 + 10
