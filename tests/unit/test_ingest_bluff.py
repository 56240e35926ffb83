"""Bluff Auction by mail, through ``ingest``: a whole game with a silent
player, each player's dice reaching only them, and ``verify`` of the
finished game (and of a tampered one)."""

from __future__ import annotations

import json
import random
import re
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock, Mailbox, Seeds, answer, examples, info_log

from referee.config import Config
from referee.engine import Engine
from referee.record import verify
from referee.rules import get_game
from referee.site.public import game_record
from referee.site.render import Site
from referee.store import Store
from referee.tables import deadlines

RULES = get_game("bluff")
TURN, DECISION = timedelta(hours=6), timedelta(hours=2)
ALICE, BOB, CAROL = PLAYERS  # carol never answers
_PROMPT = re.compile(r"^(?P<label>Round \d+ .+) of game \d+: it is your turn\.", re.M)
_DICE = re.compile(r"^Your \d+ dic?e \(only you see them\): (.+)\.$", re.M)
_NEWS = re.compile(r"^  Your \d+ dic?e for round (\d+): (.+)\.$", re.M)


def prompt_label(mail: dict) -> str | None:
    match = _PROMPT.search(mail["body"])
    return match["label"] if match and not mail["subject"].startswith("Re:") else None


class Played:
    """A whole 3-player game by mail: alice and bob answer each prompt with
    one of the moves it suggests; carol never answers.  The log at INFO is kept."""

    def __init__(self, root: Path, seed: bytes):
        config = Config(address="referee@example.org", database=root / "games.db", reminder=None, outage_gap=None)
        self.clock = FakeClock()
        self.engine = Engine(Store(config.database), config, self.clock, Seeds(seed))
        self.box = Mailbox(self.engine)
        self.dice_seen: list[tuple[str, int, str]] = []  # (to, round, dice as mailed)
        self.records_mid: list[dict] = []
        with info_log() as lines:
            self.game = self.engine.new_game("bluff", PLAYERS, turn_deadline=TURN, decision_deadline=DECISION)
            self.play(random.Random(3))
        self.log = "\n".join(lines)
        self.box.new()  # the last mails too
        self.site = root / "site"
        Site(self.engine, self.site).render()

    def play(self, choose: random.Random) -> None:
        engine, clock = self.engine, self.clock
        for _ in range(800):
            status = engine.status(self.game)
            if status["state"] != "running":
                return
            phase = status["phase"]
            movers = [p for p in phase["waiting_for"] if p != CAROL]
            if not movers:  # carol's turn (or a phase only she owes): its deadline passes
                clock.advance(seconds=TURN.total_seconds() + 1)
                engine.tick()
                continue
            for mover in movers:
                pending = [m for m in self.box.to(mover) if prompt_label(m) == phase["label"]]
                assert len(pending) == 1, (phase["label"], mover)
                offered = examples(pending[0]["body"])
                assert offered, pending[0]["body"]
                clock.advance(minutes=choose.randint(1, 30))
                outcome = answer(engine, clock, pending[0], choose.choice(offered))
                assert outcome.code == "move", (phase["label"], outcome)
            if "carol" in " ".join(phase["waiting_for"]) and engine.status(self.game)["phase"] == phase:
                clock.advance(seconds=TURN.total_seconds() + 1)  # a sealed phase carol owes too
                engine.tick()
            if len(self.records_mid) < 5 and choose.random() < 0.05:
                self.records_mid.append(game_record(engine.table(self.game)))
        raise AssertionError("the game did not end")


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    return Played(tmp_path_factory.mktemp("bluff"), b"b" * 32)  # one seed, so the game is the same at every run


def test_a_whole_game_by_mail_ends_after_nine_rounds(played: Played):
    status = played.engine.status(played.game)
    assert status["state"] == "finished"
    state = played.engine.table(played.game).state
    assert state.round == 9 and state.stage == "over"
    finals = [m for m in played.box.all if "Game over" in m["subject"]]
    assert sorted(m["to"] for m in finals) == sorted(PLAYERS)
    moves = played.engine.store.moves(played.game)
    assert {m["source"] for m in moves if m["seat"] == 2} <= {"random", "forced"}
    assert {m["source"] for m in moves if m["seat"] in (0, 1)} <= {"mail", "forced"}
    assert any(m["source"] == "random" for m in moves if m["seat"] == 2)


def test_each_player_gets_their_own_dice_and_no_one_elses(played: Played):
    table = played.engine.table(played.game)
    replayed = {}
    for step in [None, *table.replay.steps]:  # the dice each seat held after each phase
        state = step.before if step else None
        if state is not None:
            replayed.setdefault(state.round, [set() for _ in PLAYERS])
            for seat in range(3):
                replayed[state.round][seat].add(", ".join(state.dice[seat]))
    news_rounds = {p: set() for p in PLAYERS}
    for mail in played.box.all:
        for number, dice in _NEWS.findall(mail["body"]):
            seat = PLAYERS.index(mail["to"])
            faces = dice  # the faces alone, no die numbers: "blue, purple, purple"
            assert faces in replayed.get(int(number), [set()] * 3)[seat] or int(number) not in replayed, (
                mail["to"],
                number,
            )
            news_rounds[mail["to"]].add(int(number))
        for _dice in _DICE.findall(mail["body"]):
            assert mail["subject"].startswith("Re:") or prompt_label(mail), mail["subject"]
    for player in PLAYERS:
        assert news_rounds[player] == set(range(1, 10)), player  # every round's dice, privately
    assert not re.search(r"Your dice", played.log)


# What each special tile does, in words a prompt must use (F2, the text's "Tile powers")
_POWERS = {
    "Wild Attribute": "joins any set as any colour, era or type",
    "2 Virtual Purple Dice (1-shot)": "once, 2 purple dice only you count",
    "2 Dice": "you roll 2 more dice every round",
    "Extra Bid Token": "one more bid token every round",
    "Outbid by 2": "must outbid your high bids by 2",
    "Extra Museum Room": "your museum holds 2 more tiles",
    "Virtual Purple Die": "a purple die only you count, in every auction",
    "Overbid with Tie": "bid equal to the high bid",
    "4 Points": "4 points at the end",
}
_ON_PURPLE = re.compile(r"^  purple  ([^:\n]+)", re.MULTILINE)  # the tile, before its bids
_SPECIAL = re.compile(r"^Purple's special tile, (.+?): (.+)$", re.MULTILINE)


def test_each_prompt_says_in_one_line_what_the_special_tile_on_offer_does(played: Played):
    prompts = [m for m in played.box.all if prompt_label(m)]
    told = set()
    for mail in prompts:
        (offer,) = _ON_PURPLE.findall(mail["body"]) or [None]
        lines = _SPECIAL.findall(mail["body"])
        if offer in (None, "(resolved)"):
            assert lines == [], mail["subject"]  # nothing on offer on purple: no line
            continue
        assert len(lines) == 1, mail["subject"]
        ((tile, power),) = lines
        assert tile == offer and _POWERS[tile] in power, (tile, power)
        told.add(tile)
    assert told == set(_POWERS)  # nine rounds offer every special tile once
    others = [m for m in played.box.all if not prompt_label(m)]
    assert others and not any(_SPECIAL.search(m["body"]) for m in others)


def test_the_running_record_log_and_status_show_no_die_before_it_is_shown(played: Played):
    assert played.records_mid
    for record in played.records_mid:
        assert all(m["move"] is None for phase in record["phases"] for m in phase["moves"])
        for phase in record["phases"]:
            for event in phase["events"]:
                if event["type"] in ("bid", "move", "pass", "rerolled"):
                    assert not {"dice", "faces"} & set(event)
    assert "dice" not in json.dumps(played.engine.status(played.game))


def test_the_site_shows_every_auction_and_the_record_verifies(played: Played):
    folder = played.site / f"games/{played.game}"
    # the game's page and, its older phases, its history pages (issue 36: a block of phases a page)
    pages = [folder / "index.html", *sorted(folder.glob("history-*.html"))]
    shown = sum(page.read_text().count("(dice: ") for page in pages)
    assert shown == 9 * 6  # every auction of every round, with its dice
    record = json.loads((played.site / f"games/{played.game}/record.json").read_text())
    verdict = verify(record)
    assert verdict.ok, verdict.message
    tampered = json.loads(json.dumps(record))
    entry, move = next(
        (e, m)
        for e in tampered["phases"]
        for m in e["moves"]
        if m["source"] == "random" and m["move"].startswith("bid")
    )
    parts = move["move"].split()
    move["move"] = f"bid {parts[1]} {int(parts[2]) + 1}"
    verdict = verify(tampered)
    assert (verdict.ok, verdict.phase) == (False, entry["number"]), verdict


def test_the_site_while_bidding_does_not_depend_on_the_dice_not_yet_shown(tmp_path):
    """The site of a game in the middle of its bidding, rendered again with
    every player's dice changed for others: the same bytes."""
    from dataclasses import replace as changed

    from referee.record import Replay

    clock = FakeClock()
    config = Config(address="referee@example.org", database=tmp_path / "games.db", reminder=None, outage_gap=None)
    engine = Engine(Store(config.database), config, clock)
    game = engine.new_game("bluff", PLAYERS, turn_deadline=TURN)
    for _ in range(4):  # a few turns by deadline, so bids are on the board
        clock.advance(seconds=TURN.total_seconds() + 1)
        engine.tick()
    table = engine.table(game)
    assert table.state.stage == "bidding" and any(table.state.bids)

    class Twin:  # what the site reads, with other dice
        store, config, key = engine.store, engine.config, engine.key
        clock = engine.clock

        class tables:  # stands in for Tables
            @staticmethod
            def table(game_id):
                real = engine.table(game_id)
                faces = ("black", "red", "yellow", "blue", "green", "purple")
                dice = tuple(tuple(faces[(faces.index(f) + 1) % 6] for f in d) for d in real.state.dice)
                return changed(real, replay=Replay(changed(real.state, dice=dice), real.replay.steps))

    Site(engine, tmp_path / "real").render()
    Site(Twin, tmp_path / "twin").render()
    real = {p.name: p.read_bytes() for p in (tmp_path / "real" / f"games/{game}").iterdir()}
    twin = {p.name: p.read_bytes() for p in (tmp_path / "twin" / f"games/{game}").iterdir()}
    assert real == twin


def test_a_bluff_game_gets_its_own_short_deadlines_unless_the_keeper_or_config_says_otherwise(tmp_path):
    from dataclasses import replace as changed

    clock = FakeClock()
    config = Config(address="referee@example.org", database=tmp_path / "games.db", reminder=None, outage_gap=None)
    engine = Engine(Store(config.database), config, clock)
    game = engine.new_game("bluff", PLAYERS)
    assert deadlines(engine.store.game(game)) == {
        "round": config.deadline,
        "turn": timedelta(hours=12),
        "decision": timedelta(hours=6),
    }
    game = engine.new_game("bluff", PLAYERS, turn_deadline=timedelta(days=1))
    assert deadlines(engine.store.game(game))["turn"] == timedelta(days=1)
    other = Engine(Store(tmp_path / "other.db"), changed(config, turn_deadline=timedelta(hours=3)), clock)
    game = other.new_game("bluff", PLAYERS)
    assert deadlines(other.store.game(game))["turn"] == timedelta(hours=3)
    game = engine.new_game("ice", PLAYERS)  # a game without its own keeps the round deadline
    assert deadlines(engine.store.game(game))["turn"] == config.deadline


def test_a_receipt_calls_a_move_that_is_no_bid_a_move(played: Played):
    """ "Your bid for Round 2 tools is in: keep." said a sealed reroll's receipt."""
    receipts = [m["body"] for m in played.box.all if m["subject"].startswith("Re: ")]
    kept = [body for body in receipts if re.search(r"is in: (keep|reroll)", body)]
    assert kept, "no receipt of a reroll phase"
    assert all("Your move for" in body and "Your bid for" not in body for body in kept)


def test_a_game_stored_before_the_rulings_option_keeps_the_first_rulings(tmp_path):
    """F21: a game in games.db from before the option has options without
    "rulings"; it goes on by the rulings it began with, a new game by the second."""
    clock = FakeClock()
    config = Config(address="referee@example.org", database=tmp_path / "games.db", reminder=None, outage_gap=None)
    engine = Engine(Store(config.database), config, clock)
    old, new = engine.new_game("bluff", PLAYERS), engine.new_game("bluff", PLAYERS)
    assert engine.store.game(new)["options"] == {"exhibit_dice": 1, "rulings": 2}
    engine.store.db.execute("UPDATE games SET options = ? WHERE id = ?", ['{"exhibit_dice": 1}', old])
    engine.store.db.conn.commit()
    again = Engine(Store(config.database), config, clock)
    assert again.table(old).state.rulings == 1 and again.table(new).state.rulings == 2
    assert again.table(old).state.dice == engine.table(old).state.dice  # the same game, by its first rulings


def test_the_final_mail_names_each_part_of_the_points(played: Played):
    """Star points are points, with the right plural ("1 star point", "3 star
    points", never "1 stars"); 4 Points is named when a player has it."""
    final = next(m for m in played.box.all if "Game over" in m["subject"])
    lines = re.findall(
        r"^  \S.*? +(\d+) = (\d+) exhibited \+ (\d+) museum \+ (\d+) star (point|points)"
        r"(?: \+ (4) for 4 Points)?$",
        final["body"],
        re.MULTILINE,
    )
    assert len(lines) == 3, final["body"]
    for total, exhibited, museum, stars, word, four in lines:
        assert int(total) == int(exhibited) + int(museum) + int(stars) + int(four or 0)
        assert (word == "point") == (stars == "1")
    assert " stars +" not in final["body"]


def test_a_special_tile_won_with_a_set_ready_is_asked_about_and_a_move_names_its_token(played: Played):
    """F16: the winner of a special tile with a set ready is prompted to
    exhibit it (or not); F20: the announcements say which token moved."""
    asked = [
        m
        for m in played.box.all
        if (label := prompt_label(m))
        and "acquisition:" in label
        and "goes beside your museum (it takes no circle)" in m["body"]
    ]
    assert asked and all("    place\n" in m["body"] for m in asked)
    assert any(re.search(r"moves their token of \d+ from \w+ to \w+ at \d+", m["body"]) for m in played.box.all)
