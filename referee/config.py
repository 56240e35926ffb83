"""The referee's settings, read from a TOML file (see config.example.toml).

Everything is checked when the file is loaded, before any connection is
tried; a problem is reported with the file, the line and the setting's name.
The mail servers' passwords kept outside the file (password_env,
password_file) are read only by a command that connects (``run``, ``serve``:
Config.connecting), so the others never need them; an error then names the
file and line all the same.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from referee.mail.parse import is_address
from referee.store import Notify
from referee.timeutil import parse_duration

DEFAULT_PATH = Path("referee.toml")
_SECURITY = ("tls", "starttls", "none")
# the site's root: a host and a path (RFC 3986's characters), no query or fragment
_URL = re.compile(r"https?://[A-Za-z0-9.-]+(:\d{1,5})?(/[A-Za-z0-9._~%!$&'()*+,;=:@/-]*)?")

# What either mail server's section holds ([imap] adds its folders).
_SERVER = {
    "host": "text",
    "port": "port",
    "security": "security",
    "username": "text",
    "password": "text",
    "password_file": "path",
    "password_env": "text",
}

TEMPLATE_CACHE = "template-cache"  # the folder beside games.db where compiled templates are kept

# section -> setting -> kind: the one place that says what a config file may hold
_SETTINGS: dict[str, dict[str, str]] = {
    "referee": {
        "address": "address",
        "name": "text",
        "database": "path",
        "templates": "path",
        "site_dir": "path",
        "site_url": "url",
        "secret_key": "text",
        "secret_key_file": "path",
        "max_message_size": "size",
        "replies_per_hour": "count",
        "open_replies_per_hour": "count",
        "open_replies_total_per_hour": "count",
        "open_replies_per_network_per_hour": "count",
        "accept_token_alone": "bool",
        "dkim_authserv_id": "text",
        "authserv_id": "text",
        "keep_sent_mail": "duration",
        "keep_received_mail": "duration",
    },
    "defaults": {
        "deadline": "duration",
        "turn_deadline": "duration",
        "decision_deadline": "duration",
        "settle": "duration",
        "reminder": "duration",
        "longest_delegation": "duration",
        "standby_answer": "duration",
        "notify": "notify",
    },
    "outage": {"gap": "duration", "grace": "duration"},
    "imap": {**_SERVER, "mailbox": "folder", "processed": "folder", "quarantine": "folder"},
    "smtp": _SERVER,
    "maildir": {"path": "path", "processed": "folder", "quarantine": "folder"},
    "keepers": {
        "addresses": "addresses",
        "longest_extension": "duration",
        "most_pause": "duration",
        "most_away": "duration",
        "daily_summary": "bool",
    },
    "club": {
        "announce_to": "addresses",
        "announce_notify": "notify",
        "signup_window": "duration",
        "awards": "bool",
        "most_watchers": "count",
        "press_per_day": "count",
    },
}
_DEFAULT_PORTS = {"imap": {"tls": 993, "starttls": 143, "none": 143}, "smtp": {"tls": 465, "starttls": 587, "none": 25}}


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file, line and setting."""


@dataclass(frozen=True)
class Secret:
    """Where a server's password is kept outside the config (password_env,
    password_file), to be read when the referee connects."""

    setting: str  # "imap.password_env"
    source: str  # the environment variable's name, or the file's path
    place: str  # where the config sets it ("referee.toml:7"), for the error

    def read(self) -> str:
        """The password; ConfigError, naming the file and line, if it cannot be read."""
        if self.setting.endswith("_env"):
            value = os.environ.get(self.source)
            if value is None:
                raise ConfigError(f"{self.place}: {self.setting}: ${self.source} is not set")
            return value
        return read_secret_file(Path(self.source), self.setting, self.place)


@dataclass(frozen=True)
class Server:
    """How to reach an IMAP or SMTP server."""

    host: str
    port: int
    security: str  # tls, starttls, or none (loopback only)
    username: str | None = None
    password: str | None = None
    secret: Secret | None = None  # the password, not read yet (Config.connecting reads it)
    mailbox: str = "INBOX"  # IMAP only: where players' mail arrives
    processed: str = "processed"  # IMAP only: where handled mail is filed
    quarantine: str = "quarantine"  # IMAP only: where unhandled mail is filed


@dataclass(frozen=True)
class MaildirSettings:
    path: Path
    processed: str = "processed"
    quarantine: str = "quarantine"


@dataclass(frozen=True)
class Config:
    address: str = "referee@example.org"  # as README shows; a real referee sets its own
    name: str = "Referee"
    database: Path = Path("games.db")
    templates: Path | None = None
    site_dir: Path | None = None
    # Where players read the site written to site_dir (its index.html): RULES
    # and the start mails give the rules' page there; None: RULES mails the text.
    site_url: str | None = None
    # Where a process keeps the templates it compiled for the next one
    # (referee.templating): the command line sets it beside games.db; None
    # (the default, and in tests): each process compiles its own.
    template_cache: Path | None = None
    secret_key: bytes | None = field(default=None, repr=False)
    max_message_size: int = 5 * 2**20  # bytes: larger mail is not parsed; its sender is told
    # Answers per hour (see referee.limits): to a player's mail that proves its seat,
    # per address; to mail that proves nothing, per address (and origin), for all
    # together, and what the mail of one network may spend of that.
    replies_per_hour: int = 60
    open_replies_per_hour: int = 5
    open_replies_total_per_hour: int = 100
    open_replies_per_network_per_hour: int = 20
    accept_token_alone: bool = False  # True: a reply token authenticates whatever the From
    dkim_authserv_id: str | None = None  # set: seat commands also need this server's dkim=pass
    # set: this server's Authentication-Results tell checked mail (referee.mail.origin),
    # which has answers of its own; dkim_authserv_id, when set, does too
    authserv_id: str | None = None
    # How long a sent mail's whole text is kept in games.db; then only its
    # headers (enough for a bounce to find it).  None: for ever.
    keep_sent_mail: timedelta | None = timedelta(days=90)
    keep_received_mail: timedelta | None = timedelta(days=90)  # then its headers only; None: whole for good
    deadline: timedelta = timedelta(days=3)  # a sealed round (and, unless set, every phase)
    turn_deadline: timedelta | None = None  # one player's turn; None: the game's own, else the deadline
    decision_deadline: timedelta | None = None  # a choice in a resolution; None: the game's own, else the turn's
    settle: timedelta = timedelta(0)
    reminder: timedelta | None = timedelta(days=1)  # before a deadline; None: no reminders
    longest_delegation: timedelta = timedelta(days=30)  # the longest a stand-in plays a seat (DELEGATE)
    # How long a person on standby has to accept a seat left mid-game before
    # it is offered to the next on the list.
    standby_answer: timedelta = timedelta(days=1)
    notify: Notify = Notify.TURNS  # how much mail a player gets, unless their game or they choose
    outage_gap: timedelta | None = timedelta(hours=6)  # None: no outage guard
    outage_grace: timedelta = timedelta(hours=24)
    imap: Server | None = None
    smtp: Server | None = None
    maildir: MaildirSettings | None = None
    # [keepers]: who may act on games by mail, and how far a keeper may go
    # without --force at the shell.
    keepers: tuple[str, ...] = ()  # addresses, lower case
    longest_extension: timedelta = timedelta(days=7)  # one EXTEND at most
    most_pause: timedelta = timedelta(days=30)  # all of a game's pauses together at most
    most_away: timedelta = timedelta(days=15)  # a seat's absences (AWAY) in one game together at most: njudge's
    daily_summary: bool = False  # keepers get a summary of every game once a day
    # [club]: games for a club (its list, sign-ups, observers, table talk)
    announce_to: tuple[str, ...] = ()  # lists every game's public mail is copied to (lower case)
    announce_notify: Notify = Notify.TURNS  # how much of it: each round's result at TURNS
    signup_window: timedelta = timedelta(days=2)  # a sign-up game at its minimum starts this long after reaching it
    awards: bool = False  # game-over mails carry their kind's award text (Pure Skill's rule 5)
    most_watchers: int = 50  # observers (WATCH) per game at most
    press_per_day: int = 20  # table talk (TELL) a seat may send in a day

    @property
    def domain(self) -> str:
        return self.address.rpartition("@")[2]

    @property
    def trusted_authserv_id(self) -> str | None:
        """The server whose Authentication-Results the referee believes, if any."""
        return self.dkim_authserv_id or self.authserv_id

    def connecting(self) -> Config:
        """This config with the mail servers' passwords read (password_env,
        password_file), for a command that connects: ConfigError, naming
        the file and line of the setting, if one cannot be read."""
        return replace(self, imap=_password_read(self.imap), smtp=_password_read(self.smtp))

    def caching_templates(self) -> Config:
        """This config with its compiled templates kept beside games.db
        (TEMPLATE_CACHE), for a process that starts and ends with a command:
        the next one reads them compiled (referee.templating)."""
        if str(self.database) == ":memory:":
            return self
        return replace(self, template_cache=Path(self.database).parent / TEMPLATE_CACHE)

    def unread_passwords(self) -> list[str]:
        """Each mail server's password that could not be read now, and why
        (``imap.password_env: $REFEREE_IMAP_PASSWORD is not set``): what a
        command that connects to no server leaves for run and serve."""
        problems = []
        for server in (self.imap, self.smtp):
            if server is not None and server.secret is not None:
                try:
                    server.secret.read()
                except ConfigError as error:
                    problems.append(str(error).removeprefix(f"{server.secret.place}: "))
        return problems


def default_path() -> Path:
    """Where the config is when ``--config`` is not given: $REFEREE_CONFIG, else ./referee.toml."""
    return Path(os.environ.get("REFEREE_CONFIG") or DEFAULT_PATH)


def load(path: Path | None = None) -> Config:
    """The config at ``path``; with no path, the default one, or built-in
    defaults when there is no ./referee.toml (a named file must exist)."""
    if path is None:
        path = default_path()
        if "REFEREE_CONFIG" not in os.environ and not path.exists():
            return Config()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config file ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte {error.start}); save it as UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    return _Reader(path, text).config(data)


class _Reader:
    """Turns parsed TOML into a Config, naming file:line for every complaint."""

    def __init__(self, path: Path, text: str):
        self.path, self.lines = path, text.splitlines()

    def config(self, data: dict[str, Any]) -> Config:
        sections: dict[str, dict[str, Any]] = {}
        for section, settings in data.items():
            if section not in _SETTINGS or not isinstance(settings, dict):
                raise self.error(section, None, f"unknown section [{section}]")
            sections[section] = {key: self.convert(section, key, value) for key, value in settings.items()}
        referee = sections.get("referee", {})
        defaults = sections.get("defaults", {})
        outage = sections.get("outage", {})
        values: dict[str, Any] = {k: v for k, v in referee.items() if not k.startswith("secret_key")}
        values.update({k: v for k, v in defaults.items()})
        values["secret_key"] = self.secret(referee)
        if "gap" in outage:
            values["outage_gap"] = outage["gap"] or None  # "0s" turns the guard off
        if "grace" in outage:
            values["outage_grace"] = outage["grace"]
        for keep in ("keep_sent_mail", "keep_received_mail"):
            if keep in referee:
                values[keep] = referee[keep] or None  # "0s": keep it all
        if "reminder" in defaults:
            values["reminder"] = defaults["reminder"] or None  # "0s": no reminders
        if defaults.get("standby_answer") == timedelta(0):  # every offer would lapse unread, the list emptied
            raise self.error("defaults", "standby_answer", "defaults.standby_answer must be longer than nothing")
        for kind in ("imap", "smtp"):
            if kind in sections:
                values[kind] = self.server(kind, sections[kind])
        if "maildir" in sections:
            maildir = sections["maildir"]
            if "path" not in maildir:
                raise self.error("maildir", None, "[maildir] needs a path")
            values["maildir"] = MaildirSettings(**maildir)
        keepers = sections.get("keepers", {})
        if "addresses" in keepers:
            values["keepers"] = keepers["addresses"]
        values.update({k: v for k, v in keepers.items() if k != "addresses"})
        values.update(sections.get("club", {}))
        if "imap" in values and "maildir" in values:
            raise self.error("maildir", None, "use either [imap] or [maildir], not both")
        return Config(**values)

    def convert(self, section: str, key: str, value: Any) -> Any:
        kind = _SETTINGS[section].get(key)
        name = f"{section}.{key}"
        if kind is None:
            raise self.error(section, key, f"unknown setting {name}")
        if kind == "size":
            size = _size(value)
            if size is None:
                raise self.error(section, key, f'{name} must be a size such as "5MB" or "512KB"')
            return size
        if kind == "count":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise self.error(section, key, f"{name} must be a whole number, 1 or more")
            return value
        if kind == "bool":
            if not isinstance(value, bool):
                raise self.error(section, key, f"{name} must be true or false (no quotes)")
            return value
        if kind == "port":
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 65536:
                raise self.error(section, key, f"{name} must be a port number from 1 to 65535")
            return value
        if kind == "addresses":
            if not isinstance(value, list) or not all(isinstance(a, str) and is_address(a) for a in value):
                raise self.error(
                    section, key, f'{name} must be a list of mail addresses such as ["keeper@example.org"]'
                )
            return tuple(dict.fromkeys(a.strip().lower() for a in value))
        if not isinstance(value, str):
            raise self.error(section, key, f"{name} must be a string in quotes")
        if kind == "duration":
            try:
                return parse_duration(value)
            except ValueError as error:
                raise self.error(section, key, f"{name}: {error}") from None
        if kind == "address" and not is_address(value):
            raise self.error(section, key, f"{name} must be a mail address such as referee@example.org")
        if kind == "folder" and (not value.strip() or value.startswith(".") or any(c in value for c in "/:\0\r\n")):
            raise self.error(section, key, f"{name} must be a plain folder name such as 'processed'")
        if kind == "notify":
            if value.lower() not in tuple(Notify):
                raise self.error(section, key, f"{name} must be one of {', '.join(Notify)}")
            return Notify(value.lower())
        if kind == "security" and value not in _SECURITY:
            raise self.error(section, key, f"{name} must be one of {', '.join(_SECURITY)}")
        if kind == "url":
            if not _URL.fullmatch(value):
                raise self.error(
                    section, key, f'{name} must be a web address such as "https://games.example.org/referee"'
                )
            return value.rstrip("/")
        if kind == "path":
            return Path(value) if Path(value).is_absolute() else self.path.parent / value
        return value

    def server(self, kind: str, settings: dict[str, Any]) -> Server:
        if "host" not in settings:
            raise self.error(kind, None, f"[{kind}] needs a host")
        security = settings.get("security", "tls")
        if security == "none" and not _is_loopback(settings["host"]):
            raise self.error(
                kind,
                "security" if "security" in settings else None,
                f'{kind}.security = "none" sends passwords in the clear: only allowed '
                f"for a server on this machine (127.0.0.1, ::1, localhost)",
            )
        given = [k for k in ("password", "password_file", "password_env") if k in settings]
        if len(given) > 1:
            raise self.error(kind, given[1], f"{kind}: give only one of {', '.join(given)}")
        if kind == "imap" and (not settings.get("username") or not given):
            raise self.error(
                kind, None, "[imap] needs a username and a password (password, password_file or password_env)"
            )
        key = given[0] if given else None
        return Server(
            host=settings["host"],
            port=settings.get("port", _DEFAULT_PORTS[kind][security]),
            security=security,
            username=settings.get("username"),
            password=settings.get("password"),
            # read when the referee connects (Config.connecting), not now
            secret=Secret(f"{kind}.{key}", str(settings[key]), self.place(kind, key))
            if key in ("password_env", "password_file")
            else None,
            **{k: settings[k] for k in ("mailbox", "processed", "quarantine") if k in settings},
        )

    def secret(self, referee: dict[str, Any]) -> bytes | None:
        if "secret_key" in referee and "secret_key_file" in referee:
            raise self.error("referee", "secret_key_file", "give secret_key or secret_key_file, not both")
        if "secret_key_file" in referee:
            place = self.place("referee", "secret_key_file")
            return read_secret_file(referee["secret_key_file"], "referee.secret_key_file", place).encode()
        return referee["secret_key"].encode() if "secret_key" in referee else None

    def error(self, section: str, key: str | None, message: str) -> ConfigError:
        """The error, placed at the line setting ``key`` in ``[section]`` (with
        no key, at the section's header)."""
        return ConfigError(f"{self.place(section, key)}: {message}")

    def place(self, section: str, key: str | None) -> str:
        """``file:line`` of the line setting ``key`` in ``[section]`` (with no
        key, of the section's header); the file alone if there is none."""
        header = re.compile(rf"^\s*\[\s*{re.escape(section)}\s*\]")
        setting = re.compile(rf"^\s*{re.escape(key)}\s*=") if key else None
        inside = False
        for number, line in enumerate(self.lines, start=1):
            if line.lstrip().startswith("["):
                inside = bool(header.match(line))
                if inside and setting is None:
                    return f"{self.path}:{number}"
            elif inside and setting and setting.match(line):
                return f"{self.path}:{number}"
        return str(self.path)


def read_secret_file(path: Path, name: str, place: str) -> str:
    """A secret kept in a file of its own (its text, stripped); ConfigError
    naming the setting's ``place`` (file:line) if it cannot be read or is empty."""
    try:
        value = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "not UTF-8 text"
        raise ConfigError(f"{place}: {name}: cannot read {path} ({reason})") from None
    if not value:
        raise ConfigError(f"{place}: {name}: {path} is empty")
    return value


def _password_read(server: Server | None) -> Server | None:
    """``server`` with its password read, if it was kept outside the config."""
    if server is None or server.secret is None:
        return server
    return replace(server, password=server.secret.read(), secret=None)


def _size(value: Any) -> int | None:
    """Bytes from 5242880, "5MB", "5 MiB", "512KB" or "512k" (K and M count 1024)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value > 0 else None
    match = re.fullmatch(r"\s*(\d+)\s*([km]?)(i?b)?\s*", str(value), re.I)
    if not match or int(match[1]) == 0:
        return None
    return int(match[1]) * {"": 1, "k": 2**10, "m": 2**20}[match[2].lower()]


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
