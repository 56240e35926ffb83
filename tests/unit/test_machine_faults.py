"""A fault of the machine met while a message is handled, outside games.db
(a template file the disk cannot read, no file descriptor left): no fault of
the message.  The message is not kept as failed (quarantined, its player
never answered): it stays on the mail server for the next run, as a fault of
games.db does (issue 31, item 4: behaviour stays as it is)."""

from __future__ import annotations

import asyncio
import errno
import json
from datetime import timedelta

import jinja2
import pytest
from conftest import PLAYERS, reply

from referee.store import StorageFault

ALICE = PLAYERS[0]


def unreadable_templates(monkeypatch, error: OSError) -> None:
    def get_source(self, environment, template):
        raise error

    monkeypatch.setattr(jinja2.FileSystemLoader, "get_source", get_source)


@pytest.mark.parametrize(
    "error",
    [OSError(errno.EIO, "Input/output error", "templates/mail/x.txt.j2"), OSError(errno.EMFILE, "Too many open files")],
    ids=["EIO", "EMFILE"],
)
def test_a_template_the_machine_cannot_read_keeps_no_message_as_failed(engine, monkeypatch, error):
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    raw = reply(engine, ALICE, "bid 5")
    engine.post.composer.env.cache.clear()  # (a fresh daemon: nothing read yet)
    with monkeypatch.context() as patch:
        unreadable_templates(patch, error)
        with pytest.raises((StorageFault, OSError), match=error.strerror):
            engine.ingest(raw)
    assert engine.store.messages() == []  # not kept as failed: the next pass reads it again
    assert engine.store.failed_messages() == []
    assert engine.ingest(raw).code == "move"


def test_a_pass_whose_deadline_mail_meets_an_unreadable_template_is_a_fault_noted_for_status(
    config, clock, tmp_path, monkeypatch
):
    """The tick's mail too: the pass stops with the one line a keeper reads
    (noted for `referee status`, and waited out by serve), not an OSError
    that ends the daemon with a traceback."""
    from test_storage import maildir_runner

    engine, runner = maildir_runner(config, clock, tmp_path / "Maildir")
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    asyncio.run(runner.once())
    clock.advance(days=4)  # the deadline passes: the round is resolved by the tick, its mail written
    engine.post.composer.env.cache.clear()
    with monkeypatch.context() as patch:
        unreadable_templates(patch, OSError(errno.EIO, "Input/output error", "templates/mail/round.txt.j2"))
        with pytest.raises((StorageFault, OSError), match="Input/output error"):
            asyncio.run(runner.once())
    assert "Input/output error" in json.loads(engine.store.get_meta("last_fault"))["error"]
    asyncio.run(runner.once())  # the disk back: the round is resolved
    assert engine.store.phase(1, 1)["resolved_at"] is not None
