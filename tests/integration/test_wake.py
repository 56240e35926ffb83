"""The daemon notices the keeper: `referee new` while `serve` idles in IMAP
IDLE, against the real Dovecot and SMTP server, and the new game's
announcements reach the SMTP server within 2 seconds (before issue 32 they
waited for the 20-minute heartbeat).  This one measures real time: the
latency of a real daemon, woken by another process's commit to games.db."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from mailstack import MailStack, wait_for
from referee_helpers import PROMPT, Referee, subject

ROUNDS = 3  # games made one after another, each timed on its own
LIMIT = 2.0  # seconds from the keeper's command to the last announcement at the SMTP server


@pytest.fixture
def referee(mailstack: MailStack, tmp_path) -> Referee:
    return Referee(mailstack, tmp_path)


def announcements(stack: MailStack, game_id: int) -> list[datetime]:
    """When the SMTP server took each player's first prompt of the game."""
    return [
        mail.received_at
        for mail in stack.sent
        if (match := PROMPT.match(subject(mail.message))) and int(match[1]) == game_id and match[2] == "1"
    ]


def test_referee_new_while_serve_idles_is_announced_within_two_seconds(referee: Referee, mailstack: MailStack) -> None:
    daemon = referee.popen("-vv", "serve")  # -vv: aioimaplib's debug lines say when IDLE is in force
    latencies = []

    def idles() -> int:
        return daemon.err.count("assuming IDLE is active")

    try:
        wait_for(lambda: idles() > 0, timeout=30)
        for n in range(ROUNDS):
            idling = idles()
            assert daemon.alive(), daemon.err
            asked = datetime.now(UTC)
            game_id = referee.new_game("--deadline", "1h")  # nothing falls due for an hour
            returned = datetime.now(UTC)
            wait_for(lambda game_id=game_id: len(announcements(mailstack, game_id)) == 3, timeout=30)
            last = max(announcements(mailstack, game_id))
            latencies.append(((last - asked).total_seconds(), (last - returned).total_seconds()))
            assert (last - asked).total_seconds() < LIMIT, (n, latencies)
            wait_for(lambda idling=idling: idles() > idling, timeout=30)  # idle again, for the next round
    finally:
        assert daemon.stop() == 0, daemon.err
    print(
        "announcements at the SMTP server, seconds after `referee new` began (after it returned): "
        + ", ".join(f"{whole:.2f} ({after:.2f})" for whole, after in latencies)
    )  # shown with -s
    assert daemon.err.count("games.db changed outside the daemon") >= ROUNDS
