"""Ice Ice Baby played through ``Engine.ingest`` of real mails.

Each auction turn and each scoring offer is a phase with one mover.  alice
and bob answer every prompt they get by replying to it with one of the
example moves the prompt offers; carol never answers, so each of her turns
waits for the game's turn deadline (a day) and each of her scoring offers
for its decision deadline (12 hours), and her move is chosen at random.
What the players are told (prompts, refusals, round mails, reminders, the
final mail), what the site shows and what ``referee verify`` makes of the
published record is checked against the rules' own state.
"""

from __future__ import annotations

import copy
import html
import json
import random
import re
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock, Mailbox, Seeds, answer, reply, send

from referee import config as config_module
from referee.cli import main
from referee.config import Config
from referee.engine import Engine
from referee.record import random_move_rng, verify
from referee.rules.ice import COLOURS, IceIceBaby
from referee.rules.ice import pile_text as ice_text
from referee.site.public import game_record, public_names
from referee.site.render import Site
from referee.store import Notify, Store
from referee.tables import deadlines
from referee.timeutil import from_iso, show

ALICE, BOB, CAROL = PLAYERS
AUCTION = "Re: [ice-1] Auction"  # the subject of a reply about game 1
NAMES = [address.split("@")[0] for address in PLAYERS]
RULES = IceIceBaby()
DAY = timedelta(days=1)
TURN = DAY
DECISION = timedelta(hours=12)
ROUND = timedelta(days=3)  # a sealed round's deadline: no phase of Ice Ice Baby uses it
SEED = bytes([3]) * 32  # the whole game's seed (see the fixture: what the game shows)

_PROMPT = re.compile(r"^(?P<label>.+) of game \d+: it is your turn\.$", re.M)
_LABEL = re.compile(r"^\[ice-\d+ [^\]]+\] (?P<label>Auction \d+(?:, turn \d+| scoring, offer \d+)): ")
_NEXT = re.compile(
    r"^Next: (?P<label>.+), (?P<who>\S+@\S+) to (?P<what>move|decide), "
    r"deadline (?P<deadline>.+)\.$",
    re.M,
)
_OVER = "The game is over; the final result follows."
_TAG = re.compile(r"\[ice-\d+ [^\]]+\]")


# -- helpers -------------------------------------------------------------------


def prompt_label(mail: dict) -> str | None:
    """The phase a private prompt asks a move for (None: not a prompt)."""
    match = _PROMPT.search(mail["body"])
    return match and not mail["subject"].startswith("Re:") and match["label"]


def round_label(mail: dict) -> str | None:
    """The phase a public round mail announces (None: not a round mail)."""
    if mail["subject"].startswith("Re:") or prompt_label(mail):
        return None
    match = _LABEL.match(mail["subject"])
    body = mail["body"]
    return match and ("\nNext: " in body or _OVER in body) and match["label"]


def is_reminder(mail: dict) -> bool:
    return ": reminder, " in mail["subject"] and not mail["subject"].startswith("Re:")


def pile_text(names) -> str:
    return " ".join(names) or "nothing"


def text_of(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def cells(row: str) -> list[str]:
    return [text_of(cell) for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]


def site_rows(page: str) -> dict[int, list[str]]:
    return {int(m[1]): cells(m[2]) for m in re.finditer(r'<tr id="phase-(\d+)">(.*?)</tr>', page, re.S)}


def expected_points(view: dict) -> tuple[list[int], list[tuple[int, int, int]]]:
    """Each seat's points if the game ended now, worked out here from the public
    view by the rule text: 7 a uniform tree, 5 a mixed one, 1 a pyramid in no
    tree (the active area arranged for the most points), 5 for the most of a
    colour other than the scoring colour (3 each when tied); and the worth of
    all pyramids collected (count, larges, mediums) for the tie-break."""
    sizes = {"L": 3, "M": 2, "S": 1}

    def read(names):
        return [(colour, sizes[size]) for size, colour in (n.split("-", 1) for n in names)]

    totals, collected = [], []
    for seat in view["seats"]:
        active = read(seat["active"])
        trees = [read(tree["pyramids"]) for tree in seat["trees"]]
        points = sum(7 if len({c for c, _ in tree}) == 1 and tree[0][0] in COLOURS else 5 for tree in trees)
        count = Counter(active)
        made = min(sum(n for (_, size), n in count.items() if size == s) for s in (3, 2, 1))
        uniform = sum(min(count[(colour, s)] for s in (3, 2, 1)) for colour in COLOURS)
        points += 7 * uniform + 5 * (made - uniform) + len(active) - 3 * made
        totals.append(points)
        collected.append(active + [p for tree in trees for p in tree])
    for colour in COLOURS:
        if colour == view["scoring_colour"]:
            continue
        held = [sum(1 for c, _ in pile if c == colour) for pile in collected]
        top = max(held)
        for seat, n in enumerate(held):
            if top and n == top:
                totals[seat] += 5 if held.count(top) == 1 else 3
    worth = [(len(p), sum(s == 3 for _, s in p), sum(s == 2 for _, s in p)) for p in collected]
    return totals, worth


def span(phase: dict) -> timedelta:
    return from_iso(phase["deadline"]) - from_iso(phase["opened_at"])


def expected_span(label: str) -> timedelta:
    return DECISION if " scoring, offer " in label else TURN


# -- a whole game ----------------------------------------------------------------


def listed(body: str) -> list[str]:
    """The moves a prompt lists as the ones its reader can make now."""
    return re.search(r"Moves you can make now(?: \(the first \d+\))?: (.*?)\.(?: |$)", " ".join(body.split()))[1].split(
        ", "
    )


class Played:
    """A whole game of Ice Ice Baby by mail, played once for the tests below."""

    def __init__(self, root: Path, seed: bytes):
        self.config = Config(  # every phase's result to every player (NOTIFY EVERY): what these tests read
            address="referee@example.org",
            database=root / "games.db",
            reminder=None,
            outage_gap=None,
            notify=Notify.EVERY,
        )
        self.clock = FakeClock()
        self.engine = Engine(Store(self.config.database), self.config, self.clock, Seeds(seed))
        self.box = Mailbox(self.engine)
        self.answered: dict[str, str] = {}  # phase label -> the text alice or bob replied
        self.waited: list[str] = []  # carol's phases, each checked not to resolve early
        self.colour_choice: dict | None = None  # "bid 2L" sent when the colours gave a choice
        self.mid: dict | None = None  # the site, rendered once in the middle of an auction
        self.root = root
        self.play()
        self.site = root / "site"
        Site(self.engine, self.site).render()

    def play(self) -> None:
        engine, clock, choose = self.engine, self.clock, random.Random(11)
        game = engine.new_game("ice", PLAYERS, deadline=ROUND, turn_deadline=TURN, decision_deadline=DECISION)
        for _ in range(400):
            status = engine.status(game)
            if status["state"] != "running":
                return
            phase = status["phase"]
            (mover,) = phase["waiting_for"]
            if mover == CAROL:
                self._wait_for_carol(phase)
                continue
            seat = PLAYERS.index(mover)
            table = engine.table(game)
            state = table.state
            pending = [m for m in self.box.to(mover) if prompt_label(m) == phase["label"]]
            assert len(pending) == 1, (phase["label"], pending)
            prompt = pending[0]
            offered = listed(prompt["body"])  # the prompt's own list, which the player plays from
            legal = [RULES.move_text(m) for m in RULES.legal_moves(state, seat)]
            assert offered == legal[: len(offered)] and (len(offered) == len(legal) or "for example:" in prompt["body"])
            assert f"the referee picks one of your {len(legal)} legal moves at random" in " ".join(
                prompt["body"].split()
            )
            self._maybe_colour_choice(prompt, state, seat)
            self._maybe_render_mid(state, phase)
            # the first two and the last, as the prompt's examples once were: the game the tests below expect
            text = choose.choice(offered[:2] + offered[-1:] if len(offered) > 3 else offered)
            clock.advance(minutes=choose.randint(1, 600))  # well inside even the 12-hour offers
            outcome = answer(engine, clock, prompt, text)
            assert outcome.code == "move", (text, outcome)
            self.answered[phase["label"]] = text
        raise AssertionError("the game did not end")

    def _wait_for_carol(self, phase: dict) -> None:
        """carol never answers: nothing happens until her deadline, then her move is random."""
        engine, clock = self.engine, self.clock
        deadline = from_iso(phase["deadline"])
        assert engine.tick() == []
        clock.now = deadline - timedelta(seconds=1)
        assert engine.tick() == [], phase["label"]  # one second early: she still has time
        assert engine.status(1)["phase"]["number"] == phase["number"]
        clock.now = deadline
        resolved = engine.tick()
        assert resolved[0] == f"resolved game 1 {phase['label']}", resolved
        # (a turn that follows with only one legal move is played at once: I7, I8)
        for number, line in enumerate(resolved[1:], start=phase["number"] + 1):
            (mover,) = engine.store.phases(1)[number - 1]["movers"]
            assert engine.store.final_moves(1, number)[mover]["source"] == "forced", line
        self.waited.append(phase["label"])

    def _maybe_colour_choice(self, prompt: dict, state, seat: int) -> None:
        """Once, when the mover's larges leave a choice of colours for two of
        them, reply "bid 2L" first: the referee asks which colours."""
        larges = [p for p in state.active[seat] if p[1] == 3]
        if self.colour_choice or state.stage != "auction" or len(larges) < 3:
            return
        if len({colour for colour, _ in larges}) < 2:
            return
        moves_before = self.engine.store.moves(1)
        self.box.new()
        outcome = answer(self.engine, self.clock, prompt, "bid 2L")
        fresh = self.box.new()
        self.colour_choice = {
            "outcome": outcome,
            "mail": fresh,
            "to": prompt["to"],
            "larges": larges,
            "state_before": state,
            "state_after": self.engine.table(1).state,
            "moves_before": moves_before,
            "moves_after": self.engine.store.moves(1),
        }

    def _maybe_render_mid(self, state, phase: dict) -> None:
        """Once, in an auction with a high bid after trees were scored, render the site."""
        if self.mid or state.stage != "auction" or state.high is None or not any(state.scored):
            return
        folder = self.root / "site-mid"
        Site(self.engine, folder).render()
        self.mid = {
            "page": (folder / "games/1/index.html").read_text(encoding="utf-8"),
            "view": RULES.view(state, None),
            "phase": phase,
            "resolved": len(self.engine.table(1).replay.steps),
        }


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> Played:
    # A fixed seed, so the game is the same each run: one in which carol has
    # scoring offers, alice and bob score trees, and a mover's larges come in
    # more than one colour (for "bid 2L").
    return Played(tmp_path_factory.mktemp("ice"), SEED)


def test_a_whole_game_by_mail_ends_with_the_rules_result(played):
    engine = played.engine
    status = engine.status(1)
    table = engine.table(1)
    assert status["state"] == "finished" and status["phase"] is None
    assert RULES.phase(table.state) is None and table.state.stage == "over"
    result = RULES.result(table.state)
    assert [p["score"] for p in status["players"]] == list(result.scores)
    winner = PLAYERS[result.winner] if result.winner is not None else None
    assert status["winner"] == winner
    # every phase is one turn or one offer, resolved, one mover each
    phases = engine.store.phases(1)
    assert len(phases) == len(table.replay.steps) > 20
    assert all(p["resolved_at"] and len(p["movers"]) == 1 and not p["sealed"] for p in phases)
    # the game showed what the tests below rely on
    labels = [p["label"] for p in phases]
    assert any(" scoring, offer " in label for label in labels)
    events = [e for step in table.replay.steps for e in step.events]
    assert any(e["type"] == "tree" and e["seat"] in (0, 1) for e in events)
    assert any(e["type"] == "won" for e in events) and events[-1]["type"] == "over"
    # the track reached the end (12), and the last auction had its scoring round
    assert table.state.drawn >= 12
    assert played.answered and all(text for text in played.answered.values())


def test_every_phase_lasts_the_turn_or_the_decision_deadline(played):
    engine = played.engine
    assert deadlines(engine.store.game(1)) == {"round": ROUND, "turn": TURN, "decision": DECISION}
    phases = engine.store.phases(1)
    kinds = set()
    for phase in phases:
        assert span(phase) == expected_span(phase["label"]), phase
        kinds.add(span(phase))
    assert kinds == {TURN, DECISION}
    # and the start mail told everyone so
    for address in PLAYERS:
        start = played.box.to(address)[0]
        assert "A game of Ice Ice Baby begins" in start["subject"]
        assert "A turn lasts 1 day; a scoring offer 12 hours." in start["body"]


def test_the_start_mails_example_moves_could_be_played(played):
    state = played.engine.table(1).state
    start = played.box.to(ALICE)[0]["body"]
    moves = start.split("\nMoves: ", 1)[1].split("\n\n", 1)[0]
    quoted = re.findall(r'"([^"]+)"', " ".join(moves.split()))
    assert "pass" in quoted and "decline" in quoted
    for example in quoted:
        assert not re.search(rf"\b{state.scoring_colour}\b", example), example


def test_carol_never_answers_so_each_of_her_moves_waits_for_its_deadline_and_is_random(played):
    engine = played.engine
    table = engine.table(1)
    phases = {p["number"]: p for p in engine.store.phases(1)}
    carols = [step for step in table.replay.steps if step.phase.movers == (2,)]
    random_ones = []
    for step in carols:
        move = engine.store.final_moves(1, step.number)[2]
        phase = phases[step.number]
        if move["source"] == "forced":  # her only legal move: nobody waits for it
            assert len(RULES.legal_moves(step.before, 2)) == 1
            continue
        assert move["source"] == "random", move
        random_ones.append(step)
        # she had until the deadline of her kind of phase, and it was waited out
        assert span(phase) == expected_span(phase["label"])
        assert phase["resolved_at"] == phase["deadline"] == move["received_at"]
        drawn = RULES.random_move(step.before, 2, random_move_rng(table.seed, step.number, 2))
        assert move["move"] == RULES.move_text(drawn)
    assert len(random_ones) > 10
    assert [s.phase.label for s in random_ones] == played.waited
    assert any(" scoring, offer " in s.phase.label for s in random_ones)  # offers too
    assert any(", turn " in s.phase.label for s in random_ones)
    # alice and bob moved by mail, each with the move they replied
    for step in table.replay.steps:
        if step.phase.movers != (2,):
            (seat,) = step.phase.movers
            move = engine.store.final_moves(1, step.number)[seat]
            if move["source"] != "forced":
                assert move["source"] == "mail"
                assert move["move"] == played.answered[step.phase.label]


def test_each_phase_is_announced_to_all_three_at_once_naming_the_next_mover_and_deadline(played):
    engine = played.engine
    table = engine.table(1)
    phases = engine.store.phases(1)
    by_label = {p["label"]: p for p in phases}
    rounds = {address: [m for m in played.box.to(address) if round_label(m)] for address in PLAYERS}
    for address in PLAYERS:
        assert [round_label(m) for m in rounds[address]] == [p["label"] for p in phases], address
    for number, phase in enumerate(phases, start=1):
        copies = [rounds[address][number - 1] for address in PLAYERS]
        # one copy each, queued together when the phase resolved, saying the same
        assert {m["created_at"] for m in copies} == {phase["resolved_at"]}
        assert len({_TAG.sub("", m["body"]) for m in copies}) == 1
        body = copies[0]["body"]
        if number < len(phases):
            following = phases[number]
            (mover,) = following["movers"]
            match = _NEXT.search(body)
            assert match, body
            assert match["label"] == following["label"]
            assert match["who"] == PLAYERS[mover]
            assert match["what"] == ("decide" if " scoring, offer " in following["label"] else "move")
            assert match["deadline"] == show(following["deadline"])
            assert from_iso(following["deadline"]) - from_iso(phase["resolved_at"]) == expected_span(following["label"])
        else:
            assert _OVER in body and "Next: " not in body
    # the subject names the mover and what they did
    for step in table.replay.steps:
        mail = rounds[ALICE][step.number - 1]
        (seat,) = step.phase.movers
        assert mail["subject"].split("] ", 1)[1].startswith(f"{step.phase.label}: {PLAYERS[seat]} ")
    assert set(by_label) == {step.phase.label for step in table.replay.steps}


def test_round_mails_say_which_moves_were_chosen_at_random(played):
    engine = played.engine
    table = engine.table(1)
    mails = {round_label(m): m for m in played.box.to(BOB) if round_label(m)}
    seen = set()
    for step in table.replay.steps:
        (seat,) = step.phase.movers
        source = engine.store.final_moves(1, step.number)[seat]["source"]
        first = mails[step.phase.label]["body"].split("\n", 1)[0]  # the mover's event
        assert first.startswith(PLAYERS[seat]), first
        said_random = "(chosen at random: no move by the deadline)" in first
        assert said_random == (source == "random"), (step.phase.label, source, first)
        seen.add(source)
        event = step.events[0]
        if event["type"] == "bid":
            assert f"{PLAYERS[seat]} bids {' '.join(event['bid'])}" in first
        elif event["type"] == "tree":
            assert f"{PLAYERS[seat]} scores a {'uniform' if event['uniform'] else 'mixed'} tree, " in first
        elif event["type"] == "declined":
            assert f"{PLAYERS[seat]} declines to score a tree" in first
        else:
            assert event["type"] == "pass" and f"{PLAYERS[seat]} passes" in first
    assert {"random", "mail"} <= seen


def test_only_the_mover_is_prompted_privately_with_its_deadline(played):
    engine = played.engine
    phases = engine.store.phases(1)
    prompts = {address: [m for m in played.box.to(address) if prompt_label(m)] for address in PLAYERS}
    for phase in phases:
        (mover,) = phase["movers"]
        forced = engine.store.final_moves(1, phase["number"])[mover]["source"] == "forced"
        for seat, address in enumerate(PLAYERS):
            mine = [m for m in prompts[address] if prompt_label(m) == phase["label"]]
            assert len(mine) == (seat == mover and not forced), (phase["label"], address)
            for mail in mine:
                assert mail["created_at"] == phase["opened_at"]
                left = "12 hours" if " scoring, offer " in phase["label"] else "1 day"
                assert f"Deadline: {show(phase['deadline'])} (in {left})." in mail["body"]
                assert mail["subject"].split("] ", 1)[1].startswith(f"{phase['label']}: ")
    # carol was asked every time, though she never answered
    assert len(prompts[CAROL]) == len(played.waited)


def test_the_final_mail_goes_to_all_three_with_the_rules_winner(played):
    engine = played.engine
    table = engine.table(1)
    result = RULES.result(table.state)
    status = engine.status(1)
    for address in PLAYERS:
        final = played.box.to(address)[-1]
        assert "Game over: " in final["subject"]
        if result.winner is None:
            assert final["subject"].endswith("Game over: no winner")
            assert "Nobody wins" in final["body"]
        else:
            winner = PLAYERS[result.winner]
            assert final["subject"].endswith(f"Game over: {winner} wins")
            assert f"{winner} wins with {result.scores[result.winner]} points." in final["body"]
        assert status["seed"] in final["body"] and status["seed_commitment"] in final["body"]
        lines = final["body"].split("Final scoring:\n", 1)[1].splitlines()
        for seat, line in zip(range(3), lines, strict=False):
            assert line.split()[0] == PLAYERS[seat]
            assert int(line.split()[1]) == result.scores[seat]


def test_the_points_shown_and_the_winner_follow_the_rule_text(played):
    table = played.engine.table(1)
    for step in table.replay.steps:
        view = RULES.view(step.before, None)
        assert view["scores"] == expected_points(view)[0], step.phase.label
        after = step.events[-1]["scores"]
        following = table.replay.steps[step.number].before if step.number < len(table.replay.steps) else table.state
        assert after == expected_points(RULES.view(following, None))[0], step.phase.label
    totals, worth = expected_points(RULES.view(table.state, None))
    result = RULES.result(table.state)
    assert list(result.scores) == totals
    best = max(zip(totals, worth, strict=True))
    leaders = [seat for seat in range(3) if (totals[seat], worth[seat]) == best]
    assert result.winner == (leaders[0] if len(leaders) == 1 else None)


def test_bid_2L_with_a_choice_of_colours_is_answered_with_the_colours(played):
    choice = played.colour_choice
    assert choice, "the game never gave a mover larges of two colours"
    assert choice["outcome"].code == "refused"
    (mail,) = choice["mail"]
    assert mail["to"] == choice["to"] and mail["subject"].startswith("Re: ")
    body = mail["body"]
    assert "> bid 2L" in body
    colours = sorted({colour for colour, _ in choice["larges"]}, key=COLOURS.index)
    assert "Say which colour of large pyramid to bid" in body, body
    listed = re.search(r"holds (L-\w+(?:, L-\w+)*)\.", body)
    assert listed and listed[1].split(", ") == [f"L-{c}" for c in colours], body
    assert "Nothing was changed by this line." in body
    assert choice["state_after"] == choice["state_before"]
    assert choice["moves_after"] == choice["moves_before"]


def test_a_scoring_offer_names_who_started_the_auction_it_follows(played):
    table = played.engine.table(1)
    starts = {e["auction"]: e["start"] for step in table.replay.steps for e in step.events if e["type"] == "lot"}
    starts[1] = table.replay.steps[0].before.start
    offers = [m for a in PLAYERS for m in played.box.to(a) if prompt_label(m) and " scoring, offer " in prompt_label(m)]
    assert offers
    for mail in offers:
        auction = int(re.match(r"Auction (\d+)", prompt_label(mail))[1])
        marked = re.findall(r"^\d\. (\S+), started this auction", mail["body"], re.M)
        assert marked in ([], [PLAYERS[starts[auction]]]), (prompt_label(mail), marked, starts[auction])


def test_the_published_record_verifies_and_a_changed_random_move_does_not(played):
    engine = played.engine
    table = engine.table(1)
    record = game_record(table)
    verdict = verify(record)
    assert verdict.ok, verdict.message
    from_site = json.loads((played.site / "games/1/record.json").read_text(encoding="utf-8"))
    assert from_site == json.loads(json.dumps(record))
    assert verify(from_site).ok
    assert from_site["winner"] == (
        public_names(table)[RULES.result(table.state).winner] if RULES.result(table.state).winner is not None else None
    )
    # carol's random moves come from the seed: change one, and verify says where
    steps = {step.number: step for step in table.replay.steps}
    candidates = [(i, entry) for i, entry in enumerate(from_site["phases"]) if entry["moves"][0]["source"] == "random"]
    assert candidates
    index, entry = random.Random(5).choice(candidates)
    step = steps[entry["number"]]
    recorded = entry["moves"][0]["move"]
    others = [RULES.move_text(m) for m in RULES.legal_moves(step.before, 2)]
    other = next(text for text in others if text != recorded)
    tampered = copy.deepcopy(from_site)
    tampered["phases"][index]["moves"][0]["move"] = other
    verdict = verify(tampered)
    assert not verdict.ok
    assert verdict.phase == entry["number"]
    assert "random move" in verdict.message and repr(other) in verdict.message, verdict.message


# -- the site --------------------------------------------------------------------


def _board(page: str) -> dict:
    """What the page's board shows: the track, the common areas, a row per player."""
    board = page.split("<h2>The table", 1)[1].split("<h2>Rounds</h2>", 1)[0]
    common = {}
    for row in re.findall(r"<tr><th scope=\"row\">(.*?)</tr>", board, re.S):
        name, value = cells("<th>" + row)
        common[name.split(" (")[0]] = value
    players = [
        c for c in (cells(r) for r in re.findall(r"<tr>(.*?)</tr>", board, re.S)) if len(c) == 5 and c[0] != "Player"
    ]
    track = re.search(r"Scoring track \((\w+)\): (\d+) drawn", text_of(board))
    on_track = re.search(r"On the track: (.*?)\.", text_of(board))
    return {
        "common": common,
        "players": players,
        "colour": track[1],
        "drawn": int(track[2]),
        "track": on_track[1].strip(),
    }


def _check_board(page: str, view: dict) -> None:
    board = _board(page)
    assert board["colour"] == view["scoring_colour"] and board["drawn"] == view["track"]["count"]
    assert board["track"] == pile_text(view["track"]["pyramids"])
    assert board["common"]["Auction area"] == pile_text(view["lot"])
    assert board["common"]["Dead area"] == pile_text(view["dead"])
    assert board["common"]["Bag"].startswith(f"{view['bag']['total']} pyramids")
    assert len(board["players"]) == 3
    for seat, (name, active, trees, now, points) in enumerate(board["players"]):
        assert name.split(" (")[0] == NAMES[seat]
        shown = view["seats"][seat]
        assert active == pile_text(shown["active"])
        wanted = " ".join(f"[ {' '.join(t['pyramids'])} ]" for t in shown["trees"]) or "none"
        assert trees.replace("[", "[ ").replace("]", " ]").split() == wanted.split(), (trees, wanted)
        assert int(points) == view["scores"][seat]
        if view["stage"] == "auction" and shown["bid"] and not shown["card"]:
            assert now.startswith(f"bid {' '.join(shown['bid'])}"), now


def test_the_game_page_shows_the_table_in_the_middle_of_an_auction(played):
    mid = played.mid
    assert mid, "no auction with a high bid after a tree was scored"
    page, view = mid["page"], mid["view"]
    _check_board(page, view)
    assert any(seat["trees"] for seat in view["seats"]) and view["lot"]
    assert any(seat["bid"] for seat in view["seats"])
    # the open turn, its deadline and who is to move
    text = text_of(page)
    assert f"Now: {mid['phase']['label']}" in text
    assert f"Deadline: {show(mid['phase']['deadline'])}" in text
    # the rounds so far, one row each; no final scoring yet
    assert sorted(site_rows(page)) == list(range(1, mid["resolved"] + 1))
    assert "Final scoring" not in page


def test_the_game_page_at_the_end_shows_the_table_every_phase_and_the_final_scoring(played):
    engine = played.engine
    table = engine.table(1)
    page = (played.site / "games/1/index.html").read_text(encoding="utf-8")
    view = RULES.view(table.state, None)
    _check_board(page, view)
    rows = site_rows(page)
    assert sorted(rows) == [step.number for step in table.replay.steps]
    for step in table.replay.steps:
        label, move, _followed, points = rows[step.number]
        (seat,) = step.phase.movers
        assert label == step.phase.label
        assert move.startswith(f"{NAMES[seat]}: ")
        source = engine.store.final_moves(1, step.number)[seat]["source"]
        assert move.endswith("*") == (source == "random"), (move, source)
        assert points == " · ".join(str(s) for s in step.events[-1]["scores"])
    result = RULES.result(table.state)
    final = page.split("<h2>Final scoring</h2>", 1)[1]
    scored = [cells(r) for r in re.findall(r"<tr><td[^>]*>.*?</tr>", final, re.S)]
    assert [row[0] for row in scored] == NAMES
    over = table.replay.steps[-1].events[-1]
    assert over["type"] == "over" and over["winner"] == result.winner
    for seat, (name, uniform, mixed, single, bonuses, collected, total) in enumerate(scored):
        assert name == NAMES[seat]
        breakdown = over["breakdown"][seat]
        assert breakdown["total"] == result.scores[seat] == view["scores"][seat]
        assert (int(uniform), int(mixed), int(single), int(total)) == (
            breakdown["uniform"],
            breakdown["mixed"],
            breakdown["single"],
            breakdown["total"],
        )
        assert collected == ", ".join(str(n) for n in breakdown["collected"])
        shown = ", ".join(f"{c} {p}" for c, p in breakdown["bonuses"].items()) or "none"
        assert bonuses == shown
    text = text_of(page)
    if result.winner is None:
        assert "There is no winner." in text
    else:
        assert f"{NAMES[result.winner]} wins." in text


# -- refusals ----------------------------------------------------------------------


def test_out_of_turn_and_illegal_bids_are_refused_and_change_nothing(engine, clock, seeds):
    seeds.fixed = bytes([7]) * 32
    engine.new_game("ice", PLAYERS, deadline=ROUND, turn_deadline=TURN, decision_deadline=DECISION)
    box = Mailbox(engine)
    box.new()
    first = engine.table(1).state.turn
    order = [(first + k) % 3 for k in range(3)]
    mover, second, third = (PLAYERS[s] for s in order)
    clock.advance(hours=1)
    assert send(engine, clock, mover, "bid L", subject=AUCTION).code == "move"  # a first bid: one pyramid
    (high,) = engine.table(1).state.bids[order[0]]
    assert engine.status(1)["phase"]["waiting_for"] == [second]

    def refused(sender: str, text: str) -> str:
        before, moves = engine.table(1).state, engine.store.moves(1)
        box.new()
        clock.advance(minutes=5)
        assert send(engine, clock, sender, text, subject=AUCTION).code == "refused"
        (mail,) = box.new()  # the one answer, to the sender alone; no round mail
        assert mail["to"] == sender and mail["subject"].startswith("Re: ")
        assert f"> {text}" in mail["body"] and "Nothing was changed by this line." in mail["body"]
        assert engine.table(1).state == before and engine.store.moves(1) == moves
        assert engine.status(1)["phase"]["waiting_for"] == [second]
        return mail["body"]

    label = engine.status(1)["phase"]["label"]
    for sender in (third, mover):  # not their turn
        body = refused(sender, "pass")
        assert f"It is not your move; {label} waits for {second}." in body
    active = ice_text(engine.table(1).state.active[order[1]])
    body = refused(second, "bid M")  # a medium does not beat a large
    assert f"Your bid must beat the high bid, L-{high[0]}" in body
    assert "Moves you can make now: pass, " in body  # and what would do
    body = refused(second, "bid L")  # a large only equals it
    assert f"Your bid must beat the high bid, L-{high[0]}" in body
    body = refused(second, "bid L M S")  # three pyramids raise by two
    assert "You may raise by at most one pyramid: bid 2 pyramids at most." in body
    body = refused(second, "bid L-red")  # red is the scoring colour: nobody holds it
    assert f"There is no L-red in your active area to bid; it holds {active}." in body
    body = refused(second, "bid 2 purple")
    assert "I do not know 'purple'" in body
    assert send(engine, clock, second, "bid M S", subject=AUCTION).code == "move"
    assert engine.status(1)["phase"]["waiting_for"] == [third]


def first_turn(engine: Engine, clock: FakeClock, seeds: Seeds) -> tuple[str, Mailbox]:
    """A game's first turn an hour after it opened: its mover, and a mailbox read up to now."""
    seeds.fixed = bytes([7]) * 32
    engine.new_game("ice", PLAYERS, deadline=ROUND, turn_deadline=TURN, decision_deadline=DECISION)
    box = Mailbox(engine)
    box.new()
    clock.advance(hours=1)
    return PLAYERS[engine.table(1).state.turn], box


def test_a_bid_and_a_pass_in_one_mail_make_neither(engine, clock, seeds):
    """A move in turn is final, so two in one mail cannot both count, and the
    referee does not pick one: the turn stays open and the reply says why."""
    mover, box = first_turn(engine, clock, seeds)
    send(engine, clock, mover, "bid L\npass", subject=AUCTION)
    receipt = next(m for m in box.new() if m["to"] == mover and m["subject"].startswith("Re: "))
    assert "Your mail asks for more than one move" in receipt["body"]
    assert engine.store.moves(1) == []
    assert engine.status(1)["phase"]["waiting_for"] == [mover]
    assert send(engine, clock, mover, "pass", subject=AUCTION).code == "move"


# -- reminders ---------------------------------------------------------------------


def test_the_mover_gets_one_reminder_before_each_deadline(tmp_path):
    lead = timedelta(hours=6)
    config = Config(address="referee@example.org", database=tmp_path / "games.db", reminder=lead)
    assert config.outage_gap == timedelta(hours=6)  # the guard is on: tick at least hourly
    clock = FakeClock()
    engine = Engine(Store(config.database), config, clock, Seeds(SEED))
    engine.new_game("ice", PLAYERS, deadline=ROUND, turn_deadline=TURN, decision_deadline=DECISION)
    box = Mailbox(engine)
    engine.tick()
    checked = []
    for _ in range(2000):  # hourly, as cron would; nobody answers
        phases = engine.store.phases(1)
        if any(" scoring, offer " in p["label"] and p["resolved_at"] for p in phases) and len(checked) >= 3:
            break
        clock.advance(hours=1)
        engine.tick()
        for phase in engine.store.phases(1):
            if phase["resolved_at"] and phase["number"] not in checked:
                checked.append(phase["number"])
                (mover,) = phase["movers"]
                reminders = [
                    m
                    for m in box.to(PLAYERS[mover])
                    if is_reminder(m) and m["subject"].split("] ", 1)[1].startswith(f"{phase['label']}: ")
                ]
                if engine.store.final_moves(1, phase["number"])[mover]["source"] == "forced":
                    continue
                assert len(reminders) == 1, phase["label"]
                (mail,) = reminders
                assert from_iso(mail["created_at"]) == from_iso(phase["deadline"]) - lead
                assert f"closes at {show(phase['deadline'])}" in mail["body"]
                assert "6 hours left to move" in mail["subject"]
                legal = re.split(r"Moves you can make now(?: \(the first \d+\))?: ", " ".join(mail["body"].split()))[1]
                assert legal.startswith(("pass, bid ", "bid ", "decline, score tree ")), legal
                others = [
                    m
                    for a in PLAYERS
                    if a != PLAYERS[mover]
                    for m in box.to(a)
                    if is_reminder(m) and phase["label"] + ":" in m["subject"]
                ]
                assert others == []
                assert phase["resolved_at"] == phase["deadline"]  # then the random move
                assert engine.store.final_moves(1, phase["number"])[mover]["source"] == "random"
    else:
        raise AssertionError("no scoring offer was resolved")
    assert engine.status(1)["interventions"] == []  # hourly ticks: no outage
    labels = [engine.store.phases(1)[n - 1]["label"] for n in checked]
    assert any(" scoring, offer " in label for label in labels) and any(", turn " in label for label in labels)
    assert len([m for a in PLAYERS for m in box.to(a) if is_reminder(m)]) == len(checked) - sum(
        engine.store.final_moves(1, n)[engine.store.phases(1)[n - 1]["movers"][0]]["source"] == "forced"
        for n in checked
    )


# -- the command line ----------------------------------------------------------------


@pytest.fixture
def cli(tmp_path, monkeypatch, clock):
    """``cli(*args)`` -> (exit status, stdout, stderr), and the engine on its games.db."""
    monkeypatch.delenv("REFEREE_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "referee.toml"
    path.write_text(
        '[referee]\naddress = "referee@example.org"\ndatabase = "games.db"\n'
        '[defaults]\nreminder = "0s"\n[outage]\ngap = "0s"\n'
    )

    def run(*args: str):
        status = main(["--config", str(path), *args], clock=clock)
        return status

    def engine() -> Engine:
        config = config_module.load(path)
        return Engine(Store(config.database), config, clock)

    run.engine = engine
    return run


def _new_ice(cli, capsys, *args: str) -> tuple[int, str]:
    status = cli("new", "ice", "--player", "a@x.org", "--player", "b@x.org", *args)
    out, err = capsys.readouterr()
    assert status == 0, err
    return int(out.splitlines()[-1]), out


def test_cli_new_ice_gives_turns_and_scoring_offers_their_deadlines(cli, capsys, clock):
    game, out = _new_ice(cli, capsys, "--turn-deadline", "1d", "--decision-deadline", "12h")
    assert "ice, 2 seats, running" in out
    engine = cli.engine()
    assert deadlines(engine.store.game(game))["turn"] == DAY
    assert deadlines(engine.store.game(game))["decision"] == DECISION
    # nobody answers: each deadline fills the move in, until a scoring offer has passed
    for _ in range(300):
        phases = engine.store.phases(game)
        if any(" scoring, offer " in p["label"] and p["resolved_at"] for p in phases):
            break
        if engine.status(game)["state"] != "running":
            break
        clock.now = from_iso(phases[-1]["deadline"])
        assert engine.tick()
    phases = engine.store.phases(game)
    assert any(" scoring, offer " in p["label"] for p in phases)
    for phase in phases:
        assert span(phase) == expected_span(phase["label"]), phase


def test_cli_new_ice_without_a_turn_deadline_uses_the_deadline(cli, capsys):
    game, _ = _new_ice(cli, capsys, "--deadline", "2d")
    engine = cli.engine()
    (phase,) = engine.store.phases(game)
    assert span(phase) == timedelta(days=2)
    assert deadlines(engine.store.game(game)) == {
        "round": timedelta(days=2),
        "turn": timedelta(days=2),
        "decision": timedelta(days=2),
    }


def test_cli_new_ice_with_a_zero_turn_deadline_uses_the_deadline(cli, capsys):
    game, _ = _new_ice(cli, capsys, "--deadline", "2d", "--turn-deadline", "0s", "--decision-deadline", "12h")
    engine = cli.engine()
    (phase,) = engine.store.phases(game)
    assert span(phase) == timedelta(days=2)
    assert deadlines(engine.store.game(game))["decision"] == DECISION


def test_the_receipt_of_a_turn_never_offers_a_change_even_when_the_server_clock_runs_ahead(engine, clock, seeds):
    """The turn closes at the move's receipt time; a mail server a minute
    ahead of the referee's clock leaves it closing "in the future", which is
    no reason to tell a player that a final move may still change."""
    mover, box = first_turn(engine, clock, seeds)
    assert engine.ingest(reply(engine, mover, "pass", received=clock() + timedelta(minutes=1))).code == "move"
    receipt = next(m for m in box.new() if m["to"] == mover and m["subject"].startswith("Re: "))
    assert "Moves in turn are final" in receipt["body"]
    assert "change your move" not in receipt["body"]
