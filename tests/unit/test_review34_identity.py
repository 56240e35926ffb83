"""Review of issue 34 (identity and abuse at the seams): probes."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import PLAYERS, Mailbox, answer, make_mail, send
from test_club_press import receipt, start, talk

from referee.engine import Engine
from referee.mail.tokens import token_address
from referee.rules.api import Press

ALICE, BOB, CAROL = PLAYERS
DAVE = "dave@example.org"
ZED = "zed@example.net"
EVE = "eve@example.net"
KEEPER = "keeper@example.org"


@pytest.fixture
def config(config):
    return replace(config, keepers=(KEEPER,), press_per_day=5)


@pytest.fixture
def box(engine: Engine) -> Mailbox:
    return Mailbox(engine)


def test_an_answer_to_table_talk_never_reaches_the_newcomer_who_took_the_writers_seat(engine, clock, box):
    """Bob answers alice's table talk after the keeper gave her seat to zed:
    the words were for alice, and zed wrote nothing; bob is told."""
    start(engine, box)
    send(engine, clock, ALICE, "TELL bob secret for alice only")
    [to_bob] = talk(box, BOB)
    clock.advance(minutes=5)
    engine.replace(1, ALICE, ZED, KEEPER)
    box.new()
    assert answer(engine, clock, to_bob, "Alice, here is my plan").code == "refused"
    assert not [m for m in box.all if "my plan" in m["body"]]
    said = receipt(box, BOB)
    assert "alice has left the game, and another player took the seat over" in said and "zed" not in said


def test_an_answer_to_grey_table_talk_after_a_takeover_names_nobody(engine, clock, box):
    start(engine, box, press=Press.GREY)
    send(engine, clock, ALICE, "TELL bob GREY psst")
    [to_bob] = talk(box, BOB)
    engine.replace(1, ALICE, ZED, KEEPER)  # (in the same second: still after the message)
    box.new()
    assert answer(engine, clock, to_bob, "who are you?").code == "done"  # (as if passed on: see below)
    assert not [m for m in box.all if "who are you" in m["body"]]
    said = receipt(box, BOB)
    assert "Passed on to the writer, if they still play" in said and "alice" not in said and "zed" not in said


@pytest.mark.parametrize("leaves", ["RESIGN", "REPLACE"])
def test_an_answer_to_grey_table_talk_never_says_its_writer_left(engine, clock, box, leaves):
    """Alice writes unsigned, then leaves (her leaving is public): bob's
    answer was refused with "The player who wrote has left the game",
    which names alice as the writer.  Now bob's receipt reads as for a
    writer who still plays, and the words go nowhere."""
    start(engine, box, press=Press.GREY)
    send(engine, clock, ALICE, "TELL bob GREY carol is bluffing")
    send(engine, clock, CAROL, "TELL bob GREY alice is bluffing")
    [from_alice, from_carol] = talk(box, BOB)
    clock.advance(minutes=5)
    if leaves == "RESIGN":
        assert send(engine, clock, ALICE, "RESIGN").code == "done"
    else:
        engine.replace(1, ALICE, ZED, KEEPER)
    receipts = []
    for mail in (from_alice, from_carol):
        assert answer(engine, clock, mail, "who are you?").code == "done"
        receipts.append(receipt(box, BOB).replace("1 of the", "N of the").replace("2 of the", "N of the"))
    assert receipts[0] == receipts[1]  # nothing tells the two writers apart
    assert [m["to"] for m in box.all if "who are you?" in m["body"]] == [CAROL]


def test_the_newcomer_s_own_table_talk_is_answered_to_them(engine, clock, box):
    start(engine, box)
    engine.replace(1, ALICE, ZED, KEEPER)
    clock.advance(minutes=5)
    assert send(engine, clock, ZED, "TELL bob hello from the new player").code == "done"
    [to_bob] = [m for m in box.to(BOB) if "hello from the new player" in m["body"]]
    assert answer(engine, clock, to_bob, "welcome").code == "done"
    assert [m for m in box.to(ZED) if "welcome" in m["body"]]


def test_one_who_left_answering_old_table_talk_reaches_nobody_and_no_address_is_shown(engine, clock, box):
    """Bob's seat was given to zed; bob answers alice's earlier message from
    his own address: nothing is passed on to alice, zed is not told of it
    (nor shown bob's address), and bob is told why."""
    start(engine, box)
    send(engine, clock, ALICE, "TELL bob hi bob")
    [to_bob] = talk(box, BOB)
    clock.advance(minutes=5)
    engine.replace(1, BOB, ZED, KEEPER)
    box.new()
    assert answer(engine, clock, to_bob, "bob's answer").code == "refused"
    fresh = box.new()
    assert [m["to"] for m in fresh] == [BOB]
    assert "You no longer play in this game" in fresh[0]["body"]
    assert not [m for m in box.to(ALICE) if "bob's answer" in m["body"]]


def test_a_forged_answer_with_the_old_reader_s_token_tells_the_one_it_went_to(engine, clock, box):
    start(engine, box)
    send(engine, clock, ALICE, "TELL bob hi bob")
    [to_bob] = talk(box, BOB)
    clock.advance(minutes=5)
    engine.replace(1, BOB, ZED, KEEPER)
    box.new()
    forged = make_mail(EVE, "psst", to=to_bob["reply_to"], received=clock())
    assert engine.ingest(forged).code == "refused"
    assert [m["to"] for m in box.new()] == [BOB]  # never the newcomer, to whom bob's address is private


LIST = "club@lists.example.org"


@pytest.mark.parametrize("line", ["WATCH 1", "JOIN bid", "HELP", "STANDINGS", "UNWATCH 1", "JOIN priority 5"])
@pytest.mark.parametrize("where", ["game", "config"])
def test_mail_in_a_club_list_s_name_is_never_answered_so_nobody_mails_the_whole_club(
    engine, clock, box, config, seeds, line, where
):
    """Anyone can put the club's list address on a mail: a WATCH, a JOIN or a
    HELP in its name would send an offer, a confirmation or an answer to
    every member of the club, hour after hour."""
    if where == "config":
        engine = Engine(engine.store, replace(config, announce_to=(LIST,)), clock, seeds)
        box = Mailbox(engine)
    engine.new_game("pure-skill", PLAYERS, announce_to=[LIST] if where == "game" else [])
    before = len(box.to(LIST))
    outcome = engine.ingest(make_mail(f"Club <{LIST.upper()}>", line, subject="hi", received=clock()))
    assert outcome.code == "ignored" and "club's list" in outcome.detail
    assert len(box.to(LIST)) == before and engine.store.watchers(1) == []


OLIVE = "olive@example.net"


def test_an_observer_who_joins_the_game_gets_its_mail_once_as_a_player(engine, clock, box):
    """Olive follows an open game, then joins it: each public mail came
    twice, once with her seat's reply address and once with her observer's,
    and a move in a reply to the observer's copy proves no seat."""
    from conftest import join
    from test_club_watch import ask, watch

    join(engine, "pure-skill", ALICE)
    join(engine, "pure-skill", BOB)
    watch(engine, clock, box, OLIVE)
    assert [w["address"] for w in engine.store.watchers(1)] == [OLIVE]
    assert ask(engine, clock, OLIVE, "JOIN pure-skill").code == "done"
    confirmation = [m for m in box.to(OLIVE) if "] JOIN " in m["subject"]][-1]
    assert answer(engine, clock, confirmation, "").code == "done"
    assert engine.store.game(1)["state"] == "running"
    count = len(box.to(OLIVE))
    for player, bid in ((ALICE, 3), (BOB, 4), (OLIVE, 5)):
        assert send(engine, clock, player, f"bid {bid}").code == "move"
    results = [m for m in box.to(OLIVE)[count:] if "Round 1 of 13" in m["subject"]]
    assert len(results) == 1 and results[0]["reply_to"] == token_address(
        engine.config.address, engine.table(1).seats[2]["token"]
    )


def test_a_player_whose_address_is_also_a_list_of_the_game_still_plays(engine, clock, box):
    """A keeper who names a player's address among a game's lists (or a
    list as a player) must not make that player's moves vanish."""
    engine.new_game("pure-skill", PLAYERS, announce_to=[CAROL])
    for player, bid in ((ALICE, 3), (BOB, 4), (CAROL, 5)):
        assert send(engine, clock, player, f"bid {bid}").code == "move"
    assert engine.status(1)["phase"]["label"].startswith("Round 2")


EXCHANGE_OOF = {
    "X-Auto-Response-Suppress": "All",
    "X-MS-Exchange-Inbox-Rules-Loop": BOB,
    "Thread-Topic": "Automatic reply",
}


def test_an_exchange_out_of_office_reply_to_table_talk_is_not_relayed(engine, clock, box):
    """Exchange's automatic reply carries no Auto-Submitted: answering a
    relayed message, it was passed on to the writer as the reader's words."""
    start(engine, box)
    send(engine, clock, ALICE, "TELL bob Shall we share the Suns?")
    [to_bob] = talk(box, BOB)
    box.new()
    oof = make_mail(
        BOB,
        "I am out of the office until Monday.",
        to=to_bob["reply_to"],
        subject=f"Automatic reply: {to_bob['subject']}",
        headers=EXCHANGE_OOF,
        received=clock(),
    )
    assert engine.ingest(oof).code == "ignored"
    assert box.new() == []


def test_an_exchange_out_of_office_reply_to_an_observer_s_copy_is_not_answered(engine, clock, box):
    from test_club_watch import watch

    engine.new_game("pure-skill", PLAYERS)
    watch(engine, clock, box, OLIVE)
    box.new()
    headers = {**EXCHANGE_OOF, "X-MS-Exchange-Inbox-Rules-Loop": OLIVE}
    oof = make_mail(OLIVE, "Away.", to=box.to(OLIVE)[-1]["reply_to"], headers=headers, received=clock())
    assert engine.ingest(oof).code == "ignored"
    assert box.new() == []


@pytest.mark.parametrize("headers", [{"X-Auto-Response-Suppress": "All"}, {"X-MS-Exchange-Inbox-Rules-Loop": BOB}])
def test_either_exchange_header_alone_is_a_person_s_mail(engine, clock, box, headers):
    """Outlook puts X-Auto-Response-Suppress on ordinary mail too."""
    engine.new_game("pure-skill", PLAYERS)
    assert send(engine, clock, BOB, "bid 3", headers=headers).code == "move"


_START_SCRIPT = """
import sys
sys.path[:0] = [sys.argv[2], sys.argv[2] + "/tests"]
from pathlib import Path
from conftest import FakeClock, Seeds, join, make_mail
from referee.config import Config
from referee.engine import Engine
from referee.mail.tokens import signup_token, token_address
from referee.store import Store

folder = Path(sys.argv[1])
config = Config(address="referee@example.org", database=folder / "games.db", reminder=None, outage_gap=None)
clock = FakeClock()
engine = Engine(Store(config.database), config, clock, Seeds(b"s" * 64))
for kind in ("bid", "ice"):
    for player in ("alice@example.org", "bob@example.org", "carol@example.org"):
        join(engine, kind, player)
tokens = [signup_token(engine.key, kind, "alice@example.org") for kind in ("bid", "ice")]
to = ", ".join(token_address(config.address, token) for token in tokens)
engine.ingest(make_mail("alice@example.org", "START", to=to, subject="start", received=clock()))
print(engine.store.outbox()[-1]["raw"].decode().split("\\r\\n\\r\\n", 1)[1][:200])  # (the answer: which game)
"""


def test_start_with_two_kinds_sign_up_tokens_acts_the_same_whatever_the_hash_seed(tmp_path):
    """START from a mail naming sign-up tokens of two kinds picked the first
    kind of a frozenset: which game it counted towards depended on
    PYTHONHASHSEED, so the same mail handled again after a restart (a
    restore) could act otherwise."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    said = set()
    for seed in ("1", "2", "3", "4", "5", "6"):
        folder = tmp_path / seed
        folder.mkdir()
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": root}
        done = subprocess.run(
            [sys.executable, "-c", _START_SCRIPT, str(folder), root], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        said.add(done.stdout)
    assert len(said) == 1, said
