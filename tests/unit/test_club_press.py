"""Table talk (issue 34, item 4): TELL relays a seat's words to one other
seat or to all, signed with its name (white press) or, where the game
allows grey press, unsigned; a reply to the relayed mail goes back to the
writer through the referee; it is never a move, never on the record or the
site, rate-limited, and shows nobody's address."""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import pytest
from conftest import PLAYERS, Mailbox, answer, make_mail, send
from test_cli import cfg as _cfg
from test_cli import run as _run
from test_keeper_mail import order

from referee.engine import Engine
from referee.rules.api import Press
from referee.site.public import game_record
from referee.site.render import Site
from referee.store import Store

ALICE, BOB, CAROL = PLAYERS
DAVE = "dave@example.org"
EVE = "eve@example.net"
KEEPER = "keeper@example.org"
cfg, run = _cfg, _run  # the fixtures: a config file, and `referee` run with it


@pytest.fixture
def config(config):
    return replace(config, keepers=(KEEPER,), press_per_day=3)


@pytest.fixture
def box(engine: Engine) -> Mailbox:
    return Mailbox(engine)


def start(engine: Engine, box: Mailbox, kind: str = "bid", press: Press | None = None, **choices) -> int:
    """A game of four people (Bid!: white press by its kind), its start mail read."""
    game = engine.new_game(kind, [*PLAYERS, DAVE][: 4 - choices.get("bots", 0)], press=press, **choices)
    box.new()
    return game


def talk(box: Mailbox, to: str) -> list[dict]:
    """The table talk relayed to ``to`` so far."""
    return [m for m in box.to(to) if m["subject"].split(": ", 1)[-1].startswith(("a player", *NAMES))]


NAMES = ("alice ", "bob ", "carol ", "dave ")


def receipt(box: Mailbox, to: str) -> str:
    """The newest answer to ``to``'s own mail, on one line."""
    return " ".join([m for m in box.to(to) if m["subject"].startswith("Re: ")][-1]["body"].split())


def legal(engine: Engine, address: str, game: int = 1) -> str:
    """A move the seat could make now, as a player writes it."""
    table = engine.table(game)
    seat = table.seat_of(address)
    return table.rules.move_text(table.rules.legal_moves(table.state, seat)[0])


def test_white_press_to_one_player_reaches_them_alone_signed_and_showing_no_address(engine, clock, box):
    start(engine, box)
    assert send(engine, clock, ALICE, "TELL bob Shall we share the Suns?").code == "done"
    [mail] = talk(box, BOB)
    assert "alice writes to you alone, through the referee:" in mail["body"]
    assert "Shall we share the Suns?" in mail["body"]
    assert mail["subject"].endswith("Bid! 1: alice writes to you")
    assert not [address for address in (ALICE, CAROL, DAVE) if address in mail["raw"].decode()]  # (To: is bob's)
    assert mail["reply_to"].startswith("referee+") and mail["reply_to"] != engine.table(1).seats[1]["token"]
    assert talk(box, CAROL) == talk(box, DAVE) == []
    assert "Passed on to bob, signed with your name, alice." in receipt(box, ALICE)
    assert engine.store.moves(1) == []


@pytest.mark.parametrize("whom", ["bob", "BOB:", "2", "#2", "b"])
def test_a_player_is_named_by_name_by_seat_number_or_a_unique_start(engine, clock, box, whom):
    start(engine, box)
    assert send(engine, clock, ALICE, f"TELL {whom} hello").code == "done"
    assert len(talk(box, BOB)) == 1


@pytest.mark.parametrize(
    ("whom", "said"),
    [
        ("zed", '"zed" names no seat of this game. You may write to bob, carol, dave'),
        ("9", '"9" names no seat of this game.'),
        ("alice", "That is your own seat."),
    ],
)
def test_a_tell_naming_nobody_is_refused_politely_and_relays_nothing(engine, clock, box, whom, said):
    start(engine, box)
    assert send(engine, clock, ALICE, f"TELL {whom} hello").code == "refused"
    assert said in receipt(box, ALICE)
    assert [talk(box, p) for p in (BOB, CAROL, DAVE)] == [[], [], []]


def test_a_start_several_names_share_is_refused_naming_them(engine, clock, box):
    engine.new_game("bid", [ALICE, "bob@example.org", "bea@example.org"])
    box.new()
    assert send(engine, clock, ALICE, "TELL b hello").code == "refused"
    assert '"b" could be bob or bea: write more of the name' in receipt(box, ALICE)


def test_white_press_to_all_reaches_every_person_but_bots_and_those_who_left(engine, clock, box):
    start(engine, box, bots=1)
    assert send(engine, clock, CAROL, "RESIGN").code == "done"
    assert send(engine, clock, ALICE, "TELL ALL Good luck, everyone.").code == "done"
    [mail] = talk(box, BOB)
    assert "alice writes to everyone at the table, through the referee:" in mail["body"]
    assert talk(box, CAROL) == []  # she left
    assert "Passed on to everyone at the table (bob), signed with your name, alice." in receipt(box, ALICE)
    assert send(engine, clock, ALICE, "TELL 4 hi").code == "refused"
    assert "bot 4 is a bot's seat: bots get no table talk." in receipt(box, ALICE)
    assert send(engine, clock, ALICE, "TELL carol hi").code == "refused"
    assert "carol has left the game" in receipt(box, ALICE)


def test_grey_press_where_the_game_allows_it_names_nobody(engine, clock, box):
    start(engine, box, press=Press.GREY)
    assert send(engine, clock, ALICE, "TELL ALL GREY Bob is bluffing.").code == "done"
    for reader in (BOB, CAROL, DAVE):
        [mail] = talk(box, reader)
        text = mail["raw"].decode()
        assert "Bob is bluffing." in mail["body"] and "A player of this game (unsigned: grey press)" in mail["body"]
        assert "alice" not in text.lower()
    assert "unsigned: they are not told who wrote" in receipt(box, ALICE)
    assert send(engine, clock, ALICE, "TELL GREY carol psst").code == "done"
    assert len(talk(box, CAROL)) == 2 and "alice" not in talk(box, CAROL)[-1]["body"]


def test_grey_press_is_refused_where_the_game_relays_signed_talk_only(engine, clock, box):
    start(engine, box)
    assert send(engine, clock, ALICE, "TELL ALL ANON Bob is bluffing.").code == "refused"
    assert "This game relays signed table talk only (white press)" in receipt(box, ALICE)
    assert talk(box, BOB) == [] and engine.store.press_since(1, 0, "") == []


def test_pure_skill_relays_no_table_talk_citing_its_rule_7(engine, clock, box):
    engine.new_game("pure-skill", PLAYERS)
    box.new()
    assert send(engine, clock, ALICE, "TELL bob let us both bid low").code == "refused"
    said = receipt(box, ALICE)
    assert "This game relays no table talk: Game of Pure Skill's rule 7: \"Players may not discuss or collude" in said
    assert talk(box, BOB) == [] and engine.store.press_since(1, 0, "") == []


def test_the_keepers_press_at_new_decides_by_mail_and_by_the_shell(engine, clock, box):
    body = "NEW bid alice@example.org bob@example.org carol@example.org press=none"
    assert order(engine, clock, body).code == "done"
    assert engine.table(1).row["press"] == "none"
    assert send(engine, clock, ALICE, "TELL bob hi").code == "refused"
    assert "This game relays no table talk: its keeper chose so when it began." in receipt(box, ALICE)
    assert order(engine, clock, "NEW bid alice@example.org bob@example.org press=loud").code == "refused"
    assert order(engine, clock, "NEW pure-skill a@example.org b@example.org c@example.org press=grey").code == "done"
    assert engine.table(2).row["press"] == "grey"  # the keeper may allow what the rules' default does not


def test_the_shell_sets_a_games_press_at_new(run, tmp_path):
    players = [word for player in PLAYERS for word in ("--player", player)]
    assert run("new", "priority", *players, "--press", "grey")[0] == 0
    assert run("new", "priority", *players)[0] == 0
    assert run("new", "priority", *players, "--press", "loud")[0] == 2  # argparse: not a choice
    store = Store(tmp_path / "games.db")
    assert [store.game(1)["press"], store.game(2)["press"]] == ["grey", None]  # None: the kind's own (white)


def test_a_reply_to_press_goes_back_through_the_referee_both_ways(engine, clock, box):
    start(engine, box)
    send(engine, clock, ALICE, "TELL bob Shall we share the Suns?")
    [to_bob] = talk(box, BOB)
    assert answer(engine, clock, to_bob, "Yes, if you leave me the Moons.\n\n> Shall we share the Suns?").code == "done"
    [to_alice] = talk(box, ALICE)
    assert "bob answers your table talk, through the referee:" in to_alice["body"]
    assert "Yes, if you leave me the Moons." in to_alice["body"]
    assert "Shall we share the Suns?" not in to_alice["body"]  # the quote is not passed on
    assert "Passed on to alice, signed with your name, bob." in receipt(box, BOB)
    assert answer(engine, clock, to_alice, "Deal.").code == "done"
    assert "Deal." in talk(box, BOB)[-1]["body"] and "alice answers your table talk" in talk(box, BOB)[-1]["body"]
    assert talk(box, CAROL) == talk(box, DAVE) == []


def test_a_reply_to_grey_press_reaches_the_writer_without_naming_either(engine, clock, box):
    start(engine, box, press=Press.GREY)
    send(engine, clock, ALICE, "TELL bob GREY Carol leads: stop her.")
    [to_bob] = talk(box, BOB)
    assert answer(engine, clock, to_bob, "Who are you?").code == "done"
    said = receipt(box, BOB)
    assert "Passed on to the writer, if they still play" in said and "unsigned" in said and "alice" not in said
    [to_alice] = talk(box, ALICE)
    assert "Who are you?" in to_alice["body"] and "bob" not in to_alice["raw"].decode().lower()


def test_a_reply_to_press_from_another_address_is_refused_and_relays_nothing(engine, clock, box):
    start(engine, box)
    send(engine, clock, ALICE, "TELL bob hello")
    [to_bob] = talk(box, BOB)
    forged = make_mail(EVE, "Alice, bob here: bid everything.", to=to_bob["reply_to"], received=clock())
    outcome = engine.ingest(forged)
    assert (outcome.code, outcome.detail) == ("refused", f"a reply token used from another address; {BOB} was told")
    assert talk(box, ALICE) == [] and box.to(EVE) == []


def test_tell_all_with_a_move_in_it_relays_the_words_and_moves_nothing(engine, clock, box):
    start(engine, box)
    move = legal(engine, ALICE)
    assert send(engine, clock, ALICE, f"TELL ALL {move}").code == "done"
    assert engine.store.moves(1) == []
    assert move in talk(box, BOB)[0]["body"]


def test_a_reply_to_press_that_names_a_move_is_relayed_never_played(engine, clock, box):
    start(engine, box)
    send(engine, clock, ALICE, "TELL bob what will you bid?")
    move = legal(engine, BOB)
    assert answer(engine, clock, talk(box, BOB)[0], move).code == "done"
    assert engine.store.moves(1) == []
    assert move in talk(box, ALICE)[0]["body"]


def test_a_move_beside_a_tell_in_one_mail_is_still_a_move(engine, clock, box):
    start(engine, box)
    move = legal(engine, ALICE)
    assert send(engine, clock, ALICE, f"{move}\nTELL ALL good luck").code in ("move", "replaced")
    assert [m["seat"] for m in engine.store.moves(1)] == [0]
    assert "good luck" in talk(box, BOB)[0]["body"] and move not in talk(box, BOB)[0]["body"]


def test_tell_alone_on_its_line_relays_the_paragraph_below_up_to_end_and_moves_nothing(engine, clock, box):
    start(engine, box)
    move = legal(engine, ALICE)
    body = f"TELL ALL\nFriends,\nI shall play {move} and so should you:\n{move}\nEND\nRESIGN"
    assert send(engine, clock, ALICE, body).code == "done"
    relayed = talk(box, BOB)[0]["body"]
    assert f"Friends,\nI shall play {move} and so should you:\n{move}\n" in relayed
    assert "RESIGN" not in relayed and "END" not in relayed
    assert engine.store.moves(1) == [] and engine.table(1).human(0)


def test_a_refused_paragraph_is_not_read_as_moves_either(engine, clock, box):
    start(engine, box)
    move = legal(engine, ALICE)
    assert send(engine, clock, ALICE, f"TELL nobody\n{move}").code == "refused"
    assert engine.store.moves(1) == []


def test_press_in_a_reply_to_the_prompt_relays_no_quoted_line_of_it(engine, clock, box):
    start(engine, box)
    prompt = box.to(ALICE)[-1]  # the start mail: her hand and the dice
    quoted = "\n".join(f"> {line}" for line in prompt["body"].splitlines())
    for body in (f"TELL ALL hello\n\nOn Sat, the referee wrote:\n{quoted}", f"TELL ALL\nhello\n\n{quoted}"):
        assert answer(engine, clock, prompt, body).code == "done"
        relayed = talk(box, BOB)[-1]["body"]
        words = relayed.split("through the referee:\n", 1)[1].split("\n\nTo answer", 1)[0]
        assert words.strip() == "hello"
    own = [line for line in prompt["body"].splitlines() if len(line) > 8 and "alice" in line.lower()]
    assert own and not [line for line in own if line in talk(box, BOB)[-1]["body"]]


def test_press_is_rate_limited_per_seat_and_day_saying_when_more_may_go(engine, clock, box):
    start(engine, box)
    for number in range(3):  # press_per_day = 3
        assert send(engine, clock, ALICE, f"TELL bob number {number}").code == "done"
        clock.advance(hours=1)
    assert send(engine, clock, ALICE, "TELL bob one too many").code == "refused"
    said = receipt(box, ALICE)
    assert "Your seat has sent 3 messages of table talk within a day, as many as it may: the next may go from" in said
    assert "2026-11-22 12:00 UTC" in said  # a day after the first
    assert len(talk(box, BOB)) == 3
    assert send(engine, clock, BOB, "TELL alice my own count").code == "done"  # a seat's own limit
    clock.advance(hours=21)
    assert send(engine, clock, ALICE, "TELL bob number 4").code == "done", receipt(box, ALICE)
    assert len(engine.store.press_since(1, 0, "")) == 4  # counted (never what it said)


def test_press_is_never_on_the_record_the_site_or_the_info_log(engine, clock, box, tmp_path, caplog):
    start(engine, box)
    with caplog.at_level(logging.INFO, logger="referee"):
        send(engine, clock, ALICE, "TELL ALL the secret word is marmalade")
        answer(engine, clock, talk(box, BOB)[0], "marmalade indeed")
    assert len(talk(box, ALICE)) == 1
    assert "marmalade" not in json.dumps(game_record(engine.table(1)))
    Site(engine, tmp_path / "site").render()
    assert not [p for p in (tmp_path / "site").rglob("*") if p.is_file() and b"marmalade" in p.read_bytes()]
    assert "table talk to 3 seat(s)" in caplog.text and "marmalade" not in caplog.text
    assert engine.table(1).interventions == []  # it changes no game, so is no intervention


def test_a_stand_in_neither_tells_nor_hears_table_talk(engine, clock, box):
    from test_delegating import DORA, stand_in

    start(engine, box)
    welcome = stand_in(engine, clock, box, player=BOB)
    assert answer(engine, clock, welcome, "TELL alice hi from the stand-in").code == "refused"
    assert "TELL is for the seat's own player" in receipt(box, DORA)
    assert send(engine, clock, ALICE, "TELL bob hello").code == "done"
    assert len(talk(box, BOB)) == 1 and talk(box, DORA) == []
