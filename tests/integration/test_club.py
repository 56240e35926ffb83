"""A club's evening by mail, against a real Dovecot and SMTP server, in cron
mode (`referee run --once`): three friends sign up for Bid! by mail (JOIN,
an empty reply to each confirmation, START), the game starts short of its
four seats, the club's list gets the start with its commitment and the
game's page, the list's copy of that mail comes back to the referee as
Mailman 3 delivers it and is ignored (no loop), and two players talk
through the referee (TELL, and a reply to it) without either seeing the
other's address."""

from __future__ import annotations

import re
from email import message_from_bytes, policy

import pytest
from mailstack import MailStack
from referee_helpers import Referee, body, reply, subject

SITE = "https://games.example.org/club"


@pytest.fixture
def club(mailstack: MailStack, tmp_path) -> Referee:
    lists = f"club-{mailstack.n}@lists.example.org"
    extra = f'\n[club]\nannounce_to = ["{lists}"]\n'
    referee = Referee(mailstack, tmp_path, extra=extra)
    text = referee.cfg.read_text().replace('database = "games.db"', f'database = "games.db"\nsite_url = "{SITE}"')
    referee.cfg.write_text(text)
    return referee


def newest(stack: MailStack, address: str, pattern: str):
    found = [m.message for m in stack.messages(address) if re.search(pattern, subject(m.message))]
    assert found, f"{address} has no mail matching {pattern!r}: {[subject(m.message) for m in stack.messages(address)]}"
    return found[-1]


def test_a_club_signs_up_starts_announces_on_its_list_and_talks_through_the_referee(club: Referee):
    stack = club.stack
    alice, bob, carol = stack.players
    the_list = f"club-{stack.n}@lists.example.org"

    for player in stack.players:
        stack.send(player, stack.referee, "join", "JOIN bid\n")  # four seats, the most Bid! takes
    club.run_once()
    for player in stack.players:  # as a phone sends it: nothing of their own, the confirmation quoted
        confirmation = newest(stack, player, r"JOIN")
        quoted = "\n".join(f"> {line}" for line in body(confirmation).splitlines())
        reply(stack, player, confirmation, f"\n\nOn Friday, the referee wrote:\n{quoted}\n")
    club.run_once()
    assert [g["state"] for g in club.store().games()] == ["open"]
    assert len(club.store().signups(1)) == 3
    for player in stack.players:
        reply(stack, player, newest(stack, player, r"JOIN"), "START\n")
    club.run_once()

    game = club.store().game(1)
    assert game["state"] == "running" and [s["address"] for s in club.store().seats(1)] == stack.players
    starts = [m for m in stack.sent_to(the_list) if "begins" in subject(m.message)]
    assert len(starts) == 1, [subject(m.message) for m in stack.sent_to(the_list)]
    start = starts[0]
    text = body(start.message)
    assert game["seed_commitment"] in text and f"{SITE}/" in text
    assert not [p for p in stack.players if p in start.raw.decode("utf-8", "replace")]  # names, never addresses

    # The list delivers its copy to its members, the referee among them, as Mailman 3 does.
    copy = message_from_bytes(start.raw, policy=policy.default)
    del copy["From"]
    copy["From"] = f"Referee via Club <{the_list}>"
    copy["Reply-To"] = stack.referee
    copy["List-Id"] = f"<club-{stack.n}.lists.example.org>"
    copy["Sender"] = f"club-{stack.n}-bounces@lists.example.org"
    stack.send_raw(the_list, stack.referee, copy.as_bytes(policy=policy.SMTP))
    sent_before = len(stack.sent)
    club.run_once()
    assert len(stack.sent) == sent_before  # nothing answered, nothing copied to the list again
    assert club.store().messages()[-1]["code"] == "ignored"

    # Table talk: alice to bob, and bob's answer back, through the referee.
    reply(stack, alice, newest(stack, alice, r"\[bid-1 "), "TELL bob Shall we leave the sixes to carol?\n")
    club.run_once()
    told = newest(stack, bob, r"writes to you")
    assert "Shall we leave the sixes to carol?" in body(told)
    assert alice not in told.as_string() and carol not in [str(told["To"])]
    reply(stack, bob, told, "Deal.\n")
    club.run_once()
    answered = newest(stack, alice, r"answers you")
    assert "Deal." in body(answered) and bob not in answered.as_string()
    assert not [m for m in stack.sent_to(the_list) if "Deal." in body(m.message) or "sixes" in body(m.message)]
    assert not club.moves(1) or all(m["source"] != "mail" for m in club.moves(1))  # talk moved nothing
