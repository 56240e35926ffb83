"""The command language by mail (issue 4, items 2-4), through ``Engine.ingest``.

One command per line, in any case, in order, one reply that quotes each line
with what was done; STATUS, HAND, RESIGN, LIST, JOIN/LEAVE, TIMEZONE,
QUIT/END; mistakes change nothing; at most N replies an hour; bounces of the
referee's own mail are recorded; every mail the referee sends is
Auto-Submitted.  Everything is checked in the outbox, ``engine.status`` and
``engine.store``: what a player would see, and what the referee keeps.
"""

from __future__ import annotations

import email
import re
import tomllib
from datetime import timedelta
from email import policy
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from conftest import PLAYERS, FakeClock, dsn, last_id, mails, make_mail
from conftest import answer as reply_to
from conftest import send as play

from referee.config import Config
from referee.engine import Engine
from referee.resources import game_file, rule_texts
from referee.rules import GAMES
from referee.rules.pure_skill import card_name
from referee.store import Store
from referee.timeutil import from_iso, show

ALICE, BOB, CAROL = PLAYERS
DAVE, ERIN, FRANK, GINA = (f"{n}@example.net" for n in ("dave", "erin", "frank", "gina"))
EVIL = "evil@example.net"
BERLIN = "Europe/Berlin"
_SIGNUP_TAG = re.compile(r"\[pure-skill ([a-z2-7]{16})\]")


# -- helpers -------------------------------------------------------------------


def write(engine: Engine, clock: FakeClock, sender: str, body: str, **kwargs):
    """A fresh mail to the referee's plain address: no reply token."""
    kwargs.setdefault("received", clock())
    kwargs.setdefault("subject", "Hello referee")
    return engine.ingest(make_mail(sender, body, **kwargs))


def only_mail(engine: Engine, to: str, after: int) -> dict:
    """The one mail queued to ``to`` since ``after`` (and none to anyone else)."""
    new = mails(engine, after=after)
    assert [m["recipients"] for m in new] == [[to]], [m["subject"] for m in new]
    return new[0]


def answers_in(body: str) -> list[tuple[str, str]]:
    """(quoted line, answer text) pairs of a reply, in order."""
    text = body.split("\n-- \n")[0]
    pairs = []
    for chunk in re.split(r"^> ", text, flags=re.M)[1:]:
        line, _, rest = chunk.partition("\n")
        pairs.append((line, rest.strip()))
    return pairs


def bids(engine: Engine, game: int = 1, phase: int = 1) -> dict[int, str]:
    """Seat -> the bid that counts now in ``phase``."""
    return {seat: row["move"] for seat, row in engine.store.final_moves(game, phase).items()}


def hand_line(cards, suit: str = "hearts") -> str:
    return f"Your hand ({suit}): " + " ".join(card_name(c) for c in sorted(cards))


def assert_all_auto_submitted(engine: Engine) -> None:
    rows = engine.store.outbox(None)
    assert rows
    for row in rows:
        message = email.message_from_bytes(row["raw"], policy=policy.default)
        value = str(message.get("Auto-Submitted", "")).split("(")[0].strip().lower()
        assert value and value != "no", f"{row['subject']!r} has Auto-Submitted {value!r}"


def play_round_one(engine: Engine, clock: FakeClock) -> None:
    """alice bids 3, bob 7, carol J: round 1 resolves, hands differ."""
    for player, card in zip(PLAYERS, ("3", "7", "J"), strict=True):
        play(engine, clock, player, f"bid {card}")
    assert engine.status(1)["phase"]["number"] == 2


def signup_mail(engine: Engine, address: str) -> dict:
    """The latest JOIN confirmation the referee sent ``address``."""
    found = [m for m in mails(engine, address) if _SIGNUP_TAG.search(m["subject"])]
    assert found, f"no confirmation to {address}"
    return found[-1]


def confirm(engine: Engine, clock: FakeClock, address: str, body: str = "", sender: str | None = None):
    """A reply to ``address``'s confirmation mail (from ``sender``, by default the same)."""
    confirmation = signup_mail(engine, address)
    raw = make_mail(
        sender or address,
        body,
        subject=f"Re: {confirmation['subject']}",
        to=str(confirmation["message"]["Reply-To"]),
        received=clock(),
    )
    return engine.ingest(raw)


def join(engine: Engine, clock: FakeClock, address: str) -> None:
    write(engine, clock, address, "JOIN pure-skill")
    confirm(engine, clock, address)


@pytest.fixture
def game(engine: Engine) -> int:
    """A running game of alice, bob and carol, in round 1."""
    return engine.new_game("pure-skill", PLAYERS)


# -- one mail, many commands ---------------------------------------------------


def test_commands_run_in_order_and_one_reply_quotes_each_line(engine, clock, game):
    before = last_id(engine)
    outcome = play(engine, clock, ALICE, "STATUS\nBid 5\nhand\nbid five.\nstatus")
    assert outcome.code == "move"
    sent = only_mail(engine, ALICE, before)
    pairs = answers_in(sent["body"])
    assert [line for line, _ in pairs] == ["STATUS", "Bid 5", "hand", "bid five.", "status"]
    assert "Still to move: alice@example.org" in pairs[0][1]  # the status before the bid
    assert pairs[1][1].startswith("Your bid for Round 1 of 13 is in: bid 5.")
    assert pairs[2][1] == hand_line(range(1, 14))
    assert pairs[3][1] == "The same move as line 2 (bid 5), which counts once."
    assert "Moved: alice@example.org." in pairs[4][1]
    assert bids(engine) == {0: "bid 5"}
    assert [m["move"] for m in engine.store.moves(game)] == ["bid 5"]


def test_two_different_moves_in_one_mail_make_neither_and_the_reply_quotes_both(engine, clock, game):
    """Ambiguity is an error, never a guess: not the first, not the last."""
    before = last_id(engine)
    outcome = play(engine, clock, ALICE, "Hi,\nbid 5\nSTATUS\n*I bid the Queen.*")
    assert outcome.code == "done"  # STATUS was done; no move was
    assert engine.store.moves(game) == []
    pairs = answers_in(only_mail(engine, ALICE, before)["body"])
    assert [line for line, _ in pairs] == ["bid 5", "STATUS", "*I bid the Queen.*"]  # "Hi," needs no answer
    for answer in (pairs[0][1], pairs[2][1]):
        assert answer.startswith("Not done: Your mail asks for more than one move")
        assert 'line 2, "bid 5", asks for bid 5' in " ".join(answer.split())
        assert 'line 4, "*I bid the Queen.*", asks for bid Q' in " ".join(answer.split())
        assert "Nothing was changed by this line." in answer
    assert "Still to move: alice@example.org" in pairs[1][1]
    # the same mail again, with one move: it counts
    assert play(engine, clock, ALICE, "Hi,\n*I bid the Queen.*").code == "move"
    assert bids(engine) == {0: "bid Q"}


def test_the_reply_goes_to_the_player_and_never_to_a_reply_to_header(engine, clock, game):
    before = last_id(engine)
    play(engine, clock, ALICE, "bid 4\nSTATUS", headers={"Reply-To": EVIL})
    write(engine, clock, DAVE, "LIST", headers={"Reply-To": EVIL})
    write(engine, clock, BOB, "bid 2", headers={"Reply-To": EVIL})  # no token: bob is told
    new = mails(engine, after=before)
    assert [m["recipients"] for m in new] == [[ALICE], [DAVE], [BOB]]
    assert all(EVIL not in str(m["message"]["To"]) for m in new)
    assert not any(EVIL in row["recipients"] for row in engine.store.outbox(None))
    assert new[0]["subject"].startswith("Re: [pure-skill-1 ")
    assert_all_auto_submitted(engine)


def test_status_shows_own_view_and_who_moved_but_never_what(engine, clock, game):
    play_round_one(engine, clock)
    state = engine.table(game).state
    alice_hand = state.hands[0]
    assert 3 not in alice_hand and 3 in state.hands[1]

    def alice_status() -> str:
        before = last_id(engine)
        play(engine, clock, ALICE, "STATUS")
        ((line, text),) = answers_in(only_mail(engine, ALICE, before)["body"])
        assert line == "STATUS"
        return text

    idle = alice_status()
    play(engine, clock, BOB, "bid 3")  # a card alice no longer holds
    after_bid = alice_status()
    play(engine, clock, BOB, "bid 5")  # bob changes his mind
    after_change = alice_status()

    status = engine.status(game)
    deadline = show(status["phase"]["deadline"])
    assert "Round 2 of 13 is open until " + deadline in after_bid
    assert hand_line(alice_hand) in after_bid
    for player in status["players"]:
        assert re.search(rf"^\s+{re.escape(player['address'])}\s+{player['score']}$", after_bid, re.M)
    assert any(p["score"] for p in status["players"])  # round 1's prize was taken
    nobody_moved = "Moved: nobody yet. Still to move: alice@example.org, bob@example.org, carol@example.org."
    bob_moved = "Moved: bob@example.org. Still to move: alice@example.org, carol@example.org."
    assert nobody_moved in idle and bob_moved in after_bid
    # What bob bid is nowhere in alice's view: only the moved line changed, and
    # it reads the same whichever card bob bid.
    assert after_bid == after_change
    assert after_bid.replace(bob_moved, "") == idle.replace(nobody_moved, "")
    assert not re.search(r"\bbid [35]\b", after_bid)


def test_hand_shows_exactly_the_hand(engine, clock, game):
    play_round_one(engine, clock)
    before = last_id(engine)
    play(engine, clock, BOB, "HAND")
    assert answers_in(only_mail(engine, BOB, before)["body"]) == [
        ("HAND", hand_line(engine.table(game).state.hands[1], "diamonds"))
    ]


def test_a_mail_with_no_text_of_its_own_is_read_from_its_subject(engine, clock, game):
    token = engine.table(game).seats[0]["token"]
    outcome = play(engine, clock, ALICE, "> Round 1 of 13 is open.\n", subject=f"Re: [pure-skill-1 {token}] Bid King")
    assert outcome.code == "move"
    assert bids(engine) == {0: "bid K"}


def test_help_needs_no_token_and_lists_the_commands(engine, clock, game):
    before = last_id(engine)
    assert write(engine, clock, DAVE, "Help").code == "done"
    ((line, text),) = answers_in(only_mail(engine, DAVE, before)["body"])
    assert line == "HELP"  # to mail that proves nothing, the command word alone is quoted
    for word in (
        "STATUS",
        "HAND",
        "RESIGN",
        "LIST",
        "JOIN <game>",
        "LEAVE",
        "TIMEZONE <zone>",
        "RULES [<game>]",
        "END (or QUIT)",
        "pure-skill (Game of Pure Skill, 3 players)",
    ):
        assert word in text


# -- RULES ----------------------------------------------------------------------


def shipped_rules(kind: str) -> tuple[str, str]:
    """The first lines of a kind's rule text and of its rulings, as shipped."""
    game = GAMES[kind]
    first = [
        next(ln.strip() for ln in game_file(game, name).read_text().splitlines() if ln.strip())
        for name in (game.rule_text, game.rulings_page)
    ]
    return first[0], first[1]


def sited(tmp_path, clock, url="https://games.example.org/referee") -> Engine:
    config = Config(
        address="referee@example.org", database=tmp_path / "sited.db", reminder=None, outage_gap=None, site_url=url
    )
    return Engine(Store(config.database), config, clock)


def test_every_game_has_its_rules_and_rulings_shipped():
    for kind, game in GAMES.items():
        assert game.rule_text.startswith("docs/rules/") and game.rulings_page.startswith("docs/games/")
        rules, rulings = shipped_rules(kind)
        assert rules and rulings.startswith("# ")
    # a built wheel carries them inside the package, where ``shipped`` looks first
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    carried = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert carried["docs/rules"] == "referee/docs/rules" and carried["docs/games"] == "referee/docs/games"
    assert carried["templates"] == "referee/templates"


def test_rules_in_a_reply_about_a_game_mails_its_rule_text_and_rulings_and_changes_nothing(engine, clock, game):
    before, moves = last_id(engine), engine.store.moves(game)
    outcome = play(engine, clock, ALICE, "RULES")
    assert outcome.code == "done"
    ((line, text),) = answers_in(only_mail(engine, ALICE, before)["body"])
    assert line == "RULES"
    rules, rulings = shipped_rules("pure-skill")
    assert text.startswith("The rules of Game of Pure Skill as its author wrote them, then the referee's")
    assert rules in text and rulings in text
    assert text.index(rules) < text.index(rulings)
    assert "http" not in text  # no site: the texts themselves
    assert engine.store.moves(game) == moves
    assert engine.status(game)["phase"]["waiting_for"] == PLAYERS


@pytest.mark.parametrize("body", ["rules bluff auction", "RULES bluff", "Rules of Bluff Auction", "rules for bluff"])
def test_rules_of_another_game_named_in_a_reply_are_that_games(engine, clock, game, body):
    before = last_id(engine)
    play(engine, clock, ALICE, body)
    ((_, text),) = answers_in(only_mail(engine, ALICE, before)["body"])
    assert text.startswith("The rules of Bluff Auction as its author wrote them")
    assert all(part in text for part in shipped_rules("bluff"))
    assert shipped_rules("pure-skill")[0] not in text


def test_rules_to_the_plain_address_need_a_game_name_or_list_the_games(engine, clock):
    before = last_id(engine)
    assert write(engine, clock, DAVE, "Rules").code == "done"
    ((line, text),) = answers_in(only_mail(engine, DAVE, before)["body"])
    assert line == "RULES"
    for kind, rules in GAMES.items():
        assert re.search(rf"^  RULES {kind} +{re.escape(rules.title)}$", text, re.MULTILINE), kind
    assert "Send one of these lines for that game's rules and rulings." in text
    before = last_id(engine)
    write(engine, clock, DAVE, "RULES ice")
    ((line, text),) = answers_in(only_mail(engine, DAVE, before)["body"])
    assert line == "RULES"  # to mail that proves nothing, the command word alone
    assert all(part in text for part in shipped_rules("ice"))
    assert engine.store.games() == []


def test_a_player_asking_for_rules_without_her_token_is_answered_not_warned(engine, clock, game):
    before = last_id(engine)
    write(engine, clock, ALICE, "RULES pure-skill")
    sent = only_mail(engine, ALICE, before)
    assert "was not accepted" not in sent["body"]
    assert shipped_rules("pure-skill")[0] in sent["body"]


def test_rules_of_a_game_that_is_not_one_is_refused_politely_and_changes_nothing(engine, clock, game):
    before, moves = last_id(engine), engine.store.moves(game)
    assert play(engine, clock, ALICE, "RULES chess").code == "refused"
    ((line, text),) = answers_in(only_mail(engine, ALICE, before)["body"])
    assert line == "RULES chess"
    assert text.startswith(f"Not done: There is no game of that name; the games are: {', '.join(GAMES)}.")
    assert "Nothing was changed by this line." in text
    assert engine.store.moves(game) == moves


def test_one_games_rules_a_mail_however_often_asked(engine, clock, game):
    """The rules run to 10-26 kB: a mail asking for them many times gets one copy."""
    before = last_id(engine)
    assert play(engine, clock, ALICE, "RULES\nrules pure skill\nRULES ice\nbid 4").code == "move"
    body = only_mail(engine, ALICE, before)["body"]
    pairs = answers_in(body)
    assert [line for line, _ in pairs] == ["RULES", "rules pure skill", "RULES ice", "bid 4"]
    assert pairs[1][1] == "The rules of Game of Pure Skill are in the answer to line 1 above."
    assert pairs[2][1] == (
        "Not sent: one game's rules a mail (they are long), and this one carries the\n"
        'rules of Game of Pure Skill. Send "RULES ice" in a mail of its own.'
    )
    assert pairs[3][1].startswith("Your bid for Round 1 of 13 is in: bid 4.")
    rules, rulings = shipped_rules("pure-skill")
    assert body.count(rules) == 1 and body.count(rulings) == 1
    assert shipped_rules("ice")[0] not in body
    text, rulings_text = rule_texts("pure-skill")
    assert len(body) < len(text) + len(rulings_text) + 2000


def test_rules_with_a_site_give_the_rules_page_there(tmp_path, clock):
    engine = sited(tmp_path, clock)
    game = engine.new_game("bluff", PLAYERS[:2])
    before = last_id(engine)
    play(engine, clock, ALICE, "RULES\nRULES ice")
    (first, second) = answers_in(only_mail(engine, ALICE, before)["body"])
    assert first[1].endswith("\n\n    https://games.example.org/referee/rules/bluff.html")
    assert second[1].endswith("\n\n    https://games.example.org/referee/rules/ice.html")
    assert shipped_rules("bluff")[0] not in first[1]  # the address, not the text
    before = last_id(engine)
    write(engine, clock, DAVE, "RULES")
    ((_, text),) = answers_in(only_mail(engine, DAVE, before)["body"])
    for kind in GAMES:
        assert f"\n                    https://games.example.org/referee/rules/{kind}.html\n" in f"{text}\n"
    assert engine.status(game)["phase"]["number"] == 1


@pytest.mark.parametrize("kind", list(GAMES))
def test_each_start_mail_says_how_to_get_the_rules(tmp_path, clock, kind):
    for engine, line in (
        (
            Engine(
                Store(tmp_path / "plain.db"),
                Config(database=tmp_path / "plain.db", reminder=None, outage_gap=None),
                clock,
            ),
            "For the rules and the referee's rulings, reply to this mail with RULES.",
        ),
        (
            sited(tmp_path, clock),
            f"The rules, with the referee's rulings: https://games.example.org/referee/rules/{kind}.html",
        ),
    ):
        game = engine.new_game(kind, PLAYERS[:3])
        starts = [m for m in mails(engine) if "begins" in m["subject"]]
        assert sorted(m["recipients"][0] for m in starts) == sorted(PLAYERS[:3])
        for start in starts:
            assert f"\n{line}\n" in start["body"]
        if line.startswith("For"):  # and a reply to it with RULES gets them
            player = starts[0]["recipients"][0]
            before = last_id(engine)
            outcome = engine.ingest(
                make_mail(
                    player,
                    "RULES",
                    to=str(starts[0]["message"]["Reply-To"]),
                    subject=f"Re: {starts[0]['subject']}",
                    received=clock(),
                )
            )
            assert outcome.code == "done" and outcome.game_id == game
            assert all(part in only_mail(engine, player, before)["body"] for part in shipped_rules(kind))


# -- mistakes --------------------------------------------------------------------


def test_a_bad_line_between_good_ones_is_quoted_and_changes_nothing(engine, clock, game, tmp_path):
    before = last_id(engine)
    play(engine, clock, ALICE, "bid 4\nfrobnicate the dice\nstatus")
    pairs = answers_in(only_mail(engine, ALICE, before)["body"])
    assert [line for line, _ in pairs] == ["bid 4", "frobnicate the dice", "status"]
    # beside a move that was made, a line that is nothing is only said to be left alone
    assert pairs[1][1] == "Not done: not a command or a move, so I left it alone.\nNothing was changed by this line."
    assert "Moved: alice@example.org." in pairs[2][1]
    # the game is as if the bad line were not there
    assert [(m["seat"], m["move"]) for m in engine.store.moves(game)] == [(0, "bid 4")]


def test_a_line_that_is_nothing_lists_the_legal_moves(engine, clock, game):
    before = last_id(engine)
    outcome = play(engine, clock, ALICE, "Hi referee,")
    assert outcome.code == "refused"
    ((line, text),) = answers_in(only_mail(engine, ALICE, before)["body"])
    assert line == "Hi referee,"
    assert "Moves you can make now: bid A, bid 2," in text
    assert engine.store.moves(game) == []


def test_a_card_that_is_no_card_is_refused_with_the_legal_moves(engine, clock, game):
    play(engine, clock, ALICE, "bid 6")
    before = last_id(engine)
    play(engine, clock, ALICE, "bid 99\nstatus")
    pairs = answers_in(only_mail(engine, ALICE, before)["body"])
    assert pairs[0][0] == "bid 99"
    assert "'99' is not a card" in pairs[0][1]
    assert "Moves you can make now: bid A, bid 2, bid 3" in pairs[0][1] and "bid K." in pairs[0][1]
    assert pairs[1][0] == "status"
    assert bids(engine) == {0: "bid 6"}
    assert len(engine.store.moves(game)) == 1


def test_a_card_already_played_is_refused_with_the_cards_left(engine, clock, game):
    play_round_one(engine, clock)  # alice played the 3
    before = last_id(engine)
    play(engine, clock, ALICE, "bid 3\nbid 4")
    pairs = answers_in(only_mail(engine, ALICE, before)["body"])
    assert pairs[0][0] == "bid 3"
    assert "You no longer hold the 3 of hearts" in pairs[0][1]
    legal = re.search(r"Moves you can make now: (.*)\.", pairs[0][1])[1].split(", ")
    assert legal == [f"bid {card_name(c)}" for c in range(1, 14) if c != 3]
    assert pairs[1][0] == "bid 4" and "is in: bid 4" in pairs[1][1]
    assert bids(engine, phase=2) == {0: "bid 4"}


@pytest.mark.parametrize("stop", ["END", "QUIT", "quit", "End"])
def test_end_and_quit_stop_reading(engine, clock, game, stop):
    before = last_id(engine)
    play(engine, clock, ALICE, f"bid 5\n{stop}\nbid 9\nstatus")
    pairs = answers_in(only_mail(engine, ALICE, before)["body"])
    assert [line for line, _ in pairs] == ["bid 5", stop]
    assert pairs[1][1] == "The rest of your mail was not read."
    assert bids(engine) == {0: "bid 5"}
    assert [m["move"] for m in engine.store.moves(game)] == ["bid 5"]


def test_five_lines_not_understood_stop_the_reading(engine, clock, game):
    """Unless a move is below them: see test_chat_before_a_move_does_not_stop_the_reading_before_it."""
    before = last_id(engine)
    play(engine, clock, ALICE, "Hi,\nwhat\nis\nthis\ngame\nbid\nbid 5 or 6")
    pairs = answers_in(only_mail(engine, ALICE, before)["body"])
    # ("Hi," is not counted, and needs no answer of its own beside the others)
    assert [line for line, _ in pairs] == ["what", "is", "this", "game", "bid", "..."]
    assert pairs[-1][1] == "Too many lines I could not use: I stopped reading here."
    assert engine.store.moves(game) == []


def test_only_the_first_25_lines_are_read(engine, clock, game):
    before = last_id(engine)
    play(engine, clock, ALICE, "hand\n" * 25 + "bid 5\n")
    pairs = answers_in(only_mail(engine, ALICE, before)["body"])
    assert [line for line, _ in pairs] == ["hand"] * 25 + ["..."]
    assert pairs[-1][1] == "I read only the first 25 lines of your mail; the rest was not read."
    assert engine.store.moves(game) == []


def test_quoted_lines_and_the_signature_are_never_commands(engine, clock, game):
    body = "> bid 2\n> RESIGN\nbid 8\n\nOn Sat, 21 Nov 2026, Referee wrote:\n> bid K\n-- \nAlice\nbid 10\nRESIGN\n"
    before = last_id(engine)
    play(engine, clock, ALICE, body)
    assert [line for line, _ in answers_in(only_mail(engine, ALICE, before)["body"])] == ["bid 8"]
    assert [m["move"] for m in engine.store.moves(game)] == ["bid 8"]
    assert not engine.status(game)["players"][0]["bot"]


# -- RESIGN --------------------------------------------------------------------


def test_resign_by_mail_gives_the_seat_to_a_bot_from_now_on(engine, clock, game):
    before = last_id(engine)
    play(engine, clock, ALICE, "RESIGN")
    status = engine.status(game)
    assert status["players"][0]["bot"] is True
    assert engine.table(game).seats[0]["bot_since_phase"] == 1
    # the bot bid at once for the seat in the open round
    assert engine.store.final_moves(game, 1)[0]["source"] == "bot"
    new = mails(engine, after=before)
    to_alice = [m for m in new if m["recipients"] == [ALICE]]
    assert len(to_alice) == 1
    ((line, text),) = answers_in(to_alice[0]["body"])
    assert line == "RESIGN" and text.startswith("You have left game 1 (Game of Pure Skill).")
    for other in (BOB, CAROL):
        left = [m for m in new if m["recipients"] == [other]]
        assert len(left) == 1
        assert re.fullmatch(r"\[pure-skill-1 [a-z2-7]{16}\] alice@example.org has left game 1", left[0]["subject"])
        assert "A bot now plays seat 1" in left[0]["body"]
    # later mail from alice, with her token, changes nothing
    moves_before = engine.store.moves(game)
    before = last_id(engine)
    seats_before = engine.store.seats(game)
    outcome = play(engine, clock, ALICE, "bid 9\nRESIGN\nSTATUS\nHAND")
    assert outcome.code == "refused"
    assert engine.store.moves(game) == moves_before
    assert engine.store.seats(game) == seats_before
    answers = answers_in(only_mail(engine, ALICE, before)["body"])
    assert [line for line, _ in answers] == ["bid 9", "RESIGN", "STATUS", "HAND"]
    assert all(text.startswith("Not done: You left game 1; a random bot plays your seat now.") for _, text in answers)
    assert_all_auto_submitted(engine)


def test_a_resigned_seat_no_longer_waits_for_moves(engine, clock, game):
    play(engine, clock, ALICE, "RESIGN")
    play(engine, clock, BOB, "bid 2")
    play(engine, clock, CAROL, "bid 3")
    assert engine.status(game)["phase"]["number"] == 2  # round 1 resolved without alice
    assert ALICE not in engine.status(game)["phase"]["waiting_for"]


# -- LIST -------------------------------------------------------------------------


def test_list_from_a_stranger_shows_open_and_running_games_without_players(engine, clock, game):
    join(engine, clock, DAVE)  # game 2 opens for sign-up with dave
    before = last_id(engine)
    outcome = write(engine, clock, ERIN, "list", headers={"Reply-To": EVIL})
    assert outcome.code == "done"
    sent = only_mail(engine, ERIN, before)
    ((line, text),) = answers_in(sent["body"])
    assert line == "LIST"
    assert "pure-skill: game 2, Game of Pure Skill, 1 of 3 seats taken" in text
    deadline = show(engine.status(game)["phase"]["deadline"])
    assert f"game 1, Game of Pure Skill: Round 1 of 13, deadline {deadline}" in text
    for address in (*PLAYERS, DAVE):
        assert address not in sent["body"]
        assert address.split("@")[0] not in text


# -- JOIN and LEAVE -----------------------------------------------------------------


def test_join_from_a_stranger_only_sends_a_confirmation(engine, clock):
    before = last_id(engine)
    outcome = write(engine, clock, DAVE, "JOIN pure-skill")
    assert outcome.code == "done"
    new = mails(engine, after=before)
    assert [m["recipients"] for m in new] == [[DAVE], [DAVE]]
    confirmation = next(m for m in new if "JOIN pure-skill" in m["subject"])
    answer = next(m for m in new if m is not confirmation)
    token = _SIGNUP_TAG.search(confirmation["subject"])[1]
    assert str(confirmation["message"]["Reply-To"]) == f"referee+{token}@example.org"
    assert "Reply to it to confirm" in answers_in(answer["body"])[0][1]
    assert engine.store.games() == []  # no sign-up, no game yet
    assert_all_auto_submitted(engine)


@pytest.mark.parametrize("body", ["", "JOIN", "join pure-skill"])
def test_a_reply_to_the_confirmation_signs_up(engine, clock, body):
    write(engine, clock, DAVE, "JOIN pure-skill")
    before = last_id(engine)
    confirm(engine, clock, DAVE, body)
    status = engine.status(1)
    assert status["state"] == "open"
    assert [p["address"] for p in status["players"]] == [DAVE]
    ((_, text),) = answers_in(only_mail(engine, DAVE, before)["body"])
    assert "You have signed up for game 1 (Game of Pure Skill): 1 of 3" in text


def test_an_empty_reply_to_the_confirmation_as_a_mail_client_sends_it_signs_up(engine, clock):
    """Its subject repeats the confirmation's ("Re: [pure-skill ...] JOIN
    pure-skill") and its thread names it: the subject is the command to
    carry out, as the confirmation says ("you need not write anything")."""
    write(engine, clock, DAVE, "JOIN pure-skill")
    confirmation = signup_mail(engine, DAVE)
    assert reply_to(engine, clock, {**confirmation, "to": DAVE}, "").code == "done"
    assert [p["address"] for p in engine.status(1)["players"]] == [DAVE]


def test_the_confirmation_from_another_address_signs_nobody_up(engine, clock):
    write(engine, clock, DAVE, "JOIN pure-skill")
    confirm(engine, clock, DAVE, sender=EVIL)
    confirm(engine, clock, DAVE, "JOIN pure-skill", sender=EVIL)
    assert engine.store.games() == []  # no game opened, nobody signed up
    dave_token = _SIGNUP_TAG.search(signup_mail(engine, DAVE)["subject"])[1]
    evil_token = _SIGNUP_TAG.search(signup_mail(engine, EVIL)["subject"])[1]
    assert evil_token != dave_token  # evil is asked to confirm for itself
    assert len([m for m in mails(engine, DAVE) if _SIGNUP_TAG.search(m["subject"])]) == 1


def test_three_confirmed_sign_ups_start_the_game_in_join_order(engine, clock):
    for address in (ERIN, DAVE):
        join(engine, clock, address)
        clock.advance(minutes=1)
    assert engine.status(1)["state"] == "open"
    assert not [m for m in mails(engine) if "begins" in m["subject"]]
    before = last_id(engine)
    join(engine, clock, FRANK)
    status = engine.status(1)
    assert status["state"] == "running"
    assert [p["address"] for p in status["players"]] == [ERIN, DAVE, FRANK]
    assert status["phase"]["number"] == 1
    new = mails(engine, after=before)
    for address in (ERIN, DAVE, FRANK):
        subjects = [m["subject"] for m in new if m["recipients"] == [address]]
        assert any("A Game of Pure Skill begins" in s for s in subjects), subjects
        assert any("Round 1 of 13: the prize is" in s for s in subjects), subjects
    answer = [m for m in new if m["recipients"] == [FRANK] and m["subject"].startswith("Re:")][-1]
    assert "Its seats are full, so it\nstarts now" in answer["body"]
    # the players now move with the seat tokens of the start mails
    assert play(engine, clock, DAVE, "bid 4").code == "move"
    assert_all_auto_submitted(engine)


def test_leave_by_the_confirmation_withdraws_a_sign_up(engine, clock):
    join(engine, clock, DAVE)
    join(engine, clock, ERIN)
    before = last_id(engine)
    confirm(engine, clock, DAVE, "LEAVE")
    ((line, text),) = answers_in(only_mail(engine, DAVE, before)["body"])
    assert line == "LEAVE" and text == "Your sign-up for Game of Pure Skill is withdrawn."
    assert [p["address"] for p in engine.status(1)["players"]] == [ERIN]
    join(engine, clock, FRANK)  # two signed up: not yet full
    assert engine.status(1)["state"] == "open"
    join(engine, clock, GINA)
    status = engine.status(1)
    assert status["state"] == "running"
    assert [p["address"] for p in status["players"]] == [ERIN, FRANK, GINA]


def test_leave_without_a_sign_up_token_is_refused(engine, clock):
    join(engine, clock, DAVE)
    write(engine, clock, DAVE, "LEAVE")
    assert [p["address"] for p in engine.status(1)["players"]] == [DAVE]


def test_join_of_an_unknown_game_is_refused_with_the_list_of_games(engine, clock):
    before = last_id(engine)
    outcome = write(engine, clock, DAVE, "JOIN nosuchgame")
    assert outcome.code == "refused"
    ((line, text),) = answers_in(only_mail(engine, DAVE, before)["body"])
    assert line == "JOIN"  # not the sender's own words
    known = ", ".join(GAMES)  # every game this referee runs
    assert text.startswith(f"Not done: There is no game of that name; the games are: {known}.")
    assert "pure-skill" in known
    assert engine.store.games() == []


# -- TIMEZONE -------------------------------------------------------------------------


def local_deadline(deadline: str, zone: str) -> str:
    """How the deadline reads in ``zone``, as the referee should add it after UTC."""
    moment = from_iso(deadline)
    local = moment.astimezone(ZoneInfo(zone))
    day = "" if local.date() == moment.date() else local.strftime("%a %d %b ")
    return f"{moment:%Y-%m-%d %H:%M} UTC ({day}{local:%H:%M} {zone})"


def test_timezone_shows_later_deadlines_in_the_players_zone_too(engine, clock, game):
    before = last_id(engine)
    play(engine, clock, ALICE, f"TIMEZONE {BERLIN}")
    ((_, text),) = answers_in(only_mail(engine, ALICE, before)["body"])
    assert text == "From now on the referee's mails to you show times in Europe/Berlin as well as UTC."
    before = last_id(engine)
    clock.advance(hours=5)
    play_round_one(engine, clock)  # the next prompts
    deadline = engine.status(game)["phase"]["deadline"]
    utc_only = f"Deadline: {show(deadline)} (in "
    results = {m["recipients"][0]: m["body"] for m in mails(engine, after=before) if "The bids:" in m["body"]}
    assert f"Deadline {local_deadline(deadline, BERLIN)}. Your private prompt" in results[ALICE]
    assert f"Deadline {show(deadline)}. Your private prompt" in results[BOB]
    prompts = {
        m["recipients"][0]: m["body"]
        for m in mails(engine, after=before)
        if "Round 2 of 13: the prize is" in m["subject"]
    }
    assert f"Deadline: {local_deadline(deadline, BERLIN)} (in " in prompts[ALICE]
    for other in (BOB, CAROL):
        assert utc_only in prompts[other] and BERLIN not in prompts[other]
    # and in a STATUS reply
    before = last_id(engine)
    play(engine, clock, ALICE, "status")
    ((_, status),) = answers_in(only_mail(engine, ALICE, before)["body"])
    assert f"is open until {local_deadline(deadline, BERLIN)} (in " in status
    play(engine, clock, BOB, "status")
    assert BERLIN not in mails(engine, BOB)[-1]["body"]


def test_timezone_utc_goes_back_to_utc_only(engine, clock, game):
    play(engine, clock, ALICE, f"TIMEZONE {BERLIN}")
    play(engine, clock, ALICE, "timezone UTC")
    assert engine.store.timezone(ALICE) is None
    play(engine, clock, ALICE, "status")
    assert BERLIN not in mails(engine, ALICE)[-1]["body"]


@pytest.mark.parametrize(
    "zone",
    [
        "Mars/Olympus_Mons",
        "",
        "../../etc/passwd",
        "europe/berlin",
        "Europe",
        "America",  # folders of zones, not zones
        pytest.param("x" * 300, id="300-letters"),
    ],
)
def test_an_unknown_zone_is_refused_and_changes_nothing(engine, clock, game, zone):
    before = last_id(engine)
    outcome = play(engine, clock, ALICE, f"TIMEZONE {zone}\nbid 7")
    assert outcome.code == "move"
    pairs = answers_in(only_mail(engine, ALICE, before)["body"])
    assert pairs[0][1].startswith(f'Not done: "{zone[:40]}" is not a time zone I know.')
    assert engine.store.timezone(ALICE) is None
    assert bids(engine) == {0: "bid 7"}


def test_timezone_without_a_token_is_refused(engine, clock, game):
    before = last_id(engine)
    outcome = write(engine, clock, ALICE, f"TIMEZONE {BERLIN}")  # a player's From, no token
    assert outcome.code == "refused"
    assert "A mail in your name was not accepted" in only_mail(engine, ALICE, before)["subject"]
    before = last_id(engine)
    outcome = write(engine, clock, DAVE, f"TIMEZONE {BERLIN}")  # a stranger
    assert outcome.code == "refused"
    ((_, text),) = answers_in(only_mail(engine, DAVE, before)["body"])
    assert text.startswith("Not done: TIMEZONE works in a reply to one of the referee's mails")
    assert engine.store.timezone(ALICE) is None and engine.store.timezone(DAVE) is None
    play(engine, clock, ALICE, "status")
    assert BERLIN not in mails(engine, ALICE)[-1]["body"]


def test_timezone_with_a_sign_up_token_is_taken(engine, clock):
    write(engine, clock, DAVE, "JOIN pure-skill")
    confirm(engine, clock, DAVE, f"TIMEZONE {BERLIN}")
    assert engine.store.timezone(DAVE) == BERLIN


# -- replies per hour ---------------------------------------------------------------------


@pytest.fixture
def limited(tmp_path, clock) -> Engine:
    config = Config(
        address="referee@example.org",
        database=tmp_path / "limited.db",
        reminder=None,
        outage_gap=None,
        replies_per_hour=3,
    )
    engine = Engine(Store(config.database), config, clock)
    engine.new_game("pure-skill", PLAYERS)
    return engine


def test_over_the_limit_a_player_gets_one_note_then_silence_and_her_moves_count(limited, clock):
    engine = limited
    first = clock()
    for card in ("2", "3", "4"):
        before = last_id(engine)
        play(engine, clock, ALICE, f"bid {card}")
        assert "is in: bid " + card in only_mail(engine, ALICE, before)["body"]
        clock.advance(minutes=10)
    before = last_id(engine)
    assert play(engine, clock, ALICE, "bid 5").code == "replaced"
    note = only_mail(engine, ALICE, before)  # instead of the receipt: never silence at once
    assert f"Answers to your mail paused until {show(first + timedelta(hours=1))}" in note["subject"]
    assert "moves and commands in them count as usual" in " ".join(note["body"].split())
    before = last_id(engine)
    assert play(engine, clock, ALICE, "bid 6").code == "replaced"
    assert mails(engine, after=before) == []  # one note an hour, then silence
    assert bids(engine) == {0: "bid 6"}
    # others are answered as usual
    assert play(engine, clock, BOB, "bid 7").code == "move"
    assert mails(engine, BOB, after=before)
    # an hour after the first answer, answers resume
    clock.advance(minutes=31)
    before = last_id(engine)
    play(engine, clock, ALICE, "bid 8")
    assert "is in: bid 8" in only_mail(engine, ALICE, before)["body"]
    assert bids(engine) == {0: "bid 8", 1: "bid 7"}


def test_the_reply_limit_does_not_hold_back_game_mail(limited, clock):
    engine = limited
    for card in ("2", "3", "4", "5"):
        play(engine, clock, ALICE, f"bid {card}")
    before = last_id(engine)
    play(engine, clock, BOB, "bid 6")
    play(engine, clock, CAROL, "bid 7")
    assert engine.status(1)["phase"]["number"] == 2
    to_alice = [m["subject"] for m in mails(engine, ALICE, after=before)]
    assert len(to_alice) == 2, to_alice
    assert re.search(r"\] Round 1 of 13: (\S+ takes the|tie)", to_alice[0]), to_alice
    assert "] Round 2 of 13: the prize is" in to_alice[1], to_alice


# -- bounces -----------------------------------------------------------------------------


def sent_to(engine: Engine, address: str) -> dict:
    return mails(engine, address)[0]


@pytest.mark.parametrize("part", ["text/rfc822-headers", "message/rfc822"])
def test_a_bounce_of_the_referees_mail_is_recorded_against_the_player(engine, clock, game, part):
    original = sent_to(engine, CAROL)
    before = last_id(engine)
    outcome = engine.ingest(dsn(CAROL, original["message_id"], part=part))
    assert outcome.code == "bounce"
    assert mails(engine, after=before) == []
    players = engine.status(game)["players"]
    assert [b["status"] for b in players[2]["bounces"]] == ["5.2.2"]
    assert "Mailbox full" in players[2]["bounces"][0]["diagnostic"]
    assert players[0]["bounces"] == [] and players[1]["bounces"] == []


def test_a_bounce_quoting_an_unknown_message_records_nothing(engine, clock, game):
    before = last_id(engine)
    outcome = engine.ingest(dsn(CAROL, "<not-ours@example.com>"))
    assert outcome.code == "ignored"
    assert mails(engine, after=before) == []
    assert all(p["bounces"] == [] for p in engine.status(game)["players"])


def test_a_bounce_naming_another_recipient_than_the_quoted_mail_records_nothing(engine, clock, game):
    outcome = engine.ingest(dsn(CAROL, sent_to(engine, ALICE)["message_id"]))
    assert outcome.code == "ignored"
    assert all(p["bounces"] == [] for p in engine.status(game)["players"])


def test_the_same_bounce_twice_is_recorded_once(engine, clock, game):
    raw = dsn(CAROL, sent_to(engine, CAROL)["message_id"], message_id="<dsn-1@mx.example.org>")
    assert engine.ingest(raw).code == "bounce"
    assert engine.ingest(raw).code == "duplicate"
    assert len(engine.status(game)["players"][2]["bounces"]) == 1


def test_every_mail_of_a_whole_session_is_auto_submitted(engine, clock, game):
    play(engine, clock, ALICE, "bid 2\nHELP\nLIST\nfoo")
    write(engine, clock, BOB, "bid 3")  # forged notice
    write(engine, clock, DAVE, "JOIN pure-skill")
    confirm(engine, clock, DAVE)
    play(engine, clock, BOB, "RESIGN")
    play(engine, clock, CAROL, "bid 4")
    engine.ingest(dsn(CAROL, sent_to(engine, CAROL)["message_id"]))
    clock.advance(days=4)
    engine.tick()
    assert len(engine.store.outbox(None)) > 15
    assert_all_auto_submitted(engine)
    replies = [m for m in mails(engine) if m["subject"].startswith("Re:")]
    assert replies and all(m["message"]["Auto-Submitted"] == "auto-replied" for m in replies)


def test_a_forger_gets_the_player_one_notice_an_hour_and_leaves_their_replies(engine, clock, game):
    for number in range(5):  # forged mails in alice's name, no token
        assert write(engine, clock, ALICE, f"bid {number + 2}").code == "refused"
    assert len(mails(engine, to=ALICE, after=0)) - len(_game_mail(engine, ALICE)) == 1
    before = last_id(engine)
    assert play(engine, clock, ALICE, "bid 9").code == "move"  # her own reply is still answered
    assert "is in: bid 9" in only_mail(engine, ALICE, before)["body"]
    clock.advance(minutes=61)
    before = last_id(engine)
    write(engine, clock, ALICE, "bid 3")
    assert "not accepted" in only_mail(engine, ALICE, before)["subject"]


def _game_mail(engine: Engine, player: str) -> list[dict]:
    """Mail to ``player`` that answers nothing: start, prompts, results."""
    return [
        m
        for m in mails(engine, to=player)
        if m["message"]["In-Reply-To"] is None and "not accepted" not in m["subject"]
    ]


# -- lines as people write them, quotes as clients write them --------------------


def test_a_short_indented_quote_is_known_by_the_referees_own_words(engine, clock, game):
    """mailx quotes with a TAB and no attribution; a player who kept only the
    prompt's example, two lines of it, must not bid its example, the King.
    Only the mail answered tells such a quote from a player's own indented
    lines, so the desk compares the two."""
    prompt = next(m for m in mails(engine, ALICE) if m["subject"].split("] ")[1].startswith("Round 1"))
    kept = ["To bid, reply to this mail with one line, for example:", "", "    bid K"]
    body = "bid 3\n\n" + "\n".join(f"\t{line}" for line in kept) + "\n"
    headers = {"In-Reply-To": prompt["message_id"], "References": prompt["message_id"]}
    assert play(engine, clock, ALICE, body, headers=headers).code == "move"
    assert bids(engine) == {0: "bid 3"}
    # a mail that names no thread is compared with the last mails sent to her
    assert play(engine, clock, ALICE, body.replace("bid 3", "bid 4")).code == "replaced"
    assert bids(engine) == {0: "bid 4"}


def test_a_line_that_is_no_move_is_answered_with_what_was_expected_and_the_move_it_likely_meant(engine, clock, game):
    before = last_id(engine)
    assert play(engine, clock, ALICE, "Queen of hearts").code == "refused"
    ((line, answer),) = answers_in(only_mail(engine, ALICE, before)["body"])
    answer = " ".join(answer.split())
    assert line == "Queen of hearts"
    assert '"Queen of hearts" is neither a command nor a move.' in answer
    assert "A bid is the word 'bid' and one of your cards" in answer  # what it expected
    assert "Did you mean `bid Q`? Reply with that line to play it." in answer
    assert "Nothing was changed by this line." in answer
    assert engine.store.moves(game) == []
    assert play(engine, clock, ALICE, "bid Q").code == "move"


@pytest.mark.parametrize(
    ("body", "move"),
    [
        ("*bid 7*", "bid 7"),
        ("Bid: King.", "bid K"),
        ("- bid ten!", "bid 10"),
        ("I'll play the jack, thanks", "bid J"),
        ("\uff42\uff49\uff44\u3000\uff17", "bid 7"),
        ("my bid is\u00a0Queen", "bid Q"),
        ("\u2022 BID \u201cA\u201d", "bid A"),
    ],
)
def test_a_decorated_bid_counts(engine, clock, game, body, move):
    assert play(engine, clock, ALICE, body).code == "move"
    assert bids(engine) == {0: move}


@pytest.mark.parametrize(
    ("body", "word"),
    [
        ("*STATUS*", "Still to move"),
        ("Status?", "Still to move"),
        ("- hand", "Your hand (hearts)"),
        ("HELP!", "STATUS"),
    ],
)
def test_a_decorated_command_is_carried_out(engine, clock, game, body, word):
    before = last_id(engine)
    assert play(engine, clock, ALICE, body).code == "done"
    assert word in only_mail(engine, ALICE, before)["body"]


def test_join_takes_a_games_title(engine, clock):
    before = last_id(engine)
    assert write(engine, clock, "dave@example.org", "Join: Ice Ice Baby!").code == "done"
    confirm, _reply = mails(engine, "dave@example.org", before)
    assert confirm["subject"].startswith("[ice ") and confirm["subject"].endswith("] JOIN ice")


def test_a_sentence_with_resign_in_it_resigns_nobody(engine, clock, game):
    assert play(engine, clock, ALICE, "I'll resign if I lose this round.\nbid K").code == "move"
    assert engine.table(game).human(0)
    assert bids(engine) == {0: "bid K"}


def test_a_move_asked_as_a_question_is_not_made_but_offered(engine, clock, game):
    before = last_id(engine)
    assert play(engine, clock, ALICE, "bid 7?").code == "refused"
    assert engine.store.moves(game) == []
    ((_, answer),) = answers_in(only_mail(engine, ALICE, before)["body"])
    assert "That is a question, so nothing was played." in " ".join(answer.split())
    assert "Did you mean `bid 7`?" in answer


def test_a_correction_below_a_move_makes_the_corrected_move_count_not_the_first(engine, clock, game):
    assert play(engine, clock, ALICE, "bid 7\nActually, bid 8").code == "move"
    assert bids(engine) == {0: "bid 8"}


def test_chat_before_a_move_does_not_stop_the_reading_before_it(engine, clock, game):
    body = "Hi referee,\nHope all is well.\nSorry for the late reply,\nit was a busy week.\nAnyway, here it is:\nbid K\nAlice"
    assert play(engine, clock, ALICE, body).code == "move"
    assert bids(engine) == {0: "bid K"}


@pytest.mark.parametrize("body", ["Pawn - not yet, bid 5", "bid 5 - no, Q", "pawn - just kidding"])
def test_what_follows_a_dash_is_dropped_only_when_it_signs_off(engine, clock, body):
    engine.new_game("bid", PLAYERS)
    assert play(engine, clock, ALICE, body).code == "refused"
    assert engine.store.moves(1) == []
    assert play(engine, clock, ALICE, "pawn - good luck!").code == "move"


def test_a_short_indented_quote_in_a_mail_that_names_no_thread_is_known_by_the_last_mails_sent(engine, clock, game):
    """A client that drops In-Reply-To and References: the desk compares the
    newest mails sent to the player instead, so the example is no move."""
    kept = ["To bid, reply to this mail with one line, for example:", "", "    bid K"]
    body = "Thanks\n\n" + "\n".join(f"\t{line}" for line in kept) + "\n"
    assert play(engine, clock, ALICE, body).code == "refused"
    assert engine.store.moves(game) == []


def test_a_reply_that_only_quotes_is_not_read_from_the_subject_it_kept(engine, clock, game):
    """Its subject is the prompt's own, not something the player wrote."""
    prompt = next(m for m in mails(engine, ALICE) if "Round 1" in m["subject"])
    before = last_id(engine)
    quote = "\n".join(f"> {line}" for line in prompt["body"].splitlines())
    headers = {"In-Reply-To": prompt["message_id"]}
    subject = "Re: " + prompt["subject"]
    assert play(engine, clock, ALICE, f"\n{quote}\n", subject=subject, headers=headers).code == "refused"
    text = only_mail(engine, ALICE, before)["body"]
    assert "I found no command in your mail: quoted lines are not read." in " ".join(text.split())
    assert "neither a command nor a move" not in text
