"""Security: who may change a game by mail, and what hostile mail can do.

Issue 4, item 6 (and item 3): a forged From without a token; a valid token
with another From; a token of another game, or of a finished one; guessed
tokens; template syntax in what players send; hostile MIME handled in
bounded time and memory; and random or mutated mail that must never crash
ingest nor change a game it cannot prove a seat of.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import itertools
import re
import secrets
import signal
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from email import message_from_bytes, policy
from pathlib import Path
from typing import Any

import pytest
from conftest import PLAYERS, FakeClock, assert_clean_headers, body_of, make_mail, reply, seat_address
from fuzzmail import names_a_token
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.config import Config
from referee.engine import Engine
from referee.engine.seating import Seeds
from referee.mail.tokens import token_address
from referee.store import Store

ALICE, BOB, CAROL = PLAYERS
DAVE, ERIN = "dave@example.org", "erin@example.org"
STRANGER = "mallory@evil.example"
FORGER = "forger@evil.example"  # the Reply-To of a forged mail: must never hear anything
REFEREE = "referee@example.org"
ALICE_HAND = "A 2 3 4 5 6 7 8 9 10 J Q K"  # her hearts before round 1, as mails show a hand
BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
TOKEN_RE = re.compile(r"[a-z2-7]{16}")
_SERIAL = itertools.count(1)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mail"
FIXTURE_KEY = b"fixture-secret"  # the key the corpus's reply tokens are computed with


# -- helpers -----------------------------------------------------------------


def unique_id() -> str:
    """A Message-ID of our own: make_msgid's randomness is seeded by hypothesis,
    so two examples' make_msgid() can be equal, and the second a duplicate."""
    return f"<security-{next(_SERIAL)}@example.net>"


def build(tmp: Path, seeds: Seeds | None = None, **settings_: Any) -> Engine:
    """An engine over a fresh games.db in ``tmp``, on a FakeClock at START;
    its games' seeds from ``seeds`` (unset: the system's)."""
    config = Config(address=REFEREE, database=tmp / "games.db", reminder=None, outage_gap=None, **settings_)
    return Engine(Store(config.database), config, FakeClock(), seeds or secrets.token_bytes)


def with_config(engine: Engine, **changes: Any) -> Engine:
    """The same games.db and clock, read with other settings."""
    return Engine(engine.store, dataclasses.replace(engine.config, **changes), engine.clock)


def snapshot(engine: Engine) -> dict[int, dict[str, Any]]:
    """Every game as a message could change it: its row, seats, phases and moves."""
    return {
        game["id"]: {
            "game": game,
            "seats": engine.store.seats(game["id"]),
            "phases": engine.store.phases(game["id"]),
            "moves": engine.store.moves(game["id"]),
        }
        for game in engine.store.games()
    }


def outbox_size(engine: Engine) -> int:
    return len(engine.store.outbox(None))


def queued_since(engine: Engine, count: int) -> list[dict[str, Any]]:
    """The mail queued after the first ``count``."""
    return engine.store.outbox(None)[count:]


def headers_of(raw: bytes) -> Any:
    return message_from_bytes(raw, policy=policy.default)


def token_of(engine: Engine, player: str, game: int = 1) -> str:
    return seat_address(engine, player, game).partition("+")[2].partition("@")[0]


def mail_moves(engine: Engine, game: int = 1) -> list[dict[str, Any]]:
    return [m for m in engine.store.moves(game) if m["source"] == "mail"]


def assert_no_private_view(body: str) -> None:
    """A notice about a mail that proved nothing shows none of the seat's secrets."""
    assert "Your hand" not in body
    assert "hearts" not in body  # alice's suit: her hand is hearts
    assert ALICE_HAND not in body


def assert_only_to(mails: list[dict[str, Any]], address: str) -> None:
    """Exactly one mail, to ``address`` alone (its To header too)."""
    assert [m["recipients"] for m in mails] == [[address]]
    assert str(headers_of(mails[0]["raw"])["To"]) == address


def recipients_ever(engine: Engine) -> set[str]:
    return {address for m in engine.store.outbox(None) for address in m["recipients"]}


def play_to_the_end(engine: Engine, game: int) -> None:
    """Let every deadline of ``game`` pass: random bids fill each round."""
    for _ in range(40):
        if engine.store.game(game)["state"] == "finished":
            return
        engine.clock.advance(days=3, seconds=1)
        engine.tick()
    raise AssertionError(f"game {game} did not finish")


# -- item 3: a player's From without a token ------------------------------------


@pytest.mark.parametrize(
    "to, subject",
    [
        (REFEREE, "Re: Round 1 of 13"),
        ("referee+pure-skill-1@example.org", "Re: Round 1 of 13"),  # the old-style address
        (REFEREE, "Re: [pure-skill-1] Round 1 of 13: the prize is the 7 of spades"),
    ],
    ids=["plain-address", "old-plus-address", "subject-tag-without-token"],
)
def test_forged_from_without_token_changes_nothing_and_tells_only_the_seat(engine, to, subject):
    engine.new_game("pure-skill", PLAYERS)
    before, sent = snapshot(engine), outbox_size(engine)

    outcome = engine.ingest(make_mail(ALICE, "bid 7", to=to, subject=subject, headers={"Reply-To": FORGER}))

    assert outcome.code == "refused", str(outcome)
    assert f"{ALICE} was told" in outcome.detail
    assert snapshot(engine) == before
    assert mail_moves(engine) == []
    notice = queued_since(engine, sent)
    assert_only_to(notice, ALICE)
    assert FORGER not in recipients_ever(engine)
    assert_no_private_view(body_of(notice[0]["raw"]))


def test_forged_from_of_a_player_in_two_games_tells_only_her(engine):
    engine.new_game("pure-skill", PLAYERS)
    engine.new_game("pure-skill", [DAVE, ALICE, ERIN])
    before, sent = snapshot(engine), outbox_size(engine)

    outcome = engine.ingest(make_mail(ALICE, "bid 7", headers={"Reply-To": FORGER}))

    assert outcome.code == "refused", str(outcome)
    assert snapshot(engine) == before
    notice = queued_since(engine, sent)
    assert_only_to(notice, ALICE)
    assert FORGER not in recipients_ever(engine)
    assert_no_private_view(body_of(notice[0]["raw"]))


# -- item 3: a valid token with another From ------------------------------------


@pytest.mark.parametrize("sender", [BOB, STRANGER], ids=["another-seat", "stranger"])
@pytest.mark.parametrize("where", ["to", "subject"])
def test_valid_token_with_another_from_changes_nothing_and_tells_only_the_owner(engine, sender, where):
    engine.new_game("pure-skill", PLAYERS)
    token = token_of(engine, ALICE)
    kwargs = (
        {"to": token_address(REFEREE, token)}
        if where == "to"
        else {"subject": f"Re: [pure-skill-1 {token}] Round 1 of 13"}
    )
    before, sent = snapshot(engine), outbox_size(engine)

    outcome = engine.ingest(make_mail(sender, "bid 7\nresign", headers={"Reply-To": FORGER}, **kwargs))

    assert outcome.code == "refused", str(outcome)
    assert snapshot(engine) == before
    notice = queued_since(engine, sent)
    assert_only_to(notice, ALICE)  # the owner learns someone tried...
    body = body_of(notice[0]["raw"])
    assert sender in body  # ...and from which address
    assert_no_private_view(body)
    assert sender not in [r for m in notice for r in m["recipients"]]
    assert FORGER not in recipients_ever(engine)


def test_with_accept_token_alone_the_token_authenticates_and_the_owner_is_answered(engine):
    engine.new_game("pure-skill", PLAYERS)
    relaxed = with_config(engine, accept_token_alone=True)
    sent = outbox_size(relaxed)

    # bob's From, alice's token: the token decides the seat, not the From
    outcome = relaxed.ingest(make_mail(BOB, "bid 7", to=seat_address(relaxed, ALICE), headers={"Reply-To": FORGER}))

    assert outcome.code == "move", str(outcome)
    moves = mail_moves(relaxed)
    assert [(m["seat"], m["move"]) for m in moves] == [(0, "bid 7")]
    receipt = queued_since(relaxed, sent)
    assert_only_to(receipt, ALICE)
    assert "bid 7" in body_of(receipt[0]["raw"])
    assert BOB not in [r for m in receipt for r in m["recipients"]]
    assert FORGER not in recipients_ever(relaxed)

    sent = outbox_size(relaxed)
    outcome = relaxed.ingest(make_mail(STRANGER, "bid 9", to=seat_address(relaxed, ALICE)))
    assert outcome.code == "replaced", str(outcome)
    assert_only_to(queued_since(relaxed, sent), ALICE)
    assert STRANGER not in recipients_ever(relaxed)


# -- a token of another game -------------------------------------------------------


@pytest.mark.parametrize("where", ["to", "subject"])
def test_the_token_decides_the_game_not_the_subject(engine, where):
    engine.new_game("pure-skill", PLAYERS)
    engine.new_game("pure-skill", [DAVE, ALICE, ERIN])  # alice holds seat 1 of game 2
    token = token_of(engine, ALICE, game=2)
    kwargs = (
        {"to": token_address(REFEREE, token), "subject": "Re: [pure-skill-1] Round 1 of 13"}
        if where == "to"
        else {"subject": f"Re: [pure-skill-1 {token}] Round 1 of 13"}
    )
    before, sent = snapshot(engine), outbox_size(engine)

    outcome = engine.ingest(make_mail(ALICE, "bid 7", **kwargs))

    assert (outcome.code, outcome.game_id) == ("move", 2), str(outcome)
    after = snapshot(engine)
    assert after[1] == before[1], "game 1 must not change"
    assert [(m["seat"], m["move"]) for m in mail_moves(engine, 2)] == [(1, "bid 7")]
    receipt = queued_since(engine, sent)
    assert_only_to(receipt, ALICE)
    assert f"[pure-skill-2 {token}]" in receipt[0]["subject"]


@pytest.mark.parametrize("sender", [CAROL, DAVE], ids=["seat-in-other-game", "other-seat-same-game"])
def test_another_games_token_with_a_from_that_holds_no_such_seat_changes_nothing(engine, sender):
    engine.new_game("pure-skill", PLAYERS)  # carol plays game 1 only
    engine.new_game("pure-skill", [DAVE, ALICE, ERIN])
    before, sent = snapshot(engine), outbox_size(engine)

    outcome = engine.ingest(make_mail(sender, "bid 7", to=seat_address(engine, ALICE, 2), headers={"Reply-To": FORGER}))

    assert outcome.code == "refused", str(outcome)
    assert snapshot(engine) == before
    assert_only_to(queued_since(engine, sent), ALICE)
    assert FORGER not in recipients_ever(engine)


# -- a token of a finished game -------------------------------------------------------


@pytest.mark.parametrize("where", ["to", "subject"])
def test_a_finished_games_token_takes_no_command(engine, where):
    engine.new_game("pure-skill", PLAYERS)
    play_to_the_end(engine, 1)
    engine.new_game("pure-skill", [DAVE, ALICE, ERIN])  # a running game of alice's
    token = token_of(engine, ALICE, game=1)
    kwargs = (
        {"to": token_address(REFEREE, token)}
        if where == "to"
        else {"subject": f"Re: [pure-skill-1 {token}] Final result"}
    )
    before, sent = snapshot(engine), outbox_size(engine)

    outcome = engine.ingest(make_mail(ALICE, "bid 7\nresign\nstatus", received=engine.clock(), **kwargs))

    assert outcome.code == "refused", str(outcome)
    assert snapshot(engine) == before, "neither the finished game nor her running one changes"
    answer = queued_since(engine, sent)
    assert_only_to(answer, ALICE)
    assert "Game 1 has ended" in body_of(answer[0]["raw"])


def test_a_finished_games_token_with_another_from_tells_only_the_owner(engine):
    engine.new_game("pure-skill", PLAYERS)
    play_to_the_end(engine, 1)
    before, sent = snapshot(engine), outbox_size(engine)

    outcome = engine.ingest(make_mail(BOB, "bid 7", to=seat_address(engine, ALICE), headers={"Reply-To": FORGER}))

    assert outcome.code == "refused", str(outcome)
    assert snapshot(engine) == before
    assert_only_to(queued_since(engine, sent), ALICE)
    assert FORGER not in recipients_ever(engine)


# -- guessed tokens ------------------------------------------------------------------


def test_guessed_tokens_never_authenticate(tmp_path):
    engine = build(tmp_path, replies_per_hour=10**6)
    engine.new_game("pure-skill", PLAYERS)
    real = {seat["token"] for seat in engine.store.seats(1)}
    before = snapshot(engine)

    @settings(max_examples=20, deadline=None, derandomize=True, database=None)
    @given(guess=st.text(alphabet=BASE32, min_size=16, max_size=16), where=st.sampled_from(["to", "subject"]))
    def check(guess: str, where: str) -> None:
        if guess in real:  # 1 in 2**80: not a guess any more
            return
        kwargs = (
            {"to": token_address(REFEREE, guess)}
            if where == "to"
            else {"subject": f"Re: [pure-skill-1 {guess}] Round 1 of 13"}
        )
        sent = outbox_size(engine)
        outcome = engine.ingest(make_mail(ALICE, "bid 7", message_id=unique_id(), **kwargs))
        assert outcome.code == "refused", str(outcome)
        assert snapshot(engine) == before
        assert {r for m in queued_since(engine, sent) for r in m["recipients"]} <= {ALICE}

    check()


def test_a_token_one_character_off_never_authenticates(engine):
    engine.new_game("pure-skill", PLAYERS)
    token = token_of(engine, ALICE)
    before = snapshot(engine)
    for position in range(len(token)):
        for other in {BASE32[(BASE32.index(token[position]) + step) % 32] for step in (1, 17)}:
            guess = token[:position] + other + token[position + 1 :]
            outcome = engine.ingest(make_mail(ALICE, "bid 7", to=token_address(REFEREE, guess)))
            assert outcome.code == "refused", (guess, str(outcome))
            assert snapshot(engine) == before, guess
    # and the real one does: the mails above failed for their tokens alone
    assert engine.ingest(reply(engine, ALICE, "bid 7")).code == "move"


# -- the tokens themselves ---------------------------------------------------------------


def documented_token(key: bytes, game: int, seat: int) -> str:
    """docs/design.md: HMAC-SHA256(secret key, "seat" 0x1f game 0x1f seat),
    base32, lower case, the first 16 characters."""
    digest = hmac.new(key, b"\x1f".join([b"seat", str(game).encode(), str(seat).encode()]), hashlib.sha256).digest()
    return base64.b32encode(digest).decode().lower()[:16]


def test_tokens_follow_the_documented_recipe_and_differ_per_seat_game_and_key(tmp_path):
    tokens = {}
    for key in (b"first-key", b"second-key"):
        (tmp_path / key.decode()).mkdir()
        engine = build(tmp_path / key.decode(), secret_key=key)
        engine.new_game("pure-skill", PLAYERS)
        engine.new_game("pure-skill", [DAVE, ALICE, ERIN])
        for game in (1, 2):
            for seat in engine.store.seats(game):
                token = seat["token"]
                assert TOKEN_RE.fullmatch(token), token
                assert token == documented_token(key, game, seat["seat"])
                tokens[key, game, seat["seat"]] = token
        # every mail to a seat carries its token, in the Reply-To and the subject tag
        for mail in engine.store.outbox(None):
            address = mail["recipients"][0]
            game = mail["game_id"]
            token = seat_address(engine, address, game).partition("+")[2].partition("@")[0]
            assert str(headers_of(mail["raw"])["Reply-To"]) == token_address(REFEREE, token)
            assert f"[pure-skill-{game} {token}]" in mail["subject"]
    assert len(set(tokens.values())) == len(tokens) == 12


def test_without_a_configured_key_tokens_are_random_per_database_and_kept(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first, second = build(tmp_path / "a"), build(tmp_path / "b")
    for engine in (first, second):
        engine.new_game("pure-skill", PLAYERS)
    ours = [s["token"] for s in first.store.seats(1)]
    assert all(TOKEN_RE.fullmatch(t) for t in ours)
    assert set(ours).isdisjoint(s["token"] for s in second.store.seats(1))
    reopened = Engine(Store(first.config.database), first.config, FakeClock())
    assert [reopened.seating.token(1, seat) for seat in range(3)] == ours
    assert ours != [documented_token(b"", 1, seat) for seat in range(3)]


# -- template syntax in what players send ------------------------------------------------

# Each alone (so one that a renderer would choke on cannot hide another it
# would evaluate), and all together.
PAYLOADS = ["<script>alert(1)</script>", "{{ 7*7 }}", "{{7*7}}", "{% raw %}", "${x}", "{# gone? #}", "{{ config }}"]
PAYLOADS.append(" ".join(PAYLOADS))
EVIL_CASES = pytest.mark.parametrize("evil", PAYLOADS, ids=[f"payload{i}" for i in range(len(PAYLOADS))])


@EVIL_CASES
def test_template_syntax_in_a_players_subject_and_lines_is_quoted_literally(engine, evil):
    engine.new_game("pure-skill", PLAYERS)
    sent = outbox_size(engine)
    raw = reply(engine, ALICE, f"{evil}\nbid 7", subject=f"Re: [pure-skill-1] {evil}")
    raw = raw.replace(f"From: {ALICE}".encode(), f'From: "{evil}" <{ALICE}>'.encode())

    outcome = engine.ingest(raw)

    assert outcome.code == "move", str(outcome)
    answer = queued_since(engine, sent)
    assert_only_to(answer, ALICE)
    body = body_of(answer[0]["raw"])
    assert f"> {evil}" in body.splitlines()  # the line quoted as written, never evaluated
    assert evil in answer[0]["subject"]
    assert evil in str(headers_of(answer[0]["raw"])["Subject"])


@EVIL_CASES
def test_template_syntax_in_a_forged_mail_is_shown_literally_to_the_owner(engine, evil):
    engine.new_game("pure-skill", PLAYERS)
    sent = outbox_size(engine)
    sender = "{{7*7}}@evil.example"
    raw = make_mail(f'"{evil}" <{sender}>', "bid 7", to=seat_address(engine, ALICE), subject=f"Re: {evil}")

    outcome = engine.ingest(raw)

    assert outcome.code == "refused", str(outcome)
    notice = queued_since(engine, sent)
    assert_only_to(notice, ALICE)
    body = body_of(notice[0]["raw"])
    assert sender in body and "49" not in body  # the address shown as it was, never evaluated
    assert evil not in body.replace(sender, "") and evil not in notice[0]["subject"]  # nor their subject


@EVIL_CASES
def test_template_syntax_from_a_stranger_is_neither_run_nor_repeated(engine, evil):
    engine.new_game("pure-skill", PLAYERS)
    sender = "{{7*7}}@evil.example"
    sent = outbox_size(engine)

    outcome = engine.ingest(make_mail(f'"{evil}" <{sender}>', f"{evil}\nhelp", subject=evil))

    assert outcome.code not in ("failed", "ignored"), str(outcome)
    answer = queued_since(engine, sent)
    assert_only_to(answer, sender)
    body, subject = body_of(answer[0]["raw"]), answer[0]["subject"]
    assert evil not in body and evil not in subject  # mail that proves nothing is not quoted
    assert "49" not in body and "> HELP" in body.splitlines()


@pytest.mark.parametrize("name", ["<b>{{7*7}}</b>", "<b>{{ 7*7 }}</b> {% raw %} ${x} {# gone? #}"])
def test_template_syntax_in_a_game_name_and_addresses_is_shown_literally(engine, name):
    players = ["{{7*7}}@example.org", "{%raw%}@example.org", "${x}@example.org"]
    engine.new_game("pure-skill", players, name=name)
    start = [m for m in engine.store.outbox(None) if "begins" in m["subject"]]
    assert [m["recipients"] for m in start] == [[p] for p in players]
    for mail in start:
        body = body_of(mail["raw"])
        assert mail["subject"].endswith(f"A Game of Pure Skill begins: {name}")
        assert f'"{name}"' in body
        for player in players:
            assert f". {player} - " in body  # the seating list shows each address as it is

    sent = outbox_size(engine)
    outcome = engine.ingest(reply(engine, players[0], "bid 7\nstatus"))
    assert outcome.code == "move", str(outcome)
    answer = queued_since(engine, sent)
    assert_only_to(answer, players[0])
    body = body_of(answer[0]["raw"])
    assert f'"{name}"' in body and players[1] in body


# -- hostile MIME ------------------------------------------------------------------------

CPU_BOUND = 10.0  # seconds of CPU time for one message: generous, so load cannot flake it
WALL_BOUND = 60.0  # seconds of wall-clock time: the box may be busy with other tests
MEMORY_BOUND = 200 * 2**20  # bytes, peak of Python allocations while one message is read


class Overrun(BaseException):
    """Raised into ingest when it runs past a bound (not an Exception, so
    ingest cannot swallow it as a handled failure)."""


@contextmanager
def within(cpu_seconds: float, traced_bytes: int | None = None) -> Iterator[None]:
    """Interrupt the code inside once it has used ``cpu_seconds`` of this
    process's CPU time, or (with tracemalloc on) holds ``traced_bytes``."""
    start = time.process_time()

    def check(signum: int, frame: Any) -> None:
        if time.process_time() - start > cpu_seconds:
            raise Overrun(f"over {cpu_seconds} s of CPU time")
        if traced_bytes is not None and tracemalloc.get_traced_memory()[0] > traced_bytes:
            raise Overrun(f"over {traced_bytes // 2**20} MB of memory")

    previous = signal.signal(signal.SIGPROF, check)
    signal.setitimer(signal.ITIMER_PROF, 0.05, 0.05)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def hostile_head(sender: str = STRANGER, subject: str = "hello") -> str:
    return (
        f"Received: from evil.example by mx.example.org; Sat, 21 Nov 2026 13:00:00 +0000\r\n"
        f"From: {sender}\r\nTo: {REFEREE}\r\nReply-To: {FORGER}\r\nSubject: {subject}\r\n"
        f"Message-ID: {unique_id()}\r\n"
        "MIME-Version: 1.0\r\n"
    )


def deep_nesting(depth: int) -> bytes:
    opening = "".join(f'Content-Type: multipart/mixed; boundary="b{i}"\r\n\r\n--b{i}\r\n' for i in range(depth))
    closing = "".join(f"\r\n--b{i}--" for i in reversed(range(depth)))
    body = "Content-Type: text/plain\r\n\r\nbid 7\r\n"
    return (hostile_head() + opening + body + closing + "\r\n").encode()


def rfc822_nesting(depth: int) -> bytes:
    inner = "".join(f"From: x{i}@evil.example\r\nContent-Type: message/rfc822\r\n\r\n" for i in range(depth))
    return (
        hostile_head() + "Content-Type: message/rfc822\r\n\r\n" + inner + "Content-Type: text/plain\r\n\r\nbid 7\r\n"
    ).encode()


def many_parts(count: int) -> bytes:
    parts = "".join("--b\r\nContent-Type: text/plain\r\n\r\nbid 7\r\n" for _ in range(count))
    return (hostile_head() + 'Content-Type: multipart/mixed; boundary="b"\r\n\r\n' + parts + "--b--\r\n").encode()


def base64_bomb(size: int) -> bytes:
    encoded = base64.encodebytes(b"A" * size).decode().replace("\n", "\r\n")
    return (
        hostile_head() + "Content-Type: text/plain; charset=us-ascii\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\n" + encoded
    ).encode()


def many_headers(name: str, count: int) -> bytes:
    value = {
        "X-Junk": "x{}",
        "To": "someone{}@example.net",
        "Received": "from relay{}.example.net by mx.example.org; Sat, 21 Nov 2026 12:30:00 +0000",
    }[name]
    extra = "".join(f"{name}: {value.format(i)}\r\n" for i in range(count))
    return (hostile_head() + extra + "Content-Type: text/plain\r\n\r\nbid 7\r\n").encode()


def huge_header(name: str) -> bytes:
    value = "a " * 2**19  # 1 MB of words: what a header parser must tokenize
    if name == "Subject":
        head = hostile_head(subject=value)
    else:
        head = hostile_head() + f"{name}: {value}\r\n"
    return (head + "Content-Type: text/plain\r\n\r\nbid 7\r\n").encode()


def parts_behind_an_encoded_word(count: int) -> bytes:
    """Parts of a multipart whose type and boundary stand in an encoded word,
    which the counting pass did not decode and the parser did (23 s once)."""
    parts = "".join("--b\r\nContent-Type: text/plain\r\n\r\nbid 7\r\n" for _ in range(count))
    return (
        hostile_head() + "Content-Type: =?utf-8?q?multipart=2Fmixed=3B_boundary=3Db?=\r\n\r\n" + parts + "--b--\r\n"
    ).encode()


def semicolon_parts(count: int) -> bytes:
    """Parts whose Content-Type and Content-Disposition hold 8 KB of ";" (133 s once)."""
    field = "text/plain" + ";" * 8170
    parts = "".join(
        f"--b\r\nContent-Type: {field}\r\nContent-Disposition: {field}\r\n\r\nbid 7\r\n" for _ in range(count)
    )
    return (hostile_head() + 'Content-Type: multipart/mixed; boundary="b"\r\n\r\n' + parts + "--b--\r\n").encode()


def comma_address_fields(count: int) -> bytes:
    """Recipient fields of 8 KB of "," each (66 s once)."""
    names = ("Cc", "To", "Delivered-To", "X-Original-To")
    extra = "".join(f"{names[i % 4]}: {',' * 8190}\r\n" for i in range(count))
    return (hostile_head() + extra + "Content-Type: text/plain\r\n\r\nbid 7\r\n").encode()


HOSTILE = {
    "nested-2000-deep": (lambda: deep_nesting(2000), {}),
    "rfc822-nested-2000-deep": (lambda: rfc822_nesting(2000), {}),
    "one-1MB-header": (lambda: huge_header("X-Junk"), {}),
    "1MB-subject": (lambda: huge_header("Subject"), {}),
    "10000-headers": (lambda: many_headers("X-Junk", 10_000), {}),
    "10000-to-headers": (lambda: many_headers("To", 10_000), {}),
    "10000-received-headers": (lambda: many_headers("Received", 10_000), {}),
    "base64-4MB-of-one-byte": (lambda: base64_bomb(4 * 2**20), {"max_message_size": 8 * 2**20}),
    "5000-tiny-parts": (lambda: many_parts(5000), {}),
    "60000-tiny-parts": (lambda: many_parts(60_000), {}),  # 2.4 MB
    "120000-tiny-parts-behind-an-encoded-word": (lambda: parts_behind_an_encoded_word(120_000), {}),  # 4.8 MB
    "50000-to-headers": (lambda: many_headers("To", 50_000), {}),
    "50000-received-headers": (lambda: many_headers("Received", 50_000), {}),
    # fields the standard library parses in time quadratic in their length
    "190-parts-of-8KB-semicolon-content-fields": (lambda: semicolon_parts(190), {}),
    "496-address-fields-of-8KB-commas": (lambda: comma_address_fields(496), {}),
}
HOSTILE_CASES = [pytest.param(name, id=name) for name in HOSTILE]


def ingest_bounded(tmp: Path, raw: bytes, **settings_: Any) -> tuple[Engine, Any, dict[str, Any]]:
    """Ingest ``raw`` into a running game within the time bounds; returns the
    engine, the outcome, and the snapshot from before."""
    engine = build(tmp, **settings_)
    engine.new_game("pure-skill", PLAYERS)
    before = snapshot(engine)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        with within(CPU_BOUND):
            outcome = engine.ingest(raw)
    except Overrun as overrun:
        raise AssertionError(f"ingest ran {overrun}") from None
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert cpu < CPU_BOUND and wall < WALL_BOUND, f"{cpu:.1f} s CPU, {wall:.1f} s wall"
    return engine, outcome, before


def peak_memory(tmp: Path, raw: bytes, **settings_: Any) -> int:
    """The peak of Python's allocations while ``raw`` is ingested (at most a
    little over MEMORY_BOUND: the run is stopped there)."""
    engine = build(tmp, **settings_)
    engine.new_game("pure-skill", PLAYERS)
    tracemalloc.start()
    try:
        with within(6 * CPU_BOUND, MEMORY_BOUND):  # tracing costs time
            engine.ingest(raw)
        return tracemalloc.get_traced_memory()[1]
    except Overrun as overrun:
        raise AssertionError(f"ingest ran {overrun}") from None
    finally:
        tracemalloc.stop()


# An Overrun that lands in a garbage collector callback is reported and
# ignored there; the next tick of the timer raises it again.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("case", HOSTILE_CASES)
def test_hostile_mime_is_handled_in_bounded_time_and_memory(tmp_path, case):
    make, settings_ = HOSTILE[case]
    raw = make()
    assert len(raw) <= settings_.get("max_message_size", Config.max_message_size), "not oversized"
    (tmp_path / "timed").mkdir(), (tmp_path / "traced").mkdir()

    engine, outcome, before = ingest_bounded(tmp_path / "timed", raw, **settings_)

    assert outcome.code != "failed", str(outcome)
    assert snapshot(engine) == before
    assert FORGER not in recipients_ever(engine)
    assert len(engine.store.messages()) == 1, "the message is recorded, once"
    peak = peak_memory(tmp_path / "traced", raw, **settings_)
    assert peak < MEMORY_BOUND, f"{peak // 2**20} MB"


def test_a_message_just_over_the_size_limit_is_not_read(engine):
    engine.new_game("pure-skill", PLAYERS)
    small = with_config(engine, max_message_size=4096)
    raw = reply(small, ALICE, "bid 7\n" + "x" * 4096, headers={"Reply-To": FORGER})
    assert 4096 < len(raw) < 4096 + 1024
    before, sent = snapshot(small), outbox_size(small)

    outcome = small.ingest(raw)

    assert (outcome.code, outcome.detail) == ("refused", "too large to read"), str(outcome)
    assert snapshot(small) == before
    assert_only_to(queued_since(small, sent), ALICE)  # the From, never the Reply-To
    assert FORGER not in recipients_ever(small)


@pytest.mark.parametrize("where", ["line", "subject"])
def test_the_answer_to_a_huge_line_stays_small(engine, where):
    engine.new_game("pure-skill", PLAYERS)
    huge = "x" * 2**20
    raw = make_mail(STRANGER, huge) if where == "line" else make_mail(STRANGER, "help", subject=huge)
    sent = outbox_size(engine)

    outcome = engine.ingest(raw)

    assert outcome.code != "failed", str(outcome)
    answer = queued_since(engine, sent)
    assert [m["recipients"] for m in answer] == [[STRANGER]]
    assert len(answer[0]["raw"]) < 64 * 1024, f"{len(answer[0]['raw'])} bytes mailed back"


@pytest.mark.parametrize("header", ["To", "Cc", "From", "Delivered-To", "X-Original-To"])
def test_a_malformed_group_address_does_not_crash_ingest(engine, header):
    engine.new_game("pure-skill", PLAYERS)
    before = snapshot(engine)
    raw = make_mail(STRANGER, "bid 7", headers={header: "a,b:c;d"})
    if header == "From":
        raw = raw.replace(f"From: {STRANGER}\r\n".encode(), b"")

    outcome = engine.ingest(raw)

    assert outcome.code != "failed", str(outcome)
    assert snapshot(engine) == before
    assert len(engine.store.messages()) == 1


# -- property tests: random and mutated mail ---------------------------------------------


def corpus() -> dict[str, bytes]:
    """The fixture corpus as test_fixtures.py loads it (whatever bytes are there now)."""
    return {path.name: path.read_bytes() for path in sorted(FIXTURES.glob("*.eml"))}


def _duplicate_header(raw: bytearray, index: int) -> bytearray:
    head, sep, body = bytes(raw).partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = bytes(raw).partition(b"\n\n")
    lines = head.splitlines(keepends=True)
    if not lines:
        return raw
    line = lines[index % len(lines)]
    lines.insert(index % len(lines), line)
    return bytearray(b"".join(lines) + sep + body)


@st.composite
def mutated_fixtures(draw: st.DrawFn, fixtures: dict[str, bytes]) -> bytes:
    raw = bytearray(fixtures[draw(st.sampled_from(sorted(fixtures)))])
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "duplicate_header", "replace_token"]))
        at = draw(st.integers(0, max(len(raw) - 1, 0)))
        if op == "flip" and raw:
            raw[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            raw[at:at] = draw(st.binary(min_size=1, max_size=64))
        elif op == "delete":
            del raw[at : at + draw(st.integers(1, 256))]
        elif op == "truncate":
            del raw[at:]
        elif op == "duplicate_header":
            raw = _duplicate_header(raw, at)
        elif op == "replace_token":
            other = draw(st.text(alphabet=BASE32, min_size=0, max_size=20)).encode()
            raw = bytearray(
                re.sub(
                    rb"(?i)(?<=referee\+)[a-z0-9-]+(?=@)|(?<=\[pure-skill-1 )[a-z2-7]+",
                    lambda _m, other=other: other,
                    bytes(raw),
                )
            )
    return bytes(raw)


PROPERTY = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


def test_random_bytes_never_crash_ingest_nor_change_a_game(tmp_path):
    engine = build(tmp_path)
    engine.new_game("pure-skill", PLAYERS)
    before = snapshot(engine)

    @settings(max_examples=35, **PROPERTY)
    @given(raw=st.binary(max_size=4096))
    def check(raw: bytes) -> None:
        outcome = engine.ingest(raw)
        assert outcome.code != "failed", str(outcome)
        assert snapshot(engine) == before

    check()


def test_random_bodies_from_players_without_tokens_never_change_a_game(tmp_path):
    engine = build(tmp_path, replies_per_hour=10**6)
    engine.new_game("pure-skill", PLAYERS)
    before = snapshot(engine)

    @settings(max_examples=25, **PROPERTY)
    @given(sender=st.sampled_from(PLAYERS + [STRANGER]), subject=st.text(max_size=80), body=st.binary(max_size=2048))
    def check(sender: str, subject: str, body: bytes) -> None:
        head = make_mail(sender, "", subject=" ".join(subject.split()), message_id=unique_id()).rstrip(b"\r\n")
        outcome = engine.ingest(head + b"\r\n" + body)
        assert outcome.code != "failed", str(outcome)
        assert snapshot(engine) == before

    check()


def test_mutated_fixtures_without_a_valid_token_never_change_a_game(tmp_path):
    fixtures = corpus()
    assert fixtures, f"no fixtures in {FIXTURES}"  # the corpus is part of the repository
    # Another key than the corpus's: no token in it (mutated or not) is valid here.
    engine = build(tmp_path, secret_key=b"not-the-fixture-secret", replies_per_hour=10**6)
    engine.new_game("pure-skill", PLAYERS)
    before = snapshot(engine)

    @settings(max_examples=45, **PROPERTY)
    @given(raw=mutated_fixtures(fixtures))
    def check(raw: bytes) -> None:
        outcome = engine.ingest(raw)
        assert outcome.code != "failed", str(outcome)
        assert snapshot(engine) == before

    check()


def test_mutated_fixtures_with_their_tokens_never_crash_ingest(tmp_path):
    fixtures = corpus()
    assert fixtures, f"no fixtures in {FIXTURES}"  # the corpus is part of the repository
    engine = build(tmp_path, secret_key=FIXTURE_KEY, replies_per_hour=10**6)
    engine.new_game("pure-skill", PLAYERS)
    tokens = {seat["token"] for seat in engine.store.seats(1)}

    @settings(max_examples=25, **PROPERTY)
    @given(raw=mutated_fixtures(fixtures))
    def check(raw: bytes) -> None:
        before = snapshot(engine)
        outcome = engine.ingest(raw)
        assert outcome.code != "failed", str(outcome)
        if not names_a_token(raw, tokens):  # then it cannot prove a seat: nothing may change
            assert snapshot(engine) == before

    check()


# -- issue 29: mail whose reading took time growing with the square of its size -------------

READING_BOUND = 2.0  # seconds of CPU for any one mail up to the maximum size (5 MB)
ATTRIBUTION = "On Sat, 21 Nov 2026 at 12:00, Referee <referee@example.org> wrote:"
# What the review found (and what it cost then): bench/reading.py has these and their kin at up to 10 MB
ISSUE_29 = {
    "attributions above long lines, 1 MB (14 s)": (
        "text/plain",
        "bid 7\n" + (ATTRIBUTION + "\n") * 4900 + ("lorem " * 5500 + "\n") * 24,
    ),
    "'<a ' repeated, 120 KB (96 s)": ("text/html", "<p>bid 7</p>" + "<a " * 40_000),
    "flowed, every line continuing, 5 MB (53 s)": (
        "text/plain; format=flowed",
        "bid 7\n\n" + "lorem ipsum \n" * 380_000,
    ),
    "lines a pattern backtracked on, above indented ones, 1.5 MB (15 s)": (
        "text/plain",
        "bid 7\n" + ("* " + "[1" * 149 + "\n  x\n") * 5000,
    ),
    "5,000 x 'On x wrote:', 60 KB (2.9 s)": ("text/plain", "bid 7\n" + "On x wrote:\n" * 5000),
}


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("case", list(ISSUE_29))
def test_mail_issue_29_found_slow_is_read_within_two_seconds(engine, case):
    engine.new_game("pure-skill", PLAYERS)
    content_type, body = ISSUE_29[case]
    raw = (
        f"From: {ALICE}\r\nTo: {seat_address(engine, ALICE)}\r\nSubject: Re: Round 1\r\n"
        f"Message-ID: {unique_id()}\r\nContent-Type: {content_type}; charset=utf-8\r\n\r\n{body}"
    ).encode()
    assert len(raw) <= engine.config.max_message_size

    try:
        with within(READING_BOUND):
            outcome = engine.ingest(raw)
    except Overrun as overrun:
        raise AssertionError(f"ingest ran {overrun}") from None

    assert outcome.code == "move", str(outcome)


# -- issue 12: what a fuzzer found in the mail parser ---------------------------------------


def distinct_headers(count: int) -> bytes:
    """``count`` header fields, each of its own name: cutting them must not
    take time per name (a quadratic cut took 50 s over 20,000 of them)."""
    extra = "".join(f"X-H{i}: x\r\n" for i in range(count))
    return (hostile_head() + extra + "Content-Type: text/plain\r\n\r\nhelp\r\n").encode()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_many_distinct_header_names_are_handled_in_bounded_time_and_memory(tmp_path):
    raw = distinct_headers(20_000)
    assert 200 * 1024 < len(raw) < Config.max_message_size  # 249 KB, far under the limit
    (tmp_path / "timed").mkdir(), (tmp_path / "traced").mkdir()

    engine, outcome, before = ingest_bounded(tmp_path / "timed", raw)

    assert outcome.code != "failed", str(outcome)
    assert snapshot(engine) == before
    assert FORGER not in recipients_ever(engine)
    assert len(engine.store.messages()) == 1
    peak = peak_memory(tmp_path / "traced", raw)
    assert peak < MEMORY_BOUND, f"{peak // 2**20} MB"


def plain_from_stranger(content_type: str, body: bytes, extra: str = "") -> bytes:
    return (
        hostile_head() + extra + f"Content-Type: {content_type}\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
    ).encode() + body


REGRESSIONS = Path(__file__).resolve().parents[1] / "fixtures" / "fuzz"


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in sorted(REGRESSIONS.glob("*.eml"))])
def test_mail_that_once_failed_gets_a_polite_answer_or_silence(engine, path):
    """Each regression fixture (mail the fuzzer found the referee failing on)
    as it is: answered or not, never failed, nothing changed, the answer's
    headers clean and to the sender alone."""
    engine.new_game("pure-skill", PLAYERS)
    before, sent = snapshot(engine), outbox_size(engine)

    outcome = engine.ingest(path.read_bytes())

    assert outcome.code in ("done", "refused", "ignored"), str(outcome)
    assert snapshot(engine) == before
    answers = queued_since(engine, sent)
    assert {r for m in answers for r in m["recipients"]} <= {STRANGER}
    for answer in answers:
        assert_clean_headers(answer["raw"])
    assert len(engine.store.messages()) == 1, "the message is recorded, once"


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_body_in_a_charset_of_quadratic_decoding_is_read_in_bounded_time(tmp_path):
    raw = plain_from_stranger("text/plain; charset=punycode", b"x-" + b"ab" * 2**19)  # 1 MB

    engine, outcome, before = ingest_bounded(tmp_path, raw)

    assert outcome.code != "failed", str(outcome)
    assert snapshot(engine) == before


def with_from(raw: bytes, value: str) -> bytes:
    """``raw`` (as make_mail builds it, From alice) with another From field."""
    return raw.replace(f"From: {ALICE}\r\n".encode(), f"From: {value}\r\n".encode(), 1)


@pytest.mark.parametrize("extra", ["References", "X-Junk"])
def test_a_reply_with_a_utf8_name_and_a_long_header_is_her_move(engine, extra):
    engine.new_game("pure-skill", PLAYERS)
    sent = outbox_size(engine)
    long = " ".join(f"<thread-{i}@example.net>" for i in range(400))  # 9 KB: a long thread
    raw = with_from(reply(engine, ALICE, "bid 7", headers={extra: long}), f"Al\u00efce <{ALICE}>")

    outcome = engine.ingest(raw)

    assert outcome.code == "move", str(outcome)
    assert [(m["seat"], m["move"]) for m in mail_moves(engine)] == [(0, "bid 7")]
    assert_only_to(queued_since(engine, sent), ALICE)  # her receipt, no forgery notice


def test_a_reply_whose_from_comes_after_600_header_fields_is_her_move(engine):
    engine.new_game("pure-skill", PLAYERS)
    raw = reply(engine, ALICE, "bid 7")
    junk = "".join(f"X-Relay-{i}: hop {i}\r\n" for i in range(600)).encode()
    raw = junk + raw  # a relay's many fields above all of hers

    outcome = engine.ingest(raw)

    assert outcome.code == "move", str(outcome)
    assert [(m["seat"], m["move"]) for m in mail_moves(engine)] == [(0, "bid 7")]


AMBIGUOUS_FROMS = {
    "address-as-name": f"{ALICE} <{STRANGER}>",
    "address-after-brackets": f"<{ALICE}> {STRANGER}",
    "whole-from-encoded": "=?utf-8?q?alice@example.org?=",
    "quote-in-address": 'ali"ce@example.org',
    "two-froms": f"{ALICE}\r\nFrom: {STRANGER}",
}


@pytest.mark.parametrize("value", [pytest.param(v, id=k) for k, v in AMBIGUOUS_FROMS.items()])
def test_a_reply_with_an_ambiguous_from_is_nobodys_and_changes_nothing(engine, value):
    engine.new_game("pure-skill", PLAYERS)
    before, sent = snapshot(engine), outbox_size(engine)

    outcome = engine.ingest(with_from(reply(engine, ALICE, "bid 7"), value))

    assert outcome.code == "ignored", str(outcome)  # from nobody: never answered
    assert snapshot(engine) == before
    assert queued_since(engine, sent) == []
    assert len(engine.store.messages()) == 1, "the message is still stored"


# -- issue 12: what the referee writes back --------------------------------------------------


HOSTILE_SUBJECTS = {
    "5000-characters-without-a-space": "x" * 5000,
    "nul-and-escape": "bid\x00 7\x1b[2J",
    "vertical-tab": "=?utf-8?q?Re:_x=0BBcc:_eve@example.org?=",
    "file-separators": "=?utf-8?q?x=1C=1D=1Ey?=",
    "next-line-and-separators": "=?utf-8?b?" + base64.b64encode("a\x85b\u2028c\u2029d".encode()).decode() + "?=",
    "lone-surrogate-utf7": "=?utf-7?q?+2AA-?=",
    "lone-surrogate-escape": "=?unicode_escape?q?=5Cud800?=",
}


@pytest.mark.parametrize("subject", [pytest.param(v, id=k) for k, v in HOSTILE_SUBJECTS.items()])
@pytest.mark.parametrize("who", ["stranger", "player"])
def test_a_reply_to_a_hostile_subject_has_clean_headers(engine, subject, who):
    engine.new_game("pure-skill", PLAYERS)
    sent = outbox_size(engine)
    if who == "stranger":
        raw = make_mail(STRANGER, "help", subject=subject, to=REFEREE)
    else:
        raw = reply(engine, ALICE, "bid 7", subject=subject)

    outcome = engine.ingest(raw)

    assert outcome.code in ("done", "move"), str(outcome)
    [answer] = queued_since(engine, sent)
    assert_clean_headers(answer["raw"])
    assert answer["subject"].isprintable()  # as `referee outbox` prints it to the keeper
    names = set(headers_of(answer["raw"]).keys())  # none smuggled in, none pushed into the body
    assert names - {"Reply-To", "List-Unsubscribe"} == {
        "From",
        "To",
        "Subject",
        "Date",
        "Message-ID",
        "In-Reply-To",
        "References",
        "Auto-Submitted",
        "Content-Type",
        "MIME-Version",
        "Content-Transfer-Encoding",
    }
    assert ("List-Unsubscribe" in names) == (who == "player")  # a seat's mail, and only it (issue 33)


@pytest.mark.parametrize(
    "charset, body",
    [
        ("utf-7", b"bid +2AA-\r\n"),  # a lone surrogate in the line quoted back
        ("unicode_escape", b"bid \\ud800\r\n"),
    ],
)
def test_a_line_that_decodes_to_a_lone_surrogate_is_answered(engine, charset, body):
    engine.new_game("pure-skill", PLAYERS)
    sent = outbox_size(engine)
    raw = reply(engine, ALICE, "x").replace(b"charset=utf-8", f"charset={charset}".encode())
    raw = raw.rpartition(b"\r\n\r\n")[0] + b"\r\n\r\n" + body

    outcome = engine.ingest(raw)

    assert outcome.code == "refused", str(outcome)  # not a card: she is told so
    [answer] = queued_since(engine, sent)
    assert "\ufffd" in body_of(answer["raw"])  # the line as we could read it


def test_the_references_of_a_reply_are_only_well_formed_message_ids(engine):
    engine.new_game("pure-skill", PLAYERS)
    sent = outbox_size(engine)
    junk = "<ok@example.net> <bad\x01id@example.net> nonsense <two words@x> <" + "y" * 5000 + "@x> " + "<old@x> " * 50
    raw = reply(engine, ALICE, "bid 7", headers={"References": junk}, message_id="<m1@example.net>")

    engine.ingest(raw)

    [receipt] = queued_since(engine, sent)
    assert_clean_headers(receipt["raw"])
    references = str(headers_of(receipt["raw"])["References"]).split()
    assert references[-1] == "<m1@example.net>" and len(references) <= 11
    assert all(re.fullmatch(r"<[!-;=?-~]+>", r) for r in references)


@pytest.mark.parametrize("address", ["alice@example.org\x0b", "al ice@example.org", "<>", "bot 2"])
def test_the_referee_mails_only_an_address_smtp_can_carry(engine, address):
    sent = outbox_size(engine)
    assert (
        engine.post.mail(None, address, "reply", {"answers": [], "subject": "x", "game": None, "referee": REFEREE})
        is False
    )
    assert queued_since(engine, sent) == []
