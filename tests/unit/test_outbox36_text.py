"""Schema 7 keeps each mail's text as composed beside its bytes (outbox.text):
what a reply quoting the mail is read against, without a second parse of the
referee's own mail.  It must be the very text a mail client shows, and it goes
with the body when old mail is trimmed."""

from __future__ import annotations

from datetime import timedelta

from referee.mail.parse import parse
from referee.timeutil import iso

KINDS = {"pure-skill": 3, "bid": 3, "ice": 4, "priority": 4, "bluff": 3}
PLAYERS = ["ann@example.org", "bo@example.org", "cy@example.org", "di@example.org"]


def test_every_mail_s_stored_text_is_the_text_its_reader_sees(engine, clock):
    for kind, seats in KINDS.items():
        engine.new_game(kind, PLAYERS[:seats])
    mails = engine.store.outbox(None)
    assert len(mails) > 20  # starts, prompts and rules, of every kind
    for mail in mails:
        assert mail["text"] is not None
        assert mail["text"].splitlines() == parse(mail["raw"], clock()).text.splitlines(), mail["subject"]


def test_trimming_an_old_mail_s_body_forgets_its_text_too(engine, clock):
    engine.new_game("pure-skill", PLAYERS[:3])
    for mail in engine.store.outbox():
        engine.store.mark_sent([mail["id"]], iso(clock()))
    assert engine.store.forget_sent_bodies(iso(clock() + timedelta(seconds=1))) > 0
    for mail in engine.store.outbox(None):
        assert mail["text"] is None
        assert mail["raw"].endswith(b"\r\n\r\n")  # the headers stay, for a bounce that quotes it
