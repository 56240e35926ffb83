"""The config file: every setting checked at load, errors named with file:line;
the mail servers' passwords kept outside it read when the referee connects."""

import re
from datetime import timedelta
from pathlib import Path

import pytest

from referee.config import ConfigError, load

GOOD = """\
[referee]
address = "referee@example.org"
database = "games.db"

[imap]
host = "imap.example.org"
username = "referee@example.org"
password_env = "REFEREE_TEST_IMAP"

[smtp]
host = "smtp.example.org"
security = "starttls"
username = "referee@example.org"
password_file = "smtp-password"

[defaults]
deadline = "2d"
reminder = "12h"

[outage]
gap = "3h"
grace = "1d"
"""


@pytest.fixture
def write(tmp_path: Path):
    def write(text: str) -> Path:
        path = tmp_path / "referee.toml"
        path.write_text(text)
        return path

    return write


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load(path)
    return str(caught.value)


def test_a_full_config_loads_with_passwords_from_env_and_file(write, tmp_path, monkeypatch):
    monkeypatch.setenv("REFEREE_TEST_IMAP", "imap-secret")
    (tmp_path / "smtp-password").write_text("smtp-secret\n")
    config = load(write(GOOD)).connecting()
    assert config.imap.password == "imap-secret" and config.imap.port == 993  # tls by default
    assert config.imap.mailbox == "INBOX" and config.imap.processed == "processed"
    assert config.smtp.password == "smtp-secret" and config.smtp.port == 587
    assert config.database == tmp_path / "games.db"  # relative to the config file
    assert (config.deadline, config.reminder) == (timedelta(days=2), timedelta(hours=12))
    assert (config.outage_gap, config.outage_grace) == (timedelta(hours=3), timedelta(days=1))


def test_defaults_are_the_documented_ones(write):
    config = load(write('[referee]\naddress = "referee@example.org"\n'))
    assert config.deadline == timedelta(days=3) and config.reminder == timedelta(days=1)
    assert config.outage_gap == timedelta(hours=6) and config.outage_grace == timedelta(hours=24)
    assert config.imap is None and config.smtp is None and config.maildir is None
    assert config.keep_sent_mail == timedelta(days=90)


def test_sent_mail_kept_for_a_while_or_for_ever(write):
    assert load(write('[referee]\nkeep_sent_mail = "30d"\n')).keep_sent_mail == timedelta(days=30)
    assert load(write('[referee]\nkeep_sent_mail = "0s"\n')).keep_sent_mail is None


def test_zero_turns_reminders_and_the_guard_off(write):
    config = load(write('[defaults]\nreminder = "0s"\n[outage]\ngap = "0s"\n'))
    assert config.reminder is None and config.outage_gap is None


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (
            '[imap]\nhost = "mail.example.org"\nsecurity = "none"\nusername = "r"\npassword = "p"\n',
            3,
            "only allowed for a server on this machine",
        ),
        ('[imap]\nhost = "127.0.0.1"\nsecurity = "none"\n', 1, "needs a username and a password"),
        ('[imap]\nusername = "r"\n', 1, "needs a host"),
        ('[smtp]\nhost = "h"\nport = 99999\n', 3, "port number"),
        ('[smtp]\nhost = "h"\nsecurity = "ssl"\n', 3, "one of tls, starttls, none"),
        ('[smtp]\nhost = "h"\npassword = "a"\npassword_env = "B"\n', 4, "only one of"),
        ('\n[referee]\naddress = "not an address"\n', 3, "must be a mail address"),
        ('[referee]\nsite_url = "games.example.org"\n', 2, "must be a web address"),
        ('[referee]\nsite_url = "https://games.example.org/a b"\n', 2, "must be a web address"),
        ('[referee]\nsite_url = "https://games.example.org/?x=1"\n', 2, "must be a web address"),
        ('[defaults]\nreminder = "soon"\n', 2, "not a duration"),
        (
            '[imap]\nhost = "127.0.0.1"\nusername = "u"\npassword = "p"\n[maildir]\npath = "m"\n',
            5,
            "either [imap] or [maildir]",
        ),
        ('[imaps]\nhost = "h"\n', 1, "unknown section"),
        ('[smtp]\nhost = "h"\nuser = "u"\n', 3, "unknown setting smtp.user"),
    ],
)
def test_a_wrong_setting_is_named_with_its_file_and_line(write, text, line, words):
    path = write(text)
    message = error_of(path)
    assert message.startswith(f"{path}:{line}: ")
    assert words in message


def test_passwords_kept_outside_the_config_are_read_only_when_connecting(write, tmp_path, monkeypatch):
    """A command that connects to no server loads the config without them."""
    monkeypatch.delenv("REFEREE_TEST_IMAP", raising=False)
    config = load(write(GOOD))  # no $REFEREE_TEST_IMAP, no smtp-password file: loads all the same
    assert config.imap.password is None and config.smtp.password is None
    assert config.unread_passwords() == [
        "imap.password_env: $REFEREE_TEST_IMAP is not set",
        f"smtp.password_file: cannot read {tmp_path / 'smtp-password'} (No such file or directory)",
    ]
    monkeypatch.setenv("REFEREE_TEST_IMAP", "imap-secret")
    (tmp_path / "smtp-password").write_text("smtp-secret\n")
    assert config.unread_passwords() == []
    connecting = config.connecting()
    assert (connecting.imap.password, connecting.smtp.password) == ("imap-secret", "smtp-secret")
    assert connecting.connecting() == connecting  # read once: nothing left to read


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('[imap]\nhost = "h"\nusername = "u"\npassword_env = "REFEREE_NO_SUCH_VAR"\n', 4, "is not set"),
        ('[smtp]\nhost = "h"\npassword_file = "missing.txt"\n', 3, "cannot read"),
        ('[smtp]\nhost = "h"\n\npassword_file = "empty.txt"\n', 4, "empty.txt is empty"),
    ],
)
def test_a_password_that_cannot_be_read_is_named_with_its_file_and_line_when_connecting(
    write, tmp_path, text, line, words
):
    (tmp_path / "empty.txt").write_text("\n")
    path = write(text)
    config = load(path)  # loads: only a command that connects needs it
    with pytest.raises(ConfigError) as caught:
        config.connecting()
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: ")
    assert words in message


def test_the_sites_address_is_kept_without_its_last_slash(write):
    assert load(write('[referee]\nsite_url = "https://games.example.org/referee/"\n')).site_url == (
        "https://games.example.org/referee"
    )
    assert load(write('[referee]\nsite_url = "http://localhost:8000"\n')).site_url == "http://localhost:8000"
    assert load(write("[referee]\n")).site_url is None


def test_loopback_may_go_without_tls(write):
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.53"):
        text = f'[smtp]\nhost = "{host}"\nsecurity = "none"\n'
        assert load(write(text)).smtp.port == 25


def test_the_example_config_loads_as_shipped_and_with_its_servers_and_keepers_uncommented(write, monkeypatch):
    from referee.resources import shipped

    example = shipped("config.example.toml").read_text()
    assert load(write(example)).imap is None  # as shipped: a local referee, no servers
    monkeypatch.setenv("REFEREE_IMAP_PASSWORD", "i")
    monkeypatch.setenv("REFEREE_SMTP_PASSWORD", "s")
    lines, section = [], None
    for line in example.splitlines():
        if line.startswith("# ["):
            section = line[3:].split("]")[0]
        setting = line.removeprefix("# ")
        chosen = section in ("imap", "smtp", "keepers") and re.match(r"^(\[|[a-z_]+ = )", setting)
        if chosen and not setting.startswith(("password_file", "password =")):
            line = setting
        lines.append(line)
    config = load(write("\n".join(lines))).connecting()
    assert config.imap.host == "imap.example.org" and config.imap.password == "i"
    assert config.imap.mailbox == "INBOX" and config.imap.port == 993
    assert config.smtp.security == "starttls" and config.smtp.password == "s"
    assert config.keepers == ("keeper@example.org",) and not config.daily_summary
    assert (config.longest_extension, config.most_pause) == (timedelta(days=7), timedelta(days=30))


@pytest.mark.parametrize("name", [".done", "a/b", "", "x:y"])
def test_folder_names_are_checked_at_load(write, name):
    path = write(f'[maildir]\npath = "m"\nprocessed = "{name}"\n')
    assert error_of(path).startswith(f"{path}:3: maildir.processed must be a plain folder name")


@pytest.mark.parametrize(
    ("text", "size"), [("5MB", 5 * 2**20), ("512KB", 512 * 2**10), ("2 MiB", 2 * 2**20), ("1000", 1000), (4096, 4096)]
)
def test_message_size_limits_are_read(write, text, size):
    value = f'"{text}"' if isinstance(text, str) else text
    assert load(write(f"[referee]\nmax_message_size = {value}\n")).max_message_size == size


def test_a_bad_size_is_named(write):
    path = write('[referee]\nmax_message_size = "huge"\n')
    assert error_of(path).startswith(f"{path}:2: referee.max_message_size must be a size")


def test_keepers_are_read_folded_and_their_caps_have_defaults(write):
    config = load(write('[keepers]\naddresses = ["Keeper@Example.org", "keeper@example.org", "b@example.net"]\n'))
    assert config.keepers == ("keeper@example.org", "b@example.net")
    assert (config.longest_extension, config.most_pause, config.daily_summary) == (
        timedelta(days=7),
        timedelta(days=30),
        False,
    )
    capped = load(write('[keepers]\nlongest_extension = "2d"\nmost_pause = "10d"\ndaily_summary = true\n'))
    assert (capped.keepers, capped.longest_extension, capped.most_pause, capped.daily_summary) == (
        (),
        timedelta(days=2),
        timedelta(days=10),
        True,
    )


@pytest.mark.parametrize("value", ['"keeper@example.org"', '["not an address"]', "[1]"])
def test_keepers_must_be_a_list_of_addresses(write, value):
    path = write(f"[keepers]\naddresses = {value}\n")
    assert error_of(path) == (
        f'{path}:2: keepers.addresses must be a list of mail addresses such as ["keeper@example.org"]'
    )
