"""The hand-check recipes, followed literally: a finished game rebuilt from
its seed with nothing but the steps its rulings page gives ("Checking a
finished game by hand") and the streams as they name them
(``referee.rules.rng.Rng(seed, label)``, whose ``randbelow`` is the one
docs/design.md spells out), compared with the game's published record.

Nothing here reads the rules' code: the colours, the deck and the order of
the legal moves come from the page itself, so a recipe that numbers seats
another way than the record, or lists moves in another order than the
code, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock, Seeds

from referee.config import Config
from referee.engine import Engine
from referee.record import verify
from referee.rules.rng import Rng
from referee.site.public import game_record
from referee.store import Store

DOCS = Path(__file__).resolve().parents[2] / "docs"


def finished_record(kind: str, people: int, bots: int, options: dict[str, Any], seed: bytes) -> dict[str, Any]:
    """A game of ``people`` silent players (a random move at each deadline
    they miss) and ``bots`` bots, played to its end; its published record."""
    clock = FakeClock()
    config = Config(address="referee@example.org", database=Path(":memory:"), reminder=None, outage_gap=None)
    engine = Engine(Store(":memory:"), config, clock, Seeds(seed))
    players = [f"p{index}@example.org" for index in range(people)]
    game = engine.new_game(kind, players, bots=bots, options=options)
    for _ in range(5000):
        if engine.table(game).row["state"] == "finished":
            break
        clock.advance(days=2)
        engine.tick()
    record = game_record(engine.table(game))
    assert record["seed"] == seed.hex() and verify(record).ok
    return record


def choice(rng: Rng, items: list[Any]) -> Any:
    """docs/design.md: choice(items) = items[randbelow(len(items))]."""
    return items[rng.randbelow(len(items))]


# -- Auction (priority cards): docs/games/priority-auction.md ---------------------------------


def auction_page() -> tuple[list[str], dict[int, list[int]]]:
    """P1's colours in their order, and its deck table (players -> items), as the page gives them."""
    text = (DOCS / "games" / "priority-auction.md").read_text(encoding="utf-8")
    listed = re.search(r"the first n of ([a-z, ]+?)\s*\(", text.replace("\n", " "))
    assert listed, "P1 names the colours"
    colours = [c.strip() for c in listed[1].replace(" and ", ", ").split(",")]
    decks = {
        int(row[1]): [int(v) for v in row[2].split()]
        for row in re.finditer(r"^\| (\d) \| ([\d ]+) \| \d+ \| \d+ \|$", text, re.MULTILINE)
    }
    return colours, decks


def test_the_auction_page_gives_the_colours_and_a_deck_for_3_to_8_players():
    colours, decks = auction_page()
    assert colours == ["red", "blue", "green", "yellow", "orange", "purple", "white", "black"]
    assert sorted(decks) == list(range(3, 9)) and all(deck == sorted(deck) for deck in decks.values())


def rebuild_auction(seed: bytes, record: dict[str, Any]) -> dict[str, Any]:
    """The Auction recipe, step by step, from the seed and the record's moves;
    what it finds, to compare with the record."""
    colours, decks = auction_page()
    n = len(record["players"])
    in_play = colours[:n]  # "the colours in play, in P1's order"
    # setup: "a list with places 0 to n-1; shuffle it (Fisher-Yates from the
    # end ...); then place S is seat S's colour"
    setup = Rng(seed, "setup")
    places = list(in_play)
    for i in range(n - 1, 0, -1):
        j = setup.randbelow(i + 1)
        places[i], places[j] = places[j], places[i]
    seat_colour = places
    dealer = setup.randbelow(n)  # "the dealer is seat randbelow(n)"
    opener = (dealer + 1) % n  # "the seat after it ... opens round 1"
    deck = list(decks[n])  # "in the table's order (ascending)"
    items = [choice(setup, [v for v in deck if v != max(deck)])]
    deck.remove(items[0])
    boards: list[dict[str, int]] = [{} for _ in range(n)]  # seat -> colour -> card, from the moves
    found: dict[str, Any] = {"colours": seat_colour, "opener": opener, "items": items, "drawn": 0, "boards": []}
    for entry in record["phases"]:
        number = entry["number"]
        (move,) = entry["moves"]  # one seat a turn
        seat, text = move["seat"], move["move"]
        if move["source"] in ("random", "bot"):
            # "phase N random seat S": every play, every move, then pass
            hand = [card for card in range(1, n + 1) if card not in boards[seat].values()]
            empty = [c for c in in_play if c not in boards[seat]]
            held = [c for c in in_play if c in boards[seat]]
            legal = (
                [f"play {card} on {c}" for card in hand for c in empty]
                + [f"move {a} to {b}" for a in held for b in empty]
                + ["pass"]
            )
            assert choice(Rng(seed, f"phase {number} random seat {seat}"), legal) == text, (number, seat)
            found["drawn"] += 1
        if play := re.fullmatch(r"play (\d) on ([a-z]+)", text):
            boards[seat][play[2]] = int(play[1])
        elif shift := re.fullmatch(r"move ([a-z]+) to ([a-z]+)", text):
            boards[seat][shift[2]] = boards[seat].pop(shift[1])
        if any(event["type"] == "tally" for event in entry["events"]):  # the round ended: this turn draws
            found["boards"].append([dict(board) for board in boards])
            boards = [{} for _ in range(n)]
            if deck:
                items.append(choice(Rng(seed, f"phase {number} resolve"), sorted(deck)))
                deck.remove(items[-1])
    return found


@pytest.mark.parametrize(
    ("people", "bots", "turn_limit", "seed"),
    [
        (1, 2, 2, bytes(range(32))),
        (2, 3, 5, bytes(range(1, 33))),  # a limit high enough to move among several cards and spaces
        (0, 8, 3, bytes(range(2, 34))),
    ],
    ids=["3 seats", "5 seats", "8 bots"],
)
def test_an_auction_rebuilt_from_its_seed_by_the_recipe_is_its_record(people, bots, turn_limit, seed):
    """Each seat's colour (the record's final event lists them, seat 0
    first), who opened round 1, every item in turn, every random or bot
    move, and the cards on the boards at each tally, as the recipe makes
    them."""
    record = finished_record("priority", people, bots, {"turn_limit": turn_limit}, seed)
    found = rebuild_auction(seed, record)
    events = [event for entry in record["phases"] for event in entry["events"]]
    (over,) = [event for event in events if event["type"] == "over"]
    assert over["colours"] == found["colours"]
    assert record["phases"][0]["moves"][0]["seat"] == found["opener"]
    tallies = [event for event in events if event["type"] == "tally"]
    assert [event["item"] for event in tallies] == found["items"]
    assert [event["boards"] for event in tallies] == found["boards"]
    won = [0] * len(record["players"])
    for tally in tallies:  # a winner's colour, revealed, is the one the shuffle gave their seat
        if tally["winner"] is not None:
            assert tally["colour"] == found["colours"][tally["winner"]]
            won[tally["winner"]] += tally["item"]
        assert tally["scores"] == won  # each seat's items so far, seat 0 first
    # a round that ended on passes made at once drew in the turn before them (the recipe's case)
    assert any(
        any(e["type"] == "pass" and e["forced"] for e in entry["events"])
        and any(e["type"] == "tally" for e in entry["events"])
        for entry in record["phases"]
    )
    moved = sum(m["source"] in ("random", "bot") for entry in record["phases"] for m in entry["moves"])
    assert found["drawn"] == moved > 0
    if turn_limit >= 3:  # moves from colour to colour among several cards: their order is drawn from too
        assert any(m["move"].startswith("move") for entry in record["phases"] for m in entry["moves"])
    if people:
        assert any(m["source"] == "random" for entry in record["phases"] for m in entry["moves"])
