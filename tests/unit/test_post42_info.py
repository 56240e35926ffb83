"""Post.game_info is kept for the games row it was made of: a game read
anew after a change (its name, its end) shows the change."""

from __future__ import annotations

from conftest import PLAYERS


def test_a_game_read_again_after_a_change_shows_it(engine):
    engine.new_game("pure-skill", PLAYERS)
    before = engine.post.game_info(engine.table(1))
    assert engine.post.game_info(engine.table(1)) == before and before["name"] is None
    engine.store.db.execute("update games set name = 'Spring' where id = 1")
    assert engine.post.game_info(engine.table(1))["name"] == "Spring"
