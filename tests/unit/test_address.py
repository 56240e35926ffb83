"""A new address (issue 33, item 1): ADDRESS from the seat, confirmed by a
reply from the new address; ALL for every game at once; the keeper's, at
the shell and by mail, at once.

Played through ``Engine.ingest`` as players live it: the seat keeps its
name, hand and moves, the new address plays on with a reply address of its
own, the old one is answered and changes nothing, the record names the
seat and never an address, and verify replays it (and refuses it altered)."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from conftest import PLAYERS, Mailbox, answer, join, mails, make_mail, send, to_deadline
from test_cli import cfg as _cfg
from test_cli import new_game as cli_game
from test_cli import run as _run
from test_keeper_mail import KEEPER, keeper_address, last_answer, order
from test_keeping import play_out, record
from test_keeping import pure as _pure
from test_keeping import turns as _turns

from referee.engine import Engine
from referee.engine.addresses import ASKED_WITHIN, CONFIRM_WITHIN, MOST_ASKED
from referee.engine.keeping import SHELL
from referee.mail.tokens import token_address
from referee.record import verify
from referee.store import Store

ALICE, BOB, CAROL = PLAYERS
NEW = "alice@example.net"
MALLORY = "mallory@example.com"
pure, turns, cfg, run = _pure, _turns, _cfg, _run  # the fixtures: pure skill, auction; the shell's config and line


def reply_address(engine: Engine, address: str, game: int = 1) -> str:
    """The reply address of ``address``'s seat in ``game`` now (it changes with the address)."""
    table = engine.table(game)
    return token_address(engine.config.address, table.seats[table.seat_of(address)]["token"])


def ask(engine: Engine, clock, line: str, sender: str = ALICE, game: int = 1):
    return send(engine, clock, sender, line, game=game)


def offer_mail(box: Mailbox, to: str = NEW) -> dict:
    [offer] = [m for m in box.to(to) if "Confirm your new address" in m["subject"]]
    return offer


def moved(engine: Engine, clock, box: Mailbox, game: int = 1, line: str = f"ADDRESS {NEW}") -> None:
    """Alice asks for her new address, and confirms it from there with a reply that says nothing."""
    assert ask(engine, clock, line, game=game).code == "done"
    assert answer(engine, clock, offer_mail(box), "").code == "done"


def last_body(engine: Engine, to: str) -> str:
    """The newest mail to ``to``, its lines joined (a sentence may be wrapped anywhere)."""
    return " ".join(mails(engine, to)[-1]["body"].split("\n-- \n")[0].split())


def alices_bid(engine: Engine, phase: int = 1) -> str:
    return engine.store.final_moves(1, phase)[0]["move"]


# -- a player's change, confirmed by the new address -------------------------------------


def test_a_change_mid_round_keeps_the_seat_and_the_new_address_plays_on(pure, clock):
    box = Mailbox(pure)
    old_reply = reply_address(pure, ALICE)
    assert send(pure, clock, ALICE, "bid 5").code == "move"
    box.new()
    assert ask(pure, clock, f"ADDRESS {NEW}").code == "done"
    asked = box.new()
    assert [m["to"] for m in asked] == [NEW, ALICE]  # the confirmation, and the answer that tells the old address
    assert "A mail went to alice@example.net for it to confirm" in asked[1]["body"]
    assert pure.table(1).seat_of(ALICE) == 0  # nothing moves until the new address answers
    confirm = offer_mail(box)
    assert confirm["reply_to"] != old_reply and "game 1 (Game of Pure Skill): seat 1, alice" in confirm["body"]
    assert answer(pure, clock, confirm, "").code == "done"
    told = box.new()
    assert sorted({m["to"] for m in told}) == sorted([ALICE, NEW])  # the other players are not mailed
    welcome = next(m for m in told if m["to"] == NEW and "you play seat 1 from this address now" in m["subject"])
    assert "Your hand (hearts): A 2 3 4 5 6 7 8 9 10 J Q K" in welcome["body"]  # (a sealed bid leaves it at the end)
    assert welcome["reply_to"] == reply_address(pure, NEW) != old_reply
    assert "Your seat moved to another address" in next(m for m in told if m["to"] == ALICE)["subject"]
    # The move made from the old address stands; one from the new one replaces it: one seat, one move.
    assert alices_bid(pure) == "bid 5"
    assert pure.ingest(make_mail(NEW, "bid 9", to=reply_address(pure, NEW), received=clock())).code == "replaced"
    assert [m["seat"] for m in pure.store.moves(1, 1)] == [0, 0] and alices_bid(pure) == "bid 9"
    # The old reply address no longer counts, from the old address or the new.
    for sender in (ALICE, NEW):
        outcome = pure.ingest(make_mail(sender, "bid 2", to=old_reply, received=clock()))
        assert outcome.code == "refused" and "moved to another address" in outcome.detail
        assert "Your seat moved to another address" in mails(pure, sender)[-1]["subject"]
    assert alices_bid(pure) == "bid 9"
    assert "reply to the referee's newest mail to you about game 1" in last_body(pure, NEW)
    send(pure, clock, BOB, "bid 4")
    send(pure, clock, CAROL, "bid 3")
    assert pure.status(1)["phase"]["number"] == 2  # resolved with alice's bid of 9
    play_out(pure, clock)
    published = record(pure)
    assert published["players"][0]["name"] == "alice"  # the seat's name stays
    assert published["phases"][0]["moves"][0]["move"] == "bid 9"
    [act] = published["interventions"]
    assert act == {"phase": 1, "at": act["at"], "act": "address", "by": "player", "why": "", "seat": 0}
    assert "example.net" not in str(published)
    verdict = verify(published)
    assert verdict.ok, verdict


def test_a_move_made_from_the_old_address_before_the_change_stands(pure, clock):
    box = Mailbox(pure)
    send(pure, clock, ALICE, "bid K")
    moved(pure, clock, box)
    send(pure, clock, BOB, "bid 4")
    send(pure, clock, CAROL, "bid 3")
    assert pure.status(1)["phase"]["number"] == 2
    assert alices_bid(pure) == "bid K"
    assert pure.status(1)["players"][0]["address"] == NEW


def test_a_seat_that_owes_a_move_is_prompted_at_its_new_address(pure, clock):
    box = Mailbox(pure)
    moved(pure, clock, box)
    subjects = [m["subject"] for m in box.to(NEW)]
    assert any("Round 1 of 13: the prize is" in subject for subject in subjects)


# -- what is refused, and changes nothing -----------------------------------------------------


def test_a_forged_address_change_changes_nothing(pure, clock):
    box = Mailbox(pure)
    box.new()
    # Alice's reply address from another From: her address is told, nothing is offered.
    forged = make_mail(MALLORY, f"ADDRESS {MALLORY}", to=reply_address(pure, ALICE), received=clock())
    assert pure.ingest(forged).code == "refused"
    # Alice's From without her reply address: the same (her notices: one an hour).
    assert pure.ingest(make_mail(ALICE, f"ADDRESS {MALLORY}", received=clock())).code == "refused"
    told = box.new()
    assert [m["to"] for m in told] == [ALICE] and "was not accepted" in told[0]["subject"]
    assert pure.store.open_offers() == [] and pure.table(1).seat_of(ALICE) == 0


def test_a_confirmation_from_a_third_address_changes_nothing(pure, clock):
    box = Mailbox(pure)
    ask(pure, clock, f"ADDRESS {NEW}")
    confirm = offer_mail(box)
    forged = make_mail(MALLORY, "ACCEPT", to=confirm["reply_to"], received=clock())
    assert pure.ingest(forged).code == "refused"
    assert pure.table(1).seat_of(ALICE) == 0 and len(pure.store.open_offers()) == 1
    assert mails(pure, MALLORY) == [] and "was not accepted" in mails(pure, NEW)[-1]["subject"]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("ADDRESS not-an-address", "'not-an-address' is not a mail address"),
        ("ADDRESS referee+x@example.org", "is the referee's own address"),
        (f"ADDRESS {BOB}", f"Game 1 has a seat played from {BOB} already"),
        (f"ADDRESS {ALICE}", f"You play from {ALICE} already"),
        ("ADDRESS", "Write it as ADDRESS new@example.net"),
        (f"ADDRESS {NEW} everywhere", "Write it as ADDRESS new@example.net"),
    ],
)
def test_an_address_that_cannot_be_moved_to_is_refused_politely(pure, clock, line, why):
    box = Mailbox(pure)
    box.new()
    assert ask(pure, clock, line).code == "refused"
    [told] = box.new()
    assert told["to"] == ALICE and why in told["body"] and "Nothing was changed." in told["body"]
    assert pure.store.open_offers() == [] and pure.table(1).seat_of(ALICE) == 0


def test_a_second_request_withdraws_the_first_and_the_own_address_takes_it_back(pure, clock):
    box = Mailbox(pure)
    ask(pure, clock, f"ADDRESS {NEW}")
    first = offer_mail(box)
    ask(pure, clock, "ADDRESS alice@example.com")
    assert "The change you asked for before, not yet confirmed, is taken back" in last_body(pure, ALICE)
    assert answer(pure, clock, first, "").code == "refused"  # withdrawn: its reply changes nothing
    assert "That offer was withdrawn already" in last_body(pure, NEW)
    assert pure.table(1).seat_of(ALICE) == 0
    second = offer_mail(box, "alice@example.com")
    assert ask(pure, clock, f"ADDRESS {ALICE}").code == "done"
    assert "The change of address you asked for is taken back" in last_body(pure, ALICE)
    assert answer(pure, clock, second, "").code == "refused" and pure.table(1).seat_of(ALICE) == 0
    assert pure.store.open_offers() == []


def test_a_request_not_confirmed_in_time_lapses_and_the_old_address_plays_on(pure, clock):
    box = Mailbox(pure)
    ask(pure, clock, f"ADDRESS {NEW}")
    confirm = offer_mail(box)
    clock.advance(seconds=CONFIRM_WITHIN.total_seconds() - 60)
    pure.tick()
    assert pure.store.open_offers() != []
    clock.advance(seconds=120)
    assert any("expired" in line for line in pure.tick())
    assert any("did not confirm it in time" in m["body"] for m in box.to(ALICE))
    assert answer(pure, clock, confirm, "").code == "refused"
    assert pure.table(1).seat_of(ALICE) == 0 and pure.table(1).seat_of(NEW) is None
    # Her reply address works as before (with a card still in her hand: round 1, at its deadline
    # meanwhile, played one of them at random, 3 one time in 13).
    table = pure.table(1)
    card = table.rules.move_text(table.rules.legal_moves(table.state, 0)[0])
    assert send(pure, clock, ALICE, card).code == "move"


def test_a_new_address_that_says_no_changes_nothing_and_the_old_is_told(pure, clock):
    box = Mailbox(pure)
    ask(pure, clock, f"ADDRESS {NEW}")
    assert answer(pure, clock, offer_mail(box), "REJECT").code == "done"
    assert "said no when it was asked to confirm it" in last_body(pure, ALICE)
    assert pure.table(1).seat_of(ALICE) == 0


def test_with_accept_token_alone_the_old_reply_address_still_stops_working(config, clock, seeds):
    engine = Engine(Store(config.database), replace(config, accept_token_alone=True), clock, seeds)
    engine.new_game("pure-skill", PLAYERS)
    old_reply = reply_address(engine, ALICE)
    moved(engine, clock, Mailbox(engine))
    outcome = engine.ingest(make_mail(MALLORY, "bid 2", to=old_reply, received=clock()))
    assert outcome.code == "refused" and engine.store.moves(1, 1) == []
    assert mails(engine, MALLORY) == [] and "Your seat moved" in mails(engine, ALICE)[-1]["subject"]


# -- ALL: every game at once ---------------------------------------------------------------------


def test_all_moves_every_game_and_sign_up_with_one_confirmation(pure, clock):
    pure.new_game("priority", [CAROL, ALICE, BOB], options={"turn_limit": 2})
    join(pure, "bid", ALICE)
    box = Mailbox(pure)
    assert ask(pure, clock, f"ADDRESS {NEW} ALL", game=2).code == "done"
    confirm = offer_mail(box)
    for line in ("game 1 (Game of Pure Skill): seat 1, alice", "seat 2, alice", "game 3 (Bid!): your sign-up"):
        assert line in confirm["body"]
    box.new()
    assert answer(pure, clock, confirm, "").code == "done"
    told = box.new()
    assert [m["to"] for m in told].count(ALICE) == 1  # the old address is told once
    welcomes = [m for m in told if "from this address now" in m["subject"]]
    assert sorted(m["subject"].split(" ")[0] for m in welcomes) == ["[priority-2", "[pure-skill-1"]
    assert len({m["reply_to"] for m in welcomes}) == 2  # each seat its own reply address
    assert pure.table(1).seat_of(NEW) == 0 and pure.table(2).seat_of(NEW) == 1
    assert [s["address"] for s in pure.store.signups(3)] == [NEW]
    assert pure.store.games_of(ALICE) == []
    assert send(pure, clock, NEW, "bid 5").code == "move"


# -- the keeper's, at once -------------------------------------------------------------------------


def test_the_keeper_moves_a_seat_at_the_shell_at_once(pure, clock):
    box = Mailbox(pure)
    box.new()
    line = pure.address(1, "1", NEW, SHELL, "Alice's old mail is gone")
    assert line == f"game 1: seat 1 plays from {NEW} now (was {ALICE})"
    told = box.new()
    assert sorted({m["to"] for m in told}) == sorted([ALICE, NEW])
    assert "The keeper has moved your seat" in next(m for m in told if m["to"] == ALICE)["body"]
    welcome = next(m for m in told if "from this address now" in m["subject"])
    assert "Alice's old mail is gone" in welcome["body"] and "Your hand (hearts)" in welcome["body"]
    assert send(pure, clock, NEW, "bid 5").code == "move"
    play_out(pure, clock)
    published = record(pure)
    assert [(i["act"], i["by"], i["seat"]) for i in published["interventions"]] == [("address", "keeper", 0)]
    assert verify(published).ok


def test_the_keeper_moves_a_seat_from_the_command_line(run, cfg, clock):
    game = cli_game(run)
    assert run("address", str(game), ALICE, NEW, "--why", "new mail")[1] == (
        f"game {game}: seat 1 plays from {NEW} now (was {ALICE})\n"
    )
    status, out, err = run("address", str(game), "2", CAROL)
    assert status == 2 and f"game {game} has a seat played from {CAROL} already" in err
    out = run("status", str(game))[1]
    assert f"seat 1 moved to {NEW} from {ALICE} (new mail)" in out


@pytest.fixture
def kept(config, clock, seeds) -> Engine:
    engine = Engine(Store(config.database), replace(config, keepers=(KEEPER,)), clock, seeds)
    engine.new_game("pure-skill", PLAYERS)
    return engine


def test_the_keeper_moves_a_seat_by_mail_and_a_player_cannot(kept, clock):
    assert order(kept, clock, f"ADDRESS 1 {ALICE} {NEW} her old mail is gone").code == "done"
    assert f"Done: game 1: seat 1 plays from {NEW} now (was {ALICE})." in last_answer(kept)
    assert kept.table(1).seat_of(NEW) == 0
    assert order(kept, clock, "ADDRESS 1").code == "refused"
    assert "Name the seat and its new address" in last_answer(kept)
    assert send(kept, clock, BOB, f"ADDRESS 1 2 {MALLORY}").code == "refused"  # a player's, written as a keeper's
    assert kept.table(1).seat_of(BOB) == 1 and kept.store.open_offers() == []
    # Without the keeper's address, the keeper is sent it, and nothing moves.
    assert kept.ingest(make_mail(KEEPER, f"ADDRESS 1 2 {MALLORY}", received=clock())).code == "refused"
    assert kept.table(1).seat_of(BOB) == 1
    assert keeper_address(kept) in mails(kept, KEEPER)[-1]["reply_to"]


# -- the record ----------------------------------------------------------------------------------


def test_verify_refuses_an_altered_change_of_address(pure, clock):
    box = Mailbox(pure)
    moved(pure, clock, box)
    to_deadline(pure, clock)
    play_out(pure, clock)
    published = record(pure)
    assert verify(published).ok
    for alter in (
        lambda act: act.update(seat=3),  # no such seat
        lambda act: act.update(seat=-1),
        lambda act: act.update(by="referee"),  # the referee moves no seat
        lambda act: act.update(by="mallory"),
        lambda act: act.update(address=NEW),  # no field a record has
        lambda act: act.pop("seat"),
    ):
        forged = copy.deepcopy(published)
        alter(forged["interventions"][0])
        assert not verify(forged).ok, forged["interventions"][0]
    forged = copy.deepcopy(published)
    forged["interventions"][0]["act"] = "say"  # a player's act of another kind
    forged["interventions"][0].update(text="hi", seat=None)
    assert not verify(forged).ok


def test_verify_refuses_a_change_of_address_of_a_bots_seat(config, clock, seeds):
    engine = Engine(Store(config.database), config, clock, seeds)
    engine.new_game("pure-skill", [ALICE, BOB], bots=1)
    moved(engine, clock, Mailbox(engine))
    play_out(engine, clock)
    published = record(engine)
    assert verify(published).ok
    forged = copy.deepcopy(published)
    forged["interventions"][0]["seat"] = 2  # the bot's
    verdict = verify(forged)
    assert not verdict.ok and "while a bot played it" in verdict.message


def test_a_player_asks_for_a_few_new_addresses_a_day_at_most(pure, clock):
    for number in range(MOST_ASKED):
        assert ask(pure, clock, f"ADDRESS alice{number}@example.net").code == "done"
    assert ask(pure, clock, "ADDRESS alice9@example.net").code == "refused"
    assert f"You have asked for {MOST_ASKED} new addresses in a day already" in last_body(pure, ALICE)
    assert mails(pure, "alice9@example.net") == []
    clock.advance(seconds=ASKED_WITHIN.total_seconds() + 1)
    assert ask(pure, clock, "ADDRESS alice9@example.net").code == "done"
    assert len(mails(pure, "alice9@example.net")) == 1


def test_in_a_turn_based_game_the_seat_whose_turn_it_is_moves_from_its_new_address(turns, clock):
    box = Mailbox(turns)
    mover = turns.status(1)["phase"]["waiting_for"][0]
    new = mover.replace("example.org", "example.net")
    assert send(turns, clock, mover, f"ADDRESS {new}").code == "done"
    assert answer(turns, clock, offer_mail(box, new), "").code == "done"
    welcome, prompt = [m for m in box.to(new) if m["subject"].startswith("[priority-1 ")]
    assert "from this address now" in welcome["subject"] and "your turn" in prompt["subject"]  # it owes the turn
    assert prompt["reply_to"] == reply_address(turns, new)
    assert answer(turns, clock, prompt, "pass").code == "move"
    assert turns.status(1)["phase"]["number"] == 2
    play_out(turns, clock)
    verdict = verify(record(turns))
    assert verdict.ok, verdict
