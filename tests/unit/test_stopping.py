"""A stop signal is honoured mid-mail (issue 29): reading a mail is given
up at once (referee.interrupt), and the mail cut short, like those after
it, is left on the server for the next pass, which reads each once."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
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
from referee.mail.parse import parse
from referee.runner import cancel_and_wait
from referee.store import Store
from referee.timeutil import utc_now

PLAYERS = ["ann@example.org", "ben@example.org", "cat@example.org"]
maildir = _maildir  # the fixture


def parsing(thread_id: int) -> bool:
    """Whether the thread is in referee.mail.parse.parse."""
    frame = sys._current_frames().get(thread_id)
    while frame is not None:
        if frame.f_code is parse.__code__:
            return True
        frame = frame.f_back
    return False


def signal_while_reading(signum: int) -> threading.Thread:
    """A thread that sends this process ``signum`` as soon as a mail is
    being read (parse is on this thread's stack), and not at all if none is
    within 20 seconds."""
    reader = threading.get_ident()

    def wait_and_signal() -> None:
        give_up = time.monotonic() + 20
        while time.monotonic() < give_up:
            if parsing(reader):
                os.kill(os.getpid(), signum)
                return
            time.sleep(0.0005)

    thread = threading.Thread(target=wait_and_signal, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_while_a_mail_is_read_ends_the_run_and_the_next_reads_every_mail_once(
    signum, config, maildir, tmp_path, capsys, caplog
):
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
    cfg.write_text(
        f'[referee]\naddress = "{config.address}"\ndatabase = "{config.database}"\n[maildir]\npath = "{maildir}"\n'
    )
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
        assert reading(len, "read") == 4  # no signal yet: reading goes on
        os.kill(os.getpid(), signal.SIGTERM)  # heard outside any reading: it raises nothing here
        with pytest.raises(Stopped):
            reading(pytest.fail, "a reading began after the stop")
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert reading(len, "read") == 4  # outside, a later run reads again


def test_outside_a_run_a_reading_is_never_cut_short():
    """The engine's own callers (`referee ingest`, the tests) never install
    the handler: reading(f, ...) is then f(...)."""
    assert signal.getsignal(signal.SIGTERM) is not interrupt.cut_short
    assert reading(divmod, 7, 2) == (3, 1)


def test_a_stop_cuts_short_only_a_reading_wherever_between_two_steps_it_lands():
    """Signals at every moment, thousands of readings cut short at their
    edges too: a signal outside a reading never raises, even while the
    Stopped of one cut short is kept (as a task keeps it until the stop is
    handled).  A count of the readings open was left up when the signal
    landed in a contextmanager's __enter__ or __exit__."""
    done = threading.Event()

    def pester() -> None:
        while not done.is_set():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.00002)

    cut = outside = 0
    kept: list[Stopped] = []
    with stop_signals_cut_reading_short([signal.SIGTERM]):
        thread = threading.Thread(target=pester, daemon=True)
        thread.start()
        try:
            end = time.monotonic() + 2
            while True:
                try:
                    if time.monotonic() > end:
                        break
                    interrupt._heard = False  # as a fresh run
                    try:
                        reading(abs, -1)
                    except Stopped as stopped:
                        cut += 1
                        kept[:] = [stopped]
                    for _ in range(20):
                        abs(-1)  # calls: the handler may run after each
                except Stopped:
                    outside += 1
        finally:
            done.set()
            thread.join()
    assert cut > 0 and outside == 0, (cut, outside)


def test_a_task_that_swallows_a_cancel_is_cancelled_again_until_it_stops():
    """asyncio.wait_for in Python 3.11, which aiosmtplib and aioimaplib use,
    can swallow a cancel that meets a reply; the task then waits on, and a
    stop (or `referee demo`'s end) that cancelled it once would wait for
    good.  It is cancelled again until it has stopped."""
    swallowed = []

    async def a_reader_that_swallows_one_cancel() -> None:
        forever = asyncio.Event()
        try:
            await forever.wait()
        except asyncio.CancelledError:
            swallowed.append(True)  # as wait_for does when the reply came in the same step
        await forever.wait()

    async def stop_it() -> bool:
        task = asyncio.ensure_future(a_reader_that_swallows_one_cancel())
        await asyncio.sleep(0)
        await asyncio.wait_for(cancel_and_wait(task), 5)
        return task.cancelled()

    assert asyncio.run(stop_it()) and swallowed == [True]
