"""Auction (priority cards) by mail, through ``ingest``: a whole game with a
silent player, its secrets in every mail, on the site, in ``status --json``
and in the log, and ``verify`` of the finished game (and of a tampered one).
"""

from __future__ import annotations

import json
import random
import re
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock, Mailbox, Seeds, answer, body_of, examples, info_log

from referee.config import Config
from referee.engine import Engine
from referee.record import verify
from referee.rules import get_game
from referee.site.public import game_record
from referee.site.render import Site
from referee.store import Notify, Store

RULES = get_game("priority")
TURN = timedelta(hours=6)
ALICE, BOB, CAROL = PLAYERS  # carol never answers
FOUR = [*PLAYERS, "dave@example.org"]
_PROMPT = re.compile(r"^(?P<label>Round \d+ of \d+, turn \d+) of game \d+: it is your turn\.", re.M)


def prompt_label(mail: dict) -> str | None:
    match = _PROMPT.search(mail["body"])
    return match["label"] if match and not mail["subject"].startswith("Re:") else None


KEY = b"one referee's secret key"


def make_engine(root: Path, clock: FakeClock, seed: bytes | None = None) -> Engine:
    """An engine whose new games have ``seed`` (unset: the system's), of a
    referee whose secret key is KEY (twins' seats have the same calendars)."""
    config = Config(  # every phase's result to every player (NOTIFY EVERY): what these tests read
        address="referee@example.org",
        database=root / "games.db",
        reminder=None,
        outage_gap=None,
        secret_key=KEY,
        notify=Notify.EVERY,
    )
    return Engine(Store(config.database), config, clock, Seeds(seed))


class Played:
    """A whole 3-player game by mail: alice and bob answer each prompt with
    one of its examples, carol never answers.  The log at INFO is kept."""

    def __init__(self, root: Path, seed: bytes):
        self.clock = FakeClock()
        self.engine = make_engine(root, self.clock, seed)
        self.box = Mailbox(self.engine)
        self.randoms: list[str] = []  # labels of carol's phases
        self.records_mid: list[dict] = []  # record.json as it would be published while the game ran
        with info_log() as lines:
            self.game = self.engine.new_game("priority", PLAYERS, turn_deadline=TURN)
            self.play(random.Random(5))
        self.log = "\n".join(lines)
        self.site = root / "site"
        Site(self.engine, self.site).render()

    def play(self, choose: random.Random) -> None:
        engine, clock = self.engine, self.clock
        for _ in range(500):
            status = engine.status(self.game)
            if status["state"] != "running":
                return
            phase = status["phase"]
            (mover,) = phase["waiting_for"]
            if mover == CAROL:
                self.randoms.append(phase["label"])
                clock.advance(seconds=TURN.total_seconds() + 1)
                engine.tick()
                continue
            pending = [m for m in self.box.to(mover) if prompt_label(m) == phase["label"]]
            assert len(pending) == 1, (phase["label"], [m["subject"] for m in self.box.to(mover)][-3:])
            offered = examples(pending[0]["body"])
            table = engine.table(self.game)
            legal = [RULES.move_text(m) for m in RULES.legal_moves(table.state, PLAYERS.index(mover))]
            assert offered and set(offered) <= set(legal)
            clock.advance(minutes=choose.randint(1, 300))
            assert answer(engine, clock, pending[0], choose.choice(offered)).code == "move"
            if len(self.records_mid) < 5 and choose.random() < 0.2:
                self.records_mid.append(game_record(engine.table(self.game)))
        raise AssertionError("the game did not end")


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    return Played(tmp_path_factory.mktemp("priority"), b"p" * 32)  # one seed, so the game is the same at every run


def test_a_whole_game_by_mail_ends_with_a_result_for_everyone(played: Played):
    status = played.engine.status(played.game)
    assert status["state"] == "finished" and status["phase"] is None
    table = played.engine.table(played.game)
    state = table.state
    assert state.over and state.round == 4
    assert sum(map(len, state.won)) + len(state.discarded) == 4
    finals = [m for m in played.box.new() + played.box.all if "Game over" in m["subject"]]
    assert sorted({m["to"] for m in finals}) == sorted(PLAYERS)
    final = finals[0]["body"]
    assert "The colours were:" in final and table.row["seed"] in final


def test_a_silent_players_turns_are_random_and_announced_without_the_card(played: Played):
    assert played.randoms, "carol never had a turn"
    sources = {m["source"] for m in played.engine.store.moves(played.game) if m["seat"] == 2}
    assert sources == {"random"}
    announced = [
        m for m in played.box.all if m["to"] == ALICE and "(chosen at random: no move by the deadline)" in m["body"]
    ]
    assert announced
    for mail in announced:
        line = next(ln for ln in mail["body"].splitlines() if "chosen at random" in ln).strip()
        assert line.startswith(CAROL)
        assert not re.search(r"\d", line.split("(")[0]), line  # no card value in what the table saw


def test_the_start_mail_tells_each_player_their_colour_and_their_right_neighbours(played: Played):
    state = played.engine.table(played.game).state
    starts = {m["to"]: m["body"] for m in played.box.all if "begins" in m["subject"]}
    for seat, player in enumerate(PLAYERS):
        right = (seat - 1) % 3
        body = starts[player]
        news = body.split("Only for you:")[1]
        assert f"Your colour is {state.colours[seat]}." in " ".join(news.split())
        assert f"{PLAYERS[right]}, is {state.colours[right]}" in " ".join(news.split())
        third = 3 - seat - right
        assert f"{PLAYERS[third]} must be {state.colours[third]}" in news  # P13: three players
        assert "With three players" in body
        # the public part of the start mail names no colour as anyone's
        public = body.split("Only for you:")[0]
        assert not any(f"{p}, {c}" in public for p in PLAYERS for c in state.colours)


_BOARD_COLOUR = re.compile(r"^\d\. (\S+@\S+), (\w+):", re.MULTILINE)  # a colour the table was shown
_KNOWN = re.compile(r"^Not shown to the table, but known to you: (.+?)\.$", re.MULTILINE | re.DOTALL)


def private_colours(body: str, reader: str) -> dict[str, str]:
    """The colours a turn notice tells its reader alone: player -> colour."""
    found = _KNOWN.findall(body)
    if not found:
        return {}
    (line,) = found
    told = {}
    for part in " ".join(line.split()).split("; "):
        if part.startswith("you are "):
            told[reader] = part.removeprefix("you are ")
        else:
            match = re.fullmatch(r"(\S+@\S+)(?:, to your right,)? (?:is|must be) (\w+)", part)
            assert match, part
            told[match[1]] = match[2]
    return told


def turn_notices(mails: list[dict]) -> list[dict]:
    return [
        m
        for m in mails
        if not m["subject"].startswith("Re:")
        and not prompt_label(m)
        and re.search(r"\] Round \d+ of \d+, turn \d+: ", m["subject"])
    ]


def assert_notices_tell_each_reader_the_colours_they_know(
    mails: list[dict], players: list[str], colours: tuple[str, ...]
) -> int:
    """Each copy of a turn notice tells its reader, below the table, the
    colours they know (their own, their right-hand neighbour's, any that
    follows: P3, P13) that the table has not been shown; right, and no more."""
    told = 0
    for mail in turn_notices(mails):
        reader = players.index(mail["to"])
        shown = dict(_BOARD_COLOUR.findall(mail["body"]))
        assert all(colours[players.index(p)] == c for p, c in shown.items())
        known = {p: colours[players.index(p)] for p in (players[reader], players[reader - 1])} | shown
        unknown = [p for p in players if p not in known]
        if len(unknown) == 1:
            known[unknown[0]] = colours[players.index(unknown[0])]
        private = private_colours(mail["body"], mail["to"])
        assert private == {p: c for p, c in known.items() if p not in shown}, (mail["to"], mail["subject"])
        told += bool(private)
    return told


def test_each_turn_notice_tells_its_reader_the_colours_they_know(played: Played):
    colours = played.engine.table(played.game).state.colours
    notices = turn_notices(played.box.all)
    told = assert_notices_tell_each_reader_the_colours_they_know(played.box.all, PLAYERS, colours)
    assert told > 30 and told > len(notices) - 6  # all but those after every colour was shown


def test_with_four_players_a_notice_tells_your_own_your_right_hand_neighbours_and_what_follows(tmp_path):
    clock = FakeClock()
    engine = make_engine(tmp_path, clock, b"q" * 32)
    game = engine.new_game("priority", FOUR, turn_deadline=TURN)
    box = Mailbox(engine)
    while engine.table(game).row["state"] == "running":  # every move random
        clock.advance(seconds=TURN.total_seconds() + 1)
        engine.tick()
    colours = engine.table(game).state.colours
    mails = box.new()
    assert assert_notices_tell_each_reader_the_colours_they_know(mails, FOUR, colours) > 100
    first = next(m for m in turn_notices(mails) if m["to"] == FOUR[0])
    assert private_colours(first["body"], FOUR[0]) == {FOUR[0]: colours[0], FOUR[3]: colours[3]}
    assert any(" must be " in " ".join(_KNOWN.findall(m["body"])) for m in mails)  # P13, after a reveal


def test_no_card_value_or_unrevealed_colour_reaches_the_record_the_log_or_status_while_running(played: Played):
    assert played.records_mid, "no record was taken mid-game"
    for record in played.records_mid:
        assert all(m["move"] is None for phase in record["phases"] for m in phase["moves"])
        assert record["seed"] is None
    for text in re.findall(r"play \d on \w+|move \w+ to \w+", played.log):
        raise AssertionError(f"a move in the log at INFO: {text}")
    state = played.engine.table(played.game).state
    assert not re.search(r"\b(" + "|".join(state.colours) + r")\b", played.log)
    status = json.dumps(played.engine.status(played.game))
    assert "colour" not in status


def test_the_site_shows_tallies_the_chart_and_verifies(played: Played, tmp_path: Path):
    page = (played.site / f"games/{played.game}/index.html").read_text()
    state = played.engine.table(played.game).state
    assert page.count("Every card, shown at the tally") == 4
    assert "<svg" in page and page.count("<polyline") == 3
    record = json.loads((played.site / f"games/{played.game}/record.json").read_text())
    verdict = verify(record)
    assert verdict.ok, verdict.message
    winner = RULES.result(state).winner
    assert verdict.message.endswith(f"winner: {PLAYERS[winner].partition('@')[0] if winner is not None else 'nobody'}")


def test_a_move_that_cannot_be_made_gets_the_reason_and_the_legal_moves(tmp_path):
    clock = FakeClock()
    engine = make_engine(tmp_path, clock)
    game = engine.new_game("priority", FOUR, turn_deadline=TURN)
    box = Mailbox(engine)
    mover = engine.status(game)["phase"]["waiting_for"][0]
    prompt = next(m for m in box.to(mover) if prompt_label(m))
    before = engine.store.moves(game)
    assert answer(engine, clock, prompt, "play 3 on pink").code == "refused"
    (reply,) = [m for m in box.to(mover) if m["subject"].startswith("Re:")]
    assert "I do not know the colour 'pink'; the colours of this game are red, blue, green, yellow." in " ".join(
        reply["body"].split()
    )
    assert "play 1 on red" in reply["body"] and "pass" in reply["body"]
    assert engine.store.moves(game) == before


def test_verify_finds_a_random_move_or_a_players_move_changed(played: Played):
    record = json.loads((played.site / f"games/{played.game}/record.json").read_text())
    for source in ("random", "mail"):
        tampered = json.loads(json.dumps(record))
        entry, move = next(
            (e, m) for e in tampered["phases"] for m in e["moves"] if m["source"] == source and m["move"] != "pass"
        )
        move["move"] = "pass"
        verdict = verify(tampered)
        assert (verdict.ok, verdict.phase) == (False, entry["number"]), (source, verdict)


# -- twins: the same game, other cards -------------------------------------------------------


def site_files(folder: Path) -> dict[str, bytes]:
    drop = re.compile(rb"<p>Written .*? by the referee.*?</p>|DTSTAMP:\d{8}T\d{6}Z")
    return {str(p.relative_to(folder)): drop.sub(b"", p.read_bytes()) for p in sorted(folder.rglob("*")) if p.is_file()}


# The record's running digest covers every move, a hidden card too (that is
# its point: a record rewritten later disagrees with it).  It is an HMAC keyed
# from the secret seed, so to anyone without the seed it is 64 random bits
# until the end: it is the one thing the twins' mails may differ in.
_DIGEST = re.compile(r"(Record digest [^:\n]*(?::[^:\n]*)*: )[0-9a-f-]{19}")


def mails_to(engine: Engine, players: list[str]) -> list[tuple[str, str, str]]:
    return [
        (m["recipients"][0], m["subject"], _DIGEST.sub(r"\1<digest>", body_of(m["raw"])))
        for m in engine.store.outbox(None)
        if m["recipients"][0] in players
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_until_the_tally_another_card_changes_nothing_anyone_else_sees(tmp_path, seed):
    """Two engines play one game (the same seed), and differ only in the
    cards alice plays: wherever she plays a card, her twin plays another on
    the same colour.  Until round 1's tally, the other players' mail, the
    site and ``status --json`` are the same in both."""
    clock = FakeClock()
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    engine, twin = make_engine(tmp_path / "a", clock, bytes([seed]) * 32), make_engine(tmp_path / "b", clock)
    game = engine.new_game("priority", FOUR, turn_deadline=TURN)
    engine.store.db.conn.backup(twin.store.db.conn)
    boxes = {e: Mailbox(e) for e in (engine, twin)}
    sites = {e: Site(e, tmp_path / ("site-a" if e is engine else "site-b")) for e in (engine, twin)}
    choose = random.Random(seed)
    differed = 0
    while engine.table(game).state.round == 1:
        before_tally = len(engine.store.outbox(None))
        table = engine.table(game)
        (seat,) = table.open_phase["movers"]
        moves = RULES.legal_moves(table.state, seat)
        move = choose.choice(moves[:-1]) if seat == 0 or choose.random() < 0.8 else moves[-1]
        if seat == 0 and table.state.taken[0] >= 3:
            move = moves[-1]  # alice passes after three plays or moves, so the round ends
        other = move
        if seat == 0 and move[0] == "play":  # the twin's hand differs: a card from it, another if it can
            held = twin.table(game).state.hand(0)
            cards = [c for c in held if c != move[1]] or list(held)
            other = ("play", choose.choice(cards), move[2])
            differed += other != move
        for e, m in ((engine, move), (twin, other)):
            prompt = [x for x in boxes[e].to(FOUR[seat]) if prompt_label(x) == table.open_phase["label"]]
            assert answer(e, clock, prompt[-1], RULES.move_text(m)).code == "move"
        clock.advance(minutes=5)
        if engine.table(game).state.round != 1:
            break  # the tally shows every card: from here the twins differ in public
        for e in (engine, twin):
            sites[e].render()
        assert site_files(tmp_path / "site-a") == site_files(tmp_path / "site-b")
        assert engine.status(game) == twin.status(game)
        assert mails_to(engine, FOUR[1:]) == mails_to(twin, FOUR[1:])
    assert differed, "alice never played a card"
    colours = engine.table(game).state.colours
    sent = engine.store.outbox(None)[:before_tally]
    shown = 0
    for seat, player in enumerate(FOUR):  # before a reveal, a mail names only your own and your right's
        allowed = {FOUR[seat], FOUR[(seat - 1) % 4]}
        for body in (body_of(m["raw"]) for m in sent if m["recipients"] == [player]):
            named = re.findall(r"^\d\. (\S+@\S+), (\w+):", body, re.M)
            assert {label for label, _ in named} <= allowed, (player, named)
            assert all(colours[FOUR.index(label)] == colour for label, colour in named)
            shown += len(named)
    assert shown  # the prompts do name the colours their reader knows
    page = (tmp_path / "site-a" / f"games/{game}/index.html").read_text()
    assert page.count("(secret)") == 4  # the site names no colour before a reveal


def test_a_move_out_of_turn_is_told_whose_turn_it_is_whatever_was_wrong_with_it(tmp_path):
    clock = FakeClock()
    engine = make_engine(tmp_path, clock)
    game = engine.new_game("priority", FOUR, turn_deadline=TURN)
    box = Mailbox(engine)
    mover = engine.status(game)["phase"]["waiting_for"][0]
    other = next(p for p in FOUR if p != mover)
    start = next(m for m in box.to(other) if "begins" in m["subject"])
    for text in ("play 9 on red", "play 1 on red"):
        assert answer(engine, clock, start, text).code == "refused"
        reply = [m for m in box.to(other) if m["subject"].startswith("Re:")][-1]
        assert f"It is not your move; Round 1 of 6, turn 1 waits for {mover}." in " ".join(reply["body"].split())
