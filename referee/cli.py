"""The ``referee`` command: a thin shell around the engine.

Exit status: 0 done, or ``run``/``serve`` stopped by SIGTERM or SIGINT
(a clean stop, whenever it comes); 1 a pass cut short by a mail server
away (unreachable, gone, busy: nothing lost, the next run goes on), or by
memory run out (what it finished is filed, the next run goes on); 2 a
bad command line, config or request; 3 a storage fault (games.db full,
locked, read-only, damaged or too new: the line says what to do); 4 a mail
server refused the referee's account or settings (a wrong password, a TLS
setting that does not fit the port or the certificate, no such mailbox:
fix the config or the account; nothing lost meanwhile); 5 ``run --once``
found another run holding the lock (busy: it did nothing; the other run
does the work).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import signal
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from referee import config as config_module
from referee import launch
from referee.errors import Busy, EngineError
from referee.resources import game_file, shipped
from referee.rules import GAMES
from referee.rules.api import Press
from referee.store import (
    FaultAside,
    GameState,
    Notify,
    OutcomeCode,
    Snapshot,
    StorageFault,
    Store,
    Unreadable,
)
from referee.terminal import LogFormatter, PrintableStream
from referee.timeutil import (
    Clock,
    from_iso,
    iso,
    parse_duration,
    show_duration,
    utc_now,
)

# A command imports what only it needs when it runs, not here: the engine
# once a command has been parsed (not for `--help` or a bad command line),
# the mail servers' clients and asyncio for `run` and `serve` (not for
# `ingest -`, which procmail may start for every mail), the site when a
# command renders it.  Each costs a process tens of milliseconds of CPU
# (issue 36; `python -X importtime -c "import referee.cli"`).
if TYPE_CHECKING:
    import asyncio

    from referee.engine import Engine
    from referee.runner import Report, Runner

SERVER_AWAY = 1  # the exit statuses of run --once (see the module's doc)
STORAGE_FAULT = 3
WRONG_SETTINGS = 4
BUSY = 5


class UsageError(Exception):
    """A bad command line, reported in one line with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage block
        raise UsageError(message)


def _duration(text: str):
    try:
        return parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _utc_time(text: str) -> str:
    """``2026-11-25T18:00:00Z`` (or with an offset), as stored: UTC, ending in Z."""
    try:
        return iso(from_iso(text.strip()))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a time like 2026-11-25T18:00:00Z") from None


def _option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"'{text}' is not KEY=VALUE")
    return key.strip(), value.strip()


def _own_deadlines(timer: str) -> str:
    """What `referee new --help` says of the games' own deadlines of one
    kind (Game.deadlines), which come before --deadline (Seating._deadlines)."""
    own = [f"{kind}: {show_duration(game.deadlines[timer])}" for kind, game in GAMES.items() if timer in game.deadlines]
    return f"the game's own ({', '.join(own)}), else " if own else ""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="referee", description="A play-by-email referee for auction games.")
    parser.add_argument("--config", type=Path, help="config file (default ./referee.toml)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    init = commands.add_parser(
        "init", help="write a config file from config.example.toml, and the secret key beside it (mode 600)"
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    commands.add_parser("kinds", help="list the games this referee runs: seats, options, rules and rulings")

    new = commands.add_parser("new", help="start a game")
    new.add_argument("kind", help="the game's short name (see `referee kinds`)")
    new.add_argument(
        "--player", action="append", default=[], metavar="ADDR", help="a player's address, in seating order"
    )
    new.add_argument("--bots", type=int, default=0, metavar="N", help="fill N more seats with random bots")
    new.add_argument(
        "--deadline",
        type=_duration,
        metavar="DURATION",
        help="how long a sealed round lasts (90s, 2h, 3d; default: the config's [defaults] deadline)",
    )
    new.add_argument(
        "--turn-deadline",
        type=_duration,
        metavar="DURATION",
        help="how long one player's turn lasts (default, or 0s: the config's [defaults] turn_deadline, "
        f"else {_own_deadlines('turn')}--deadline)",
    )
    new.add_argument(
        "--decision-deadline",
        type=_duration,
        metavar="DURATION",
        help="how long a decision such as a scoring offer lasts (default, or 0s: the config's [defaults] "
        f"decision_deadline, else {_own_deadlines('decision')}the turn deadline)",
    )
    new.add_argument("--settle", type=_duration, metavar="DURATION", help="change-of-mind window after the last move")
    new.add_argument("--name", help="a name for the game")
    new.add_argument(
        "--notify",
        type=Notify,
        choices=list(Notify),
        help="how much mail its players get unless they choose (NOTIFY): every turn's result, their turns and "
        "each round's, or their turns and a daily digest (default: the config's [defaults] notify)",
    )
    new.add_argument(
        "--press",
        type=Press,
        choices=list(Press),
        help="the table talk (TELL) it relays: none, white (signed with the writer's name) or grey (unsigned "
        "too) (default: its kind's; Pure Skill none, by its rule 7, the others white)",
    )
    new.add_argument(
        "--announce-to",
        action="append",
        default=[],
        metavar="ADDR",
        help="a list that gets the game's public mail, players named, never their addresses (again for more; "
        "besides the config's [club] announce_to)",
    )
    new.add_argument(
        "--awards",
        choices=("on", "off"),
        help="whether the game-over mail tells what the kind awards the winner where a club keeps such books "
        "(Pure Skill's rule 5; default: the config's [club] awards)",
    )
    new.add_argument(
        "--option",
        type=_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a game option, e.g. ties=carry",
    )

    status = commands.add_parser("status", help="show one game, or list them all")
    status.add_argument("game", nargs="?", type=int)
    status.add_argument("--json", action="store_true", help="machine-readable output")

    ingest = commands.add_parser("ingest", help="process one received mail (file or stdin)")
    ingest.add_argument("file", nargs="?", default="-", help="an RFC 5322 message; - for stdin")
    commands.add_parser("tick", help="enforce deadlines: fill missing moves at random, resolve")

    outbox = commands.add_parser("outbox", help="list mail waiting to be sent")
    outbox.add_argument("--write", type=Path, metavar="DIR", help="also write each as DIR/<id>.eml")
    outbox.add_argument(
        "--mark-sent",
        action="store_true",
        help="with --write: count the written mail as sent (for a mailer that sends DIR)",
    )

    run = commands.add_parser("run", help="receive, enforce deadlines, send: the main job")
    run.add_argument(
        "--once", action="store_true", required=True, help="one pass, for cron (the daemon is `referee serve`)"
    )
    commands.add_parser("serve", help="run as a daemon: IMAP IDLE, timers, clean stop on SIGTERM")
    demo = commands.add_parser("demo", help="play a whole game by real mail on a throwaway local setup")
    demo.add_argument("--dir", type=Path, help="where to keep it all (default: a new temporary folder)")
    demo.add_argument(
        "--deadline",
        type=_duration,
        default=timedelta(seconds=2),
        metavar="DURATION",
        help="how long each phase waits for the silent player (default 2s)",
    )
    demo.add_argument(
        "--game",
        default="pure-skill",
        help="the kind of game (default pure-skill)",
        choices=[kind for kind, game in GAMES.items() if game.min_seats <= 3 <= game.max_seats],
    )

    commands.add_parser("check", help="check every page of games.db (SQLite's quick check): no run does")
    backup = commands.add_parser("backup", help="copy games.db safely, even while the referee runs")
    backup.add_argument("file", type=Path, help="where the copy goes: a new file (never one that exists)")
    restore = commands.add_parser("restore", help="put a backup in place of games.db (the referee stopped)")
    restore.add_argument("file", type=Path, help="a copy made by `referee backup`")
    restore.add_argument(
        "--ran-until",
        metavar="TIME",
        type=_utc_time,
        help="when the referee last ran (UTC, 2026-11-25T18:00:00Z), if the games.db replaced "
        "cannot say: deadlines up to then are done as it did them",
    )

    render = commands.add_parser("render", help="write the public history site (only what changed)")
    render.add_argument("--dir", type=Path, help="where (default: [referee] site_dir)")
    render.add_argument("--force", action="store_true", help="write every page again")
    verify = commands.add_parser("verify", help="replay a finished game from its published record")
    verify.add_argument("record", help="a record.json file, or its http(s) address")
    verify.add_argument(
        "--mail",
        action="append",
        default=[],
        metavar="FILE.eml",
        help="a saved mail of the game: does the record agree with the digest it carried? (again for more mails)",
    )
    verify.add_argument("--json", action="store_true", help="print everything checked, as JSON")
    resign = commands.add_parser(
        "resign", help="a player left: a random bot takes the seat, unless someone on standby takes it over"
    )
    resign.add_argument("game", type=int)
    resign.add_argument("address")
    _keeper_commands(commands)
    return parser


def _keeper_commands(commands) -> None:
    """The keeper's hands (docs/operations.md, "The keeper's hands"): each
    act goes on the game's record and is announced to its players."""
    why = {"metavar": "TEXT", "default": "", "help": "why: the players are told"}
    force = {"action": "store_true", "help": "go past the caps in [keepers] (longest_extension, most_pause)"}
    extend = commands.add_parser("extend", help="move the open phase's deadline later")
    extend.add_argument("game", type=int)
    extend.add_argument("length", type=_duration, metavar="DURATION", help="how much later, e.g. 2d or 12h")
    extend.add_argument("--phase", type=int, help="only if this phase (by number) is still the open one")
    extend.add_argument("--why", **why)
    extend.add_argument("--force", **force)
    pause = commands.add_parser("pause", help="stop a game's clock: no deadline, reminder or random move")
    pause.add_argument("game", type=int)
    until = pause.add_mutually_exclusive_group()
    until.add_argument("--until", type=_utc_time, metavar="TIME", help="resume by itself then (UTC)")
    until.add_argument("--for", dest="length", type=_duration, metavar="DURATION", help="resume by itself after")
    pause.add_argument("--why", **why)
    pause.add_argument("--force", **force)
    resume = commands.add_parser("resume", help="start a paused game's clock again: its deadline moves by the pause")
    resume.add_argument("game", type=int)
    resume.add_argument("--why", **why)
    cancel = commands.add_parser("cancel", help="end a game without a winner (its seed is published)")
    cancel.add_argument("game", type=int)
    cancel.add_argument("--why", metavar="TEXT", required=True, help="why: the players are told")
    replace = commands.add_parser("replace", help="a newcomer takes over a seat (a player's, or a bot's)")
    replace.add_argument("game", type=int)
    replace.add_argument("seat", metavar="OLD", help="the seat: its player's address, its number, or 'bot N'")
    replace.add_argument("address", metavar="NEW", help="the newcomer's address")
    replace.add_argument("--why", **why)
    address = commands.add_parser("address", help="a seat's player plays from a new address, at once")
    address.add_argument("game", type=int)
    address.add_argument("seat", metavar="SEAT", help="the seat: its player's address or its number")
    address.add_argument("address", metavar="NEW", help="the address the seat's player plays from now")
    address.add_argument("--why", metavar="TEXT", default="", help="why: the seat's player is told")
    say = commands.add_parser("say", help="mail the keeper's words to a game's players (on its record)")
    say.add_argument("game", type=int)
    say.add_argument("text", help="the words (- reads them from stdin)")
    say.add_argument("--seat", help="to this seat alone: its player's address or its number")


def main(argv: list[str] | None = None, clock: Clock = utc_now) -> int:
    """The command line; nothing it prints carries a control character from
    a mail (referee.terminal)."""
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PrintableStream(stdout), PrintableStream(stderr)  # type: ignore[assignment]
    try:
        return _main(argv, clock)
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def _main(argv: list[str] | None, clock: Clock) -> int:
    database = None
    try:
        args = build_parser().parse_args(argv)
        if args.command not in ("run", "serve"):
            launch.default_signals()  # only a run stops cleanly on a signal; the rest just stop
        # The daemon logs every move accepted, phase resolved and mail sent
        # (INFO); the other commands only what goes wrong, unless -v.
        levels = (logging.WARNING, logging.INFO, logging.DEBUG)
        baseline = 1 if args.command == "serve" else 0
        handler = logging.StreamHandler()
        handler.setFormatter(LogFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        logging.basicConfig(level=levels[min(baseline + args.verbose, 2)], handlers=[handler])
        # aioimaplib's INFO is every IMAP command and state change: the serve log's noise, not its news
        logging.getLogger("aioimaplib").setLevel(logging.DEBUG if args.verbose >= 2 else logging.WARNING)
        if args.command == "init":
            return _init(args)
        if args.command == "demo":
            from referee.demo import DemoFailed, demo  # imports aiosmtpd: only when asked for

            try:
                demo(args.dir or Path(tempfile.mkdtemp(prefix="referee-demo-")), args.deadline, args.game)
            except DemoFailed as failure:
                print(f"referee demo: {failure}", file=sys.stderr)
                return 1
            return 0
        if args.command == "verify":
            return _verify(args)
        if args.command == "kinds":
            return _kinds()
        config = config_module.load(args.config).caching_templates()
        if args.command in _CONNECTING:
            config = config.connecting()  # the passwords, read before anything is opened
        database = config.database
        if args.command in ("backup", "restore"):
            return (_backup if args.command == "backup" else _restore)(config, args)
        if args.command == "check":
            return _check(config)
        from referee.engine import Engine  # (see the imports)

        engine = Engine(_open(config.database, args.command, clock), config, clock)
        status = COMMANDS[args.command](engine, args)
        if args.command not in ("run", "serve"):  # (they sync every pass, and when stopped)
            engine.store.sync()  # what the command did survives a power cut before it says so
        if args.command in _CHANGING and config.site_dir:
            from referee.site.render import Site  # (see the imports)

            Site(
                engine, config.site_dir, config.templates, config.template_cache
            ).refresh()  # (run and serve do, every pass)
        return status
    except (UsageError, config_module.ConfigError, EngineError, Busy) as error:
        print(f"referee: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `referee status 1 | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except StorageFault as fault:
        print(f"referee: {fault}", file=sys.stderr)
        return STORAGE_FAULT
    except OSError as error:
        # A file beside games.db that is not games.db (its run lock, the
        # site's folder for `render`): the machine's fault too, in one line.
        if database is None or isinstance(error, ConnectionError):
            raise
        print(f"referee: {error}", file=sys.stderr)
        return STORAGE_FAULT


# commands that may change a game's pages
_CHANGING = {"new", "ingest", "tick", "resign", "extend", "pause", "resume", "cancel", "replace", "say", "address"}
_CONNECTING = {"run", "serve"}  # commands that connect to a mail server: only they read its password


def _open(database: Path, command: str, clock: Clock) -> Store:
    """games.db; for a run that cannot open it, the fault is kept beside it
    too (games.db.fault), where `referee status` finds it."""
    try:
        return Store(database)
    except StorageFault as fault:
        if command in ("run", "serve"):
            FaultAside(database).write({"at": iso(clock()), "error": str(fault)})
        raise


KEY_FILE = "secret.key"  # what `referee init` makes beside the config, and sets secret_key_file to
_KEY_LINE = f'# secret_key_file = "{KEY_FILE}"'  # the example config's line, commented


def _init(args) -> int:
    """The config, from config.example.toml, and the secret key beside it
    (made unless there is one: a key already in use is never replaced)."""
    target = args.config or config_module.default_path()
    if target.exists() and not args.force:
        raise UsageError(f"{target} exists; use --force to overwrite it")
    key = target.parent / KEY_FILE
    try:
        made = _make_key(key)
        example = shipped("config.example.toml").read_text(encoding="utf-8")
        target.write_text(example.replace(_KEY_LINE, _KEY_LINE.removeprefix("# "), 1), encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot write {error.filename or target}: {error.strerror}") from None
    print(f"wrote {target}; edit the address and the defaults, then run `referee new`")
    if made:
        print(f"made {key}, the secret key that reply tokens are made with (mode 600): keep it, and keep it secret")
    else:
        print(f"kept {key}, the secret key already there")
    return 0


def _make_key(path: Path) -> bool:
    """A new secret key file, 32 random bytes in hex, readable by its owner
    alone from the start; False if the file is there already."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        os.fchmod(fd, 0o600)  # whatever the umask took away
        handle.write(secrets.token_hex(32) + "\n")
    return True


def _kinds() -> int:
    """Every game this referee runs (its own and the installed packages'):
    its kind, title and seats, each option with its default and its line,
    and where its rule text and rulings are."""
    for game in GAMES.values():
        print(f"{game.kind:18} {game.title} ({game.seat_range} seats)")
        width = max((len(f"{name}={_shown(value)}") for name, value in game.options.items()), default=0)
        for name, value in game.options.items():
            setting = f"{name}={_shown(value)}"
            print(f"    --option {setting:{width}}  {game.option_help.get(name, '')}".rstrip())
        print(f"    rules:   {game_file(game, game.rule_text)}")
        print(f"    rulings: {game_file(game, game.rulings_page)}")
    return 0


def _shown(value: object) -> str:
    """An option's value as --option takes it: true/false, 300, discard."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _new(engine: Engine, args) -> int:
    game_id = engine.new_game(
        args.kind,
        args.player,
        bots=args.bots,
        deadline=args.deadline,
        settle=args.settle,
        name=args.name,
        options=dict(args.option),
        turn_deadline=args.turn_deadline,
        decision_deadline=args.decision_deadline,
        notify=args.notify,
        press=args.press,
        announce_to=args.announce_to,
        awards=None if args.awards is None else args.awards == "on",
    )
    status = engine.status(game_id)
    print(f"game {game_id}: {args.kind}, {len(status['players'])} seats, {status['state']}")
    print(game_id)
    return 0


def _status(engine: Engine, args) -> int:
    if args.game is None:
        games = [engine.status(row["id"]) for row in engine.store.games()]
        if args.json:
            print(json.dumps({"health": engine.health(), "games": games}, indent=2))
            return 0
        from referee.engine.reports import Reports  # (see the imports)

        for line in Reports.health_lines(engine.health(), bool(engine.config.imap or engine.config.smtp)):
            print(line)
        for game in games:
            phase = game["phase"]["label"] if game["phase"] else {GameState.OPEN: "sign-up"}.get(game["state"], "over")
            print(f"{game['id']:5}  {game['kind']:18} {game['state']:9} {phase}  {game['name'] or ''}")
            if game["paused"]:
                print(f"       paused since {game['paused']['at']}" + _until(game["paused"].get("until")))
            for act in game["interventions"] if game["state"] == GameState.RUNNING else []:
                if act["act"] in ("extend", "outage", "resume", "absent"):
                    print(f"       deadline of phase {act['phase']} moved to {act['new']}: {act['why'] or act['act']}")
        return 0
    status = engine.status(args.game)
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    print(f"Game {status['id']} ({status['kind']}{', ' + status['name'] if status['name'] else ''}): {status['state']}")
    if status["state"] == GameState.OPEN:
        signed = [p["address"] for p in status["players"]]
        print(f"Open for sign-up: {len(signed)} of {status['seats_wanted']} seats taken: {', '.join(signed) or 'none'}")
        return 0
    if status["phase"]:
        phase = status["phase"]
        print(
            f"{phase['label']}, deadline {phase['deadline']}, waiting for: "
            f"{', '.join(phase['waiting_for']) or 'nobody'}"
        )
    if status["winner"] or status["state"] == GameState.FINISHED:
        print(f"Winner: {status['winner'] or 'none'}")
    if status["paused"]:
        print(f"Paused since {status['paused']['at']}{_until(status['paused'].get('until'))}")
    for act in status["interventions"]:
        print(_intervention_line(act))
    for mail in status["undelivered"]:
        print(f"Undelivered to {', '.join(mail['to'])}: {mail['subject']} ({mail['error']})")
    for player in status["players"]:
        for bounce in player["bounces"]:
            print(f"Bounced: mail to {player['address']} at {bounce['at']}: {bounce['status']} {bounce['diagnostic']}")
    print(f"Seed commitment: {status['seed_commitment']}")
    if status["seed"]:
        print(f"Seed: {status['seed']}")
    print()
    print(engine.history(args.game), end="")
    return 0


def _ingest(engine: Engine, args) -> int:
    try:
        raw = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {args.file}: {error.strerror}") from None
    outcome = engine.ingest(raw)
    print(outcome)
    return 1 if outcome.code == OutcomeCode.FAILED else 0


def _tick(engine: Engine, args) -> int:
    for line in engine.tick():
        print(line)
    return 0


def _outbox(engine: Engine, args) -> int:
    if args.mark_sent and not args.write:
        raise UsageError("--mark-sent goes with --write")
    mails = engine.store.outbox()
    for mail in mails:
        print(f"{mail['id']:6}  {', '.join(mail['recipients']):32}  {mail['subject']}")
    if not args.write:
        return 0
    if args.mark_sent:  # never beside a run that sends the same mail by SMTP
        from referee.runner import run_lock  # (see the imports)

        with run_lock(engine.config.database):
            _write_out(engine, mails, args.write, mark_sent=True)
    else:
        _write_out(engine, mails, args.write, mark_sent=False)
    print(f"wrote {len(mails)} mail(s) to {args.write}")
    return 0


def _write_out(engine: Engine, mails: list, folder: Path, mark_sent: bool) -> None:
    engine.store.sync(always=True)  # durable before anyone can send them (see SmtpSender.drain)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for mail in mails:
            (folder / f"{mail['id']:06d}.eml").write_bytes(mail["raw"])
            if mark_sent:  # handed over: never written (or sent) again
                engine.store.mark_sent([mail["id"]], iso(engine.clock()))
    except OSError as error:
        raise UsageError(f"cannot write to {folder}: {error.strerror}") from None


def _run(engine: Engine, args) -> int:
    """`run --once` and `serve`.  A server that cannot be reached is one
    line on stderr and exit status 1, one that refused the referee's account
    or settings status 4; queued mail is kept for the next run.
    A stop signal is a clean stop, exit status 0, whenever it comes.  A
    storage fault goes up to main (status 3)."""
    import asyncio  # (see the imports)

    from referee.mail.smtp import SmtpUnreachable
    from referee.mail.source import SourceError, WrongSettings
    from referee.runner import Runner, fault_text, run_lock

    config = engine.config
    if not (config.imap or config.maildir or config.smtp):
        raise UsageError("nothing to run: the config has no [imap] or [maildir] and no [smtp]")
    runner = Runner.from_config(config, engine)
    if args.command == "serve":
        asyncio.run(_serve(runner, config.database))  # it waits for the run lock
        return 0
    try:
        with run_lock(config.database):
            report = asyncio.run(_once(runner))
    except Busy as busy:
        print(f"referee: busy: {busy}; this run did nothing", file=sys.stderr)
        return BUSY
    except (SourceError, SmtpUnreachable) as error:
        print(f"referee: {error}", file=sys.stderr)
        return WRONG_SETTINGS if isinstance(error, WrongSettings) else SERVER_AWAY
    except MemoryError as error:
        print(f"referee: {fault_text(error)}", file=sys.stderr)
        return SERVER_AWAY
    if report is None:
        print("referee: stopped by a signal before the pass ended; the rest waits for the next run", file=sys.stderr)
        _sync_when_stopped(engine)
        return 0
    for line in report.done:
        print(line)
    mail = report.mail
    print(f"received {report.received}, sent {mail.sent}, deferred {mail.deferred}, failed {mail.failed}")
    return 0


@contextmanager
def _stop_on_signals() -> Iterator[asyncio.Event]:
    """An event SIGTERM or SIGINT sets, set already if one came while the
    command was starting (see referee.launch); while it is in force, they
    also cut a mail's reading short (referee.interrupt)."""
    import asyncio  # (see the imports)

    from referee.interrupt import stop_signals_cut_reading_short

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in launch.STOP_SIGNALS:
        loop.add_signal_handler(signum, _stopping, stop, signal.Signals(signum).name)
    if launch.stopped_by:
        _stopping(stop, f"{signal.Signals(launch.stopped_by[0]).name} while starting")
    with stop_signals_cut_reading_short(launch.STOP_SIGNALS):
        yield stop


def _stopping(stop: asyncio.Event, why: str) -> None:
    logging.getLogger("referee").info("%s: stopping", why)
    stop.set()


async def _once(runner: Runner) -> Report | None:
    """One pass; None if a signal stopped it."""
    from referee.runner import until_stopped  # (see the imports)

    with _stop_on_signals() as stop:
        try:
            return await until_stopped(runner.once(), stop)
        finally:
            await runner.close()


async def _serve(runner: Runner, database: Path) -> None:
    from referee.runner import RunLock  # (see the imports)

    log = logging.getLogger("referee")
    with _stop_on_signals() as stop:
        lock = RunLock(database)
        if not await lock.wait(stop):
            await runner.close()
            log.info("stopped before serving began")
            return
        try:
            log.info("serving; stop with SIGTERM or Ctrl-C")
            await runner.serve(stop)
            _sync_when_stopped(runner.engine)
            log.info("stopped")
        finally:
            lock.release()


def _sync_when_stopped(engine: Engine) -> None:
    """Make durable what a pass cut short by a stop signal committed.  A
    storage fault now (the disk the daemon was waiting out is still full)
    is one line in the log, not the exit status: the stop was asked for,
    and it happened, so a stopped run or daemon exits 0 however it stood."""
    try:
        engine.store.sync()
    except StorageFault as fault:
        logging.getLogger("referee").error("%s", fault)


def _shell() -> str:
    """Who acts, for the keeper at the shell (referee.engine.keeping.SHELL),
    imported as the engine is (see the imports)."""
    from referee.engine.keeping import SHELL

    return SHELL


def _resign(engine: Engine, args) -> int:
    engine.resign(args.game, args.address)
    print(f"{args.address} left game {args.game}; a random bot plays the seat now")
    return 0


def _extend(engine: Engine, args) -> int:
    print(engine.extend(args.game, args.length, _shell(), args.why, force=args.force, phase=args.phase))
    return 0


def _pause(engine: Engine, args) -> int:
    until = from_iso(args.until) if args.until else engine.clock() + args.length if args.length else None
    print(engine.pause(args.game, _shell(), args.why, until=until, force=args.force))
    return 0


def _resume(engine: Engine, args) -> int:
    print(engine.resume(args.game, _shell(), args.why))
    return 0


def _cancel(engine: Engine, args) -> int:
    print(engine.cancel(args.game, _shell(), args.why))
    return 0


def _replace(engine: Engine, args) -> int:
    print(engine.replace(args.game, args.seat, args.address, _shell(), args.why))
    return 0


def _address(engine: Engine, args) -> int:
    print(engine.address(args.game, args.seat, args.address, _shell(), args.why))
    return 0


def _say(engine: Engine, args) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    print(engine.say(args.game, text, _shell(), args.seat))
    return 0


def _backup(config: config_module.Config, args) -> int:
    """A copy made with no write to games.db, so no wait on the daemon.  It
    goes to a new file only: never over games.db, its journal, its lock,
    the config, or any file that exists."""
    database, target = Path(config.database), args.file
    _own_file(target, database, args.config or config_module.default_path(), "the copy")
    if os.path.lexists(target):
        raise UsageError(f"{target} exists: name a new file for the copy (a backup never writes over a file)")
    store = Store(database)
    try:
        store.backup(target)
    except StorageFault as fault:
        # No start checks every page any more: damage met while copying may
        # be games.db's own, which is said as such (a storage fault, naming
        # games.db and saying to restore), not as the copy's.
        store.check()
        raise UsageError(f"cannot write the backup: {fault}") from None
    print(f"copied {database} to {target}")
    return 0


def _check(config: config_module.Config) -> int:
    """Every page of games.db read and checked: what no run does at start-up
    any more, as its cost grows with the file (a damaged page a run meets
    stops it all the same).  A damaged file is a storage fault (exit 3),
    with what to do.  A games.db that is not there is not made (and called whole)."""
    if not Path(config.database).is_file():
        raise UsageError(f"{config.database} is not there: nothing to check (is the config's database right?)")
    Store(config.database).check()
    print(f"{config.database}: every page checked, no damage found")
    return 0


def _own_file(path: Path, database: Path, config: Path, what: str) -> None:
    """Refuse ``path`` when it is one of the referee's own files."""
    own = {Path(f"{database}{suffix}") for suffix in ("", "-wal", "-shm", "-journal", ".lock", ".fault")}
    if any(_same(path, file) for file in (*own, config)):
        raise UsageError(
            f"{path} is one of the referee's own files (games.db, its journal, lock, or the "
            f"config): name another file for {what}"
        )


def _same(one: Path, other: Path) -> bool:
    """Whether two paths name the same file (or would, once it exists)."""
    try:
        return os.path.samefile(one, other)
    except OSError:
        return one.resolve() == other.resolve()


def _restore(config: config_module.Config, args) -> int:
    """Put a backup in place of games.db.  The run lock keeps the daemon and
    cron runs out.  The backup is checked whole before anything moves, and
    copied in beside games.db; only then is the games.db it replaces (with
    its -wal and -shm) moved aside, never deleted, and the copy renamed in.
    So there is always a games.db: the old one, or the backup."""
    database, backup = Path(config.database), args.file
    if _same(backup, database):
        raise UsageError(f"{backup} is games.db itself: name the backup to restore")
    _check_backup(backup)
    from referee.runner import run_lock  # (see the imports)

    with run_lock(database):
        incoming = database.with_name(f"{database.name}.restoring")
        try:
            Snapshot(backup).copy_to(incoming)
        except Unreadable as error:
            raise UsageError(f"{backup} is not a backup of games.db: {error}") from None
        aside = database.with_name(f"{database.name}.replaced-{utc_now():%Y%m%dT%H%M%S}")
        moved = []
        try:
            for suffix in ("", "-wal", "-shm"):
                if Path(f"{database}{suffix}").exists():
                    os.replace(f"{database}{suffix}", f"{aside}{suffix}")
                    moved.append(suffix)
            os.replace(incoming, database)
        except OSError as error:
            for suffix in moved:  # put the old one back: never no games.db
                os.replace(f"{aside}{suffix}", f"{database}{suffix}")
            incoming.unlink(missing_ok=True)
            raise UsageError(f"cannot put {backup} in place of {database}: {error}") from None
        store = Store(database)  # opened as a run would: brought up to this schema, or refused
        mailbox = bool(config.imap or config.maildir)  # else mail comes by `referee ingest`
        with store.transaction():
            since = store.last_received_at()
            # The next run handles the mail filed since then again (Runner.handle_again).
            store.set_meta(
                "restored",
                json.dumps(
                    {
                        "backup": str(backup),
                        "since": since,
                        "at": iso(utc_now()),
                        "replaced": str(aside) if moved else None,
                        "ran_until": args.ran_until or (Snapshot(aside).last_tick() if moved else None),
                        "games": {game["id"]: _extent(store, game["id"]) for game in store.games()},
                    }
                ),
            ) if mailbox else None
        store.sync()
    kept = f"; the database it replaced is kept as {aside}" if moved else ""
    print(f"restored {database} from {backup}{kept}.")
    print(
        f"The newest mail the backup knows was received at {since}. " if since else "The backup knows no mail. ", end=""
    )
    if not mailbox:
        print(
            "This referee reads no mailbox (mail comes by `referee ingest`): feed every mail received "
            "since then to `referee ingest` again, oldest first (mail the backup knows is skipped), "
            "then run `referee tick`."
        )
        return 0
    print(
        "The next run (run --once or serve) first reads the mail handled since then again from the "
        "mail server's processed folder, and handles it again in the order it was received: every "
        "move counts as before, and players get one short notice, not the mails they had already. "
        "Leave the processed folder as it is until then, and run no other command before it."
    )
    return 0


def _until(until: str | None) -> str:
    return f", until {until}" if until else ", until resumed"


def _intervention_line(act: dict[str, Any]) -> str:
    """One intervention, as `referee status GAME` lists it."""
    what = {
        "extend": lambda: f"deadline moved from {act['old']} to {act['new']}",
        "outage": lambda: f"deadline moved from {act['old']} to {act['new']} after an outage",
        "pause": lambda: "paused" + _until(act.get("until")),
        "resume": lambda: f"resumed; deadline moved from {act['old']} to {act['new']}",
        "replace": lambda: f"seat {act['seat'] + 1} taken over by {act['address']} from {act['was_address']}",
        "cancel": lambda: "cancelled",
        "say": lambda: "said to " + ("everyone" if act.get("seat") is None else f"seat {act['seat'] + 1}"),
        "away": lambda: f"seat {act['seat'] + 1} away from {act['from']} until {act['until']}",
        "back": lambda: f"seat {act['seat'] + 1} back",
        "absent": lambda: f"deadline moved from {act['old']} to {act['new']}: seat {act['seat'] + 1} is away",
        "address": lambda: f"seat {act['seat'] + 1} moved to {act['address']} from {act['was_address']}",
        "delegate": lambda: f"seat {act['seat'] + 1} played by a stand-in, {act['address']}, until {act['until']}",
        "delegate_end": lambda: f"seat {act['seat'] + 1}'s stand-in's turn ended",
    }[act["act"]]()
    return f"Phase {act['phase']}, {act['at']}, {act['by']}: {what}" + (f" ({act['why']})" if act["why"] else "")


def _extent(store: Store, game_id: int) -> list[int]:
    """How far a game's record goes: its phases and moves."""
    return [len(store.phases(game_id)), len(store.moves(game_id))]


def _check_backup(path: Path) -> None:
    """A backup fit to restore (see Snapshot.check_backup)."""
    if not path.is_file():
        raise UsageError(f"{path} is not a file")
    try:
        Snapshot(path).check_backup()
    except Unreadable as why:
        raise UsageError(f"{path} {why}") from None


def _render(engine: Engine, args) -> int:
    folder = args.dir or engine.config.site_dir
    if folder is None:
        raise UsageError("say where the site goes: --dir DIR, or site_dir in [referee]")
    from referee.site.render import Site  # (see the imports)

    report = Site(engine, folder, engine.config.templates, engine.config.template_cache).render(force=args.force)
    print(
        f"{folder}: {report.games_rendered} game(s) written, {report.games_unchanged} unchanged, "
        f"{len(report.written)} file(s)"
    )
    return 0


def _verify(args) -> int:
    """0 verified (and every --mail agrees), 1 NOT verified (or a mail
    disagrees), 2 a record or mail that cannot be read (referee.check)."""
    from referee import (
        check,  # here, not at start-up: only this command fetches anything
    )

    return check.run(args.record, args.mail, args.json)


COMMANDS = {
    "render": _render,
    "new": _new,
    "status": _status,
    "ingest": _ingest,
    "tick": _tick,
    "outbox": _outbox,
    "resign": _resign,
    "extend": _extend,
    "pause": _pause,
    "resume": _resume,
    "cancel": _cancel,
    "replace": _replace,
    "say": _say,
    "address": _address,
    "run": _run,
    "serve": _run,
}


if __name__ == "__main__":
    sys.exit(main())
