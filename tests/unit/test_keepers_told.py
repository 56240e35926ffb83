"""The keeper is told (issue 32, item 6): what is wrong is the referee's
health (Reports.problems, what `referee status` heads its list with), and
the keepers get a mail when a problem comes, again each day it lasts, and
when it is fixed (referee.engine.watch)."""

from __future__ import annotations

from datetime import timedelta

from conftest import PLAYERS, dsn, mails

from referee.engine import Engine
from referee.store import MailState
from referee.timeutil import iso

ALICE, BOB, CAROL = PLAYERS


def problems(engine: Engine) -> dict[str, str]:
    return {problem.key: problem.text for problem in engine.reports.problems()}


def sent(engine: Engine, clock) -> None:
    """Every mail queued goes out (there is no SMTP server here)."""
    for mail in engine.store.outbox(MailState.QUEUED):
        engine.store.mark_sent(mail["id"], iso(clock()))


def bounce(engine: Engine, clock, address: str) -> None:
    """The referee's newest mail to ``address`` comes back: its mailbox is full."""
    sent = mails(engine, to=address)[-1]
    assert engine.ingest(dsn(address, sent["message_id"], received=clock())).code == "bounce"


# -- what is wrong ------------------------------------------------------------------------------


def test_a_player_whose_mail_bounces_is_a_problem_while_they_play(engine, clock):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    assert problems(engine) == {}
    bounce(engine, clock, BOB)
    bounce(engine, clock, BOB)
    text = problems(engine)[f"bounce {BOB}"]
    assert text == f"mail to {BOB} bounces (2 since 2026-11-21T12:00:00Z, the last 5.2.2): [pure-skill-1]"
    engine.resign(1, BOB)  # a bot has the seat now: nobody's mail to bounce
    assert problems(engine) == {}


def test_a_bounce_is_a_problem_for_three_days(engine, clock):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=30))
    bounce(engine, clock, BOB)
    sent(engine, clock)
    clock.advance(days=3)
    assert f"bounce {BOB}" in problems(engine)
    clock.advance(seconds=1)  # and no mail to Bob has bounced since
    assert problems(engine) == {}


def test_mail_refused_for_good_is_a_problem_for_three_days(engine, clock):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=30))
    first = engine.store.outbox(MailState.QUEUED)[0]
    engine.store.fail_mail(first["id"], "550 5.1.1 no such user")
    sent(engine, clock)
    assert problems(engine) == {"refused": "1 mail(s) refused for good in the last 3 days"}
    clock.advance(days=3, seconds=1)
    assert problems(engine) == {}
    assert engine.health()["outbox"]["refused"][0]["error"] == "550 5.1.1 no such user"  # status still lists it
