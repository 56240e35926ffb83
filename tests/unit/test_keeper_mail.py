"""The keeper's hands by mail (issue 32, item 2): EXTEND, PAUSE, RESUME,
CANCEL, REPLACE, SAY, NEW and a keeper's STATUS, from an address the config
names, proven as a seat is (their private keeper address, their From, and
DKIM's pass where configured), within the caps; each mail answered once.

Played through ``Engine.ingest`` as a keeper lives it: the first mail
without the keeper address, the reply to its answer, the acts on a sealed
game (pure skill) and a turn-based one (Auction, priority cards), and the
games played on to their verified end; forged keeper mail, and strangers'
and players' mail with a keeper's words, change nothing."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from datetime import timedelta

import pytest
from conftest import PLAYERS, Mailbox, answer, join, mails, make_mail, reply, send, to_deadline
from test_keeping import pure as _pure
from test_keeping import turns as _turns
from test_runner import deliver, make_runner
from test_runner import maildir as _maildir

from referee.desk import COMMANDS, Who
from referee.engine import Engine
from referee.engine.keeping import SHELL
from referee.mail.tokens import keeper_token, token_address
from referee.record import verify
from referee.site.public import game_record
from referee.timeutil import from_iso

ALICE, BOB, CAROL = PLAYERS
maildir = _maildir  # the fixture
KEEPER = "keeper@example.org"
pure, turns = _pure, _turns  # the fixtures: a sealed game, a turn-based one
STRANGER = "mallory@example.net"
TRUSTED = "mx.example.org"


@pytest.fixture
def config(config):
    return replace(config, keepers=(KEEPER,))


def keeper_address(engine: Engine, address: str = KEEPER) -> str:
    return token_address(engine.config.address, keeper_token(engine.key, address))


def order(engine: Engine, clock, body: str, sender: str = KEEPER, **kwargs):
    """A keeper's mail to their keeper address (from ``sender``), received now."""
    kwargs.setdefault("to", keeper_address(engine))
    kwargs.setdefault("subject", "Re: [keeper] orders")
    return engine.ingest(make_mail(sender, body, received=clock(), **kwargs))


def answers_to(engine: Engine, address: str = KEEPER) -> list[dict]:
    return mails(engine, address)


def last_answer(engine: Engine, address: str = KEEPER) -> str:
    return answers_to(engine, address)[-1]["body"].split("\n-- \n")[0]


def play_out(engine: Engine, clock, game: int = 1) -> None:
    for _ in range(2000):
        if engine.status(game)["state"] != "running":
            return
        to_deadline(engine, clock, game)
        engine.tick()
    raise AssertionError("the game did not end")


def verified(engine: Engine, game: int = 1):
    verdict = verify(game_record(engine.table(game)))
    assert verdict.ok, verdict
    return verdict


# -- the keeper address --------------------------------------------------------------------


def test_a_keepers_first_mail_without_the_keeper_address_gets_it_and_changes_nothing(pure, clock):
    deadline = pure.status(1)["phase"]["deadline"]
    outcome = pure.ingest(make_mail(KEEPER, "EXTEND 1 2d Bob is away", subject="orders", received=clock()))
    assert (outcome.code, outcome.detail) == (
        "refused",
        f"a keeper's commands without the keeper's reply token; {KEEPER} was sent it",
    )
    assert pure.status(1)["phase"]["deadline"] == deadline and pure.store.interventions(1) == []
    [notice] = answers_to(pure)
    private = keeper_address(pure)
    assert notice["reply_to"] == private and private in notice["body"]
    assert "Bob is away" not in notice["body"] and "EXTEND" not in notice["body"]  # a stranger's words, perhaps
    # The keeper replies to it, as a mail client does: that proves the keeper.
    box = Mailbox(pure)
    box.new()
    outcome = answer(pure, clock, {**notice, "to": KEEPER}, "EXTEND 1 2d Bob is away\n\n> quoted notice")
    assert outcome.code == "done" and outcome.keeper
    assert from_iso(pure.status(1)["phase"]["deadline"]) - from_iso(deadline) == timedelta(days=2)
    [intervention] = pure.store.interventions(1)
    assert (intervention["by"], intervention["why"]) == (KEEPER, "Bob is away")
    new = box.new()
    assert sorted(m["to"] for m in new) == sorted([*PLAYERS, KEEPER])  # the players told, the keeper answered once
    reply_ = next(m for m in new if m["to"] == KEEPER)
    assert reply_["reply_to"] == private and f"[keeper {keeper_token(pure.key, KEEPER)}]" in reply_["subject"]
    assert "Done: game 1 Round 1 of 13: deadline moved from" in reply_["body"]


def test_a_keepers_plain_help_is_anyones_and_names_no_keeper_command(pure, clock):
    assert pure.ingest(make_mail(KEEPER, "help", subject="hello", received=clock())).code == "done"
    body = last_answer(pure)
    assert "EXTEND" not in body and "keeper" not in body


def test_the_keeper_token_in_the_subject_alone_proves_the_keeper_too(pure, clock):
    tag = f"Re: [keeper {keeper_token(pure.key, KEEPER)}] orders"
    assert order(pure, clock, "RESUME 1", to=pure.config.address, subject=tag).code == "refused"
    assert "Game 1 is not paused." in last_answer(pure)  # read as the keeper's, and refused by the engine


# -- each command ------------------------------------------------------------------------------


def test_extend_pause_and_resume_by_mail_move_the_deadline_and_the_paused_game_crosses_its_deadline(pure, clock):
    deadline = from_iso(pure.status(1)["phase"]["deadline"])
    assert order(pure, clock, "EXTEND game 1 12h the wedding").code == "done"
    assert from_iso(pure.status(1)["phase"]["deadline"]) == deadline + timedelta(hours=12)
    assert order(pure, clock, "PAUSE 1 holidays").code == "done"
    assert "Done: game 1 paused until" in last_answer(pure)
    assert send(pure, clock, ALICE, "bid 5").code == "move"
    clock.advance(days=10)  # far past the deadline: no random move while paused
    assert pure.tick() == []
    assert pure.store.moves(1) and {m["seat"] for m in pure.store.moves(1)} == {0}
    assert order(pure, clock, "RESUME 1 back from holidays").code == "done"
    moved = from_iso(pure.status(1)["phase"]["deadline"])
    assert moved - deadline == timedelta(hours=12, days=10)
    assert [i["act"] for i in pure.store.interventions(1)] == ["extend", "pause", "resume"]
    play_out(pure, clock)
    verified(pure)


def test_pause_for_a_time_and_until_a_time(pure, clock):
    assert order(pure, clock, "PAUSE 1 for 2d").code == "done"
    assert from_iso(pure.store.paused()[1]["detail"]["until"]) == clock() + timedelta(days=2)
    order(pure, clock, "RESUME 1")
    assert order(pure, clock, "PAUSE 1 until 2026-11-25T00:00:00Z snow").code == "done"
    pause = pure.store.paused()[1]
    assert (pause["detail"]["until"], pause["why"]) == ("2026-11-25T00:00:00Z", "snow")
    order(pure, clock, "RESUME 1")
    assert order(pure, clock, "PAUSE 1 until 2026-11-23T18:00").code == "done"  # no offset: UTC
    assert pure.store.paused()[1]["detail"]["until"] == "2026-11-23T18:00:00Z"
    assert order(pure, clock, "PAUSE 1 until Friday").code == "refused"


def test_the_caps_bind_a_keeper_by_mail_and_there_is_no_force(pure, clock):
    capped = Engine(pure.store, replace(pure.config, most_pause=timedelta(days=3)), clock)
    assert order(capped, clock, "EXTEND 1 8d").code == "refused"
    said = last_answer(capped)
    assert "longer than the longest allowed (7 days" in said and "force" not in said
    assert order(capped, clock, "EXTEND 1 8d --force").code == "refused"
    assert order(capped, clock, "PAUSE 1 4d").code == "refused"
    assert "may be paused for 3 days more" in last_answer(capped) and "force" not in last_answer(capped)
    assert capped.store.interventions(1) == []
    assert order(capped, clock, "PAUSE 1").code == "done"  # a pause without a time ends at the cap
    assert from_iso(capped.store.paused()[1]["detail"]["until"]) == clock() + timedelta(days=3)


def test_cancel_by_mail_needs_a_reason_ends_the_game_and_it_verifies(pure, clock):
    assert order(pure, clock, "CANCEL 1").code == "refused"
    assert "Write it as CANCEL <game> <why>" in last_answer(pure)
    assert pure.status(1)["state"] == "running"
    assert order(pure, clock, "CANCEL 1 the club closed").code == "done"
    status = pure.status(1)
    assert status["state"] == "finished" and status["winner"] is None and status["seed"]
    assert "cancelled: the club closed" in verified(pure).message
    assert order(pure, clock, "EXTEND 1 1d").code == "refused"
    assert "Game 1 has ended." in last_answer(pure)


def test_replace_by_mail_in_a_turn_based_game_and_the_newcomer_plays_on(turns, clock):
    box = Mailbox(turns)
    box.new()
    assert order(turns, clock, "REPLACE 1 bob@example.org <dora@example.net> Bob moved abroad").code == "done"
    assert "Done: game 1: dora@example.net plays seat 2 (was bob@example.org)." in last_answer(turns)
    told = {m["to"] for m in box.new()}
    assert {BOB, "dora@example.net", KEEPER} <= told
    assert turns.table(1).seat_of("dora@example.net") == 1
    turns.resign(1, CAROL)
    assert order(turns, clock, "REPLACE 1 bot 3 erin@example.net").code == "done"
    order(turns, clock, "STATUS 1")
    acts = last_answer(turns).split("The keepers' acts:\n")[1]
    assert f", {KEEPER}: replace, seat 2 to dora@example.net from bob@example.org (Bob moved abroad)\n" in acts
    assert f", {KEEPER}: replace, seat 3 to erin@example.net from carol@example.org\n" in acts
    play_out(turns, clock)
    verified(turns)


def test_say_by_mail_to_everyone_one_seat_and_in_lines_below_up_to_end(pure, clock):
    box = Mailbox(pure)
    box.new()
    long_line = "Round 2 starts late: " + "the server moves on Sunday, " * 10 + "sorry."
    assert order(pure, clock, f"SAY 1 {long_line}").code == "done"
    said = box.new()
    assert sorted(m["to"] for m in said) == sorted([*PLAYERS, KEEPER])
    assert all(long_line in " ".join(m["body"].split()) for m in said if m["to"] != KEEPER)  # whole, not cut
    body = "SAY 1 to carol@example.org\nPlease answer your mail, Carol.\nThe others wait.\nEND\nCANCEL 1 no"
    outcome = order(pure, clock, body)
    assert outcome.code == "done" and outcome.detail == "line 1: done"  # the lines below were the words
    said = box.new()
    assert sorted(m["to"] for m in said) == [CAROL, KEEPER]
    assert "Please answer your mail, Carol.\nThe others wait." in said[0]["body"] + said[1]["body"]
    assert pure.status(1)["state"] == "running"
    assert order(pure, clock, "SAY 1 to 2 Bob, your move please").code == "done"
    assert [m["to"] for m in box.new()] == [BOB, KEEPER]
    assert [i["detail"]["seat"] for i in pure.store.interventions(1)] == [None, 2, 1]
    order(pure, clock, "STATUS 1")
    assert re.findall(r": say to (.*)$", last_answer(pure), re.M) == ["everyone", "seat 3", "seat 2"]


def test_new_by_mail_makes_a_game_that_plays_to_a_verified_end(engine, clock):
    box = Mailbox(engine)
    body = 'NEW priority alice@example.org bob@example.org bots=1 deadline=2d turn_limit=2 name="Friday night"'
    outcome = order(engine, clock, body)
    assert outcome.code == "done" and outcome.keeper
    assert "Done: game 1: Auction (priority cards), 3 seats, begun; its players were told." in last_answer(engine)
    status = engine.status(1)
    assert (status["kind"], status["name"], status["state"]) == ("priority", "Friday night", "running")
    assert [p["address"] for p in status["players"]][:2] == [ALICE, BOB] and status["players"][2]["bot"]
    assert {ALICE, BOB} <= {m["to"] for m in box.new()}
    assert order(engine, clock, "NEW priority alice@example.org turn_limit=99").code == "refused"
    assert order(engine, clock, "NEW chess alice@example.org bob@example.org").code == "refused"
    assert order(engine, clock, "NEW priority alice@example.org bob@example.org deadline=soon").code == "refused"
    assert "'soon' is not a duration" in last_answer(engine)
    assert len(engine.store.games()) == 1
    play_out(engine, clock)
    verified(engine)


def test_one_mail_of_many_acts_gets_one_answer_line_by_line(pure, clock):
    box = Mailbox(pure)
    box.new()
    outcome = order(pure, clock, "EXTEND 1 1d\nEXTEND 1 9d\nPAUSE 1\nSTATUS")
    assert outcome.detail == "line 1: done; line 2: refused; line 3: done; line 4: done"
    [mine] = [m for m in box.new() if m["to"] == KEEPER]
    assert re.findall(r"^> (.*)$", mine["body"], re.M) == ["EXTEND 1 1d", "EXTEND 1 9d", "PAUSE 1", "STATUS"]


# -- the keeper's STATUS and HELP --------------------------------------------------------------------


def test_a_keepers_status_lists_every_game_and_health_and_nothing_private(turns, clock):
    turns.new_game("pure-skill", PLAYERS)  # game 2, sealed
    join(turns, "bid", "dave@example.net")  # game 3, open for sign-up
    turns.new_game("pure-skill", PLAYERS)
    order(turns, clock, "CANCEL 4 a test")
    assert send(turns, clock, ALICE, "bid 9", game=2).code == "move"  # sealed: nobody may see it yet
    colours = {
        m["recipients"][0]: re.search(r"Your colour(?: is|:) (\w+)", m["body"])[1]
        for m in mails(turns)
        if m["game_id"] == 1 and "Your colour" in m["body"]
    }
    assert len(set(colours.values())) == 3  # each seat's secret
    assert order(turns, clock, "STATUS").code == "done"
    body = last_answer(turns)
    assert "Game 1, priority: running" in body and "Game 2, pure-skill: running" in body
    assert "waiting for: bob@example.org, carol@example.org" in body  # who moved in game 2, never what
    assert "Game 3, bid: open, 1 of 4 signed up" in body
    assert "Finished:\nGame 4, pure-skill: finished (cancelled: a test)\n" in body
    assert "health: ok" in body and "outbox: " in body and "quarantined: 0 message(s)" in body
    for game in ("", " 1", " 2"):
        order(turns, clock, f"STATUS{game}")
        body = last_answer(turns)
        assert not re.search(r"(?<![\w.:-])9(?![\w.:-])", body), body  # Alice's sealed bid
        assert "colour" not in body.lower() and not any(re.search(rf"\b{c}\b", body) for c in colours.values())
    assert "seat 1: alice@example.org" in last_answer(turns)
    order(turns, clock, "STATUS 42")
    assert "There is no game 42." in last_answer(turns)


def test_a_players_status_is_still_her_own(pure, clock):
    pure.ingest(reply(pure, ALICE, "status", received=clock()))
    assert "Your hand" in mails(pure, ALICE)[-1]["body"]


def test_a_keepers_help_lists_every_keepers_command_of_the_table(pure, clock):
    assert order(pure, clock, "help").code == "done"
    body = last_answer(pure)
    for entry in COMMANDS.entries:
        if entry.for_keepers:
            assert f"  {entry.keeper_usage}\n" in body
            assert " ".join((entry.keeper_help or entry.help).split()) in " ".join(body.split())
        if entry.example:
            assert f"e.g. {entry.example}" in body
    assert "one extension is 7 days at most, and a game's pauses 30 days in all" in " ".join(body.split())


# -- forged keeper mail, and others' keeper words --------------------------------------------------


def test_a_keeper_token_from_another_address_changes_nothing_and_the_keeper_is_told(pure, clock):
    outcome = order(pure, clock, "CANCEL 1 mutiny", sender=STRANGER)
    assert (outcome.code, outcome.detail) == ("refused", f"a keeper token used from another address; {KEEPER} was told")
    assert pure.status(1)["state"] == "running" and pure.store.interventions(1) == []
    [notice] = answers_to(pure)
    assert STRANGER in notice["body"] and "private keeper address" in notice["body"] and "mutiny" not in notice["body"]
    assert notice["reply_to"] == "None" and keeper_token(pure.key, KEEPER) not in notice["raw"].decode()
    assert mails(pure, STRANGER) == []
    # A reply to the notice is not read, whatever it says.
    assert answer(pure, clock, {**notice, "to": KEEPER}, "CANCEL 1 really").code == "refused"
    assert pure.status(1)["state"] == "running"


def test_with_dkim_configured_a_keepers_mail_needs_its_pass(pure, clock):
    strict = Engine(pure.store, replace(pure.config, dkim_authserv_id=TRUSTED), clock)
    failed = {"Authentication-Results": f"{TRUSTED}; dkim=fail header.d=example.org"}
    outcome = order(strict, clock, "EXTEND 1 1d", headers=failed)
    assert (outcome.code, outcome.detail) == (
        "refused",
        f"no passing DKIM signature of the sender's domain; {KEEPER} was told",
    )
    assert strict.store.interventions(1) == [] and "DKIM" in last_answer(strict)
    passed = {"Authentication-Results": f"{TRUSTED}; dkim=pass header.d=example.org"}
    assert order(strict, clock, "EXTEND 1 1d", headers=passed).code == "done"


def test_a_keepers_word_from_a_stranger_or_a_player_is_refused_as_a_keepers(pure, clock):
    for line in ("EXTEND 1 2d", "pause 1", "CANCEL game 1 bye", "NEW pure-skill a@example.org"):
        assert pure.ingest(make_mail(STRANGER, line, subject="hi", received=clock())).code == "refused"
        word = line.split()[0].upper()
        assert f"> {word}\nNot done: {word} is a keeper's command" in last_answer(pure, STRANGER)
    assert pure.ingest(reply(pure, ALICE, "PAUSE 1", received=clock())).code == "refused"
    assert "PAUSE is a keeper's command" in last_answer(pure, ALICE)
    assert pure.store.interventions(1) == [] and len(pure.store.games()) == 1
    # A player's From without a token: as any command of hers, a forgery notice.
    outcome = pure.ingest(make_mail(BOB, "EXTEND 1 2d", subject="hi", received=clock()))
    assert outcome.detail == f"no valid reply token; {BOB} was told"


def test_the_keepers_words_do_not_change_how_a_players_lines_read(pure, clock):
    """The keeper's words are common words: a player's sentence or move that
    starts with one reads as before (the players' vocabulary has none of them)."""
    for line in ("New to this: how do I join?", "Say, is it my turn?", "pause", "Cancel that, sorry", "extend?"):
        assert COMMANDS.read(line).word == "" and COMMANDS.keeper_word(line) == ""
        assert COMMANDS.who(line) is Who.PLAYER  # as any line that is no command
    assert COMMANDS.read("status please").word == "status"
    assert COMMANDS.read("EXTEND 1 2d", keeper=True).word == "extend"
    assert COMMANDS.read("I'd like to extend 1 2d", keeper=True).word == ""  # a keeper's words only said first
    assert send(pure, clock, ALICE, "Say, bid 5 please").code == "refused"  # as before: no move, no command
    assert "is neither a command nor a move" in last_answer(pure, ALICE)
    assert send(pure, clock, ALICE, "say 5").code == "refused"  # a keeper's, but the seat's moves are listed too
    assert "Moves you can make now: bid A, bid 2" in last_answer(pure, ALICE)
    assert send(pure, clock, ALICE, "I bid 5").code == "move"
    assert pure.ingest(make_mail(STRANGER, "New to this, how do I join?", subject="hi", received=clock())).code == (
        "refused"
    )
    assert "keeper" not in last_answer(pure, STRANGER)


def test_a_pass_that_reads_a_keepers_resume_does_what_falls_due_after_it_before_the_next_mail(config, clock, maildir):
    """Game 1 was paused a minute before its deadline, Carol's bid in.  One
    pass reads the keeper's RESUME (the deadline now a minute after it) and,
    received after that, Carol's next bid: the runner does what fell due in
    between first (round 1 resolved, Alice's and Bob's bids at random, at
    its new deadline; round 2 opened), so her bid counts in round 2, as it
    would have read apart."""
    engine, runner = make_runner(config, clock, maildir)
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=1))
    asyncio.run(runner.once())
    assert send(engine, clock, CAROL, "bid 7").code == "move"
    clock.advance(minutes=59)
    engine.pause(1, SHELL)
    resumed, bid = clock() + timedelta(hours=1), clock() + timedelta(hours=1, minutes=2)
    deliver(maildir, make_mail(KEEPER, "RESUME 1", to=keeper_address(engine), received=resumed), resumed)
    deliver(maildir, reply(engine, CAROL, "bid 5", received=bid), bid)
    clock.advance(hours=1, minutes=3)
    asyncio.run(runner.once())
    assert [(m["phase"], m["seat"], m["source"]) for m in engine.store.moves(1)] == [
        (1, 2, "mail"),
        (1, 0, "random"),
        (1, 1, "random"),
        (2, 2, "mail"),
    ]
