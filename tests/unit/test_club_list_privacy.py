"""The club's list gets nothing private (issue 34, item 2), through the same
tests as the site: twin games, the same seed and kind, that differ only in
hidden facts (a sealed move changed before it counted, a turn's move
refused, Bid!'s tiles bid in an auction a pawn cancels, Auction's cards
played face down, Bluff's dice) send the list byte for byte the same mail
until the facts are public; and whole games of every kind, with the
keeper's acts and the players' AWAY, BACK, DELEGATE, ADDRESS and RESIGN,
never show it a player's address (a seat's, one it had, a stand-in's)."""

from __future__ import annotations

import random
import re
from dataclasses import replace as changed
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock, Mailbox, answer, body_of, mails, reply, send, to_deadline
from test_ingest_priority import FOUR, prompt_label
from test_public_privacy import choose, unseen_bids

from referee.config import Config
from referee.engine import Engine
from referee.engine.post import Reader
from referee.record import Replay
from referee.rules import GAMES
from referee.store import Notify, Store

LIST = "club@lists.example.org"
ROUND, SETTLE = timedelta(days=2), timedelta(hours=1)
KEEPER = "keeper@example.org"
ALICE, BOB, CAROL = PLAYERS
DORA, ERIN, CAROL_NEW = "dora@example.net", "erin@example.org", "carol@new.example.net"


def club(root: Path, **settings) -> Config:
    """A referee whose every game's public mail, each phase's, goes to the club's list."""
    return Config(
        address="referee@example.org",
        database=root / "unused.db",
        reminder=None,
        outage_gap=None,
        secret_key=b"one referee's secret key",  # the twins' Message-IDs are the same
        announce_to=(LIST,),
        announce_notify=Notify.EVERY,
        **settings,
    )


# The record's running digest covers every move that counted, a hidden one
# too (a tile bid in a cancelled auction, a card face down): an HMAC keyed
# from the secret seed, to anyone without it 64 random bits until the end,
# and the one thing the twins' list mail may differ in.
_DIGEST = re.compile(rb"(Record digest [^:\n]*(?::[^:\n]*)*: )[0-9a-f-]{19}")


def list_mail(engine: Engine) -> list[bytes]:
    """Every mail the list was sent, byte for byte (but the running digest)."""
    return [_DIGEST.sub(rb"\1<digest>", m["raw"]) for m in engine.store.outbox(None) if m["recipients"] == [LIST]]


class Twins:
    """One game played by two engines whose hidden facts differ (as
    test_public_privacy's, the list's mail compared instead of the site)."""

    def __init__(self, root: Path, kind: str, options: dict, players: list[str] = PLAYERS):
        self.clock = FakeClock()
        config = club(root)
        self.engine = Engine(Store(":memory:"), config, self.clock)
        self.game = self.engine.new_game(kind, players, deadline=ROUND, settle=SETTLE, options=options)
        self.twin = Engine(Store(":memory:"), config, self.clock)
        self.engine.store.db.conn.backup(self.twin.store.db.conn)  # the same seed, seats and tokens
        self.kind, self.players = kind, players

    def send(self, engine: Engine, seat: int, text: str) -> str:
        label = engine.table(self.game).open_phase["label"]
        subject = f"Re: [{self.kind}-{self.game}] {label}"
        mail = reply(engine, self.players[seat], text, game=self.game, received=self.clock(), subject=subject)
        return engine.ingest(mail).code

    def compare(self) -> None:
        assert list_mail(self.twin) == list_mail(self.engine)

    def running(self) -> bool:
        return self.engine.table(self.game).row["state"] == "running"


def play_phase(twins: Twins, chooser: random.Random) -> None:
    """Every human mover of the open phase moves by mail (one now and then
    leaves it to the deadline); the twin's mover first sends another sealed
    move and replaces it, or a turn's move that is refused."""
    table = twins.engine.table(twins.game)
    phase = table.open_phase
    movers = [seat for seat in table.waiting_for(phase) if table.human(seat)]
    planned = {seat: choose(table.rules, table.state, seat, chooser) for seat in movers if chooser.random() < 0.9}
    finals = unseen_bids(twins, planned, chooser)
    for seat, text in planned.items():
        if not phase["sealed"]:
            assert twins.send(twins.twin, seat, f"{table.rules.move_word} banana") not in ("move", "replaced")
            twins.compare()
            assert twins.send(twins.engine, seat, text) == "move"
            assert twins.send(twins.twin, seat, text) == "move"
            twins.compare()
            continue
        decoy = choose(table.rules, table.state, seat, chooser, avoid=finals[seat]) or finals[seat]
        assert twins.send(twins.engine, seat, text) == "move"
        assert twins.send(twins.twin, seat, decoy) == "move"
        twins.compare()
        if decoy != finals[seat]:
            sent = len(list_mail(twins.twin))
            assert twins.send(twins.twin, seat, finals[seat]) == "replaced"
            assert len(list_mail(twins.twin)) == sent  # nobody on the list learns of a change of mind
            twins.compare()
    still = twins.engine.table(twins.game).open_phase
    if still is not None and still["number"] == phase["number"]:  # to the settle time or the deadline
        complete = phase["sealed"] and len(planned) == len(movers)
        twins.clock.advance(seconds=(SETTLE if complete else ROUND).total_seconds())
        twins.engine.tick()
        twins.twin.tick()
    twins.compare()


@pytest.mark.parametrize(
    ("kind", "options", "seed", "phases"),
    [
        ("pure-skill", {}, 1, 13),
        ("bid", {"max_auctions": 10}, 2, 99),
        ("bid", {"reroll": "coin", "max_auctions": 6}, 3, 99),
        ("ice", {}, 4, 20),  # nothing is hidden in Ice Ice Baby but a refused move: a part of a game will do
        ("bluff", {}, 5, 30),  # its turns: a refused move; its dice below
        ("priority", {}, 6, 30),  # its turns: a refused move; its cards face down below
    ],
)
def test_the_list_s_mail_depends_on_public_facts_only(tmp_path, kind, options, seed, phases):
    twins = Twins(tmp_path, kind, options)
    chooser = random.Random(seed)
    twins.compare()
    cancelled = 0
    for _ in range(phases):
        play_phase(twins, chooser)
        if not twins.running():
            break
        if kind == "bid":
            table = twins.engine.table(twins.game)
            cancelled += sum(
                1 for step in table.replay.steps[-1:] for event in step.events if event.get("type") == "cancelled"
            )
    if kind == "bid":
        assert cancelled > 0  # an auction a pawn or reroll cancelled, its tiles unseen, was among them
    assert len(list_mail(twins.engine)) > 2  # the start and results reached the list
    if not twins.running():  # the end: the seed and every move are public, and the same
        assert list_mail(twins.engine)[-1] == list_mail(twins.twin)[-1]


def test_until_the_tally_the_cards_played_face_down_change_nothing_the_list_sees(tmp_path):
    """Auction (priority cards): two engines play one game, and differ only
    in the cards alice plays face down (her twin plays another, on the same
    colour); until round 1's tally the list's mail is the same."""
    clock = FakeClock()
    config = club(tmp_path)
    engine = Engine(Store(":memory:"), config, clock)
    game = engine.new_game("priority", FOUR, turn_deadline=timedelta(hours=6))
    twin = Engine(Store(":memory:"), config, clock)
    engine.store.db.conn.backup(twin.store.db.conn)
    boxes = {e: Mailbox(e) for e in (engine, twin)}
    rules = GAMES["priority"]
    choose_move, differed = random.Random(7), 0
    while engine.table(game).state.round == 1:
        table = engine.table(game)
        (seat,) = table.open_phase["movers"]
        moves = rules.legal_moves(table.state, seat)
        move = choose_move.choice(moves[:-1]) if seat == 0 or choose_move.random() < 0.8 else moves[-1]
        if seat == 0 and table.state.taken[0] >= 3:
            move = moves[-1]  # alice passes after three plays or moves, so the round ends
        other = move
        if seat == 0 and move[0] == "play":  # the twin's hand differs: a card from it, another if it can
            held = twin.table(game).state.hand(0)
            cards = [c for c in held if c != move[1]] or list(held)
            other = ("play", choose_move.choice(cards), move[2])
            differed += other != move
        for e, m in ((engine, move), (twin, other)):
            prompt = [x for x in boxes[e].to(FOUR[seat]) if prompt_label(x) == table.open_phase["label"]]
            assert answer(e, clock, prompt[-1], rules.move_text(m)).code == "move"
        clock.advance(minutes=5)
        if engine.table(game).state.round != 1:
            break  # the tally shows every card: from here the twins differ in public
        assert list_mail(engine) == list_mail(twin)
    assert differed, "alice never played a card"
    assert len(list_mail(engine)) > 3


def test_the_list_s_copy_of_a_bluff_result_does_not_depend_on_the_dice(tmp_path):
    """Bluff Auction: a round's dice are each player's own (F13).  The
    list's copy of the same result, made from the game with everyone's dice
    other than they are, is the same."""
    clock = FakeClock()
    engine = Engine(Store(tmp_path / "games.db"), club(tmp_path), clock)
    game = engine.new_game("bluff", PLAYERS, turn_deadline=timedelta(hours=1))
    for _ in range(4):  # a few turns by deadline, so bids are on the board
        to_deadline(engine, clock, game)
        engine.tick()
    real = engine.table(game)
    faces = ("black", "red", "yellow", "blue", "green", "purple")
    dice = tuple(tuple(faces[(faces.index(f) + 1) % 6] for f in d) for d in real.state.dice)
    assert dice != real.state.dice
    other = changed(real, replay=Replay(changed(real.state, dice=dice), real.replay.steps))
    number = real.replay.steps[-1].number
    reader = Reader(LIST, Notify.EVERY)
    bodies = []
    for table in (real, other):
        context = {**engine.post.context(table), "round": engine.post.round_context(table, number), "digest": ""}
        engine.post.to_reader(table, reader, "bluff/round", context)
        bodies.append(body_of(engine.store.outbox(None)[-1]["raw"]))
    assert bodies[0] == bodies[1]


# -- no address, whatever happens in a game ----------------------------------------------------


def moved_address(engine: Engine, clock, box: Mailbox) -> None:
    """Carol plays from a new address, confirmed from there."""
    assert send(engine, clock, CAROL, f"ADDRESS {CAROL_NEW}").code == "done"
    [offer] = [m for m in box.to(CAROL_NEW) if "Confirm your new address" in m["subject"]]
    assert answer(engine, clock, offer, "").code == "done"


def stood_in(engine: Engine, clock, box: Mailbox) -> None:
    """Bob names Dora his stand-in, she accepts, and Bob ends her turn."""
    assert send(engine, clock, BOB, f"DELEGATE {DORA} 3d").code == "done"
    offer = [m for m in box.to(DORA) if m["reply_to"] != "None"][-1]
    assert answer(engine, clock, offer, "ACCEPT").code == "done"
    assert send(engine, clock, BOB, "DELEGATE NONE").code == "done"


@pytest.mark.parametrize("kind", list(GAMES))
def test_no_list_mail_names_a_player_s_address_whatever_happens(tmp_path, kind):
    clock = FakeClock()
    config = club(tmp_path, keepers=(KEEPER,), site_url="https://games.example.org/referee")
    engine = Engine(Store(tmp_path / "games.db"), config, clock)
    seats = 4 if GAMES[kind].min_seats > 3 else 3
    players = [*PLAYERS, "dave@example.org"][:seats]
    game = engine.new_game(kind, players)
    box = Mailbox(engine)
    assert send(engine, clock, ALICE, "AWAY 2d").code == "done"
    assert send(engine, clock, ALICE, "BACK").code == "done"
    stood_in(engine, clock, box)
    moved_address(engine, clock, box)
    engine.extend(game, timedelta(days=1), "shell", f"{ALICE} asked for more time")
    engine.pause(game, "shell", "a holiday")
    engine.resume(game, "shell")
    engine.say(game, f"Welcome, all; {BOB} and {CAROL_NEW.upper()} write to me first.", "shell")
    engine.say(game, "This one is for you alone.", "shell", "2")
    engine.replace(game, "2", ERIN, "shell", f"{BOB} moved away")
    assert send(engine, clock, ALICE, "RESIGN").code in ("done", "resigned")
    while engine.status(game)["state"] == "running":
        to_deadline(engine, clock, game)
        engine.tick()
    sent = mails(engine, LIST)
    subjects = [m["subject"] for m in sent]
    for said in ("is away", "is back", "A stand-in plays seat 2", "alone again", "the keeper extended", "is paused"):
        assert [s for s in subjects if said in s], (said, subjects)
    for said in ("goes on", "takes over seat 2", "has left game", "Game over"):
        assert [s for s in subjects if said in s], (said, subjects)
    assert len([s for s in subjects if "A word from the keeper" in s]) == 1  # not the word to one seat
    addresses = [*players, DORA, ERIN, CAROL_NEW]
    for mail in sent:
        text = (mail["subject"] + "\n" + mail["body"]).lower()
        assert not [address for address in addresses if address in text], mail["subject"]
    words = next(m["body"] for m in sent if "A word from the keeper" in m["subject"])
    assert "Welcome, all; bob and carol write to me first." in words  # their names, where the keeper wrote addresses


def test_no_list_mail_of_a_cancelled_game_names_a_player_s_address(tmp_path):
    clock = FakeClock()
    engine = Engine(Store(tmp_path / "games.db"), club(tmp_path), clock)
    game = engine.new_game("pure-skill", PLAYERS)
    assert send(engine, clock, BOB, "bid 5").code == "move"
    engine.cancel(game, "shell", f"{ALICE} and the keeper fell out")
    cancelled = mails(engine, LIST)[-1]
    assert cancelled["subject"] == "[pure-skill-1] Game 1 is cancelled"
    assert "The keeper's reason: alice and the keeper fell out" in cancelled["body"]
    assert not [address for address in PLAYERS if address in cancelled["body"]]
