"""The referee's settings, read from a TOML file (see config.example.toml)."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from referee.timeutil import parse_duration

DEFAULT_PATH = Path("referee.toml")
_ADDRESS = re.compile(r"^[^@\s<>]+@[^@\s<>]+$")

# section -> setting -> kind; the one place that says what a config file may hold
_SETTINGS = {
    "referee": {"address": "address", "name": "text", "database": "path", "templates": "path"},
    "defaults": {"deadline": "duration", "settle": "duration"},
}


def is_address(text: str) -> bool:
    """A bare mail address, local@domain: what seats and the referee are."""
    return bool(_ADDRESS.match(text))


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file, line and setting."""


@dataclass(frozen=True)
class Config:
    address: str = "referee@localhost"
    name: str = "Referee"
    database: Path = Path("games.db")
    templates: Path | None = None
    deadline: timedelta = timedelta(days=3)
    settle: timedelta = timedelta(0)

    @property
    def domain(self) -> str:
        return self.address.rpartition("@")[2]



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
    return _from_data(data, path, text)


def _from_data(data: dict, path: Path, text: str) -> Config:
    values: dict = {}
    for section, settings in data.items():
        if section not in _SETTINGS or not isinstance(settings, dict):
            raise ConfigError(f"{_where(path, text, section)}: unknown section [{section}]")
        for key, value in settings.items():
            kind = _SETTINGS[section].get(key)
            if kind is None:
                raise ConfigError(f"{_where(path, text, key)}: unknown setting {section}.{key}")
            values[key] = _convert(kind, value, path, text, f"{section}.{key}", key)
    return Config(**values)


def _convert(kind: str, value, path: Path, text: str, name: str, key: str):
    where = _where(path, text, key)
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {name} must be a string in quotes")
    if kind == "duration":
        try:
            return parse_duration(value)
        except ValueError as error:
            raise ConfigError(f"{where}: {name}: {error}") from None
    if kind == "address" and not is_address(value):
        raise ConfigError(f"{where}: {name} must be a mail address such as referee@example.org")
    if kind == "path":
        return (path.parent / value) if not Path(value).is_absolute() else Path(value)
    return value


def _where(path: Path, text: str, key: str) -> str:
    """``file:line`` of the first line that sets ``key`` (or opens section ``key``)."""
    pattern = re.compile(rf"^\s*(\[\s*{re.escape(key)}\s*\]|{re.escape(key)}\s*=)")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return f"{path}:{number}"
    return str(path)
