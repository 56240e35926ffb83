"""The referee against real mail servers: IMAP in (Dovecot), SMTP out
(aiosmtpd relaying into Dovecot over LMTP), in cron mode (`run --once`) and
daemon mode (`serve`).  Receipt times are the server's (IMAP INTERNALDATE),
so these tests use the real clock, short deadlines and real waits."""

from __future__ import annotations

import asyncio
import hashlib
import random
import threading
import time
from datetime import UTC, datetime

import pytest
from mailstack import MailStack, wait_for
from referee_helpers import (
    FINAL, PROMPT, RECEIPT, RESULT, Referee, body, hand, mails, message_ids, reply, round_line,
    subject,
)  # fmt: skip


@pytest.fixture
def referee(mailstack: MailStack, tmp_path) -> Referee:
    return Referee(mailstack, tmp_path)


def bids_of(referee: Referee, game_id: int) -> list[tuple[int, int, str, str]]:
    """(phase, seat, move, source) of every move recorded."""
    return [(m["phase"], m["seat"], m["move"], m["source"]) for m in referee.moves(game_id)]


def inbox_empty_and_filed(stack: MailStack, count: int) -> None:
    assert stack.messages(stack.referee) == []
    processed = stack.messages(stack.referee, "processed")
    assert len(processed) == count
    assert all("\\Seen" in m.flags for m in processed)


def check_finished(referee: Referee, game_id: int) -> dict:
    """The game is over, its seed revealed (and it matches the commitment);
    every player had 13 round results and one final result; nothing was
    sent twice."""
    stack = referee.stack
    status = referee.status(game_id)
    assert status["state"] == "finished" and status["phase"] is None
    assert status["seed"] and hashlib.sha256(bytes.fromhex(status["seed"])).hexdigest() == status["seed_commitment"]
    for player in stack.players:
        results = mails(stack, player, RESULT)
        assert sorted(int(RESULT.match(subject(m))[2]) for m in results) == list(range(1, 14))
        [final] = mails(stack, player, FINAL)
        assert status["seed"] in body(final)
    ids = message_ids(stack)
    assert len(ids) == len(set(ids)), "a mail was sent twice"
    return status


# -- 1. a whole game in cron mode ---------------------------------------------------


def test_whole_game_by_mail_in_cron_mode(referee: Referee, mailstack: MailStack) -> None:
    game_id = referee.new_game("--deadline", "1h")
    result = referee.run_once()
    assert result.counts == {"received": 0, "sent": 6, "deferred": 0, "failed": 0}
    rng = random.Random(7)
    bids: dict[tuple[int, str], str] = {}
    for number in range(1, 13):  # round 13 has one card left: it is bid for everyone
        for player in mailstack.players:
            # Read the prompt as a player does: from the own Dovecot INBOX.
            [prompt] = [m for m in mails(mailstack, player, PROMPT, from_inbox=True)
                        if int(PROMPT.match(subject(m))[2]) == number]  # fmt: skip
            card = rng.choice(hand(prompt))
            bids[number, player] = card
            reply(mailstack, player, prompt, f"bid {card}\n\nthanks\n")
        result = referee.run_once()
        # 3 receipts, 3 round results, then 3 prompts (or the last round and the final)
        sent = 9 if number < 12 else 12
        assert result.counts == {"received": 3, "sent": sent, "deferred": 0, "failed": 0}, result.out
        assert f"game {game_id} Round {number} of 13" not in result.out  # resolved by the bids, not a deadline

    check_finished(referee, game_id)
    for player in mailstack.players:
        receipts = mails(mailstack, player, RECEIPT)
        assert len(receipts) == 12
        for number in range(1, 13):
            [res] = [m for m in mails(mailstack, player, RESULT)
                     if int(RESULT.match(subject(m))[2]) == number]  # fmt: skip
            for other in mailstack.players:
                line = round_line(res, other)
                assert line.split()[1] == bids[number, other] and "random" not in line, line
    # the receipts answer the bids they confirm
    bid_ids = {str(m.message["Message-ID"]) for m in mailstack.sent if m.mail_from in mailstack.players}
    receipt_answers = {str(m["In-Reply-To"]) for p in mailstack.players for m in mails(mailstack, p, RECEIPT)}
    assert receipt_answers == bid_ids and len(bid_ids) == 36
    inbox_empty_and_filed(mailstack, 36)
    moves = bids_of(referee, game_id)
    assert len([m for m in moves if m[3] == "mail"]) == 36
    assert len([m for m in moves if m[3] == "forced"]) == 3


# -- 2. the same game with the daemon ------------------------------------------------


def play_along(stack: MailStack, until, timeout: float, alive=lambda: True, rng=None) -> int:
    """Every player answers every prompt as soon as it is sent; returns how
    many bids were sent once ``until()`` holds."""
    rng = rng or random.Random(11)
    answered: set[str] = set()
    give_up = time.monotonic() + timeout
    while not until():
        assert alive(), "the referee stopped"
        assert time.monotonic() < give_up, f"game not over after {timeout}s ({len(answered)} bids)"
        for player in stack.players:
            for prompt in mails(stack, player, PROMPT):
                if str(prompt["Message-ID"]) not in answered:
                    answered.add(str(prompt["Message-ID"]))
                    reply(stack, player, prompt, f"bid {rng.choice(hand(prompt))}\n")
        time.sleep(0.05)
    return len(answered)


def test_whole_game_by_mail_with_the_daemon(referee: Referee, mailstack: MailStack) -> None:
    game_id = referee.new_game("--deadline", "1h")  # only IDLE can make it end in time
    daemon = referee.popen("-v", "serve")
    try:
        finished = lambda: all(mails(mailstack, p, FINAL) for p in mailstack.players)  # noqa: E731
        bids = play_along(mailstack, finished, timeout=40, alive=lambda: daemon.poll() is None)
        daemon.terminate()  # SIGTERM
        out, err = daemon.communicate(timeout=10)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.communicate()
    assert daemon.returncode == 0, err
    assert "Traceback" not in err and err.rstrip().endswith("stopped"), err
    assert bids == 36
    check_finished(referee, game_id)
    for player in mailstack.players:
        assert len(mails(mailstack, player, RECEIPT)) == 12
    inbox_empty_and_filed(mailstack, 36)
    assert [m[3] for m in bids_of(referee, game_id)].count("mail") == 36
    assert referee.outbox() == []
    # the log tells every accepted move and sent mail, never a bid's value
    assert err.count("move accepted from seat") == 36
    assert err.count("sent mail") == len(mailstack.sent) - 36
