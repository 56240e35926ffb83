"""Real mail servers on loopback for the integration tests.

``Dovecot`` runs a private Dovecot (IMAP + LMTP) from a self-contained config in
a temp directory; ``MailStack`` puts an aiosmtpd SMTP server in front of it that
records every message and relays it to Dovecot over LMTP, one recipient per
LMTP transaction (``Dovecot`` and ``MailStack`` below say the recipe and its quirks).

Nothing here starts on import: the fixtures in ``conftest.py`` create these.
"""

from __future__ import annotations

import asyncio
import atexit
import email
import imaplib
import os
import re
import shutil
import signal
import smtplib
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import Any, TypeVar

HOST = "127.0.0.1"
MAIL_HOSTNAME = "mail.example.org"  # Dovecot's hostname (Received, LMTP greeting)
SMTP_HOSTNAME = "mx.example.org"  # the aiosmtpd server's greeting name
PACKAGES = "dovecot-imapd dovecot-lmtpd"
NOBODY = 65534

T = TypeVar("T")


class ServerUnavailable(RuntimeError):
    """A server could not be started (binary missing, port, config...)."""


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def find_dovecot() -> str | None:
    """The dovecot binary: $REFEREE_TEST_DOVECOT if set, else on PATH, else in
    /usr/sbin (not on a normal user's PATH)."""
    chosen = os.environ.get("REFEREE_TEST_DOVECOT")
    if chosen:
        return shutil.which(chosen)
    found = shutil.which("dovecot")
    if found:
        return found
    for candidate in ("/usr/sbin/dovecot", "/usr/local/sbin/dovecot"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def wait_for(predicate: Callable[[], T], timeout: float = 10, interval: float = 0.05, message: str | None = None) -> T:
    """Poll ``predicate`` until it returns something truthy; return that value.
    Raises AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(message or f"timed out after {timeout}s waiting for {predicate!r}")
        time.sleep(interval)


def _bare(address: str) -> str:
    """lower-cased address without a +detail: the Dovecot user name."""
    local, _, domain = address.strip().strip("<>").rpartition("@")
    return f"{local.split('+', 1)[0]}@{domain}".lower()


def _imap_quote(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


CONFIG = """\
instance_name = referee-test-{imap_port}
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/log/dovecot.log
protocols = imap lmtp
listen = {host}
hostname = {hostname}
ssl = {ssl}
{ssl_files}disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
mail_max_userip_connections = 200
first_valid_uid = 1
first_valid_gid = 1
mail_location = maildir:{root}/mail/%u
recipient_delimiter = +
lmtp_save_to_detail_mailbox = no
{extra}passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/etc/users
}}
userdb {{
  driver = passwd-file
  args = username_format=%u {root}/etc/users
  default_fields = uid={uid} gid={gid} home={root}/mail/%u
}}
service imap {{
  process_limit = 500
}}
service imap-login {{
{login_extra}  inet_listener imap {{
    address = {host}
    port = {imap_port}
  }}
  inet_listener imaps {{
    address = {host}
    port = {imaps_port}
  }}
}}
service lmtp {{
  inet_listener lmtp {{
    address = {host}
    port = {lmtp_port}
  }}
}}
"""


@dataclass
class ImapMessage:
    """One message of a mailbox as IMAP shows it."""

    uid: int
    internaldate: datetime
    flags: tuple[str, ...]
    raw: bytes

    @property
    def message(self) -> EmailMessage:
        return email.message_from_bytes(self.raw, policy=policy.default)  # type: ignore[return-value]


class Dovecot:
    """A private Dovecot on loopback: IMAP and LMTP on free high ports,
    passwd-file users, maildirs under ``root/mail``.

    Runs as root with the recipe's config (mail owned by nobody); run by another
    user it runs "rootless" with that user's uid for everything."""

    def __init__(self, root: Path | str | None = None, host: str = HOST, binary: str | None = None, tls: bool = False):
        self.binary = binary or find_dovecot()
        if self.binary is None:
            raise ServerUnavailable(
                f"dovecot binary not found (Debian/Ubuntu packages {PACKAGES}: apt-get install -y {PACKAGES})"
            )
        # A short path: base_dir holds unix sockets (108-byte limit); and not
        # under pytest's 0700 tmp dirs, which Dovecot's unprivileged users cannot enter.
        self.root = Path(root) if root else Path(tempfile.mkdtemp(prefix="referee-dovecot-"))
        self._own_root = root is None
        self.host = host
        self.imap_port = free_port(host)
        self.lmtp_port = free_port(host)
        while self.lmtp_port == self.imap_port:
            self.lmtp_port = free_port(host)
        # With tls: STARTTLS on the IMAP port and implicit TLS on imaps_port,
        # with a self-signed certificate for 127.0.0.1 (trust ca_file).
        self.tls = tls
        self.imaps_port = 0
        while tls and self.imaps_port in (0, self.imap_port, self.lmtp_port):
            self.imaps_port = free_port(host)
        self.ca_file = self.root / "etc" / "cert.pem" if tls else None
        self.users: dict[str, str] = {}  # bare lower-case address -> password
        self.stacks_provisioned = 0  # MailStack user sets written (see MailStack.provision)
        self.stacks_used = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        atexit.register(self.stop)  # in case the fixture's finalizer never runs
        self.conf = self.root / "etc" / "dovecot.conf"
        self.log = self.root / "log" / "dovecot.log"
        self._write_config()

    # -- setup ---------------------------------------------------------------

    def _write_config(self) -> None:
        root = self.root
        for sub in ("etc", "run", "state", "log", "mail"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o755)
        extra = login_extra = ""
        if os.geteuid() == 0:
            uid = gid = NOBODY
            os.chown(root / "mail", NOBODY, NOBODY)
        else:  # rootless: every Dovecot process runs as the calling user
            import grp
            import pwd

            uid, gid = os.getuid(), os.getgid()
            user, group = pwd.getpwuid(uid).pw_name, grp.getgrgid(gid).gr_name
            extra = (
                f"default_internal_user = {user}\n"
                f"default_internal_group = {group}\n"
                f"default_login_user = {user}\n"
                "service anvil {\n  chroot =\n}\n"
            )
            login_extra = "  chroot =\n"  # only root may chroot
        (root / "etc" / "users").touch()
        ssl_files = ""
        if self.tls:
            _self_signed(root / "etc" / "cert.pem", root / "etc" / "key.pem", self.host)
            ssl_files = f"ssl_cert = <{root}/etc/cert.pem\nssl_key = <{root}/etc/key.pem\n"
        self.conf.write_text(
            CONFIG.format(
                root=root,
                host=self.host,
                hostname=MAIL_HOSTNAME,
                imap_port=self.imap_port,
                lmtp_port=self.lmtp_port,
                uid=uid,
                gid=gid,
                extra=extra,
                login_extra=login_extra,
                ssl="yes" if self.tls else "no",
                ssl_files=ssl_files,
                imaps_port=self.imaps_port,
            )
        )

    def add_user(self, address: str, password: str, wait: bool = True) -> None:
        """Create a user: appended to the passwd-file, which Dovecot re-reads."""
        self.add_users({address: password}, wait=wait)

    def add_users(self, users: Mapping[str, str], wait: bool = True) -> None:
        """Create several users with one append (and at most one wait).

        Dovecot stats the passwd-file at most once per second (the auth
        process's ``last_sync_time == ioloop_time`` gate), so a line written in
        the same second as an earlier lookup is invisible until the next second.
        With ``wait`` (and Dovecot running) this returns once the next whole
        second has begun, when every later lookup sees the new users."""
        with self._lock:
            lines = []
            for address, password in users.items():
                key = _bare(address)
                if key in self.users:
                    raise ValueError(f"user {key} exists")
                if any(c in password for c in ":\n"):
                    raise ValueError("a password may not contain ':' or a newline")
                lines.append(f"{key}:{{PLAIN}}{password}::::::\n")
                self.users[key] = password
            with open(self.root / "etc" / "users", "a") as f:
                f.write("".join(lines))
            written = time.time()
        if wait and self.running:
            time.sleep(max(0.0, int(written) + 1 - time.time() + 0.01))

    def has_user(self, address: str) -> bool:
        return _bare(address) in self.users

    def password(self, address: str) -> str:
        return self.users[_bare(address)]

    def maildir(self, address: str) -> Path:
        """The user's maildir (its INBOX; folders are ``.Name`` inside)."""
        return self.root / "mail" / _bare(address)

    # -- lifecycle -----------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def running(self) -> bool:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return False
        try:  # a zombie is dead
            stat = Path(f"/proc/{proc.pid}/stat").read_text()
            return stat.rpartition(")")[2].split()[0] != "Z"
        except OSError:
            return False

    def start(self, timeout: float = 10) -> None:
        if self.running:
            return
        for port in (self.imap_port, self.lmtp_port):
            if port_open(self.host, port):
                raise ServerUnavailable(f"port {self.host}:{port} is taken by someone else")
        with open(self.root / "log" / "stderr.log", "ab") as stderr:
            self._proc = subprocess.Popen(
                [self.binary, "-F", "-c", str(self.conf)],
                stdin=subprocess.DEVNULL,
                stdout=stderr,
                stderr=stderr,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while not (self._greets(self.imap_port, b"* OK") and self._greets(self.lmtp_port, b"220 ")):
            if not self.running:
                self._proc = None
                raise ServerUnavailable(f"dovecot exited at start:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise ServerUnavailable(f"dovecot did not open its ports in {timeout}s:\n{self.log_tail()}")
            time.sleep(0.01)

    def _greets(self, port: int, greeting: bytes) -> bool:
        """The service on ``port`` accepts and sends its greeting."""
        try:
            with socket.create_connection((self.host, port), timeout=1) as sock:
                return sock.makefile("rb").readline().startswith(greeting)
        except OSError:
            return False

    def stop(self, timeout: float = 10, whole_group: bool = True) -> None:
        """Stop Dovecot with SIGTERM and wait until it is gone and its ports are
        closed (SIGKILL to the process group after ``timeout``).

        By default SIGTERM goes to the whole process group (master, imap, lmtp,
        auth...): that takes ~5 ms and open IMAP sessions are closed at once.
        ``whole_group=False`` signals only the master, as an init system would:
        ~1.1 s, and open IMAP sessions get their BYE only ~10 s later."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                if whole_group:
                    os.killpg(proc.pid, signal.SIGTERM)
                else:
                    proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        # Children outlive the master for a moment; zombies count as dead
        # (a container's PID 1 may never reap them).
        try:
            wait_for(lambda: not _group_members(proc.pid), timeout=2, interval=0.01)
        except AssertionError:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.wait(5)
        wait_for(
            lambda: not port_open(self.host, self.imap_port) and not port_open(self.host, self.lmtp_port),
            timeout=timeout,
            message="dovecot's ports stayed open after stop",
        )

    def restart(self) -> None:
        """Stop and start again on the same ports, keeping all mail."""
        self.stop()
        self.start()

    def reset_uidvalidity(self, address: str) -> None:
        """Give the user's INBOX a new UIDVALIDITY, keeping its messages (which
        get new UIDs): Dovecot is stopped, the uidlist and indexes deleted, and
        Dovecot started again. The ``dovecot-uidvalidity`` file is kept, so the
        next UIDVALIDITY is always larger than the old one."""
        box = self.maildir(address)
        was_running = self.running
        self.stop()
        for pattern in ("dovecot-uidlist", "dovecot.index*", "dovecot.list.index*"):
            for path in box.glob(pattern):
                path.unlink()
        if was_running:
            self.start()

    def close(self) -> None:
        self.stop()
        atexit.unregister(self.stop)
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def log_tail(self, lines: int = 30) -> str:
        out = []
        for path in (self.log, self.root / "log" / "stderr.log"):
            try:
                out += path.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                pass
        return "\n".join(out)

    # -- stdlib IMAP helpers (for assertions) ---------------------------------

    def imap(self, address: str) -> imaplib.IMAP4:
        """A logged-in stdlib IMAP connection; log it out when done."""
        conn = imaplib.IMAP4(self.host, self.imap_port, timeout=10)
        conn.login(_bare(address), self.password(address))
        return conn

    def messages(self, address: str, mailbox: str = "INBOX") -> list[ImapMessage]:
        """All messages of a mailbox in UID order, read-only (no \\Seen set).
        A mailbox that does not exist reads as empty."""
        conn = self.imap(address)
        try:
            typ, _ = conn.select(_imap_quote(mailbox), readonly=True)
            if typ != "OK":
                return []
            typ, data = conn.uid("FETCH", "1:*", "(UID FLAGS INTERNALDATE BODY.PEEK[])")
            if typ != "OK":
                raise AssertionError(f"UID FETCH failed: {data!r}")
            result = []
            for item in data:
                if not isinstance(item, tuple):
                    continue
                head, raw = item
                head = head.decode()
                uid = int(re.search(r"UID (\d+)", head).group(1))
                flags = tuple(re.search(r"FLAGS \(([^)]*)\)", head).group(1).split())
                stamp = re.search(r'INTERNALDATE "([^"]+)"', head).group(1)
                when = datetime.strptime(stamp, "%d-%b-%Y %H:%M:%S %z")
                result.append(ImapMessage(uid, when, flags, bytes(raw)))
            return sorted(result, key=lambda m: m.uid)
        finally:
            _logout(conn)

    def uidvalidity(self, address: str, mailbox: str = "INBOX") -> int:
        conn = self.imap(address)
        try:
            typ, data = conn.status(_imap_quote(mailbox), "(UIDVALIDITY)")
            if typ != "OK":
                raise AssertionError(f"STATUS failed: {data!r}")
            return int(re.search(rb"UIDVALIDITY (\d+)", data[0]).group(1))
        finally:
            _logout(conn)

    def append(
        self, address: str, raw: bytes, *, mailbox: str = "INBOX", internaldate: datetime | None = None, flags: str = ""
    ) -> None:
        """Seed a mailbox by IMAP APPEND (no Received/Delivered-To added); the
        INTERNALDATE may be chosen, e.g. a receipt time before a deadline."""
        conn = self.imap(address)
        try:
            if mailbox.upper() != "INBOX":
                conn.create(_imap_quote(mailbox))  # NO if it exists: fine
            when = imaplib.Time2Internaldate(internaldate) if internaldate else None
            typ, data = conn.append(_imap_quote(mailbox), f"({flags})" if flags else None, when, raw)
            if typ != "OK":
                raise AssertionError(f"APPEND failed: {data!r}")
        finally:
            _logout(conn)

    def deliver(self, recipient: str, raw: bytes, mail_from: str = "") -> None:
        """Deliver straight over LMTP (one recipient, one transaction)."""
        with smtplib.LMTP(self.host, self.lmtp_port, local_hostname=SMTP_HOSTNAME, timeout=30) as lmtp:
            lmtp.sendmail(mail_from, [recipient], raw)


def _self_signed(cert: Path, key: Path, host: str) -> None:
    """A throwaway certificate for ``host`` (an IP address), valid for a day."""
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            f"/CN={host}",
            "-addext",
            f"subjectAltName=IP:{host}",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    os.chmod(key, 0o644)  # Dovecot's master reads it as root; the box is a test box


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group ``pgid``."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def _logout(conn: imaplib.IMAP4) -> None:
    try:
        conn.logout()
    except (imaplib.IMAP4.error, OSError):
        pass


@dataclass
class SentMail:
    """One message the SMTP server accepted."""

    mail_from: str
    rcpt_tos: list[str]
    raw: bytes
    message: EmailMessage
    relayed: list[str] = field(default_factory=list)  # recipients delivered into Dovecot
    received_at: datetime = field(default_factory=lambda: datetime.now(UTC))


class _Handler:
    """aiosmtpd handler: refuse on demand, else record and relay over LMTP."""

    def __init__(self, stack: MailStack):
        self.stack = stack

    def _refusal(self) -> str | None:
        code = self.stack.refusing
        if code is None:
            return None
        kind = "4.3.0 Try again later" if code < 500 else "5.7.1 Refused"
        return f"{code} {kind} (test server refusing)"

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        refusal = self._refusal()
        if refusal:
            return refusal
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        refusal = self._refusal()
        if refusal:
            return refusal
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        refusal = self._refusal()
        if refusal:
            return refusal
        raw = bytes(envelope.original_content or envelope.content)
        rcpts = list(envelope.rcpt_tos)
        local = [r for r in rcpts if self.stack.dovecot.has_user(r)]
        try:
            if local:
                await asyncio.get_running_loop().run_in_executor(
                    None, self.stack._relay, envelope.mail_from or "", local, raw
                )
        except Exception as exc:  # noqa: BLE001 - surface relay trouble to the client, loudly
            self.stack.relay_errors.append(exc)
            return f"451 4.3.0 LMTP relay failed: {exc}"[:500]
        message = email.message_from_bytes(raw, policy=policy.default)
        self.stack.sent.append(SentMail(envelope.mail_from or "", rcpts, raw, message, local))  # type: ignore[arg-type]
        return "250 OK queued"


class MailStack:
    """Per-test users in the shared Dovecot and an own aiosmtpd SMTP server
    (no auth, no TLS) that records each message in ``sent`` and relays it to
    Dovecot over LMTP for recipients that are Dovecot users."""

    BATCH = 25  # user sets written per passwd-file append (one <=1 s wait each)

    def __init__(self, dovecot: Dovecot, host: str = HOST):
        self.dovecot = dovecot
        self.host = host
        dovecot.stacks_used += 1
        self.n = n = dovecot.stacks_used
        if n > dovecot.stacks_provisioned:
            self.provision(dovecot)
        self.referee = f"referee-{n}@example.org"
        self.referee_password = f"referee-secret-{n}"
        self.players = [f"{name}-{n}@example.org" for name in ("alice", "bob", "carol")]
        self.passwords = self.users_for(n)
        self.sent: list[SentMail] = []
        self.relay_errors: list[Exception] = []
        self.refusing: int | None = None
        self.smtp_port = 0
        self._controller: Any = None

    # -- SMTP server -----------------------------------------------------------

    def start(self, smtputf8: bool = True) -> None:
        """Start the SMTP server; with ``smtputf8`` False it offers no
        SMTPUTF8 (aiosmtpd's Controller offers it by default)."""
        try:
            from aiosmtpd.controller import Controller
        except ImportError as exc:
            raise ServerUnavailable(f"aiosmtpd is not installed ({exc}): pip install -e '.[test]'") from exc
        last: Exception | None = None
        for _ in range(3):  # a port picked free may be taken before we bind it
            port = free_port(self.host)
            controller = Controller(
                _Handler(self),
                hostname=self.host,
                port=port,
                server_hostname=SMTP_HOSTNAME,
                ready_timeout=10,
                enable_SMTPUTF8=smtputf8,
            )
            try:
                controller.start()
            except Exception as exc:  # noqa: BLE001 - retried, then reported
                last = exc
                continue
            self._controller, self.smtp_port = controller, port
            return
        raise ServerUnavailable(f"aiosmtpd did not start: {last!r}")

    def stop(self) -> None:
        controller, self._controller = self._controller, None
        if controller is not None:
            controller.stop()

    @staticmethod
    def users_for(n: int) -> dict[str, str]:
        """The addresses and passwords of the n-th stack's users."""
        users = {f"referee-{n}@example.org": f"referee-secret-{n}"}
        users.update({f"{p}-{n}@example.org": f"{p}-secret-{n}" for p in ("alice", "bob", "carol")})
        return users

    @classmethod
    def provision(cls, dovecot: Dovecot, count: int | None = None) -> None:
        """Write the users of the next ``count`` stacks in one go: before
        Dovecot starts this costs no wait, later one wait of at most 1 s."""
        first = dovecot.stacks_provisioned + 1
        last = first + (count or cls.BATCH) - 1
        users: dict[str, str] = {}
        for n in range(first, last + 1):
            users.update(cls.users_for(n))
        dovecot.add_users(users)
        dovecot.stacks_provisioned = last

    def refuse(self, code: int = 451) -> None:
        """Answer every following MAIL, RCPT and DATA with ``code`` (4xx
        temporary, 5xx permanent) until ``accept()``. Nothing is recorded."""
        if not 400 <= code < 600:
            raise ValueError("refuse() takes a 4xx or 5xx code")
        self.refusing = code

    def accept(self) -> None:
        self.refusing = None

    def add_user(self, address: str, password: str | None = None) -> str:
        """One more Dovecot user for this test; returns its password. Waits
        up to 1 s until Dovecot sees it (see Dovecot.add_users)."""
        password = password or f"{address.split('@')[0]}-secret"
        self.dovecot.add_user(address, password)
        self.passwords[address] = password
        return password

    def _relay(self, mail_from: str, recipients: list[str], raw: bytes) -> None:
        # One LMTP transaction per recipient: that is how Dovecot writes a
        # Delivered-To, and smtplib.LMTP reads one reply per DATA.
        with smtplib.LMTP(self.dovecot.host, self.dovecot.lmtp_port, local_hostname=SMTP_HOSTNAME, timeout=30) as lmtp:
            for rcpt in recipients:
                lmtp.sendmail(mail_from, [rcpt], raw)

    # -- helpers for tests -----------------------------------------------------

    def compose(
        self,
        sender: str,
        to: str | Iterable[str],
        subject: str,
        body: str,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    ) -> bytes:
        """A plain-text mail as bytes (CRLF). ``headers`` add to or replace
        the defaults; give pairs to repeat a header."""
        rcpts = [to] if isinstance(to, str) else list(to)
        msg = EmailMessage()
        msg["From"] = sender
        msg["To"] = ", ".join(rcpts)
        msg["Subject"] = subject
        msg["Date"] = format_datetime(datetime.now(UTC))
        msg["Message-ID"] = make_msgid(domain="example.net")
        pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers or [])
        for name in {k.lower() for k, _ in pairs}:
            del msg[name]
        for name, value in pairs:
            msg[name] = value
        msg.set_content(body)
        return msg.as_bytes(policy=policy.SMTP)

    def send(
        self,
        sender: str,
        to: str | Iterable[str],
        subject: str,
        body: str,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    ) -> bytes:
        """SMTP a plain-text mail through this test's SMTP server (so it lands in
        Dovecot via LMTP with Received/Delivered-To and a real INTERNALDATE).
        Returns the bytes sent. Raises smtplib errors if the server refuses."""
        rcpts = [to] if isinstance(to, str) else list(to)
        raw = self.compose(sender, rcpts, subject, body, headers)
        self.send_raw(sender, rcpts, raw)
        return raw

    def send_raw(self, sender: str, to: str | Iterable[str], raw: bytes) -> None:
        rcpts = [to] if isinstance(to, str) else list(to)
        with smtplib.SMTP(self.host, self.smtp_port, local_hostname="client.example.net", timeout=30) as smtp:
            smtp.sendmail(sender, rcpts, raw)

    def inbox(self, address: str, mailbox: str = "INBOX") -> list[bytes]:
        """Raw messages of the user's INBOX (or another mailbox), in UID order."""
        return [m.raw for m in self.dovecot.messages(address, mailbox)]

    def messages(self, address: str, mailbox: str = "INBOX") -> list[ImapMessage]:
        return self.dovecot.messages(address, mailbox)

    def sent_to(self, address: str) -> list[SentMail]:
        """Recorded messages with ``address`` among the envelope recipients."""
        key = address.lower()
        return [m for m in self.sent if key in (r.lower() for r in m.rcpt_tos)]

    @staticmethod
    def wait_for(
        predicate: Callable[[], T], timeout: float = 10, interval: float = 0.05, message: str | None = None
    ) -> T:
        return wait_for(predicate, timeout, interval, message)
