"""The restore a keeper lives through (docs/operations.md, "Backups and
restoring"): `referee backup`, games go on by mail through several phase
changes (a deadline missed, a change of mind), games.db is lost, `referee
restore`, and the next run.  Every move made since the backup counts again,
every phase resolves exactly as before (the public records are the same to
the second and the digest), no mail a player had is sent again, and each
player gets one short notice.  With a real Maildir and the fake clock; the
same procedure runs through a real Dovecot in tests/integration."""

from __future__ import annotations

import asyncio
import json
import random
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import Seeds, reply
from test_runner import deliver
from test_runner import maildir as _maildir

from referee.cli import main
from referee.config import MaildirSettings
from referee.engine import Engine
from referee.runner import Runner
from referee.site.public import game_record
from referee.store import Store
from referee.timeutil import iso

SEALED = ["ann@example.org", "ben@example.org", "cat@example.org"]
TURNS = ["dan@example.org", "eve@example.org", "fay@example.org"]


maildir = _maildir  # the fixture


class Club:
    """The referee and its players, by mail through a Maildir."""

    def __init__(self, config, clock, maildir, seed: bytes | None = None):
        self.config = replace(config, maildir=MaildirSettings(maildir), reminder=timedelta(hours=6))
        self.clock, self.box, self.seeds = clock, maildir, Seeds(seed)  # unset: the system's
        self.choose = random.Random(7)
        self.open()

    def open(self) -> None:
        self.engine = Engine(Store(self.config.database), self.config, self.clock, self.seeds)
        self.runner = Runner.from_config(self.config, self.engine)

    def close(self) -> None:
        self.engine.store.db.conn.close()

    def run(self, sent: bool = True) -> None:
        """A pass; with ``sent``, what it queued counts as sent (no SMTP here)."""
        asyncio.run(self.runner.once())
        if sent:
            store = self.engine.store
            with store.transaction():
                for mail in store.outbox("queued"):
                    store.mark_sent([mail["id"]], iso(self.clock()))

    def move(self, game: int, skip: str | None = None, minutes: int = 5, sent: bool = True) -> None:
        """Each person the game waits for mails a legal move (but ``skip``),
        a few minutes apart, and the referee runs."""
        table = self.engine.table(game)
        phase = table.open_phase
        for seat in table.waiting_for(phase):
            player = table.label(seat)
            if not table.human(seat) or player == skip:
                continue
            move = self.choose.choice(table.rules.legal_moves(table.state, seat))
            self.clock.advance(minutes=minutes)
            deliver(
                self.box,
                reply(self.engine, player, table.rules.move_text(move), game=game, received=self.clock()),
                self.clock(),
            )
        self.clock.advance(minutes=1)
        self.run(sent)

    def cli(self, tmp_path, *args: str) -> int:
        cfg = tmp_path / "referee.toml"
        cfg.write_text(
            f'[referee]\naddress = "{self.config.address}"\ndatabase = "{self.config.database}"\n'
            f'[maildir]\npath = "{self.box}"\n'
        )
        return main(["--config", str(cfg), *args])


def public(engine: Engine, game: int) -> str:
    return json.dumps(game_record(engine.table(game)), sort_keys=True)


def test_a_restore_loses_no_move_and_floods_no_one(config, clock, maildir, tmp_path, capsys):
    club = Club(config, clock, maildir)
    sealed = club.engine.new_game("pure-skill", SEALED, deadline=timedelta(days=1), settle=timedelta(minutes=20))
    turns = club.engine.new_game("bluff", TURNS)
    club.run()
    club.move(sealed)
    club.move(turns)
    assert club.cli(tmp_path, "backup", str(tmp_path / "backup.db")) == 0
    opened = {game: len(club.engine.store.phases(game)) for game in (sealed, turns)}

    # Since the backup: rounds and turns by mail, a change of mind inside the
    # settle window, a deadline missed (a random move, then a reminder).
    club.move(sealed, minutes=2)
    ann = club.engine.table(sealed)
    card = club.choose.choice(ann.rules.legal_moves(ann.state, 0))
    deliver(maildir, reply(club.engine, SEALED[0], ann.rules.move_text(card), game=sealed, received=clock()), clock())
    clock.advance(minutes=30)
    club.run()
    for _ in range(4):
        club.move(turns, minutes=20)
    club.move(sealed, skip=SEALED[1])
    for _ in range(25):  # the referee runs hourly (cron) past the deadline: ben's move at random
        clock.advance(hours=1)
        club.run()
    club.move(sealed)
    club.move(turns, minutes=20)
    assert len(club.engine.store.phases(sealed)) - opened[sealed] >= 3
    assert len(club.engine.store.phases(turns)) - opened[turns] >= 4

    records = {game: public(club.engine, game) for game in (sealed, turns)}
    moves = {game: len(club.engine.store.moves(game)) for game in (sealed, turns)}
    had = {mail["message_id"] for mail in club.engine.store.outbox(None)}
    club.close()

    # games.db is lost; the keeper restores the backup and the referee runs.
    capsys.readouterr()
    assert club.cli(tmp_path, "restore", str(tmp_path / "backup.db")) == 0
    assert "processed folder" in capsys.readouterr().out
    assert club.cli(tmp_path, "status") == 0
    assert "the next run handles the mail filed since 2026-11-21T12:21:00Z again" in capsys.readouterr().out
    club.open()
    club.run()

    for game in (sealed, turns):
        assert len(club.engine.store.moves(game)) == moves[game]
        assert public(club.engine, game) == records[game]  # every time, move and digest as before
    outbox = club.engine.store.outbox(None)
    again = [mail for mail in outbox if mail["state"] == "restored"]
    assert again and {mail["message_id"] for mail in again} <= had  # the mails players had, under their ids
    assert had <= {mail["message_id"] for mail in outbox}  # each one known under its Message-ID again
    new = [mail for mail in outbox if mail["message_id"] not in had]
    assert sorted(mail["recipients"][0] for mail in new) == sorted(SEALED + TURNS)  # one notice each
    assert all("restored its records" in mail["subject"] for mail in new)
    assert club.engine.store.get_meta("restored") is None

    # The next run handles nothing again, and play goes on.
    club.run()
    assert len(club.engine.store.outbox(None)) == len(outbox)
    club.move(sealed)
    assert len(club.engine.store.moves(sealed)) > moves[sealed]


# -- what makes a restore reproducible ------------------------------------------------


def test_a_game_opened_by_join_by_mail_has_the_seed_that_mail_and_the_key_make(config, clock, tmp_path):
    keyed = replace(config, secret_key=b"k" * 32)
    engines = [Engine(Store(tmp_path / f"{n}.db"), keyed, clock) for n in range(3)]
    for engine, mail in zip(engines, ("<join-1@example.org>", "<join-1@example.org>", "<join-2@example.org>")):
        engine.seating.join("pure-skill", "ann@example.org", mail)
    seeds = [engine.store.game(1)["seed"] for engine in engines]
    assert seeds[0] == seeds[1] != seeds[2]
    keeper = engines[0].new_game("pure-skill", SEALED)  # the keeper's games: a fresh random seed
    assert engines[0].store.game(keeper)["seed"] not in seeds


def test_the_same_mail_made_again_has_the_same_message_id(config, clock, tmp_path):
    keyed = replace(config, secret_key=b"k" * 32)
    first, second = (Engine(Store(tmp_path / f"{n}.db"), keyed, clock) for n in range(2))
    for engine in (first, second):
        engine.new_game("pure-skill", SEALED)
    ids = [[mail["message_id"] for mail in engine.store.outbox()] for engine in (first, second)]
    assert ids[0] == ids[1] and len(set(ids[0])) == len(ids[0])  # the same, and each its own
    assert all(re.fullmatch(r"<[0-9a-f]{24}\.g1p[01]@example\.org>", mail_id) for mail_id in ids[0])
    other = Engine(Store(tmp_path / "other.db"), replace(config, secret_key=b"o" * 32), clock)
    other.new_game("pure-skill", SEALED)
    assert not {mail["message_id"] for mail in other.store.outbox()} & set(ids[0])  # the key makes them


def test_a_round_resolved_late_by_cron_opens_the_next_when_it_closed(config, clock, tmp_path):
    """R5: a round opens when the previous one closed.  Cron comes ten
    minutes after a round's settle window ends: the next round's deadline
    counts from the close, not from the run.  When the referee was down for
    a day instead, it counts from the late prompt."""
    engine = Engine(Store(config.database), replace(config, outage_gap=timedelta(hours=6)), clock)
    game = engine.new_game("pure-skill", SEALED, deadline=timedelta(days=3), settle=timedelta(minutes=30))

    def everyone_bids(card: int) -> None:
        for player in SEALED:
            clock.advance(minutes=1)
            engine.ingest(reply(engine, player, f"bid {card}", game=game, received=clock()))

    everyone_bids(1)  # the last at 12:03: Round 1 closes at 12:33
    clock.advance(minutes=40)
    engine.tick()
    first, second = engine.store.phases(game)
    assert first["resolved_at"] == second["opened_at"] == "2026-11-21T12:33:00Z"
    assert second["deadline"] == "2026-11-24T12:33:00Z"
    everyone_bids(2)  # the last at 12:46: Round 2 closes at 13:16
    clock.advance(days=1)  # the referee did not run
    engine.tick()
    second, third = engine.store.phases(game)[1:]
    assert second["resolved_at"] == "2026-11-21T13:16:00Z"  # as of its close
    assert third["opened_at"] == "2026-11-22T12:46:00Z"  # when its prompt went out, a day late
    assert third["deadline"] == "2026-11-25T12:46:00Z"  # three days from then


def test_catching_up_does_what_fell_due_before_a_mail_and_not_what_falls_due_with_it(config, clock):
    """Before a mail handled again at 12:33, the round closing at 12:33 is
    still open: a change of mind received at the close counts (R7, R8)."""
    engine = Engine(Store(config.database), config, clock)
    game = engine.new_game("pure-skill", SEALED, settle=timedelta(minutes=30))
    for number, player in enumerate(SEALED):
        engine.ingest(reply(engine, player, f"bid {number + 1}", game=game, received=clock() + timedelta(minutes=1)))
    clock.advance(hours=1)
    close = engine.store.phases(game)[0]["closes_at"]
    assert close == "2026-11-21T12:31:00Z"
    engine.catch_up(datetime(2026, 11, 21, 12, 31, tzinfo=UTC))
    assert len(engine.store.phases(game)) == 1
    engine.catch_up(datetime(2026, 11, 21, 12, 31, 1, tzinfo=UTC))
    first, second = engine.store.phases(game)
    assert first["resolved_at"] == close == second["opened_at"]


def test_with_games_db_gone_the_keeper_says_until_when_the_referee_ran(config, clock, maildir, tmp_path, capsys):
    """No games.db to read when the referee last ran: `--ran-until` says it,
    and the deadline that fell before then is done as it was, not extended
    as if the referee had been down."""
    club = Club(replace(config, outage_gap=timedelta(hours=6)), clock, maildir)
    game = club.engine.new_game("pure-skill", SEALED, deadline=timedelta(hours=12))
    club.run()
    assert club.cli(tmp_path, "backup", str(tmp_path / "backup.db")) == 0
    club.move(game, skip=SEALED[2])
    for _ in range(30):  # cron every half hour past the deadline: a random bid for cat
        clock.advance(minutes=30)
        club.run()
    ran_until = iso(clock())
    record = public(club.engine, game)
    club.close()
    for suffix in ("", "-wal", "-shm"):  # the disk died
        Path(f"{club.config.database}{suffix}").unlink(missing_ok=True)
    clock.advance(days=1)  # the keeper restores a day later
    assert club.cli(tmp_path, "restore", str(tmp_path / "backup.db"), "--ran-until", ran_until) == 0
    club.open()
    club.run()
    # The same game, but for the day the referee was really down, which
    # moved the open phase's deadline (on the record, after the restore).
    after = json.loads(public(club.engine, game))
    [outage] = after.pop("interventions")
    assert outage["act"] == "outage" and outage["at"] > ran_until
    assert json.dumps({**after, "interventions": []}, sort_keys=True) == record
    assert any(m["source"] == "random" for m in club.engine.store.moves(game, phase=1))


# -- what bench/restore.py found a restore did not bring back as it was ------------


def _sent(club: Club) -> set[str]:
    """The queued mail goes out (the players have it); the Message-IDs they have."""
    for mail in club.engine.store.outbox("queued"):
        club.engine.store.mark_sent([mail["id"]], iso(club.clock()))
    return {mail["message_id"] for mail in club.engine.store.outbox(None)}


def _restore(club: Club, tmp_path) -> dict[str, object]:
    """games.db is lost (after noting what the checks compare); restore; the next run."""
    game = club.engine.store.games()[0]["id"]
    before = {
        "record": public(club.engine, game),
        "open": club.engine.table(game).open_phase,
        "moves": [(m["phase"], m["seat"], m["move"], m["source"]) for m in club.engine.store.moves(game)],
        "had": _sent(club),
    }
    club.close()
    assert club.cli(tmp_path, "restore", str(tmp_path / "backup.db")) == 0
    club.open()
    club.run()
    return before


@pytest.mark.parametrize("runs_after", [0, 5], ids=["restored-at-once", "restored-26-minutes-on"])
def test_what_fell_due_after_the_last_mail_handled_again_is_done_as_before(
    config, clock, maildir, tmp_path, runs_after
):
    """Round 2's deadline (13:15) passes after the last mail handled again
    (12:15); cron, every 5 minutes, resolved it at 13:16 (random moves) and
    prompted round 3, due 14:15.  Restored at once, the first run resolves
    round 2 by its plain tick, not restoring: its result and round 3's
    prompts are queued to be sent again, under the Message-IDs the players
    hold.  Restored 26 minutes after the deadline, round 3 is opened later
    than a tenth of its hour (LATE_OPEN): its deadline counts from the
    restore run (14:41), not from 13:15."""
    club = Club(config, clock, maildir)
    game = club.engine.new_game("pure-skill", SEALED, deadline=timedelta(hours=1))
    club.run()
    _sent(club)  # the players have the mail so far
    assert club.cli(tmp_path, "backup", str(tmp_path / "backup.db")) == 0
    club.move(game)  # round 1 by mail after the backup: the last mail handled again
    while len(club.engine.store.phases(game)) < 3:  # nobody bids in round 2
        clock.advance(minutes=5)
        club.run()
    for _ in range(runs_after):
        clock.advance(minutes=5)
        club.run()
    before = _restore(club, tmp_path)
    assert public(club.engine, game) == before["record"]
    assert club.engine.table(game).open_phase["deadline"] == before["open"]["deadline"]
    queued = club.engine.store.outbox("queued")
    assert not [mail["subject"] for mail in queued if mail["message_id"] in before["had"]]  # sent again
    assert all("restored its records" in mail["subject"] for mail in queued)


def test_a_quiet_spell_before_the_loss_is_no_outage(config, clock, maildir, tmp_path):
    """Cron runs every 20 minutes; nobody writes for 7 hours after round 1,
    whose successor's deadline (6 hours) passes: random moves, round 3
    prompted.  Restored, the first run finds the last mail handled again 7
    hours back, more than the outage gap: it extends round 2's deadline by a
    day instead, and tells everyone so."""
    club = Club(replace(config, outage_gap=timedelta(hours=6)), clock, maildir)
    game = club.engine.new_game("pure-skill", SEALED, deadline=timedelta(hours=6))
    club.run()
    _sent(club)  # the players have the mail so far
    assert club.cli(tmp_path, "backup", str(tmp_path / "backup.db")) == 0
    club.move(game)
    for _ in range(21):  # 7 hours of cron, every 20 minutes
        clock.advance(minutes=20)
        club.run()
    assert len(club.engine.store.phases(game)) == 3
    before = _restore(club, tmp_path)
    assert [(m["phase"], m["seat"], m["move"], m["source"]) for m in club.engine.store.moves(game)] == before["moves"]
    assert public(club.engine, game) == before["record"]


def test_a_mail_between_a_deadline_and_the_next_run_is_handled_as_before(config, clock, maildir, tmp_path):
    """ann and ben bid in round 1, cat does not; cron runs every 5 minutes.
    cat's bid (a mail that answers none of the referee's) reaches the server
    30 seconds after the 13:00 deadline, before the 13:01 run.  That run
    first does what fell due before the mail (cat's random card, round 2
    opens at 13:00), then takes the mail as cat's bid in round 2; handled
    again after a restore, the same."""
    # A seed whose random card for cat in round 1 is not the 5 she bids after.
    club = Club(config, clock, maildir, b"s" * 32)
    game = club.engine.new_game("pure-skill", SEALED, deadline=timedelta(hours=1))
    club.run()
    _sent(club)  # the players have the mail so far
    assert club.cli(tmp_path, "backup", str(tmp_path / "backup.db")) == 0
    club.move(game, skip=SEALED[2])  # bids at 12:05 and 12:10, a run at 12:11
    for _ in range(9):  # to 12:56
        clock.advance(minutes=5)
        club.run()
    clock.advance(minutes=4, seconds=30)  # 13:00:30
    deliver(maildir, reply(club.engine, SEALED[2], "bid 5", game=game, received=clock()), clock())
    clock.advance(seconds=30)
    club.run()
    assert [(m["phase"], m["source"]) for m in club.engine.store.moves(game) if m["seat"] == 2] == [
        (1, "random"),
        (2, "mail"),
    ]
    before = _restore(club, tmp_path)
    assert [(m["phase"], m["seat"], m["move"], m["source"]) for m in club.engine.store.moves(game)] == before["moves"]


def test_a_restore_makes_no_reminder_that_was_not_made(config, clock, maildir, tmp_path):
    """The reminder is due at 06:00 (6 hours before a one-day deadline from
    12:00); cron runs hourly, then at 06:20 that morning; ann's bid arrived at
    06:10.  The run does what fell due before her mail first: at 06:00 nobody
    had bid, so all three are reminded, and the restore makes the same
    three reminders (kept unsent, under the Message-IDs the players have)."""
    club = Club(config, clock, maildir)
    game = club.engine.new_game("pure-skill", SEALED, deadline=timedelta(days=1))
    club.run()
    _sent(club)  # the players have the mail so far
    assert club.cli(tmp_path, "backup", str(tmp_path / "backup.db")) == 0
    for _ in range(17):  # hourly, to 05:00
        clock.advance(hours=1)
        club.run()
    clock.advance(minutes=70)  # 06:10
    deliver(maildir, reply(club.engine, SEALED[0], "bid 5", game=game, received=clock()), clock())
    clock.advance(minutes=10)
    club.run()
    reminded = [mail["recipients"][0] for mail in club.engine.store.outbox(None) if "reminder" in mail["subject"]]
    assert sorted(reminded) == sorted(SEALED)
    before = _restore(club, tmp_path)
    restored = {mail["message_id"] for mail in club.engine.store.outbox("restored")}
    assert restored <= before["had"]
