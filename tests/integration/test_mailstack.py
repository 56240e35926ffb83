"""The mail-server fixtures themselves: SMTP in, LMTP relay, IMAP out, refusal,
restart and a changed UIDVALIDITY."""

from __future__ import annotations

import asyncio
import email
import imaplib
import re
import time
from datetime import UTC, datetime, timedelta
from email import policy

import aioimaplib
import aiosmtplib
import pytest
from mailstack import MailStack


def parse(raw: bytes):
    return email.message_from_bytes(raw, policy=policy.default)


def test_mail_arrives_over_lmtp_with_delivery_headers(mailstack: MailStack) -> None:
    alice = mailstack.players[0]
    raw = mailstack.send(alice, mailstack.referee, "bid", "bid 7\n")

    [delivered] = mailstack.wait_for(lambda: mailstack.inbox(mailstack.referee))
    msg = parse(delivered)
    assert msg["Delivered-To"] == mailstack.referee
    assert f"for <{mailstack.referee}>" in str(msg["Received"]).replace("\n", " ")
    assert msg["Message-ID"] == parse(raw)["Message-ID"]
    assert msg.get_content().strip() == "bid 7"

    [sent] = mailstack.sent
    assert sent.mail_from == alice
    assert sent.rcpt_tos == [mailstack.referee]
    assert sent.raw == raw
    assert sent.message["Subject"] == "bid"
    assert mailstack.inbox(alice) == []


def test_each_recipient_gets_its_own_delivered_to(mailstack: MailStack) -> None:
    # One LMTP transaction per recipient; outsiders are only recorded.
    to = [*mailstack.players, "outsider@elsewhere.example", mailstack.referee.replace("@", "+game-1@")]
    mailstack.send(mailstack.referee, to, "Round 1", "prize: 5\n")

    for player in mailstack.players:
        [raw] = mailstack.inbox(player)
        assert parse(raw)["Delivered-To"] == player
    [raw] = mailstack.inbox(mailstack.referee)  # +detail lands in INBOX, detail kept
    assert parse(raw)["Delivered-To"] == mailstack.referee.replace("@", "+game-1@")
    [sent] = mailstack.sent
    assert sent.rcpt_tos == to
    assert "outsider@elsewhere.example" not in sent.relayed
    assert mailstack.sent_to("outsider@elsewhere.example") == [sent]


def test_internaldate_is_the_delivery_time(mailstack: MailStack) -> None:
    before = datetime.now(UTC)
    mailstack.send(
        mailstack.players[1], mailstack.referee, "bid", "bid 3\n", headers={"Date": "Mon, 01 Jan 2001 00:00:00 +0000"}
    )
    [m] = mailstack.messages(mailstack.referee)
    assert abs(m.internaldate - before) < timedelta(seconds=5)
    assert m.message["Date"].datetime.year == 2001  # the sender's clock is not used
    assert "\\Seen" not in m.flags


def test_refuse_then_accept(mailstack: MailStack) -> None:
    alice = mailstack.players[0]

    async def send(code_expected: int | None) -> None:
        async with aiosmtplib.SMTP(
            hostname=mailstack.host, port=mailstack.smtp_port, local_hostname="client.example.net", start_tls=False
        ) as smtp:
            raw = mailstack.compose(alice, mailstack.referee, "bid", "bid 9\n")
            if code_expected is None:
                await smtp.sendmail(alice, [mailstack.referee], raw)
                return
            with pytest.raises(aiosmtplib.SMTPResponseException) as info:
                await smtp.sendmail(alice, [mailstack.referee], raw)
            assert info.value.code == code_expected

    mailstack.refuse(451)
    asyncio.run(send(451))
    mailstack.refuse(550)
    asyncio.run(send(550))
    assert mailstack.sent == []
    assert mailstack.inbox(mailstack.referee) == []

    mailstack.accept()
    asyncio.run(send(None))
    assert len(mailstack.sent) == 1
    assert len(mailstack.inbox(mailstack.referee)) == 1


def test_restart_keeps_mail(mailstack: MailStack) -> None:
    dovecot = mailstack.dovecot
    mailstack.send(mailstack.players[0], mailstack.referee, "one", "bid 1\n")
    ports = (dovecot.imap_port, dovecot.lmtp_port)
    pid = dovecot.pid
    session = dovecot.imap(mailstack.referee)  # an open session does not hold the restart up
    session.select("INBOX")

    started = time.monotonic()
    dovecot.restart()

    assert time.monotonic() - started < 3
    with pytest.raises((imaplib.IMAP4.abort, OSError)):
        session.noop()
    assert dovecot.running and dovecot.pid != pid
    assert (dovecot.imap_port, dovecot.lmtp_port) == ports
    mailstack.send(mailstack.players[1], mailstack.referee, "two", "bid 2\n")
    subjects = [parse(raw)["Subject"] for raw in mailstack.inbox(mailstack.referee)]
    assert subjects == ["one", "two"]


def test_stopped_dovecot_makes_the_relay_fail_loudly(mailstack: MailStack) -> None:
    mailstack.dovecot.stop()
    try:
        with pytest.raises(Exception) as info:
            mailstack.send(mailstack.players[0], mailstack.referee, "lost?", "bid 1\n")
        assert getattr(info.value, "smtp_code", None) == 451
        assert mailstack.sent == [] and mailstack.relay_errors
    finally:
        mailstack.dovecot.start()


async def _aio_read(host: str, port: int, user: str, password: str) -> tuple[int, list[tuple[int, str, bytes]]]:
    """UIDVALIDITY and (uid, INTERNALDATE, body) of INBOX via aioimaplib."""
    lost = asyncio.get_running_loop().create_future()
    imap = aioimaplib.IMAP4(
        host=host, port=port, timeout=10, conn_lost_cb=lambda exc: lost.done() or lost.set_result(exc)
    )
    await imap.wait_hello_from_server()
    assert (await imap.login(user, password)).result == "OK"
    select = await imap.select("INBOX")
    assert select.result == "OK"
    [uidvalidity] = [
        int(m.group(1))
        for line in select.lines
        if isinstance(line, bytes) and (m := re.search(rb"UIDVALIDITY (\d+)", line))
    ]
    search = await imap.uid_search("ALL")
    assert search.result == "OK"
    uids = [int(u) for u in search.lines[0].split()]
    found = []
    if uids:
        fetch = await imap.uid("fetch", ",".join(map(str, uids)), "(UID INTERNALDATE BODY.PEEK[])")
        assert fetch.result == "OK"
        lines = fetch.lines
        for i, line in enumerate(lines):
            if isinstance(line, bytes) and b"FETCH" in line and i + 1 < len(lines):
                uid = int(re.search(rb"UID (\d+)", line).group(1))
                date = re.search(rb'INTERNALDATE "([^"]+)"', line).group(1).decode()
                found.append((uid, date, bytes(lines[i + 1])))
    await imap.logout()
    return uidvalidity, found


def test_reset_uidvalidity_keeps_the_messages(mailstack: MailStack) -> None:
    dovecot, referee = mailstack.dovecot, mailstack.referee
    for n in (1, 2):
        mailstack.send(mailstack.players[0], referee, f"bid {n}", f"bid {n}\n")
    before_validity, before = asyncio.run(
        _aio_read(dovecot.host, dovecot.imap_port, referee, mailstack.referee_password)
    )
    assert len(before) == 2 and before_validity == dovecot.uidvalidity(referee)

    dovecot.reset_uidvalidity(referee)

    after_validity, after = asyncio.run(_aio_read(dovecot.host, dovecot.imap_port, referee, mailstack.referee_password))
    assert after_validity != before_validity
    assert after_validity == dovecot.uidvalidity(referee)
    assert [body for _, _, body in after] == [body for _, _, body in before]
    assert [date for _, date, _ in after] == [date for _, date, _ in before]  # receipt times kept


def test_append_seeds_a_chosen_internaldate(mailstack: MailStack) -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    raw = mailstack.compose(mailstack.players[2], mailstack.referee, "late?", "bid 1\n")
    mailstack.dovecot.append(mailstack.referee, raw, internaldate=when)
    [m] = mailstack.messages(mailstack.referee)
    assert m.internaldate == when
    assert "Delivered-To" not in m.message
