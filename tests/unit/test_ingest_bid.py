"""Bid! played through ``Engine.ingest`` of real mails.

alice and bob answer every prompt they get by replying to it; carol never
answers, so each auction waits for its deadline (driven by the fake clock)
and carol's move is chosen at random.  alice plays her pawn once.  What the
players are told (prompts, receipts, round mails, the final mail) and what
the site shows is checked against the record the engine keeps.
"""

from __future__ import annotations

import html
import json
import random
import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock, Mailbox, Seeds, answer, send, to_deadline

from referee.config import Config
from referee.engine import Engine
from referee.record import random_move_rng, setup_rng, verify
from referee.rules.bid import GOAL, Bid, tile_name, tile_value
from referee.site.render import Site
from referee.store import Notify, Store
from referee.timeutil import from_iso, show

ALICE, BOB, CAROL = PLAYERS
AUCTION = "Re: [bid-1] Auction"  # the subject of a reply about game 1
RULES = Bid()
DAY = timedelta(days=1)
_OPEN = re.compile(r"^(?P<label>.+) of game \d+ is open\.$", re.M)
_RESOLVED = re.compile(r"^(?P<label>.+) of game \d+ is resolved\.$", re.M)
_TILES = re.compile(r"^Your tiles: (?P<tiles>[^;\n]+);", re.M)
_COINS_ASKED = re.compile(r"coins?: bid 0 to (?P<most>\d+)\.")


# -- helpers -------------------------------------------------------------------


def is_prompt(mail: dict) -> bool:
    return bool(_OPEN.search(mail["body"]))


def round_label(mail: dict) -> str | None:
    match = _RESOLVED.search(mail["body"])
    return match and match["label"]


def asked(body: str) -> tuple[str, list[int], int]:
    """What a prompt asks for: ("coins", [], most) or ("bid", hand, tiles a bid)."""
    coins = _COINS_ASKED.search(body)
    if coins:
        return "coins", [], int(coins["most"])
    match = _TILES.search(body)
    assert match, f"a prompt that asks for neither tiles nor coins:\n{body}"
    hand = [tile_value(word) for word in match["tiles"].split()]
    return "bid", hand, 2 if re.search(r"\bbid two of your tiles\b", body, re.I) else 1


def tiles(bid) -> str:
    return " + ".join(tile_name(t) for t in bid)


def die_text(face: int) -> str:
    return "ACE" if face == 1 else tile_name(face)


def prize(dice) -> int:
    """What an auction is worth, worked out here from the dice (not the rules)."""
    return (2 if dice[0] == 1 else 1) * sum(face for face in dice if face >= 2)


def seed_where(wanted) -> bytes:
    """The first of a fixed run of seeds whose first roll (the state after
    setup) satisfies ``wanted``."""
    for n in range(10_000):
        seed = n.to_bytes(4, "big") * 8
        if wanted(RULES.setup(3, setup_rng(seed), {}), seed):
            return seed
    raise AssertionError("no seed found")


# -- a whole game ----------------------------------------------------------------


class Played:
    """A whole game of Bid!, played once for the tests below."""

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
        self.pawn_phase: int | None = None
        self.site = root / "site"
        self.play()
        Site(self.engine, self.site).render()

    def play(self) -> None:
        engine, clock, choose = self.engine, self.clock, random.Random(6)
        game = engine.new_game("bid", PLAYERS, deadline=DAY)
        answered: set[int] = set()
        for _ in range(2000):
            if engine.status(game)["state"] != "running":
                return
            pending = [m for m in self.box.to(ALICE) + self.box.to(BOB) if is_prompt(m) and m["id"] not in answered]
            if not pending:
                # only carol owes a move now: the deadline fills it in
                assert engine.status(game)["phase"]["waiting_for"] == [CAROL]
                assert engine.tick() == []  # not yet: carol still has time
                to_deadline(engine, clock, game)
                assert engine.tick(), "the deadline resolved nothing"
                continue
            prompt = min(pending, key=lambda m: m["id"])
            answered.add(prompt["id"])
            phase = engine.status(game)["phase"]
            assert _OPEN.search(prompt["body"])["label"] == phase["label"]
            seat = PLAYERS.index(prompt["to"])
            state = engine.table(game).state
            what, hand, size = asked(prompt["body"])
            if what == "coins":
                assert size == state.coins[seat] and state.stage == "coins"
                text = f"coins {choose.randint(0, size)}"
            elif prompt["to"] == ALICE and self.pawn_phase is None and phase["number"] >= 3:
                assert 'Or play your pawn ("pawn")' in prompt["body"]
                text, self.pawn_phase = "pawn", phase["number"]
            else:
                assert hand == list(state.hands[seat]) and size == state.tiles_per_bid
                text = "bid " + " ".join(tile_name(t) for t in choose.sample(hand, size))
            assert RULES.parse_move(state, seat, text) in RULES.legal_moves(state, seat)
            clock.advance(minutes=choose.randint(1, 600))
            outcome = answer(engine, clock, prompt, text)
            assert outcome.code == "move", (text, outcome)
        raise AssertionError("the game did not end")


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> Played:
    # A fixed seed, so the game is the same each run: one with ties broken by
    # coins, Ace of Suns auctions, a tie under the Ace of Crowns, Moons and Arms.
    return Played(tmp_path_factory.mktemp("bid"), bytes([1]) * 32)


def test_a_whole_game_ends_with_the_rules_winner(played):
    engine = played.engine
    status = engine.status(1)
    assert status["state"] == "finished" and status["phase"] is None
    table = engine.table(1)
    scores = list(table.state.scores)
    assert [p["score"] for p in status["players"]] == scores
    best = max(scores)
    assert best >= GOAL and scores.count(best) == 1, scores
    assert status["winner"] == PLAYERS[scores.index(best)]
    # It ended as soon as someone reached 100: nobody had before the last phase.
    assert max(table.replay.steps[-1].before.scores) < GOAL
    phases = engine.store.phases(1)
    assert len(phases) == len(table.replay.steps) > 10
    assert all(p["resolved_at"] for p in phases)
    # The game showed what the tests below check the mails and pages of.
    events = [step.events[0] for step in table.replay.steps]
    assert any(e["type"] == "tie" for e in events) and any(e.get("coins_bid") for e in events)
    assert any(e.get("crowned") for e in events) and any(e.get("moons_coins") for e in events)
    assert any(e.get("arms_bonus") for e in events) and any(e.get("swaps") for e in events)
    doubles = [step for step in table.replay.steps if step.before.stage == "bids" and step.before.ace("suns")]
    assert doubles and all(len(move[1]) == 2 for step in doubles for move in step.moves.values() if move[0] == "bid")


def test_carol_never_answers_so_all_her_moves_are_random_bids(played):
    engine = played.engine
    table = engine.table(1)
    carols = [(step, engine.store.final_moves(1, step.number).get(2)) for step in table.replay.steps]
    carols = [(step, move) for step, move in carols if 2 in step.phase.movers]
    assert len(carols) > 10
    assert all(move["source"] == "random" for _, move in carols)
    assert not any(move["move"].startswith("pawn") for _, move in carols)
    assert 2 in table.state.pawns  # she never played it
    for step, move in carols:  # each is the seed's draw, from the legal bids
        drawn = RULES.random_move(step.before, 2, random_move_rng(table.seed, step.number, 2))
        assert move["move"] == RULES.move_text(drawn)
        assert drawn[0] in ("bid", "coins")
    # alice and bob moved by mail only (a move forced by the rules aside)
    for step in table.replay.steps:
        for seat in (0, 1):
            if seat in step.phase.movers:
                assert engine.store.final_moves(1, step.number)[seat]["source"] in ("mail", "forced")


def test_alices_pawn_cancels_one_auction_and_the_next_gets_a_fresh_deadline(played):
    engine = played.engine
    table = engine.table(1)
    phases = engine.store.phases(1)
    cancelled = [step for step in table.replay.steps if step.events[0]["type"] == "cancelled"]
    assert [step.number for step in cancelled] == [played.pawn_phase]
    (step,) = cancelled
    assert step.moves[0] == ("pawn", ())
    assert step.events[0]["by"] == [0]
    after = table.replay.steps[step.number]  # the auction that follows
    assert after.before.auction == step.before.auction
    assert after.before.rolls == step.before.rolls + 1
    assert after.phase.label == f"Auction {step.before.auction} (roll 2)"
    # the bids go back: nobody's tiles or coins changed; all four dice were rolled again
    assert after.before.hands == step.before.hands and after.before.coins == step.before.coins
    if not step.events[0]["arms_bonus"]:
        assert after.before.scores == step.before.scores
    assert list(after.before.dice) == step.events[0]["next_dice"]
    assert 0 not in after.before.pawns and 1 in after.before.pawns
    old, new = phases[step.number - 1], phases[step.number]
    assert from_iso(new["deadline"]) > from_iso(old["deadline"])
    assert from_iso(new["deadline"]) - from_iso(new["opened_at"]) == DAY
    # everyone is prompted again, with the new deadline
    for address in PLAYERS:
        prompts = [
            m for m in played.box.to(address) if is_prompt(m) and _OPEN.search(m["body"])["label"] == new["label"]
        ]
        assert len(prompts) == 1
        prompt = prompts[0]
        assert prompt["created_at"] == new["opened_at"]
        assert f"Deadline: {show(new['deadline'])}" in prompt["body"]
    # alice's prompts from then on no longer offer the pawn
    later = [m for m in played.box.to(ALICE) if is_prompt(m) and m["created_at"] >= new["opened_at"]]
    assert later and not any('("pawn")' in m["body"] for m in later)


def _check_round_mail(body: str, step, how: dict[int, str]) -> None:
    event = step.events[0]
    if event["type"] == "cancelled":
        for seat, move in event["how"].items():
            assert f'{PLAYERS[int(seat)]} played "{move}": the auction is cancelled' in body, body
        assert "The bids:" not in body  # the bids go back unseen
        return
    dice = event["dice"]
    assert (
        f"Dice: Suns {die_text(dice[0])}, Moons {die_text(dice[1])}, "
        f"Crowns {die_text(dice[2])}, Arms {die_text(dice[3])}."
    ) in body, body
    points = prize(dice)
    assert f"The winner takes {points} point" in body, body
    bids = body.split("The bids:\n", 1)[1].split("\n\n", 1)[0]
    for seat, address in enumerate(PLAYERS):
        line = re.search(rf"^\s+{re.escape(address)}\s+(?P<bid>\S.*?)(?P<remark>\s{{2}}\(.*\))?$", bids, re.M)
        assert line, f"no bid of {address} in:\n{bids}"
        bid = event["bids"][seat]
        assert line["bid"].strip() == tiles(bid) + (f" = {sum(bid)}" if len(bid) > 1 else "")  # a two-tile bid added up
        if seat in how:  # (a coin tie-break's mail repeats the bids: its remarks are about the coins)
            random_move = how[seat] == "random"
            assert bool(line["remark"] and "random" in line["remark"]) == random_move, line[0]
    if event["type"] == "tie":
        assert "The highest bid is tied: " + ", ".join(PLAYERS[s] for s in event["tied"]) in body
        return
    if event["coins_bid"]:
        coins = re.search(r"^Coin tie-break: (.*) \(paid to the bank\)\.$", body, re.M)
        assert coins, body
        assert coins[1] == ", ".join(f"{PLAYERS[int(s)]} {n}" for s, n in event["coins_bid"].items())
    if event["winner"] is not None:
        why = r"\(the most coins\)" if event["coins_bid"] else rf"with the highest bid, {max(map(sum, event['bids']))}"
        assert re.search(
            rf"^{re.escape(PLAYERS[event['winner']])} wins the auction {why}: {points} point", body, re.M
        ), body
    elif event["crowned"]:
        crowned = ", ".join(PLAYERS[s] for s in event["crowned"])
        assert f"Ace of Crowns: {crowned} tied for the highest bid and each lose {points} points" in body
    else:
        assert "Nobody wins the auction" in body
    if event["moons_coins"]:
        assert f"Ace of Moons: everyone else takes {event['moons_coins']} coin" in body
    if event["arms_bonus"]:
        bonus = ", ".join(PLAYERS[s] for s in event["arms_bonus"])
        assert f"The next roll shows the Ace of Arms: {bonus} score" in body
    for swap in event["swaps"]:
        text = f"{PLAYERS[swap['from']]} gives {tiles(swap['tiles'])} to {PLAYERS[swap['to']]}"
        assert text in body, body
    if not event["swaps"]:
        assert "No tiles change hands" in body


def test_every_round_mail_shows_dice_prize_bids_swaps_and_coins(played):
    engine = played.engine
    table = engine.table(1)
    steps = {step.phase.label: step for step in table.replay.steps}
    kinds = set()
    for address in PLAYERS:
        rounds = [m for m in played.box.to(address) if round_label(m)]
        assert [round_label(m) for m in rounds] == list(steps), address
        for mail in rounds:
            step = steps[round_label(mail)]
            how = {s: m["source"] for s, m in engine.store.final_moves(1, step.number).items()}
            _check_round_mail(mail["body"], step, how)
            event = step.events[0]
            kinds.add(event["type"] + ("+coins" if event.get("coins_bid") else ""))
            kinds.add("swaps" if event.get("swaps") else "")
    assert {"auction", "cancelled", "swaps"} <= kinds, kinds  # the game showed each


def test_the_final_mail_names_the_winner_and_the_seed(played):
    status = played.engine.status(1)
    winner = status["winner"]
    score = next(p["score"] for p in status["players"] if p["address"] == winner)
    for address in PLAYERS:
        final = played.box.to(address)[-1]
        assert f"Game over: {winner} wins" in final["subject"]
        assert f"{winner} wins with {score} points." in final["body"]
        assert status["seed"] in final["body"] and status["seed_commitment"] in final["body"]


def _site_rows(page: str) -> dict[int, list[str]]:
    rows = {}
    for match in re.finditer(r'<tr id="phase-(\d+)">(.*?)</tr>', page, re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", match[2], re.S)
        rows[int(match[1])] = [html.unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in cells]
    return rows


def test_the_site_shows_each_phase_and_its_record_verifies(played):
    table = played.engine.table(1)
    page = (played.site / "games/1/index.html").read_text(encoding="utf-8")
    rows = _site_rows(page)
    assert sorted(rows) == [step.number for step in table.replay.steps]
    names = ["alice", "bob", "carol"]
    for step in table.replay.steps:
        event = step.events[0]
        label, dice, *bids, result, _totals = rows[step.number]
        assert label == step.phase.label
        assert dice == ", ".join(tile_name(face) for face in step.before.dice)
        for seat, cell in enumerate(bids):
            if event["type"] == "cancelled":  # who cancelled it, and how; no bid is shown
                shown = RULES.move_text(step.moves[seat]) if seat in event["by"] else ""
                assert cell.rstrip("*") == shown, (cell, event)
                continue
            assert cell.startswith(tiles(event["bids"][seat])), (cell, event)
            if event.get("coins_bid") and str(seat) in event["coins_bid"]:
                assert f"({event['coins_bid'][str(seat)]}¢)" in cell
        if event["type"] == "cancelled":
            assert result.startswith("cancelled")
        elif event["type"] == "tie":
            assert result.startswith("tie")
        elif event["winner"] is not None:
            assert result == f"{names[event['winner']]} +{prize(event['dice'])}"
    assert f"{played.engine.status(1)['winner'].split('@')[0]} wins." in page
    record = json.loads((played.site / "games/1/record.json").read_text(encoding="utf-8"))
    verdict = verify(record)
    assert verdict.ok, verdict.message


def test_the_site_shows_the_totals_after_every_phase(played):
    table = played.engine.table(1)
    rows = _site_rows((played.site / "games/1/index.html").read_text(encoding="utf-8"))
    scores = [step.before.scores for step in table.replay.steps[1:]] + [table.state.scores]
    for step, after in zip(table.replay.steps, scores, strict=True):
        assert rows[step.number][-1] == " · ".join(str(s) for s in after), (step.number, step.events[0]["type"])


def test_a_missed_deadline_draws_uniformly_from_the_legal_bids_never_a_pawn():
    """What carol gets at a deadline (the draw checked above for each of her
    moves): over many seeds, every legal bid about equally often, every coin
    count from 0 to her coins, and never her pawn."""
    suns = RULES.setup(3, setup_rng(seed_where(lambda state, seed: state.ace("suns"))), {})
    tie = replace(suns, stage="coins", tied=(0, 2), bids=((5,), (0,), (5,)))
    for state, kinds, draws in ((suns, 15, 3000), (tie, 3, 900)):
        legal = [m for m in RULES.legal_moves(state, 2) if m[0] != "pawn"]
        assert len(legal) == kinds  # 15 pairs of distinct tiles; 0, 1 or 2 coins
        counts = dict.fromkeys(legal, 0)
        for n in range(draws):
            counts[RULES.random_move(state, 2, random_move_rng(n.to_bytes(8, "big"), 1, 2))] += 1
        expected = draws / kinds
        assert all(0.6 * expected < count < 1.4 * expected for count in counts.values()), counts


# -- an Ace of Suns auction ------------------------------------------------------


def test_under_the_ace_of_suns_a_one_tile_bid_is_refused_and_changes_nothing(engine, clock, seeds):
    seeds.fixed = seed_where(lambda state, seed: state.ace("suns"))
    engine.new_game("bid", PLAYERS, deadline=DAY)
    box = Mailbox(engine)
    prompt = next(m for m in box.to(ALICE) if is_prompt(m))
    assert "Ace of Suns" in prompt["subject"]
    assert asked(prompt["body"]) == ("bid", [0, 1, 2, 3, 4, 5], 2)
    assert re.search(r"^Moves you can make now: bid \S+ \S+, ", prompt["body"], re.M)  # two tiles a move
    before = engine.table(1).state
    box.new()
    clock.advance(hours=1)
    assert answer(engine, clock, prompt, "bid 4").code == "refused"
    (refusal,) = box.new()
    assert refusal["to"] == ALICE
    assert "2 tile(s) a bid" in refusal["body"] and "Nothing was changed" in refusal["body"]
    assert "bid 4 5" in refusal["body"]  # the legal moves it lists are two-tile bids
    assert engine.store.final_moves(1, 1) == {}
    assert engine.status(1)["phase"]["waiting_for"] == PLAYERS
    assert engine.table(1).state == before
    assert answer(engine, clock, prompt, "bid 4 5").code == "move"
    assert engine.store.final_moves(1, 1)[0]["move"] == "bid 4 5"


# -- a coin tie-break -------------------------------------------------------------


def _tie_seed() -> tuple[bytes, tuple]:
    """A seed whose first auction has no Ace of Suns or Crowns and carol's
    random bid (the one she gets at the deadline) is above null."""

    def wanted(state, seed):
        if state.ace("suns") or state.ace("crowns"):
            return False
        return RULES.random_move(state, 2, random_move_rng(seed, 1, 2))[1][0] > 0

    seed = seed_where(wanted)
    state = RULES.setup(3, setup_rng(seed), {})
    return seed, RULES.random_move(state, 2, random_move_rng(seed, 1, 2))[1]


def _tie_with_carol(engine, clock, seeds) -> Mailbox:
    """alice bids what carol will get at random, bob less: alice and carol tie."""
    seeds.fixed, (carols,) = _tie_seed()
    engine.new_game("bid", PLAYERS, deadline=DAY, notify=Notify.EVERY)  # the tie's result to everyone at once
    box = Mailbox(engine)
    clock.advance(hours=1)
    assert send(engine, clock, ALICE, f"bid {tile_name(carols)}", subject=AUCTION).code == "move"
    assert send(engine, clock, BOB, f"bid {tile_name(carols - 1)}", subject=AUCTION).code == "move"
    box.new()
    to_deadline(engine, clock)
    engine.tick()
    assert engine.table(1).state.stage == "coins"
    return box


def test_a_tie_asks_only_the_tied_players_for_coins(engine, clock, seeds):
    box = _tie_with_carol(engine, clock, seeds)
    fresh = box.new()
    status = engine.status(1)
    assert status["phase"]["label"] == "Auction 1: coin tie-break"
    assert status["phase"]["waiting_for"] == [ALICE, CAROL]
    for address in PLAYERS:
        (result,) = [m for m in fresh if m["to"] == address and round_label(m)]
        assert "The highest bid is tied: alice@example.org, carol@example.org" in result["body"]
        prompts = [m for m in fresh if m["to"] == address and is_prompt(m)]
        assert len(prompts) == (address != BOB)
        if prompts:
            assert "coin tie-break: bid coins for " in prompts[0]["subject"]
            assert asked(prompts[0]["body"]) == ("coins", [], 2)


def test_too_many_coins_are_refused_and_a_silent_tied_player_bids_random_coins(engine, clock, seeds):
    box = _tie_with_carol(engine, clock, seeds)
    prompt = next(m for m in box.to(ALICE) if is_prompt(m) and "coin tie-break" in m["subject"])
    box.new()
    clock.advance(hours=1)
    assert answer(engine, clock, prompt, "coins 3").code == "refused"
    (refusal,) = box.new()
    assert "Nothing was changed" in refusal["body"]
    assert engine.store.final_moves(1, 2) == {}
    assert send(engine, clock, BOB, "coins 1", subject=AUCTION).code == "refused"  # bob is not in the tie-break
    assert answer(engine, clock, prompt, "coins 2").code == "move"
    table = engine.table(1)
    before, seed = table.state, table.seed
    to_deadline(engine, clock)
    engine.tick()
    carols = engine.store.final_moves(1, 2)[2]
    assert carols["source"] == "random"
    count = int(carols["move"].split()[1])
    assert 0 <= count <= before.coins[2]
    assert carols["move"] == RULES.move_text(RULES.random_move(before, 2, random_move_rng(seed, 2, 2)))
    event = engine.table(1).replay.steps[1].events[0]
    assert event["coins_bid"] == {"0": 2, "2": count}
    (result,) = [m for m in box.new() if m["to"] == BOB and round_label(m)]
    assert f"Coin tie-break: {ALICE} 2, {CAROL} {count} (paid to the bank)." in result["body"]


def test_too_many_coins_are_refused_with_the_rules_reason(engine, clock, seeds):
    box = _tie_with_carol(engine, clock, seeds)
    prompt = next(m for m in box.to(ALICE) if is_prompt(m) and "coin tie-break" in m["subject"])
    box.new()
    assert answer(engine, clock, prompt, "coins 3").code == "refused"
    (refusal,) = box.new()
    assert "You have 2 coin(s); bid 0 to 2." in refusal["body"], refusal["body"]


# -- sealed bids stay sealed --------------------------------------------------------


def _open_auction(root: Path, alice_bid: str, seed: bytes) -> tuple[list, str, str]:
    """Auction 1 with alice's bid in, then bob and carol write (a bid, a
    mistake, STATUS, HAND): what they are sent, and the site's game page and record."""
    root.mkdir()
    config = Config(
        address="referee@example.org", reminder=None, outage_gap=None, database=root / "games.db", secret_key=b"one key"
    )
    clock = FakeClock()
    engine = Engine(Store(config.database), config, clock, Seeds(seed))
    engine.new_game("bid", PLAYERS, deadline=DAY)
    box = Mailbox(engine)
    box.new()
    clock.advance(hours=1)
    assert send(engine, clock, ALICE, alice_bid, subject=AUCTION).code == "move"
    clock.advance(hours=1)
    for sender, text in (
        (BOB, "bid 2"),
        (BOB, "status"),
        (BOB, "bid 9"),
        (CAROL, "status"),
        (CAROL, "hand"),
        (BOB, "bid 3"),
    ):
        send(engine, clock, sender, text, subject=AUCTION)
    assert engine.status(1)["phase"]["waiting_for"] == [CAROL]
    Site(engine, root / "site").render()
    others = [(m["to"], m["subject"], m["body"]) for m in box.new() if m["to"] != ALICE]
    page = (root / "site/games/1/index.html").read_text(encoding="utf-8")
    record = (root / "site/games/1/record.json").read_text(encoding="utf-8")
    return others, page, record


def test_an_open_auction_never_shows_alices_bid_to_anyone_else(tmp_path):
    seed = seed_where(lambda state, seed: not state.ace("suns"))
    first = _open_auction(tmp_path / "a", "bid null", seed)
    second = _open_auction(tmp_path / "b", "bid 5", seed)
    assert len(first[0]) >= 6  # each of bob's and carol's lines got an answer
    assert first == second  # nothing bob, carol or the site sees depends on alice's bid
    statuses = [body for _, _, body in first[0] if "> status" in body]
    assert len(statuses) == 2 and all("Moved: alice@example.org, bob@example.org." in b for b in statuses)
    assert "Moved: alice, bob." in first[1]  # the site says who moved, never what


def test_a_bot_that_reaches_100_first_ends_the_game_with_no_winner(tmp_path):
    """B11: alice plays two bots and never answers; in the first of these
    seeds' games where a bot reaches 100 first, nobody is named winner, and
    the final mail says why instead of crowning alice with fewer points."""
    for n in range(20):
        config = Config(address="referee@example.org", database=tmp_path / f"{n}.db", reminder=None, outage_gap=None)
        clock = FakeClock()
        engine = Engine(Store(config.database), config, clock, Seeds(n.to_bytes(4, "big") * 8))
        game = engine.new_game("bid", [ALICE], bots=2, deadline=DAY)
        while engine.status(game)["state"] != "finished":
            to_deadline(engine, clock, game)
            engine.tick()
        status = engine.status(game)
        scores = {p["address"] or f"bot {p['seat'] + 1}": p["score"] for p in status["players"]}
        top = max(scores.values())
        if scores[ALICE] < top:
            break
    else:
        raise AssertionError("no seed where a bot ends ahead")
    assert top >= GOAL and list(scores.values()).count(top) == 1
    assert status["winner"] is None
    final = Mailbox(engine).to(ALICE)[-1]
    assert "Game over: no winner" in final["subject"]
    assert f"has the most points ({top}), and a bot\nnever wins" in final["body"]
