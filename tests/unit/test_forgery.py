"""Forgery, as a property: every single-field change of a finished game's
published record that alters an outcome or a label is refused, over
genuine records of all five kinds.

Games of every kind are played through the engine (moves by mail, missed
deadlines, players who leave, bots from the start; tests/forgery.py), and
for a spread sample of every change of one field of each record (a number
+1, -1 or as text, a flag flipped, None for a value and a value for None, a
move's source relabelled, a time moved, a move's text another legal move, a
name another seat's; two players, phases or moves swapped, one deleted or
repeated), the change is verified as made, and again as a forger who knows
the seed would complete it (every phase's events and the winner made
again).  Each variant must be refused by the record alone (``verify``), or
at least by the record digests the players' mails carried (those of the
last mail alone, even); only what docs/design.md names as covered by
nothing could pass, and it names one change only: a record's format named
referee-record/2, the one before, where no player left and so that format
reads it the same (the game's finished_at, once uncovered, is in the end's
digest).  A variant that
changes the replayed outcome (an event, the winner, the final scores) must
be refused by the record alone, but for what only a digest can see: a
player renamed, and forged, the options or a mail move made another move.

bench/forgery.py is the long run: every change of many more games.
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from datetime import timedelta

import pytest
from forgery import (
    KINDS,
    Change,
    Genuine,
    at,
    changes,
    digest_set,
    judge,
    play,
    sample,
    shift,
)

from referee.record import verify

SEEDS = (1, 2)  # games per kind: between them every kind of move, a player who leaves, a bot from the start
PER_GAME = 150  # changes tried per game, spread over the fields


@functools.cache
def games(kind: str) -> tuple[Genuine, ...]:
    return tuple(play(kind, seed) for seed in SEEDS)


@functools.cache
def changes_of(kind: str, index: int) -> list[Change]:
    return changes(games(kind)[index])


@pytest.mark.parametrize("kind", KINDS)
def test_genuine_records_verify_and_every_mails_digest_is_the_records(kind):
    for genuine in games(kind):
        verdict = verify(genuine.record)
        assert verdict.ok, (genuine.name, verdict.message)
        assert genuine.mails and genuine.last, genuine.name
        assert genuine.held <= digest_set(genuine.record), genuine.name  # same label, same digest
        assert genuine.last <= genuine.held
        # every digest the record has (the start's, each phase's, the end's) reached someone by mail
        assert {label for label, _ in genuine.held} == {d.label for d in verdict.digests}, genuine.name
        assert {"the start", *(entry["label"] for entry in genuine.record["phases"])} <= {
            d.label for d in verdict.digests
        }


def test_the_games_have_every_kind_of_move_and_seat():
    records = [genuine.record for kind in KINDS for genuine in games(kind)]
    sources = {move["source"] for record in records for entry in record["phases"] for move in entry["moves"]}
    assert sources == {"mail", "random", "bot", "forced"}
    left = [p for record in records for p in record["players"] if p["bot_from_phase"]]
    assert left and all(p["left_at"] for p in left)
    assert any(p["bot"] for record in records for p in record["players"])
    for kind in KINDS:
        assert {"mail", "random"} <= {
            m["source"] for g in games(kind) for e in g.record["phases"] for m in e["moves"]
        }, kind


@pytest.mark.parametrize("kind", KINDS)
def test_every_single_field_change_is_caught(kind):
    faults, tried = [], Counter()
    for index, genuine in enumerate(games(kind)):
        for change in sample(changes_of(kind, index), PER_GAME, random.Random(f"{kind} {genuine.seed}")):
            for judged in judge(genuine, change):
                tried[judged.caught, judged.forged, judged.outcome] += 1
                if judged.fault:
                    faults.append(f"{genuine.name}: {judged.fault}: {judged.describe()}")
    assert not faults, "\n".join(faults[:20])
    assert tried.total() >= PER_GAME * len(SEEDS)
    assert tried["record", True, True] and tried["digest", False, False], tried  # forgeries, and digests' catches


def test_the_property_has_teeth(monkeypatch):
    """With verify no longer checking that a random move is the seed's draw,
    some random move made another and forged verifies: only the digests
    catch it, though it changes the outcome, and the property says so."""
    monkeypatch.setattr("referee.record._check_made", lambda *args: None)
    faults = set()
    for kind, index in (("bid", 0), ("bid", 1), ("priority", 0), ("priority", 1)):
        genuine = games(kind)[index]
        for change in changes_of(kind, index):
            path = change.path
            if len(path) == 5 and path[4] == "move" and at(genuine.record, path[:4])["source"] == "random":
                faults |= {(j.fault, j.caught) for j in judge(genuine, change) if j.forged and j.fault}
    assert faults == {("outcome changed, yet only the digests catch it", "digest")}


def _find(genuine: Genuine, wanted) -> Change:
    index = next(i for i, g in enumerate(games(genuine.kind)) if g is genuine)
    return next(change for change in changes_of(genuine.kind, index) if wanted(change))


def _caught(genuine: Genuine, change: Change) -> set[str]:
    found = judge(genuine, change)
    assert found and not any(judged.fault for judged in found), [judged.describe() for judged in found]
    return {judged.caught for judged in found}


@pytest.mark.parametrize("kind", KINDS)
def test_the_reviews_forgeries_are_among_the_changes_and_caught(kind):
    """What the review found verifying before: phases renumbered, a seat
    field changed, a random move relabelled mail or dated before its
    deadline, a phase number as text; and the game's finished_at moved
    later, which once nothing covered."""
    genuine = next(
        g for g in games(kind) if any(m["source"] == "random" for e in g.record["phases"] for m in e["moves"])
    )
    record = genuine.record
    assert _caught(genuine, _find(genuine, lambda c: c.path == ("phases",) and c.op == "swap")) == {"record"}
    assert _caught(genuine, _find(genuine, lambda c: c.path == ("phases", 0, "number") and c.new == "1")) == {"record"}
    assert _caught(genuine, _find(genuine, lambda c: c.path == ("phases", 0, "number") and c.new == 2)) == {"record"}
    assert _caught(genuine, _find(genuine, lambda c: c.path == ("players", 0, "seat") and c.new == 1)) == {"record"}
    randoms = [
        (k, j)
        for k, entry in enumerate(record["phases"])
        for j, move in enumerate(entry["moves"])
        if move["source"] == "random"
    ]
    k, j = randoms[0]
    relabelled = _find(genuine, lambda c: c.path == ("phases", k, "moves", j, "source") and c.new == "mail")
    assert _caught(genuine, relabelled) == {"digest"}  # a person could have mailed that move
    early = _find(
        genuine,
        lambda c: c.path == ("phases", k, "moves", j, "received_at") and c.new == shift(c.old, timedelta(seconds=-1)),
    )
    assert _caught(genuine, early) == {"record"}
    later = _find(
        genuine,
        lambda c: c.path == ("game", "finished_at") and c.op == "set" and c.new == shift(c.old, timedelta(days=1)),
    )
    assert _caught(genuine, later) == {"digest"}  # the final mail's (the end's digest)
