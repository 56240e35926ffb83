"""Benchmark: what each way of running the referee costs (issue 36, item 6).

The three ways docs/operations.md offers, each as a keeper runs it, each a
real ``referee`` process started as the keeper's cron, daemon unit or mail
delivery agent would start it (``python -m referee``), against one games.db
of running Pure Skill games with the public site on:

- a process per mail: ``referee ingest -`` fed one move's mail on stdin,
  a process for each of N mails (procmail, a .forward pipe);
- cron: ``referee run --once`` after N mails arrived in a Maildir, and a
  ``run --once`` that finds no mail (idle);
- the daemon: ``referee serve`` on that Maildir, the N mails delivered one
  by one, each once the last is filed; and its CPU while no mail comes.

The config has no [smtp]: the replies each move causes are queued in
games.db, as they are by `ingest`, whatever the way (sending is measured by
bench/pipeline.py); a cron run and the daemon would send them too.  CPU is
the referee process's own (user + system, getrusage of the finished child,
or /proc for the running daemon), wall the time until it exited.  The
daemon reads a Maildir every 5 s (MAILDIR_POLL): its wall per mail is that
wait, so only its CPU is printed per mail.

Prints lines to copy into docs/operations.md; asserts nothing.

Run from the top of the checkout:  python3 bench/ways.py [--games 10 1000] [--mails 20]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from email.utils import format_datetime, make_msgid
from pathlib import Path

from referee import config as config_module
from referee.engine import Engine
from referee.mail.tokens import token_address
from referee.site.render import Site
from referee.store import Store

ROOT = Path(__file__).resolve().parent.parent
REFEREE = "referee@example.org"
PLAYERS = ["alice@example.org", "bob@example.org", "carol@example.org"]
CONFIG = """\
[referee]
address = "{address}"
database = "games.db"
site_dir = "site"
secret_key = "bench-ways-secret-key-0123456789abcdef"

[defaults]
deadline = "3d"
reminder = "1d"

[maildir]
path = "Maildir"
"""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def build(folder: Path, games: int) -> list[bytes]:
    """A referee's folder (config, games.db with ``games`` running Pure Skill
    games, its site rendered, an empty Maildir); returns one round-1 move's
    mail for each seat of each game, in an order that spreads them over games."""
    folder.mkdir(parents=True)
    (folder / "referee.toml").write_text(CONFIG.format(address=REFEREE), encoding="utf-8")
    for part in ("new", "cur", "tmp"):
        (folder / "Maildir" / part).mkdir(parents=True)
    config = config_module.load(folder / "referee.toml")
    engine = Engine(Store(config.database), config)
    ids = [engine.new_game("pure-skill", PLAYERS) for _ in range(games)]
    assert config.site_dir is not None
    Site(engine, config.site_dir, config.templates).refresh()
    engine.store.sync(always=True)
    mails = []
    for seat in range(len(PLAYERS)):
        for game_id in ids:
            table = engine.table(game_id)
            token = table.seats[seat]["token"]
            mails.append(move_mail(PLAYERS[seat], token, game_id, f"bid {max(table.state.hands[seat])}"))
    # Closed here: the engine is freed by the cyclic collector, at a moment of its own, and the
    # last connection's close deletes games.db-wal and -shm (one vanished in a copy of the folder)
    engine.store.db.close()
    return mails


def move_mail(sender: str, token: str, game_id: int, body: str) -> bytes:
    """A player's reply to their prompt, to their seat's reply address, as a
    mail client writes it: the move, then the prompt quoted."""
    quoted = "".join(
        f"> {line}\r\n" for line in ("Your move in round 1.", "Reply with BID and a card.", "-- ", REFEREE)
    )
    return (
        f"Received: by mx.example.org; {format_datetime(datetime.now(UTC))}\r\n"
        f"From: {sender}\r\nTo: {token_address(REFEREE, token)}\r\n"
        f"Subject: Re: [pure-skill-{game_id} {token}] Round 1\r\nMessage-ID: {make_msgid(domain='example.net')}\r\n"
        f"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n\r\n"
        f"On Sat, 21 Nov 2026, Referee wrote:\r\n{quoted}"
    ).encode()


def copy_of(built: Path, into: Path) -> Path:
    shutil.copytree(built, into)
    return into


def referee(folder: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "referee", "--config", str(folder / "referee.toml"), *args]


CHILD: dict[str, str] = {}  # the children's environment: set by main()


def environment() -> dict[str, str]:
    return CHILD


def child_environment(checkout: Path, pycache: Path) -> dict[str, str]:
    """The referee of ``checkout`` (whatever the venv's editable install
    points at), its modules' bytecode cached as an installed package has it
    (pip compiles it on install; PYTHONDONTWRITEBYTECODE would have every
    process compile every module again)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(checkout), "PYTHONPYCACHEPREFIX": str(pycache)}


def warm_up(built: Path, work: Path, mail: bytes) -> None:
    """What a referee that has run before has: its modules' bytecode, and
    the templates it compiled (template-cache, where the referee keeps
    them), from one ingest in a copy, thrown away after."""
    folder = copy_of(built, work / "warm-up")
    timed(referee(folder, "ingest", "-"), folder, mail)
    if (folder / "template-cache").is_dir():
        shutil.copytree(folder / "template-cache", built / "template-cache")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], folder: Path, stdin: bytes = b"") -> tuple[float, float]:
    """CPU and wall seconds of one run of ``command`` to its end."""
    cpu, wall = children_cpu(), time.perf_counter()
    done = subprocess.run(command, input=stdin, cwd=folder, env=environment(), capture_output=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[3:])} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return children_cpu() - cpu, time.perf_counter() - wall


def deliver(folder: Path, mail: bytes, number: int) -> None:
    """As a delivery agent does: written into tmp/, renamed into new/."""
    name = f"{int(time.time())}.M{number:06d}P{os.getpid()}.bench"
    tmp = folder / "Maildir" / "tmp" / name
    tmp.write_bytes(mail)
    os.rename(tmp, folder / "Maildir" / "new" / name)


def filed(folder: Path) -> int:
    processed = folder / "Maildir" / ".processed" / "cur"
    return len(os.listdir(processed)) if processed.is_dir() else 0


def per_mail(built: Path, work: Path, mails: list[bytes]) -> tuple[float, float]:
    folder = copy_of(built, work / "per-mail")
    cpu = wall = 0.0
    for mail in mails:
        took = timed(referee(folder, "ingest", "-"), folder, mail)
        cpu, wall = cpu + took[0], wall + took[1]
    return cpu / len(mails), wall / len(mails)


def cron(built: Path, work: Path, mails: list[bytes]) -> tuple[tuple[float, float], tuple[float, float]]:
    """(CPU, wall) of a run --once after the mails came, and of an idle one."""
    folder = copy_of(built, work / "cron")
    for number, mail in enumerate(mails):
        deliver(folder, mail, number)
    backlog = timed(referee(folder, "run", "--once"), folder)
    assert filed(folder) == len(mails), filed(folder)
    timed(referee(folder, "run", "--once"), folder)  # (one idle run first: the site catches up with the moves)
    idle = [timed(referee(folder, "run", "--once"), folder) for _ in range(3)]
    return backlog, min(idle)


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def daemon(built: Path, work: Path, mails: list[bytes], idle_seconds: float) -> tuple[float, float, float]:
    """The daemon's CPU: to start (until it has filed a first mail), per
    mail after that, and per minute while no mail comes."""
    folder = copy_of(built, work / "daemon")
    process = subprocess.Popen(
        referee(folder, "serve"),
        cwd=folder,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for number, mail in enumerate(mails):
            deliver(folder, mail, number)
            while filed(folder) <= number:
                if process.poll() is not None:
                    raise SystemExit(f"referee serve exited with {process.returncode}")
                time.sleep(0.05)
            if number == 0:
                started = proc_cpu(process.pid)
        ended = proc_cpu(process.pid)
        time.sleep(6)  # (past one poll: the last mail's site refresh and the like are done)
        quiet = proc_cpu(process.pid)
        time.sleep(idle_seconds)
        idle = proc_cpu(process.pid) - quiet
    finally:
        process.terminate()
        process.wait(timeout=30)
    return started, (ended - started) / max(1, len(mails) - 1), idle * 60 / idle_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, nargs="+", default=[10, 1000], help="running games in games.db")
    parser.add_argument("--mails", type=int, default=20, help="mails for each way (at most 3 a game)")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds the idle daemon is watched")
    parser.add_argument("--no-daemon", action="store_true", help="leave out `serve` (it takes a minute or more)")
    parser.add_argument("--referee", type=Path, default=ROOT, help="the checkout whose referee runs (default: this)")
    args = parser.parse_args()
    print(f"# bench/ways.py: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, {args.referee}")
    print("# CPU is the referee process's (user+system); replies queued, not sent (no [smtp]); the site on")
    for games in args.games:
        with tempfile.TemporaryDirectory(prefix="referee-ways-") as temp:
            work = Path(temp)
            CHILD.update(child_environment(args.referee.resolve(), work / "pycache"))
            mails = build(work / "built", games)[: args.mails + 1]
            warm_up(work / "built", work, mails.pop())
            cpu, wall = per_mail(work / "built", work, mails)
            print(
                f"| {games:>5} games | a process per mail (`ingest -`) | {cpu * 1000:.0f} ms CPU a mail, {wall * 1000:.0f} ms wall |"
            )
            (bcpu, bwall), (icpu, iwall) = cron(work / "built", work, mails)
            n = len(mails)
            print(
                f"| {games:>5} games | cron, `run --once` after {n} mails | {bcpu * 1000 / n:.0f} ms CPU a mail "
                f"({bcpu * 1000:.0f} ms the run, {bwall * 1000:.0f} ms wall) |"
            )
            print(
                f"| {games:>5} games | cron, `run --once` with no mail | {icpu * 1000:.0f} ms CPU, {iwall * 1000:.0f} ms wall |"
            )
            if not args.no_daemon:
                start, each, idle = daemon(work / "built", work, mails, args.idle)
                print(
                    f"| {games:>5} games | the daemon, `serve` | {each * 1000:.0f} ms CPU a mail "
                    f"(start and first mail {start * 1000:.0f} ms); idle {idle * 1000:.0f} ms CPU a minute |"
                )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
