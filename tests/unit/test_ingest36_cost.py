"""What reading a player's reply costs the referee (issue 36): a reply
quoting its prompt is read against the prompt's text as stored when it was
sent, never by parsing the referee's own mail again; a reply in text and
HTML is parsed once; and the statements a move costs stay few.  Counts,
not times: each test fails if its saving is lost."""

from __future__ import annotations

import re
from collections import Counter
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import SMTP, EmailPolicy

import pytest
from conftest import PLAYERS, seat_address
from test_sql36_batch import traced

import referee.desk
import referee.mail.parse
from referee.engine import Engine
from referee.mail.parse import parse
from referee.store import OutboxRow

# Statements one move costs, a move that does not end the round, as SQLite's
# trace counts them (each row insert a trigger watches counts again): 28
# measured with the savings of issue 36, 35 before them.
MAX_STATEMENTS_A_MOVE = 30


@pytest.fixture
def pure(engine):
    return engine.new_game("pure-skill", PLAYERS)


def prompt_to(engine: Engine, player: str) -> OutboxRow:
    return [m for m in engine.store.outbox(None) if m["recipients"] == [player]][-1]


def client_reply(engine: Engine, player: str, move: str, prompt: OutboxRow, marked: bool = True) -> bytes:
    """A reply as mail clients write it: the move, the prompt below it (in
    "> " lines, or pasted unmarked, as Outlook does), threaded to it, in a
    text part and an HTML part."""
    text = parse(prompt["raw"], referee.mail.parse.datetime.now(referee.mail.parse.UTC)).text
    quoted = [f"> {line}".rstrip() if marked else line for line in text.splitlines()]
    mail = EmailMessage()
    mail["From"] = player
    mail["To"] = seat_address(engine, player)
    mail["Subject"] = "Re: " + prompt["subject"]
    mail["In-Reply-To"] = mail["References"] = prompt["message_id"]
    mail["Message-ID"] = f"<{player.split('@')[0]}.{move.replace(' ', '')}@client.example>"
    mail.set_content(
        "\n".join([move, "", "On Sat, 21 Nov 2026 at 12:00, Referee <referee@example.org> wrote:", *quoted])
    )
    mail.add_alternative(f"<div>{move}</div><blockquote>{'<br>'.join(text.splitlines())}</blockquote>", subtype="html")
    return mail.as_bytes(policy=SMTP)


@pytest.fixture
def own_mail_parsed(monkeypatch) -> list[bytes]:
    """The referee's own mails the desk parses again (its bytes, each time)."""
    parsed: list[bytes] = []

    def counting(raw: bytes, *args, **kwargs):
        parsed.append(raw)
        return parse(raw, *args, **kwargs)

    monkeypatch.setattr(referee.desk, "parse", counting)
    return parsed


@pytest.mark.parametrize("marked", [True, False])
def test_a_reply_is_read_against_its_prompt_s_stored_text_without_parsing_the_prompt(
    engine, pure, own_mail_parsed, marked
):
    prompt = prompt_to(engine, PLAYERS[0])
    assert "bid" in prompt["text"]  # the prompt's examples: unmarked, they would read as moves
    outcome = engine.ingest(client_reply(engine, PLAYERS[0], "bid 5", prompt, marked=marked))
    assert outcome.code == "move"
    assert [m["move"] for m in engine.store.moves(pure)] == ["bid 5"]
    assert own_mail_parsed == []


def test_a_prompt_queued_before_its_text_was_kept_is_parsed_as_before(engine, pure, own_mail_parsed):
    prompt = prompt_to(engine, PLAYERS[0])
    engine.store.db.execute("update outbox set text = null where id = ?", [prompt["id"]])
    outcome = engine.ingest(client_reply(engine, PLAYERS[0], "bid 5", prompt, marked=False))
    assert outcome.code == "move"
    assert [m["move"] for m in engine.store.moves(pure)] == ["bid 5"]
    assert own_mail_parsed == [prompt["raw"]]


def test_a_reply_in_text_and_html_is_parsed_once_and_its_thread_read_once(engine, pure, monkeypatch):
    parses: list[bytes] = []  # the mails whose MIME was parsed
    whole_parses: list[bytes] = []  # what the standard library's parser was given whole
    fields: Counter[str] = Counter()
    real_parser, real_fetch = referee.mail.parse.BytesParser, referee.mail.parse._TamedPolicy.header_fetch_parse
    real_parse_tamed = referee.mail.parse._parse_tamed

    class CountingParser(real_parser):  # type: ignore[misc,valid-type]
        def parsebytes(self, text, headersonly=False):
            whole_parses.append(text)
            return super().parsebytes(text, headersonly)

    def counting_parse_tamed(raw, head):
        parses.append(raw)
        return real_parse_tamed(raw, head)

    def fetch(policy, name, value):
        fields[name.lower()] += 1
        return real_fetch(policy, name, value)

    def registry(policy, name, value):  # the header registry's parse of a field into an object
        if policy is referee.mail.parse._TAMED:
            decoded[name.lower()] += 1
        return real_registry(policy, name, value)

    decoded: Counter[str] = Counter()
    real_registry = EmailPolicy.header_fetch_parse
    reply = client_reply(engine, PLAYERS[0], "bid 5", prompt_to(engine, PLAYERS[0]))
    monkeypatch.setattr(referee.mail.parse, "BytesParser", CountingParser)
    monkeypatch.setattr(referee.mail.parse, "_parse_tamed", counting_parse_tamed)
    monkeypatch.setattr(referee.mail.parse._TamedPolicy, "header_fetch_parse", fetch)
    monkeypatch.setattr(EmailPolicy, "header_fetch_parse", registry)
    assert engine.ingest(reply).code == "move"
    assert parses == [reply] and set(whole_parses) <= {reply}  # the prompt it quotes is not parsed again
    # Read for the ids the thread names (four readers asked, each parsing the
    # fields again) and, References, once more for the answer's own thread.
    assert fields["in-reply-to"] == 1 and fields["references"] <= 2
    # Its fields are plain (Subject, Message-ID, the thread's ids, To, each
    # part's Content-Transfer-Encoding): each is read as it stands, never
    # parsed into an object by the registry (29 such parses a reply cost).
    assert decoded == Counter()


def test_a_reply_s_fields_that_need_the_registry_are_decoded_once_each(engine, pure, monkeypatch):
    """An encoded Subject, a quoted display name: each is decoded once."""
    decoded: Counter[str] = Counter()
    real_registry = EmailPolicy.header_fetch_parse

    def registry(policy, name, value):
        if policy is referee.mail.parse._TAMED:
            decoded[name.lower()] += 1
        return real_registry(policy, name, value)

    prompt = prompt_to(engine, PLAYERS[0])
    mail = message_from_bytes(client_reply(engine, PLAYERS[0], "bid 5", prompt), policy=SMTP)
    mail.replace_header("Subject", "Re: " + prompt["subject"] + " =?utf-8?q?=E2=80=94_ok?=")
    mail.replace_header("To", f'"The referee, {PLAYERS[0]}\'s seat" <{seat_address(engine, PLAYERS[0])}>')
    reply = mail.as_bytes(policy=SMTP)
    assert b"=?utf-8?" in reply
    monkeypatch.setattr(EmailPolicy, "header_fetch_parse", registry)
    assert engine.ingest(reply).code == "move"
    assert [m["move"] for m in engine.store.moves(pure)] == ["bid 5"]
    assert decoded["subject"] == 1 and decoded["to"] == 1
    assert max(decoded.values()) == 1, decoded


def test_a_move_costs_few_statements_and_looks_for_other_writers_once(engine, pure):
    engine.ingest(client_reply(engine, PLAYERS[0], "bid 5", prompt_to(engine, PLAYERS[0])))  # (warm)
    prompt = prompt_to(engine, PLAYERS[1])
    reply = client_reply(engine, PLAYERS[1], "bid 6", prompt)
    with traced(engine.store) as statements:
        outcome = engine.ingest(reply)
    assert outcome.code == "move"
    assert len(statements) <= MAX_STATEMENTS_A_MOVE, f"{len(statements)}:\n" + "\n".join(statements)
    # Inside the message's transaction (its write lock held) nobody else can commit: one look is enough.
    held = statements[statements.index("BEGIN IMMEDIATE") : statements.index("COMMIT")]
    assert sum(bool(re.match(r"PRAGMA data_version", s)) for s in held) <= 1, "\n".join(statements)
    # The mail the reply answers is looked up once, though several ask for it.
    assert sum(prompt["message_id"] in s for s in statements) == 1


def test_what_falls_due_in_one_game_is_read_from_that_game_alone(engine):
    """The runner asks after every message what falls due in its game: it
    read every running game's row for it (a third of a pass of 500 games)."""
    games = [engine.new_game("pure-skill", [f"p{g}{n}@example.org" for n in "abc"]) for g in range(6)]
    with traced(engine.store) as statements:
        due = engine.next_due(games[2])
    assert due and set(due) <= set(engine.next_due())
    reads_of_games = [s for s in statements if re.search(r"from \[games\]", s)]
    assert reads_of_games and all(f"id = {games[2]}" in s for s in reads_of_games), "\n".join(reads_of_games)
