"""Sign-ups that start (issue 34, item 1): JOIN with seats and options, a
game that starts when its seats are full, when everyone signed up sends
START, or when it has had its least players for the sign-up window; people
beyond the seats on standby; a confirmation that works however people
reply to it, and never left unsaid by the cap on answers.

Played as people live it: every step by mail through ``ingest``, the clock
moved by hand."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from conftest import Mailbox, answer, make_mail
from test_keeping import play_out

from referee.config import Config
from referee.engine import Engine
from referee.record import verify
from referee.site.public import game_record
from referee.store import Store

ANN, BEN, CAT, DAN, EVE, FAY = (f"{name}@example.net" for name in ("ann", "ben", "cat", "dan", "eve", "fay"))


def write(engine: Engine, clock, sender: str, body: str):
    """A fresh mail to the referee's plain address: no reply token."""
    return engine.ingest(make_mail(sender, body, subject="Hello referee", received=clock()))


def confirmation(box: Mailbox, address: str) -> dict:
    """The newest sign-up confirmation sent to ``address``."""
    found = [m for m in box.to(address) if " JOIN " in m["subject"] and not m["subject"].startswith("Re:")]
    assert found, [m["subject"] for m in box.to(address)]
    return found[-1]


def joins(engine: Engine, clock, box: Mailbox, address: str, line: str, reply: str = "") -> dict:
    """``address`` sends ``line`` (a JOIN) and replies to the confirmation as
    a mail client does (its subject, In-Reply-To), writing ``reply``; returns
    the referee's answer to that reply."""
    assert write(engine, clock, address, line).code == "done"
    assert answer(engine, clock, confirmation(box, address), reply).code == "done"
    return box.to(address)[-1]


def flat(text: str) -> str:
    return " ".join(text.split())


def started_mail(box: Mailbox, address: str) -> dict:
    [mail] = [m for m in box.to(address) if " begins" in m["subject"]]
    return mail


def status(engine: Engine, game: int = 1) -> dict:
    return engine.status(game)


def players(engine: Engine, game: int = 1) -> list[str]:
    return [p["address"] for p in engine.status(game)["players"]]


# -- the two games the issue names -------------------------------------------------


def test_a_five_player_auction_starts_when_everyone_signed_up_sends_start(engine, clock):
    box = Mailbox(engine)
    for address in (ANN, BEN, CAT, DAN, EVE):
        said = joins(engine, clock, box, address, "JOIN priority")
        assert "You have signed up for game 1" in flat(said["body"])
        clock.advance(minutes=5)
    assert status(engine)["state"] == "open" and status(engine)["seats_wanted"] == 8  # the kind's most
    for address in (ANN, BEN, CAT, DAN):
        answer(engine, clock, confirmation(box, address), "START")
        told = flat(box.to(address)[-1]["body"])
        assert "It starts when everyone signed up has sent START" in told
        assert "eve" in told.split("still to send it:")[1]  # named as the game will name her, never by address
        assert EVE not in told
    assert status(engine)["state"] == "open"
    answer(engine, clock, confirmation(box, EVE), "Start")
    assert "has sent START: it starts now" in flat(box.to(EVE)[-1]["body"])
    assert status(engine)["state"] == "running"
    assert players(engine) == [ANN, BEN, CAT, DAN, EVE]  # five seats, no bots
    assert engine.table(1).rules.title.startswith("Auction")
    for address in (ANN, BEN, CAT, DAN, EVE):
        body = flat(started_mail(box, address)["body"])
        assert "Your sign-up for game 1 (Auction (priority cards)) is confirmed" in body
        assert "everyone signed up sent START" in body
    play_out(engine, clock)
    published = game_record(engine.table(1))
    assert len(published["players"]) == 5
    assert verify(published).ok, verify(published)


def test_a_three_player_bid_starts_when_its_sign_up_window_has_passed(engine, clock):
    box = Mailbox(engine)
    for address in (ANN, BEN):
        joins(engine, clock, box, address, "JOIN bid")
    clock.advance(hours=1)
    joins(engine, clock, box, CAT, "JOIN bid")  # the third: Bid!'s least
    reached = clock()
    window = engine.config.signup_window
    assert window == timedelta(days=2)
    assert reached + window in engine.timers.next_due()  # serve wakes for it
    clock.advance(days=1)
    engine.tick()
    assert status(engine)["state"] == "open"
    clock.advance(seconds=(reached + window - clock()).total_seconds())
    engine.tick()
    assert status(engine)["state"] == "running"
    assert players(engine) == [ANN, BEN, CAT]  # three of the four seats it wanted, no bot
    assert engine.table(1).open_phase["opened_at"] == (reached + window).strftime("%Y-%m-%dT%H:%M:%SZ")
    for address in (ANN, BEN, CAT):
        body = flat(started_mail(box, address)["body"])
        assert "starts now with 3 players: it had at least the players it needs for 2 days" in body
    assert reached + window not in engine.timers.next_due()
    play_out(engine, clock)
    assert verify(game_record(engine.table(1))).ok


def test_the_window_counts_from_when_the_game_last_reached_its_least_players(engine, clock):
    box = Mailbox(engine)
    for address in (ANN, BEN, CAT):
        joins(engine, clock, box, address, "JOIN bid")
    clock.advance(days=1)
    answer(engine, clock, confirmation(box, CAT), "LEAVE")
    assert engine.timers.next_due() == []  # two left: no window runs
    clock.advance(hours=12)
    joins(engine, clock, box, DAN, "JOIN bid")
    again = clock()
    clock.advance(days=1, hours=12)
    engine.tick()
    assert status(engine)["state"] == "open"  # two days since ann, not since dan
    clock.advance(seconds=(again + timedelta(days=2) - clock()).total_seconds())
    engine.tick()
    assert players(engine) == [ANN, BEN, DAN]


def test_a_game_still_starts_when_its_seats_are_full(engine, clock):
    box = Mailbox(engine)
    for address in (ANN, BEN, CAT):
        joins(engine, clock, box, address, "JOIN bid 3")
    assert status(engine)["state"] == "running"
    assert "its seats are full" in flat(started_mail(box, CAT)["body"])


# -- START answered politely ---------------------------------------------------------


def test_start_before_the_least_players_says_how_many_more_are_needed(engine, clock):
    box = Mailbox(engine)
    joins(engine, clock, box, ANN, "JOIN bid")
    answer(engine, clock, confirmation(box, ANN), "START")
    told = flat(box.to(ANN)[-1]["body"])
    assert "It needs 2 more player(s) before it can start" in told
    assert status(engine)["state"] == "open"
    for address in (BEN, CAT):
        joins(engine, clock, box, address, "JOIN bid")
        answer(engine, clock, confirmation(box, address), "START")
    assert status(engine)["state"] == "running"  # all three sent START: three are enough for Bid!
    assert players(engine) == [ANN, BEN, CAT]


def test_start_from_someone_not_signed_up_is_refused_and_changes_nothing(engine, clock):
    box = Mailbox(engine)
    joins(engine, clock, box, ANN, "JOIN bid")
    answer(engine, clock, confirmation(box, ANN), "LEAVE")
    assert engine.store.signups(1) == []
    # START to the confirmation is a reply to it, which signs her up again ("Your reply signs you up"): review 34
    answer(engine, clock, confirmation(box, ANN), "START")
    assert [row["address"] for row in engine.store.signups(1)] == [ANN]
    answer(engine, clock, box.to(ANN)[-1], "LEAVE")  # a reply to that answer carries her sign-up's token too
    write(engine, clock, BEN, "START")
    assert "You are not signed up" in flat(box.to(BEN)[-1]["body"])
    assert engine.store.signups(1) == []


# -- seats and options -------------------------------------------------------------


def test_join_with_seats_and_options_opens_a_game_that_others_join_by_naming_it(engine, clock):
    box = Mailbox(engine)
    said = joins(engine, clock, box, ANN, "JOIN priority 5 turn_limit=3 press=grey")
    assert "1 of 5 seats are taken; it is played with turn_limit=3 press=grey" in flat(said["body"])
    game = engine.store.game(1)
    assert game["seats_wanted"] == 5 and game["options"]["turn_limit"] == 3 and game["press"] == "grey"
    write(engine, clock, FAY, "LIST")
    assert (
        "priority: game 1, Auction (priority cards), 1 of 5 seats taken, turn_limit=3 press=grey"
        in (box.to(FAY)[-1]["body"])
    )
    # the same options, or nothing named, or its number: that game
    joins(engine, clock, box, BEN, "JOIN priority turn-limit=3")
    joins(engine, clock, box, CAT, "JOIN priority")
    assert "JOIN game 1" in confirmation(box, CAT)["subject"]  # what the reply confirms
    joins(engine, clock, box, DAN, "JOIN 1")
    assert players(engine) == [ANN, BEN, CAT, DAN]
    # other seats or options: a game of its own
    joins(engine, clock, box, EVE, "JOIN priority 4")
    assert players(engine, 2) == [EVE] and engine.store.game(2)["seats_wanted"] == 4
    joins(engine, clock, box, FAY, "JOIN priority 5")
    assert players(engine) == [ANN, BEN, CAT, DAN, FAY]
    assert status(engine)["state"] == "running"
    assert engine.table(1).row["options"]["turn_limit"] == 3


def test_join_pure_skill_with_its_tie_option(engine, clock):
    box = Mailbox(engine)
    joins(engine, clock, box, ANN, "JOIN pure-skill ties=carry")
    joins(engine, clock, box, BEN, "JOIN pure-skill")  # joins the open one: it names nothing else
    joins(engine, clock, box, CAT, "JOIN pure-skill ties=discard")  # another game
    assert players(engine) == [ANN, BEN] and players(engine, 2) == [CAT]
    assert engine.store.game(1)["options"] == {"ties": "carry"}


def test_a_second_join_of_a_kind_one_waits_for_is_refused(engine, clock):
    box = Mailbox(engine)
    joins(engine, clock, box, ANN, "JOIN bid")
    answer(engine, clock, confirmation(box, ANN), "JOIN bid 3")
    assert "You are signed up for game 1 already" in flat(box.to(ANN)[-1]["body"])
    assert len(engine.store.games()) == 1


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("JOIN bid 5", "Bid! takes 3 to 4 players, not 5."),
        ("JOIN pure-skill 4", "Game of Pure Skill takes 3 players, not 4."),
        ("JOIN bid colour=red", "Bid has no option colour. The options of bid are reroll, max_auctions"),
        ("JOIN bid reroll=dice", "Reroll must be 'pawn' (the rules) or 'coin' (the variant)."),
        ("JOIN priority turn_limit=many", "Turn_limit must be a whole number"),
        ("JOIN bid press=loud", "Press must be none, white, grey."),
        ("JOIN pure-skill press=white", "Game of Pure Skill allows no table talk."),
        ("JOIN 99", "No game 99 is open for sign-up; LIST shows those that are"),
        ("JOIN chess", "There is no game of that name"),
    ],
)
def test_a_join_it_cannot_carry_out_is_refused_politely_and_changes_nothing(engine, clock, line, said):
    box = Mailbox(engine)
    assert write(engine, clock, ANN, line).code == "refused"
    [reply] = box.to(ANN)  # the refusal alone: no confirmation to reply to
    assert said in flat(reply["body"])
    assert engine.store.games() == []


# -- beyond the seats ------------------------------------------------------------------


def test_a_join_confirmed_after_its_game_filled_goes_on_the_standby_list(engine, clock):
    box = Mailbox(engine)
    joins(engine, clock, box, ANN, "JOIN bid 3")
    joins(engine, clock, box, BEN, "JOIN bid 3")
    write(engine, clock, CAT, "JOIN bid 3")
    write(engine, clock, DAN, "JOIN bid 3")  # both asked for game 1, with one seat left
    answer(engine, clock, confirmation(box, CAT), "")
    assert status(engine)["state"] == "running"
    answer(engine, clock, confirmation(box, DAN), "")
    told = flat(box.to(DAN)[-1]["body"])
    assert "Game 1 (Bid!) began before your sign-up was confirmed: its seats are full." in told
    assert "You are now on the standby list for Bid! instead, number 1 of 1" in told
    assert [row["address"] for row in engine.store.standby("bid")] == [DAN]
    assert players(engine) == [ANN, BEN, CAT]
    answer(engine, clock, confirmation(box, CAT), "yes")  # a player's reply to her old confirmation
    assert "You play in game 1 already: it has begun." in flat(box.to(CAT)[-1]["body"])
    assert [row["address"] for row in engine.store.standby("bid")] == [DAN]


def test_a_join_of_a_begun_pure_skill_game_is_refused(engine, clock):
    box = Mailbox(engine)
    for address in (ANN, BEN, CAT):
        joins(engine, clock, box, address, "JOIN pure-skill")
    write(engine, clock, DAN, "JOIN 1")
    assert "Game 1 has begun, with its seats full, and Game of Pure Skill has no standby list" in flat(
        box.to(DAN)[-1]["body"]
    )


# -- the confirmation, however people reply to it ---------------------------------------


def _quote(body: str) -> str:
    return "\n".join(f"> {line}".rstrip() for line in body.splitlines())


REPLIES = {
    "empty": lambda mail: "",
    "yes": lambda mail: "yes",
    "yes please": lambda mail: "Yes please!",
    "ok thanks": lambda mail: "OK, count me in. Thanks",
    "the quote alone": lambda mail: _quote(mail["body"]),
    "gmail": lambda mail: (
        f"\n\nOn Fri, Nov 27, 2026 at 1:00 AM Referee <referee@example.org> wrote:\n\n{_quote(mail['body'])}\n"
    ),
    "iphone": lambda mail: (
        f"\n\nSent from my iPhone\n\n> On 27 Nov 2026, at 01:00, Referee <referee@example.org> wrote:\n>\n"
        f"{_quote(mail['body'])}\n"
    ),
    "yes and the quote": lambda mail: f"Yes\n\nOn Fri, 27 Nov 2026, Referee wrote:\n{_quote(mail['body'])}",
}


@pytest.mark.parametrize("form", list(REPLIES))
@pytest.mark.parametrize("client", ["threaded", "unthreaded", "subject changed"])
def test_any_reply_to_the_confirmation_signs_up(engine, clock, form, client):
    box = Mailbox(engine)
    write(engine, clock, ANN, "JOIN bid 3 reroll=coin")
    mail = confirmation(box, ANN)
    assert 'just reply to this mail: an empty reply will do, or "yes"' in flat(mail["body"])
    thread = {"In-Reply-To": mail["message_id"], "References": mail["message_id"]}
    subject = "Sign me up" if client == "subject changed" else f"Re: {mail['subject']}"
    outcome = engine.ingest(
        make_mail(
            ANN,
            REPLIES[form](mail),
            to=mail["reply_to"],
            subject=subject,
            headers=thread if client == "threaded" else {},
            received=clock(),
        )
    )
    assert outcome.code == "done", outcome
    assert players(engine) == [ANN]
    assert engine.store.game(1)["options"]["reroll"] == "coin"
    assert "You have signed up for game 1 (Bid!)" in flat(box.to(ANN)[-1]["body"])


def test_a_reply_to_a_standby_confirmation_that_only_says_yes_puts_one_on_the_list(engine, clock):
    box = Mailbox(engine)
    write(engine, clock, ANN, "STANDBY bid")
    [mail] = [m for m in box.to(ANN) if "STANDBY bid" in m["subject"] and not m["subject"].startswith("Re:")]
    answer(engine, clock, mail, "yes please")
    assert [row["address"] for row in engine.store.standby("bid")] == [ANN]


@pytest.fixture
def capped(tmp_path, clock) -> Engine:
    config = Config(address="referee@example.org", database=tmp_path / "capped.db", reminder=None, outage_gap=None)
    return Engine(Store(config.database), replace(config, replies_per_hour=2), clock)


def test_the_cap_on_answers_never_drops_the_confirmation_of_a_sign_up(capped, clock):
    engine, box = capped, Mailbox(capped)
    write(engine, clock, ANN, "JOIN bid")
    mail = confirmation(box, ANN)
    for _ in range(4):  # her answers for the hour spent, and the note that says so
        answer(engine, clock, mail, "HELP")
    before = len(box.to(ANN))
    answer(engine, clock, mail, "HELP")
    assert len(box.to(ANN)) == before  # the cap holds an answer back ...
    answer(engine, clock, mail, "")
    assert players(engine) == [ANN]
    [told] = box.to(ANN)[before:]  # ... but never the one that confirms a sign-up
    assert "You have signed up for game 1 (Bid!)" in flat(told["body"])
    answer(engine, clock, mail, "")  # (her sign-up made already: that answer is held as any)
    assert len(box.to(ANN)) == before + 1


def test_start_and_leave_work_in_a_reply_to_the_answer_that_says_one_is_signed_up(engine, clock):
    """A person replies to the newest mail they got, the one saying they are
    signed up (and telling them to reply START): its reply address carries
    their sign-up's token, as the confirmation's does."""
    box = Mailbox(engine)
    for address in (ANN, BEN, CAT):
        signed = joins(engine, clock, box, address, "JOIN bid")
        assert "reply to this mail with LEAVE" in flat(signed["body"])
    answer(engine, clock, box.to(CAT)[-1], "LEAVE")
    assert "withdrawn" in box.to(CAT)[-1]["body"] and len(engine.store.signups(1)) == 2
    joins(engine, clock, box, DAN, "JOIN bid")
    for address in (ANN, BEN, DAN):
        answer(engine, clock, box.to(address)[-1], "START")
    assert status(engine)["state"] == "running" and players(engine) == [ANN, BEN, DAN]
