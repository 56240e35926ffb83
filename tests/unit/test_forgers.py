"""What a forger's mail can make the referee do, and spend (issue 29, items 2 and 3).

Item 2: no move from a forger's words.  The notice that a mail in a
player's name was not accepted repeats nothing the forger wrote and carries
no reply token; a reply to it, however it quotes, indents, wraps or pastes,
and even with a move the player typed into it, moves nothing and resigns
nothing, and is answered with how to move instead.

Item 3: budgets strangers cannot spend.  Answers to mail that proves no seat
are counted per origin (the network our mail server took it from, or
"checked" when the trusted server found that the From's domain sent it), a
sign-up confirmation has its own allowance, and a notice is one an hour per
origin: so 100 forged mails an hour, 5 forged HELPs in someone's name or one
forged mail in a player's name leave the real person's mail answered.
"""

from __future__ import annotations

import email
from datetime import datetime
from email import policy
from email.utils import format_datetime
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from conftest import PLAYERS, FakeClock, body_of, last_id, make_mail, seat_address

from referee.config import Config
from referee.engine import Engine
from referee.limits import NETWORKS_PER_INBOX
from referee.mail.origin import connecting_network, origin
from referee.mail.parse import parse
from referee.store import Store

ALICE, BOB, CAROL = PLAYERS
REFEREE = "referee@example.org"
TRUSTED = "mx.example.org"  # the referee's own mail server, as it signs its Authentication-Results
NEWCOMER = "newcomer@example.net"
HER_NETWORK = "81.2.69.160"  # where alice's (or the newcomer's) own mail comes from
FORGER_NETWORK = "45.33.10.7"  # where the forger sends from
_SERIAL = count(1)


# -- helpers -------------------------------------------------------------------------


def build(tmp_path: Path, clock: FakeClock, **settings: Any) -> Engine:
    config = Config(address=REFEREE, database=tmp_path / "games.db", reminder=None, outage_gap=None, **settings)
    return Engine(Store(config.database), config, clock)


def arrived(raw: bytes, when: datetime, network: str | None = None, results: str | None = None) -> bytes:
    """``raw`` as the referee's mail server hands it over: its Received header
    on top (naming the address that connected, if ``network``), and its
    Authentication-Results verdict above that (``results``)."""
    host = f"client.example.net (client.example.net [{network}])" if network else "client.example.net"
    top = f"Received: from {host} by {TRUSTED} with ESMTPS; {format_datetime(when)}\r\n"
    if results is not None:
        top = f"Authentication-Results: {TRUSTED}; {results}\r\n" + top
    return top.encode() + raw


def mail_from(
    clock: FakeClock, sender: str, body: str, network: str | None = None, results: str | None = None, **kwargs: Any
) -> bytes:
    kwargs.setdefault("subject", "Hello referee")
    kwargs.setdefault("message_id", f"<forgers-{next(_SERIAL)}@example.net>")
    return arrived(make_mail(sender, body, **kwargs), clock(), network, results)


def queued(engine: Engine, after: int = 0, to: str | None = None) -> list[dict[str, Any]]:
    found = []
    for row in engine.store.outbox(None):
        if row["id"] > after and (to is None or row["recipients"] == [to]):
            message = email.message_from_bytes(row["raw"], policy=policy.default)
            found.append({**row, "body": body_of(row["raw"]), "message": message})
    return found


def snapshot(engine: Engine, game: int = 1) -> dict[str, Any]:
    return {"seats": engine.store.seats(game), "phases": engine.store.phases(game), "moves": engine.store.moves(game)}


def answer(
    engine: Engine,
    clock: FakeClock,
    mail: dict[str, Any],
    body: str,
    thread: bool = True,
    to: str | None = None,
    sender: str | None = None,
) -> Any:
    """Reply to a queued ``mail`` as a mail client does: to its Reply-To (else
    its From), "Re:" its subject, In-Reply-To and References its Message-ID
    (unless the client drops them: ``thread=False``)."""
    reply_to = mail["message"]["Reply-To"]
    headers = {"In-Reply-To": mail["message_id"], "References": mail["message_id"]} if thread else {}
    raw = make_mail(
        sender or mail["recipients"][0],
        body,
        subject=f"Re: {mail['subject']}",
        headers=headers,
        to=to or (str(reply_to) if reply_to else REFEREE),
        received=clock(),
    )
    return engine.ingest(raw)


def token_of(engine: Engine, player: str, game: int = 1) -> str:
    return seat_address(engine, player, game).partition("+")[2].partition("@")[0]


# -- item 2: the notice repeats nothing of the forger's, and carries no token ------------------


@pytest.mark.parametrize("problem", ["no token", "token"])
def test_a_notice_says_when_and_what_to_do_and_repeats_no_word_the_forger_chose(engine, clock, problem):
    engine.new_game("pure-skill", PLAYERS)
    token = token_of(engine, ALICE)
    words = "RESIGN zebra quartz"
    if problem == "no token":  # her From, to the plain address
        raw = make_mail(ALICE, f"bid 7 {words}", subject=f"Re: [pure-skill-1] {words}", received=clock())
    else:  # her reply address, from another
        raw = make_mail(
            "mallory@evil.example", f"bid 7 {words}", subject=words, received=clock(), to=seat_address(engine, ALICE)
        )
    before = last_id(engine)

    assert engine.ingest(raw).code == "refused"

    [notice] = queued(engine, before)
    assert notice["recipients"] == [ALICE]
    raw_notice = notice["raw"].decode()
    assert "zebra" not in raw_notice and "quartz" not in raw_notice and "RESIGN" not in raw_notice
    assert token not in raw_notice  # no reply token: not in a Reply-To, not in the subject's tag
    assert notice["message"]["Reply-To"] is None
    assert notice["subject"] == "[pure-skill-1] A mail in your name was not accepted"
    text = " ".join(notice["body"].split())
    assert "2026-11-21 12:00 UTC" in text and "not accepted" in text  # when, and what became of it
    assert "reply to the referee's newest mail to you about game 1" in text  # what to do
    assert '"[pure-skill-1] Round 1 of 13: the prize is' in text  # and which mail that is
    assert "A reply to this notice is not read" in text
    if problem == "token":
        assert "mallory@evil.example" in text  # who used her reply address


FORGED = ["RESIGN", "bid 7"]  # what a forger put in the subject of a mail in alice's name
SHAPES = {  # how the review's victims replied to the notice, its old "Its subject: ..." line and all
    "quoted": lambda notice, words: (
        "That was not me!\n\n" + "\n".join(f"> {line}" for line in [f"Its subject: {words}", *notice.splitlines()])
    ),
    "indented": lambda notice, words: f"That was not me!\n\n    Its subject:\n    {words}\n",
    "indented-line": lambda notice, words: f"Not me.\n\n  {words}\n",
    "wrapped": lambda notice, words: f"That was not me!\n\n> Its subject:\n{words}\n\n> It changed nothing.",
    "pasted": lambda notice, words: f"{words}\n",
    "her-own-move": lambda notice, words: "Sorry, that was me. bid 9\n\nbid 9\n",
}


@pytest.mark.parametrize("threaded", [True, False], ids=["threaded", "thread-dropped"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("words", FORGED)
def test_no_reply_to_a_notice_moves_or_resigns_however_it_quotes(engine, clock, words, shape, threaded):
    engine.new_game("pure-skill", PLAYERS)
    before_mail = last_id(engine)
    assert engine.ingest(make_mail(ALICE, "", subject=words, received=clock())).code == "refused"
    [notice] = queued(engine, before_mail)
    before = snapshot(engine)
    clock.advance(minutes=10)
    sent = last_id(engine)

    outcome = answer(engine, clock, notice, SHAPES[shape](notice["body"], words), thread=threaded)

    assert outcome.code == "refused", str(outcome)
    assert snapshot(engine) == before  # no move, no seat handed to a bot
    assert [s["bot"] for s in engine.store.seats(1)] == [0, 0, 0]
    mails = queued(engine, sent)
    assert all(m["recipients"] == [ALICE] for m in mails)
    if threaded:  # she is told why, and how to move instead
        [told] = mails
        assert told["subject"] == "Re: [pure-skill-1] A mail in your name was not accepted"
        text = " ".join(told["body"].split())
        assert "nothing in yours was done: no move, no command" in text
        assert "reply to the referee's newest mail to you about it" in text
        assert told["message"]["Reply-To"] is None and token_of(engine, ALICE) not in told["raw"].decode()


def test_a_reply_to_a_notice_sent_to_her_reply_address_still_moves_nothing(engine, clock):
    """Even with her token beside the notice's thread (she sent it to her
    game's reply address, or kept the token in the subject), a reply to a
    notice is not read."""
    engine.new_game("pure-skill", PLAYERS)
    before_mail = last_id(engine)
    engine.ingest(make_mail(ALICE, "", subject="RESIGN", received=clock()))
    [notice] = queued(engine, before_mail)
    before = snapshot(engine)
    for to in (seat_address(engine, ALICE), REFEREE):
        clock.advance(minutes=1)
        subject_token = f"[pure-skill-1 {token_of(engine, ALICE)}]" if to == REFEREE else ""
        raw = make_mail(
            ALICE,
            "RESIGN\nbid 9",
            subject=f"Re: {subject_token} {notice['subject']}",
            to=to,
            headers={"In-Reply-To": notice["message_id"]},
            received=clock(),
        )
        assert engine.ingest(raw).code == "refused"
    assert snapshot(engine) == before


def test_a_reply_further_down_a_notices_thread_is_not_read_either(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    before_mail = last_id(engine)
    engine.ingest(make_mail(ALICE, "", subject="bid 7", received=clock()))
    [notice] = queued(engine, before_mail)
    sent = last_id(engine)
    answer(engine, clock, notice, "What?")
    [told] = queued(engine, sent)
    before = snapshot(engine)
    clock.advance(minutes=1)
    thread = f"{notice['message_id']} {told['message_id']}"
    raw = make_mail(
        ALICE,
        "bid 7",
        subject=f"Re: {told['subject']}",
        received=clock(),
        headers={"In-Reply-To": told["message_id"], "References": thread},
    )
    assert engine.ingest(raw).code == "refused"
    assert snapshot(engine) == before


def test_a_forger_who_names_a_notice_to_someone_else_gets_nothing_from_it(engine, clock):
    """Only the notice's own reader's reply is taken for one: the thread of a
    mail from another address is no proof of anything."""
    engine.new_game("pure-skill", PLAYERS)
    before_mail = last_id(engine)
    engine.ingest(make_mail(ALICE, "", subject="bid 7", received=clock()))
    [notice] = queued(engine, before_mail)
    sent = last_id(engine)
    outcome = answer(engine, clock, notice, "HELP", sender="mallory@evil.example")
    assert outcome.code == "done"  # an ordinary HELP from a stranger
    assert [m["recipients"] for m in queued(engine, sent)] == [["mallory@evil.example"]]


# -- item 3: budgets strangers cannot spend -------------------------------------------------


def test_a_flood_of_forged_mail_from_one_network_leaves_a_newcomers_join_and_help_answered(tmp_path, clock):
    engine = build(tmp_path, clock)
    for number in range(100):  # 100 forged mails in an hour, each in another stranger's name
        engine.ingest(mail_from(clock, f"victim{number}@example.net", "help", FORGER_NETWORK))
        clock.advance(seconds=30)
    spent = len(queued(engine))
    assert spent <= Config.open_replies_per_network_per_hour  # one network spends only its share

    sent = last_id(engine)
    engine.ingest(mail_from(clock, NEWCOMER, "JOIN pure-skill", HER_NETWORK))
    engine.ingest(mail_from(clock, NEWCOMER, "HELP", HER_NETWORK))
    subjects = [m["subject"] for m in queued(engine, sent, NEWCOMER)]
    assert subjects[0].startswith("[pure-skill ") and subjects[0].endswith("JOIN pure-skill")  # the confirmation
    assert subjects[1:] == ["Re: your mail to the referee"] * 2  # the answers to her JOIN and HELP


def test_a_flood_from_many_networks_leaves_a_checked_newcomer_answered(tmp_path, clock):
    """Forged mail from a hundred networks uses up what unchecked mail may
    have; a newcomer whose mail our server found sent by her domain has her own."""
    engine = build(tmp_path, clock, dkim_authserv_id=TRUSTED)
    for number in range(150):
        engine.ingest(
            mail_from(
                clock,
                f"victim{number}@example.net",
                "help",
                f"45.{number}.10.7",
                results="dkim=none; spf=softfail smtp.mailfrom=example.net",
            )
        )
    assert len(queued(engine)) == Config.open_replies_total_per_hour  # the cap on backscatter stays

    for results in (
        "dkim=pass header.d=example.net",
        "spf=pass smtp.mailfrom=bounces.example.net",
        "dmarc=pass header.from=example.net",
    ):
        newcomer = f"{results[:4]}-{NEWCOMER}"
        sent = last_id(engine)
        engine.ingest(mail_from(clock, newcomer, "JOIN pure-skill", f"45.{len(results)}.10.8", results))
        engine.ingest(mail_from(clock, newcomer, "HELP", f"45.{len(results)}.10.8", results))
        subjects = [m["subject"] for m in queued(engine, sent, newcomer)]
        assert len(subjects) == 3 and subjects[0].endswith("JOIN pure-skill"), (results, subjects)


def test_without_a_check_or_a_network_a_flood_still_holds_at_the_total(tmp_path, clock):
    """The limit: mail our server says nothing about is one origin, and forged
    mail from many networks can use up what unchecked mail may have.  Outgoing
    mail stays bounded all the same."""
    engine = build(tmp_path, clock)
    for number in range(300):
        network = f"45.{number % 250}.10.7" if number % 2 else None
        engine.ingest(mail_from(clock, f"victim{number}@example.net", "help", network))
    assert len(queued(engine)) == Config.open_replies_total_per_hour


@pytest.mark.parametrize("networks", [False, True], ids=["unknown-origin", "own-network"])
def test_five_forged_helps_in_a_persons_name_leave_their_join_answered(tmp_path, clock, networks):
    engine = build(tmp_path, clock)
    forger, own = (FORGER_NETWORK, HER_NETWORK) if networks else (None, None)
    for _ in range(5):
        engine.ingest(mail_from(clock, NEWCOMER, "HELP", forger))
    assert len(queued(engine)) == Config.open_replies_per_hour  # her inbox's answers for the hour, spent
    sent = last_id(engine)

    engine.ingest(mail_from(clock, NEWCOMER, "JOIN pure-skill", own))

    mails = queued(engine, sent, NEWCOMER)
    assert mails[0]["subject"].endswith("] JOIN pure-skill")  # her confirmation: a sign-up's own allowance
    if networks:  # from her own network, her HELP is answered too
        sent = last_id(engine)
        engine.ingest(mail_from(clock, NEWCOMER, "HELP", own))
        [help_answer] = queued(engine, sent, NEWCOMER)
        assert "> HELP" in help_answer["body"]


@pytest.mark.parametrize("checked", [False, True], ids=["own-network", "checked"])
def test_one_forged_mail_in_a_players_name_leaves_her_own_tokenless_mail_answered(tmp_path, clock, checked):
    engine = build(tmp_path, clock, **({"authserv_id": TRUSTED} if checked else {}))
    engine.new_game("pure-skill", PLAYERS)
    forged = "dkim=fail header.d=example.org" if checked else None
    sent = last_id(engine)
    assert engine.ingest(mail_from(clock, ALICE, "bid 7", FORGER_NETWORK, forged)).code == "refused"
    assert len(queued(engine, sent, ALICE)) == 1  # the forgery's notice
    clock.advance(minutes=5)
    sent = last_id(engine)

    own = "dkim=pass header.d=example.org" if checked else None
    network = FORGER_NETWORK if checked else HER_NETWORK  # checked: even from the forger's network
    assert engine.ingest(mail_from(clock, ALICE, "bid 8", network, own)).code == "refused"

    [notice] = queued(engine, sent, ALICE)  # her own mail without its token gets its word back
    assert "not accepted" in notice["subject"] and "12:05 UTC" in notice["body"]


def test_trusting_the_servers_verdict_for_budgets_asks_no_signature_of_a_move(tmp_path, clock):
    """``authserv_id`` lets checked mail have its own answers; unlike
    ``dkim_authserv_id`` it does not make a move need a signature."""
    engine = build(tmp_path, clock, authserv_id=TRUSTED)
    engine.new_game("pure-skill", PLAYERS)
    raw = make_mail(ALICE, "bid 7", to=seat_address(engine, ALICE), received=clock())
    assert engine.ingest(raw).code == "move"


def test_the_new_settings_are_read_from_the_config_file(tmp_path):
    from referee.config import load

    path = tmp_path / "referee.toml"
    path.write_text('[referee]\nauthserv_id = "mx.example.org"\nopen_replies_per_network_per_hour = 7\n')
    config = load(path)
    assert (config.trusted_authserv_id, config.open_replies_per_network_per_hour) == ("mx.example.org", 7)
    assert Config(dkim_authserv_id="a", authserv_id="b").trusted_authserv_id == "a"


def test_forged_mail_from_many_networks_gets_a_player_a_few_notices_an_hour_at_most(tmp_path, clock):
    engine = build(tmp_path, clock)
    engine.new_game("pure-skill", PLAYERS)
    sent = last_id(engine)
    for number in range(30):
        engine.ingest(mail_from(clock, ALICE, "bid 7", f"45.{number}.10.7"))
    assert len(queued(engine, sent, ALICE)) == NETWORKS_PER_INBOX
    assert queued(engine, sent, BOB) == []


def test_forged_helps_from_many_networks_bury_no_inbox(tmp_path, clock):
    engine = build(tmp_path, clock)
    for number in range(40):
        engine.ingest(mail_from(clock, NEWCOMER, "HELP", f"45.{number}.10.7"))
    answers = queued(engine, to=NEWCOMER)
    assert len(answers) == NETWORKS_PER_INBOX * Config.open_replies_per_hour  # answers and notes together


# -- where a mail came from --------------------------------------------------------------


def _parsed(*received: str, results: str | None = None, sender: str = "a@example.org"):
    head = "".join(f"Received: {r}\r\n" for r in received)
    if results is not None:
        head = f"Authentication-Results: {results}\r\n" + head
    return parse(f"{head}From: {sender}\r\nSubject: x\r\n\r\nhi\r\n".encode(), datetime.now())


@pytest.mark.parametrize(
    "received, network",
    [
        (
            [
                "from mail.example.net (mail.example.net [81.2.69.160]) by mx.example.org (Postfix) with ESMTPS id X; "
                + "Sat, 21 Nov 2026 12:00:00 +0000"
            ],
            "81.2.69.0/24",
        ),  # Postfix
        (
            [
                "by 2002:a05:6a10:1::1 with SMTP id x; Sat, 21 Nov 2026 12:00:00 -0800",
                "from mail-sor-f41.google.com (mail-sor-f41.google.com. [209.85.220.41]) by mx.google.com; Sat",
            ],
            "209.85.220.0/24",
        ),  # Gmail: its own hop first
        (
            [
                "from compute3.internal (compute3.internal [10.202.2.43]) by imap.internal; Sat",
                "from mx6.internal ([10.202.2.205]) by compute3.internal; Sat",
                "from [81.2.69.1] (unknown [45.33.10.7]) by mx6.messagingengine.com; Sat",
            ],
            "45.33.10.0/24",
        ),  # a provider's internal hops, and a HELO that names another address
        (["from host ([2a01:4f8:1:2::5] helo=host) by mx with esmtp; Sat"], "2a01:4f8:1::/48"),  # Exim, IPv6
        (["from [45.33.10.7] (helo=[81.2.69.9]) by mx; Sat"], "45.33.10.0/24"),  # the HELO's literal is not it
        (["from x (x [IPv6:2a01:4f8:1:2::5]) by mx; Sat"], "2a01:4f8:1::/48"),
        (["from client.example.net by mx.example.org; Sat"], None),  # no address: unknown
        ([], None),
    ],
)
def test_the_network_is_the_one_our_server_took_the_mail_from(received, network):
    assert connecting_network(_parsed(*received)) == network


def test_only_the_trusted_servers_verdict_makes_mail_checked():
    hop = "from x (x [45.33.10.7]) by mx.example.org; Sat"
    assert origin(_parsed(hop, results=f"{TRUSTED}; dkim=pass header.d=example.org"), TRUSTED) == "checked"
    assert origin(_parsed(hop, results=f"{TRUSTED}; dkim=pass header.d=example.org"), None) == "net:45.33.10.0/24"
    assert origin(_parsed(hop, results="evil.example; dkim=pass header.d=example.org"), TRUSTED) == (
        "net:45.33.10.0/24"
    )
    assert origin(_parsed(results=f"{TRUSTED}; spf=pass smtp.mailfrom=evil.example"), TRUSTED) == "unknown"
    assert origin(_parsed(results=f"{TRUSTED}; spf=pass smtp.mailfrom=x@mail.example.org"), TRUSTED) == "checked"
    assert origin(_parsed(results=f"{TRUSTED}; spf=pass smtp.mailfrom=co.uk", sender="a@co.uk"), TRUSTED) == (
        "unknown"
    )  # a public suffix aligns nobody
    assert origin(_parsed(results=f"{TRUSTED}; dmarc=pass header.from=example.org"), TRUSTED) == "checked"
    assert origin(_parsed(results=f"{TRUSTED}; dmarc=pass header.from=evil.example"), TRUSTED) == "unknown"
