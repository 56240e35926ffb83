"""Observers (issue 34, item 3): WATCH GAME, confirmed by a reply; UNWATCH
GAME; an observer gets the public mail only, at the same levels as the
players (EVERY, TURNS, DIGEST), each copy with their own reply address and
a List-Unsubscribe that removes them; capped per game; counted on the site."""

from __future__ import annotations

import email
import itertools
import random
from collections import Counter
from datetime import timedelta
from email import policy
from pathlib import Path
from typing import Any

import pytest
from conftest import PLAYERS, FakeClock, Mailbox, Seeds, answer, join, make_mail, send
from test_notify import KINDS, Played

from referee.config import Config
from referee.engine import Engine
from referee.site.render import Site
from referee.store import Notify, Store
from referee.timeutil import from_iso

ALICE, BOB, CAROL = PLAYERS
OLIVE, OSCAR, OTTO = "olive@example.net", "oscar@example.net", "otto@example.net"
MALLORY = "mallory@example.com"


def header(mail: dict, name: str) -> str | None:
    return email.message_from_bytes(mail["raw"], policy=policy.default)[name]


def ask(engine: Engine, clock: FakeClock, address: str, line: str):
    """A fresh mail from ``address`` to the referee's plain address (no token)."""
    return engine.ingest(make_mail(address, line, subject="hello", received=clock()))


def the_offer(box: Mailbox, address: str) -> dict:
    return [mail for mail in box.to(address) if "Follow game" in mail["subject"] and "Re:" not in mail["subject"]][-1]


def watch(engine: Engine, clock: FakeClock, box: Mailbox, address: str, line: str = "WATCH 1", reply: str = ""):
    """``address`` asks to WATCH and confirms by a reply to the offer."""
    assert ask(engine, clock, address, line).code == "done"
    return answer(engine, clock, the_offer(box, address), reply)


def watchers(engine: Engine, game: int = 1) -> list[str]:
    return [row["address"] for row in engine.store.watchers(game)]


@pytest.fixture
def game(engine) -> int:
    return engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))


@pytest.fixture
def box(engine) -> Mailbox:
    return Mailbox(engine)


# -- WATCH, confirmed by reply ---------------------------------------------------


def test_watch_is_confirmed_by_an_empty_reply_to_its_offer(engine, clock, game, box):
    assert ask(engine, clock, OLIVE, "WATCH 1").code == "done"
    assert watchers(engine) == []  # nothing until the address answers
    offer = the_offer(box, OLIVE)
    assert "reply to this mail" in offer["body"] and "game 1" in offer["body"]
    assert answer(engine, clock, offer, "").code == "done"
    assert watchers(engine) == [OLIVE]
    assert "you follow game 1" in box.to(OLIVE)[-1]["body"]


def test_watch_is_confirmed_by_accept_with_its_level(engine, clock, game, box):
    assert watch(engine, clock, box, OLIVE, "WATCH 1 DIGEST", reply="ACCEPT").code == "done"
    assert engine.store.watcher(1, OLIVE)["notify"] == "digest"


def test_a_forged_confirmation_changes_nothing(engine, clock, game, box):
    assert ask(engine, clock, OLIVE, "WATCH 1").code == "done"
    offer = the_offer(box, OLIVE)
    forged = make_mail(MALLORY, "ACCEPT", to=offer["reply_to"], subject=f"Re: {offer['subject']}", received=clock())
    assert engine.ingest(forged).code == "refused"
    # a stranger writing in olive's name, without the offer's token, accepts nothing either
    assert ask(engine, clock, OLIVE, "ACCEPT").code == "refused"
    assert watchers(engine) == []
    assert box.to(MALLORY) == []


def test_a_stranger_s_watch_in_someone_s_name_only_asks_them(engine, clock, game, box):
    assert ask(engine, clock, OLIVE, "WATCH 1").code == "done"  # (written by anyone, in olive's name)
    clock.advance(days=3)
    engine.tick()  # the offer lapses unanswered
    assert answer(engine, clock, the_offer(box, OLIVE), "").code == "refused"
    assert watchers(engine) == []


def test_watch_is_refused_politely_where_it_cannot_be(engine, clock, game, box):
    for line, words in (
        ("WATCH", "needs the number of a game"),
        ("WATCH 9", "There is no game 9"),
        ("WATCH 1 sometimes", "is not a level of mail"),
    ):
        assert ask(engine, clock, OLIVE, line).code == "refused"
        assert words in box.to(OLIVE)[-1]["body"]
    assert send(engine, clock, ALICE, "WATCH 1").code == "refused"  # a player gets its mail already
    assert "You play in game 1" in box.to(ALICE)[-1]["body"]
    assert watchers(engine) == []


def test_the_cap_refuses_one_more_observer_politely(tmp_path, clock):
    config = Config(address="referee@example.org", database=tmp_path / "games.db", reminder=None, most_watchers=2)
    engine = Engine(Store(config.database), config, clock, Seeds())
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(days=3))
    box = Mailbox(engine)
    assert ask(engine, clock, OTTO, "WATCH 1").code == "done"  # asked while there was room
    watch(engine, clock, box, OLIVE)
    watch(engine, clock, box, OSCAR)
    assert ask(engine, clock, "third@example.net", "WATCH 1").code == "refused"
    assert "as many observers as the referee takes (2)" in box.to("third@example.net")[-1]["body"]
    assert answer(engine, clock, the_offer(box, OTTO), "").code == "refused"  # full by the time it answers
    assert "as many observers" in box.to(OTTO)[-1]["body"]
    assert watchers(engine) == [OLIVE, OSCAR]


def test_an_open_game_s_observer_gets_its_start_with_how_much_mail_they_get(engine, clock, box):
    join(engine, "pure-skill", ALICE)  # game 1, open for sign-up
    watch(engine, clock, box, OLIVE, "WATCH 1 EVERY")
    assert ask(engine, clock, OSCAR, "WATCH 1").code == "done"
    offer = the_offer(box, OSCAR)  # (any mail of ours to oscar: its reply address proves him)
    assert engine.ingest(make_mail(OSCAR, "WATCH 1", to=offer["reply_to"], received=clock())).code == "done"
    join(engine, "pure-skill", BOB)
    join(engine, "pure-skill", CAROL)  # the seats are full: it starts
    start = next(mail for mail in box.to(OLIVE) if "begins" in mail["subject"])
    assert "you get a mail for every turn's or round's result" in start["body"]
    assert "UNWATCH" in start["body"] and ALICE not in start["body"]
    assert sorted(watchers(engine)) == [OLIVE, OSCAR]  # oscar's WATCH in a reply to the offer counted at once


# -- UNWATCH --------------------------------------------------------------------------


def test_unwatch_in_a_reply_to_an_observer_s_copy_stops_it(engine, clock, game, box):
    watch(engine, clock, box, OLIVE)
    for player in PLAYERS:
        send(engine, clock, player, "bid 5" if player == CAROL else "bid 3")
    copy = box.to(OLIVE)[-1]
    assert "Round 1 of 13" in copy["subject"] and copy["reply_to"] != "referee@example.org"
    assert answer(engine, clock, copy, "UNWATCH").code == "done"
    assert watchers(engine) == []
    assert "You no longer follow game 1" in box.to(OLIVE)[-1]["body"]
    count = len(box.to(OLIVE))
    for player in PLAYERS:
        send(engine, clock, player, "bid 4")
    assert len(box.to(OLIVE)) == count  # nothing more


def test_a_bare_unwatch_asks_the_observer_and_a_forger_stops_nobody(engine, clock, game, box):
    watch(engine, clock, box, OLIVE)
    watch(engine, clock, box, OSCAR, "WATCH 1")
    assert ask(engine, clock, MALLORY, "UNWATCH 1").code == "done"  # from her own address: she follows nothing
    assert "does not follow game 1; nothing changed" in box.to(MALLORY)[-1]["body"]
    assert ask(engine, clock, OLIVE, "UNWATCH ALL").code == "done"  # in olive's name, by anyone
    assert watchers(engine) == [OLIVE, OSCAR]  # nothing changed yet
    confirmation = next(mail for mail in box.to(OLIVE) if mail["subject"].endswith("UNWATCH ALL"))
    assert header(confirmation, "List-Unsubscribe")
    assert answer(engine, clock, confirmation, "").code == "done"  # olive, who reads her mail, confirms
    assert watchers(engine) == [OSCAR]


def test_notify_in_an_observer_s_reply_changes_their_level(engine, clock, game, box):
    watch(engine, clock, box, OLIVE)
    for player in PLAYERS:
        send(engine, clock, player, "bid 5" if player == CAROL else "bid 3")
    assert answer(engine, clock, box.to(OLIVE)[-1], "NOTIFY DIGEST").code == "done"
    assert engine.store.watcher(1, OLIVE)["notify"] == "digest"
    assert "one mail a day" in box.to(OLIVE)[-1]["body"]


def test_an_observer_s_reply_is_never_a_move(engine, clock, game, box):
    watch(engine, clock, box, OLIVE)
    for player in (ALICE, BOB):
        send(engine, clock, player, "bid 3")
    send(engine, clock, CAROL, "bid 5")
    assert answer(engine, clock, box.to(OLIVE)[-1], "bid K").code == "refused"
    assert [move for move in engine.store.moves(1) if move["phase"] == 2] == []


# -- List-Unsubscribe ------------------------------------------------------------------


def test_list_unsubscribe_removes_the_observer_and_says_so_once(engine, clock, game, box):
    watch(engine, clock, box, OLIVE)
    for player in PLAYERS:
        send(engine, clock, player, "bid 5" if player == CAROL else "bid 3")
    copy = box.to(OLIVE)[-1]
    target = header(copy, "List-Unsubscribe").strip().strip("<>").removeprefix("mailto:").split("?")[0]
    assert target not in (copy["reply_to"], "referee@example.org")
    unsubscribe = make_mail("someone@example.net", "", to=target, subject="unsubscribe", received=clock())
    assert engine.ingest(unsubscribe).code == "done"
    assert watchers(engine) == []
    assert "You no longer follow game 1" in box.to(OLIVE)[-1]["subject"]
    again = make_mail("someone@example.net", "", to=target, subject="unsubscribe", received=clock())
    assert engine.ingest(again).code == "ignored"
    assert box.new() == []


# -- a whole game, at each level ----------------------------------------------------------


class Watched(Played):
    """A whole game of ``kind`` by mail (as test_notify's), followed by
    three observers from its start, one at each level."""

    LEVELS = {OLIVE: "every", OSCAR: "turns", OTTO: "digest"}

    def __init__(self, root: Path, kind: str, step: timedelta = timedelta(minutes=30), **settings: Any):
        config = Config(address="referee@example.org", database=root / "games.db", outage_gap=None, **settings)
        self.clock = FakeClock()
        self.engine = Engine(Store(config.database), config, self.clock, Seeds(bytes(range(32))))
        self.game = self.engine.new_game(kind, PLAYERS)
        self.box = Mailbox(self.engine)
        for address, level in self.LEVELS.items():
            watch(self.engine, self.clock, self.box, address, f"WATCH 1 {level}")
        self.watching = {address: len(self.box.to(address)) for address in self.LEVELS}  # the mail before the game's
        self.step = step
        self.moves: Counter[str] = Counter()
        self.play(random.Random(kind))
        self.box.new()

    def play(self, choose: random.Random) -> None:
        if self.step <= timedelta(minutes=30):
            return super().play(choose)
        engine = self.engine
        while engine.status(self.game)["state"] == "running":  # a move a day (or so): digests fall between
            for mover in engine.status(self.game)["phase"]["waiting_for"]:
                table = engine.table(self.game)
                seat = table.seat_of(mover)
                move = table.rules.move_text(choose.choice(table.rules.legal_moves(table.state, seat)))
                self.clock.advance(seconds=self.step.total_seconds())
                engine.tick()
                assert answer(engine, self.clock, self.box.to(mover)[-1], move).code == "move"
        return None

    def game_mail(self, address: str) -> list[dict]:
        return self.box.to(address)[self.watching[address] :]


@pytest.fixture(scope="module", params=KINDS)
def watched(request, tmp_path_factory) -> Watched:
    return Watched(tmp_path_factory.mktemp(request.param), request.param)


def test_every_turns_and_digest_observers_get_what_their_level_says_over_a_whole_game(watched):
    table = watched.engine.table(1)
    assert len(watched.game_mail(OLIVE)) == len(table.phases) + 1  # each phase's result, the end
    assert len(watched.game_mail(OSCAR)) == watched.rounds + 1  # each round's result, the end
    assert "over" in watched.game_mail(OSCAR)[-1]["subject"].lower()
    # (moves every half hour or less: the game is over within a day or two, so a digest or two at most)
    digests = [mail for mail in watched.game_mail(OTTO) if "What happened since" in mail["subject"]]
    days = (from_iso(table.row["finished_at"]) - from_iso(table.row["created_at"])).days
    assert len(watched.game_mail(OTTO)) == len(digests) + 1 and len(digests) <= days


def test_an_observer_s_copies_carry_no_player_s_address_nor_private_fact(watched):
    for address in Watched.LEVELS:
        for mail in watched.box.to(address):
            text = mail["raw"].decode("utf-8", "replace")
            assert not [player for player in PLAYERS if player in text]
            assert "Only for you" not in text and "Your hand" not in text
            assert mail["reply_to"] != "referee@example.org"
    for mail in watched.game_mail(OLIVE):
        assert header(mail, "List-Unsubscribe")


def test_observers_get_nothing_after_the_end_and_their_rows_stay(watched):
    engine, clock = watched.engine, watched.clock
    assert sorted(watchers(engine)) == sorted(Watched.LEVELS)
    assert ask(engine, clock, "late@example.net", "WATCH 1").code == "refused"
    assert "is over" in watched.box.to("late@example.net")[-1]["body"]
    clock.advance(days=3)
    engine.tick()
    assert [mail for mail in watched.box.new() if mail["to"] in Watched.LEVELS] == []


def test_a_digest_observer_gets_one_mail_a_day_of_what_happened_and_the_end(tmp_path):
    played = Watched(tmp_path, "pure-skill", step=timedelta(hours=9))
    theirs = played.game_mail(OTTO)
    digests = [mail for mail in theirs if "What happened since" in mail["subject"]]
    assert len(theirs) == len(digests) + 1 and "over" in theirs[-1]["subject"].lower()
    assert len(digests) >= 3
    sent = [from_iso(mail["created_at"]) for mail in digests]
    assert all(later - earlier >= timedelta(days=1) for earlier, later in itertools.pairwise(sent))
    # each phase resolved before the last digest is in a digest (the rest, in the final mail)
    told = "\n".join(mail["body"] for mail in digests)
    resolved = [phase for phase in played.engine.table(1).phases if from_iso(phase["resolved_at"]) <= sent[-1]]
    assert resolved and all(f"{phase['label']}:" in told for phase in resolved)
    for mail in theirs:
        assert not [player for player in PLAYERS if player in mail["raw"].decode("utf-8", "replace")]


def test_a_club_list_at_digest_gets_the_daily_digest_too(tmp_path):
    played = Watched(
        tmp_path,
        "pure-skill",
        step=timedelta(hours=9),
        announce_to=("club@lists.example.org",),
        announce_notify=Notify.DIGEST,
    )
    theirs = played.box.to("club@lists.example.org")
    digests = [mail for mail in theirs if "What happened since" in mail["subject"]]
    assert digests and len(theirs) == len(digests) + 2  # the start, the digests, the end
    assert "This list gets what happened" in digests[0]["body"]


# -- the site --------------------------------------------------------------------------------


def test_the_game_page_and_the_index_count_observers_never_name_them(engine, clock, game, box, tmp_path):
    watch(engine, clock, box, OLIVE)
    watch(engine, clock, box, OSCAR)
    site = Site(engine, tmp_path / "site")
    site.render()
    page = (tmp_path / "site" / "games" / "1" / "index.html").read_text()
    index = (tmp_path / "site" / "index.html").read_text()
    assert "2 observers" in page and "2 observers" in index
    assert "olive" not in page + index and "oscar" not in page + index
    assert answer(engine, clock, the_offer(box, OLIVE), "UNWATCH 1").code == "done"  # (any reply of ours proves her)
    site.render()
    assert "1 observer" in (tmp_path / "site" / "games" / "1" / "index.html").read_text()
