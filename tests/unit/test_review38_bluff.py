"""Review of issue 36's Bluff replay (round 38): the answers it keeps with
the very objects they were of (scores, caps, high bids, Tools, museum
splits, move words) must never leak from one game into another.  A game
played step by step between the steps of other games (other seat counts,
both rulings, both exhibit options) reads, resolves and shows exactly as
the same game played alone."""

from __future__ import annotations

import json
import random

from referee.record import random_move_rng, resolve_rng, setup_rng
from referee.rules import MoveError, bluff
from referee.rules.bluff import BluffAuction, standing

GAME = BluffAuction()
# (seats, rulings, exhibit dice) of the games played side by side
TABLES = [(2, 1, 1), (3, 2, 2), (4, 1, 2), (5, 2, 1), (3, 1, 1), (5, 1, 2)]


def forget() -> None:
    """Drop every answer the module keeps, so that a game played next is
    played as in a process that has played nothing else."""
    for value in vars(bluff).values():
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()
    for name, value in vars(bluff).items():
        if name.startswith("_last_") and isinstance(value, list):
            value[:] = [None]


class Play:
    """One game, a step at a time: every step's legal moves, readings of
    the moves' texts, the state, events and every seat's view after it."""

    def __init__(self, number: int, seats: int, rulings: int, exhibit_dice: int) -> None:
        self.seed = b"review38-%d" % number
        self.chooser = random.Random(number)
        self.state = GAME.setup(seats, setup_rng(self.seed), {"rulings": rulings, "exhibit_dice": exhibit_dice})
        self.seats, self.number, self.seen = seats, 0, [repr(self.state)]

    def step(self) -> bool:
        phase = GAME.phase(self.state)
        if phase is None:
            return False
        self.number += 1
        moves = {}
        for seat in phase.movers:
            legal = GAME.legal_moves(self.state, seat)
            if self.chooser.random() < 0.5:
                move = GAME.random_move(self.state, seat, random_move_rng(self.seed, self.number, seat))
            else:
                move = self.chooser.choice(legal)
            self.seen.append(repr((legal, move, self._read(seat, GAME.move_text(move)), self._read(seat, "pass"))))
            moves[seat] = move
        before = self.state
        self.state, events = GAME.resolve(before, moves, resolve_rng(self.seed, self.number))
        self.seen.append(repr(self.state) + json.dumps(events, sort_keys=True, default=repr))
        for seat in range(self.seats):
            self.seen.append(json.dumps([GAME.view(self.state, seat), standing(self.state, seat)], default=repr))
            self.seen.append(json.dumps(GAME.private_news(before, self.state, seat), sort_keys=True, default=repr))
        return True

    def _read(self, seat: int, text: str) -> object:
        try:
            return GAME.parse_move(self.state, seat, text)
        except MoveError as error:
            return str(error)


def test_a_game_played_between_other_games_steps_is_the_game_played_alone():
    alone = []
    for number, table in enumerate(TABLES):
        forget()
        play = Play(number, *table)
        while play.step():
            pass
        alone.append(play.seen)
    forget()
    plays = [Play(number, *table) for number, table in enumerate(TABLES)]
    shuffle = random.Random(38)
    going = list(plays)
    while going:
        play = shuffle.choice(going)
        if not play.step():
            going.remove(play)
    for play, seen in zip(plays, alone, strict=True):
        assert play.seen == seen
    assert sum(len(seen) for seen in alone) > 2000
