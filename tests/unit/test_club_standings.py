"""Standings (issue 34, item 5): the site's standings page and STANDINGS by
mail count the club's finished games, per kind and over all: games played,
wins, points and places, and the share of each player's moves made by mail
rather than at random; players by name, never by address."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import FakeClock, Seeds, body_of, make_mail, send, to_deadline
from test_site import Page

from referee.config import Config
from referee.engine import Engine
from referee.rules import GAMES
from referee.site.render import Site
from referee.standings import places, standings
from referee.store import Store
from referee.tables import Tables

DAY = timedelta(days=1)
ALICE, BOB, CAROL = "alice@example.org", "bob@example.org", "carol@example.org"
DAVE, ERIN, OTHER_ALICE = "dave@example.org", "erin@example.org", "Alice@other.example"
EVERYONE = (ALICE, BOB, CAROL, DAVE, ERIN, OTHER_ALICE)
STRANGER = "zoe@example.net"
NAMES = {
    ALICE: "alice (example.org)",  # two players are "alice": each is named with the rest of the address
    OTHER_ALICE: "alice (other.example)",
    BOB: "bob",
    CAROL: "carol",
    DAVE: "dave",
    ERIN: "erin",
}


def name_of(address: str) -> str:
    """A player's name in the standings, by their address in any case."""
    return {key.lower(): name for key, name in NAMES.items()}[address.lower()]


class Club:
    """One referee's games, each played to its end by mail in turn: movers
    answer with a legal move drawn at random, but those ``silent`` in a game
    never answer (every move of theirs is random, at the deadline) and
    those ``sometimes`` answer about half the phases."""

    def __init__(self, root: Path):
        config = Config(address="referee@example.org", database=root / "games.db", reminder=None, outage_gap=None)
        self.clock = FakeClock()
        self.engine = Engine(Store(config.database), config, self.clock, Seeds(bytes(range(32))))
        self.choose = random.Random(34)

    def play(
        self,
        kind: str,
        players: list[str],
        silent: tuple[str, ...] = (),
        sometimes: tuple[str, ...] = (),
        leaves: tuple[str, int] | None = None,
        phases: int | None = None,
        then: dict[int, Callable[[int], object]] | None = None,
    ) -> int:
        """A game of ``kind``, played to its end (or ``phases`` phases);
        ``leaves``: who sends RESIGN, and after how many phases; ``then``:
        what else is done to the game after how many phases (the keeper's acts)."""
        engine = self.engine
        game = engine.new_game(kind, players, deadline=DAY)
        for played in range(5000):
            status = engine.status(game)
            if status["state"] != "running" or played == phases:
                return game
            if leaves is not None and played == leaves[1]:
                assert send(engine, self.clock, leaves[0], "RESIGN", game=game).code == "done"
            if then and played in then:
                then[played](game)
            number = len(engine.table(game).phases)
            for mover in engine.status(game)["phase"]["waiting_for"]:
                if mover in silent or (mover in sometimes and self.choose.random() < 0.5):
                    continue
                table = engine.table(game)
                seat = table.seat_of(mover)
                move = table.rules.move_text(self.choose.choice(table.rules.legal_moves(table.state, seat)))
                self.clock.advance(minutes=5)
                assert send(engine, self.clock, mover, move, game=game).code == "move"
            table = engine.table(game)
            if table.row["state"] == "running" and len(table.phases) == number:  # someone did not move
                to_deadline(engine, self.clock, game)
                engine.tick()
        raise AssertionError("the game did not end")

    def ask(self, sender: str, text: str, code: str = "done") -> str:
        """``sender`` mails ``text`` to the referee's plain address; the
        answer's text.  (A quarter of an hour apart: a stranger's answers
        are 5 an hour.)"""
        self.clock.advance(minutes=15)
        assert self.engine.ingest(make_mail(sender, text, subject="standings?", received=self.clock())).code == code
        rows = [row for row in self.engine.store.outbox(None) if row["recipients"] == [sender]]
        return body_of(rows[-1]["raw"]).split("\n-- \n")[0]

    def site(self, folder: Path) -> Page:
        Site(self.engine, folder).render()
        return Page((folder / "standings.html").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def club(tmp_path_factory) -> Club:
    club = Club(tmp_path_factory.mktemp("club"))
    club.play("pure-skill", [ALICE, BOB, CAROL], silent=(CAROL,))
    club.play("bid", [ALICE, DAVE, ERIN], sometimes=(ERIN,))
    club.play("pure-skill", [BOB, DAVE, OTHER_ALICE], sometimes=(DAVE,))
    cancelled = club.play("priority", [ALICE, BOB, CAROL], phases=3)
    club.engine.cancel(cancelled, "shell", "the club closed for the summer")
    club.play("ice", [BOB, ERIN], leaves=(BOB, 4))
    club.play("pure-skill", [ALICE, CAROL, DAVE], phases=2)  # still running: it does not count yet
    return club


def finished(club: Club) -> list[int]:
    """The games that count: finished, and not cancelled."""
    return [row["id"] for row in club.engine.store.games("finished") if club.engine.table(row["id"]).cancelled is None]


def page_tables(page: Page) -> dict[str, dict[str, list[str]]]:
    """The page's standings, per heading: player -> the row's other cells."""
    headings = [text for tag, text in page.headings if tag == "h2"]
    return {
        heading.strip(): {
            row["cells"][0]["text"].strip(): [c["text"].strip() for c in row["cells"][1:]] for row in table["rows"][1:]
        }
        for heading, table in zip(headings, page.tables, strict=False)
    }


def mail_tables(text: str) -> dict[str, dict[str, list[str]]]:
    """The STANDINGS answer's standings, per heading: player -> the line's other columns."""
    found: dict[str, dict[str, list[str]]] = {}
    for block in text.split("\n\n"):
        lines = block.strip("\n").split("\n")
        if len(lines) > 2 and lines[1].strip().startswith("Player"):
            width = len(lines[1].replace("By mail", "By-mail").split()) - 1  # the columns after the name
            found[lines[0]] = {" ".join(line.split()[:-width]): line.split()[-width:] for line in lines[2:]}
    return found


def test_places_put_the_winner_first_then_go_by_score():
    assert places((10, 10, 8), 2) == [2, 2, 1]  # Auction: a total two players share is out, and 8 wins
    assert places((5, 9, 9, 1), None) == [3, 1, 1, 4]  # no winner (a tie): equal scores share a place
    assert places((3, 7, 7), 1) == [3, 1, 2]  # the tie broken by the rules: the winner first


def test_only_finished_games_count_and_a_cancelled_one_is_said_not_to(club, tmp_path):
    counted = finished(club)
    assert len(counted) == 4
    text = club.ask(STRANGER, "STANDINGS")
    assert "Standings: 4 finished games (1 cancelled by the keeper, not counted)." in " ".join(text.split())
    page = club.site(tmp_path)
    assert "4 finished games (1 more cancelled by the keeper, which do not count)" in " ".join(page.text.split())
    overall = page_tables(page)["All games"]
    assert overall["carol"][0] == "1"  # game 1; the cancelled game 4 and the running game 6 not


def test_each_winner_has_their_win_per_kind_and_over_all(club, tmp_path):
    tables = page_tables(club.site(tmp_path))
    wins: dict[str, dict[str, int]] = {}
    for game in finished(club):
        table = club.engine.table(game)
        result = table.rules.result(table.state)
        assert result is not None
        if result.winner is not None:
            name = name_of(table.seats[result.winner]["address"])
            kind = wins.setdefault(GAMES[table.row["kind"]].title, {})
            kind[name] = kind.get(name, 0) + 1
    for title, won in wins.items():
        assert {name: int(row[1]) for name, row in tables[title].items() if row[1] != "0"} == won
    total = {name: sum(w.get(name, 0) for w in wins.values()) for name in NAMES.values()}
    assert {name: int(row[1]) for name, row in tables["All games"].items()} == total


def test_points_and_places_are_each_game_s_result(club, tmp_path):
    tables = page_tables(club.site(tmp_path))
    scores: dict[str, list[int]] = {}
    placed: dict[str, list[int]] = {}
    for game in finished(club):
        table = club.engine.table(game)
        if table.row["kind"] != "pure-skill":
            continue
        result = table.rules.result(table.state)
        assert result is not None
        ranks = places(result.scores, result.winner)
        for seat in table.seats:
            scores.setdefault(name_of(seat["address"]), []).append(result.scores[seat["seat"]])
            placed.setdefault(name_of(seat["address"]), []).append(ranks[seat["seat"]])
    pure = tables["Game of Pure Skill"]
    assert set(pure) == set(scores)
    for name, row in pure.items():
        games, _, points, place, _ = row
        assert int(games) == len(scores[name])
        assert int(points) == sum(scores[name])
        assert place == f"{sum(placed[name]) / len(placed[name]):.1f}"


def test_the_share_of_moves_by_mail_is_the_record_s(club, tmp_path):
    """Carol never answered: none of her moves was by mail; Erin answered
    about half the time; Alice always.  Counted from the public records."""
    tables = page_tables(club.site(tmp_path))
    made: dict[str, list[str]] = {}
    for game in finished(club):
        table = club.engine.table(game)
        for number in range(1, len(table.replay.steps) + 1):
            for move in table.record_phase(number)["moves"]:
                address = table.seats[move["seat"]]["address"]
                if address and move["source"] in ("mail", "random"):
                    made.setdefault(name_of(address), []).append(move["source"])
    overall = tables["All games"]
    assert overall["carol"][-1] == "0%" and overall["alice (example.org)"][-1] == "100%"
    for name, sources in made.items():
        assert overall[name][-1] == f"{round(100 * sources.count('mail') / len(sources))}%"
    assert 0 < int(overall["erin"][-1].rstrip("%")) < 100


def test_a_player_who_left_played_the_game_and_placed_last(club, tmp_path):
    tables = page_tables(club.site(tmp_path))
    ice = tables["Ice Ice Baby"]
    assert ice["bob"][:4] == ["1", "0", "0", "2.0"]  # a game, no win, no points, last of two
    assert tables["All games"]["bob"][2] == "1"  # Left: 1
    assert ice["erin"][1] == "1"  # the other player won it


def test_a_player_of_two_kinds_is_in_both_and_once_over_all(club, tmp_path):
    tables = page_tables(club.site(tmp_path))
    alice = NAMES[ALICE]
    assert alice in tables["Game of Pure Skill"] and alice in tables["Bid!"]
    assert tables["All games"][alice][0] == "2"
    assert alice not in tables["Ice Ice Baby"]


def test_the_mail_answers_the_same_numbers_as_the_page(club, tmp_path):
    page = page_tables(club.site(tmp_path))
    text = club.ask(STRANGER, "STANDINGS")
    mail = mail_tables(text)
    assert list(mail) == ["All games", "Game of Pure Skill", "Bid!", "Ice Ice Baby"]
    for heading, rows in mail.items():
        assert rows == page[heading]
    # The best first: by wins, then placing
    overall = list(page["All games"].values())
    assert [int(row[1]) for row in overall] == sorted((int(row[1]) for row in overall), reverse=True)


def test_standings_of_one_kind_answer_that_kind_alone(club):
    text = club.ask(STRANGER, "standings bid")
    assert list(mail_tables(text)) == ["Bid!"]
    assert "Standings in Bid!: 1 finished game." in text


def test_a_kind_that_does_not_exist_is_refused_politely(club):
    text = club.ask(STRANGER, "STANDINGS chess", code="refused")
    assert "There is no game of that name" in text and "STANDINGS pure-skill" in text


def test_no_address_appears_on_the_page_or_in_the_mail(club, tmp_path):
    Site(club.engine, tmp_path).render()
    html = (tmp_path / "standings.html").read_text(encoding="utf-8")
    text = club.ask(STRANGER, "STANDINGS")
    for address in EVERYONE:
        assert address.lower() not in html.lower() and address.lower() not in text.lower()
    assert "@" not in text.replace(club.engine.config.address, "")
    assert NAMES[OTHER_ALICE] in text and NAMES[ALICE] in html


def test_standings_by_mail_is_an_open_answer(club):
    club.ask(STRANGER, "STANDINGS")
    rows = [row for row in club.engine.store.outbox(None) if row["recipients"] == [STRANGER]]
    assert rows[-1]["budget"] == "open"


def test_the_index_and_each_game_page_link_the_standings(club, tmp_path):
    Site(club.engine, tmp_path).render()
    assert 'href="standings.html"' in (tmp_path / "index.html").read_text(encoding="utf-8")
    assert 'href="../../standings.html"' in (tmp_path / "games/1/index.html").read_text(encoding="utf-8")


def test_the_page_is_written_again_when_a_game_ends(club, tmp_path):
    site = Site(club.engine, tmp_path)
    site.render()
    club.clock.advance(minutes=1)
    assert "standings.html" not in site.render().written  # nothing ended
    club.play("bluff", [CAROL, ERIN], silent=(CAROL, ERIN))
    assert "standings.html" in site.render().written
    assert "Bluff Auction" in page_tables(Page((tmp_path / "standings.html").read_text(encoding="utf-8")))


def test_results_kept_from_before_are_made_from_the_records(club, tmp_path):
    """A games.db whose games finished before results were kept: the
    standings replay them, and the engine writes their results when it starts."""
    before = standings(club.engine.store, club.engine.tables)
    copy = tmp_path / "games.db"
    club.engine.store.backup(copy)
    with sqlite3.connect(copy) as db:
        db.execute("delete from results")
    store = Store(copy)
    assert store.results() == []
    assert standings(store, Tables(store)) == before
    Engine(store, club.engine.config, club.clock)
    assert len(store.results()) == len(club.engine.store.results())
    assert standings(store, Tables(store)) == before


def test_a_seat_taken_over_is_each_player_s_for_their_part_and_a_new_address_is_the_same_player(tmp_path):
    """Carol, who never answered, is replaced after 3 rounds by Frank, who
    always does: Carol left the game (placed last, her moves all random),
    Frank played it to its end (his moves all by mail).  Bob moves to
    another address mid-game and plays his next game from the old one: one
    player, two games."""
    club = Club(tmp_path)
    frank, bob_now = "frank@example.org", "bob@new.example"
    engine = club.engine
    club.play(
        "pure-skill",
        [ALICE, BOB, CAROL],
        silent=(CAROL,),
        then={
            3: lambda game: engine.replace(game, CAROL, frank, "shell", "Carol moved away"),
            6: lambda game: engine.address(game, BOB, bob_now, "shell"),
        },
    )
    club.play("pure-skill", [BOB, CAROL, DAVE])
    table = engine.table(1)
    assert table.seats[2]["address"] == frank and table.seats[1]["address"] == bob_now
    tables = page_tables(club.site(tmp_path / "site"))
    overall = tables["All games"]
    assert overall["carol"][0] == "2" and overall["carol"][2] == "1"  # two games, one of them left
    assert overall["frank"][0] == "1" and overall["frank"][-1] == "100%"
    # 3 random in game 1 before she left; 12 by mail in game 2 (the 13th round's bid, her last card, is forced)
    assert overall["carol"][-1] == f"{round(100 * 12 / 15)}%"
    assert overall["bob"][0] == "2" and not [name for name in overall if name.startswith("bob (")]
    pure = tables["Game of Pure Skill"]
    result = table.rules.result(table.state)
    assert result is not None
    assert pure["frank"][2] == str(result.scores[2])  # the seat's points: the end is Frank's
    text = club.ask(STRANGER, "STANDINGS")
    assert bob_now not in text and frank not in text


def test_an_empty_club_reads_sensibly(tmp_path):
    club = Club(tmp_path)
    page = club.site(tmp_path / "site")
    assert "No game has finished yet: the standings begin with the first game to end." in page.text
    assert not page.problems
    text = club.ask(STRANGER, "STANDINGS")
    assert text.startswith("> STANDINGS\nNo game has finished yet: the standings begin\nwith the first game to end.")
