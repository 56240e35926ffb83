"""Review of issue 34 (games for a club) around the record: schema 6's
migration and its ``results``, ``verify`` of games begun by sign-up, and
backup and restore of what the new features keep."""

from __future__ import annotations

import email
import json
import sqlite3
from dataclasses import replace as changed
from datetime import timedelta
from email import policy
from pathlib import Path

import pytest
from conftest import FakeClock, body_of, make_mail
from test_restore import Club, public
from test_runner import deliver
from test_runner import maildir as _maildir

from referee.engine import Engine
from referee.record import verify
from referee.site.public import game_record
from referee.standings import _replayed, standings
from referee.store import Store
from referee.tables import Tables

SCHEMAS = sorted((Path(__file__).parents[1] / "fixtures" / "schemas").glob("schema-*.sql"))
NEW_COLUMNS = {
    "games": {"press", "announce_to", "awards"},
    "signups": {"start"},
    "watchers": {"game_id", "address", "notify", "since", "token"},
    "reader_told": {"game_id", "address", "through", "digest_at"},
    "press": {"id", "game_id", "seat", "at", "recipients", "signed"},
    "press_tokens": {"token", "game_id", "seat", "to_seat", "signed", "press_id"},
    "results": {"game_id", "seat", "score", "place", "won"},
}


def _strip(rows: list[dict]) -> list[dict]:
    return sorted(({k: row[k] for k in ("game_id", "seat", "score", "place", "won")} for row in rows), key=str)


@pytest.mark.parametrize("dump", SCHEMAS, ids=[p.stem for p in SCHEMAS])
def test_every_fixture_gains_schema_6_and_its_finished_games_their_results_by_replay(dump, config, clock):
    with sqlite3.connect(config.database) as db:
        db.executescript(dump.read_text())
    engine = Engine(Store(config.database), config, clock)
    with sqlite3.connect(config.database) as db:
        for table, columns in NEW_COLUMNS.items():
            have = {row[1] for row in db.execute(f"PRAGMA table_info([{table}])")}
            assert columns <= have, (table, columns - have)
    finished = [g["id"] for g in engine.store.games("finished")]
    assert finished
    stored = engine.store.results()
    replayed = [row for game in finished for row in _replayed(engine.table(game))]
    assert stored and _strip(stored) == _strip(replayed)
    for game in finished:  # the winner the record names is the one results name
        record = game_record(engine.table(game))
        won = [row for row in stored if row["game_id"] == game and row["won"]]
        names = {p["seat"]: p["name"] for p in record["players"]}
        assert [names[row["seat"]] for row in won] == ([record["winner"]] if record["winner"] else [])
    assert engine.store.unscored() == ([], 0)


def _finished_game(engine: Engine, clock: FakeClock, kind: str = "pure-skill") -> int:
    """A game of ``kind`` played to its end by three bots."""
    game = engine.new_game(kind, [], bots=3)
    for _ in range(200):
        if engine.store.game(game)["state"] == "finished":
            return game
        clock.advance(days=2)
        engine.tick()
    raise AssertionError("the game did not end")


@pytest.mark.parametrize("how", ["kind no longer installed", "record that no longer replays"])
def test_an_old_finished_game_that_cannot_be_replayed_does_not_stop_the_referee(how, config, clock, caplog):
    """A games.db whose game finished before schema 6 kept results: the
    rooms fill its results by replay when they are built.  A game that
    cannot be replayed (its kind's plugin removed, its record damaged) is
    left out, said in the log; the referee still starts, and its other
    games, the site's standings and STANDINGS go on."""
    engine = Engine(Store(config.database), config, clock)
    broken, good = _finished_game(engine, clock), _finished_game(engine, clock)
    running = engine.new_game("pure-skill", ["ann@example.org", "ben@example.org"], bots=1)
    with sqlite3.connect(config.database) as db:
        db.execute("delete from results")
        if how == "kind no longer installed":
            db.execute("update games set kind = 'gone' where id = ?", [broken])
        else:
            db.execute("delete from moves where game_id = ? and phase = 1 and seat = 0", [broken])
    engine.store.db.conn.close()
    engine = Engine(Store(config.database), config, clock)  # raised: KeyError / ReplayError
    assert {row["game_id"] for row in engine.store.results()} == {good}
    assert f"game {broken}" in caplog.text
    assert standings(engine.store, Tables(engine.store)).games == 1
    assert engine.store.game(running)["state"] == "running"
    engine.tick()


def test_results_agree_with_every_finished_game_s_replay_and_standings_with_either(tmp_path):
    """Several finished games of every kind (some moves random, a player
    who left, a game cancelled): each game's ``results`` are what its
    record's replay says (scores, places, the winner the record names), and
    the standings counted from them are those counted by replay alone."""
    from test_club_standings import ALICE, BOB, CAROL, DAVE, ERIN, OTHER_ALICE, Club

    club = Club(tmp_path)
    club.play("pure-skill", [ALICE, BOB, CAROL], sometimes=(CAROL,))
    club.play("pure-skill", [BOB, CAROL, DAVE], silent=(DAVE,), leaves=(BOB, 2))
    club.play("bid", [ALICE, DAVE, ERIN], sometimes=(ERIN,))
    club.play("bid", [ALICE, BOB, CAROL, DAVE])
    club.play("ice", [BOB, ERIN], sometimes=(BOB,))
    club.play("ice", [ALICE, CAROL, DAVE, ERIN], leaves=(CAROL, 3))
    club.play("priority", [ALICE, BOB, CAROL, DAVE, ERIN], sometimes=(DAVE,))
    club.play("bluff", [ALICE, OTHER_ALICE, ERIN], sometimes=(ERIN,))
    cancelled = club.play("bluff", [BOB, CAROL, DAVE], phases=4)
    club.engine.cancel(cancelled, "shell", "the club closed for the summer")
    engine = club.engine
    finished = [g["id"] for g in engine.store.games("finished")]
    assert len(finished) == 9
    stored = engine.store.results()
    assert {row["game_id"] for row in stored} == set(finished) - {cancelled}
    for game in finished:
        table = engine.table(game)
        mine = _strip([row for row in stored if row["game_id"] == game])
        assert mine == _strip(_replayed(table)), game
        record = game_record(table)
        assert verify(record).ok
        won = [table.names[row["seat"]] for row in mine if row["won"]]
        assert won == ([record["winner"]] if record["winner"] else [])
        result = table.rules.result(table.state)
        assert [row["score"] for row in mine] == ([] if game == cancelled else list(result.scores))
    by_rows = standings(engine.store, engine.tables)
    copy = tmp_path / "copy.db"
    engine.store.backup(copy)
    with sqlite3.connect(copy) as db:
        db.execute("delete from results")
    store = Store(copy)
    assert standings(store, Tables(store)) == by_rows
    for kind in ("pure-skill", "bid", "ice", "priority", "bluff"):
        assert standings(store, Tables(store), kind) == standings(engine.store, engine.tables, kind)


def _forged(record: dict, how: str) -> dict:
    forged = json.loads(json.dumps(record))
    players = forged["players"]
    if how == "a seat fewer":
        del players[-1]
    elif how == "an extra seat":
        players.append({**players[-1], "seat": len(players), "name": "mallory"})
    elif how == "other options":
        forged["game"]["options"] = {**forged["game"]["options"], "turn_limit": 0}
    elif how == "options dropped":
        forged["game"]["options"] = {}
    return forged


@pytest.mark.parametrize("how", ["a seat fewer", "an extra seat", "other options", "options dropped"])
def test_a_game_begun_by_join_and_start_with_fewer_seats_and_options_verifies_and_a_forgery_does_not(
    how, engine, clock
):
    """Auction (priority) for 4 of its 8 seats, with turn_limit=3 and grey
    press chosen at JOIN, begun by START: the record carries the four seats
    and the options, verifies, and its start digest is the start mail's.  A
    record with a seat more or fewer, or other options, fails verify, or at
    least disagrees with the digest every player holds in their start mail."""
    from conftest import Mailbox, answer
    from test_club_signup import ANN, BEN, CAT, DAN, confirmation, joins
    from test_keeping import play_out

    from referee.record import mail_digests, record_digests

    box = Mailbox(engine)
    joins(engine, clock, box, ANN, "JOIN priority 6 turn_limit=3 press=grey")
    for address in (BEN, CAT, DAN):
        joins(engine, clock, box, address, "JOIN priority")
    for address in (ANN, BEN, CAT, DAN):
        answer(engine, clock, confirmation(box, address), "START")
    assert engine.store.game(1)["state"] == "running"
    start = next(m for m in box.to(ANN) if " begins" in m["subject"])
    play_out(engine, clock)
    record = game_record(engine.table(1))
    assert len(record["players"]) == 4 and record["game"]["options"]["turn_limit"] == 3
    assert verify(record).ok, verify(record)
    [(where, held)] = mail_digests(start["body"])
    assert where == "the start" and record_digests(record)[0].digest == held
    forged = _forged(record, how)
    verdict = verify(forged)
    assert not verdict.ok or record_digests(forged)[0].digest != held


maildir = _maildir  # the fixture

# -- backup and restore -------------------------------------------------------------

LIST = "club@lists.example.org"
ZOE = "zoe@example.com"  # an observer
BID = ["ann@example.org", "ben@example.org", "cat@example.org", "dan@example.org"]
SIGNED = ["eve@example.org", "fay@example.org", "gus@example.org"]


def _rows(store: Store, sql: str) -> list[tuple]:
    return sorted(tuple(row) for row in store.db.execute(sql).fetchall())


def _kept(store: Store) -> dict[str, list[tuple]]:
    """What the new features keep, as it would be made again."""
    return {
        "watchers": _rows(store, "select game_id, address, notify, since, token from watchers"),
        "press": _rows(store, "select id, game_id, seat, at, recipients, signed from press"),
        "press_tokens": _rows(store, "select * from press_tokens"),
        "results": _rows(store, "select * from results"),
        "signups": _rows(store, "select game_id, address, joined_at, start from signups"),
        "reader_told": _rows(store, "select * from reader_told"),
        "games": _rows(store, "select id, state, seed, press, announce_to, seats_wanted, options from games"),
    }


def test_a_restore_makes_again_the_watchers_press_results_and_sign_ups_and_sends_the_list_nothing_twice(
    config, clock, maildir, tmp_path, capsys
):
    """Between a backup and the loss of games.db: a reply to table talk sent
    before the backup, table talk and its reply, an observer confirmed by
    reply, a game played to its end, and three sign-ups begun by START;
    the club's list has a copy of every public mail.  After the restore,
    handling the same mail again makes the same rows (watchers, press and
    its reply tokens, results, sign-ups), every public record is the same,
    a reply to table talk relayed before the restore still reaches its
    writer, and neither the list nor anyone else gets a mail twice."""
    club = Club(changed(config, announce_to=(LIST,)), clock, maildir)
    store = lambda: club.engine.store  # (the store changes with the restore)

    def latest(to: str, words: str) -> dict:
        rows = [
            m
            for m in store().outbox(None)
            if m["recipients"] == [to] and words in m["subject"] and not m["subject"].startswith("Re:")
        ]
        assert rows, (to, words, [m["subject"] for m in store().outbox(None) if m["recipients"] == [to]])
        message = email.message_from_bytes(rows[-1]["raw"], policy=policy.default)
        return {"subject": rows[-1]["subject"], "id": rows[-1]["message_id"], "reply_to": str(message["Reply-To"])}

    def mail(sender: str, text: str, to: dict | None = None) -> None:
        clock.advance(minutes=7)
        if to is None:
            raw = make_mail(sender, text, subject="hello", received=clock())
        else:
            thread = {"In-Reply-To": to["id"], "References": to["id"]}
            raw = make_mail(
                sender, text, to=to["reply_to"], subject=f"Re: {to['subject']}", headers=thread, received=clock()
            )
        deliver(maildir, raw, clock())
        clock.advance(minutes=1)
        club.run()

    bid = club.engine.new_game("bid", BID)
    club.run()
    mail(BID[0], "TELL ben Shall we share the next lot?", latest(BID[0], "Bid!"))
    told_before = latest(BID[1], "ann writes")
    assert club.cli(tmp_path, "backup", str(tmp_path / "backup.db")) == 0

    mail(BID[1], "Only if you bid low.", told_before)  # a reply to press sent before the backup
    mail(BID[2], "TELL ALL Nobody outbids me this round.", latest(BID[2], "Bid!"))
    mail(BID[3], "We shall see.", latest(BID[3], "cat writes"))  # to press made since the backup
    mail(ZOE, f"WATCH {bid}")
    mail(ZOE, "", latest(ZOE, "Follow game"))
    assert [row["address"] for row in store().watchers(bid)] == [ZOE]
    for address in SIGNED:
        mail(address, "JOIN bid")
        mail(address, "", latest(address, "JOIN"))
    for address in SIGNED:
        mail(address, "START", latest(address, "JOIN"))
    signed = next(g["id"] for g in store().games() if g["id"] != bid)
    assert store().game(signed)["state"] == "running"
    mail(SIGNED[0], "TELL fay Let us share the Suns.", latest(SIGNED[0], "Bid!"))
    for _ in range(200):  # (its seed is the system's: a game of Bid! may take more than 40 phases)
        if store().game(bid)["state"] == "finished":
            break
        club.move(bid)
    assert store().game(bid)["state"] == "finished" and store().results()
    kept = _kept(store())
    records = {game: public(club.engine, game) for game in (bid, signed)}
    had = {row["message_id"]: row for row in store().outbox(None)}
    to_list = [row for row in had.values() if row["recipients"] == [LIST]]
    assert len(to_list) > 5
    club.close()

    assert club.cli(tmp_path, "restore", str(tmp_path / "backup.db")) == 0
    club.open()
    club.run()
    assert _kept(store()) == kept
    assert {game: public(club.engine, game) for game in (bid, signed)} == records
    outbox = store().outbox(None)
    assert {row["message_id"] for row in outbox} >= set(had)
    made_again = [row for row in outbox if row["message_id"] in had]
    assert all(row["state"] in ("restored", "sent") for row in made_again)
    new = [row for row in outbox if row["message_id"] not in had]
    assert all("restored its records" in row["subject"] for row in new), [r["subject"] for r in new]
    assert LIST not in {row["recipients"][0] for row in new} and ZOE not in {row["recipients"][0] for row in new}

    # A reply to press relayed before the restore still reaches its writer.
    mail(SIGNED[1], "Deal.", latest(SIGNED[1], "eve writes"))
    [relayed] = [row for row in store().outbox(None)[len(outbox) :] if row["recipients"] == [SIGNED[0]]][-1:]
    assert "Deal." in body_of(relayed["raw"]) and "fay" in relayed["subject"]


def test_a_game_its_sign_up_window_started_at_a_late_run_is_the_same_game_after_a_restore(
    config, clock, maildir, tmp_path
):
    """Three sign up for Bid! (its least); the referee runs hourly (cron),
    so the window ends between two runs and the game starts at the next.
    Restored from a backup made before it started, the referee starts it
    again, and it must be the same game: its first round opened and due
    when the players were told (their start mail's digest and deadline)."""
    club = Club(config, clock, maildir)
    store = lambda: club.engine.store  # (the store changes with the restore)

    def latest(to: str) -> dict:
        rows = [m for m in store().outbox(None) if m["recipients"] == [to] and "JOIN" in m["subject"]]
        message = email.message_from_bytes(rows[-1]["raw"], policy=policy.default)
        return {"subject": rows[-1]["subject"], "id": rows[-1]["message_id"], "reply_to": str(message["Reply-To"])}

    for address in SIGNED:
        clock.advance(minutes=7)
        deliver(maildir, make_mail(address, "JOIN bid", subject="hello", received=clock()), clock())
        club.run()
        confirm = latest(address)
        clock.advance(minutes=7)
        thread = {"In-Reply-To": confirm["id"], "References": confirm["id"]}
        raw = make_mail(
            address, "", to=confirm["reply_to"], subject=f"Re: {confirm['subject']}", headers=thread, received=clock()
        )
        deliver(maildir, raw, clock())
        club.run()
    assert store().game(1)["state"] == "open"
    assert club.cli(tmp_path, "backup", str(tmp_path / "backup.db")) == 0
    window_end = min(club.engine.next_due())
    clock.now = window_end.replace(minute=0) + timedelta(hours=1)  # the next hourly run, after it
    club.run()
    assert store().game(1)["state"] == "running"
    for _ in range(3):
        clock.advance(hours=1)
        club.run()
    record = public(club.engine, 1)
    opened = store().phases(1)[0]["opened_at"]
    club.close()

    assert club.cli(tmp_path, "restore", str(tmp_path / "backup.db")) == 0
    club.open()
    club.run()
    assert store().phases(1)[0]["opened_at"] == opened
    assert public(club.engine, 1) == record
