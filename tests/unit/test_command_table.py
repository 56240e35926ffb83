"""The command table (issue 31, item 3): each command word has one entry in
``referee.desk.COMMANDS``, and everything else about the commands follows
from it: the words a line is read against, the words that count only said
alone, which mail needs a reply token, what stops the reading, the handler
that carries a line out, and HELP.  Here the table is held to being the one
source: HELP lists what it holds and nothing else, the desk reaches each
handler only through it, and each fact it states is what the desk does."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest
from conftest import PLAYERS, body_of, make_mail, reply

import referee.desk
from referee.desk import COMMANDS, CommandTable, Desk, Entry, Who
from referee.engine import Engine

ALICE = PLAYERS[0]
STRANGER = "dave@example.net"
DESK = Path(inspect.getfile(referee.desk))
PLAYING = Path(__file__).parents[2] / "docs" / "playing.md"
# A line that uses each command as a player would write it (an argument where one is needed)
EXAMPLES = {
    "join": "JOIN pure-skill",
    "standby": "STANDBY bid",
    "timezone": "TIMEZONE Europe/Berlin",
    "rules": "RULES pure-skill",
    "address": "ADDRESS alice@example.net",
    "watch": "WATCH 2",  # (a game alice does not play in: the test makes one)
    "unwatch": "UNWATCH ALL",
}


def example(entry: Entry) -> str:
    return entry.example or EXAMPLES.get(entry.word, entry.word.upper())


EVERYONES = [entry for entry in COMMANDS.entries if entry.who is not Who.KEEPER]  # what a player's line is read for


def last_body(engine: Engine, to: str) -> str:
    """The text of the newest mail queued to ``to``."""
    rows = [row for row in engine.store.outbox(None) if row["recipients"] == [to]]
    assert rows, f"nothing queued to {to}"
    return body_of(rows[-1]["raw"])


def help_answer(engine: Engine, clock, sender: str = STRANGER, in_game: bool = False) -> str:
    """The HELP answer's text, as a stranger (or a seat, in a reply) reads it."""
    raw = (
        reply(engine, sender, "help", received=clock())
        if in_game
        else make_mail(sender, "help", subject="Hello", received=clock())
    )
    assert engine.ingest(raw).code == "done"
    return last_body(engine, sender).split("\n-- \n")[0]


def listed(text: str) -> list[str]:
    """The command words HELP lists: each row's first word, and the words
    named as its synonyms ("END (or QUIT)")."""
    found = []
    for match in re.finditer(r"^  ([A-Z]+)\b([^a-z\n]*?\(or ([A-Z ]+)\))?", text, re.MULTILINE):
        found.append(match[1].lower())
        found += [word.lower() for word in match[3].split(" or ")] if match[3] else []
    return found


@pytest.fixture
def game(engine: Engine) -> int:
    return engine.new_game("pure-skill", PLAYERS)


# -- the table is the one source -----------------------------------------------------------


@pytest.mark.parametrize("in_game", [False, True])
def test_help_lists_every_command_word_of_the_table_and_no_other(engine, clock, game, in_game):
    text = help_answer(engine, clock, ALICE if in_game else STRANGER, in_game)
    words = [word for entry in EVERYONES for word in entry.words]
    move = "bid"  # the move's row (a game's own words), the one row that is not a command
    assert listed(text) == [move, *words]  # in the table's order, each once; a keeper's, never
    for entry in EVERYONES:
        assert re.search(rf"^  {re.escape(entry.usage)}[ \n]", text, re.M)  # a long one on a line of its own
        assert " ".join(entry.help.split()) in " ".join(text.split())  # its line, whole (wrapped)


def test_help_says_which_words_count_only_said_alone_as_the_table_does(engine, clock):
    text = " ".join(help_answer(engine, clock).split())
    alone = [word.upper() for entry in EVERYONES if entry.alone for word in entry.words]
    assert f"{', '.join(alone[:-1])} and {alone[-1]} count only on a line of their own" in text


def test_every_entry_has_its_words_a_handler_and_a_help_line():
    seen: set[str] = set()
    for entry in COMMANDS.entries:
        assert isinstance(entry.who, Who)
        assert all(word.isalpha() and word.islower() for word in entry.words)
        assert not seen & set(entry.words), f"{entry.word}: a word of two entries"
        seen |= set(entry.words)
        assert entry.help.strip() and "\n" not in entry.help
        assert inspect.isfunction(entry.handler) and getattr(Desk, entry.handler.__name__) is entry.handler
        assert not entry.stops or entry.alone, f"{entry.word} stops the reading, so counts only said alone"
        assert (entry.who is Who.KEEPER) == bool(entry.example), f"{entry.word}: a keeper's shows an example"
        assert entry.who is not Who.KEEPER or not (entry.alone or entry.synonyms or entry.keeper_help)
        for word in entry.words:
            assert COMMANDS.entry(word) is entry
    keepers = {w for e in COMMANDS.entries if e.who is Who.KEEPER for w in e.words}
    assert COMMANDS.vocabulary.words.keys() == seen - keepers  # a player's line is never read for a keeper's word
    assert COMMANDS.keeper_words == keepers
    assert COMMANDS.vocabulary.alone == {w for e in COMMANDS.entries if e.alone for w in e.words}


def test_a_word_given_two_entries_is_refused_when_the_table_is_built():
    with pytest.raises(ValueError, match="'quit' has two entries"):
        CommandTable(
            Entry("end", Who.ANYONE, Desk._do_end, "stop", synonyms=("quit",)),
            Entry("quit", Who.ANYONE, Desk._do_end, "stop"),
        )


def _desk_tree() -> ast.Module:
    return ast.parse(DESK.read_text(encoding="utf-8"))


def test_the_desk_reaches_each_handler_only_through_the_table():
    tree = _desk_tree()
    handlers = {entry.handler.__name__ for entry in COMMANDS.entries}
    desk = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Desk")
    table = next(
        n
        for n in tree.body
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "COMMANDS" for t in n.targets)
    )
    inside_table = {id(node) for node in ast.walk(table)}
    named = [
        (node.attr, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in handlers and id(node) not in inside_table
    ]
    assert named == []  # no self._do_status(...) beside the table's own
    calls = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "eval")
    ]
    assert calls == []  # no dispatch by a name made up from the word
    # every method that carries a line out is the table's, but the move's (a line that is no command)
    methods = {n.name for n in desk.body if isinstance(n, ast.FunctionDef) and n.name.startswith("_do_")}
    assert methods - handlers == {"_do_move"}


def test_the_mail_reader_keeps_no_word_list_of_its_own():
    """referee.mail.commands reads a line against the table's vocabulary alone."""
    from referee.mail import commands

    tree = ast.parse(Path(inspect.getfile(commands)).read_text(encoding="utf-8"))
    strings = {
        node.value.lower() for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    assert strings & COMMANDS.vocabulary.words.keys() == set()


def test_playing_md_lists_every_command_of_the_table():
    section = PLAYING.read_text(encoding="utf-8").split("## Commands", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    documented = {word.lower() for row in rows for word in re.findall(r"`([A-Z]+)\b", row.split(" | ")[0])}
    assert documented == {"bid"} | COMMANDS.vocabulary.words.keys()
    # "HELP, LIST, JOIN and RULES need no code": the commands anyone may use, but those that only stop the reading
    said = re.search(r"^- ((?:[A-Z]+, )*[A-Z]+ and [A-Z]+) need no code", section_of_code(), re.MULTILINE)
    assert said is not None
    anyone = {e.word for e in COMMANDS.entries if e.who is Who.ANYONE and not e.stops}
    assert set(re.split(r", | and ", said[1].lower())) == anyone


def section_of_code() -> str:
    return PLAYING.read_text(encoding="utf-8").split("## Your private reply address", 1)[1].split("\n## ", 1)[0]


# -- what each entry says is what the desk does --------------------------------------------


@pytest.mark.parametrize("entry", COMMANDS.entries, ids=lambda e: e.word)
def test_who_may_use_a_command_decides_whether_a_players_from_needs_her_token(engine, clock, game, entry):
    """A mail from a seat's From without its token: a command anyone may use
    is answered; a player's command is not carried out, and she is told."""
    if entry.word == "watch":
        engine.new_game("pure-skill", ["dan@example.org", "erin@example.org", "fay@example.org"])
    outcome = engine.ingest(make_mail(ALICE, example(entry), subject="Hello", received=clock()))
    if entry.who is Who.ANYONE:
        assert "no valid reply token" not in outcome.detail
        assert outcome.code == "done"
    else:
        assert (outcome.code, outcome.detail) == ("refused", f"no valid reply token; {ALICE} was told")


@pytest.mark.parametrize("word", [w for e in COMMANDS.entries if e.alone for w in e.words])
def test_a_word_said_alone_counts_only_on_a_line_of_its_own(word):
    assert COMMANDS.read(f"{word.capitalize()}.").word == word
    assert COMMANDS.read(f"I {word}").word == word
    assert COMMANDS.read(f"I'll {word} if it comes to that").word == ""
    assert COMMANDS.read(f"{word}?").word == ""


@pytest.mark.parametrize("word", [w for e in EVERYONES if not e.alone for w in e.words])
def test_a_word_not_said_alone_counts_in_a_line_too(word):
    assert COMMANDS.read(f"{word.upper()} please").word == word


@pytest.mark.parametrize("word", [w for e in COMMANDS.entries if e.stops for w in e.words])
def test_a_word_that_stops_the_reading_leaves_the_lines_below_unread(engine, clock, game, word):
    engine.ingest(reply(engine, ALICE, f"status\n{word.upper()}\nbid 5\nhand", received=clock()))
    body = last_body(engine, ALICE)
    assert re.findall(r"^> (.*)$", body, re.MULTILINE) == ["status", word.upper()]
    assert engine.store.moves(game) == []


def test_a_synonym_is_quoted_back_as_said_to_mail_that_proves_nothing(engine, clock):
    for entry in COMMANDS.entries:
        for word in entry.synonyms:
            engine.ingest(make_mail(STRANGER, word, subject="Hello", received=clock()))
            assert f"> {word.upper()}\n" in last_body(engine, STRANGER)
