"""The game contract (docs/rules-api.md): what the engine asks of every game."""

from __future__ import annotations

from referee.rules import GAMES
from referee.site.public import page_context

# -- a game without running scores -----------------------------------------------------


def test_a_game_whose_view_has_no_scores_shows_none_until_its_result(engine, clock, monkeypatch):
    """``scores`` in the public view is optional: without it ``status`` and
    the site's table of players show no score while the game runs, and the
    result's scores once it is over."""
    rules = GAMES["pure-skill"]
    views = rules.view

    def scoreless() -> None:
        monkeypatch.setattr(rules, "view", lambda state, seat: {k: v for k, v in views(state, seat).items()
                                                                if k != "scores"})  # fmt: skip

    game = engine.new_game("pure-skill", ["alice@example.org", "bob@example.org"], bots=1)
    scoreless()  # (this game's own templates show the scores: they are made without it)
    assert [p["score"] for p in engine.status(game)["players"]] == [None, None, None]
    assert [p["score"] for p in page_context(engine.table(game), clock())["players"]] == [None, None, None]
    monkeypatch.undo()
    for _ in range(13):
        clock.advance(days=4)
        engine.tick()
    table = engine.table(game)
    assert table.row["state"] == "finished"
    scores = list(rules.result(table.state).scores)
    scoreless()
    assert [p["score"] for p in engine.status(game)["players"]] == scores
    assert [p["score"] for p in page_context(table, clock())["players"]] == scores
