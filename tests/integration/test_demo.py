"""`referee demo`: a whole game by real mail on a throwaway loopback setup."""

import asyncio
import json
from datetime import timedelta

from referee.demo import PLAYERS, run_demo
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
    assert history.count("is tallied") == 4 and "chosen at random" in history
    assert store.outbox("queued") == []
