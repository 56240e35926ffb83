"""The referee against real mail servers: IMAP in (Dovecot), SMTP out
(aiosmtpd relaying into Dovecot over LMTP), in cron mode (`run --once`) and
daemon mode (`serve`).  Receipt times are the server's (IMAP INTERNALDATE),
so these tests use the real clock, short deadlines and real waits."""

from __future__ import annotations

import asyncio
import email
import hashlib
import random
import time
from datetime import timedelta
from email import policy

import pytest
from mailstack import MailStack, wait_for
from referee_helpers import (
    FINAL,
    MOVE_ANSWER,
    NOTICE,
    PROMPT,
    RECEIPT,
    RESULT,
    Daemon,
    Referee,
    body,
    deadline_of,
    hand,
    mails,
    message_ids,
    receipts,
    reply,
    round_line,
    subject,
    wait_until,
)

from referee.engine import Engine
from referee.mail.imap import ImapSource
from referee.mail.source import SourceError
from referee.runner import Runner, run_lock
from referee.store import Store


class EveryMail(Referee):
    """Its games mail each bid's receipt on its own and every round's result
    to everyone, as these tests count them: NOTIFY EVERY (at the default,
    TURNS, the last bid's receipt goes at the top of the result)."""

    def new_game(self, *args: str, players: list[str] | None = None) -> int:
        return super().new_game(*args, "--notify", "every", players=players)


@pytest.fixture
def referee(mailstack: MailStack, tmp_path) -> Referee:
    return EveryMail(mailstack, tmp_path)


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
            [prompt] = [
                m
                for m in mails(mailstack, player, PROMPT, from_inbox=True)
                if int(PROMPT.match(subject(m))[2]) == number
            ]
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
        accepted = receipts(mailstack, player)
        assert len(accepted) == 12
        assert sorted(int(MOVE_ANSWER.search(body(m))[1]) for m in accepted) == list(range(1, 13))
        for number in range(1, 13):
            [res] = [m for m in mails(mailstack, player, RESULT) if int(RESULT.match(subject(m))[2]) == number]
            for other in mailstack.players:
                line = round_line(res, other)
                assert line.split()[1] == bids[number, other] and "random" not in line, line
    # the receipts answer the bids they confirm
    bid_ids = {str(m.message["Message-ID"]) for m in mailstack.sent if m.mail_from in mailstack.players}
    receipt_answers = {str(m["In-Reply-To"]) for p in mailstack.players for m in receipts(mailstack, p)}
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
    # IDLE resolves each round as soon as the third bid lands.  A bid IDLE
    # failed to announce would be read only at the deadline (and still count,
    # having reached the server before it): 5 s, so such a lost wake-up shows
    # as a round resolved at its deadline rather than as a hung test.
    game_id = referee.new_game("--deadline", "5s")
    daemon = referee.popen("-v", "serve")

    def finished() -> bool:
        return all(mails(mailstack, p, FINAL) for p in mailstack.players)

    try:
        bids = play_along(mailstack, finished, timeout=45, alive=daemon.alive)
    except AssertionError as error:
        daemon.stop()
        raise AssertionError(f"{error}\n--- the daemon's log:\n{daemon.err}") from None
    finally:
        if daemon.alive():
            stopping = time.monotonic()
            status = daemon.stop()  # SIGTERM
            stopped_in = time.monotonic() - stopping
    err = daemon.err
    assert status == 0 and stopped_in < 3, err
    assert "Traceback" not in err and err.rstrip().endswith("stopped"), err
    assert bids == 36
    check_finished(referee, game_id)
    for player in mailstack.players:
        assert len(receipts(mailstack, player)) == 12
    inbox_empty_and_filed(mailstack, 36)
    assert [m[3] for m in bids_of(referee, game_id)].count("mail") == 36
    assert referee.outbox() == []
    late = [p["label"] for p in referee.store().phases(game_id) if p["resolved_at"] >= p["deadline"]]
    assert late == [], f"resolved only at the deadline (IDLE missed a bid): {late}"
    # the log tells every accepted move and sent mail, never a bid's value
    assert err.count("move accepted from seat") == 36
    assert err.count("sent mail") == len(mailstack.sent) - 36


# -- 3, 4. deadlines by the server's receipt time ------------------------------------------


def prompt_for(stack: MailStack, player: str, number: int) -> object:
    [prompt] = [m for m in mails(stack, player, PROMPT) if int(PROMPT.match(subject(m))[2]) == number]
    return prompt


def result_for(stack: MailStack, player: str, number: int) -> object:
    [result] = [m for m in mails(stack, player, RESULT) if int(RESULT.match(subject(m))[2]) == number]
    return result


def test_silent_player_gets_a_random_bid_after_the_deadline(referee: Referee, mailstack: MailStack) -> None:
    alice, bob, carol = mailstack.players
    game_id = referee.new_game("--deadline", "2s")
    referee.run_once()
    for player in (alice, bob):
        reply(mailstack, player, prompt_for(mailstack, player, 1), "bid K\n")
    result = referee.run_once()
    assert result.counts == {"received": 2, "sent": 2, "deferred": 0, "failed": 0}
    assert referee.status(game_id)["phase"]["waiting_for"] == [carol]

    # A deadline is enforced by the first pass that looks at the inbox after its second.
    wait_until(deadline_of(referee, game_id) + timedelta(seconds=1))
    result = referee.run_once()

    assert f"resolved game {game_id} Round 1 of 13" in result.out
    for player in mailstack.players:
        res = result_for(mailstack, player, 1)
        assert "(random: no bid by the deadline)" in round_line(res, carol)
        assert round_line(res, alice).split()[1:] == ["K"]
        assert round_line(res, bob).split()[1:] == ["K"]
        prompt_for(mailstack, player, 2)  # round 2 is open and prompted
    [random_bid] = [m for m in bids_of(referee, game_id) if m[3] == "random"]
    assert random_bid[:2] == (1, 2)
    assert mails(mailstack, carol, RECEIPT) == []


def test_receipt_time_decides_not_reading_time(referee: Referee, mailstack: MailStack) -> None:
    """A bid the server got before the deadline counts though the referee reads
    it after; one the server got after the deadline is refused, with a reply."""
    alice, bob, carol = mailstack.players
    game_id = referee.new_game("--deadline", "3s")
    referee.run_once()
    deadline = deadline_of(referee, game_id)
    early = reply(mailstack, alice, prompt_for(mailstack, alice, 1), "bid Q\n")
    wait_until(deadline.replace(microsecond=0) + timedelta(seconds=1))  # INTERNALDATE has whole seconds
    late = reply(mailstack, bob, prompt_for(mailstack, bob, 1), "bid J\n")
    [on_time, too_late] = mailstack.messages(mailstack.referee)
    assert on_time.internaldate <= deadline < too_late.internaldate

    result = referee.run_once()  # reads both after the deadline

    assert result.counts["received"] == 2
    assert f"resolved game {game_id} Round 1 of 13" in result.out
    res = result_for(mailstack, alice, 1)
    assert round_line(res, alice).split()[1:] == ["Q"]
    assert "(random: no bid by the deadline)" in round_line(res, bob)
    assert "(random: no bid by the deadline)" in round_line(res, carol)
    [receipt] = receipts(mailstack, alice)
    assert str(receipt["In-Reply-To"]) == str(email.message_from_bytes(early)["Message-ID"])
    assert receipts(mailstack, bob) == []
    [refusal] = [
        m
        for m in mailstack.sent_to(bob)
        if str(m.message["In-Reply-To"]) == str(email.message_from_bytes(late)["Message-ID"])
    ]
    text = " ".join(body(refusal.message).split())
    assert text.startswith("> bid J Not done: ") and "after the deadline of Round 1 of 13" in text, text
    assert "Nothing was changed by this line" in text and not MOVE_ANSWER.search(body(refusal.message))
    assert subject(refusal.message) == f"Re: {subject(prompt_for(mailstack, bob, 1))}"  # his tag and token
    [(_, _, move, source)] = [m for m in bids_of(referee, game_id) if m[1] == 0]
    assert (move, source) == ("bid Q", "mail")
    inbox_empty_and_filed(mailstack, 2)


# -- 5. the SMTP server refusing or away ------------------------------------------------


def deliver_bid(stack: MailStack, player: str, prompt, text: str) -> bytes:
    """A reply straight into the referee's INBOX over LMTP, for when the test's
    SMTP server is refusing everything (the referee's mail included)."""
    message_id = str(prompt["Message-ID"])
    raw = stack.compose(
        player,
        str(prompt["Reply-To"]),
        f"Re: {subject(prompt)}",
        text,
        headers={"In-Reply-To": message_id, "References": message_id},
    )
    stack.dovecot.deliver(stack.referee, raw, mail_from=player)
    return raw


def test_temporary_smtp_refusal_loses_nothing(referee: Referee, mailstack: MailStack) -> None:
    mailstack.refuse(451)
    game_id = referee.new_game("--deadline", "1h")
    queued = {m["message_id"]: m["recipients"] for m in referee.outbox()}
    assert len(queued) == 6  # the start and the first prompt, to each player

    result = referee.run_once(expect=None)
    assert result.status in (0, 1), result.err
    if result.status == 0:
        assert result.counts == {"received": 0, "sent": 0, "deferred": 6, "failed": 0}
    listed = referee.cli("outbox")
    assert listed.status == 0 and len(listed.out.splitlines()) == 6
    assert mailstack.sent == []
    assert all(m["attempts"] == 1 and "451" in m["last_error"] for m in referee.outbox())

    mailstack.accept()
    result = referee.run_once()
    assert result.counts["sent"] == 0  # backing off: the next try is a minute away
    assert len(referee.outbox()) == 6
    # Let the minute pass without waiting for it: clear next_try_at in games.db.
    referee.make_queue_due()
    result = referee.run_once()

    assert result.counts == {"received": 0, "sent": 6, "deferred": 0, "failed": 0}
    assert referee.outbox() == []
    sent = {str(m.message["Message-ID"]): m.rcpt_tos for m in mailstack.sent}
    assert sent == queued  # each sent once, with the Message-ID it was queued with
    for player in mailstack.players:
        prompt_for(mailstack, player, 1)
        assert len(mailstack.messages(player)) == 2  # delivered to the Dovecot INBOX
    assert referee.status(game_id)["phase"]["number"] == 1


def test_unreachable_smtp_server_keeps_the_mail_queued(referee: Referee, mailstack: MailStack) -> None:
    referee.new_game("--deadline", "1h")
    mailstack.stop()  # nobody listens on the SMTP port now

    result = referee.run_once(expect=1)

    [line] = result.err.splitlines()
    assert line.startswith("referee: SMTP server 127.0.0.1:") and "Traceback" not in result.err
    assert len(referee.outbox()) == 6
    mailstack.start()  # on another port
    referee.write_config(smtp_port=mailstack.smtp_port)
    referee.make_queue_due()
    assert referee.run_once().counts["sent"] == 6
    assert len(mailstack.sent) == 6 and referee.outbox() == []


def refused_for_good(referee: Referee, mailstack: MailStack) -> tuple[int, str]:
    """A game whose prompts went out, then a bid whose receipt the server
    refuses with 550; returns the game and the player."""
    alice = mailstack.players[0]
    game_id = referee.new_game("--deadline", "1h")
    referee.run_once()
    mailstack.refuse(550)
    deliver_bid(mailstack, alice, prompt_for(mailstack, alice, 1), "bid 5\n")
    result = referee.run_once()
    assert result.counts == {"received": 1, "sent": 0, "deferred": 0, "failed": 1}
    return game_id, alice


def test_permanent_smtp_refusal_is_recorded(referee: Referee, mailstack: MailStack) -> None:
    game_id, alice = refused_for_good(referee, mailstack)

    [failed] = referee.outbox("failed")
    assert failed["recipients"] == [alice] and "550" in failed["last_error"]
    assert failed["subject"] == f"Re: {subject(prompt_for(mailstack, alice, 1))}"
    assert MOVE_ANSWER.search(body(email.message_from_bytes(failed["raw"], policy=policy.default)))
    assert referee.outbox() == []  # not queued again
    mailstack.accept()
    referee.make_queue_due()
    assert referee.run_once().counts["sent"] == 0  # and never tried again
    assert mails(mailstack, alice, RECEIPT) == []
    assert referee.status(game_id)["phase"]["waiting_for"] == mailstack.players[1:]


def test_permanent_smtp_refusal_is_reported_by_status(referee: Referee, mailstack: MailStack) -> None:
    game_id, alice = refused_for_good(referee, mailstack)
    for args in (("status",), ("status", str(game_id))):
        result = referee.cli(*args)
        assert result.status == 0
        text = result.out.lower()
        assert alice in text and "550" in text, result.out


def test_unsendable_reply_does_not_hold_up_the_queue(referee: Referee, mailstack: MailStack) -> None:
    alice = mailstack.players[0]
    referee.new_game("--deadline", "1h")
    referee.run_once()
    stranger = "jöhn@example.org"  # an internationalised address, and an SMTP server without SMTPUTF8
    mailstack.stop()
    mailstack.start(smtputf8=False)
    referee.write_config(smtp_port=mailstack.smtp_port)
    raw = (
        f"From: {stranger}\r\nTo: {mailstack.referee}\r\nSubject: let me play\r\n"
        f"Message-ID: <intl-1@example.net>\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"\r\nbid 7\r\n"
    ).encode()
    mailstack.dovecot.append(mailstack.referee, raw)  # as a server that has SMTPUTF8 delivered it
    reply(mailstack, alice, prompt_for(mailstack, alice, 1), "bid 9\n")

    result = referee.run_once(expect=None)

    assert len(receipts(mailstack, alice)) == 1  # the queue behind the bad mail went out
    assert result.status == 0, result.err  # the server was reachable all along
    [failed] = referee.outbox("failed")  # the one mail that cannot be sent is given up on
    assert failed["recipients"] == [stranger] and "SMTPUTF8" in failed["last_error"]


def test_an_internationalised_address_is_written_as_an_address_over_smtputf8(
    referee: Referee, mailstack: MailStack
) -> None:
    """RFC 6531/6532: to a server that offers SMTPUTF8, mail to jöhn@ goes
    with the SMTPUTF8 option, and its To: is the address in UTF-8, not an
    encoded word (which is no address)."""
    from aiosmtpd.controller import Controller
    from mailstack import free_port

    class Recorder:
        def __init__(self):
            self.mails: list = []

        async def handle_DATA(self, server, session, envelope):
            self.mails.append((envelope.mail_options, list(envelope.rcpt_tos), bytes(envelope.original_content)))
            return "250 OK"

    recorder = Recorder()
    controller = Controller(recorder, hostname="127.0.0.1", port=free_port(), enable_SMTPUTF8=True, decode_data=False)
    controller.start()
    try:
        referee.write_config(smtp_port=controller.port)
        stranger = "jöhn@example.org"
        result = referee.cli(
            "new", "pure-skill", "--player", stranger, *[x for p in mailstack.players[:2] for x in ("--player", p)]
        )
        assert result.status == 0, result.err
        referee.run_once()
    finally:
        controller.stop()
    [(options, _, raw)] = [mail for mail in recorder.mails if mail[1] == [stranger]][:1]
    assert "SMTPUTF8" in options
    head = raw.split(b"\r\n\r\n", 1)[0].decode("utf-8")
    assert f"\r\nTo: {stranger}\r\n" in f"\r\n{head}\r\n" and "=?utf-8?" not in head.split("Subject:")[0]
    assert all("SMTPUTF8" not in mail[0] for mail in recorder.mails if mail[1] != [stranger])


# -- 6. the IMAP server going away ---------------------------------------------------------


def round_one_bids_once(referee: Referee, stack: MailStack, game_id: int) -> None:
    """Each player's round-1 bid was recorded once, answered by one receipt,
    and filed; round 1 is resolved."""
    moves = [m for m in bids_of(referee, game_id) if m[0] == 1]
    assert sorted((m[1], m[3]) for m in moves) == [(0, "mail"), (1, "mail"), (2, "mail")], moves
    for player in stack.players:
        assert len(receipts(stack, player)) == 1, player
        result_for(stack, player, 1)
    inbox_empty_and_filed(stack, 3)
    ids = message_ids(stack)
    assert len(ids) == len(set(ids))


def run_pieces(referee: Referee, file: bool, between=None) -> int:
    """One pass of the runner by hand: fetch and ingest every new message, then
    ``between()`` (a server restart, say), then file them only if ``file``
    (False: the process died after committing, before filing).  Returns how
    many were fetched."""

    async def go() -> int:
        config = referee.config
        engine = Engine(Store(config.database), config)
        runner = Runner.from_config(config, engine)
        try:
            messages = await runner.source.fetch()
            for message in messages:
                engine.ingest(message.raw, received_at=message.received_at)
            if between:  # in a thread, so the loop sees the connection drop meanwhile
                await asyncio.to_thread(between)
            if file:
                for message in messages:
                    await runner.source.done([message])
            return len(messages)
        finally:
            await runner.close()

    return asyncio.run(go())


def test_imap_restart_between_and_during_runs_loses_nothing(referee: Referee, mailstack: MailStack) -> None:
    alice, bob, carol = mailstack.players
    dovecot = mailstack.dovecot
    game_id = referee.new_game("--deadline", "1h")
    referee.run_once()
    prompts = {p: prompt_for(mailstack, p, 1) for p in mailstack.players}

    # Restarted mid-run: after the bid's effects were committed, before it was filed.
    reply(mailstack, alice, prompts[alice], "bid 2\n")
    try:
        run_pieces(referee, file=True, between=dovecot.restart)
    except SourceError:
        pass  # the connection was gone when filing: the message stays in INBOX
    # Mail delivered around a restart, and a run while the server is down.
    reply(mailstack, bob, prompts[bob], "bid 3\n")
    dovecot.stop()
    try:
        result = referee.run_once(expect=1)
        [line] = result.err.splitlines()
        assert line.startswith("referee: IMAP server 127.0.0.1:") and "cannot connect" in line
    finally:
        dovecot.start()
    reply(mailstack, carol, prompts[carol], "bid 4\n")
    # While IMAP was down the run still sent its mail; what the SMTP relay could
    # not hand to the stopped Dovecot it refused (451), so it waits for its retry.
    referee.make_queue_due()

    result = referee.run_once()

    assert result.counts["received"] in (2, 3)  # alice's again if it was not filed
    round_one_bids_once(referee, mailstack, game_id)


def test_killed_between_commit_and_filing_handles_the_mail_once(referee: Referee, mailstack: MailStack) -> None:
    game_id = referee.new_game("--deadline", "1h")
    referee.run_once()
    for player in mailstack.players:
        reply(mailstack, player, prompt_for(mailstack, player, 1), "bid 6\n")
    assert run_pieces(referee, file=False) == 3  # committed, then "killed"
    assert len(mailstack.messages(mailstack.referee)) == 3  # nothing filed

    result = referee.run_once()

    assert result.counts["received"] == 3  # read again, known as duplicates
    assert [m["code"] for m in referee.store().messages()] == ["move"] * 3
    round_one_bids_once(referee, mailstack, game_id)


def test_daemon_survives_an_imap_restart(referee: Referee, mailstack: MailStack) -> None:
    """The connection drops while the daemon is in IDLE: it must notice (a
    lost connection never wakes aioimaplib's IDLE wait), reconnect and read
    the mail delivered after the restart, and still stop promptly."""
    alice = mailstack.players[0]
    referee.new_game("--deadline", "1h")
    with Daemon(referee, imap_timeout=2) as daemon:  # a hung IMAP command fails after 2 s
        wait_for(lambda: mails(mailstack, alice, PROMPT), timeout=10)
        time.sleep(0.3)  # in IDLE by now
        mailstack.dovecot.restart()
        reply(mailstack, alice, prompt_for(mailstack, alice, 1), "bid 8\n")
        try:
            wait_for(
                lambda: receipts(mailstack, alice), timeout=4, message="no receipt 4 s after the IMAP server came back"
            )
        finally:
            assert daemon.finish() < 5
    inbox_empty_and_filed(mailstack, 1)


def test_mail_arriving_while_the_daemon_files_wakes_it(referee: Referee, mailstack: MailStack) -> None:
    """Dovecot announces mail that lands while the daemon files another message
    in the reply to that STORE/MOVE, where aioimaplib drops it; IDLE does not
    announce it again.  The daemon must still see it at once, not at its next
    timer (found by this test; fixed in ImapSource.wait_for_mail)."""
    alice, bob = mailstack.players[:2]

    async def go() -> tuple[bool, float]:
        config = referee.config
        source = ImapSource(config.imap, Store(config.database), timeout=5)
        try:
            mailstack.send(alice, mailstack.referee, "one", "bid 1\n")
            [first] = await source.fetch()
            mailstack.send(bob, mailstack.referee, "two", "bid 2\n")  # lands while the first is filed
            await source.done([first])  # as Runner.receive does, before serve() waits
            started = time.monotonic()
            woke = await source.wait_for_mail(3)  # as Runner._wait does
            return woke, time.monotonic() - started
        finally:
            await source.close()

    woke, took = asyncio.run(go())
    assert woke and took < 1.5, f"woke={woke} after {took:.1f}s with a message waiting"


# -- 7. a changed UIDVALIDITY ------------------------------------------------------------


def test_changed_uidvalidity_handles_nothing_twice_and_loses_nothing(referee: Referee, mailstack: MailStack) -> None:
    alice, bob, carol = mailstack.players
    dovecot = mailstack.dovecot
    game_id = referee.new_game("--deadline", "1h")
    referee.run_once()
    prompts = {p: prompt_for(mailstack, p, 1) for p in mailstack.players}
    reply(mailstack, alice, prompts[alice], "bid A\n")
    assert referee.run_once().counts["received"] == 1  # handled and filed in processed
    reply(mailstack, bob, prompts[bob], "bid 2\n")
    assert run_pieces(referee, file=False) == 1  # handled, but still in INBOX
    reply(mailstack, carol, prompts[carol], "bid 3\n")  # not handled yet
    old = dovecot.uidvalidity(mailstack.referee)
    [box] = referee.store().db["mailboxes"].rows
    assert box["uidvalidity"] == old

    dovecot.reset_uidvalidity(mailstack.referee)

    assert dovecot.uidvalidity(mailstack.referee) != old
    new_uids = [m.uid for m in mailstack.messages(mailstack.referee)]
    # bob's mail now has a UID the referee has filed already under the old
    # UIDVALIDITY: a referee that went on from its last UID would never see it
    assert min(new_uids) <= box["last_uid"]
    result = referee.run_once()
    assert result.counts["received"] == 2
    round_one_bids_once(referee, mailstack, game_id)
    [box] = referee.store().db["mailboxes"].rows
    assert box["uidvalidity"] == dovecot.uidvalidity(mailstack.referee)
    assert referee.run_once().counts["received"] == 0


# -- 8. two runs at once ------------------------------------------------------------------


def test_a_run_while_another_holds_the_lock_does_nothing(referee: Referee, mailstack: MailStack) -> None:
    alice = mailstack.players[0]
    referee.new_game("--deadline", "1h")
    referee.run_once()
    reply(mailstack, alice, prompt_for(mailstack, alice, 1), "bid 4\n")
    with run_lock(referee.db):  # as a daemon or a slow cron run holds it
        result = referee.run_once(expect=5)  # busy
        assert "busy" in result.err and "did nothing" in result.err and result.out == ""
        assert len(mailstack.messages(mailstack.referee)) == 1
    assert referee.run_once().counts["received"] == 1
    assert len(receipts(mailstack, alice)) == 1


def test_overlapping_cron_runs_never_handle_a_mail_twice(referee: Referee, mailstack: MailStack) -> None:
    game_id = referee.new_game("--deadline", "1h")
    referee.run_once()
    for number in (1, 2, 3):
        for player in mailstack.players:
            reply(mailstack, player, prompt_for(mailstack, player, number), f"bid {number + 3}\n")
        runs = [referee.popen("run", "--once", name=f"run-{number}-{n}") for n in range(3)]
        statuses = [run.wait(30) for run in runs]
        assert set(statuses) <= {0, 5} and 0 in statuses, [run.err for run in runs]  # 5: busy, did nothing
        received = sum(int(run.out.split("received ")[1].split(",")[0]) for run in runs if "received" in run.out)
        assert received == 3
        wait_for(lambda n=number: all(prompt_for_or_none(mailstack, p, n + 1) for p in mailstack.players))
    moves = [m for m in bids_of(referee, game_id) if m[3] == "mail"]
    assert sorted((m[0], m[1]) for m in moves) == [(n, s) for n in (1, 2, 3) for s in range(3)]
    for player in mailstack.players:
        assert len(receipts(mailstack, player)) == 3
    ids = message_ids(mailstack)
    assert len(ids) == len(set(ids))
    inbox_empty_and_filed(mailstack, 9)


def prompt_for_or_none(stack: MailStack, player: str, number: int):
    found = [m for m in mails(stack, player, PROMPT) if int(PROMPT.match(subject(m))[2]) == number]
    return found[0] if found else None


# -- 9. mail that cannot be handled, and mail that must not be answered -----------------------


def test_mail_the_referee_fails_on_is_quarantined_unanswered(referee: Referee, mailstack: MailStack, tmp_path) -> None:
    """A real internal failure: the keeper's own receipt template is broken, so
    handling a bid raises.  The bid is kept (store and quarantine folder),
    nobody is answered, and once the template is fixed the keeper can move it
    back to INBOX to have it handled."""
    alice = mailstack.players[0]
    templates = tmp_path / "templates"
    (templates / "mail" / "answers").mkdir(parents=True)
    (templates / "mail" / "answers" / "move.txt.j2").write_text("{{ no_such_thing.at_all }} broken\n")
    text = referee.cfg.read_text()
    referee.cfg.write_text(text.replace('database = "games.db"\n', 'database = "games.db"\ntemplates = "templates"\n'))
    game_id = referee.new_game("--deadline", "1h")
    referee.run_once()
    sent_before = len(mailstack.sent)
    bid = reply(mailstack, alice, prompt_for(mailstack, alice, 1), "bid 10\n")

    result = referee.run_once()

    assert result.counts == {"received": 1, "sent": 0, "deferred": 0, "failed": 0}
    assert not [m for m in mailstack.sent[sent_before:] if m.mail_from == mailstack.referee]  # no answer
    assert mailstack.messages(mailstack.referee) == []
    assert mailstack.messages(mailstack.referee, "processed") == []
    [kept] = mailstack.messages(mailstack.referee, "quarantine")
    assert email.message_from_bytes(kept.raw)["Message-ID"] == email.message_from_bytes(bid)["Message-ID"]
    [row] = referee.store().messages()
    assert row["code"] == "failed"
    assert bids_of(referee, game_id) == []

    # The keeper fixes the template and puts the mail back.
    (templates / "mail" / "answers" / "move.txt.j2").unlink()
    conn = mailstack.dovecot.imap(mailstack.referee)
    try:
        conn.select("quarantine")
        conn.uid("MOVE", str(kept.uid), "INBOX")
    finally:
        conn.logout()
    assert referee.run_once().counts["received"] == 1
    assert len(receipts(mailstack, alice)) == 1
    assert [m[3] for m in bids_of(referee, game_id)] == ["mail"]
    assert len(mailstack.messages(mailstack.referee, "processed")) == 1


def test_bounces_and_auto_replies_are_filed_unanswered(referee: Referee, mailstack: MailStack) -> None:
    alice, bob = mailstack.players[:2]
    referee.new_game("--deadline", "1h")
    referee.run_once()
    sent_before = len(mailstack.sent)
    prompt = prompt_for(mailstack, alice, 1)
    reply_to = str(prompt["Reply-To"])
    mailstack.send(
        alice,
        reply_to,
        f"Out of office: {subject(prompt)}",
        "I am away until Monday.\n",
        headers={"Auto-Submitted": "auto-replied", "In-Reply-To": str(prompt["Message-ID"])},
    )
    bounce = mailstack.compose(
        "MAILER-DAEMON@example.net", mailstack.referee, "Undelivered Mail Returned to Sender", "bid 5\n"
    )
    mailstack.dovecot.deliver(mailstack.referee, bounce, mail_from="")  # empty envelope sender
    mailstack.send(bob, mailstack.referee, "list digest", "bid 5\n", headers={"List-Id": "<games.example.net>"})

    result = referee.run_once()

    assert result.counts == {"received": 3, "sent": 0, "deferred": 0, "failed": 0}
    assert not [m for m in mailstack.sent[sent_before:] if m.mail_from == mailstack.referee]  # no answer
    assert mailstack.messages(mailstack.referee) == []
    assert len(mailstack.messages(mailstack.referee, "processed")) == 3
    assert mailstack.messages(mailstack.referee, "quarantine") == []
    assert [r["code"] for r in referee.store().messages()] == ["ignored"] * 3


def test_a_huge_game_number_is_refused_not_failed(referee: Referee, mailstack: MailStack) -> None:
    """A subject tag with a game number past any integer, from a player but to
    the plain referee address (no reply token), and with a token-shaped word
    that names no seat: both refused, not failed, and the player is told
    (once: such notices go out at most once an hour)."""
    alice = mailstack.players[0]
    game_id = referee.new_game("--deadline", "1h")
    referee.run_once()
    sent_before = len(mailstack.sent)
    mailstack.send(alice, mailstack.referee, "Re: [pure-skill-99999999999999999999] Round 1 of 13", "bid 7\n")
    mailstack.send(
        alice, mailstack.referee, "Re: [pure-skill-99999999999999999999 abcdefghijklmnop] Round 1 of 13", "bid 7\n"
    )
    assert referee.run_once().counts["received"] == 2
    assert len(mailstack.messages(mailstack.referee, "processed")) == 2
    assert mailstack.messages(mailstack.referee, "quarantine") == []
    assert [r["code"] for r in referee.store().messages()] == ["refused"] * 2
    assert bids_of(referee, game_id) == []
    answers = [m.message for m in mailstack.sent[sent_before:] if m.mail_from == mailstack.referee]
    assert all(str(m["To"]) == alice for m in answers)
    notices = [m for m in answers if NOTICE.match(subject(m))]
    # one such notice an hour: the second mail is refused just the same, silently
    assert len(notices) == 1 and len(answers) == 1, [subject(m) for m in answers]
    assert all("without your private reply address" in " ".join(body(m).split()) for m in notices)


def test_a_move_needs_the_seats_reply_address_and_its_sender(referee: Referee, mailstack: MailStack) -> None:
    """A bid to alice's reply address from someone else changes nothing;
    alice (never the sender) is told.  Her reply to the notice, like any
    reply to the referee's mail, counts.  (A bid to the plain address is
    test_a_huge_game_number_is_refused_not_failed: one notice an hour.)"""
    alice, bob, _ = mailstack.players
    game_id = referee.new_game("--deadline", "1h")
    referee.run_once()
    prompt = prompt_for(mailstack, alice, 1)
    sent_before = len(mailstack.sent)
    mailstack.send(bob, str(prompt["Reply-To"]), f"Re: {subject(prompt)}", "bid 4\n")  # alice's address

    result = referee.run_once()

    assert result.counts == {"received": 1, "sent": 1, "deferred": 0, "failed": 0}
    assert [r["code"] for r in referee.store().messages()] == ["refused"]
    assert bids_of(referee, game_id) == [] and referee.status(game_id)["phase"]["waiting_for"] == mailstack.players
    answers = [m.message for m in mailstack.sent[sent_before:] if m.mail_from == mailstack.referee]
    assert [str(m["To"]) for m in answers] == [alice]
    assert NOTICE.match(subject(answers[0])), subject(answers[0])
    assert f"A mail from another address, {bob}, reached the referee" in " ".join(body(answers[0]).split())
    assert receipts(mailstack, alice) == [] and mails(mailstack, bob, RECEIPT) == []

    reply(mailstack, alice, answers[0], "bid 5\n")  # a reply to the notice moves nothing: it names no seat
    assert referee.run_once().counts["received"] == 1
    assert bids_of(referee, game_id) == []
    reply(mailstack, alice, prompt, "bid 5\n")  # as the notice says: a reply to the newest game mail
    assert referee.run_once().counts["received"] == 1
    [receipt] = receipts(mailstack, alice)
    assert MOVE_ANSWER.search(body(receipt)).groups() == ("1", "bid 5")
    assert bids_of(referee, game_id) == [(1, 0, "bid 5", "mail")]


# -- 10. config errors, found before any connection ------------------------------------------


def line_of(path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.strip().startswith(text))


def config_error(referee: Referee, *args: str) -> str:
    started = time.monotonic()
    result = referee.cli(*(args or ("run", "--once")))
    assert result.status == 2 and result.out == "", result
    assert time.monotonic() - started < 2  # no connection tried (192.0.2.1 would hang for 30 s)
    [line] = result.err.splitlines()
    return line


def test_clear_text_to_a_remote_server_is_refused_with_file_and_line(referee: Referee, mailstack: MailStack) -> None:
    mailstack.send(mailstack.players[0], mailstack.referee, "hello", "bid 3\n")
    referee.cfg.write_text(referee.cfg.read_text().replace('[imap]\nhost = "127.0.0.1"', '[imap]\nhost = "192.0.2.1"'))
    line = config_error(referee)
    assert line.startswith(f"referee: {referee.cfg}:{line_of(referee.cfg, 'security')}: imap.security")
    assert "127.0.0.1, ::1, localhost" in line
    # nothing was touched: no database, the mail still unread in INBOX
    assert not referee.db.exists()
    [waiting] = mailstack.messages(mailstack.referee)
    assert "\\Seen" not in waiting.flags


@pytest.mark.parametrize(
    "change, setting, message",
    [
        pytest.param(('[smtp]\nhost = "127.0.0.1"', '[smtp]\nhost = "192.0.2.1"'), "security", "smtp.security"),
        pytest.param(
            ('[smtp]\nhost = "127.0.0.1"\nport = ', '[smtp]\nhost = "127.0.0.1"\nport = 9'),
            "port",
            "smtp.port must be a port number",
        ),
        (("[smtp]\n", '[smtp]\npasword = "x"\n'), "pasword", "unknown setting smtp.pasword"),
        (("[smtp]\n", '[smtp]\npassword = "a"\npassword_env = "B"\n'), "password_env", "give only one of"),
    ],
)
def test_smtp_setting_errors_name_the_smtp_line(referee: Referee, change, setting, message) -> None:
    """[imap] comes first and has settings of the same names: the line given must be [smtp]'s."""
    referee.cfg.write_text(referee.cfg.read_text().replace(*change))
    text = referee.cfg.read_text().splitlines()
    smtp_at = text.index("[smtp]") + 1
    number = next(n for n, line in enumerate(text, 1) if n > smtp_at and line.startswith(setting))
    line = config_error(referee)
    assert message in line
    assert line.startswith(f"referee: {referee.cfg}:{number}: "), line


def test_other_config_errors_name_file_line_and_setting(referee: Referee) -> None:
    cfg = referee.cfg
    base = cfg.read_text()
    cases = [
        (base.replace('username = "', 'user = "', 1), "user", "unknown setting imap.user"),
        (
            base.replace("port = ", 'port = "', 1).replace(
                f"{referee.stack.dovecot.imap_port}\n", f'{referee.stack.dovecot.imap_port}"\n', 1
            ),
            "port",
            "imap.port must be a port number",
        ),
        (base + '\n[defaults]\ndeadline = "soon"\n', "deadline", "defaults.deadline"),
        (base + '\n[maildir]\npath = "mail"\n', "[maildir]", "either [imap] or [maildir]"),
        (base.replace('password = "', 'password_env = "REFEREE_TEST_UNSET_', 1), "password_env", "is not set"),
        (base.replace('address = "', 'address = "no-at-sign-', 1).replace("@", "", 1), "address", "referee.address"),
    ]
    for text, setting, message in cases:
        cfg.write_text(text)
        line = config_error(referee)
        assert line.startswith(f"referee: {cfg}:{line_of(cfg, setting)}: "), (setting, line)
        assert message in line, (setting, line)
    assert not referee.db.exists()
