"""Review of issue 34 played as a club of people does: what each person
reads, and what they can do with what they read."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import PLAYERS, Mailbox, answer, make_mail, send, to_deadline

from referee.engine import Engine
from referee.rules.api import Press
from referee.store import Store

ALICE, BOB, CAROL = PLAYERS


@pytest.fixture
def box(engine: Engine) -> Mailbox:
    return Mailbox(engine)


def write(engine: Engine, clock, sender: str, body: str):
    """A fresh mail to the referee's plain address: no reply token."""
    return engine.ingest(make_mail(sender, body, subject="Hello referee", received=clock()))


def said(box: Mailbox, to: str) -> str:
    return " ".join(box.to(to)[-1]["body"].split())


def test_tell_names_a_player_as_the_writer_s_own_game_mail_shows_them_by_address(engine, clock, box):
    engine.new_game("bid", PLAYERS)
    assert f"2. {BOB}" in box.to(ALICE)[0]["body"]  # how alice's start mail names bob
    assert send(engine, clock, ALICE, f"TELL {BOB} Shall we share the Suns?").code == "done"
    assert send(engine, clock, ALICE, f"TELL <{CAROL.upper()}> hello").code == "done"
    [to_bob] = [m for m in box.to(BOB) if "writes to you" in m["subject"]]
    assert "Shall we share the Suns?" in to_bob["body"] and ALICE not in to_bob["body"]
    assert [m for m in box.to(CAROL) if "writes to you" in m["subject"]]
    assert send(engine, clock, ALICE, f"TELL {ALICE} hi").code == "refused"
    assert "That is your own seat" in said(box, ALICE)


def test_start_sent_after_the_seats_filled_says_the_game_has_begun_not_join_it_first(engine, clock, box):
    people = [f"{name}@example.net" for name in ("ann", "ben", "cat")]
    confirmations = {}
    for person in people:
        write(engine, clock, person, "JOIN pure-skill")
        confirmations[person] = [m for m in box.to(person) if " JOIN " in m["subject"]][-1]
        assert answer(engine, clock, confirmations[person], "").code == "done"
    assert engine.status(1)["state"] == "running"  # three seats, three sign-ups: full
    assert answer(engine, clock, confirmations[people[0]], "START").code == "refused"
    told = said(box, people[0])
    assert "Game 1 (Game of Pure Skill) has begun already, and you play in it" in told
    assert "JOIN it first" not in told
    # someone signed up for nothing still hears JOIN it first
    assert write(engine, clock, "dan@example.net", "START").code == "refused"
    assert "JOIN it first" in said(box, "dan@example.net")


def confirmation(box: Mailbox, address: str) -> dict:
    return [m for m in box.to(address) if " JOIN " in m["subject"] and not m["subject"].startswith("Re:")][-1]


def signed_up(engine: Engine) -> list[str]:
    return [row["address"] for row in engine.store.signups(1)] if engine.store.game(1) else []


@pytest.mark.parametrize(
    "reply",
    ["Yes please, sign me up!\n\nThanks, Fay", "Yes\nFay", "Count me in!\n-- \nFay Smith\nSent from my phone"],
)
def test_a_yes_signed_with_a_name_confirms_a_sign_up(engine, clock, box, reply):
    write(engine, clock, "fay@example.net", "JOIN bid")
    assert answer(engine, clock, confirmation(box, "fay@example.net"), reply).code == "done"
    assert signed_up(engine) == ["fay@example.net"]
    assert "You have signed up for game 1" in said(box, "fay@example.net")


@pytest.mark.parametrize("reply", ["Yes\nNot me", "Not me!\nAnn", "No thanks\nAnn", "Who are you?\nAnn"])
def test_a_reply_that_says_no_or_asks_signs_nobody_up(engine, clock, box, reply):
    write(engine, clock, "ann@example.net", "JOIN bid")
    answer(engine, clock, confirmation(box, "ann@example.net"), reply)
    assert signed_up(engine) == []


def test_start_in_the_reply_to_the_confirmation_signs_up_and_asks_to_start(engine, clock, box):
    people = ["ann@example.net", "ben@example.net", "cat@example.net"]
    for person in people:
        write(engine, clock, person, "JOIN bid")
        assert answer(engine, clock, confirmation(box, person), "START").code == "done"
    assert signed_up(engine) == people
    assert engine.status(1)["state"] == "running"  # three of Bid!'s four seats, all asked to start
    assert "has sent START: it starts now" in said(box, "cat@example.net") or any(
        "everyone signed up sent START" in " ".join(m["body"].split()) for m in box.to("cat@example.net")
    )


def test_start_and_leave_in_a_reply_to_the_you_have_signed_up_answer_work(engine, clock, box):
    """The newest mail a person has is the answer "You have signed up ...": replying START or LEAVE to it
    was refused as "You are not signed up for a game of any kind", which they were."""
    write(engine, clock, "dan@example.net", "JOIN bid")
    answer(engine, clock, confirmation(box, "dan@example.net"), "")
    signed = box.to("dan@example.net")[-1]
    assert "You have signed up for game 1" in " ".join(signed["body"].split())
    assert answer(engine, clock, signed, "START").code == "done"
    assert engine.store.signups(1)[0]["start"] is not None
    assert answer(engine, clock, box.to("dan@example.net")[-1], "LEAVE").code == "done"
    assert signed_up(engine) == []
    assert "withdrawn" in said(box, "dan@example.net")


def test_standings_explain_the_columns_they_show_and_no_other(engine, clock, box):
    engine.new_game("pure-skill", PLAYERS)
    while engine.status(1)["state"] == "running":
        to_deadline(engine, clock)
        engine.tick()
    write(engine, clock, "zed@example.net", "STANDINGS pure-skill")
    one = said(box, "zed@example.net")
    assert "Place " in one and "Placing" not in one and "Left" not in one
    write(engine, clock, "zed@example.net", "STANDINGS")
    every = said(box, "zed@example.net")
    assert "Placing: 100% is first" in every and "Left: games the player left" in every
    assert "count.STANDINGS" not in every and "STANDINGS with a kind of game (pure-skill)" in every


def test_an_observer_reads_how_much_mail_they_get_once_in_words(engine, clock, box):
    engine.new_game("bid", PLAYERS)
    write(engine, clock, "olive@example.net", "WATCH 1 DIGEST")
    offer = [m for m in box.to("olive@example.net") if "Follow game" in m["subject"]][-1]
    answer(engine, clock, offer, "")
    accepted = said(box, "olive@example.net")
    assert "you get one mail a day with what happened in the game" in accepted and "at digest" not in accepted
    while engine.status(1)["state"] == "running":
        to_deadline(engine, clock)
        engine.tick()
    daily = [m for m in box.to("olive@example.net") if "What happened since" in m["subject"]]
    assert daily
    for mail in daily:
        assert mail["body"].count("NOTIFY EVERY") == 1, mail["body"]


@pytest.mark.parametrize(
    ("kind", "press", "says"),
    [
        ("priority", None, '"TELL 2 your words" in a reply passes them on'),
        ("bid", "grey", "GREY after the name or ALL sends them unsigned"),
        ("pure-skill", None, "Table talk: this game relays none (Game of Pure Skill's rule 7"),
    ],
)
def test_a_player_s_start_mail_says_how_to_talk_to_the_table_and_a_list_s_copy_does_not(
    config, clock, seeds, kind, press, says
):
    engine = Engine(Store(config.database), replace(config, announce_to=("club@lists.example.org",)), clock, seeds)
    box = Mailbox(engine)
    engine.new_game(kind, PLAYERS, press=Press(press) if press else None)
    start = " ".join(box.to(ALICE)[0]["body"].split())
    assert says in start
    assert "by mail to each other" not in start
    listed = " ".join(box.to("club@lists.example.org")[0]["body"].split())
    assert "Table talk" not in listed and "\n\n\n" not in box.to("club@lists.example.org")[0]["body"]


def test_unwatch_after_the_game_ended_says_it_is_over_not_that_they_never_followed_it(engine, clock, box):
    engine.new_game("pure-skill", PLAYERS)
    write(engine, clock, "olive@example.net", "WATCH 1")
    answer(engine, clock, [m for m in box.to("olive@example.net") if "Follow game" in m["subject"]][-1], "")
    while engine.status(1)["state"] == "running":
        to_deadline(engine, clock)
        engine.tick()
    assert any("Game over" in m["subject"] for m in box.to("olive@example.net"))
    write(engine, clock, "olive@example.net", "UNWATCH 1")
    told = said(box, "olive@example.net")
    assert "Game 1 is over: the referee sends nothing more about it" in told
    assert "does not follow" not in told


def test_the_game_over_mail_asks_nobody_to_reply_to_play(config, clock, seeds):
    engine = Engine(Store(config.database), replace(config, site_url="https://games.example.org/r"), clock, seeds)
    box = Mailbox(engine)
    engine.new_game("pure-skill", PLAYERS)
    while engine.status(1)["state"] == "running":
        to_deadline(engine, clock)
        engine.tick()
    [over] = [m for m in box.to(ALICE) if "Game over" in m["subject"]]
    assert "Reply to this mail to play" not in over["body"]
    assert "The game is over: there are no more moves to make." in over["body"]
    assert "checks it once the game is over" not in over["body"]
    assert "Its record (`referee verify` checks it): https://games.example.org/r/games/1/record.json" in over["body"]
    running = box.to(ALICE)[0]["body"]  # the start: still to be played
    assert "Reply to this mail to play" in running and "checks it once the game is over" in running
