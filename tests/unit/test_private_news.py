"""Private news (issue 13, item 1): a seat's private facts that change by
anything but its own move reach that seat, once, in its own copy of the
announcement of the change, and nowhere else.

For every kind, the rules' ``private_news`` is replaced by one that gives
every seat a unique secret at every change, and a keeper's template shows
it: each secret must be in exactly one mail, to its seat, and never on the
site, in ``status --json`` or in the log at INFO.  Pure Skill's own news is
the deal.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock, body_of

from referee.config import Config
from referee.engine import Engine
from referee.rules import GAMES
from referee.site.render import Site
from referee.store import Store

_SECRET = re.compile(r"SECRET(\d)N(\d+)")


def secret_templates(root: Path) -> Path:
    """A keeper's template folder whose ``_news`` part shows the secret."""
    for kind in GAMES:
        part = root / "mail" / kind / "_news.txt.j2"
        part.parent.mkdir(parents=True, exist_ok=True)
        part.write_text("  {{ news.secret }}\n")
    return root


@pytest.mark.parametrize("kind", ["pure-skill", "bid", "ice", "priority", "bluff"])
def test_each_seats_news_reaches_only_that_seat_once(tmp_path, monkeypatch, caplog, kind):
    serial = itertools.count()
    given: dict[str, int] = {}  # secret -> seat

    def news(self, before, after, seat):
        secret = f"SECRET{seat}N{next(serial)}"
        given[secret] = seat
        return {"secret": secret}

    monkeypatch.setattr(type(GAMES[kind]), "private_news", news)
    config = Config(
        address="referee@example.org",
        database=tmp_path / "games.db",
        reminder=None,
        outage_gap=None,
        templates=secret_templates(tmp_path / "templates"),
        site_dir=tmp_path / "site",
    )
    clock = FakeClock()
    engine = Engine(Store(config.database), config, clock)
    caplog.set_level(logging.INFO, logger="referee")

    game = engine.new_game(kind, PLAYERS)
    for _ in range(25):  # deadlines pass: random moves resolve phase after phase
        clock.advance(days=3, seconds=1)
        engine.tick()
    Site(engine, tmp_path / "site").render()

    seen: dict[str, list[int]] = {}
    for mail in engine.store.outbox(None):
        for secret in _SECRET.findall(body_of(mail["raw"])):
            seen.setdefault(f"SECRET{secret[0]}N{secret[1]}", []).append(PLAYERS.index(mail["recipients"][0]))
    assert len(given) >= 2 * len(PLAYERS)  # the start and at least one resolution
    assert seen == {secret: [seat] for secret, seat in given.items()}
    public = [json.dumps(engine.status(game)), caplog.text]
    public += [p.read_text(errors="replace") for p in (tmp_path / "site").rglob("*") if p.is_file()]
    assert not any(_SECRET.search(text) for text in public)


def test_pure_skill_players_learn_their_hand_in_the_start_mail(engine: Engine):
    engine.new_game("pure-skill", PLAYERS)
    starts = {
        mail["recipients"][0]: body_of(mail["raw"]) for mail in engine.store.outbox(None) if "begins" in mail["subject"]
    }
    for player, suit in zip(PLAYERS, ("hearts", "diamonds", "clubs")):
        assert f"Only for you:\n  You bid from {suit}, and hold A 2 3 4 5 6 7 8 9 10 J Q K." in starts[player]
        others = [s for s in ("hearts", "diamonds", "clubs") if s != suit]
        assert not any(f"You bid from {other}" in starts[player] for other in others)


def test_a_game_without_its_own_news_template_shows_the_news_as_lines(engine, monkeypatch):
    monkeypatch.setattr(
        type(GAMES["ice"]), "private_news", lambda self, before, after, seat: {"your colour": "red", "dice": [3, 5]}
    )
    engine.new_game("ice", PLAYERS)
    start = next(m for m in engine.store.outbox(None) if m["recipients"] == [PLAYERS[0]])
    assert "Only for you:\n  your colour: red\n  dice: 3 5\n" in body_of(start["raw"])
