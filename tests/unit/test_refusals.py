"""Every refusal is worded in one template (templates/mail/refusals.txt.j2),
a macro per code of ``referee.errors.Why``: each code has its wording, each
wording a code, and each says, with example facts, the sentence the players
were told when it was written in the code."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import jinja2
import pytest

from referee.errors import Refusal, Why
from referee.mail.compose import REFUSALS, Composer

RECEIVED = datetime(2026, 11, 21, 6, 14, 26, tzinfo=UTC)
KINDS = ["pure-skill", "bid", "ice", "priority", "bluff"]

# code -> (facts, what the player reads): the sentences as the code wrote them before.
EXAMPLES = {
    Why.SEAT_ENDED: ({"game": 3}, "Game 3 has ended; its mails no longer take commands."),
    Why.UNKNOWN_COMMAND: ({}, "That is not a command I know. Send HELP for the list of commands."),
    Why.NEEDS_SEAT: (
        {"word": "status"},
        (
            "STATUS is about a game you play: reply to one of the game's mails "
            "to you (its reply address names your seat)."
        ),
    ),
    Why.GAME_ENDED: ({"game": 2}, "Game 2 has ended."),
    Why.RESIGNED: ({"game": 2}, "You left game 2; a random bot plays your seat now."),
    Why.BAD_MOVE: ({"error": "A bid must be a number."}, "A bid must be a number."),
    Why.NOT_UNDERSTOOD: (
        {"line": "x" * 70, "error": "A bid must be a number."},
        (f'"{"x" * 60}" is neither a command nor a move. A bid must be a number. HELP lists the commands.'),
    ),
    Why.AMBIGUOUS: (
        {"asked": [{"number": 1, "line": "bid 3", "move": "3"}, {"number": 2, "line": "y" * 61, "move": "4"}]},
        (
            f'Your mail asks for more than one move (line 1, "bid 3", asks for 3; line 2, "{"y" * 60}", '
            "asks for 4), and I cannot tell which you mean, so I made none of them. Reply with the one "
            "move you mean, alone."
        ),
    ),
    Why.NO_COMMAND: (
        {},
        (
            "I found no command in your mail: quoted lines are not read. Write your move on a "
            "line of its own, above or below the quote."
        ),
    ),
    Why.LEFT_ALONE: ({}, "not a command or a move, so I left it alone."),
    Why.TOO_LARGE: (
        {"size": 300, "limit": 256},
        (
            "Your mail is 300 KB; the referee reads mail of up to 256 KB "
            "(an attachment, perhaps?). Please send your move again as a short plain-text reply."
        ),
    ),
    Why.MOVED_ALREADY: (
        {"phase": "round 2", "move": "5"},
        ("Your move for round 2 is in already (5); a move in turn is final."),
    ),
    Why.LATE_FOR_THREAD: (
        {
            "received": RECEIVED,
            "phase": "round 2",
            "deadline": "2026-11-21T06:00:00Z",
            "now": "round 3",
            "mover": True,
            "waiting": [],
        },
        (
            "Your mail reached the server at 2026-11-21 06:14 UTC, after the deadline of round 2 "
            "(2026-11-21 06:00 UTC): a move missing at the deadline is chosen at random. round 3 "
            "is open now: to make this move there, send it again in a reply to this mail."
        ),
    ),
    Why.THREAD_OVER: (
        {"phase": "round 2", "now": "turn 5", "mover": False, "waiting": ["ann", "bob"]},
        (
            "Your mail answers the referee's mail about round 2, which is over. turn 5 is open now, "
            "and waits for ann, bob."
        ),
    ),
    Why.BEFORE_OPEN: (
        {"received": RECEIVED, "phase": "round 2"},
        (
            "Your mail reached the server at 2026-11-21 06:14 UTC, before round 2 opened; the round "
            "it was meant for has closed. Please send your move again."
        ),
    ),
    Why.AFTER_DEADLINE: (
        {"received": RECEIVED, "phase": "round 2", "deadline": "2026-11-21T06:00:00Z"},
        (
            "Your mail reached the server at 2026-11-21 06:14 UTC, after the deadline of round 2 "
            "(2026-11-21 06:00 UTC). A move missing at the deadline is chosen at random."
        ),
    ),
    Why.AFTER_CLOSE: (
        {"received": RECEIVED, "phase": "round 2", "closed": "2026-11-21T06:10:00Z"},
        (
            "Your mail reached the server at 2026-11-21 06:14 UTC, after round 2 closed "
            "(2026-11-21 06:10 UTC, when its settle time after the last move ran out)."
        ),
    ),
    Why.NOT_YOUR_MOVE: (
        {"phase": "turn 4", "waiting": ["ann", "cy"]},
        ("It is not your move; turn 4 waits for ann, cy."),
    ),
    Why.NOT_YET_YOURS: (
        {"phase": "Auction 2"},
        "You play this seat from the phase after Auction 2: its bot has made this phase's move, which stands.",
    ),
    Why.NO_SUCH_GAME: (
        {"kinds": KINDS},
        ("There is no game of that name; the games are: pure-skill, bid, ice, priority, bluff."),
    ),
    Why.JOIN_WHICH: (
        {"kinds": KINDS},
        ("JOIN needs the kind of game, one of: pure-skill, bid, ice, priority, bluff; for example, JOIN pure-skill."),
    ),
    Why.SIGNED_ALREADY: (
        {"game": 4, "more": 2},
        ("You are signed up for game 4 already; it starts when 2 more player(s) join."),
    ),
    Why.WATCH_WHICH: (
        {"game": None},
        "WATCH needs the number of a game, as LIST shows them; for example, WATCH 7 (or WATCH 7 DIGEST: one mail "
        "a day).",
    ),
    Why.WATCH_OVER: (
        {"game": 7},
        "Game 7 is over: there is nothing more to follow. Its page on the referee's site has everything it did.",
    ),
    Why.WATCH_PLAYER: ({"game": 7}, "You play in game 7 (or are signed up for it): you get its mail already."),
    Why.WATCH_FULL: (
        {"game": 7, "most": 50},
        "Sorry: game 7 has as many observers as the referee takes (50). Try again later: one may leave.",
    ),
    Why.UNWATCH_WHICH: ({}, "UNWATCH needs the number of the game you follow, or ALL; for example, UNWATCH 7."),
    Why.JOIN_SEATS: ({"title": "Bid!", "seats": 5, "least": 3, "most": 4}, "Bid! takes 3 to 4 players, not 5."),
    Why.JOIN_OPTION: (
        {"kind": "bid", "problem": "reroll must be 'pawn' (the rules) or 'coin' (the variant)", "options": ["reroll"]},
        (
            "Reroll must be 'pawn' (the rules) or 'coin' (the variant). The options of bid are reroll, and "
            "press (none, white or grey); RULES bid says what they do."
        ),
    ),
    Why.NO_OPEN_GAME: (
        {"game": 99},
        "No game 99 is open for sign-up; LIST shows those that are, or JOIN and a kind of game opens one.",
    ),
    Why.PLAYS_ALREADY: ({"game": 3}, "You play in game 3 already: it has begun."),
    Why.JOIN_BEGUN: (
        {"game": 3, "kind": "pure-skill", "title": "Game of Pure Skill"},
        (
            "Game 3 has begun, with its seats full, and Game of Pure Skill has no standby list; JOIN pure-skill "
            "signs you up for the next."
        ),
    ),
    Why.START_NOT_SIGNED: (
        {"title": "Bid!"},
        (
            "You are not signed up for a game of Bid! that has yet to begin: JOIN it first. (START works in a "
            "reply to the mail that confirmed your sign-up.)"
        ),
    ),
    Why.START_BEGUN: (
        {"game": 3, "title": "Bid!"},
        (
            "Game 3 (Bid!) has begun already, and you play in it: there is nothing left to start. Its first mails "
            "to you came separately; reply to those to play."
        ),
    ),
    Why.TOO_MANY_MAILS: (
        {},
        (
            "The referee has sent you too many mails this hour to send a confirmation now; "
            "please send JOIN again in an hour."
        ),
    ),
    Why.LEAVE_BEGUN: ({"game": 4}, ("Game 4 has begun; to leave it, send RESIGN (a random bot then plays your seat).")),
    Why.LEAVE_NOT_SIGNED: (
        {},
        (
            "You are not signed up for a game that has yet to begin. (To leave, reply to the "
            "mail that confirmed your sign-up.)"
        ),
    ),
    Why.TIMEZONE_UNPROVEN: (
        {},
        ("TIMEZONE works in a reply to one of the referee's mails to you (its reply address shows it is you)."),
    ),
    Why.STANDBY_WHICH: (
        {"kinds": KINDS[1:]},
        "STANDBY needs the kind of game, one of: bid, ice, priority, bluff; for example, STANDBY bid.",
    ),
    Why.NO_STANDBY: (
        {"title": "Game of Pure Skill"},
        (
            "Game of Pure Skill's rules give the seat of a player who leaves to a bot for good: nobody takes it "
            "over, so it has no standby list."
        ),
    ),
    Why.UNKNOWN_ZONE: (
        {"zone": "Mars/" + "z" * 50},
        (
            f'"Mars/{"z" * 35}" is not a time zone I know. Use an '
            "Area/City name such as Europe/Berlin or America/New_York, or UTC."
        ),
    ),
    Why.NO_OFFER: (
        {"word": "accept"},
        "ACCEPT answers an offer of the referee's (a seat, a new address to confirm, a stand-in's turn): "
        "write it in a reply to that offer's mail.",
    ),
    Why.OFFER_CLOSED: (
        {"reason": "that offer was expired already, at 2026-12-02T09:00:00Z"},
        "That offer was expired already, at 2026-12-02T09:00:00Z.",
    ),
    Why.AWAY_USAGE: (
        {"problem": "say until when"},
        "Say until when. Write it as AWAY 5d, AWAY until 2026-12-10, or AWAY 2026-12-03 to 2026-12-10 (a date "
        "is the whole day, in your TIMEZONE if you set one, else UTC).",
    ),
    Why.AWAY_OVER: (
        {"start": "2026-12-03T00:00:00Z", "until": "2026-11-30T00:00:00Z"},
        "That time away would end (2026-11-30 00:00 UTC) before it begins (2026-12-03 00:00 UTC): nothing was changed.",
    ),
    Why.AWAY_ALREADY: (
        {"start": "2026-12-03T00:00:00Z", "until": "2026-12-11T00:00:00Z"},
        "You are away from 2026-12-03 00:00 UTC until 2026-12-11 00:00 UTC already, and one time away may not "
        "overlap another: send BACK first to end it, or ask for a time after it.",
    ),
    Why.AWAY_TOO_LONG: (
        {"asked": timedelta(days=8), "left": timedelta(days=5), "most": timedelta(days=15)},
        "That is 8 days away, and your seat may be away 15 days in this game in all: you have 5 days of it "
        "left. Ask for that much at most.",
    ),
    Why.NOT_AWAY: (
        {},
        "You are not away, and no time away of yours is to come: there is nothing to end. (AWAY says you will be.)",
    ),
    Why.ADDRESS_REFUSED: (
        {"reason": "game 1 has a seat played from bob@example.org already"},
        "Game 1 has a seat played from bob@example.org already. Nothing was changed.",
    ),
    Why.DELEGATE_HOW: (
        {"said": "next week"},
        '"next week" is no date, time or duration. Write DELEGATE, your stand-in\'s address and until when: '
        "DELEGATE bob@example.org UNTIL 2026-12-10 (a date, or a time such as 2026-12-10T18:00, in your TIMEZONE, "
        "else UTC), or DELEGATE bob@example.org 5d; DELEGATE NONE ends it.",
    ),
    Why.DELEGATE_WHO: (
        {"address": "bob@example.org", "problem": "plays", "seat": 1},
        "bob@example.org plays seat 2 of this game: nobody plays two seats of one game.",
    ),
    Why.DELEGATE_WHEN: (
        {"until": "2026-12-31T00:00:00Z", "problem": "long", "longest": timedelta(days=30)},
        "A stand-in may play a seat for 30 days at most (this referee's longest_delegation), and "
        "2026-12-31 00:00 UTC is further off: ask for less.",
    ),
    Why.DELEGATE_IN_FORCE: (
        {"address": "dora@example.net", "until": "2026-12-10T00:00:00Z"},
        "dora@example.net stands in for your seat until 2026-12-10 00:00 UTC already: DELEGATE NONE ends that "
        "turn, then you may name another.",
    ),
    Why.DELEGATE_TOO_OFTEN: (
        {"most": 3},
        "Your seat has asked 3 people to stand in for it within a day, which is as many as it may: ask again tomorrow.",
    ),
    Why.NO_STAND_IN: ({}, "Your seat has no stand-in, and has asked nobody to be one: there is nothing to end."),
    Why.STAND_IN_CANNOT: (
        {"word": "resign"},
        "RESIGN is for the seat's own player: as its stand-in you may move for it and ask for its STATUS and HAND.",
    ),
    Why.STAND_IN_OVER: (
        {"game": 7, "seat": 0, "at": "2026-12-10T00:00:00Z"},
        "Your turn as stand-in for seat 1 of game 7 ended at 2026-12-10 00:00 UTC: its player plays it again, and "
        "your mail no longer counts for it. Thank you for standing in.",
    ),
    Why.UNKNOWN_LEVEL: (
        {"level": "sometimes"},
        '"sometimes" is not a level of mail: NOTIFY EVERY (every turn\'s result), NOTIFY TURNS (your turns and '
        "each round's result) or NOTIFY DIGEST (your turns and one mail a day).",
    ),
    Why.TELL_HOW: (
        {},
        "Write TELL, whom, then your words: TELL bob <words>, TELL 2 <words> (a seat's number) or TELL ALL "
        "<words>; GREY after the name sends them unsigned, where the game allows it.",
    ),
    Why.TELL_WHO: (
        {"name": "zed", "problem": "nobody", "names": ["bob", "carol"]},
        '"zed" names no seat of this game. You may write to bob, carol (by name, address or seat number), or to ALL.',
    ),
    Why.PRESS_NONE: (
        {"title": "Game of Pure Skill", "rule": 'rule 7: "Players may not discuss or collude on strategy or bids."'},
        "This game relays no table talk: Game of Pure Skill's rule 7: \"Players may not discuss or collude on "
        'strategy or bids." Nothing was passed on.',
    ),
    Why.PRESS_SIGNED: (
        {"title": "Bid!"},
        "This game relays signed table talk only (white press): leave out GREY and your words go signed with "
        "your name.",
    ),
    Why.PRESS_TOO_LONG: (
        {"size": 5000, "most": 4000},
        "Your words are 5000 characters long; one message of table talk may have 4000 at most. Nothing was passed on.",
    ),
    Why.PRESS_LIMIT: (
        {"most": 20, "at": "2026-12-10T08:00:00Z"},
        "Your seat has sent 20 messages of table talk within a day, as many as it may: the next may go from "
        "2026-12-10 08:00 UTC. Nothing was passed on.",
    ),
    Why.KEEPERS_ONLY: (
        {"word": "extend"},
        (
            "EXTEND is a keeper's command: only the keepers this referee names may use it, in a reply to "
            "the referee's mail to them as keeper."
        ),
    ),
    Why.KEEPER_USAGE: (
        {"usage": "CANCEL <game> <why>", "example": "CANCEL 7 the club closed", "problem": "say why."},
        "Say why. Write it as CANCEL <game> <why>, for example: CANCEL 7 the club closed",
    ),
    Why.KEEPER_REFUSED: ({"reason": "game 7 is paused already"}, "Game 7 is paused already."),
}


@pytest.fixture
def composer(config) -> Composer:
    return Composer(config)


def test_every_code_has_its_wording_and_every_wording_a_code(composer):
    module = composer.env.get_template(REFUSALS).module
    macros = {name for name in dir(module) if isinstance(getattr(module, name), jinja2.runtime.Macro)}
    assert macros == {code.value for code in Why}
    assert set(EXAMPLES) == set(Why)


@pytest.mark.parametrize("code", list(Why), ids=lambda code: code.value)
def test_each_code_says_what_the_code_said_before(composer, code):
    facts, sentence = EXAMPLES[code]
    assert composer.refusal(Refusal(code, **facts)) == sentence


def test_a_refusal_gives_its_times_in_the_readers_zone_and_to_the_second_where_asked(composer):
    facts = {"received": RECEIVED, "phase": "round 2", "closed": "2026-11-21T06:14:05Z", "seconds": True}
    assert composer.refusal(Refusal(Why.AFTER_CLOSE, **facts), "Europe/Berlin") == (
        "Your mail reached the server at 2026-11-21 06:14:26 UTC (07:14:26 Europe/Berlin), after round 2 closed "
        "(2026-11-21 06:14:05 UTC (07:14:05 Europe/Berlin), when its settle time after the last move ran out)."
    )
    facts = {"most": 20, "at": "2026-12-10T08:00:00Z"}
    assert "from 2026-12-10 08:00 UTC (09:00 Europe/Berlin)." in composer.refusal(
        Refusal(Why.PRESS_LIMIT, **facts), "Europe/Berlin"
    )


def test_rules_names_an_example_and_join_does_not(composer):
    assert composer.refusal(Refusal(Why.NO_SUCH_GAME, kinds=KINDS, command="rules")) == (
        "There is no game of that name; the games are: pure-skill, bid, ice, priority, bluff. "
        "For example, RULES pure-skill."
    )


def test_a_fact_missing_or_unknown_is_an_error_not_a_blank(composer):
    with pytest.raises(jinja2.UndefinedError):
        composer.refusal(Refusal(Why.GAME_ENDED))
    with pytest.raises(TypeError):
        composer.refusal(Refusal(Why.GAME_ENDED, game=1, seat=2))


def test_a_keeper_may_reword_a_refusal_in_their_own_templates(config, tmp_path):
    own = tmp_path / "own" / "mail"
    own.mkdir(parents=True)
    env = Composer(config).env
    shipped = env.loader.get_source(env, REFUSALS)[0]
    (own / "refusals.txt.j2").write_text(
        shipped.replace("Game {{ game }} has ended.{% endmacro %}", "Partie {{ game }} ist vorbei.{% endmacro %}"),
        encoding="utf-8",
    )
    assert (
        Composer(replace(config, templates=tmp_path / "own")).refusal(Refusal(Why.GAME_ENDED, game=7))
        == "Partie 7 ist vorbei."
    )
