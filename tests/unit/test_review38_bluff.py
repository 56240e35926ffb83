"""Review of issue 36's Bluff replay (round 38): the answers it keeps with
the very objects they were of (scores, caps, high bids, Tools, museum
splits, move words) must never leak from one game into another.  A game
played step by step between the steps of other games (other seat counts,
both rulings, both exhibit options) reads, resolves and shows exactly as
the same game played alone."""

from __future__ import annotations

import json
import random
from dataclasses import replace

from referee.record import random_move_rng, resolve_rng, setup_rng
from referee.rules import MoveError, bluff
from referee.rules.bluff import BluffAuction, standing, total

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


def test_the_scores_of_a_move_are_those_of_its_games_rulings_when_another_shares_its_museums():
    """A game by the first rulings made of a game's states by the second
    (as a record from before the option is read) shares their museums,
    tiles held and points: the scores after each move are still its own."""
    play = Play(99, 3, 2, 1)
    said: dict[int, list[list[int]]] = {1: [], 2: []}
    while (phase := GAME.phase(play.state)) is not None:
        play.number += 1
        moves = {
            seat: GAME.random_move(play.state, seat, random_move_rng(play.seed, play.number, seat))
            for seat in phase.movers
        }
        twins = [play.state, replace(play.state, rulings=1)]  # (the same museums, tiles held and points)
        for state in twins * 2:
            after, events = GAME.resolve(state, moves, resolve_rng(play.seed, play.number))
            if events and "scores" in events[-1]:
                assert events[-1]["scores"] == [total(after, seat) for seat in range(3)], state.rulings
                said[state.rulings].append(events[-1]["scores"])
        play.state = GAME.resolve(play.state, moves, resolve_rng(play.seed, play.number))[0]
    assert len(said[1]) > 100 and said[1] != said[2]  # (the rulings score some museums apart)
