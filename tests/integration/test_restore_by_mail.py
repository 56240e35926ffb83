"""The restore procedure a keeper lives through, against a real Dovecot and
SMTP server, in cron mode with the real clock: `referee backup` in the
middle of a sealed game (Pure Skill) and a turn-based one (Bluff Auction),
play by mail through several phase changes, games.db lost, `referee
restore`, `referee run --once`.  Every move made since the backup counts
again, every phase resolves exactly as before, players get no mail again
(one short notice each), and play goes on from the mail they hold."""

from __future__ import annotations

import json
import random
import re
import shutil

import pytest
from mailstack import MailStack
from referee_helpers import Referee, reply, subject

from referee.site.public import game_record
from referee.store import Store
from referee.tables import Tables

RESTORED = re.compile(r"^The referee restored its records \(")


@pytest.fixture
def referee(mailstack: MailStack, tmp_path) -> Referee:
    return Referee(mailstack, tmp_path)


def new_game(referee: Referee, kind: str) -> int:
    players = [x for p in referee.stack.players for x in ("--player", p)]
    result = referee.cli("new", kind, *players, "--deadline", "3d")
    assert result.status == 0, result.err
    return int(result.out.splitlines()[-1])


def latest_mail(stack: MailStack, player: str, game: int):
    """The newest mail of a game the player has in their Dovecot INBOX."""
    mine = [m.message for m in stack.messages(player) if re.search(rf"-{game} ", subject(m.message))]
    return mine[-1]


def move_all(referee: Referee, game: int, choose: random.Random) -> int:
    """Each person the game waits for replies to their newest mail of it with
    a legal move (read from the referee's record: a player reads it from the
    prompt), then the referee runs; how many moved."""
    tables = Tables(Store(referee.db))
    table = tables.table(game)
    waiting = table.waiting_for(table.open_phase)
    for seat in waiting:
        player = table.label(seat)
        move = choose.choice(table.rules.legal_moves(table.state, seat))
        reply(referee.stack, player, latest_mail(referee.stack, player, game), table.rules.move_text(move))
    referee.run_once()
    return len(waiting)


def records(referee: Referee, *games: int) -> dict[int, str]:
    tables = Tables(Store(referee.db))
    return {game: json.dumps(game_record(tables.table(game)), sort_keys=True) for game in games}


def test_a_restore_mid_game_loses_no_move_and_sends_nothing_twice(referee: Referee, mailstack: MailStack, tmp_path):
    choose = random.Random(5)
    sealed, turns = new_game(referee, "pure-skill"), new_game(referee, "bluff")
    referee.run_once()
    move_all(referee, sealed, choose)
    move_all(referee, turns, choose)
    backup = tmp_path / "backups" / "games.db"
    backup.parent.mkdir()
    assert referee.cli("backup", str(backup)).status == 0
    phases = {game: len(Store(referee.db).phases(game)) for game in (sealed, turns)}

    moved = 0
    for _ in range(3):  # three rounds and three or more turns by mail since the backup
        moved += move_all(referee, sealed, choose)
        moved += move_all(referee, turns, choose)
    store = Store(referee.db)
    assert len(store.phases(sealed)) - phases[sealed] == 3
    assert len(store.phases(turns)) - phases[turns] >= 3
    before = records(referee, sealed, turns)
    moves = {game: store.moves(game) for game in (sealed, turns)}
    had = {str(m.message["Message-ID"]): m for m in mailstack.sent if m.mail_from == mailstack.referee}
    sent_before = len(mailstack.sent)
    store.db.conn.close()

    # The disk dies: games.db is gone.  The keeper restores last night's backup.
    shutil.rmtree(referee.home / "gone", ignore_errors=True)
    (referee.home / "gone").mkdir()
    for name in ("games.db", "games.db-wal", "games.db-shm"):
        if (referee.home / name).exists():
            (referee.home / name).rename(referee.home / "gone" / name)
    restored = referee.cli("restore", str(backup))
    assert restored.status == 0, restored.err
    result = referee.run_once()

    assert records(referee, sealed, turns) == before  # every phase, time, move and digest as before
    store = Store(referee.db)
    for game in (sealed, turns):
        assert [(m["phase"], m["seat"], m["move"], m["source"], m["received_at"]) for m in store.moves(game)] == [
            (m["phase"], m["seat"], m["move"], m["source"], m["received_at"]) for m in moves[game]
        ]
    new = mailstack.sent[sent_before:]
    assert sorted(r for m in new for r in m.rcpt_tos) == sorted(mailstack.players), result.out  # one notice each
    assert all(RESTORED.match(subject(m.message)) for m in new)
    assert all(store.sent_by_id(message_id) for message_id in had)  # each mail players hold is known again
    assert moved > 0 and result.counts["received"] == 0

    # Play goes on from the mail players hold: replies to pre-restore mails count.
    assert move_all(referee, sealed, choose) == 3
    assert len(Store(referee.db).phases(sealed)) - phases[sealed] == 4
    assert referee.run_once().counts["received"] == 0
