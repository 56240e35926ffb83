"""The keeper by mail at its edges (issue 32; found by a review): each test
a case a keeper, a player or an attacker meets."""

from __future__ import annotations

from conftest import PLAYERS, mails, make_mail, reply
from test_keeper_mail import KEEPER, keeper_address, last_answer, order
from test_keeper_mail import config as _config
from test_keeper_mail import pure as _pure
from test_restore import SEALED, Club
from test_runner import deliver
from test_runner import maildir as _maildir

ALICE, BOB, CAROL = PLAYERS
maildir = _maildir  # the fixture
config, pure = _config, _pure  # the fixtures: a keeper configured, a sealed game


# A keeper's NEW by mail draws a fresh random seed, so after `referee restore` the mail handled again makes a
# different game (JOIN's seed comes from the key and the mail for exactly this): the players keep the start mail
# with the old commitment (not sent again: "restored"), and the seed revealed at the end will not match it.
def test_a_game_made_by_new_by_mail_is_the_same_game_after_a_restore(config, clock, maildir, tmp_path):
    club = Club(config, clock, maildir)
    club.run()
    assert club.cli(tmp_path, "backup", str(tmp_path / "backup.db")) == 0
    clock.advance(minutes=5)
    orders = "NEW pure-skill " + " ".join(SEALED) + " deadline=1d"
    deliver(maildir, make_mail(KEEPER, orders, to=keeper_address(club.engine), received=clock()), clock())
    clock.advance(minutes=1)
    club.run()
    told = club.engine.store.game(1)["seed_commitment"]  # in the start mail the players have
    club.close()
    assert club.cli(tmp_path, "restore", str(tmp_path / "backup.db")) == 0
    club.open()
    club.run()
    assert club.engine.store.game(1)["seed_commitment"] == told


# A keeper's STATUS by mail (said to show "never a hand, nor a move before its phase is resolved") lists each
# mail refused for good by its subject: a reply to a seat carries the seat's private reply token, and the
# player's own subject, here her sealed bid of the open round.  The keepers' health mail leaves subjects out.
def test_a_keepers_status_shows_no_seats_reply_token_nor_a_sealed_bid(pure, clock):
    token = pure.table(1).seats[0]["token"]
    assert pure.ingest(reply(pure, ALICE, "", subject="bid 9", received=clock())).code == "move"
    receipt = mails(pure, ALICE)[-1]
    pure.store.fail_mail(receipt["id"], "550 5.2.2 mailbox full")  # her server refuses it for good
    for status in ("STATUS", "STATUS 1"):
        assert order(pure, clock, status).code == "done"
        body = last_answer(pure)
        assert token not in body, status
        assert "bid 9" not in body, status


# SAY alone with its words below: when the SAY line itself is refused before its words are taken (no game
# number, "to" with no seat), the words below are read as the keeper's commands; a sentence that starts
# "Pause 1 ..." pauses game 1.  The docs: the lines below "are not read as commands".
def test_the_words_below_a_say_are_never_carried_out_as_commands(pure, clock):
    orders = "SAY everyone\nHello all,\nPause 1 starts on Friday, for the holidays.\nEND"
    order(pure, clock, orders)
    assert pure.store.paused() == {} and pure.store.interventions(1) == []


# A line is cut at 200 characters (MAX_LINE) with "…" before a keeper's NEW reads it; cut in the last
# address's domain it is still "an address" (non-ASCII is allowed), so the game begins with a seat at
# erin@example.o… that no mail reaches, and the keeper is told it is done.  SAY takes its line whole.
def test_new_by_mail_never_seats_an_address_cut_short(engine, clock):
    head = "NEW bluff " + " ".join(f"{n}.longname@members.bridge-club.example.org" for n in ("alice", "bob", "carol"))
    orders = (
        head + " dave" + "x" * (200 - len(head + " dave@example.org erin@example.o")) + "@example.org erin@example.org"
    )
    order(engine, clock, orders)
    seated = [p["address"] for game in engine.store.games() for p in engine.status(game["id"])["players"]]
    assert "erin@example.o…" not in seated and all(address.isascii() for address in seated)


# NEW (and REPLACE) by mail seat the referee's own address: its mail to that seat comes back to its inbox
# and is dropped as "our own mail", so the seat moves at random at every deadline and nobody is told.
def test_new_by_mail_refuses_the_referees_own_address(engine, clock):
    order(engine, clock, f"NEW priority {ALICE} {BOB} {engine.config.address}")
    assert engine.store.games() == []
    assert "Done" not in last_answer(engine)
