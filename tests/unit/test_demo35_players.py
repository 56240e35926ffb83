"""`referee demo`'s simulated players: they read the moves every game's
prompt lists (in the same words for every game) and answer with one, so the
demo plays every kind by mail; at the end it counts what each player's mail
did, and fails if a player who answers had nothing counted."""

import random
from collections import Counter

import pytest
from conftest import Mailbox, answer, to_deadline

import referee.demo
from referee.cli import main
from referee.demo import PLAYERS, SILENT, DemoFailed, by_mail, legal_moves
from referee.rules import GAMES
from referee.store import GameState

THREE_SEATED = sorted(kind for kind, game in GAMES.items() if game.min_seats <= 3 <= game.max_seats)
ANSWERING = [p for p in PLAYERS if p != SILENT]
PHASES = 40  # enough of a game to meet each kind's kinds of prompt (Bid!'s coins, Bluff's tiles, Ice's scoring)


def play_as_the_demo(engine, clock, kind: str, phases: int = PHASES) -> tuple[int, Counter[str], Counter[str]]:
    """Alice and Bob answer every mail that lists moves of theirs with one
    of them, as the demo's players do; Carol's turns wait for the deadline.
    Returns the game, what each sent and which words began the moves sent."""
    game = engine.new_game(kind, PLAYERS, name="demo")
    box, chooser, sent, words = Mailbox(engine), random.Random(kind), Counter[str](), Counter[str]()
    while engine.status(game)["state"] == GameState.RUNNING and len(engine.table(game).replay.steps) < phases:
        answered = False
        for mail in box.new():
            moves = legal_moves(mail["body"])
            if mail["to"] == SILENT or not moves or mail["game_id"] != game:
                continue  # (an earlier game of the test's, still running, is not this one's to answer)
            move = chooser.choice(moves)
            outcome = answer(engine, clock, mail, move)
            assert outcome.code in ("move", "replaced"), (kind, move, outcome)
            sent[mail["to"]] += 1
            words[move.split()[0]] += 1
            answered = True
        if not answered:
            to_deadline(engine, clock, game)
            engine.tick()
    return game, sent, words


@pytest.mark.parametrize("kind", THREE_SEATED)
def test_the_demo_players_play_every_kind_by_mail_from_the_moves_its_prompts_list(engine, clock, kind):
    game, sent, words = play_as_the_demo(engine, clock, kind)
    lines = by_mail(engine, game, sent)
    for player in ANSWERING:
        assert sent[player] >= 3, (kind, player, sent)
        assert f"{player}: sent {sent[player]} moves by mail, {sent[player]} received, {sent[player]} counted" in lines
    assert f"{SILENT}: never answers; 0 moves by mail" in lines
    assert len(words) >= 2 or kind == "pure-skill", words  # not only the example move: every kind of move listed


def test_bids_coin_tie_break_is_answered_by_mail_too(engine, clock):
    """Bid!'s tie-break asks for coins, not tiles: its prompt lists the coin
    bids, and the players answer them as any other prompt."""
    for _ in range(6):
        _game, _sent, words = play_as_the_demo(engine, clock, "bid", phases=60)
        if words["coins"]:
            return
    raise AssertionError(f"no tie-break met in six games: {words}")


def test_every_prompt_lists_the_moves_in_the_words_the_players_read(engine, clock):
    box = Mailbox(engine)
    for kind in THREE_SEATED:
        table = engine.table(engine.new_game(kind, PLAYERS))
        prompts = [m for m in box.new() if legal_moves(m["body"])]
        assert prompts, kind
        for mail in prompts:
            seat = table.seat_of(mail["to"])
            expected = [table.rules.move_text(m) for m in table.rules.legal_moves(table.state, seat)]
            assert set(legal_moves(mail["body"])) <= set(expected)
            assert len(legal_moves(mail["body"])) == min(len(expected), 20)


def test_the_demo_fails_when_a_player_who_answers_had_no_move_counted(engine, clock):
    game = engine.new_game("pure-skill", PLAYERS)
    for _ in range(3):
        to_deadline(engine, clock, game)
        engine.tick()  # nobody answered: every move is random
    with pytest.raises(DemoFailed, match=r"no move by mail counted for alice@example\.org, bob@example\.org"):
        by_mail(engine, game, Counter({PLAYERS[0]: 2}))


def test_the_moves_listed_across_lines_are_read_whole():
    body = "Your hand.\n\nMoves you can make now (the first 3): bid 2, bid 3,\nbid 10.\n\nDeadline: soon.\n"
    assert legal_moves(body) == ["bid 2", "bid 3", "bid 10"]
    assert legal_moves("Game 1, round 2: alice bids 7.\n") == []


def test_referee_demo_exits_non_zero_and_says_why_when_the_check_fails(tmp_path, monkeypatch, capsys):
    def failing(folder, deadline, kind):
        raise DemoFailed("no move by mail counted for alice@example.org")

    monkeypatch.setattr(referee.demo, "demo", failing)
    assert main(["demo", "--dir", str(tmp_path), "--game", "bid"]) == 1
    assert "referee demo: no move by mail counted for alice@example.org" in capsys.readouterr().err
