"""The club's list (issue 34, item 2): a game's own lists, given by the
keeper at NEW (at the shell and by mail) besides the config's; links to the
game's page and record in every public mail and every game-over mail, and
how to check them; Pure Skill's award text only where a club asks for it;
and the list's copies of the referee's own mail, come back, ignored."""

from __future__ import annotations

import email
from dataclasses import replace
from email import policy
from email.utils import format_datetime

import pytest
from conftest import PLAYERS, FakeClock, Mailbox, mails, make_mail, send, to_deadline
from test_cli import cfg as _cfg
from test_cli import run as _run
from test_keeper_mail import KEEPER, order

from referee.config import Config
from referee.engine import Engine
from referee.store import Notify, Store

cfg, run = _cfg, _run  # the fixtures: a config file, and `referee` run with it

LIST = "club@lists.example.org"
OTHER_LIST = "games@lists.example.net"
SITE = "https://games.example.org/referee"
ALICE, BOB, CAROL = PLAYERS


@pytest.fixture
def config(config):
    return replace(config, keepers=(KEEPER,))


def header(mail: dict, name: str) -> str | None:
    return email.message_from_bytes(mail["raw"], policy=policy.default)[name]


def play_out(engine: Engine, clock, game: int = 1) -> None:
    """Every phase to its deadline, every move random, to the end."""
    while engine.status(game)["state"] == "running":
        to_deadline(engine, clock, game)
        engine.tick()


# -- a game's own lists ----------------------------------------------------------------------


def test_the_keeper_names_a_game_s_lists_at_the_shell(run, cfg):
    players = [word for address in PLAYERS for word in ("--player", address)]
    lists = ["--announce-to", LIST, "--announce-to", OTHER_LIST]
    assert run("new", "ice", *players, *lists)[0] == 0
    assert run("new", "ice", *players)[0] == 0
    status, _, err = run("new", "ice", *players, "--announce-to", "referee@example.org")
    assert status != 0 and "the referee's own address" in err
    store = Store(cfg.parent / "games.db")
    assert [game["announce_to"] for game in store.games()] == [[LIST, OTHER_LIST], []]
    assert [m["recipients"] for m in store.outbox(None) if m["recipients"][0] in (LIST, OTHER_LIST)] == [
        [LIST],
        [OTHER_LIST],
    ]  # the start of the first game, once to each of its lists


def test_the_keeper_names_a_game_s_lists_by_mail(engine, clock):
    assert order(engine, clock, f"NEW ice {ALICE} {BOB} announce_to={LIST} announce_to={OTHER_LIST}").code == "done"
    assert engine.table(1).row["announce_to"] == [LIST, OTHER_LIST]
    assert order(engine, clock, f"NEW ice {ALICE} {BOB} announce-to={LIST},{OTHER_LIST}").code == "done"
    assert engine.table(2).row["announce_to"] == [LIST, OTHER_LIST]
    assert [m["subject"] for m in mails(engine, LIST)] == [
        "[ice-1] A game of Ice Ice Baby begins",
        "[ice-2] A game of Ice Ice Baby begins",
    ]


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("announce_to=club.example.org", "'club.example.org' is not a mail address"),
        ("announce_to=referee+list@example.org", "is the referee's own address"),
        ("awards=maybe", "Awards=maybe: say on or off"),
    ],
)
def test_a_list_or_award_setting_that_cannot_be_is_refused_and_makes_no_game(engine, clock, setting, says):
    assert order(engine, clock, f"NEW ice {ALICE} {BOB} {setting}").code == "refused"
    assert engine.store.games() == []
    assert says in " ".join(mails(engine, KEEPER)[-1]["body"].split())


def test_the_config_s_lists_and_the_game_s_own_each_get_every_public_mail_once(tmp_path, clock):
    config = Config(
        address="referee@example.org",
        database=tmp_path / "games.db",
        reminder=None,
        outage_gap=None,
        announce_to=(LIST,),
        announce_notify=Notify.EVERY,
    )
    engine = Engine(Store(config.database), config, clock)
    engine.new_game("pure-skill", PLAYERS, announce_to=[OTHER_LIST, LIST.upper()])
    play_out(engine, clock)
    club, other = mails(engine, LIST), mails(engine, OTHER_LIST)
    assert len(club) == len(other) == 13 + 2  # the start, each round, the end
    assert [m["subject"] for m in club] == [m["subject"] for m in other]
    assert club[0]["subject"] == "[pure-skill-1] A Game of Pure Skill begins"
    assert club[-1]["subject"].startswith("[pure-skill-1] Game over")


def test_the_list_s_copy_says_it_is_one_and_asks_nothing_of_its_readers(tmp_path, clock):
    config = Config(address="referee@example.org", database=tmp_path / "games.db", reminder=None, outage_gap=None)
    engine = Engine(Store(config.database), config, clock)
    engine.new_game("pure-skill", PLAYERS, announce_to=[LIST])
    play_out(engine, clock)
    start, *rounds = [m["body"] for m in mails(engine, LIST)]
    for body in [start, *rounds]:
        assert "Reply to this mail to play" not in body and "prompt follows" not in body
        assert "A reply to it is no move" in " ".join(body.split())
        assert "How much mail" not in body and "NOTIFY" not in body
    assert "mail RULES pure-skill to referee@example.org" in start
    assert "Your first prompt follows" in mails(engine, ALICE)[0]["body"]  # the players' copies say so, as ever


# -- a stable, citable form ------------------------------------------------------------------


def test_the_list_s_copies_have_the_same_message_ids_when_the_game_is_played_again(tmp_path):
    def played(folder: str) -> list[tuple[str, str]]:
        config = Config(
            address="referee@example.org",
            database=tmp_path / folder / "games.db",
            reminder=None,
            outage_gap=None,
            secret_key=b"the club's referee",
            site_url=SITE,
            announce_notify=Notify.EVERY,
        )
        (tmp_path / folder).mkdir()
        clock = FakeClock()
        engine = Engine(Store(config.database), config, clock)
        engine.new_game("ice", PLAYERS, announce_to=[LIST], seed=bytes(32))
        for _ in range(3):
            to_deadline(engine, clock)
            engine.tick()
        return [(m["message_id"], m["subject"]) for m in mails(engine, LIST)]

    first = played("a")
    assert len(first) >= 2 and first == played("b")  # the start and a round at least
    assert len({message_id for message_id, _ in first}) == len(first)


def test_the_list_s_copy_carries_the_game_s_page_as_archived_at(tmp_path, clock):
    config = Config(address="referee@example.org", database=tmp_path / "games.db", reminder=None, site_url=SITE)
    engine = Engine(Store(config.database), config, clock)
    engine.new_game("ice", PLAYERS, announce_to=[LIST])
    [start] = mails(engine, LIST)
    assert header(start, "Archived-At") == f"<{SITE}/games/1/>"
    assert header(mails(engine, ALICE)[0], "Archived-At") is None  # a player's own mail is no archive's


# -- links, and how to check a game ----------------------------------------------------------


@pytest.mark.parametrize("kind", ["pure-skill", "bid", "ice", "priority", "bluff"])
def test_every_public_mail_links_the_game_s_page_and_record_and_the_end_says_how_to_check_it(tmp_path, clock, kind):
    config = Config(
        address="referee@example.org",
        database=tmp_path / "games.db",
        reminder=None,
        outage_gap=None,
        site_url=SITE,
        announce_notify=Notify.EVERY,
    )
    engine = Engine(Store(config.database), config, clock)
    engine.new_game(kind, PLAYERS, announce_to=[LIST])
    play_out(engine, clock)
    page, record = f"{SITE}/games/1/", f"{SITE}/games/1/record.json"
    for mail in mails(engine, LIST):
        assert f"The game's page: {page}" in mail["body"] and record in mail["body"], mail["subject"]
    for final in [m for m in mails(engine) if "Game over" in m["subject"]]:
        body = final["body"]
        assert f"    referee verify {record}\n" in body  # the command, whole on its line
        assert f"referee verify {record} --mail game.eml" in body
        assert "sha256sum" in body and engine.table(1).row["seed"] in body
        assert "docs/design.md" not in body
    assert len([m for m in mails(engine) if "Game over" in m["subject"]]) == len(PLAYERS) + 1


def test_without_the_site_s_address_the_end_says_what_one_can_do_and_links_nothing(engine, clock):
    engine.new_game("bid", PLAYERS, announce_to=[LIST])
    play_out(engine, clock)
    final = mails(engine, LIST)[-1]["body"]
    assert "    referee verify record.json\n" in final
    assert "publishes with `referee render`" in final
    assert "http" not in final and "docs/design.md" not in final and "games/1" not in final


def test_a_cancelled_game_says_how_to_check_it_too(tmp_path, clock):
    config = Config(address="referee@example.org", database=tmp_path / "games.db", reminder=None, site_url=SITE)
    engine = Engine(Store(config.database), config, clock)
    engine.new_game("ice", PLAYERS, announce_to=[LIST])
    engine.cancel(1, "shell", "the club closed for the summer")
    cancelled = mails(engine, LIST)[-1]
    assert cancelled["subject"] == "[ice-1] Game 1 is cancelled"
    assert f"    referee verify {SITE}/games/1/record.json\n" in cancelled["body"]


# -- award text ------------------------------------------------------------------------------

RULE_5 = "Under rule 5 the winner receives 8 points and the referee A$8"


def finals(engine: Engine) -> list[str]:
    return [" ".join(m["body"].split()) for m in mails(engine) if "Game over" in m["subject"]]


def test_pure_skill_s_award_text_is_off_unless_a_club_asks_for_it(engine, clock, config):
    engine.new_game("pure-skill", PLAYERS, seed=bytes(32))
    play_out(engine, clock)
    assert finals(engine) and not [body for body in finals(engine) if "rule 5" in body]
    clubbed = Engine(engine.store, replace(config, awards=True), clock)
    clubbed.new_game("pure-skill", PLAYERS, seed=bytes(32))  # the config's: on
    clubbed.new_game("pure-skill", PLAYERS, seed=bytes(32), awards=False)  # the game's own wins
    play_out(clubbed, clock, 2)
    play_out(clubbed, clock, 3)
    by_game = {
        game: [m for m in mails(engine) if m["game_id"] == game and "Game over" in m["subject"]] for game in (2, 3)
    }
    assert by_game[2] and all("rule 5" in " ".join(m["body"].split()) for m in by_game[2])
    assert by_game[3] and not any("rule 5" in m["body"] for m in by_game[3])


def test_the_keeper_turns_a_game_s_award_text_on_by_mail(engine, clock):
    assert order(engine, clock, f"NEW pure-skill {ALICE} {BOB} {CAROL} awards=on").code == "done"
    assert engine.table(1).row["awards"] == 1
    play_out(engine, clock)
    said = finals(engine)[0]
    assert RULE_5 in said or "no award under rule 5" in said


def test_the_keeper_turns_a_game_s_award_text_on_at_the_shell(run, cfg):
    players = [word for address in PLAYERS for word in ("--player", address)]
    assert run("new", "pure-skill", *players, "--awards", "on")[0] == 0
    assert run("new", "pure-skill", *players, "--awards", "off")[0] == 0
    assert run("new", "pure-skill", *players)[0] == 0
    assert [game["awards"] for game in Store(cfg.parent / "games.db").games()] == [1, 0, None]


# -- the list's copies coming back -----------------------------------------------------------


def came_back(mail: dict, clock, **changes: str) -> bytes:
    """The list's copy of the referee's ``mail`` as a list sends it on to
    its members, the referee's address among them: its headers as the
    referee wrote them, then each of ``changes`` (a header's new value,
    or "" to take it away), the list's additions last."""
    message = email.message_from_bytes(mail["raw"], policy=policy.compat32)
    for name, value in changes.items():
        del message[name]
        if value:
            message[name] = value
    received = f"Received: from lists.example.org by mx.example.org; {format_datetime(clock())}\r\n"
    return received.encode() + message.as_bytes()


LISTS = {
    "mailman 3": {
        "From": f'"Referee via Club" <{LIST}>',  # DMARC mitigation: the list's From, the author in Reply-To
        "Reply-To": "Referee <referee@example.org>",
        "List-Id": "Club <club.lists.example.org>",
        "List-Post": f"<mailto:{LIST}>",
        "List-Unsubscribe": "<mailto:club-leave@lists.example.org>",
        "Precedence": "list",
        "Sender": "club-bounces@lists.example.org",
    },
    "google groups": {
        "From": "'Referee' via Club <club@googlegroups.com>",
        "X-Original-Sender": "referee@example.org",
        "List-ID": "<club.googlegroups.com>",
        "List-Post": "<https://groups.google.com/group/club/post>, <mailto:club@googlegroups.com>",
        "Mailing-list": "list club@googlegroups.com; contact club+owners@googlegroups.com",
        "Precedence": "list",
        "Auto-Submitted": "",  # some lists drop it
    },
    "sympa": {
        "List-Id": "<club.lists.example.org>",
        "List-Post": f"<mailto:{LIST}>",
        "Precedence": "list",
        "X-Loop": LIST,
    },
    "a list that makes its own Message-ID": {
        "From": f'"referee@example.org via club" <{LIST}>',
        "X-Original-From": "Referee <referee@example.org>",
        "Message-ID": "<list.1234@lists.example.org>",
        "List-Id": "<club.lists.example.org>",
        "Precedence": "",
        "Auto-Submitted": "",
    },
}


@pytest.mark.parametrize("software", list(LISTS))
def test_the_list_s_copy_of_the_referee_s_own_mail_coming_back_is_ignored_silently(engine, clock, software):
    engine.new_game("pure-skill", PLAYERS, announce_to=[LIST])
    assert send(engine, clock, ALICE, "bid 7").code == "move"
    assert send(engine, clock, BOB, "bid 8").code == "move"
    assert send(engine, clock, CAROL, "bid 9").code == "move"  # the round's result goes to the list
    box = Mailbox(engine)
    box.new()
    before = engine.status(1)
    for mail in mails(engine, LIST):
        outcome = engine.ingest(came_back(mail, clock, **LISTS[software]))
        assert outcome.code == "ignored", outcome
        assert "the referee's own mail, come back" in outcome.detail
    assert box.new() == []  # no answer, no loop
    assert engine.status(1) == before


def test_a_list_member_s_own_post_is_no_copy_of_ours(engine, clock):
    """What marks the referee's mail come back is its Message-ID or the
    referee as its author, not a list's headers alone."""
    engine.new_game("pure-skill", PLAYERS, announce_to=[LIST])
    post = make_mail(
        "dave@example.net", "Nice bid, Alice!", received=clock(), headers={"List-Id": "<club.lists.example.org>"}
    )
    outcome = engine.ingest(post)
    assert outcome.code == "ignored" and "come back" not in outcome.detail  # list mail, never answered
