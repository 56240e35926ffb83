"""`referee verify`: what a player who kept their mail can check of a
finished game, from its published record alone.

It reads the record within fixed limits (``referee.fetch``), replays it
(``referee.record.verify``), prints what the start mail announced (the
commitment, the players in seat order, the options, the deadlines) and the
record's running digests, and compares any saved mails' digests with them.
Exit status: 0 verified (and every mail agrees), 1 NOT verified (or a mail
disagrees), 2 a record or mail that cannot be read at all.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from referee import fetch
from referee.fetch import Unreadable, is_url, load_record, printable
from referee.mail.parse import parse
from referee.record import Digest, PartsError, Verdict, join_record, mail_digests, part_names, verify
from referee.timeutil import utc_now

MAX_MAIL_BYTES = 10 * 1024 * 1024  # a result mail is a few KB; a saved .eml with attachments, more

# What `verify` checks, in the order it does: the --json output lists them.
CHECKS = (
    "every field is one a record has, of its type, and none is unknown",
    (
        "phase k is numbered k; player i sits in seat i; a seat a bot played (from the start, or from the phase "
        "its player left) is flagged so, and only a bot from the start is named 'bot N'"
    ),
    "the game's options are a set its rules take",
    "sha256(seed) is the commitment announced at the start",
    (
        "each phase opens after the one before it was resolved and lasts at least its deadline "
        "(the referee's own times in order within 10 minutes: its clock may step back)"
    ),
    "each phase is the one the rules ask for, with the rules' label",
    "each seat that owed a move made exactly one, in seat order",
    "a move by mail was received while its phase was open",
    "a random move is what the seed draws for the seat, made at the deadline it missed",
    "a bot's move is what the seed draws, by a seat whose player had left, once it was due",
    "a forced move was the seat's only legal move",
    "every move is legal, and each phase's result is what the rules make of its moves and the seed",
    "the game ends with the record's last phase, with the record's winner",
    "the record's running digests (the start's, each phase's, the end's), as the mails carried them",
)


class UnreadableMail(Exception):
    """A saved mail that cannot be read, or carries no record digest."""


def run(source: str, mails: list[str], as_json: bool) -> int:
    """The `verify` command: print what was checked; the exit status."""
    try:
        record: Any = load_record(source)
        names = part_names(record)  # (a long game's parts)
        # The parts together are held to one record's size: each to its share.
        share = {"max_bytes": fetch.MAX_BYTES // max(len(names), 1)}
        share["max_containers"] = fetch.MAX_CONTAINERS // max(len(names), 1)
        parts = [load_record(beside(source, name), **share) for name in names]
        record = join_record(record, parts) if parts else record
    except Unreadable as error:
        print(f"cannot read {source}: {error}", file=sys.stderr)
        return 2
    except PartsError as error:
        print(f"NOT verified: {error}")
        return 1
    verdict = verify(record)
    try:
        compared = [compare(Path(path), verdict.digests) for path in mails]
    except UnreadableMail as error:
        print(f"cannot check the mail: {error}", file=sys.stderr)
        return 2
    agreed = all(found["agrees"] for found in compared)
    if as_json:
        print(json.dumps(report(record, verdict, compared), indent=1, ensure_ascii=False))
    else:
        if verdict.digests:  # the record's own fields held: what it says is worth showing
            print("\n".join(describe(record, verdict.digests)))
        for found in compared:
            print(f"{found['file']}: {found['says']}")
        print(verdict.message if verdict.ok else f"NOT verified: {verdict.message}")
    return 0 if verdict.ok and agreed else 1


def beside(source: str, name: str) -> str:
    """The address of a record's part ``name`` (referee.record.part_names),
    in the folder of its head ``source``, a file or an http(s) address."""
    if is_url(source):
        return urljoin(source, name)
    return str(Path(source).parent / name)


def describe(record: dict[str, Any], digests: tuple[Digest, ...]) -> list[str]:
    """What the start mail announced and each result mail carried, to compare."""
    game = record["game"]
    labels = {entry["number"]: entry["label"] for entry in record["phases"]}
    name = f' "{printable(game["name"])}"' if game["name"] else ""
    lines = [
        f"game {game['id']}{name}: {game['title']} ({game['kind']}), made {game['created_at']}",
        f"commitment: {record['seed_commitment']}",
        "players, in seat order:",
    ]
    for player in record["players"]:
        left = player["bot_from_phase"]
        how = (
            " (a bot from the start)"
            if left == 0
            else f" (left in {printable(labels[left])}; a bot from then on)"
            if left
            else ""
        )
        lines.append(f"  {player['seat'] + 1}. {player['name']}{how}")
    options = game["options"]
    lines.append("options: " + (", ".join(printable(f"{k}={v}") for k, v in sorted(options.items())) or "none"))
    lines.append(f"deadlines: {deadline_rule(record)}")
    lines.append("record digests (the mail announcing each carried it):")
    shown = [_where(d.label) for d in digests]
    width = max(map(len, shown))
    lines += [f"  {where:{width}} {d.digest}" for where, d in zip(shown, digests, strict=True)]
    return lines


def _where(label: str) -> str:
    """Where a digest stands, as the mail's line says it: "at the start", "after Round 3 of 13"."""
    return f"at {label}" if label in ("the start", "the end") else f"after {printable(label)}"


def deadline_rule(record: dict[str, Any]) -> str:
    """The deadlines' rule, as the start mail states it."""
    seconds = record["game"]["deadlines"]
    if seconds["round"] == seconds["turn"] == seconds["decision"]:
        parts = f"each phase lasts {_duration(seconds['round'])}"
    else:
        parts = (
            f"a sealed round lasts {_duration(seconds['round'])}, a turn {_duration(seconds['turn'])}, "
            f"a decision {_duration(seconds['decision'])}"
        )
    settle = seconds["settle"]
    return (
        parts
        + " or until every move owed is in"
        + (f" (then {_duration(settle)} more for a change of mind)" if settle else "")
        + "; a move missing at its deadline is drawn from the seed"
    )


def _duration(seconds: int) -> str:
    return str(timedelta(seconds=seconds)).replace(", 0:00:00", "")


def compare(path: Path, digests: tuple[Digest, ...]) -> dict[str, Any]:
    """Whether a saved mail's record digests are the record's."""
    text = mail_text(path)
    found = mail_digests(text)
    if not found:
        raise UnreadableMail(f"{path} carries no record digest (a start, result or final mail of the game does)")
    if not digests:
        return {
            "file": str(path),
            "agrees": False,
            "says": "not compared: the record itself does not hold",
            "digests": [{"label": label, "digest": digest} for label, digest in found],
        }
    known = {(d.label, d.digest) for d in digests}
    labels = {d.label: d.digest for d in digests}
    agrees, says = True, []
    for label, digest in found:
        where = _where(label)
        if (label, digest) in known:
            says.append(f"agrees ({where}: {digest})")
        elif label in labels:
            agrees = False
            says.append(f"DISAGREES: it says {where}: {digest}, the record gives {labels[label]}")
        else:
            agrees = False
            says.append(
                f"DISAGREES: it carries a digest {where}, a phase this record does not have (a mail of another game?)"
            )
    return {
        "file": str(path),
        "agrees": agrees,
        "says": "; ".join(says),
        "digests": [{"label": label, "digest": digest} for label, digest in found],
    }


def mail_text(path: Path) -> str:
    """The plain text of a saved mail (.eml), decoded."""
    try:
        if not path.is_file():  # a pipe with no writer would keep it waiting for ever
            raise UnreadableMail(f"{path}: no such file (a saved mail is a file)")
        with path.open("rb") as file:
            raw = file.read(MAX_MAIL_BYTES + 1)
    except OSError as error:
        raise UnreadableMail(f"{path}: {error.strerror or error}") from None
    if len(raw) > MAX_MAIL_BYTES:
        raise UnreadableMail(f"{path} is larger than {MAX_MAIL_BYTES // 2**20} MB, more than a mail of a game")
    # The referee's own reader: bounded time and memory whatever the file
    # holds, and it never fails; a mail it cannot read gives its raw text.
    return parse(raw, utc_now()).text or raw.decode("utf-8", "replace")


def report(record: Any, verdict: Verdict, compared: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything checked, for programs (`verify --json`)."""
    facts: dict[str, Any] = {}
    if verdict.digests:
        game = record["game"]
        facts = {
            "game": {key: game[key] for key in ("id", "kind", "title", "name", "created_at", "finished_at")},
            "seed_commitment": record["seed_commitment"],
            "seed": record["seed"],
            "players": [
                {key: p[key] for key in ("seat", "name", "bot", "bot_from_phase", "left_at")} for p in record["players"]
            ],
            "options": game["options"],
            "deadlines": game["deadlines"],
            "deadline_rule": deadline_rule(record),
            "phases": len(record["phases"]),
            "winner": record["winner"],
        }
    return {
        "verified": verdict.ok,
        "message": verdict.message,
        "phase": verdict.phase,
        **facts,
        "checks": list(CHECKS),
        "digests": [{"number": d.number, "label": d.label, "digest": d.digest} for d in verdict.digests],
        "mails": compared,
    }
