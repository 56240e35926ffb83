"""A Bluff move's feed title names the track the token left (F20): "moves
their token of 3 to red" alone does not say which token moved."""

from __future__ import annotations

from pathlib import Path

from referee.site.render import Site


def test_a_moves_feed_title_names_the_track_the_token_left(tmp_path: Path):
    site = Site(None, tmp_path)
    rounds = [
        {
            "label": "Round 1 bidding, turn 5",
            "events": [
                {"type": "move", "seat": 1, "from": "purple", "track": "red", "value": 1, "token": 3, "tied": False}
            ],
        },
        {
            "label": "Round 1 bidding, turn 6",
            "events": [{"type": "move", "seat": 0, "from": "black", "track": "red", "value": 2, "tied": False}],
        },
    ]
    titles = site.env.get_template("site/bluff/summary.txt.j2").render(rounds=rounds, names=["alice", "bob"])
    lines = [line.strip() for line in titles.split("\n") if line.strip()]
    assert lines[0].endswith("bob moves their token of 3 from purple to red at 1")
    assert lines[1].endswith("alice moves a token from black to red at 2")  # a first-rulings record
