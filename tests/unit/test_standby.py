"""Someone takes over (issue 33, item 3): STANDBY puts a person on a kind
of game's standby list; a seat its player leaves mid-game is offered to the
first on it, who takes it by a reply (or says no, or lets it lapse, and the
next is asked); the takeover is the keeper's REPLACE made by the referee,
on the record, and verifies.

Played as people live it: every step by mail through ``ingest``, the
clock moved by hand."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, Mailbox, answer, make_mail, send, to_deadline

from referee.config import ConfigError, load
from referee.engine import Engine
from referee.engine.keeping import SHELL
from referee.record import verify
from referee.rules.bid import tile_name
from referee.site.public import game_record
from referee.store import Store
from referee.timeutil import from_iso

ALICE, BOB, CAROL = PLAYERS
DORA, ERIN, FRANK = "dora@example.net", "erin@example.net", "frank@example.net"
OFFER = "is yours if you want it"  # in the subject of a seat's offer


def write(engine: Engine, clock, sender: str, body: str):
    """A fresh mail to the referee's plain address: no reply token."""
    return engine.ingest(make_mail(sender, body, subject="Hello referee", received=clock()))


def on_standby(engine: Engine, clock, box: Mailbox, address: str, kind: str = "bid") -> None:
    """``address`` sends STANDBY and replies to the confirmation as a mail
    client does (its subject, In-Reply-To), writing nothing."""
    assert write(engine, clock, address, f"STANDBY {kind}").code == "done"
    [confirmation] = [m for m in box.new() if m["to"] == address and not m["subject"].startswith("Re:")]
    assert f"STANDBY {kind}" in confirmation["subject"]
    assert answer(engine, clock, confirmation, "").code == "done"
    assert "You are now on the standby list" in box.to(address)[-1]["body"]


def offers_to(box: Mailbox, address: str) -> list[dict]:
    return [m for m in box.to(address) if OFFER in m["subject"]]


def waiting(engine: Engine, kind: str = "bid") -> list[str]:
    return [row["address"] for row in engine.store.standby(kind)]


def record(engine: Engine, game: int = 1) -> dict:
    return game_record(engine.table(game))


def play_out(engine: Engine, clock, good: str | None = None, game: int = 1) -> None:
    """Every open phase answered by mail by the people who owe it, until the
    game ends: ``good`` bids its highest tiles (and all its coins in a
    tie-break), everyone else their lowest (and no coins)."""
    for _ in range(500):
        table = engine.table(game)
        if table.row["state"] != "running":
            return
        phase = table.phase_to_move()
        movers = [seat for seat in table.waiting_for(phase) if table.human(seat)]
        if not movers:
            to_deadline(engine, clock, game)
            engine.tick()
            continue
        for seat in movers:
            table = engine.table(game)
            if table.open_phase is None or table.open_phase["number"] != phase["number"]:
                break
            moves = [m for m in table.rules.legal_moves(table.state, seat) if m[0] in ("bid", "coins")]
            best = max if table.seats[seat]["address"] == good else min
            move = best(moves, key=lambda m: (sum(m[1]), m[1]))
            clock.advance(minutes=5)
            outcome = send(engine, clock, table.seats[seat]["address"], table.rules.move_text(move), game)
            assert outcome.code == "move", outcome
    raise AssertionError("the game did not end")


def play_out_phase(engine: Engine, clock, game: int = 1) -> None:
    """The open phase: each person who owes it bids a tile of its seat's
    number (null, ace, 2...), so that nobody ties."""
    table = engine.table(game)
    number = table.phase_to_move()["number"]
    for seat in table.waiting_for(table.phase_to_move()):
        assert send(engine, clock, table.seats[seat]["address"], f"bid {seat}", game).code == "move"
    assert engine.table(game).phase_to_move()["number"] > number


@pytest.fixture
def box(engine: Engine) -> Mailbox:
    return Mailbox(engine)


def bid(engine: Engine, **options) -> int:
    return engine.new_game("bid", PLAYERS, deadline=timedelta(days=2), options=options or None)


# -- the whole story ------------------------------------------------------------------


def test_a_standby_player_takes_a_bid_seat_a_player_resigned_and_wins_it(engine, clock, seeds, box):
    seeds.fixed = bytes([7]) * 32
    on_standby(engine, clock, box, DORA)
    on_standby(engine, clock, box, ERIN)
    assert waiting(engine) == [DORA, ERIN]
    bid(engine, max_auctions=8)
    clock.advance(hours=1)
    play_out_phase(engine, clock)  # auction 1, everyone by mail
    box.new()

    assert send(engine, clock, BOB, "RESIGN").code == "done"
    [offer] = offers_to(box, DORA)
    assert offers_to(box, ERIN) == []  # the first on the list is asked, only
    assert "seat 2 (bob's)" in offer["body"] and "bob@" not in offer["body"]  # a name, never an address
    assert "Your tiles" not in offer["body"]  # nothing private before the seat is hers

    clock.advance(hours=3)
    assert answer(engine, clock, offer, "").code == "done"  # a reply that says nothing takes it
    welcome, prompt, reply = box.to(DORA)[-3:]
    assert "Accepted: you play seat 2 of game 1 (Bid!)" in reply["body"]
    assert prompt["subject"].endswith("Auction 2: 0 points")  # the auction its bot waited in is hers
    assert "Welcome to game 1: you play seat 2" in welcome["subject"]
    hand = " ".join(tile_name(t) for t in engine.table(1).state.hands[1])
    assert f"Your tiles: {hand};" in welcome["body"] and "since bob left" in welcome["body"]
    assert "The seat's bot has moved in it" not in welcome["body"]  # it waited for her
    assert welcome["reply_to"] == f"referee+{engine.table(1).seats[1]['token']}@example.org"
    told = [m for m in box.all if "dora takes over seat 2 from bob" in m["subject"]]
    assert sorted(m["to"] for m in told) == [ALICE, CAROL]  # the others; Bob, gone, hears nothing
    assert "first on the referee's standby list" in told[0]["body"]
    assert waiting(engine) == [ERIN]  # she took a seat: off the list
    assert engine.table(1).human(1) and engine.table(1).seats[1]["address"] == DORA

    play_out(engine, clock, good=DORA)
    published = record(engine)
    assert published["winner"] == "dora" and engine.status(1)["winner"] == DORA
    [taken] = published["interventions"]
    assert (taken["act"], taken["by"], taken["why"]) == ("replace", "referee", "from the standby list")
    assert (taken["was"], taken["name"], taken["seat"]) == ("bob", "dora", 1)
    verdict = verify(published)
    assert verdict.ok and verdict.message.endswith("winner: dora"), verdict

    # A record that says the referee gave away a seat whose player never left is refused.
    forged = copy.deepcopy(published)
    forged["interventions"][0]["left_at"] = None
    forged["interventions"][0]["bot_from_phase"] = None
    forged["interventions"][0]["bot_waited"] = False
    verdict = verify(forged)
    assert not verdict.ok and "the referee gave away a seat whose player never left" in verdict.message
    # Her moves relabelled the bot's (as if she never took over) do not replay.
    forged = copy.deepcopy(published)
    forged["interventions"] = []
    forged["players"][1].update(name="bob", bot=True, bot_from_phase=taken["bot_from_phase"], left_at=taken["left_at"])
    assert not verify(forged).ok


def test_a_takeover_by_the_referee_is_refused_on_the_record_of_a_seat_whose_player_never_left(engine, clock):
    """Only the keeper gives a person's seat to someone else: a keeper's
    takeover relabelled as the referee's does not verify."""
    engine.new_game("priority", PLAYERS, options={"turn_limit": 1})
    engine.replace(1, BOB, DORA, SHELL, "Bob moved away")
    for _ in range(300):
        if engine.status(1)["state"] != "running":
            break
        to_deadline(engine, clock)
        engine.tick()
    published = record(engine)
    assert verify(published).ok
    forged = copy.deepcopy(published)
    forged["interventions"][0]["by"] = "referee"
    verdict = verify(forged)
    assert not verdict.ok and "the referee gave away a seat whose player never left" in verdict.message


# -- who is asked, and when ---------------------------------------------------------------


def test_a_pure_skill_resignation_offers_the_seat_to_nobody(engine, clock, box):
    on_standby(engine, clock, box, DORA)
    assert write(engine, clock, ERIN, "STANDBY pure-skill").code == "refused"
    assert "rules give the seat of a player who leaves to a bot for good" in box.to(ERIN)[-1]["body"]
    engine.new_game("pure-skill", PLAYERS)
    assert send(engine, clock, BOB, "RESIGN").code == "done"
    engine.resign(1, CAROL)
    assert offers_to(box, DORA) == [] and engine.store.open_offers() == []
    assert waiting(engine) == [DORA]


def test_a_rejection_passes_the_seat_to_the_next_and_keeps_the_first_on_the_list(engine, clock, box):
    for address in (DORA, ERIN):
        on_standby(engine, clock, box, address)
    bid(engine)
    engine.resign(1, BOB)  # the keeper's `referee resign`
    [offer] = offers_to(box, DORA)
    clock.advance(hours=1)
    assert answer(engine, clock, offer, "REJECT").code == "done"
    assert "Said no" in box.to(DORA)[-1]["body"]
    [second] = offers_to(box, ERIN)
    assert answer(engine, clock, second, "accept").code == "done"
    assert engine.table(1).seats[1]["address"] == ERIN
    assert waiting(engine) == [DORA]  # she said no to this seat, not to the list


def test_an_offer_left_unanswered_lapses_to_the_next_and_the_last_leaves_the_bot_in_the_seat(engine, clock, box):
    for address in (DORA, ERIN):
        on_standby(engine, clock, box, address)
    bid(engine)
    engine.resign(1, BOB)
    [offer] = offers_to(box, DORA)
    assert "offer lapses and the seat\ngoes to the next on standby" in offer["body"]
    clock.advance(hours=23)
    engine.tick()
    assert offers_to(box, ERIN) == []
    clock.advance(hours=1)  # a day: config standby_answer
    engine.tick()
    assert len(offers_to(box, ERIN)) == 1
    assert waiting(engine) == [ERIN]  # Dora did not answer: off the list
    assert answer(engine, clock, offer, "").code == "refused"  # too late
    assert "expired" in box.to(DORA)[-1]["body"]
    clock.advance(days=1)
    engine.tick()
    assert waiting(engine) == [] and engine.store.open_offers() == []
    assert not engine.table(1).human(1)  # nobody left: the bot plays on
    assert engine.store.interventions(1) == []


def test_an_offers_lapse_is_a_moment_the_referee_wakes_for_and_catches_up_on(engine, clock, box):
    for address in (DORA, ERIN):
        on_standby(engine, clock, box, address)
    bid(engine)
    engine.resign(1, BOB)
    [offer] = engine.store.open_offers()
    lapse = from_iso(offer["expires_at"])
    assert lapse in engine.next_due() and lapse in engine.next_due(1)
    clock.advance(days=1, hours=1)
    engine.catch_up(clock())  # as after a restore: each moment in turn, as of its time
    [second] = engine.store.open_offers()
    assert second["address"] == ERIN and second["made_at"] == offer["expires_at"]


def test_the_offer_answered_from_another_address_changes_nothing(engine, clock, box):
    on_standby(engine, clock, box, DORA)
    bid(engine)
    engine.resign(1, BOB)
    [offer] = offers_to(box, DORA)
    forged = make_mail(FRANK, "ACCEPT", to=offer["reply_to"], subject=f"Re: {offer['subject']}", received=clock())
    assert engine.ingest(forged).code == "refused"
    assert not engine.table(1).human(1) and engine.store.interventions(1) == []
    assert box.to(FRANK) == []  # the forger hears nothing; Dora is told
    assert "A mail from another address, frank@example.net" in box.to(DORA)[-1]["body"]
    assert answer(engine, clock, offer, "yes").code == "done"  # hers is still open
    assert engine.table(1).seats[1]["address"] == DORA


def test_a_person_already_at_the_table_or_weighing_another_seat_is_passed_over(engine, clock, box):
    on_standby(engine, clock, box, ALICE)  # she plays in game 1
    on_standby(engine, clock, box, DORA)
    on_standby(engine, clock, box, ERIN)
    bid(engine)
    engine.resign(1, BOB)
    engine.resign(1, CAROL)
    assert offers_to(box, ALICE) == []
    assert [o["subject"].split("] ")[1][:6] for o in offers_to(box, DORA) + offers_to(box, ERIN)] == [
        "Seat 2",
        "Seat 3",
    ]


def test_a_seat_taken_by_the_keeper_meanwhile_is_not_given_twice(engine, clock, box):
    on_standby(engine, clock, box, DORA)
    bid(engine)
    engine.resign(1, BOB)
    engine.replace(1, "seat 2", FRANK, SHELL, "a friend of Bob's")
    [offer] = offers_to(box, DORA)
    assert answer(engine, clock, offer, "").code == "refused"
    assert "has been taken meanwhile" in box.to(DORA)[-1]["body"]
    assert engine.table(1).seats[1]["address"] == FRANK
    assert waiting(engine) == [DORA]


# -- the list itself --------------------------------------------------------------------


def test_standby_needs_the_address_to_confirm_and_off_takes_it_off(engine, clock, box):
    assert write(engine, clock, DORA, "STANDBY bid").code == "done"
    assert waiting(engine) == []  # not before she confirms
    assert "Reply to it to confirm" in box.to(DORA)[-1]["body"]
    confirmation = next(m for m in box.to(DORA) if m["subject"].endswith("STANDBY bid"))
    forged = make_mail(FRANK, "", to=confirmation["reply_to"], subject=f"Re: {confirmation['subject']}")
    engine.ingest(forged)
    assert waiting(engine) == []  # another address's reply proves nothing
    assert answer(engine, clock, confirmation, "").code == "done"
    assert waiting(engine) == [DORA]
    assert "number 1 of 1" in box.to(DORA)[-1]["body"]
    assert answer(engine, clock, confirmation, "STANDBY bid OFF").code == "done"
    assert waiting(engine) == [] and "You are off the standby list for Bid!" in box.to(DORA)[-1]["body"]


def test_a_player_may_go_on_standby_in_a_reply_to_the_referees_mail(engine, clock, box):
    engine.new_game("pure-skill", PLAYERS)
    box.new()
    assert send(engine, clock, ALICE, "STANDBY ice").code == "done"
    assert waiting(engine, "ice") == [ALICE] and [m["to"] for m in box.new()] == [ALICE]  # at once: one answer


def test_list_shows_how_many_wait_on_standby_and_never_who(engine, clock, box):
    for address in (DORA, ERIN):
        on_standby(engine, clock, box, address)
    on_standby(engine, clock, box, FRANK, "ice")
    assert write(engine, clock, "gina@example.com", "LIST").code == "done"
    listed = box.to("gina@example.com")[-1]["body"]
    assert "  bid: 2 waiting (Bid!)" in listed and "  ice: 1 waiting (Ice Ice Baby)" in listed
    assert not any(name in listed for name in ("dora", "erin", "frank"))


def test_standby_of_no_game_is_refused_with_the_games(engine, clock, box):
    assert write(engine, clock, DORA, "STANDBY chess").code == "refused"
    assert "the games are: bid, ice, priority, bluff. For example, STANDBY bid." in box.to(DORA)[-1]["body"]
    assert write(engine, clock, DORA, "STANDBY").code == "refused"
    assert "STANDBY needs the kind of game" in box.to(DORA)[-1]["body"]


def test_standby_answer_is_a_setting_and_nothing_is_too_short(tmp_path: Path):
    path = tmp_path / "referee.toml"
    path.write_text('[defaults]\nstandby_answer = "12h"\n')
    assert load(path).standby_answer == timedelta(hours=12)
    path.write_text('[defaults]\nstandby_answer = "0s"\n')
    with pytest.raises(ConfigError, match=r"referee\.toml:2: defaults\.standby_answer must be longer than nothing"):
        load(path)


def test_the_answer_time_is_the_configs(config, clock):
    quick = Engine(Store(config.database), replace(config, standby_answer=timedelta(hours=2)), clock)
    on_standby(quick, clock, Mailbox(quick), DORA)
    quick.new_game("bid", PLAYERS)
    quick.resign(1, BOB)
    [offer] = quick.store.open_offers()
    assert offer["expires_at"] == "2026-11-21T14:00:00Z"
