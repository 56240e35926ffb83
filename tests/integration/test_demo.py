"""`referee demo`: a whole game by real mail on a throwaway loopback setup."""

import asyncio
import json
import re
from datetime import timedelta

import pytest

from referee.demo import PLAYERS, SILENT, run_demo
from referee.record import verify
from referee.store import Store


def test_the_demo_plays_a_whole_game_by_mail_with_a_silent_player(tmp_path):
    game_id = asyncio.run(run_demo(tmp_path, timedelta(seconds=1), say=lambda text: None))
    store = Store(tmp_path / "games.db")
    assert store.game(game_id)["state"] == "finished"
    carol = [m["source"] for m in store.moves(game_id) if m["seat"] == 2]
    assert carol == ["random"] * 12 + ["forced"]  # she never answered; round 13 plays itself
    alice = [m for m in store.moves(game_id) if m["seat"] == 0]
    assert [m["source"] for m in alice][:12] == ["mail"] * 12 and all(m["message_key"] for m in alice[:12])
    assert (tmp_path / "history.txt").read_text().count("*") >= 12
    for player in PLAYERS:  # each got the start, 13 results, the final result, prompts
        assert len(list((tmp_path / "players" / player).glob("*.eml"))) >= 15
    assert store.outbox("queued") == []  # everything was sent
    assert list((tmp_path / "referee-maildir" / "new").iterdir()) == []  # everything was read
    record = json.loads((tmp_path / "site" / f"games/{game_id}/record.json").read_text())  # the site, built
    assert record["game"]["state"] == "finished" and verify(record).ok
    assert f'href="games/{game_id}/index.html"' in (tmp_path / "site" / "index.html").read_text()


def test_the_demo_plays_auction_by_mail_too(tmp_path):
    """`referee demo --game priority`: alice and bob answer with a move their
    prompt suggests; carol's turns are random at each deadline."""
    game_id = asyncio.run(
        run_demo(tmp_path, timedelta(seconds=1), say=lambda text: None, kind="priority", options={"turn_limit": 2})
    )
    store = Store(tmp_path / "games.db")
    assert store.game(game_id)["state"] == "finished"
    moves = store.moves(game_id)
    assert {m["source"] for m in moves if m["seat"] == 2} == {"random"}
    assert {m["source"] for m in moves if m["seat"] in (0, 1)} == {"mail"}
    history = (tmp_path / "history.txt").read_text()
    assert history.count("cards are shown and added up by colour") == 4 and "chosen at random" in history
    assert store.outbox("queued") == []


@pytest.mark.parametrize("kind", ["bid", "bluff", "ice"])
def test_the_demo_players_answer_every_kinds_prompts_by_mail(tmp_path, kind):
    """`referee demo --game bid` (and bluff, ice): alice and bob answer each
    prompt with one of the moves it lists, so their moves come by mail, and
    the demo says so; carol's are random."""
    said: list[str] = []
    game_id = asyncio.run(run_demo(tmp_path, timedelta(seconds=1), say=said.append, kind=kind, phases=12))
    moves = Store(tmp_path / "games.db").moves(game_id)
    for seat, player in enumerate(PLAYERS):
        mine = {m["source"] for m in moves if m["seat"] == seat}
        if player == SILENT:
            assert "mail" not in mine and f"  {player}: never answers; 0 moves by mail" in said
        else:
            (line,) = [line for line in said if line.startswith(f"  {player}: sent ")]
            sent, received, counted = map(int, re.findall(r"\d+", line))
            assert mine == {"mail"} and sent >= received >= counted >= 2, line  # (the last may be unread when it stops)
    site = tmp_path / "site"
    assert (site / f"games/{game_id}/index.html").is_file() and "/index.html" in (site / "index.html").read_text()
