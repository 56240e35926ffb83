"""A stop signal is honoured mid-mail (issue 29): reading a mail is given
up at once (referee.interrupt), and the mail cut short, like those after
it, is left on the server for the next pass, which reads each once."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from datetime import timedelta

import pytest
from conftest import reply
from test_runner import deliver
from test_runner import maildir as _maildir

from referee import interrupt
from referee.cli import main
from referee.engine import Engine
from referee.interrupt import Stopped, reading, stop_signals_cut_reading_short
from referee.store import Store
from referee.timeutil import utc_now

PLAYERS = ["ann@example.org", "ben@example.org", "cat@example.org"]
maildir = _maildir  # the fixture


def signal_while_reading(signum: int) -> threading.Thread:
    """A thread that sends this process ``signum`` as soon as a mail is
    being read (the first reading() block opens), and not at all if none
    opens within 20 seconds."""

    def wait_and_signal() -> None:
        give_up = time.monotonic() + 20
        while time.monotonic() < give_up:
            if interrupt._open:
                os.kill(os.getpid(), signum)
                return
            time.sleep(0.0005)

    thread = threading.Thread(target=wait_and_signal, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_while_a_mail_is_read_ends_the_run_and_the_next_reads_every_mail_once(
        signum, config, maildir, tmp_path, capsys, caplog):  # fmt: skip
    now = utc_now()
    engine = Engine(Store(config.database), config, lambda: now - timedelta(minutes=10))
    game = engine.new_game("pure-skill", PLAYERS)
    # First in the inbox, a mail that takes most of a second to read (4 MB of
    # blank lines below its move), then two ordinary ones.
    deliver(maildir, reply(engine, "ben@example.org", "bid 3\n" + "\n" * (4 << 20)), now - timedelta(minutes=3))
    deliver(maildir, reply(engine, "ann@example.org", "bid 5"), now - timedelta(minutes=2))
    deliver(maildir, reply(engine, "cat@example.org", "bid 4"), now - timedelta(minutes=1))
    engine.store.db.conn.close()
    cfg = tmp_path / "referee.toml"
    cfg.write_text(f'[referee]\naddress = "{config.address}"\ndatabase = "{config.database}"\n'
                   f'[maildir]\npath = "{maildir}"\n')  # fmt: skip
    capsys.readouterr()
    caplog.set_level(logging.INFO, logger="referee")

    signaller = signal_while_reading(signum)
    assert main(["--config", str(cfg), "run", "--once"]) == 0
    signaller.join()
    err = capsys.readouterr().err
    assert f"{signal.Signals(signum).name}: stopping" in caplog.messages
    assert "stopped by a signal before the pass ended" in err and "Traceback" not in err
    store = Store(config.database)
    assert store.messages() == []  # nothing of the mail cut short, nor of the two after it
    assert len(list((maildir / "new").iterdir())) == 3  # all three still in the inbox
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the usual handling again

    assert main(["--config", str(cfg), "run", "--once"]) == 0
    assert "received 3" in capsys.readouterr().out
    handled = Store(config.database).messages()
    assert sorted(m["sender"] for m in handled) == sorted(PLAYERS)  # each once
    table = Engine(Store(config.database), config, utc_now).table(game)
    moves = {table.label(m["seat"]): m["move"] for m in Store(config.database).moves(game) if m["source"] == "mail"}
    assert moves == {"ben@example.org": "bid 3", "ann@example.org": "bid 5", "cat@example.org": "bid 4"}


def test_a_stop_heard_between_mails_stops_the_next_reading_before_it_begins():
    with stop_signals_cut_reading_short([signal.SIGTERM]):
        with reading():
            pass  # no signal yet: reading goes on
        os.kill(os.getpid(), signal.SIGTERM)  # heard outside any reading: it raises nothing here
        with pytest.raises(Stopped):
            with reading():
                pytest.fail("a reading began after the stop")
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    with reading():  # outside, a later run reads again
        pass


def test_outside_a_run_a_reading_is_never_cut_short():
    """The engine's own callers (`referee ingest`, the tests) never install
    the handler: reading() is then an empty block."""
    assert signal.getsignal(signal.SIGTERM) is not interrupt.cut_short
    with reading():
        assert interrupt._open == 1
    assert interrupt._open == 0

