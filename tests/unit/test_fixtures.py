"""The mail corpus in tests/fixtures/mail: what real clients send in reply to
a prompt of each kind of game (tools/ made those a tool here could write), a
forgery in a player's name, and automatic mail that must never be answered,
each read through ``Engine.ingest`` in a fresh game and checked against
expected.toml."""

from __future__ import annotations

import email
import email.utils
import tomllib
from datetime import timedelta
from email import policy
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import PLAYERS, START, FakeClock, Seeds, body_of, seat_address

from referee.config import Config
from referee.engine import Engine
from referee.mail.parse import parse
from referee.mail.tokens import seat_token, token_address, tokens_named
from referee.rules import GAMES
from referee.store import Notify, Store
from referee.timeutil import iso

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mail"
EXPECTED: dict[str, dict[str, Any]] = tomllib.loads((FIXTURES / "expected.toml").read_text(encoding="utf-8"))
ROUND_1_DEADLINE = START + timedelta(days=3)  # the default deadline
SECRET_KEY = b"fixture-secret"  # the fixtures' reply tokens were made with it
REFEREE = "referee@example.org"


@pytest.fixture
def engine(tmp_path, clock: FakeClock) -> Engine:
    """A referee whose secret key and game seed are fixed, so each seat's reply
    token in game 1, and the game, are those the fixtures were written for
    (see expected.toml)."""
    config = Config(  # every phase's result to every player (NOTIFY EVERY): expected.toml's notices
        address=REFEREE,
        database=tmp_path / "games.db",
        secret_key=SECRET_KEY,
        reminder=None,
        outage_gap=None,
        notify=Notify.EVERY,
    )
    return Engine(Store(config.database), config, clock, Seeds(bytes(range(32))))


def fixture_names() -> list[str]:
    return sorted(path.name for path in FIXTURES.glob("*.eml"))


def cases() -> list[Any]:
    params = []
    for name in fixture_names():
        pending = EXPECTED.get(name, {}).get("pending")
        marks = [pytest.mark.xfail(strict=False, reason=pending)] if pending else []
        params.append(pytest.param(name, marks=marks, id=name.removesuffix(".eml")))
    return params


def read(raw: bytes) -> email.message.EmailMessage:
    return email.message_from_bytes(raw, policy=policy.default)


def one_line(value: object) -> str:
    return " ".join(str(value or "").split())


def snapshot(engine: Engine, game_id: int) -> dict[str, Any]:
    """Everything a message could change about a game, and the mail queued."""
    return {
        "game": engine.store.game(game_id),
        "seats": engine.store.seats(game_id),
        "phases": engine.store.phases(game_id),
        "moves": engine.store.moves(game_id),
        "outbox": [row["id"] for row in engine.store.outbox(None)],
    }


def test_every_fixture_has_an_expectation_and_every_expectation_a_fixture():
    names = set(fixture_names())
    assert names, f"no fixtures in {FIXTURES}"
    assert sorted(names - EXPECTED.keys()) == [], "fixtures without an entry in expected.toml"
    assert sorted(EXPECTED.keys() - names) == [], "entries in expected.toml without a fixture"


def test_the_tokens_in_expected_toml_are_the_seats_tokens():
    header = (FIXTURES / "expected.toml").read_text(encoding="utf-8").split("\n\n[", 1)[0]
    for seat in range(3):
        assert f"seat {seat} " in header and seat_token(SECRET_KEY, 1, seat) in header


@pytest.mark.parametrize("name", fixture_names())
def test_expectations_are_complete(name):
    spec = EXPECTED[name]
    assert spec["outcome"] in ("move", "refused", "ignored")
    assert spec.get("game", "pure-skill") in GAMES
    assert isinstance(spec.get("note"), str) and spec["note"].strip()
    if spec["outcome"] == "move":
        assert spec["replies"] == 1 and spec.get("notices", 0) == 0
        assert 0 <= spec["seat"] < 3 and spec["move"]
        assert START < spec["received"] < ROUND_1_DEADLINE
    elif spec["outcome"] == "refused":
        assert (spec["replies"], spec["notices"]) in ((0, 1), (1, 0))  # a forgery; a reply with no move
        assert 0 <= spec["seat"] < 3
        assert not {"move", "received"} & spec.keys()
    else:
        assert spec["replies"] == 0 and spec.get("notices", 0) == 0
        assert not {"seat", "move", "received"} & spec.keys()


@pytest.mark.parametrize(
    "name", [name for name in fixture_names() if EXPECTED.get(name, {}).get("outcome") in ("move", "refused")]
)
def test_a_reply_names_the_repliers_own_token_and_a_forgery_none(name):
    """What a mail client does with the prompt: reply to its Reply-To, and keep
    its subject tag.  A forger has neither."""
    spec = EXPECTED[name]
    raw = (FIXTURES / name).read_bytes()
    named = tokens_named(parse(raw, START), REFEREE)
    if spec["outcome"] == "refused" and spec["notices"]:
        assert named == []
        return
    message = read(raw)
    token = seat_token(SECRET_KEY, 1, spec["seat"])
    assert named == [token]
    to = [address.lower() for _, address in email.utils.getaddresses([str(message["To"])])]
    assert to == [token_address(REFEREE, token)]
    assert one_line(message["Delivered-To"]) == token_address(REFEREE, token)
    kind = spec.get("game", "pure-skill")
    if f"[{kind}-1" in one_line(message["Subject"]):
        assert f"[{kind}-1 {token}]" in one_line(message["Subject"])


@pytest.mark.parametrize("name", fixture_names())
def test_each_fixture_arrived_at_our_server_in_round_1_with_its_own_message_id(name):
    raw = (FIXTURES / name).read_bytes()
    message = read(raw)
    top = str((message.get_all("Received") or [""])[0])
    assert "mx.example.org" in top, "the top Received header is our server's"
    arrived = parsedate_to_datetime(top.rpartition(";")[2].strip())
    assert START < arrived < ROUND_1_DEADLINE
    ids = [one_line(read((FIXTURES / other).read_bytes())["Message-ID"]) for other in fixture_names()]
    assert ids.count(one_line(message["Message-ID"])) == 1


@pytest.mark.parametrize("name", cases())
def test_fixture_through_ingest(name, engine, clock):
    spec = EXPECTED[name]
    raw = (FIXTURES / name).read_bytes()
    message_id = one_line(read(raw)["Message-ID"])
    top = str((read(raw).get_all("Received") or [""])[0])
    players = spec.get("players", PLAYERS)
    kind = spec.get("game", "pure-skill")
    game_id = engine.new_game(kind, players)
    sealed = engine.table(game_id).open_phase["sealed"]
    before = snapshot(engine, game_id)
    clock.now = max(clock.now, parsedate_to_datetime(top.rpartition(";")[2].strip()))  # read as it arrives

    outcome = engine.ingest(raw)

    assert outcome.code == spec["outcome"], str(outcome)
    after = snapshot(engine, game_id)
    queued = [row for row in engine.store.outbox(None) if row["id"] not in before["outbox"]]
    replies = [row for row in queued if one_line(read(row["raw"])["In-Reply-To"]) == message_id]
    notices = [row for row in queued if row not in replies]
    assert len(replies) == spec["replies"]
    reply = body_of(replies[0]["raw"]) if replies else ""
    for phrase in spec.get("says", []):
        assert phrase in " ".join(reply.split()), reply
    for phrase in spec.get("never_says", []):
        assert phrase not in " ".join(reply.split()), reply
    if spec["outcome"] == "move" and not sealed:  # a turn: its result is announced to everyone
        assert {address for row in notices for address in row["recipients"]} == set(players)
    else:
        assert len(notices) == spec.get("notices", 0)

    if spec["outcome"] == "ignored":
        assert after == before, "ignored mail must change nothing and queue nothing"
        return

    if spec["outcome"] == "refused":
        unchanged = ("game", "seats", "phases", "moves")
        assert {k: after[k] for k in unchanged} == {k: before[k] for k in unchanged}
        if replies:  # a reply the referee found no move in: it says so, and what it read
            assert replies[0]["recipients"] == [players[spec["seat"]]]
            assert "Nothing was changed" in reply or "I found no command" in reply
            return
        (notice,) = notices
        assert notice["recipients"] == [players[spec["seat"]]]  # never the From's Reply-To
        headers = read(notice["raw"])
        assert message_id not in one_line(headers["References"])
        assert "not accepted" in notice["subject"]
        # no token: a reply to it proves no seat, so nothing in one can count
        assert headers["Reply-To"] is None
        assert (
            seat_address(engine, players[spec["seat"]]).partition("+")[2].partition("@")[0]
            not in notice["raw"].decode()
        )
        return

    assert outcome.game_id == game_id
    new = [move for move in after["moves"] if move not in before["moves"]]
    assert len(new) == 1
    move = new[0]
    assert (move["phase"], move["seat"], move["move"], move["source"]) == (1, spec["seat"], spec["move"], "mail")
    assert move["message_key"] == message_id
    assert move["received_at"] == iso(spec["received"])
    assert replies[0]["recipients"] == [players[spec["seat"]]]
    assert f"[{kind}-1 {seat_token(SECRET_KEY, 1, spec['seat'])}]" in replies[0]["subject"]
    assert f"{spec['move']}." in reply  # the receipt
    assert {k: after[k] for k in ("game", "seats")} == {k: before[k] for k in ("game", "seats")}
    if sealed:
        assert len(after["outbox"]) == len(before["outbox"]) + 1  # the reply, nothing else


def test_a_list_copy_read_first_does_not_swallow_the_players_own_copy(engine):
    """The list's copy of a bid is ignored; the player's direct copy, with
    the same Message-ID, must still count (not be taken for a duplicate)."""
    list_copy = (FIXTURES / "mailing-list-copy.eml").read_bytes()
    message = read(list_copy)
    sender = email.utils.parseaddr(str(message["From"]))[1]
    engine.new_game("pure-skill", [sender] + [p for p in PLAYERS if p != sender][:2])
    assert engine.ingest(list_copy).code == "ignored"
    # her direct copy goes to her private reply address (here she holds seat 0)
    direct = (
        f"Received: from client by mx.example.org; {message['Date']}\r\n"
        f"From: {sender}\r\nTo: {seat_address(engine, sender)}\r\n"
        f"Subject: Re: {engine.table(1).tag(0)} Round 1 of 13\r\n"
        f"Message-ID: {message['Message-ID']}\r\n\r\nbid 7\r\n"
    ).encode()
    assert engine.ingest(direct).code == "move"
    assert engine.ingest(direct).code == "duplicate"  # the direct copy itself only once
