"""The same mail made again is queued again, under the next Message-ID of
its series (Store.queue_mail says whether an id was free: no look first)."""

from __future__ import annotations

import email
import re

from conftest import PLAYERS

ALICE = PLAYERS[0]


def restored(engine, address: str) -> bool:
    """One "restored" notice to ``address``, as Engine.restored sends it."""
    context = {"game": None, "referee": engine.config.address, "backup_at": "2026-01-01", "again": 0, "tags": []}
    return engine.post.mail(None, address, "restored", context)


def test_the_same_mail_three_times_is_queued_three_times_under_the_ids_of_its_series(engine):
    before = {mail["message_id"] for mail in engine.store.outbox(None)}
    for _ in range(3):
        assert restored(engine, ALICE)
    mails = [mail for mail in engine.store.outbox(None) if mail["message_id"] not in before]
    ids = [mail["message_id"] for mail in mails]
    first = re.fullmatch(r"<([0-9a-f]{24})@(.+)>", ids[0])
    assert first, ids
    digest, domain = first.groups()
    assert ids == [f"<{digest}@{domain}>", f"<{digest}-2@{domain}>", f"<{digest}-3@{domain}>"]
    # each mail carries the Message-ID it is queued under
    assert [email.message_from_bytes(mail["raw"])["Message-ID"] for mail in mails] == ids


def test_a_mail_whose_message_id_is_queued_already_is_not_queued_again(engine):
    assert restored(engine, ALICE)
    (mail,) = [m for m in engine.store.outbox(None) if m["recipients"] == [ALICE]]
    count = len(engine.store.outbox(None))
    row = {key: mail[key] for key in ("message_id", "recipients", "subject", "raw", "text", "created_at")}
    assert engine.store.queue_mail(**{**row, "subject": "another"}) is False
    assert len(engine.store.outbox(None)) == count
    assert engine.store.queue_mail(**{**row, "message_id": "<other@example.org>"}) is True
    assert len(engine.store.outbox(None)) == count + 1
