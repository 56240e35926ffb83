"""What people type and how their clients quote, read back to the move they
meant (referee.rules.reading, referee.mail.commands): for every game, every
legal move in every decoration and every quote style reads back to itself,
and no decoration of a quoted example is ever read as a move."""

from __future__ import annotations

import html
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.mail.commands import own_lines
from referee.mail.parse import html_to_text
from referee.rules import GAMES, Game, MoveError, Rng
from referee.rules.reading import clean, move_line

KINDS = sorted(GAMES)
# 200 examples of each property; the states they draw are cached, so it stays a few seconds
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- states to play in -------------------------------------------------------------

_STATES: dict[tuple[str, int, int], object] = {}


def reached(kind: str, seed: int, steps: int):
    """A state of ``kind`` after ``steps`` phases of random play from ``seed``."""
    key = (kind, seed, steps)
    if key not in _STATES:
        game = GAMES[kind]
        state = game.setup(game.min_seats, Rng(seed.to_bytes(4, "big"), "setup"), game.check_options({}))
        play = Rng(seed.to_bytes(4, "big"), "play")
        for _ in range(steps):
            phase = game.phase(state)
            if phase is None:
                break
            state, _ = game.resolve(state, {s: game.random_move(state, s, play) for s in phase.movers}, play)
        _STATES[key] = state
    return _STATES[key]


@st.composite
def positions(draw, kinds=KINDS):
    """(game, state, seat, a legal move of the seat) somewhere in a game."""
    kind = draw(st.sampled_from(kinds))
    game = GAMES[kind]
    state = reached(kind, draw(st.integers(0, 5)), draw(st.integers(0, 40)))
    phase = game.phase(state)
    if phase is None:  # the game ended early: its first phase instead
        state = reached(kind, 0, 0)
        phase = game.phase(state)
    seat = draw(st.sampled_from(phase.movers))
    legal = game.legal_moves(state, seat)
    return game, state, seat, legal[draw(st.integers(0, len(legal) - 1))]


# -- how people decorate a line -------------------------------------------------------


def full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" if c == " " else c for c in text)


def with_invisibles(text: str) -> str:
    return "\ufeff" + text.replace(" ", " \u200b", 1).replace("d", "\u200dd", 1)


CASES = {"as is": str, "lower": str.lower, "upper": str.upper, "capitalised": str.capitalize}
SPACING = {
    "plain": str,
    "nbsp": lambda t: t.replace(" ", "\u00a0"),
    "zero-width": with_invisibles,
    "full-width": full_width,
    "doubled": lambda t: t.replace(" ", "  "),
}
VERB_MARKS = {
    "none": "{verb} {rest}",
    "colon": "{verb}: {rest}",
    "tight colon": "{verb}:{rest}",
    "dash": "{verb} - {rest}",
    "arrow": "{verb} -> {rest}",
    "quoted argument": '{verb} "{rest}"',
    "bold verb": "*{verb}* {rest}",
}
LEAD_INS = [
    "",
    "I ",
    "I'll ",
    "I'd like to ",
    "ok, ",
    "Please ",
    "so ",
    "Hi referee, ",
    "Thanks! ",
    "OK - ",
    "I'm going to ",
]
WRAPS = [
    "{}",
    "*{}*",
    "**{}**",
    "_{}_",
    '"{}"',
    "'{}'",
    "\u201c{}\u201d",
    "({})",
    "[{}]",
    "`{}`",
    "- {}",
    "* {}",
    "\u2022 {}",
    "1. {}",
    "2) {}",
    "{}.",
    "{}!",
    "{} !!",
    "{}...",
    "{}, please",
    "{} thanks",
    "{} - good luck!",
    "{} -- Alice",
    "{} :-)",
    "{} \U0001f44d",
    "~~bid 1~~ {}",
]


@st.composite
def typed(draw, game: Game, move_text: str) -> str:
    """The move's text as a person might type it."""
    verb, _, rest = move_text.partition(" ")
    if rest:
        line = draw(st.sampled_from(list(VERB_MARKS.values()))).format(verb=verb, rest=rest)
    else:
        line = verb
    line = draw(st.sampled_from(LEAD_INS)) + line
    if verb in ("bid",) and rest and draw(st.booleans()):
        line = f"My {verb} is {rest}"
    line = draw(st.sampled_from(WRAPS)).format(line)
    line = draw(st.sampled_from(list(CASES.values())))(line)
    return draw(st.sampled_from(list(SPACING.values())))(line)


# -- how clients quote ---------------------------------------------------------------

ATTRIBUTIONS = [
    "",
    "On Sat, 21 Nov 2026 at 12:00, Referee <referee@example.org> wrote:",
    "Referee <referee@example.org> writes:",
    "referee@example.org wrote:",
    "Le sam. 21 nov. 2026 à 12:00, Referee <referee@example.org> a écrit :",
    "Am Sa., 21. Nov. 2026 um 12:00 Uhr schrieb Referee <referee@example.org>:",
    "Quoting Referee <referee@example.org>:",
    "* Referee <referee@example.org> [2026-11-21 12:00]:",
    "2026年11月21日(土) 12:00 Referee <referee@example.org>:",
]
MARKS = ["> ", ">", "| ", ": ", "\t", "   ", "    ", "referee> "]


def prompt(examples: list[str]) -> list[str]:
    """A prompt of the referee's, with example moves as its mails show them."""
    return [
        "Round 1 of game 1 is open.",
        "",
        "Your hand: A 2 3 4 5 6 7 8 9 10 J Q K",
        "",
        "Reply to this mail with one line, for example:",
        "",
        *[f"    {example}" for example in examples],
        "",
        "Deadline: 2026-11-24 12:00 UTC (in 3 days).",
        "",
        "-- ",
        "Game 1, refereed by mail at referee@example.org.",
    ]


def quoted(lines: list[str], style: tuple[str, str]) -> str:
    attribution, mark = style
    body = [f"{mark}{line}" if line or mark.strip() else mark.rstrip(" ") for line in lines]
    return "\n".join(([attribution, ""] if attribution else []) + body)


def quoted_html(lines: list[str]) -> str:
    inner = "<br>".join(html.escape(line) for line in lines)
    return f'<div dir="ltr">{{own}}</div><div class="gmail_quote"><blockquote>{inner}</blockquote></div>'


styles = st.tuples(st.sampled_from(ATTRIBUTIONS), st.sampled_from(MARKS))


def moves_read(game: Game, state, seat: int, lines: list[str]) -> list:
    found = []
    for line in lines:
        try:
            found.append(game.read_move(state, seat, line))
        except MoveError:
            continue
    return found


# -- the properties ------------------------------------------------------------------


@PROPERTY
@given(data=st.data(), position=positions())
def test_every_legal_move_in_every_decoration_reads_back_to_itself(data, position):
    game, state, seat, move = position
    line = data.draw(typed(game, game.move_text(move)))
    assert game.read_move(state, seat, line) == move, f"{line!r} ({game.move_text(move)!r})"


@PROPERTY
@given(
    data=st.data(),
    position=positions(),
    style=styles,
    placement=st.sampled_from(["top", "bottom", "inline"]),
    known=st.booleans(),
)
def test_a_decorated_move_in_a_reply_in_every_quote_style_is_the_one_move_read(data, position, style, placement, known):
    game, state, seat, move = position
    others = [m for m in game.legal_moves(state, seat) if m != move][:3]
    examples = [data.draw(typed(game, game.move_text(m))) for m in others]
    own = data.draw(typed(game, game.move_text(move)))
    text = prompt(examples)
    quote = quoted(text, style)
    if placement == "top":
        body = f"{own}\n\n{quote}\n"
    elif placement == "bottom":
        body = f"{quote}\n\n{own}\n\n-- \nAlice\n"
    else:
        half = len(quote.splitlines()) // 2
        lines = quote.splitlines()
        body = "\n".join([*lines[:half], "", own, "", *lines[half:]])
    lines = own_lines(body, answered=text if known else ())
    assert moves_read(game, state, seat, lines) == [move], body


@PROPERTY
@given(
    data=st.data(),
    position=positions(),
    style=styles,
    known=st.booleans(),
    greeting=st.sampled_from(["", "Thanks!", "Hi referee,"]),
)
def test_no_decoration_of_a_quoted_example_is_ever_read_as_a_move(data, position, style, known, greeting):
    game, state, seat, _ = position
    legal = game.legal_moves(state, seat)
    examples = [data.draw(typed(game, game.move_text(m))) for m in legal[:4]]
    text = prompt(examples)
    body = f"{greeting}\n\n{quoted(text, style)}\n"
    assert moves_read(game, state, seat, own_lines(body, answered=text if known else ())) == [], body


@PROPERTY
@given(data=st.data(), position=positions())
def test_a_move_in_html_mail_above_a_blockquote_is_read_and_the_quote_is_not(data, position):
    game, state, seat, move = position
    others = [m for m in game.legal_moves(state, seat) if m != move][:3]
    own = data.draw(typed(game, game.move_text(move)))
    page = quoted_html(prompt([game.move_text(m) for m in others])).replace("{own}", html.escape(own))
    assert moves_read(game, state, seat, own_lines(html_to_text(page))) == [move]


# -- the grammar, case by case ---------------------------------------------------------


def pure_skill_state():
    return reached("pure-skill", 0, 0)


@pytest.mark.parametrize(
    ("line", "card"),
    [
        ("bid 7", "7"),
        ("Bid: King.", "K"),
        ("bid - Q!", "Q"),
        ("*bid 4*", "4"),
        ("**bid J**", "J"),
        ('"bid 8"', "8"),
        ("(bid 3)", "3"),
        ("- bid 6", "6"),
        ("1. bid 2", "2"),
        ("I bid the 10.", "10"),
        ("My bid is Queen.", "Q"),
        ("play the jack", "J"),
        ("bid Queen of hearts", "Q"),
        ("bid ｑ", "Q"),
        ("ｂｉｄ\u3000７", "7"),
        ("bid\u00a07", "7"),
        ("b\u200bid 7", "7"),
        ("BID: ACE", "A"),
        ("Ok, bid 7 please", "7"),
        ("I'd like to bid nine, thanks", "9"),
        ("my move: bid 5", "5"),
        ("Move: bid 5", "5"),
        ("bid:K", "K"),
        ("bid \u201cK\u201d", "K"),
        ("my choice is to play the king", "K"),
        ("I'll play my Ace", "A"),
        ("bid A", "A"),
        ("• bid 9", "9"),
        ("bid=7", "7"),
        ("bid -> K", "K"),
        ("_bid 7_", "7"),
        ("bid 7 thank you", "7"),
        ("Bid ten of Hearts!", "10"),
        ("bid \U0001d7d5", "7"),
        ("Hi referee, bid K", "K"),
        ("Thanks! bid 9", "9"),
        ("OK - bid 4", "4"),
        ("Dear referee, play the 5", "5"),
        ("bid K - A.", "K"),
        ("bid K -- Alice", "K"),
        ("bid 3 - good luck!", "3"),
        ("bid K \U0001f44d", "K"),
        ("bid 8 :-)", "8"),
        ("I'm going to bid 6", "6"),
        ("I am bidding the king", "K"),
        ("bidding: 2", "2"),
        ("My bid for this round is 7", "7"),
        ("bid K\u2665", "K"),
        ("bid \u26657", "7"),
        ("bid->Q", "Q"),
        ("Actually, bid 8", "8"),
        ("Sorry, I meant bid 8", "8"),
        ("No wait, bid 8", "8"),
        ("Correction: bid 8", "8"),
        ("PS: bid 8", "8"),
        ("~~bid 7~~ bid 8", "8"),
    ],
)
def test_a_pure_skill_bid_as_people_write_it(line, card):
    game = GAMES["pure-skill"]
    assert game.move_text(game.read_move(pure_skill_state(), 0, line)) == f"bid {card}"


@pytest.mark.parametrize(
    "line",
    [
        "King",  # no verb: suggested, never played
        "bid K or Q",  # two cards
        "I don't bid 7",  # a sentence, not a move
        "bid 7 and then bid 8",
        "I think bid 7",
        "bid K of spades",  # not her suit
        "bid K\u2660",  # the same, as a symbol
        "bid 7?",  # a question
        "~~bid 7~~",  # taken back
        "If I lose, bid K",  # a sentence
        "bid K - no, Q",  # what follows a dash is dropped only when it signs off
        "bid K - no wait, bid Q",
    ],
)
def test_what_is_not_plainly_one_bid_is_no_bid(line):
    with pytest.raises(MoveError):
        GAMES["pure-skill"].read_move(pure_skill_state(), 0, line)


@pytest.mark.parametrize(
    ("kind", "line", "move"),
    [
        ("bid", "Bid: 4!", "bid 4"),
        ("bid", "- bid ace", "bid 1"),
        ("bid", "my bid is 2", "bid 2"),
        ("bid", "*PAWN*", "pawn"),
        ("bid", "I play my pawn.", None),
        ("bid", "bid null.", "bid 0"),
        ("bid", "pawn 3", None),
        ("pure-skill", "I'll play the Queen of Hearts.", "bid Q"),
        ("bid", "use my pawn", "pawn"),
        ("bid", "bid pawn", "pawn"),
    ],
)
def test_other_games_moves_as_people_write_them(kind, line, move):
    game = GAMES[kind]
    state = reached(kind, 0, 0)
    if move is None:
        with pytest.raises(MoveError):
            game.read_move(state, 0, line)
        return
    assert game.move_text(game.read_move(state, 0, line)).replace("ace", "1").replace("null", "0") == move


def test_a_tie_breaks_coins_as_people_say_them():
    game = GAMES["bid"]
    state = next(s for seed in range(40) for steps in range(20) if (s := reached("bid", seed, steps)).stage == "coins")
    seat = game.phase(state).movers[0]
    assert state.coins[seat] >= 1
    for line, count in (("1 coin", 1), ("one coin", 1), ("no coins", 0), ("zero coins", 0), ("coins 1", 1)):
        assert game.read_move(state, seat, line) == ("coins", (count,)), line


@pytest.mark.parametrize("kind", ["priority", "bluff"])
def test_pass_it_on_is_no_pass(kind):
    game = GAMES[kind]
    state = next(
        s
        for steps in range(40)
        if (s := reached(kind, 0, steps))
        and game.phase(s)
        and ("pass",) in game.legal_moves(s, game.phase(s).movers[0])
    )
    seat = game.phase(state).movers[0]
    assert game.read_move(state, seat, "Pass.") == ("pass",)
    for line in ("Pass it on", "pass on my thanks to the others"):
        with pytest.raises(MoveError):
            game.read_move(state, seat, line)


@pytest.mark.parametrize(
    ("line", "suggestion"),
    [
        ("King", "bid K"),
        ("Queen of hearts", "bid Q"),
        ("bdi 7", "bid 7"),
        ("bid card 7", "bid 7"),
        ("bid a 7", "bid 7"),
        ("bid 7?", "bid 7"),
        ("bid K or Q", None),
        ("Hi,", None),
        ("7 please", "bid 7"),
    ],
)
def test_a_line_that_is_no_move_gets_the_one_legal_move_it_likely_meant(line, suggestion):
    game = GAMES["pure-skill"]
    assert game.suggest(pure_skill_state(), 0, line) == suggestion


def test_a_suggestion_is_only_ever_a_legal_move():
    game = GAMES["pure-skill"]
    state = reached("pure-skill", 0, 12)  # the last round: one card left
    (only,) = game.legal_moves(state, 0)
    for card in ("A", "2", "5", "J", "Q", "K"):
        suggestion = game.suggest(state, 0, card)
        assert suggestion in (None, game.move_text(only))


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("**bid K**", "bid K"),
        ("\u2022 bid 7", "bid 7"),
        ("bid\u00a0\u00a07 .", "bid 7"),
        ("\u201cbid K\u201d!", "bid K"),
        ("bid L\u2013red", "bid L-red"),
        ("(a) bid 3", "bid 3"),
        ("I'll pass.", "I'll pass"),
        ("exhibit red ancient tool, red modern art.", "exhibit red ancient tool, red modern art"),
        ("America/Port_of_Spain", "America/Port_of_Spain"),
    ],
)
def test_clean_takes_off_decoration_and_keeps_what_matters(text, plain):
    assert clean(text) == plain


def test_every_games_verbs_are_words_the_grammar_keeps():
    """A verb the cleaning changed could never be read."""
    for game in GAMES.values():
        for verb in game.verbs:
            assert clean(verb) == verb and unicodedata.is_normalized("NFKC", verb)
            assert move_line(f"*{verb.upper()}*", game.verbs) == game.verbs[verb]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "line",
    [
        "Thanks!",
        "Hi,",
        "ok",
        "yes please",
        "See you next round",
        "Alice",
        "Auction 1: 9 points, Ace of Moons",
        "I am away next week",
    ],
)
def test_a_line_with_no_move_in_it_gets_no_suggestion(kind, line):
    """A greeting is not a pass: a verb that takes nothing (pass, pawn) must
    not swallow the line it was put before."""
    game = GAMES[kind]
    for seed in range(3):
        for steps in (0, 7, 19):
            state = reached(kind, seed, steps)
            phase = game.phase(state)
            if phase is not None:
                assert game.suggest(state, phase.movers[0], line) is None, (seed, steps)


def bluff_stage(stage: str, want=lambda state, moves: True):
    """A Bluff Auction state at ``stage`` (and ``want``), its mover and legal moves."""
    game = GAMES["bluff"]
    for seed in range(30):
        for steps in range(60):
            state = reached("bluff", seed, steps)
            phase = game.phase(state)
            if phase is not None and state.stage == stage:
                seat = phase.movers[0]
                moves = game.legal_moves(state, seat)
                if want(state, moves):
                    return state, seat
    raise AssertionError(f"no {stage} stage reached")


@pytest.mark.parametrize("line", ["no reroll", "Don't reroll.", "reroll nothing", "keep everything", "Keep them all."])
def test_bluff_no_reroll_as_people_say_it(line):
    state, seat = bluff_stage("tools")
    assert GAMES["bluff"].read_move(state, seat, line) == ("reroll", ())


@pytest.mark.parametrize("line", ["place it in my museum", "Put it in my museum, please", "place", "keep it"])
def test_bluff_placing_a_tile_as_people_say_it(line):
    state, seat = bluff_stage("acquire", lambda state, moves: ("place",) in moves)
    assert GAMES["bluff"].read_move(state, seat, line) == ("place",)


def test_bluff_pass_this_time():
    state, seat = bluff_stage("bidding", lambda state, moves: ("pass",) in moves)
    assert GAMES["bluff"].read_move(state, seat, "I'll pass this time.") == ("pass",)


@pytest.mark.parametrize("line", ["I bid 1 coin", "bid 1 coin", "I'll bid one coin", "1", "Coins: 1."])
def test_a_tie_break_bid_of_one_coin_however_it_is_put(line):
    game = GAMES["bid"]
    state = next(s for seed in range(40) for steps in range(20) if (s := reached("bid", seed, steps)).stage == "coins")
    assert game.read_move(state, game.phase(state).movers[0], line) == ("coins", (1,))


@pytest.mark.parametrize("kind", ["ice", "priority", "bluff"])
@pytest.mark.parametrize("line", ["pass for now", "I'll pass this time", "Pass."])
def test_pass_with_words_that_say_nothing_more_is_a_pass_in_every_game(kind, line):
    game = GAMES[kind]
    state = next(
        s
        for seed in range(5)
        for steps in range(40)
        if (s := reached(kind, seed, steps))
        and game.phase(s)
        and ("pass",) in game.legal_moves(s, game.phase(s).movers[0])
    )
    assert game.read_move(state, game.phase(state).movers[0], line) == ("pass",)


@pytest.mark.parametrize(
    ("line", "move"),
    [
        ("Keep it for later", ("keep",)),
        ("No, keep it.", ("keep",)),
        ("Use the 1-shot", ("use",)),
        ("use my virtual dice", ("use",)),
        ("Yes, use it", ("use",)),
    ],
)
def test_bluff_one_shot_answers_as_people_give_them(line, move):
    state, seat = bluff_stage("oneshot")
    assert GAMES["bluff"].read_move(state, seat, line) == move


def test_a_greeting_before_a_move_without_its_verb_still_gets_the_suggestion():
    game = GAMES["priority"]
    state = reached("priority", 0, 0)
    seat = game.phase(state).movers[0]
    colour = state.in_play[0]
    assert game.suggest(state, seat, f"Hi referee, 1 on {colour} please") == f"play 1 on {colour}"
