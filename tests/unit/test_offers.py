"""Offers (referee.engine.offers): one address asked to confirm something
by reply. Each kind's change is its room's; here a kind's terms are a
stand-in that notes what it was asked, so the mechanism is tried alone:
who may answer, when, how often, and what a lapse does."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import mails, make_mail, send

from referee.engine.offers import Outcome, Terms
from referee.errors import EngineError
from referee.store import OfferKind

NEW = "new@example.net"


class Noted:
    """The terms of an offer kind for the test: what accepting was asked, and the lapses."""

    def __init__(self, fail: bool = False):
        self.accepted: list[int] = []
        self.lapsed: list[tuple[int, str]] = []
        self.fail = fail

    def accept(self, offer) -> str:
        if self.fail:
            raise EngineError("the seat is someone else's now")
        self.accepted.append(offer["id"])
        return f"offer {offer['id']} taken"

    def lapse(self, offer, outcome: Outcome) -> None:
        self.lapsed.append((offer["id"], outcome.value))


@pytest.fixture
def noted(engine) -> Noted:
    terms = Noted()
    engine.offers.register(OfferKind.ADDRESS, Terms(terms.accept, terms.lapse))
    return terms


def offer(engine, address: str = NEW, lasts: timedelta = timedelta(days=1)):
    with engine.store.transaction():
        return engine.offers.make(
            OfferKind.ADDRESS, address, lasts, "offer", {"game": None, "subject": "Confirm", "text": "Confirm it."}
        )


def answer(engine, clock, sender: str, body: str, made) -> str:
    to = f"referee+{made['token']}@example.org"
    return str(engine.ingest(make_mail(sender, body, to=to, received=clock())))


def test_an_offer_is_mailed_with_a_reply_address_of_its_own(engine, noted):
    made = offer(engine)
    [mail] = mails(engine, NEW)
    assert mail["reply_to"] == f"referee+{made['token']}@example.org"
    assert made["token"] in mail["subject"] and "reply to this mail" in mail["body"]
    assert "2026-" in mail["body"].split("lapses")[0].rsplit("answer by", 1)[1]  # when it lapses


def test_a_reply_that_says_nothing_accepts_and_a_second_answer_changes_nothing(engine, clock, noted):
    made = offer(engine)
    assert answer(engine, clock, NEW, "", made).startswith("done")
    assert noted.accepted == [made["id"]]
    assert engine.store.offer(made["id"])["outcome"] == "accepted"
    assert "Accepted: offer" in mails(engine, NEW)[-1]["body"]
    outcome = answer(engine, clock, NEW, "ACCEPT", made)
    assert outcome.startswith("refused") and noted.accepted == [made["id"]]
    assert "That offer was accepted already" in mails(engine, NEW)[-1]["body"]


def test_reject_lapses_the_offer_and_yes_in_a_sentence_is_no_answer(engine, clock, noted):
    made = offer(engine)
    assert answer(engine, clock, NEW, "Yes, but who is this?", made).startswith("refused")
    assert noted.accepted == [] and engine.store.offer(made["id"])["closed_at"] is None
    assert answer(engine, clock, NEW, "no", made).startswith("done")
    assert noted.lapsed == [(made["id"], "rejected")] and noted.accepted == []


def test_a_reply_from_another_address_is_forged_and_the_offered_address_told(engine, clock, noted):
    made = offer(engine)
    before = len(mails(engine, NEW))
    outcome = answer(engine, clock, "mallory@example.com", "ACCEPT", made)
    assert outcome.startswith("refused") and noted.accepted == []
    assert engine.store.offer(made["id"])["closed_at"] is None
    assert len(mails(engine, NEW)) == before + 1  # the offered address hears of it
    assert mails(engine, "mallory@example.com") == []


def test_an_offer_unanswered_lapses_at_its_time_and_cannot_be_taken_after(engine, clock, noted):
    made = offer(engine, lasts=timedelta(hours=6))
    clock.advance(hours=5)
    engine.tick()
    assert noted.lapsed == []
    clock.advance(hours=2)
    assert any("expired" in line for line in engine.tick())
    assert noted.lapsed == [(made["id"], "expired")]
    assert engine.store.offer(made["id"])["closed_at"] == made["expires_at"]
    assert answer(engine, clock, NEW, "", made).startswith("refused") and noted.accepted == []


def test_an_offer_that_can_no_longer_be_done_is_withdrawn_and_its_lapse_follows(engine, clock):
    terms = Noted(fail=True)
    engine.offers.register(OfferKind.ADDRESS, Terms(terms.accept, terms.lapse))
    made = offer(engine)
    assert answer(engine, clock, NEW, "accept", made).startswith("refused")
    assert "someone else's now" in mails(engine, NEW)[-1]["body"]
    assert engine.store.offer(made["id"])["outcome"] == "withdrawn"
    assert terms.lapsed == [(made["id"], "withdrawn")]


def test_accept_without_an_offer_is_refused_and_changes_nothing(engine, clock, noted):
    engine.new_game("pure-skill", ["a@example.org", "b@example.org", "c@example.org"], deadline=timedelta(days=3))
    outcome = send(engine, clock, "a@example.org", "ACCEPT")
    assert str(outcome).startswith("refused")
    assert "answers an offer" in mails(engine, "a@example.org")[-1]["body"]


def test_an_offers_lapse_is_a_moment_the_referee_wakes_for(engine, clock, noted):
    made = offer(engine, lasts=timedelta(hours=6))
    assert engine.next_due() == [clock() + timedelta(hours=6)]  # serve sleeps until then, not its heartbeat
    clock.advance(hours=7)
    engine.catch_up(clock())  # after a restore: each moment in turn
    assert noted.lapsed == [(made["id"], "expired")] and engine.next_due() == []
