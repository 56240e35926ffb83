"""A backlog larger than the referee's memory, read over IMAP from the real
Dovecot (issue 37): one `referee run --once` under an address-space limit
handles every mail, reading it a batch at a time, and a mail over
max_message_size only in part."""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import time
from datetime import UTC, datetime, timedelta
from email import message_from_bytes
from pathlib import Path

import pytest
from mailstack import NOBODY, MailStack
from referee_helpers import REPO, Referee

from referee import runner as runner_module
from referee.engine import Engine
from referee.runner import Runner
from referee.store import Store

MB = 2**20
LIMIT = 200 * MB  # RLIMIT_AS of the run: a python with the referee loaded takes about 60 MB of it
LINE = ("a long line " * 82 + "\r\n").encode()  # long lines: the least work to read a MB


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def flood(stack: MailStack, count: int) -> int:
    """``count`` mails into the referee's INBOX, as a local delivery agent
    writes them into its maildir (an APPEND a mail costs Dovecot an fsync):
    one in three of 10 MB, over max_message_size, the rest of 1 MB.
    Returns their bytes in all."""
    conn = stack.dovecot.imap(stack.referee)  # Dovecot makes the maildir at the first login
    conn.select("INBOX")
    conn.logout()
    new = stack.dovecot.maildir(stack.referee) / "new"
    moment, written = int(time.time()) - 3600, 0
    for n in range(count):
        body = b"help\r\n" + LINE * (MB // len(LINE)) * (10 if n % 3 == 2 else 1)
        raw = (
            f"From: s{n}@elsewhere.example.com\r\nTo: {stack.referee}\r\nSubject: hello\r\n"
            f"Message-ID: <flood-{n}@example.net>\r\n\r\n"
        ).encode() + body
        path = new / f"{moment + n}.M{n}P{os.getpid()}.flood"
        path.write_bytes(raw)
        os.utime(path, (moment + n, moment + n))  # Dovecot's INTERNALDATE: the order they came in
        if os.geteuid() == 0:
            os.chown(path, NOBODY, NOBODY)  # as Dovecot's own deliveries are
        written += len(raw)
    return written


def count(stack: MailStack, folder: str) -> int:
    conn = stack.dovecot.imap(stack.referee)
    try:
        typ, data = conn.select(folder, readonly=True)
        return int(data[0]) if typ == "OK" else 0
    finally:
        conn.logout()


def test_a_backlog_larger_than_the_address_space_is_all_handled_in_one_run(mailstack: MailStack, tmp_path: Path):
    """86 mails, 338 MB (58 of 1 MB, 28 of 10 MB), with 200 MB of address
    space: before issue 37 the
    run fetched them all first, and died of MemoryError before it had
    filed a thing, every run."""
    referee = Referee(mailstack, tmp_path)
    assert flood(mailstack, 86) > 1.5 * LIMIT
    run = subprocess.run(
        referee.command("run", "--once"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        preexec_fn=limited,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "received 86," in run.stdout
    assert {folder: count(mailstack, folder) for folder in ("INBOX", "processed", "quarantine")} == {
        "INBOX": 0,
        "processed": 86,
        "quarantine": 0,
    }
    handled = referee.store().messages()
    assert sorted(m["key"] for m in handled) == sorted(f"<flood-{n}@example.net>" for n in range(86))
    assert sum(m["code"] == "failed" for m in handled) == 0


def test_mail_received_before_a_lower_uid_is_handled_first_and_none_is_skipped_after_a_pass_dies(
    mailstack: MailStack, tmp_path: Path, monkeypatch
):
    """Four mails whose UIDs are not in the order the server received them
    (APPEND with a chosen INTERNALDATE), read two at a time in receipt
    order: UIDs 2 and 3, then 4 and 1.  The pass dies on UID 4 (out of
    memory); the next reads 4 and 1 one at a time.  UID 1 is not skipped,
    though a higher UID was filed before it."""
    referee = Referee(mailstack, tmp_path)
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    for n, minutes in enumerate((40, 10, 20, 30), start=1):
        raw = (
            f"From: s{n}@elsewhere.example.com\r\nTo: {mailstack.referee}\r\nSubject: hello\r\n"
            f"Message-ID: <uid-{n}@example.net>\r\n\r\nhelp\r\n"
        ).encode()
        mailstack.dovecot.append(mailstack.referee, raw, internaldate=start + timedelta(minutes=minutes))
    monkeypatch.setattr(runner_module, "BATCH_MAIL", 2)
    order: list[str] = []

    async def two_passes() -> None:
        config = referee.config
        engine = Engine(Store(config.database), config)
        runner = Runner.from_config(config, engine)
        ingest = engine.ingest

        def running_out(raw: bytes, **kwargs):
            key = message_from_bytes(raw)["Message-ID"]
            if key == "<uid-4@example.net>" and "<uid-4@example.net>" not in order:
                order.append(key)
                raise MemoryError
            order.append(key)
            return ingest(raw, **kwargs)

        engine.ingest = running_out
        try:
            with pytest.raises(MemoryError):
                await runner.once()
            assert count(mailstack, "processed") == 2
            await runner.once()
        finally:
            await runner.close()

    asyncio.run(two_passes())
    assert order == [f"<uid-{n}@example.net>" for n in (2, 3, 4, 4, 1)]
    assert count(mailstack, "INBOX") == 0 and count(mailstack, "processed") == 4
    assert len(referee.store().messages()) == 4
