"""The fuzz test (issue 12): thousands of mutated mails through ingest, with
a game of every kind running, in well under a minute.

Every message must be handled (never ``failed``) within a CPU bound; every
mail the referee queues must have a clean header section; and a message
that names no valid reply token must change no game.  A failure prints the
seed and the message's number: ``python3 bench/fuzz.py --seed S --count N``
makes the same mail again.  bench/fuzz.py is the long run (10^5 messages).
"""

from __future__ import annotations

import os
from typing import Any

from conftest import PLAYERS, assert_clean_headers
from fuzzmail import FIXTURE_KEY, Fuzzer, count_game_changes, names_a_token, seeded_games
from test_security import Overrun, build, within

from referee.engine import Engine

SEED = int(os.environ.get("FUZZ_SEED", "12"))
COUNT = 3000
CPU_BOUND = 5.0  # seconds for one message: a hang guard, far above any real mail's cost
KINDS = ("pure-skill", "bid", "ice", "priority", "bluff")


def queued_after(engine: Engine, last: int) -> list[dict[str, Any]]:
    return list(engine.store.db.query("select id, raw from outbox where id > ?", [last]))


def keep_every_kind_running(engine: Engine) -> None:
    running = {g["kind"] for g in engine.store.games() if g["state"] == "running"}
    for kind in KINDS:
        if kind not in running:
            engine.new_game(kind, PLAYERS)


def test_mutated_mail_never_fails_never_writes_a_broken_header_and_needs_a_token(tmp_path):
    with seeded_games(SEED):
        fuzz(tmp_path)


def fuzz(tmp_path) -> None:
    engine = build(tmp_path, secret_key=FIXTURE_KEY, replies_per_hour=10**6)
    keep_every_kind_running(engine)  # game 1, Pure Skill: the fixture corpus's tokens are its seats'
    fuzzer, changes = Fuzzer(engine, SEED), count_game_changes(engine)
    last = 0
    for number in range(1, COUNT + 1):
        raw = fuzzer.message()
        where = f"seed {SEED}, message {number}: {raw[:300]!r}"
        tokenless = not names_a_token(raw, fuzzer.tokens())
        before = changes()
        try:
            with within(CPU_BOUND):
                outcome = engine.ingest(raw)
        except Overrun as overrun:
            raise AssertionError(f"ingest ran {overrun}; {where}") from None

        assert outcome.code != "failed", where
        for mail in queued_after(engine, last):
            assert_clean_headers(mail["raw"])
            last = mail["id"]
        if tokenless:
            assert changes() == before, f"a game changed; {where}"
        engine.clock.advance(seconds=30)
        if number % 500 == 0:  # let deadlines pass: random moves, new rounds, finished games
            engine.clock.advance(days=3, seconds=1)
            engine.tick()
            keep_every_kind_running(engine)
