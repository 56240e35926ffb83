"""The ``referee`` command, run in-process against a config and a database in
tmp_path, with the fake clock."""

from __future__ import annotations

import email
import io
import json
import os
import re
import stat
import sys
from datetime import datetime, timedelta
from email import policy
from pathlib import Path

import pytest
from conftest import PLAYERS, reply

from referee import config as config_module
from referee.cli import main
from referee.engine import Engine
from referee.engine.phases import Phases
from referee.rules import GAMES
from referee.store import Store
from referee.tables import deadlines
from referee.timeutil import show_duration

ALICE, BOB, CAROL = PLAYERS


@pytest.fixture
def cfg(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv("REFEREE_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # a stray ./referee.toml or games.db lands here, not in the repo
    path = tmp_path / "referee.toml"
    path.write_text('[referee]\naddress = "referee@example.org"\ndatabase = "games.db"\n')
    return path


@pytest.fixture
def run(cfg, clock, capsys):
    """``run(*args)`` -> (exit status, stdout, stderr), with --config first."""

    def run(*args: str, config: Path | None = cfg) -> tuple[int, str, str]:
        argv = (["--config", str(config)] if config else []) + list(args)
        status = main(argv, clock=clock)
        out, err = capsys.readouterr()
        return status, out, err

    return run


def new_game(run) -> int:
    args = ["new", "pure-skill"] + [x for p in PLAYERS for x in ("--player", p)]
    status, out, err = run(*args)
    assert status == 0, err
    return int(out.splitlines()[-1])


def player_reply(cfg: Path, clock, player: str, body: str, **kwargs) -> bytes:
    """A player's reply to their game mail, to their private reply address
    (whose token the referee made with the key it keeps in games.db)."""
    config = config_module.load(cfg)
    return reply(Engine(Store(config.database), config, clock), player, body, **kwargs)


def one_line_error(result, expected_status: int = 2) -> str:
    status, _out, err = result
    assert status == expected_status
    assert "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.strip()
    return err


def status_json(run, game: int) -> dict:
    status, out, err = run("status", str(game), "--json")
    assert status == 0, err
    return json.loads(out)


# -- the commands ------------------------------------------------------------------------------


def test_new_prints_the_game_id_alone_on_the_last_line(run):
    status, out, err = run("new", "pure-skill", "--player", ALICE, "--player", BOB, "--player", CAROL)
    assert status == 0 and err == ""
    last = out.rstrip("\n").splitlines()[-1]
    assert re.fullmatch(r"\d+", last)
    assert status_json(run, int(last))["id"] == int(last)
    assert new_game(run) == int(last) + 1


def test_status_json_has_the_promised_shape(run, clock):
    game = new_game(run)
    data = status_json(run, game)
    assert {"id", "kind", "state", "phase", "players", "winner", "seed_commitment", "seed"} <= set(data)
    assert data["id"] == game and data["kind"] == "pure-skill" and data["state"] == "running"
    phase = data["phase"]
    assert phase["number"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", phase["deadline"])
    deadline = datetime.fromisoformat(phase["deadline"].replace("Z", "+00:00"))
    assert deadline == clock() + timedelta(days=3)
    assert phase["waiting_for"] == PLAYERS
    assert [p["address"] for p in data["players"]] == PLAYERS
    assert all(p["score"] == 0 and p["bot"] is False for p in data["players"])
    assert data["winner"] is None
    assert re.fullmatch(r"[0-9a-f]{64}", data["seed_commitment"])
    assert data["seed"] is None


def test_a_game_of_bots_shows_its_seed_when_it_ends(run):
    _status, out, _ = run("new", "pure-skill", "--bots", "3", "--name", "demo")
    data = status_json(run, int(out.splitlines()[-1]))
    assert data["state"] == "finished" and data["phase"] is None
    assert re.fullmatch(r"[0-9a-f]{64}", data["seed"])
    assert all(p["bot"] for p in data["players"])
    assert sum(p["score"] for p in data["players"]) <= sum(range(1, 14))


def test_status_without_json_is_readable(run):
    game = new_game(run)
    status, out, _err = run("status", str(game))
    assert status == 0
    assert status_json(run, game)["seed_commitment"] in out
    assert all(address in out for address in PLAYERS)
    status, out, _err = run("status")
    assert status == 0 and "pure-skill" in out


def test_a_command_flushes_what_it_wrote_and_a_reading_one_writes_nothing(run, cfg):
    game = new_game(run)
    store = Store(cfg.parent / "games.db")
    syncs = store.get_meta("syncs")
    assert syncs is not None  # `new` flushed its game to disk before printing its number
    assert run("status", str(game))[0] == 0 and run("status")[0] == 0
    assert store.get_meta("syncs") == syncs  # status took no write lock


@pytest.mark.parametrize("kind", sorted(GAMES))
def test_status_of_a_game_of_every_kind_just_started_is_readable(run, kind):
    """Before any phase resolved: the history is the seats, nothing else yet."""
    seats = PLAYERS + ["dave@example.org"]
    rules = GAMES[kind]
    players = [arg for address in seats[: rules.min_seats] for arg in ("--player", address)]
    status, out, err = run("new", kind, *players)
    assert status == 0, err
    game = int(out.split()[-1])
    status, out, err = run("status", str(game))
    assert status == 0, err
    assert f"Game {game} ({kind}): running" in out
    assert all(address in out for address in seats[: rules.min_seats])


def test_kinds_lists_pure_skill(run):
    status, out, _err = run("kinds", config=None)
    assert status == 0
    assert any(line.split()[0] == "pure-skill" for line in out.splitlines())


def test_every_command_that_changes_a_game_refreshes_its_pages(run, cfg, clock, tmp_path):
    """With site_dir set, new, ingest, resign and tick each leave the site
    showing what they did, without a render; reading commands write nothing."""
    cfg.write_text(cfg.read_text() + 'site_dir = "site"\n')
    site = tmp_path / "site"
    game = new_game(run)
    page = site / f"games/{game}/index.html"
    assert "Round 1 of 13" in page.read_text()
    mail = tmp_path / "alice.eml"
    mail.write_bytes(player_reply(cfg, clock, ALICE, "bid 5", received=clock()))
    for command in (["ingest", str(mail)], ["resign", str(game), BOB], ["tick"]):
        before = page.read_text()
        if command == ["tick"]:
            clock.advance(days=4)
        assert run(*command)[0] == 0
        assert page.read_text() != before, command
    assert "Round 2 of 13" in page.read_text()
    written = {path: path.stat().st_mtime_ns for path in site.rglob("*")}
    assert run("status", str(game))[0] == 0
    assert {path: path.stat().st_mtime_ns for path in site.rglob("*")} == written


# Mail servers whose passwords are kept outside the config, neither of them at hand.
SERVERS = """
[imap]
host = "127.0.0.1"
security = "none"
username = "referee@example.org"
password_env = "REFEREE_TEST_UNSET_IMAP"

[smtp]
host = "127.0.0.1"
security = "none"
username = "referee@example.org"
password_file = "smtp-password"
"""
NOT_CHECKED = [
    "imap.password_env: $REFEREE_TEST_UNSET_IMAP is not set; run and serve will need it",
    "smtp.password_file: cannot read {dir}/smtp-password (No such file or directory); run and serve will need it",
]


def test_commands_that_connect_to_no_mail_server_need_no_password(run, cfg, clock, tmp_path, monkeypatch):
    """Only run and serve connect: every other command works with neither
    password at hand, and status says what it could not check."""
    monkeypatch.delenv("REFEREE_TEST_UNSET_IMAP", raising=False)
    cfg.write_text(cfg.read_text() + SERVERS)
    game = new_game(run)
    mail = tmp_path / "alice.eml"
    mail.write_bytes(player_reply(cfg, clock, ALICE, "bid 5", received=clock()))
    for command in (
        ["status", str(game)],
        ["ingest", str(mail)],
        ["resign", str(game), BOB],
        ["tick"],
        ["outbox"],
        ["render", "--dir", str(tmp_path / "site")],
        ["backup", str(tmp_path / "copy.db")],
        ["restore", str(tmp_path / "copy.db")],
        ["kinds"],
    ):
        status, _out, err = run(*command)
        assert status == 0 and "password" not in err, (command, err)
    status, out, err = run("status")
    assert status == 0 and err == ""
    not_checked = [line.removeprefix("  not checked: ") for line in out.splitlines() if "not checked: " in line]
    assert not_checked == [line.format(dir=tmp_path) for line in NOT_CHECKED]
    assert "mail servers: not connected to (`referee run --once` tries them and their passwords)" in out
    status, out, _err = run("status", "--json")
    assert json.loads(out)["health"]["not_checked"] == [line.format(dir=tmp_path) for line in NOT_CHECKED]
    # with both at hand, nothing is left unchecked but what only connecting tells
    monkeypatch.setenv("REFEREE_TEST_UNSET_IMAP", "imap-secret")
    (tmp_path / "smtp-password").write_text("smtp-secret\n")
    status, out, _err = run("status")
    assert status == 0 and "not checked: " not in out and "mail servers: not connected to" in out
    assert json.loads(run("status", "--json")[1])["health"]["not_checked"] == []


def test_status_without_mail_servers_says_nothing_of_them(run):
    status, out, _err = run("status")
    assert status == 0 and "mail servers" not in out and "not checked" not in out


@pytest.mark.parametrize("command", [["run", "--once"], ["serve"]])
def test_run_and_serve_need_the_passwords_and_name_the_line_that_sets_them(run, cfg, tmp_path, monkeypatch, command):
    """Read before games.db is opened: a run that cannot log in touches nothing."""
    monkeypatch.delenv("REFEREE_TEST_UNSET_IMAP", raising=False)
    cfg.write_text(cfg.read_text() + SERVERS)
    lines = cfg.read_text().splitlines()
    imap_line = lines.index('password_env = "REFEREE_TEST_UNSET_IMAP"') + 1
    smtp_line = lines.index('password_file = "smtp-password"') + 1
    err = one_line_error(run(*command))
    assert err == f"referee: {cfg}:{imap_line}: imap.password_env: $REFEREE_TEST_UNSET_IMAP is not set\n"
    monkeypatch.setenv("REFEREE_TEST_UNSET_IMAP", "imap-secret")
    err = one_line_error(run(*command))
    assert err.startswith(f"referee: {cfg}:{smtp_line}: smtp.password_file: cannot read ")
    (tmp_path / "smtp-password").write_text("\n")
    err = one_line_error(run(*command))
    assert err.endswith("smtp-password is empty\n") and f"{cfg}:{smtp_line}: " in err
    assert not (tmp_path / "games.db").exists()


def test_ingest_a_file_and_from_stdin(run, cfg, clock, tmp_path, monkeypatch):
    game = new_game(run)
    mail = tmp_path / "alice.eml"
    mail.write_bytes(player_reply(cfg, clock, ALICE, "bid 5", received=clock()))
    status, out, err = run("ingest", str(mail))
    assert status == 0 and out.startswith("move")
    assert "bid" not in out + err and "5" not in out + err  # procmail and cron keep this output
    assert status_json(run, game)["phase"]["waiting_for"] == [BOB, CAROL]
    raw = player_reply(cfg, clock, BOB, "bid 6", received=clock())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
    status, out, err = run("ingest", "-")
    assert status == 0 and out.startswith("move")
    assert status_json(run, game)["phase"]["waiting_for"] == [CAROL]
    # the same file again is a duplicate, not a second move
    status, out, err = run("ingest", str(mail))
    assert status == 0 and out.startswith("duplicate")


def test_tick_fills_missing_bids_after_the_deadline(run, clock):
    game = new_game(run)
    status, out, _ = run("tick")
    assert status == 0 and out == ""
    said = []
    for _ in range(3 * 24 + 1):  # cron, hourly, past the 3-day deadline
        clock.advance(hours=1)
        status, out, _ = run("tick")
        assert status == 0
        said += out.splitlines()
    assert said == [
        f"reminded 3 player(s) in game {game} Round 1 of 13",  # a day before (the default)
        f"resolved game {game} Round 1 of 13",
    ]
    data = status_json(run, game)
    assert data["phase"]["number"] == 2
    assert data["phase"]["waiting_for"] == PLAYERS


def test_resign_makes_the_seat_a_bot(run):
    game = new_game(run)
    status, _out, _err = run("resign", str(game), BOB)
    assert status == 0
    players = status_json(run, game)["players"]
    assert [p["bot"] for p in players] == [False, True, False]
    assert BOB not in status_json(run, game)["phase"]["waiting_for"]


def test_outbox_writes_each_mail_as_an_eml_file(run, tmp_path):
    new_game(run)
    status, listing, _ = run("outbox")
    assert status == 0
    queued = [line for line in listing.splitlines() if line.strip()]
    assert len(queued) == 6  # a start announcement and a prompt for each of three players
    out_dir = tmp_path / "out"
    status, _out, _ = run("outbox", "--write", str(out_dir))
    assert status == 0
    files = sorted(out_dir.glob("*.eml"))
    assert len(files) == len(queued)
    ids = set()
    for path in files:
        message = email.message_from_bytes(path.read_bytes(), policy=policy.default)
        assert message["Message-ID"] and message["Date"]
        assert message["Auto-Submitted"] == "auto-generated"
        assert message["To"] in PLAYERS
        assert message.get_content_type() == "text/plain"
        ids.add(message["Message-ID"])
    assert len(ids) == len(files)


def test_init_writes_a_config_that_loads(tmp_path, run):
    target = tmp_path / "fresh" / "referee.toml"
    target.parent.mkdir()
    status, _out, err = run("init", config=target)
    assert status == 0, err
    loaded = config_module.load(target)
    assert "@" in loaded.address
    assert loaded.database.parent == target.parent
    assert loaded.deadline == timedelta(days=3)
    # a second init does not overwrite it
    one_line_error(run("init", config=target))
    status, _, _ = run("init", "--force", config=target)
    assert status == 0


def test_init_makes_the_secret_key_file_and_says_so(tmp_path, run):
    target = tmp_path / "fresh" / "referee.toml"
    target.parent.mkdir()
    umask = os.umask(0o022)  # a usual umask, which leaves a new file readable by all
    try:
        status, out, err = run("init", config=target)
    finally:
        os.umask(umask)
    assert status == 0, err
    key = target.parent / "secret.key"
    assert f"made {key}" in out and "mode 600" in out
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert re.fullmatch(r"[0-9a-f]{64}\n", key.read_text())
    loaded = config_module.load(target)
    assert loaded.secret_key == key.read_text().strip().encode()  # the config names it
    before = key.read_text()
    status, out, _ = run("init", "--force", config=target)
    assert status == 0 and f"kept {key}" in out
    assert key.read_text() == before  # a key in use is never replaced


def _deadline_span(run, game: str, config: Path) -> timedelta:
    _, out, _ = run("status", game, "--json", config=config)
    data = json.loads(out)
    when = {k: datetime.fromisoformat(data[k].replace("Z", "+00:00")) for k in ("created_at",)}
    deadline = datetime.fromisoformat(data["phase"]["deadline"].replace("Z", "+00:00"))
    return deadline - when["created_at"]


def test_a_config_can_set_the_default_deadline(tmp_path, run):
    path = tmp_path / "short.toml"
    path.write_text('[referee]\naddress = "ref@example.org"\ndatabase = "short.db"\n[defaults]\ndeadline = "2h"\n')
    _, out, _ = run("new", "pure-skill", "--bots", "2", "--player", ALICE, config=path)
    assert _deadline_span(run, out.splitlines()[-1], path) == timedelta(hours=2)
    _, out, _ = run("new", "pure-skill", "--bots", "2", "--player", BOB, "--deadline", "1d12h", config=path)
    assert _deadline_span(run, out.splitlines()[-1], path) == timedelta(hours=36)
    assert (tmp_path / "short.db").exists()  # relative to the config file


# -- errors: one line on stderr, exit status 2 ------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["bogus"], id="unknown subcommand"),
        pytest.param([], id="no subcommand"),
        pytest.param(["resign", "1"], id="missing argument"),
        pytest.param(["status", "one"], id="game id not a number"),
        pytest.param(["status", "99"], id="unknown game id"),
        pytest.param(["resign", "99", ALICE], id="resign in an unknown game"),
        pytest.param(["new", "chess", "--player", ALICE], id="unknown kind"),
        pytest.param(["new", "pure-skill", "--player", ALICE], id="too few players"),
        pytest.param(["new", "pure-skill", "--bots", "4"], id="too many seats"),
        pytest.param(["new", "pure-skill", "--player", ALICE, "--player", ALICE, "--bots", "1"], id="one player twice"),
        pytest.param(["new", "pure-skill", "--player", "alice", "--bots", "2"], id="not an address"),
        pytest.param(["new", "pure-skill", "--bots", "3", "--deadline", "3x"], id="bad duration"),
        pytest.param(["new", "pure-skill", "--bots", "3", "--deadline", "0s"], id="zero deadline"),
        pytest.param(["new", "pure-skill", "--bots", "3", "--option", "ties=sometimes"], id="bad option value"),
        pytest.param(["new", "pure-skill", "--bots", "3", "--option", "colour=red"], id="unknown option"),
        pytest.param(["ingest", "no-such-file.eml"], id="missing mail file"),
    ],
)
def test_a_bad_command_line_is_one_line_and_status_2(run, args):
    err = one_line_error(run(*args))
    assert err.startswith("referee: ")


def test_errors_name_what_is_wrong(run):
    assert "99" in one_line_error(run("status", "99"))
    assert "chess" in one_line_error(run("new", "chess", "--player", ALICE))
    assert "3x" in one_line_error(run("new", "pure-skill", "--bots", "3", "--deadline", "3x"))


def test_the_keeper_cannot_resign_someone_without_a_seat(run):
    game = new_game(run)
    one_line_error(run("resign", str(game), "dave@example.org"))


@pytest.mark.parametrize(
    "text, where",
    [
        pytest.param('[referee]\naddress = "referee@example.org"\ndatabase = \n', "line 3", id="invalid TOML"),
        pytest.param('[referee]\naddress = "referee@example.org"\ncolour = "blue"\n', ":3", id="unknown setting"),
        pytest.param('[referee]\naddress = "r@example.org"\n\n[extras]\nx = "1"\n', ":4", id="unknown section"),
        pytest.param('[defaults]\ndeadline = "3 fortnights"\n', ":2", id="bad duration"),
        pytest.param("[defaults]\ndeadline = 3\n", ":2", id="not a string"),
        pytest.param('[referee]\naddress = "nobody"\n', ":2", id="bad address"),
    ],
)
def test_a_broken_config_is_one_line_naming_the_file(run, tmp_path, text, where):
    path = tmp_path / "broken.toml"
    path.write_text(text)
    err = one_line_error(run("status", config=path))
    assert str(path) in err
    assert (f"{path}{where}" if where.startswith(":") else where) in err


def test_an_unknown_setting_names_the_file_and_line(run, tmp_path):
    path = tmp_path / "extra.toml"
    path.write_text('[referee]\naddress = "referee@example.org"\n\ncolour = "blue"\n')
    err = one_line_error(run("status", config=path))
    assert f"{path}:4" in err and "colour" in err


def test_invalid_toml_is_one_line(run, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[referee\naddress = "referee@example.org"\n')
    err = one_line_error(run("status", config=path))
    assert str(path) in err


def test_a_config_that_does_not_exist_is_one_line(run, tmp_path):
    missing = tmp_path / "nowhere.toml"
    err = one_line_error(run("status", config=missing))
    assert str(missing) in err
    assert not missing.exists()


def test_a_config_that_is_not_utf8_is_one_line(run, tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('[referee]\nname = "Arbitre Léo"\n'.encode("latin-1"))
    one_line_error(run("status", config=path))


def test_init_into_a_missing_folder_is_one_line(run, tmp_path):
    one_line_error(run("init", config=tmp_path / "no" / "such" / "referee.toml"))


def test_a_database_in_a_missing_folder_is_one_line(run, tmp_path):
    path = tmp_path / "elsewhere.toml"
    path.write_text('[referee]\naddress = "referee@example.org"\ndatabase = "no/such/games.db"\n')
    err = one_line_error(run("status", config=path), expected_status=3)  # a storage fault
    assert "no/such/games.db" in err and "folder" in err


# -- found in review ---------------------------------------------------------------------------


def test_init_writes_where_referee_config_points(run, tmp_path, monkeypatch):
    target = tmp_path / "club.toml"
    monkeypatch.setenv("REFEREE_CONFIG", str(target))
    status, _out, err = run("init", config=None)
    assert status == 0, err
    from referee.resources import shipped

    example = shipped("config.example.toml").read_text()
    assert target.read_text() == example.replace('# secret_key_file = "', 'secret_key_file = "', 1)
    assert config_module.load() == config_module.load(target)  # and the referee reads it


def test_outbox_write_into_a_file_is_one_line(run, tmp_path):
    new_game(run)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    one_line_error(run("outbox", "--write", str(blocker)))


def test_outbox_mark_sent_hands_each_mail_over_once(run, tmp_path):
    new_game(run)
    status, _out, err = run("outbox", "--write", str(tmp_path / "one"), "--mark-sent")
    assert status == 0, err
    written = sorted((tmp_path / "one").glob("*.eml"))
    assert len(written) == 6  # 3 announcements + 3 prompts
    status, _out, err = run("outbox", "--write", str(tmp_path / "two"), "--mark-sent")
    assert status == 0 and list((tmp_path / "two").glob("*.eml")) == []
    one_line_error(run("outbox", "--mark-sent"))


@pytest.mark.parametrize("duration", ["99999999999d", "367d", "53w"])
def test_a_deadline_longer_than_a_year_is_one_line(run, duration):
    one_line_error(run("new", "pure-skill", "--bots", "3", "--deadline", duration))


def test_a_failed_ingest_exits_non_zero_and_keeps_the_mail(run, cfg, clock, tmp_path, monkeypatch):
    new_game(run)
    monkeypatch.setattr(Phases, "take_move", lambda self, *args, **kwargs: 1 / 0)
    path = tmp_path / "bid.eml"
    path.write_bytes(player_reply(cfg, clock, ALICE, "bid 7"))
    status, out, _err = run("ingest", str(path))
    assert status == 1 and out.startswith("failed")


@pytest.mark.parametrize("kind", sorted(k for k, g in GAMES.items() if g.min_seats <= 3 <= g.max_seats))
def test_the_demo_gives_every_phase_of_every_game_its_deadline(tmp_path, kind):
    """`referee demo --deadline 2s`: no game's own longer turns (Bluff's 12
    hours) keep the demo waiting for its silent player."""
    from referee.demo import PLAYERS as DEMO_PLAYERS
    from referee.demo import demo_config

    config = demo_config(tmp_path, timedelta(seconds=2), tmp_path / "box", 2525)
    engine = Engine(Store(config.database), config)
    game = engine.new_game(kind, DEMO_PLAYERS)
    assert set(deadlines(engine.store.game(game)).values()) == {timedelta(seconds=2)}


@pytest.mark.parametrize("kind", sorted(GAMES))
def test_new_help_is_true_of_every_game_s_turn_and_decision_deadlines(capsys, engine, kind):
    """`referee new --help` names the games' own deadlines (Bluff's 12 and 6
    hours), and what it says holds for every game: unset, a turn lasts the
    game's own, else --deadline; a decision the game's own, else the turn's
    (issue 31, item 7)."""
    with pytest.raises(SystemExit):
        main(["new", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "else --deadline)" in said and "else the turn deadline)" in said
    game, round_ = GAMES[kind], timedelta(hours=1)
    made = deadlines(engine.store.game(engine.new_game(kind, [ALICE], bots=game.min_seats - 1, deadline=round_)))
    for timer, otherwise in (("turn", round_), ("decision", made["turn"])):
        own = game.deadlines.get(timer)
        assert made[timer] == (own or otherwise)
        assert (f"{kind}: {show_duration(own)}" in said) if own else f"{kind}:" not in said


# -- nothing from a mail acts on the keeper's terminal (issue 29, item 6) --------------


def test_a_mails_control_characters_reach_neither_the_terminal_nor_the_log(cfg, tmp_path):
    """A Message-ID that decodes (RFC 2047) to an escape sequence, and a
    subject with a line break and a bidi override: `referee -v ingest` prints
    and logs them as visible escapes, one log line each."""
    import subprocess

    mail = tmp_path / "evil.eml"
    mail.write_bytes(
        b"From: mallory@example.net\r\nTo: referee@example.org\r\n"
        b"Subject: =?utf-8?q?hi=1B]0;pwned=07=E2=80=AEthere?=\r\n"
        b"Message-ID: =?utf-8?q?<=1B[2J=1B]0;owned=07@example.net>?=\r\n"
        b"\r\nhelp\r\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "referee", "--config", str(cfg), "-vv", "ingest", str(mail)],
        capture_output=True,
        cwd=cfg.parent,
        timeout=60,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80\xae", out), out
    assert b"\\x1b" in out  # said, visibly
    for line in done.stderr.decode().splitlines():
        assert re.match(r"\d{4}-\d\d-\d\d [\d:,]+ [A-Z]+ ", line) or line.startswith(("Traceback", " ")), line


def test_the_log_formatter_keeps_one_line_and_a_traceback_its_lines():
    import logging

    from referee.terminal import LogFormatter

    formatter = LogFormatter("%(levelname)s %(message)s")
    record = logging.LogRecord(
        "referee", logging.INFO, __file__, 1, "from %s: %s", ("a\x1b[2J", "b\nWARNING forged"), None
    )
    assert formatter.format(record) == "INFO from a\\x1b[2J: b\\x0aWARNING forged"
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("referee", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    assert formatter.format(record).count("\n") >= 2


def test_the_keepers_hands_at_the_shell(run, cfg, clock, tmp_path, monkeypatch):
    """extend, pause/resume, replace, say and cancel, as a keeper types them:
    each prints what it did, refreshes the site, and is on the record that
    the last verifies."""
    cfg.write_text(cfg.read_text() + 'site_dir = "site"\n')
    game = new_game(run)
    page = tmp_path / f"site/games/{game}/index.html"
    status, out, err = run("extend", str(game), "8d")
    assert (status, out) == (2, "") and "longer than the longest allowed" in err and "--force" in err
    status, out, _ = run("extend", str(game), "8d", "--force", "--why", "the club's holidays")
    assert status == 0 and out.startswith(f"game {game} Round 1 of 13: deadline moved from ")
    assert "the club&#39;s holidays" in page.read_text()
    assert run("pause", str(game), "--for", "2d")[1] == f"game {game} paused until 2026-11-23T12:00:00Z\n"
    assert "Paused by the keeper" in page.read_text()
    assert run("pause", str(game))[2] == f"referee: game {game} is paused already\n"
    clock.advance(days=1)
    assert run("resume", str(game))[1].startswith(f"game {game} resumed: deadline moved from ")
    assert run("replace", str(game), BOB, "dora@example.net")[1] == (
        f"game {game}: dora@example.net plays seat 2 (was {BOB})\n"
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO("Round 2 starts late.\n"))
    assert run("say", str(game), "-")[1] == f"game {game}: said to everyone\n"
    assert run("say", str(game), "Please answer.", "--seat", "3")[1] == f"game {game}: said to seat 3\n"
    status, _, err = run("cancel", str(game))
    assert status == 2 and "--why" in err
    assert run("cancel", str(game), "--why", "the club closed")[1] == f"game {game} cancelled in Round 1 of 13\n"
    assert run("extend", str(game), "1d")[2] == f"referee: game {game} has ended\n"
    status, out, _ = run("status", str(game))
    lines = [line for line in out.splitlines() if line.startswith("Phase 1,")]
    assert [line.split(", ", 2)[2].split(":")[0] for line in lines] == ["shell"] * 7
    assert "seat 2 taken over by dora@example.net from bob@example.org" in out
    record = tmp_path / "record.json"
    record.write_bytes((tmp_path / f"site/games/{game}/record.json").read_bytes())
    status, out, _ = run("verify", str(record), config=None)
    assert status == 0 and "the game was cancelled: the club closed" in out
