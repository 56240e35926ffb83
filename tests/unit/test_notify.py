"""As much mail as each player wants (issue 33, item 4): NOTIFY EVERY,
TURNS (the default) and DIGEST, and the keeper's default per game.

Whole games of every kind played by people by mail, twice from the same
seed and with the same moves: once with every player at EVERY (the game's
option), once at the config's TURNS with alice asking NOTIFY EVERY.  The
games are the same game (the same record); only the mail differs."""

from __future__ import annotations

import email
import random
import re
from collections import Counter
from dataclasses import replace
from datetime import timedelta
from email import policy
from pathlib import Path
from typing import Any

import pytest
from conftest import PLAYERS, START, FakeClock, Mailbox, Seeds, answer, make_mail, send, to_deadline
from test_cli import cfg as _cfg
from test_cli import run as _run
from test_keeper_mail import KEEPER, order

from referee.config import Config, ConfigError, load
from referee.engine import Engine
from referee.record import verify
from referee.rules import GAMES
from referee.site.public import game_record
from referee.store import Notify, Store
from referee.timeutil import from_iso

ALICE, BOB, CAROL = PLAYERS
cfg, run = _cfg, _run  # the fixtures: a config file, and `referee` run with it
KINDS = ["pure-skill", "bid", "ice", "priority", "bluff"]
SINCE = "Since your last mail about this game:"
RECEIPT = "In answer to your mail:"


def header(mail: dict, name: str) -> str | None:
    return email.message_from_bytes(mail["raw"], policy=policy.default)[name]


class Played:
    """One whole game of ``kind`` by mail, every seat a person's: each
    mover answers the newest mail the referee sent them, within half an
    hour, with a legal move drawn from a random stream of its own (named
    ``draw``, by default the kind).
    ``notify``: the game's level (the keeper's option); ``asks``: the
    NOTIFY each player sends at the start."""

    def __init__(
        self,
        root: Path,
        kind: str,
        notify: Notify | None = None,
        asks: dict[str, str] | None = None,
        draw: str = "",
        **settings: Any,
    ):
        # Reminders on (the config's default): nobody is late enough to get one.
        config = Config(address="referee@example.org", database=root / "games.db", outage_gap=None, **settings)
        self.clock = FakeClock()
        self.engine = Engine(Store(config.database), config, self.clock, Seeds(bytes(range(32))))
        self.game = self.engine.new_game(kind, PLAYERS, notify=notify)
        self.box = Mailbox(self.engine)
        for address, level in (asks or {}).items():
            assert answer(self.engine, self.clock, self.box.to(address)[-1], f"NOTIFY {level}").code == "done"
        self.moves: Counter[str] = Counter()  # each player's moves by mail
        self.play(random.Random(draw or kind))
        self.box.new()

    def play(self, choose: random.Random) -> None:
        engine = self.engine
        for _ in range(3000):
            status = engine.status(self.game)
            if status["state"] != "running":
                return
            for mover in status["phase"]["waiting_for"]:
                table = engine.table(self.game)
                seat = table.seat_of(mover)
                move = table.rules.move_text(choose.choice(table.rules.legal_moves(table.state, seat)))
                self.clock.advance(minutes=choose.randint(1, 30))
                outcome = answer(engine, self.clock, self.box.to(mover)[-1], move)
                assert outcome.code == "move", (status["phase"]["label"], mover, move, outcome)
                self.moves[mover] += 1
        raise AssertionError("the game did not end")

    @property
    def rounds(self) -> int:
        """How many rounds or auctions the game had (Game.round_of)."""
        table = self.engine.table(self.game)
        groups = [table.rules.round_of(phase["label"]) for phase in table.phases]
        return sum(1 for here, after in zip(groups, [*groups[1:], None], strict=True) if here != after)

    def count(self, address: str) -> int:
        return len(self.box.to(address))

    def subjects(self, address: str) -> list[str]:
        return [mail["subject"] for mail in self.box.to(address)]


@pytest.fixture(scope="module", params=KINDS)
def pair(request, tmp_path_factory) -> tuple[Played, Played]:
    """The same game of a kind played at EVERY and at TURNS (alice at EVERY)."""
    kind = request.param
    every = Played(tmp_path_factory.mktemp(f"{kind}-every"), kind, notify=Notify.EVERY)
    turns = Played(tmp_path_factory.mktemp(f"{kind}-turns"), kind, asks={ALICE: "every"})
    return every, turns


def test_the_levels_change_the_mail_never_the_game(pair):
    every, turns = pair
    assert game_record(every.engine.table(1)) == game_record(turns.engine.table(1))
    assert verify(game_record(turns.engine.table(1))).ok


def test_at_turns_a_player_gets_at_most_two_mails_a_move_one_a_round_and_five_more(pair):
    every, turns = pair
    for address in (BOB, CAROL):
        bound = 2 * turns.moves[address] + turns.rounds + 5
        assert turns.count(address) <= bound, (address, turns.count(address), bound)
        assert turns.count(address) <= every.count(address)
    # (in a sealed game every phase is a round: only the last bid's receipt, folded in, is spared)
    assert turns.count(BOB) + turns.count(CAROL) < every.count(BOB) + every.count(CAROL)


def test_a_player_at_every_in_the_same_game_still_gets_every_turn(pair):
    every, turns = pair
    theirs = turns.subjects(ALICE)
    notify_answer = next(s for s in theirs if s.startswith("Re:"))  # her NOTIFY EVERY's, before any move
    theirs.remove(notify_answer)
    assert theirs == every.subjects(ALICE)


def test_what_others_did_comes_at_the_top_of_the_next_prompt(pair):
    _, turns = pair
    table = turns.engine.table(1)
    heads = [mail["body"] for mail in turns.box.to(BOB) if mail["body"].startswith(SINCE)]
    if all(phase["sealed"] and len(phase["movers"]) == 3 for phase in table.phases):
        assert not heads  # every phase is a round of its own: its result went to everyone, nothing is left over
        return
    assert heads, "no mail of bob's began with what happened since his last"
    # and nothing public in it that is not the game's: every label it names is one of its phases
    labels = {phase["label"] for phase in table.phases}
    for body in heads:
        told = body.split("-" * 72)[0]
        named = re.findall(r"^(\S.*?):$", told, re.M)[1:] or re.findall(r"^  (.+?): ", told, re.M)
        assert named and set(named) <= labels, named


def test_a_receipt_is_folded_into_the_result_its_move_completed(pair):
    _, turns = pair
    theirs = turns.box.to(BOB) + turns.box.to(CAROL)
    folded = [m for m in theirs if m["body"].startswith(RECEIPT) and not m["subject"].startswith("Re:")]
    assert folded, "no receipt went at the top of the mail its move brought"
    for mail in folded:  # each answers its player's mail: a reply to it threads under it
        assert header(mail, "In-Reply-To")


def test_private_news_of_a_result_not_sent_reaches_its_player(pair):
    """A seat's private news (Bluff's dice after its reroll, Priority's
    colour it can now work out) in a result a TURNS player no longer gets
    reaches them: at the top of their prompt, or in a mail of its own."""
    _, turns = pair
    engine, table = turns.engine, turns.engine.table(1)
    rules, steps = table.rules, table.replay.steps
    for seat, address in ((1, BOB), (2, CAROL)):
        bodies = "\n".join(mail["body"] for mail in turns.box.to(address))
        for index, step in enumerate(steps):
            after = steps[index + 1].before if index + 1 < len(steps) else table.state
            news = rules.private_news(step.before, after, seat)
            if news is not None:
                text = engine.post.composer.section("_news", game=engine.post.game_info(table), news=news)
                assert text.split("Only for you:")[1].strip() in bodies, (address, step.phase.label)


def test_a_reroll_s_dice_reach_a_turns_player_whose_result_was_not_sent(tmp_path):
    """Bluff's Tools: a seat's dice after its reroll are its private news,
    in the result of the tools phase, which does not end the round: a
    TURNS player does not get that result, but gets the dice, at the top
    of their prompt when their turn follows at once, else in a mail of
    their own.  (These moves reroll in rounds 3 to 5.)"""
    played = Played(tmp_path, "bluff", draw="bluff6")
    engine, table = played.engine, played.engine.table(1)
    steps, groups = table.replay.steps, [table.rules.round_of(phase["label"]) for phase in table.phases]
    ways = Counter()
    for index, step in enumerate(steps):
        if step.phase.label.endswith("tools") and groups[index] == groups[index + 1]:
            for seat, address in enumerate(PLAYERS):
                news = table.rules.private_news(step.before, steps[index + 1].before, seat)
                if news is None:
                    continue
                text = engine.post.composer.section("_news", game=engine.post.game_info(table), news=news)
                # (a reroll may roll the dice the round began with: the round's first mail said those)
                mail = [m for m in played.box.to(address) if text in m["body"]][-1]
                opened = steps[index + 1].phase.label
                assert re.search(rf"\] {opened}: (your turn|news only for you)", mail["subject"]), mail["subject"]
                ways["prompt" if "it is your turn" in mail["body"] else "own"] += 1
    assert ways["prompt"] and ways["own"], ways


# -- NOTIFY by mail -------------------------------------------------------------


def test_notify_tells_and_sets_the_level_each_in_one_mail(engine, clock):
    engine.new_game("ice", PLAYERS)
    box = Mailbox(engine)
    box.new()
    assert send(engine, clock, BOB, "NOTIFY").code == "done"
    (told,) = box.new()
    assert told["to"] == BOB
    assert "You get a mail when it is your turn" in " ".join(told["body"].split())
    assert "(this game's default)" in told["body"] and "NOTIFY EVERY" in told["body"]
    assert send(engine, clock, BOB, "notify digest").code == "done"
    (told,) = box.new()
    assert "From now on you get a mail when it is your turn" in " ".join(told["body"].split())
    assert "one mail a day" in " ".join(told["body"].split())
    assert engine.table(1).seats[1]["notify"] == "digest"
    assert send(engine, clock, BOB, "NOTIFY sometimes").code == "refused"
    (told,) = box.new()
    assert '"sometimes" is not a level of mail' in " ".join(told["body"].split())
    assert engine.table(1).seats[1]["notify"] == "digest"
    # a stranger cannot change a player's mail
    assert engine.ingest(make_mail(BOB, "NOTIFY EVERY", received=clock())).code == "refused"
    assert engine.table(1).seats[1]["notify"] == "digest"


def test_help_lists_notify(engine, clock):
    engine.new_game("ice", PLAYERS)
    box = Mailbox(engine)
    box.new()
    send(engine, clock, BOB, "HELP")
    (help_,) = box.new()
    assert "NOTIFY [EVERY|TURNS|DIGEST]" in help_["body"]


def test_the_start_mail_says_how_much_mail_each_gets_and_how_to_change_it(engine):
    engine.new_game("ice", PLAYERS)
    engine.new_game("ice", PLAYERS, notify=Notify.EVERY)
    box = Mailbox(engine)
    start = [m for m in box.new() if "begins" in m["subject"]]
    by_game = {(m["game_id"], m["to"]): " ".join(m["body"].split()) for m in start}
    assert "you get a mail when it is your turn" in by_game[1, BOB]
    assert "Reply NOTIFY EVERY for every turn" in by_game[1, BOB]
    assert "you get a mail for every turn's or round's result" in by_game[2, BOB]
    assert "Reply NOTIFY TURNS" in by_game[2, BOB]


def test_the_keeper_sets_a_games_level_by_mail_and_the_config_the_default(engine, clock, config):
    keeping = Engine(engine.store, replace(config, keepers=(KEEPER,)), clock)
    assert order(keeping, clock, f"NEW ice {ALICE} {BOB} notify=every").code == "done"
    assert keeping.table(1).row["notify"] == "every"
    assert order(keeping, clock, f"NEW ice {ALICE} {BOB} notify=sometimes").code == "refused"
    assert len(keeping.store.games()) == 1
    assert keeping.post.level(keeping.table(1), 0) is Notify.EVERY
    quiet = Engine(engine.store, replace(config, notify=Notify.DIGEST), clock)
    quiet.new_game("ice", PLAYERS)
    assert quiet.post.level(quiet.table(2), 0) is Notify.DIGEST


def test_the_keeper_sets_a_games_level_at_the_shell(run, cfg):
    players = [word for address in PLAYERS for word in ("--player", address)]
    assert run("new", "ice", *players, "--notify", "digest")[0] == 0
    assert run("new", "ice", *players)[0] == 0
    assert run("new", "ice", *players, "--notify", "sometimes")[0] == 2
    store = Store(cfg.parent / "games.db")
    assert [game["notify"] for game in store.games()] == ["digest", None]


def test_the_config_names_the_default_level(tmp_path):
    path = tmp_path / "referee.toml"
    path.write_text('[defaults]\nnotify = "digest"\n')
    assert load(path).notify is Notify.DIGEST
    assert Config().notify is Notify.TURNS
    path.write_text('[defaults]\nnotify = "never"\n')
    with pytest.raises(ConfigError, match="notify must be one of every, turns, digest"):
        load(path)


# -- folding and turns, in a sealed game -------------------------------------------------


def test_the_last_bid_of_a_round_gets_its_receipt_at_the_top_of_the_result(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    box = Mailbox(engine)
    box.new()
    send(engine, clock, ALICE, "bid 4")
    send(engine, clock, BOB, "bid 5")
    assert [m["to"] for m in box.new()] == [ALICE, BOB]  # their receipts
    send(engine, clock, CAROL, "bid 6", message_id="<last@example.net>")
    mine = [m for m in box.new() if m["to"] == CAROL]
    assert len(mine) == 2  # the result (her receipt on top) and her next prompt: no mail of its own
    result, prompt = mine
    assert result["body"].startswith(RECEIPT) and "> bid 6" in result["body"]
    assert "Round 1 of 13 of game 1 is resolved" in result["body"]
    assert header(result, "In-Reply-To") == "<last@example.net>"
    assert "Round 2 of 13" in prompt["subject"] and not prompt["body"].startswith(RECEIPT)


# -- DIGEST -------------------------------------------------------------------------------


def play_round(engine: Engine, clock: FakeClock) -> None:
    """Everyone bids their highest card, an hour apart."""
    for address in PLAYERS:
        clock.advance(hours=1)
        table = engine.table(1)
        move = table.rules.legal_moves(table.state, table.seat_of(address))[-1]
        assert send(engine, clock, address, table.rules.move_text(move)).code == "move"


def digests(box: Mailbox, address: str = BOB) -> list[dict]:
    return [m for m in box.to(address) if m["subject"].split("] ", 1)[-1].startswith("What happened since")]


def test_a_digest_player_gets_one_digest_a_day_and_none_on_a_day_with_nothing_new(engine, clock, config):
    engine.new_game("pure-skill", PLAYERS)
    box = Mailbox(engine)
    assert send(engine, clock, BOB, "NOTIFY DIGEST").code == "done"
    for _ in range(3):
        play_round(engine, clock)  # three rounds in the first nine hours
    assert START + timedelta(days=1) in engine.next_due()
    clock.now = START + timedelta(hours=23, minutes=59)
    engine.tick()
    assert digests(box) == []
    clock.now = START + timedelta(days=1)
    engine.tick()
    (first,) = digests(box)
    body = first["body"]
    assert all(f"{n:5d}" in body for n in (1, 2, 3)) and "Round 4 of 13" in body  # rounds 1-3; now round 4
    assert "Record digest after Round 3 of 13:" in body
    # bob got no result of a round, but his prompts and the answers to his mails
    assert not any("is resolved" in m["body"] for m in box.to(BOB))
    assert sum("To bid, reply" in m["body"] for m in box.to(BOB)) == 4
    # a restart sends it again no more than a referee running on would
    restarted = Engine(Store(config.database), config, clock)
    restarted.tick()
    assert len(digests(box)) == 1
    # a day with nothing resolved: no digest
    clock.now = START + timedelta(days=2, hours=1)
    restarted.tick()
    assert len(digests(box)) == 1
    # round 4 resolved on day 3: its digest goes at once (a day since the last has passed)
    play_round(restarted, clock)
    restarted.tick()
    second = digests(box)[1]
    rows = second["body"].split("Round  Prize")[1].splitlines()
    assert "Round 4" in second["body"] and not any(row.startswith(f"{3:5d}  ") for row in rows)  # round 3: told
    # and the next not before a day after that one
    play_round(restarted, clock)
    restarted.tick()
    assert len(digests(box)) == 2
    assert min(restarted.next_due()) == from_iso(second["created_at"]) + timedelta(days=1)


def test_a_digest_due_while_the_referee_was_down_goes_once_when_it_is_back(engine, clock):
    engine.new_game("pure-skill", PLAYERS, notify=Notify.DIGEST)  # the keeper's choice for the game
    box = Mailbox(engine)
    play_round(engine, clock)
    clock.now = START + timedelta(days=1, hours=20)  # down for most of the day it fell due
    engine.tick()
    engine.tick()
    assert [len(digests(box, a)) for a in PLAYERS] == [1, 1, 1]


def test_start_final_and_the_keepers_words_go_to_every_level(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    send(engine, clock, ALICE, "NOTIFY DIGEST")
    send(engine, clock, BOB, "NOTIFY TURNS")
    box = Mailbox(engine)
    box.new()
    engine.extend(1, timedelta(days=1), "shell", "a holiday")
    engine.say(1, "Good luck", "shell")
    told = box.new()
    assert Counter(m["to"] for m in told) == {ALICE: 2, BOB: 2, CAROL: 2}
    while engine.status(1)["state"] == "running":
        to_deadline(engine, clock)
        engine.tick()
    finals = [m for m in box.new() if "Game over" in m["subject"]]
    assert {m["to"] for m in finals} == set(PLAYERS)


def test_every_kind_names_its_rounds_from_its_labels():
    """Game.round_of: the round or auction a phase's label begins with."""
    expected = {
        "pure-skill": ("Round 4 of 13", "Round 4"),
        "bid": ("Auction 8: coin tie-break", "Auction 8"),
        "ice": ("Auction 3 scoring, offer 2", "Auction 3"),
        "priority": ("Round 2 of 5, turn 7", "Round 2"),
        "bluff": ("Round 3 bidding, turn 12", "Round 3"),
    }
    for kind, (label, unit) in expected.items():
        assert GAMES[kind].round_of(label) == unit
    assert GAMES["ice"].round_of("Trick 3") == "Trick 3"  # a label of no round: a round of its own
