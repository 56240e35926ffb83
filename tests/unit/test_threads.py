"""Replies bound to the phase they answer (issue 13, item 2).

Every mail of a game names in its Message-ID the phase open when it was
sent; a reply carries that back in In-Reply-To and References.  A move in a
reply to the mail of a phase that is over is refused with the reason and
changes nothing; a move whose thread says nothing keeps the old rule.
"""

from __future__ import annotations

import re

import pytest
from conftest import PLAYERS, FakeClock, Mailbox, answer, body_of, make_mail, seat_address

from referee.engine import Engine

ALICE = PLAYERS[0]
_TAG = re.compile(r"\.g(\d+)p(\d+)@")


def phase_of(mail: dict) -> int:
    """The phase a queued mail's Message-ID names (0: none yet)."""
    return int(_TAG.search(mail["message_id"])[2])


def game_mails(box: Mailbox, address: str) -> list[dict]:
    """The mails of game 1 the referee sent to ``address`` of its own accord
    (prompts, announcements, reminders), oldest first."""
    return [m for m in box.to(address) if not m["subject"].startswith("Re:")]


def first_legal(engine: Engine, seat: int) -> str:
    table = engine.table(1)
    return table.rules.move_text(table.rules.legal_moves(table.state, seat)[0])


def moves_and_phases(engine: Engine) -> tuple[list, list]:
    return engine.store.moves(1), engine.store.phases(1)


def last_answer(engine: Engine) -> str:
    return body_of(engine.store.outbox()[-1]["raw"])


@pytest.mark.parametrize("kind", ["pure-skill", "bid", "ice"])
def test_a_move_answering_a_phase_that_is_over_is_refused_and_changes_nothing(engine, clock, kind):
    engine.new_game(kind, PLAYERS)
    box = Mailbox(engine)
    refused, told_to_resend = 0, 0
    for _ in range(15):
        table = engine.table(1)
        phase = table.open_phase
        for seat in table.waiting_for(phase):
            address, move = PLAYERS[seat], first_legal(engine, seat)
            mails = game_mails(box, address)
            stale = [
                m
                for m in mails
                if 0 < phase_of(m) < phase["number"]  # a phase she moved in
                and seat in table.phases[phase_of(m) - 1]["movers"]
            ]
            if stale:
                before = moves_and_phases(engine)
                assert answer(engine, clock, stale[-1], move).code == "refused"
                assert moves_and_phases(engine) == before
                said = " ".join(last_answer(engine).split())
                over = table.phases[phase_of(stale[-1]) - 1]["label"]
                assert (
                    f"answers the referee's mail about {over}, which is over. {phase['label']} is open now" in said
                ), said
                refused += 1
                told_to_resend += "send it again" in said
            assert answer(engine, clock, mails[-1], move).code in ("move", "replaced"), mails[-1]["subject"]
            clock.advance(minutes=10)  # under replies_per_hour: every answer is sent
        if engine.table(1).open_phase is None:
            break
    assert refused >= 3 and told_to_resend >= 1, (refused, told_to_resend)


def test_a_change_of_mind_answering_the_receipt_of_a_resolved_round_is_refused(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    box = Mailbox(engine)
    for player, card in zip(PLAYERS, ("5", "6", "7")):
        answer(engine, clock, game_mails(box, player)[-1], f"bid {card}")
    receipt = [m for m in box.to(ALICE) if m["subject"].startswith("Re:")][-1]
    assert engine.table(1).open_phase["number"] == 2  # round 1 resolved on carol's bid

    outcome = answer(engine, clock, receipt, "bid 9")

    assert outcome.code == "refused"
    assert [m["phase"] for m in engine.store.moves(1)] == [1, 1, 1]
    said = " ".join(last_answer(engine).split())
    assert "answers the referee's mail about Round 1 of 13, which is over. Round 2 of 13 is open now" in said


def test_a_move_no_longer_legal_answering_a_resolved_round_is_told_why_the_round_is_over(engine, clock):
    """Alice answers her round-1 receipt again with the card she played in
    it: the reason is the thread, not "not in your hand" (read against now)."""
    engine.new_game("pure-skill", PLAYERS)
    box = Mailbox(engine)
    for player, card in zip(PLAYERS, ("5", "6", "7")):
        answer(engine, clock, game_mails(box, player)[-1], f"bid {card}")
    receipt = [m for m in box.to(ALICE) if m["subject"].startswith("Re:")][-1]

    assert answer(engine, clock, receipt, "bid 5").code == "refused"
    said = " ".join(last_answer(engine).split())
    assert "answers the referee's mail about Round 1 of 13, which is over" in said, said


def test_a_move_answering_the_announcement_that_opened_the_round_counts(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    box = Mailbox(engine)
    for player, card in zip(PLAYERS, ("5", "6", "7")):
        answer(engine, clock, game_mails(box, player)[-1], f"bid {card}")
    announcement = [m for m in game_mails(box, ALICE) if "Round 1" in m["subject"]][-1]
    assert phase_of(announcement) == 2  # the result of round 1 opens round 2

    assert answer(engine, clock, announcement, "bid 9").code == "move"
    assert [m["phase"] for m in engine.store.moves(1)][-1] == 2


def test_a_move_whose_thread_says_nothing_keeps_the_old_rule(engine: Engine, clock: FakeClock):
    engine.new_game("pure-skill", PLAYERS)
    box = Mailbox(engine)
    for player, card in zip(PLAYERS, ("5", "6", "7")):
        answer(engine, clock, game_mails(box, player)[-1], f"bid {card}")
    plain = make_mail(
        ALICE,
        "bid 9",
        to=seat_address(engine, ALICE),
        received=clock(),
        headers={"In-Reply-To": "<her-own-draft@example.net>"},
    )

    assert engine.ingest(plain).code == "move"
    assert [m["phase"] for m in engine.store.moves(1)][-1] == 2


def test_another_games_tag_in_the_thread_says_nothing_about_this_one(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    box = Mailbox(engine)
    for player, card in zip(PLAYERS, ("5", "6", "7")):
        answer(engine, clock, game_mails(box, player)[-1], f"bid {card}")
    other = game_mails(box, ALICE)[0]["message_id"].replace(".g1p", ".g2p")
    raw = make_mail(ALICE, "bid 9", to=seat_address(engine, ALICE), received=clock(), headers={"In-Reply-To": other})

    assert engine.ingest(raw).code == "move"


def test_a_move_answering_the_mail_of_a_bots_turn_counts_for_the_players_turn_now(engine, clock):
    """A bot's turn opens and closes in the same minute: the mail announcing
    it reaches the player with the one that opens her turn, and a move in
    reply to either is for her turn."""
    engine.new_game("ice", PLAYERS[:2], bots=1)
    box = Mailbox(engine)
    for _ in range(40):
        table = engine.table(1)
        phase = table.open_phase
        (seat,) = table.waiting_for(phase)
        mails = game_mails(box, PLAYERS[seat])
        between = [
            m
            for m in mails
            if 0 < phase_of(m) < phase["number"]
            and not any(seat in p["movers"] for p in table.phases[phase_of(m) - 1 : phase["number"] - 1])
        ]
        if between:
            assert answer(engine, clock, between[-1], first_legal(engine, seat)).code == "move"
            assert [m["phase"] for m in engine.store.moves(1) if m["seat"] == seat][-1] == phase["number"]
            return
        assert answer(engine, clock, mails[-1], first_legal(engine, seat)).code == "move"
        clock.advance(minutes=10)
    pytest.fail("no mail of a bot's turn reached a player before her own turn")
