"""No answer dropped for a player, no backscatter for strangers (issue 13, item 3).

Answers to mail that proves a seat have their own budget, which mail
proving nothing cannot spend; mail proving nothing is capped per inbox
(plus-parts and case folded) and in total, and its answers repeat none of
the sender's words.  A player over a budget gets one note, never silence
at once.
"""

from __future__ import annotations

from conftest import PLAYERS, FakeClock, body_of, make_mail, reply

from referee.config import Config
from referee.engine import Engine
from referee.store import Store

ALICE = PLAYERS[0]


def queued_to(engine: Engine, after: int, address: str | None = None) -> list[dict]:
    rows = engine.store.outbox(None)[after:]
    return [r for r in rows if address is None or r["recipients"] == [address]]


def test_a_quick_live_session_gets_every_answer(engine: Engine, clock: FakeClock):
    """Fifty mails in fifty minutes from a player who changes her mind a lot."""
    engine.new_game("pure-skill", PLAYERS)
    for number in range(50):
        sent = len(engine.store.outbox(None))
        card = "23456789JQ"[number % 10]
        assert engine.ingest(reply(engine, ALICE, f"bid {card}", received=clock())).code in ("move", "replaced")
        [receipt] = queued_to(engine, sent, ALICE)
        assert f"is in: bid {card}" in body_of(receipt["raw"])
        clock.advance(minutes=1)


def test_forged_helps_cannot_spend_a_players_answers(engine: Engine, clock: FakeClock):
    engine.new_game("pure-skill", PLAYERS)
    start = len(engine.store.outbox(None))
    for _ in range(20):  # "from" alice, to the referee's plain address: anyone can send these
        engine.ingest(make_mail(ALICE, "help", subject="help", received=clock()))
    answered = queued_to(engine, start, ALICE)
    assert len(answered) == Config.open_replies_per_hour + 1  # then one note, then silence
    assert "paused" in answered[-1]["subject"]

    sent = len(engine.store.outbox(None))
    assert engine.ingest(reply(engine, ALICE, "bid 7", received=clock())).code == "move"
    [receipt] = queued_to(engine, sent, ALICE)
    assert "is in: bid 7" in body_of(receipt["raw"])


def test_two_hundred_forged_senders_get_at_most_the_hours_total(engine: Engine, clock: FakeClock):
    start = len(engine.store.outbox(None))
    for number in range(200):
        engine.ingest(
            make_mail(f"victim{number}@example.net", "help", subject="Cheap pills: example.com", received=clock())
        )
    answers = queued_to(engine, start)
    assert len(answers) == Config.open_replies_total_per_hour
    assert not any(b"pills" in a["raw"] or b"example.com" in a["raw"] for a in answers)

    clock.advance(hours=1, seconds=1)  # a new hour: strangers are answered again
    sent = len(engine.store.outbox(None))
    engine.ingest(make_mail("newcomer@example.net", "help", received=clock()))
    assert len(queued_to(engine, sent, "newcomer@example.net")) == 1


def test_plus_variants_and_case_of_one_inbox_share_its_budget(engine: Engine, clock: FakeClock):
    start = len(engine.store.outbox(None))
    for number in range(20):
        sender = f"Mallory+{number}@Example.net" if number % 2 else f"mallory+{number}@example.net"
        engine.ingest(make_mail(sender, "list", received=clock()))
    answers = queued_to(engine, start)
    assert len(answers) == Config.open_replies_per_hour + 1
    assert "paused" in answers[-1]["subject"]


def test_an_answer_to_mail_that_proves_nothing_repeats_none_of_its_words(engine: Engine, clock):
    spam = "Visit https://spam.example.com now"
    sent = len(engine.store.outbox(None))
    engine.ingest(
        make_mail(
            "victim@example.net",
            f"{spam}\nhelp\nJOIN {spam}",
            subject=spam,
            headers={"References": "<visit-spam.example.com@example.net>"},
            received=clock(),
        )
    )
    [answer] = queued_to(engine, sent)
    raw = answer["raw"].decode()
    assert "spam" not in raw and "Visit" not in raw
    assert answer["subject"] == "Re: your mail to the referee"
    assert "> HELP" in body_of(answer["raw"]) and "Line 1:" in body_of(answer["raw"])


def test_a_stranger_at_a_players_plus_address_cannot_use_up_her_paused_note(tmp_path, clock):
    config = Config(
        address="referee@example.org", database=tmp_path / "g.db", reminder=None, outage_gap=None, replies_per_hour=3
    )
    engine = Engine(Store(config.database), config, clock)
    engine.new_game("pure-skill", PLAYERS)
    for _ in range(8):  # the open budget of alice's inbox, and its note, spent by someone else
        engine.ingest(make_mail("alice+x@example.org", "help", received=clock()))
    for card in ("2", "3", "4"):
        engine.ingest(reply(engine, ALICE, f"bid {card}", received=clock()))
    sent = len(engine.store.outbox(None))

    assert engine.ingest(reply(engine, ALICE, "bid 5", received=clock())).code == "replaced"

    [note] = queued_to(engine, sent, ALICE)
    assert "paused" in note["subject"] and "count as usual" in " ".join(body_of(note["raw"]).split())


def test_a_players_reply_too_large_to_read_is_answered_from_her_own_budget(tmp_path, clock):
    config = Config(
        address="referee@example.org",
        database=tmp_path / "g.db",
        reminder=None,
        outage_gap=None,
        open_replies_total_per_hour=2,
        max_message_size=4096,
    )
    engine = Engine(Store(config.database), config, clock)
    engine.new_game("pure-skill", PLAYERS)
    for number in range(3):  # strangers use up the hour's total
        engine.ingest(make_mail(f"s{number}@example.net", "help", received=clock()))
    sent = len(engine.store.outbox(None))

    outcome = engine.ingest(reply(engine, ALICE, "bid 7\n" + "a photo " * 1000, received=clock()))

    assert outcome.code == "refused"
    [notice] = queued_to(engine, sent, ALICE)
    assert "too large" not in notice["subject"] and "KB" in body_of(notice["raw"])
