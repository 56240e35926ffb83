"""Whole games of Pure Skill played through ``Engine.ingest`` of real mails.

alice and bob answer every prompt; carol never answers, so each round waits
for its deadline (driven by the fake clock) and carol gets a random bid.
"""

from __future__ import annotations

import hashlib
import random
import re
from datetime import timedelta

from conftest import PLAYERS, FakeClock, body_of, mails, make_mail, reply, to_deadline
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.config import Config
from referee.engine import Engine
from referee.record import PhaseRecord, digest_line, replay
from referee.rules.pure_skill import card_name, card_value
from referee.store import Notify, Store

ALICE, BOB, CAROL = PLAYERS
_HAND = re.compile(r"hand\b[^:\n]*:\s*(?P<cards>[^\n]+)", re.I)
_ROUND = re.compile(r"\bRound (\d+) of 13\b")


def hand_in(body: str) -> list[int]:
    """The cards a prompt says its reader holds."""
    match = _HAND.search(body)
    assert match, f"no hand in the prompt:\n{body}"
    return sorted(card_value(word) for word in match["cards"].split())


def prompts(engine: Engine, to: str) -> list[dict]:
    return [m for m in mails(engine, to) if _HAND.search(m["body"])]


def announcements(engine: Engine, to: str) -> dict[int, list[dict]]:
    """Round results sent to ``to``, by round number (a result lists the bids)."""
    found: dict[int, list[dict]] = {}
    for mail in mails(engine, to):
        if re.search(r"^The bids:", mail["body"], re.M) and not _HAND.search(mail["body"]):
            number = int(_ROUND.search(mail["subject"])[1])
            found.setdefault(number, []).append(mail)
    return found


def bid_line(body: str, address: str) -> tuple[int, str]:
    """(card, remark) of ``address``'s bid as a round result shows it."""
    section = body.split("The bids:", 1)[1].split("\n\n", 1)[0]
    match = re.search(rf"^\s+{re.escape(address)}\s+(\S+)(.*)$", section, re.M)
    assert match, f"no bid of {address} in:\n{section}"
    return card_value(match[1]), match[2]


def prize_sums(table) -> list[int]:
    """Each seat's total, worked out from the record: the prizes its single
    highest bids took (the default tie rule discards a tied prize)."""
    totals = [0] * len(table.seats)
    for step in table.replay.steps:
        bids = step.moves
        top = max(bids.values())
        leaders = [seat for seat, bid in bids.items() if bid == top]
        if len(leaders) == 1:
            totals[leaders[0]] += step.before.prize
    return totals


def test_a_whole_game_with_a_silent_player(engine, clock, config):
    choose = random.Random(7)
    game = engine.new_game("pure-skill", PLAYERS)
    resolved: list[str] = []
    for number in range(1, 13):
        for address in (ALICE, BOB):
            prompt = prompts(engine, address)[-1]
            assert _ROUND.search(prompt["subject"])[1] == str(number)
            hand = hand_in(prompt["body"])
            seat = PLAYERS.index(address)
            assert hand == sorted(engine.table(game).state.hands[seat])
            clock.advance(hours=2)
            # as a mail client replies: to the prompt's Reply-To, "Re:" its subject
            mail = make_mail(
                address,
                f"bid {card_name(choose.choice(hand))}",
                to=prompt["reply_to"],
                subject=f"Re: {prompt['subject']}",
                received=clock(),
            )
            assert engine.ingest(mail).code == "move"
        assert engine.status(game)["phase"]["waiting_for"] == [CAROL]
        assert engine.tick() == []  # carol still has time
        to_deadline(engine, clock, game)
        resolved += engine.tick()
    # Round 12's deadline also plays round 13: each hand holds one card.
    status = engine.status(game)
    assert status["state"] == "finished"
    assert status["phase"] is None

    # 13 phases, each resolved exactly once.
    phases = engine.store.phases(game)
    assert [p["number"] for p in phases] == list(range(1, 14))
    assert all(p["resolved_at"] for p in phases)
    assert len(resolved) == len(set(resolved)) == 13
    for address in PLAYERS:
        rounds = announcements(engine, address)
        assert sorted(rounds) == list(range(1, 14))
        assert all(len(copies) == 1 for copies in rounds.values())

    # The seed is revealed and matches the commitment announced at the start.
    seed = bytes.fromhex(status["seed"])
    assert hashlib.sha256(seed).hexdigest() == status["seed_commitment"]
    for address in PLAYERS:
        start, *_ = mails(engine, address)
        assert status["seed_commitment"] in start["body"]
        assert status["seed"] in mails(engine, address)[-1]["body"]

    # Each announcement shows the bids that counted, and says carol's was random.
    table = engine.table(game)
    moves = {n: engine.store.final_moves(game, n) for n in range(1, 14)}
    for number, (copy,) in announcements(engine, ALICE).items():
        for seat, address in enumerate(PLAYERS):
            card, remark = bid_line(copy["body"], address)
            assert card_value(moves[number][seat]["move"].split()[1]) == card
            random_bid = moves[number][seat]["source"] == "random"
            assert random_bid == (address == CAROL and number < 13)
            assert ("random" in remark.lower()) == random_bid, copy["body"]
    assert all(m["source"] == "mail" for n in range(1, 13) for s, m in moves[n].items() if s < 2)
    assert not any(m["source"] == "random" for m in moves[13].values())
    # carol never wrote, so she got prompts and results but no receipts or errors.
    assert len(prompts(engine, CAROL)) == 12

    # Scores are the sums of the prizes won, and replaying the record agrees.
    scores = [p["score"] for p in status["players"]]
    assert scores == prize_sums(table)
    assert sum(scores) + sum(table.state.discarded_prizes) == sum(range(1, 14))
    again = Engine(Store(config.database), config, clock)
    assert list(again.table(game).state.scores) == scores
    record = again.table(game)

    rerun = replay(
        record.rules,
        seed,
        3,
        record.row["options"],
        (),
        [PhaseRecord(n, {s: m["move"] for s, m in moves[n].items()}) for n in range(1, 14)],
    )
    assert list(rerun.state.scores) == scores
    winner = status["winner"]
    best = max(scores)
    if scores.count(best) == 1:
        assert winner == PLAYERS[scores.index(best)]
    else:
        assert winner is None


def _rendered(engine: Engine, game: int) -> dict[int, dict[int, tuple[str, str]]]:
    """Each round's result as each seat's copy shows it (the copies differ
    only in the seat's own subject tag, which carries its reply token)."""
    table = engine.table(game)
    kind = table.row["kind"]
    rendered: dict[int, dict[int, tuple[str, str]]] = {}
    for step in table.replay.steps:
        context = {
            **engine.post.context(table),
            "round": engine.post.round_context(table, step.number),
            "digest": digest_line(step.phase.label, table.digest(step.number)),
        }
        rendered[step.number] = {
            seat: engine.composer.render(
                f"{kind}/round", **{**context, "game": {**context["game"], "tag": table.tag(seat)}}
            )
            for seat in range(len(table.seats))
        }
    return rendered


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    ties=st.sampled_from(["discard", "carry"]),
    leaves=st.one_of(st.none(), st.integers(min_value=1, max_value=12)),
    settle=st.sampled_from([timedelta(0), timedelta(minutes=30)]),
)
def test_announcements_replay_exactly_from_seed_and_moves(tmp_path_factory, data, ties, leaves, settle):
    config = Config(
        address="referee@example.org",
        reminder=None,
        outage_gap=None,
        database=tmp_path_factory.mktemp("db") / "games.db",
        notify=Notify.EVERY,  # every phase's result to every player, each copy alike
    )
    clock = FakeClock()
    engine = Engine(Store(config.database), config, clock)
    game = engine.new_game("pure-skill", PLAYERS, settle=settle, options={"ties": ties})
    while engine.status(game)["state"] == "running":
        number = engine.status(game)["phase"]["number"]
        if number == leaves:
            engine.resign(game, BOB)
        state = engine.table(game).state
        for seat, address in enumerate(PLAYERS):
            if address not in engine.status(game)["phase"]["waiting_for"]:
                continue
            if address == CAROL and data.draw(st.booleans(), label="carol silent"):
                continue
            card = data.draw(st.sampled_from(sorted(state.hands[seat])), label=address)
            clock.advance(minutes=data.draw(st.integers(1, 600), label="minutes"))
            engine.ingest(
                reply(
                    engine,
                    address,
                    f"bid {card_name(card)}",
                    game=game,
                    received=clock(),
                    subject=f"Re: [pure-skill-{game}]",
                )
            )
            if engine.status(game)["state"] != "running":
                break
        if engine.status(game)["state"] == "running" and engine.status(game)["phase"]["number"] == number:
            to_deadline(engine, clock, game)
            engine.tick()
    rendered = _rendered(engine, game)
    assert sorted(rendered) == list(range(1, 14))
    queued = engine.store.outbox()
    for number, seats in rendered.items():
        for seat, (subject, body) in seats.items():
            copies = [m for m in queued if m["subject"] == subject]
            # bob gets no result of the round he left in, nor of any later one
            human = PLAYERS[seat] != BOB or leaves is None or number < leaves
            assert len(copies) == int(human), (number, seat, subject)
            assert all(m["recipients"] == [PLAYERS[seat]] for m in copies)
            assert all(body_of(m["raw"]) == body for m in copies)
