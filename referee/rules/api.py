"""The rules API every game implements (see docs/rules-api.md).

A game is a pure state machine, in the spirit of OpenSpiel:

- ``setup`` deals the starting state from the game's own random stream;
- ``phase`` says who owes a move now (one seat for a turn, several at once for
  a sealed round), or ``None`` once the game is over;
- ``parse_move`` turns a line in the game's own form ("bid K") into a move,
  or raises ``MoveError`` with a sentence written for that player;
  ``read_move`` first brings what a person typed ("*I bid the King.*") to
  that form by the grammar every game shares (``referee.rules.reading``);
- ``resolve`` applies the phase's moves (plus any chance events, drawn from the
  stream it is given) and returns the next state and the public events;
- ``revealed`` says whose moves a resolution made public (the site shows
  only those before the end);
- ``random_move`` is the Ackanomic timeout rule, by default uniform over the
  legal moves (a game may rule otherwise);
- ``view`` is what one seat may know (``None``: what everyone may know);
- ``result`` is the final scores and winner.

Games import nothing of the referee's: no I/O, no clock, no global random.
States are immutable values, so replaying a record is just folding
``resolve`` over it.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar, cast

from referee.rules import reading
from referee.rules.rng import Rng


class GameState(Protocol):
    """What the engine requires of every game's state: a dataclass (an
    immutable value, changed by ``dataclasses.replace``) with the set of seats
    a random bot plays (``Game.replace_by_bot``)."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @property
    def bots(self) -> frozenset[int]: ...


State = TypeVar("State", bound=GameState)
Move = TypeVar("Move")
Value = TypeVar("Value")


def replace(value: Value, /, **changes: Any) -> Value:
    """``dataclasses.replace`` for the rules' frozen dataclasses, an eighth of
    its cost: a replay makes a new state for every change of every move
    (issue 36: about 5 microseconds a call, a tenth of a replay).  A dataclass
    whose fields are all set by its ``__init__`` and that has no
    ``__post_init__`` and no slots is made by copying its fields' values,
    which is all its ``__init__`` would do; any other goes to
    ``dataclasses.replace``.  A name that is not a field is a TypeError, as there."""
    kind = type(value)
    names = _COPIED[kind] if kind in _COPIED else _copied_fields(kind)
    if names is None:
        return dataclasses.replace(value, **changes)  # type: ignore[type-var]
    fields = value.__dict__
    if len(fields) == len(names):  # (it holds every field, so nothing else: copied whole, a third of the cost)
        # (a copy of the dict, given as the new value's: a third less than filling its own, field by field)
        copied = fields | changes
        if len(copied) != len(names):  # (a name that is not a field made it longer)
            raise TypeError(f"{kind.__name__} has no field {', '.join(sorted(set(changes) - names))}")
        made = object.__new__(kind)
        _set_dict(made, "__dict__", copied)
        return made
    if not names.issuperset(changes):
        raise TypeError(f"{kind.__name__} has no field {', '.join(sorted(set(changes) - names))}")
    made = object.__new__(kind)  # (something beside the fields, such as a cached_property's value: not copied)
    made.__dict__.update({name: fields[name] for name in names}, **changes)
    return made


_COPIED: dict[type, frozenset[str] | None] = {}  # a dataclass -> its fields, if copying them makes one
_set_dict = object.__setattr__  # (a frozen dataclass's own __setattr__ refuses; bound once: a call a change)


def _copied_fields(kind: type) -> frozenset[str] | None:
    if kind not in _COPIED:
        fields = dataclasses.fields(kind)
        plain = (
            not hasattr(kind, "__post_init__")
            and "__slots__" not in kind.__dict__
            and len(fields) == len(cast(Any, kind).__dataclass_fields__)  # (no InitVar nor ClassVar pseudo-fields)
            and all(field.init for field in fields)
        )
        _COPIED[kind] = frozenset(field.name for field in fields) if plain else None
    return _COPIED[kind]


# Words that say nothing in any game's move: "bid card 7", "bid a 7", "reroll my dice 1 3"
_NOISE = {
    "a",
    "an",
    "card",
    "cards",
    "tile",
    "tiles",
    "pyramid",
    "pyramids",
    "token",
    "my",
    "the",
    "of",
    "with",
    "me",
    "please",
    "now",
    "just",
    "then",
    "this",
    "round",
    "turn",
    "time",
    "for",
    "again",
}


# Words a sentence puts around a move it names ("Going with the 10 of hearts this round.", "Actually, make that
# bid 9. Sorry!", "I'll put in 1 coin"): a line that says nothing else names the move (see Game.suggest)
_AROUND_A_MOVE = _NOISE | {
    "i",
    "i'll",
    "ill",
    "i'm",
    "im",
    "i'd",
    "i've",
    "will",
    "would",
    "like",
    "to",
    "let's",
    "lets",
    "go",
    "going",
    "goes",
    "do",
    "doing",
    "make",
    "that",
    "it",
    "is",
    "be",
    "take",
    "pick",
    "choose",
    "put",
    "in",
    "up",
    "actually",
    "sorry",
    "oops",
    "ok",
    "okay",
    "so",
    "well",
    "think",
    "guess",
    "hmm",
    "um",
    "oh",
    "thanks",
    "here",
    "here's",
    "from",
    "spend",
    "offer",
    "coin",
    "coins",
}
# What a number may count in a sentence ("I'll put in 1 coin", "2 points", "3 cards"): a move named there must count
# it too ("coins 1"), so a count is never offered as a card or a tile ("bid ace", "bid A", "bid 3"); a plural only
# for cards, tiles and pyramids, as "the 3 tile" names one
_COUNTED_NOUNS = {
    "coin": "coin",
    "coins": "coin",
    "point": "point",
    "points": "point",
    "pts": "point",
    "cards": "cards",
    "tiles": "tiles",
    "pyramids": "pyramids",
}
# A number that names a round, a turn or a game, not a move ("round 3", "Round 3 of 13", "game #2")
_NUMBERED = re.compile(
    rf"\b(?:round|turn|game|auction)\s+#?(?:\d+|{'|'.join(reading.NUMBER_WORDS)})(?:\s+of\s+\d+)?\b", re.I
)
_PRONOUNS = {"one", "ones"}  # "the medium yellow one": after a word that is no number, "one" counts nothing
_TOGETHER = {"and", "&", "+", ","}  # between the parts of one move: "bid 3 and 5"
_SENTENCE_WORDS = 20  # a longer line is a letter, not a move written out
_NAMING_WORDS = 6  # the most words that name one move ("the 10 of hearts", "3 and 5")


_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "'": "&#39;", '"': "&#34;"})  # as markupsafe escapes


def escaped(value: object) -> str:
    """``value`` as text for a page, escaped as the site's templates escape
    it: a game's own wording for its table of phases is written in Python
    (a macro a turn cost more than the words), and must read the same."""
    return str(value).translate(_HTML)


class MoveError(ValueError):
    """A move that cannot be made now.  The message is addressed to the player."""


class OptionError(ValueError):
    """A game option that the game does not know or cannot take."""


# A phase label's round or auction ("Round 4 of 13", "Auction 8, turn 3"): see Game.round_of.
_ROUND_OR_AUCTION = re.compile(r"(Round|Auction)\s+\d+\b")

Timer = Literal["round", "turn", "decision"]  # a game's deadlines, one for each kind of phase


@dataclass(frozen=True)
class Phase:
    """One decision the game is waiting for.

    ``movers`` owe a move.  In a ``sealed`` phase they move at once and in
    secret, may replace their move until the phase closes, and nobody sees
    any move before the phase resolves.  A phase that is not sealed is a turn:
    its one mover's move is final and resolves it at once.  Each kind of
    phase waits as long as the game's deadline of that kind (see ``timer``).
    """

    label: str
    movers: tuple[int, ...]
    sealed: bool
    # Which of a game's deadlines applies: "round" (a sealed round), "turn",
    # or "decision" (a choice inside a resolution, such as a scoring offer).
    # Empty: "round" if sealed, else "turn".
    timer: Timer | Literal[""] = ""

    @property
    def deadline_kind(self) -> Timer:
        return self.timer or ("round" if self.sealed else "turn")


class Press(StrEnum):
    """What table talk a game relays (``games.press``; None: its kind's
    ``Game.press``): none, messages signed with the sender's seat name
    (white press), or also unsigned ones (grey press)."""

    NONE = "none"
    WHITE = "white"
    GREY = "grey"


@dataclass(frozen=True)
class Result:
    """The end of a game: a score per seat and the winning seat, if any."""

    scores: tuple[int, ...]
    winner: int | None


class Game(ABC, Generic[State, Move]):
    """The rules of one kind of game.  Subclasses are stateless."""

    kind: str  # short name used on the command line and in subject tags
    title: str
    min_seats: int
    max_seats: int
    move_word: str  # the verb players use, for help texts ("bid", "play", ...)
    example: str = ""  # a move as HELP shows it; default: the move word and 7
    move_words: tuple[str, ...] = ()  # every word a move may start with, when more than move_word
    synonyms: Mapping[str, str] = {}  # other words people use for a move word: {"play": "bid"}
    options: Mapping[str, Any] = {}  # option name -> default value
    # One line for each option: what it does and the values it takes
    # (`referee kinds` shows it beside the name and the default).
    option_help: Mapping[str, str] = {}
    # Options a game gained after games had been recorded without them: name ->
    # the value those games were played by, so that a game keeps the rules it
    # began with (Bluff's "rulings" edition).  See ``stored_options``.
    recorded_without: Mapping[str, Any] = {}
    filters: Mapping[str, Callable[..., str]] = {}  # name -> formatter, for this game's templates
    # Whether a resolved phase's moves may be published while the game runs
    # (the site, the JSON record); False keeps them until the end (Priority
    # Auction's played cards).  Its events are always public.  ``revealed``
    # decides phase by phase; this is its default.
    moves_public: bool = True
    # The game's own turn and decision deadlines, for when neither the keeper
    # nor the config sets them ({"turn": timedelta(hours=12)}); empty: the
    # round deadline serves.
    deadlines: Mapping[str, timedelta] = {}
    # The files the game brings, relative to its home: the folder of its
    # module, or for one of the referee's own games (in referee.rules) the
    # referee's shipped files (referee.resources.game_file).  The rule text
    # as its authors wrote it, the referee's rulings on it (markdown), and a
    # folder of templates holding mail/<kind>/ and site/<kind>/.
    rule_text: str = ""
    rulings_page: str = ""
    templates: str = "templates"
    # Whether a person may take over a seat a bot plays (`referee replace`):
    # False where the rules make a bot's seat a bot's for good (Pure Skill's
    # rule 8: bots are not players).
    bots_replaceable: bool = True
    # The table talk (TELL) a game of this kind relays unless its keeper or
    # its sign-up chose otherwise: white press, signed with the sender's seat
    # name; none where the rules forbid talk (Pure Skill's rule 7).
    press: Press = Press.WHITE
    # Where ``press`` is none by the rules: the rule, cited (a sentence with its stop), that TELL's
    # refusal names ('rule 7: "Players may not discuss ..."').
    press_rule: str = ""

    @property
    def verbs(self) -> dict[str, str]:
        """Every word a move may start with -> the move word it stands for."""
        return {**{word: word for word in self.move_words or (self.move_word,)}, **self.synonyms}

    def read_move(self, state: State, seat: int, line: str) -> Move:
        """The move a line a person typed asks for: the shared grammar brings
        it to the game's own form, which ``parse_move`` reads.  A question
        ("bid 7?") is no move, even when it names one."""
        first, *others = reading.move_lines(line, self.verbs)
        try:
            move = self.parse_move(state, seat, first)
        except MoveError:
            moves = self._readings(state, seat, others, parsed=True)
            if not moves:
                raise
            move = moves[0]
        if reading.is_question(line):
            raise MoveError(
                f"That is a question, so nothing was played. To play {self.move_text(move)}, "
                "reply with it alone, without the question mark."
            )
        return move

    def looks_like_move(self, line: str) -> bool:
        """Whether a line starts like one of this game's moves (so its
        MoveError, not "not a command", is the right answer to it)."""
        text = reading.move_line(line, self.verbs).lower()
        return any(text.startswith(word) for word in self.verbs)

    def suggest(self, state: State, seat: int, line: str) -> str | None:
        """The one legal move a line that is no move most likely meant, as
        its text: asked as a question ("bid 7?"), the verb left out ("King"
        -> "bid K"), the verb misspelt ("bdi 7"), words that say nothing in
        a move ("bid card 7"), a sentence that names one move and says nothing
        else ("Going with the 10 of hearts this round.", "Make it bid 6": see
        ``_named_in_sentence``).  None when no move or more than one comes so
        close: it is offered, never played, and never a move that drops a
        word that meant something ("bid K - A." is not "bid A") or that the
        verb alone would make ("Thanks!" is not "pass", "Cass" not "pass")."""
        line = _NUMBERED.sub(" ", line)
        text = reading.move_line(line, self.verbs)
        first, _, rest = text.partition(" ")
        verbs = list(dict.fromkeys(self.verbs.values()))
        readings = [text] if reading.is_question(line) else []
        greeted = reading.past_greeting(line)  # "Hi referee, 2 on red please"
        readings += [f"{verb} {said}" for said in (text, greeted) if said for verb in verbs]  # the verb left out
        readings += [greeted] if greeted else []
        misspelt = difflib.get_close_matches(first.lower(), self.verbs, 2, 0.6)
        readings += [f"{self.verbs[word]} {rest}" for word in misspelt if word != first.lower()]
        if first.lower() in self.verbs:  # "bid card 7", "bid a 7"
            readings.append(" ".join([first, *(w for w in rest.split() if w.lower() not in _NOISE)]))
        alone = set(self._readings(state, seat, verbs))  # "pass": what a verb reads as without the line
        counted = _counted(line)
        moves = {self.move_text(move) for move in self._readings(state, seat, readings) if move not in alone}
        moves = {move for move in moves if _counts(move, counted)}
        if not moves:
            moves = {move for move in self._named_in_sentence(state, seat, line, alone) if _counts(move, counted)}
        return moves.pop() if len(moves) == 1 else None

    def _named_in_sentence(self, state: State, seat: int, line: str, alone: set[Move]) -> set[str]:
        """The legal moves a sentence names ("Going with the 10 of hearts this round.", "Make it bid 6", "bid 3
        and 5", "I'll put in 1 coin"): none unless every move any run of its words reads as is one and the same,
        and the words around that run only say that a move is made (``_AROUND_A_MOVE``, a verb); so a line that
        names two moves ("bid 7, then 8 next round") or says more ("the 10 of diamonds" from the hearts) names
        none."""
        words = _without_pronouns(reading.words(line), set(self.verbs))
        saying = [at for at, word in enumerate(words) if word.strip(",.!;") not in _AROUND_A_MOVE | set(self.verbs)]
        if len(words) > _SENTENCE_WORDS or (saying and saying[-1] - saying[0] >= _NAMING_WORDS):
            return set()  # no one run covers what the line says besides making a move
        named: set[str] = set()
        around_only: set[str] = set()
        for start in range(len(words)):
            for end in range(start + 1, min(start + _NAMING_WORDS, len(words)) + 1):
                run = [w for w in words[start:end] if w.strip(",.!;") not in _TOGETHER]
                if not run or words[start] in _TOGETHER or words[end - 1].strip(",.!;") in _TOGETHER:
                    continue  # a shorter run reads the same
                said = " ".join(run)
                prefixed = [f"{verb} {said}" for verb in dict.fromkeys(self.verbs.values())]  # the verb left out
                moves = self._readings(state, seat, [said]) + [
                    move for move in self._readings(state, seat, prefixed) if move not in alone
                ]  # "pass" said is a move, "pass" put before "thanks" is not
                found = {self.move_text(move) for move in moves}
                named |= found
                outside = [w.strip(",.!;") for w in words[:start] + words[end:]]
                if all(w in _AROUND_A_MOVE or w in self.verbs for w in outside):
                    around_only |= found
                if len(named) > 1:
                    return set()
        return around_only if around_only == named else set()

    def _readings(self, state: State, seat: int, texts: list[str], parsed: bool = False) -> list[Move]:
        """The moves of those texts (``parsed``: in the game's own form) that read as one."""
        moves = []
        for text in texts:
            try:
                moves.append(self.parse_move(state, seat, text) if parsed else self.read_move(state, seat, text))
            except MoveError:
                continue
        return moves

    @property
    def seat_range(self) -> str:
        """How many seats the game takes, for people: "3" or "3 to 8"."""
        if self.min_seats == self.max_seats:
            return str(self.min_seats)
        return f"{self.min_seats} to {self.max_seats}"

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The full option set for a new game: defaults updated by ``options``."""
        unknown = set(options) - set(self.options)
        if unknown:
            raise OptionError(f"{self.kind} has no option {', '.join(sorted(unknown))}")
        return {**self.options, **options}

    def stored_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The options a stored game (games.db, a published record) was
        played by: what it recorded, and for an option added since, the value
        a game recorded without it had (``recorded_without``), not today's
        default."""
        return {**self.recorded_without, **options}

    @abstractmethod
    def setup(self, seats: int, rng: Rng, options: Mapping[str, Any]) -> State:
        """The starting state for ``seats`` players; chance events draw from ``rng``."""

    @abstractmethod
    def phase(self, state: State) -> Phase | None:
        """Who owes a move now, or ``None`` when the game is over."""

    @abstractmethod
    def legal_moves(self, state: State, seat: int) -> list[Move]:
        """Every move ``seat`` may make now, in a fixed order."""

    @abstractmethod
    def parse_move(self, state: State, seat: int, text: str) -> Move:
        """The move a line of text asks for; raises ``MoveError`` if it is not legal."""

    @abstractmethod
    def move_text(self, move: Move) -> str:
        """The canonical text of a move; ``parse_move`` reads it back unchanged."""

    @abstractmethod
    def resolve(self, state: State, moves: Mapping[int, Move], rng: Rng) -> tuple[State, list[dict[str, Any]]]:
        """Apply one move per mover of the current phase.

        Returns the next state and the public events of the resolution (what
        the announcement of this phase reports).
        """

    def revealed(self, state: State, moves: Mapping[int, Move], events: list[dict[str, Any]]) -> frozenset[int]:
        """The seats whose moves the resolution of ``moves`` in ``state``
        made public (``events`` is what it announced): their move texts may
        be published while the game runs; the others' stay secret until the
        end.  By default every seat's when ``moves_public``, else none."""
        return frozenset(moves) if self.moves_public else frozenset()

    def round_of(self, label: str) -> str:
        """The round or auction a phase belongs to, from its label: a phase
        whose next one belongs to another (or that ends the game) ends its
        round, and its result goes to every player (a player at NOTIFY
        TURNS hears of the phases inside a round in their next mail).  By
        default the label's start, "Round 4" or "Auction 8", as the labels
        of the referee's games begin; a label that starts otherwise is a
        round of its own (every phase's result goes to everyone).  A game
        whose labels name their rounds otherwise overrides it."""
        match = _ROUND_OR_AUCTION.match(label)
        return match[0] if match else label

    def random_move(self, state: State, seat: int, rng: Rng) -> Move:
        """The timeout rule's move: by default chosen uniformly among the legal
        ones (a game overrides it only where its rulings say so)."""
        return rng.choice(self.legal_moves(state, seat))

    @abstractmethod
    def view(self, state: State, seat: int | None) -> dict[str, Any]:
        """What ``seat`` may know now; ``seat=None`` is the public view."""

    @abstractmethod
    def result(self, state: State) -> Result | None:
        """Scores and winner once the game is over, else ``None``."""

    def standing(self, state: State, view: Mapping[str, Any] | None = None) -> tuple[Any, ...] | None:
        """Each seat's score as anyone may see it now (``referee status``,
        the site's table of players): the public view's ``scores`` when the
        game shows them while it runs, else the result's once it is over,
        else None (a game with no running score: nothing is shown).
        ``view``: the public view, when the caller has it already."""
        scores = (self.view(state, None) if view is None else view).get("scores")
        if scores is None:
            result = self.result(state)
            scores = result.scores if result is not None else None
        return tuple(scores) if scores is not None else None

    def private_news(self, before: State | None, after: State, seat: int) -> dict[str, Any] | None:
        """What ``seat`` must be told privately, now that the game went from
        ``before`` (None: it was just set up) to ``after`` by anything but the
        seat's own move: a deal, a roll, a card passed to it.  Built only from
        ``view(after, seat)``; None when there is no such news.  The engine
        puts it in that seat's copy of the announcement of the change (the
        start mail, the result of a phase), and nowhere else.  Default: none
        (a game whose seats' secrets change only by their own moves)."""
        return None

    def replace_by_bot(self, state: State, seat: int) -> State:
        """The seat's player left (Pure Skill rule 8): a random bot plays it.

        Games keep the set of bot seats in a ``bots`` field, because a bot is
        not a player when the winner is decided.
        """
        return replace(state, bots=state.bots | {seat})

    def replace_by_person(self, state: State, seat: int) -> State:
        """A person takes over a seat a bot played (only where
        ``bots_replaceable``): the seat is a player's again."""
        return replace(state, bots=state.bots - {seat})


def _counted(line: str) -> set[str]:
    """What the line's numbers count ({"coin"} for "I'll put in 1 coin", "one coin")."""
    said = reading.words(line)
    return {
        _COUNTED_NOUNS[noun]
        for number, noun in zip(said, [word.strip(",.!;") for word in said[1:]], strict=False)
        if noun in _COUNTED_NOUNS and (number.isdigit() or number in reading.NUMBER_WORDS)
    }


def _counts(move: str, counted: set[str]) -> bool:
    """Whether a move's text counts all that a line counts ("coins 1" counts coins, "bid ace" nothing)."""
    return all(noun in move for noun in counted)


def _without_pronouns(words: list[str], verbs: set[str]) -> list[str]:
    """The words without a "one" that stands for the thing just named ("I'll take the medium yellow one.",
    "the red one"), so the words before it can name a move; a "one" after a number, a verb or a word around a
    move ("bid one", "take one", "3 and one") is kept, a number."""
    kept: list[str] = []
    for word in words:
        before = kept[-1].strip(",.!;") if kept else ""
        pronoun = word.strip(",.!;") in _PRONOUNS and before and not kept[-1].endswith((",", ";"))
        if pronoun and not (
            before.isdigit() or before in reading.NUMBER_WORDS or before in _AROUND_A_MOVE | _TOGETHER | verbs
        ):
            continue
        kept.append(word)
    return kept
