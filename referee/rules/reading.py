"""How a line a person typed becomes a verb and what follows it.

One grammar for every game and for the referee's commands: each names only
its own words (``Game.verbs``, ``referee.mail.commands.WORDS``).  A line is
first made plain (``clean``): Unicode compatibility forms folded (full-width
digits and letters, non-breaking spaces), invisible characters dropped,
typographic quotes and dashes made ASCII, struck text (``~~bid 7~~``)
taken back, suit symbols spelled (also as phones send them, "♥️"), keycap
digits read ("1️⃣" is 1), emoji, emoticons, emphasis (``*bid K*``),
list markers (``- ``, ``1.``, ``a)``), quotes and brackets around words,
and the punctuation that ends a sentence taken off.  Then ``phrase`` finds
the verb behind what people put before it ("Hi referee,", "ok,", "I bid",
"I'm going to", "my bid is", "Move:", "Correction:", "bidding"), reads
past a colon or dash after it and an article ("play the king"), and drops
a sign-off after a dash ("- good luck!") and a "please" or "thanks".

A line may take back a move above it in the same mail (``correction``):
"no wait, make it bid 6", "actually bid 6", "bid 6 instead", "change my
bid to 6", "scratch that, bid 6", "sorry, I meant bid 6", "Correction:
bid 6".  The grammar reads the move past those words and says that the
line corrects; which move it takes back is the desk's to say.  A line may
also take back its own move (``corrected_within``: "bid 5 no wait, bid 6").

What this grammar cannot place it leaves alone: the game reads the plain
line and says what it expected.  Where a line has two readings
(``move_lines``) the game keeps the one it can read; the grammar never
picks between two moves.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from enum import Enum
from typing import NamedTuple

# Typographic marks a phone or word processor puts where ASCII was typed
_PLAIN = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
    }
)
_STRUCK = re.compile(r"~~.*?~~")  # struck through: taken back, not typed
# How a phone dresses an emoji, never meant as a character of its own: the variation selectors that ask for
# text or emoji style ("♥️" is U+2665 U+FE0F), the joiner between the parts of one emoji, the skin tones, and
# the keycap that frames a digit ("1️⃣" is "1" U+FE0F U+20E3)
_PRESENTATION = re.compile("[\ufe00-\ufe0f\u200d\u20e3\U0001f3fb-\U0001f3ff]")
_KEYCAP_TEN = "\U0001f51f"  # 🔟, the one keycap that is a character of its own
_SUITS = {
    "♥": "hearts",
    "♡": "hearts",
    "♦": "diamonds",
    "♢": "diamonds",
    "♣": "clubs",
    "♧": "clubs",
    "♠": "spades",
    "♤": "spades",
}
_SUIT_BEFORE = re.compile(r"(?<!\w)([♥♡♦♢♣♧♠♤])(\w+)")  # "♥K"
_SUIT_AFTER = re.compile(r"(?<=\w)\s?([♥♡♦♢♣♧♠♤])")  # "K♥", "K ♥"
_EMOTICON = re.compile(r"(?<!\S)[:;=]-?[)(\]\[DPpO/\\|]+(?!\S)|(?<!\S)<3(?!\S)")  # :-) ;) :D =P <3
_EMPHASIS = re.compile(r"\*+|(?<!\w)[_~]+|[_~]+(?!\w)")  # *bold*, **bold**, _italic_
# A bullet or a list number before a line: "- ", "• ", "1. ", "2) ", "(3) ", "a) "
_LIST_MARKER = re.compile(r"^(?:[-+•·◦‣⁃▪▫■□●○►▸▹→⇒➤✓✔]+|\(?\d{1,2}[.)]|\(?[a-z]\))\s+", re.I)
_WRAPPERS = re.compile(r"(?<![\w'])['\"`(\[{<]+|[)\]}>\"`]+(?!\w)|(?<=\w)'(?!\w)")  # around words, not in them
_END = re.compile(r"[\s.!?;,:…]+$")  # the end of a sentence
_QUESTION = re.compile(r"\?[\s.!?…]*$")
_TOKEN = re.compile(r"[^\s:=]+|[:=]")  # words, with ":" and "=" apart: "bid:K" is "bid", ":", "K"

_COURTESIES = {
    "ok",
    "okay",
    "please",
    "pls",
    "so",
    "well",
    "alright",
    "right",
    "then",
    "now",
    "and",
    "also",
    "hi",
    "hello",
    "hey",
}
# Words that open a line before a comma, "!" or a dash, and then the move: "Hi Bob, bid K", "Actually, bid 8"
_OPENERS = {
    "hi",
    "hello",
    "hey",
    "dear",
    "thanks",
    "thank",
    "yes",
    "yeah",
    "sure",
    "ok",
    "okay",
    "right",
    "alright",
    "well",
    "so",
    "good",
    "morning",
    "evening",
    "cheers",
    "actually",
    "sorry",
    "oops",
    "wait",
    "correction",
    "edit",
    "update",
    "ps",
    "p.s",
    "p.s.",
}
_LEAD_INS = sorted(
    (
        tuple(lead.split())
        for lead in (
            "i",
            "i'll",
            "i'd",
            "i will",
            "i shall",
            "i would",
            "i want to",
            "i wish to",
            "i would like to",
            "i'd like to",
            "i choose to",
            "i'll just",
            "i just",
            "we",
            "we'll",
            "we will",
            "let me",
            "let's",
            "i meant",
            "i mean",
            "i meant to",
            "i'm",
            "im",
            "i am",
            "i'm going to",
            "im going to",
            "i am going to",
            "going to",
            "i've decided to",
            "i decided to",
            "no wait",
            "no wait i",
            "i'll be",
            "i will be",
        )
    ),
    key=len,
    reverse=True,
)
_LINKS = (("is",), ("will", "be"), ("would", "be"), ("shall", "be"), (":",), ("=",), ("-",))
_NOUNS = {"move", "bid", "choice", "answer", "play", "pick", "card", "turn", "command"}
_NOUN_FILLER = {"for", "this", "that", "the", "round", "turn", "auction", "time", "now", "today", "here"}
_LABELS = {
    "move",
    "answer",
    "reply",
    "command",
    "choice",
    "action",
    "round",
    "auction",
    "turn",
    "correction",
    "edit",
    "update",
    "ps",
    "p.s",
    "p.s.",
}
_SEPARATORS = {":", "=", "-", "--", "->", "=>", "is"}
_ARTICLES = {"the", "my"}
_TAKING_BACK = {
    "no",
    "not",
    "nope",
    "wait",
    "actually",
    "sorry",
    "meant",
    "rather",
    "instead",
    "kidding",
    "scratch",
    "or",
    "but",
    "except",
    "change",
    "make",
    "it",
    "that",
    "oops",
    "correction",
    "edit",
    "ignore",
}
_SIGN_OFFS = {
    "good",
    "luck",
    "gl",
    "hf",
    "have",
    "fun",
    "thanks",
    "thank",
    "you",
    "thx",
    "ty",
    "cheers",
    "bye",
    "see",
    "ya",
    "later",
    "regards",
    "best",
    "all",
    "everyone",
    "folks",
    "ciao",
    "love",
    "xx",
    "x",
    "xo",
    "again",
    "and",
    "to",
    "a",
    "great",
    "game",
    "nice",
    "well",
    "played",
    "wp",
    "gg",
}
_TRAILERS = (("thank", "you"), ("thanks",), ("thx",), ("ty",), ("cheers",), ("please",), ("pls",), ("plz",))

# What opens a line that takes back a move above it, read off its front in any order ("No wait, actually, make it
# bid 6"): words that only correct, and "change my bid to" (the noun, when it is a verb of the game, is the verb)
_CORRECTION_LEADS = sorted(
    (
        tuple(lead.split())
        for lead in (
            "no",
            "nope",
            "no wait",
            "nope wait",
            "no actually",
            "no sorry",
            "wait",
            "hold on",
            "hang on",
            "actually",
            "sorry",
            "oops",
            "whoops",
            "err",
            "correction",
            "corrected",
            "edit",
            "update",
            "instead",
            "rather",
            "i meant",
            "i mean",
            "meant",
            "i meant to say",
            "i meant to",
            "i mean to",
            "i've changed my mind",
            "i changed my mind",
            "changed my mind",
            "change of plan",
            "change of plans",
            "on second thought",
            "on second thoughts",
            "second thoughts",
            "my mistake",
            "my bad",
            "typo",
            "scratch that",
            "scratch it",
            "strike that",
            "forget that",
            "ignore that",
            "ignore the above",
            "ignore my last",
            "make that",
            "make it",
            "change that to",
            "change it to",
            "change to",
            "switch to",
            "let me change that to",
            "let me change to",
        )
    ),
    key=len,
    reverse=True,
)
# The leads above by their first word, each word's in the order above (the longest first): a line is
# checked only against the leads its word at hand opens (a look-up, not a slice for each of them).
_CORRECTION_LEADS_BY_WORD: dict[str, list[tuple[str, ...]]] = {}
for _lead in _CORRECTION_LEADS:
    _CORRECTION_LEADS_BY_WORD.setdefault(_lead[0], []).append(_lead)
_BARE_NO = {("no",), ("nope",)}  # a lead only before a comma, "!" or dash: "No, bid 6", but "no coins" is a move
_CHANGE_MY = ("change", "my")  # "change my bid to 6", "change my move to bid 6"
_CORRECTION_TAILS = {"sorry", "oops"}  # "Actually, make that bid 9. Sorry!"
_CORRECTION_AFTER = {"instead", "rather"}  # "bid 6 instead of 5", "bid 6 rather than 5": what follows is taken back
_LEAD_GAPS = {":", "-", "--", "---", ",", ""}  # between phrases that take back, or before them ("bid 5... no, bid 6")
# "bid 6, not 5", "Actually 6, not 5": what follows a comma and "not" is taken back, when it is a word or two
# that names no doubt ("7, not sure" is no correction)
_NOT_NAMED = 2
_NOT_DOUBTS = {"sure", "certain", "really", "yet", "quite", "too", "so", "much", "bad", "good", "great", "that", "this"}
# A postscript's label before a correction: "P.S. make it 6", "PS: actually bid 6" (no correction by itself)
_POSTSCRIPTS = {"ps", "p.s", "pps", "p.p.s"}


def correction(text: str, verbs: Mapping[str, str]) -> str | None:
    """The move a line asks for in place of one above it (the line without
    the words that take back: "no wait, make it bid 6" -> "bid 6"), or None
    when the line does not say it corrects, or says nothing else.  Read in
    one pass over the line's words."""
    tokens, low = _tokens(text)
    at, corrects = 0, False
    if low and low[0] in _POSTSCRIPTS:
        at = _past_marks(low, 1)
    while at < len(low):
        past = _past_correction_lead(tokens, low, at)
        if past == at:
            break
        at, corrects = _past_marks(low, past), True
    kept, said = tokens[at:], low[at:]
    for end in range(1, len(said)):  # "bid 6 instead", "bid 6 instead of 5", "bid 6, not 5"
        if said[end] in _CORRECTION_AFTER or _not_named(kept, said, end):
            kept, said, corrects = [*kept[: end - 1], kept[end - 1].rstrip(",")], said[:end], True
            break
    while corrects and said and said[-1] in _CORRECTION_TAILS:
        kept, said = kept[:-1], said[:-1]
    if not corrects or not kept:
        return None
    noun = _changed_noun(low, at)
    if noun is not None and noun in verbs and _verb(said[0], verbs) is None:
        kept = [verbs[noun], *kept]  # "change my bid to 6" -> "bid 6"
    return " ".join(kept)


def _past_marks(low: list[str], at: int) -> int:
    """Past the marks after a postscript's label or a phrase that takes back ("no wait: bid 6", "PS - 6")."""
    while at < len(low) and low[at] in (":", "-", "--", ","):
        at += 1
    return at


def corrected_within(text: str) -> tuple[str, str] | None:
    """A line that takes back its own move: a move, words that take it back,
    and what it asks for in its place ("bid 5 no wait, bid 6", "bid 3,
    actually bid 4", "bid 5 - no, make it 6"), as (the words before the first
    such phrase, the line from the last one on: a ``correction``); None when
    no phrase stands after a word that is not one.  Which are moves is the
    game's to say.  Read in one pass over the line's words."""
    tokens, low = _tokens(text)
    at = _past_correction_run(tokens, low, 0) + 1  # (a line opening with one corrects a line above: its own move next)
    first = last = None
    while at < len(low):
        if low[at] in _CORRECTION_AFTER or _past_correction_lead(tokens, low, at) == at:
            at += 1  # ("bid 6 instead of 5" ends a correction, it opens none)
            continue
        first, last = at if first is None else first, at
        at = _past_correction_run(tokens, low, at)
    if first is None or last is None:
        return None
    before = tokens[:first]
    while before and before[-1].rstrip(",.!;") in _LEAD_GAPS:
        before = before[:-1]
    return (" ".join(before), " ".join(tokens[last:])) if before else None


def _past_correction_run(tokens: list[str], low: list[str], at: int) -> int:
    """Past the phrases that take back at ``at`` and the marks between them
    ("no wait, actually, make it"); ``at`` when none stands there."""
    while at < len(low):
        past = at + 1 if low[at] in _LEAD_GAPS else _past_correction_lead(tokens, low, at)
        if past == at:
            break
        at = past
    return at


def _not_named(tokens: list[str], low: list[str], at: int) -> bool:
    """Whether ``at`` is the "not" of ", not 5": after a comma, before a word or two that say no doubt."""
    named = low[at + 1 :]
    return (
        low[at] == "not"
        and tokens[at - 1].endswith(",")
        and 0 < len(named) <= _NOT_NAMED
        and not _NOT_DOUBTS.intersection(named)
    )


def _past_correction_lead(tokens: list[str], low: list[str], at: int) -> int:
    """Past one phrase that takes back ("no wait", "make it", "change my bid
    to") at ``at``, when something follows it; else ``at``."""
    if tuple(low[at : at + 2]) == _CHANGE_MY and at + 3 < len(low) and low[at + 3] == "to":
        return at + 4 if at + 4 < len(low) else at
    opened = _CORRECTION_LEADS_BY_WORD.get(low[at], ()) if at < len(low) else ()
    for lead in opened:
        after = at + len(lead)
        if tuple(low[at:after]) == lead and after < len(low):
            if lead in _BARE_NO and tokens[at][-1:] not in (",", "!", ".") and low[after] not in ("-", ":"):
                continue
            return after
    return at


def _changed_noun(low: list[str], at: int) -> str | None:
    """The noun of "change my <noun> to" right before ``at``, if there."""
    if at >= 4 and tuple(low[at - 4 : at - 2]) == _CHANGE_MY and low[at - 1] == "to":
        return low[at - 2]
    return None


# Numbers as words, for the games whose moves count ("reroll one three", "play two on red")
NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}

# Words that may stand around a move that takes nothing ("I'll pass for the rest of this round, thanks"):
# a game whose fillers are wider checks a bare "pass" against these, so "Pass it on" is no pass
AROUND_A_BARE_MOVE = {
    "i",
    "ll",
    "will",
    "please",
    "now",
    "for",
    "the",
    "rest",
    "of",
    "this",
    "round",
    "remainder",
    "turn",
    "ok",
    "okay",
    "thanks",
    "thank",
    "you",
    "my",
    "again",
    "then",
    "time",
}


# A replay reads every move again, and the same few lines ("pass") come back
# in every game; clean() is the costly part.  A pure function of two
# strings, whose answer is a bool: a kept answer cannot go stale.
@functools.lru_cache(maxsize=1024)
def bare_move(text: str, verb: str) -> bool:
    """Whether the line says the verb and nothing that could mean more."""
    return set(re.findall(r"[a-z]+", clean(text).lower())) <= AROUND_A_BARE_MOVE | {verb}


_KEPT_CLEAN = 256  # characters: the longest line whose clean() is kept (a move's line is far shorter)


def clean(text: str) -> str:
    """The line as the games read it (see the module's docstring)."""
    return _kept_clean(text) if len(text) <= _KEPT_CLEAN else _clean(text)


# A mail's lines are read several times over (a correction, the grammar, each
# reading of a move), and the same few moves come back in every game: clean()
# is a pure function of its string, so a kept answer cannot go stale.  Only
# short lines are kept, so that a flood of long ones cannot fill memory.
@functools.lru_cache(maxsize=4096)
def _kept_clean(text: str) -> str:
    return _clean(text)


def _clean(text: str) -> str:
    text = unicodedata.normalize("NFKC", _PRESENTATION.sub("", text).replace(_KEYCAP_TEN, "10"))
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")  # zero-width, BOM, bidi marks
    text = _STRUCK.sub(" ", " ".join(text.translate(_PLAIN).split()))
    text = _SUIT_AFTER.sub(
        lambda m: f" of {_SUITS[m[1]]}", _SUIT_BEFORE.sub(lambda m: f"{m[2]} of {_SUITS[m[1]]}", text)
    )
    text = "".join(" " if unicodedata.category(c) == "So" else c for c in _EMOTICON.sub(" ", text))  # emoji
    text = _EMPHASIS.sub("", text)
    while (unmarked := _LIST_MARKER.sub("", text.strip(), count=1)) != text.strip():
        text = unmarked
    text = " ".join(_WRAPPERS.sub(" ", text).split())
    return _END.sub("", text)


def past_greeting(text: str) -> str | None:
    """What follows a greeting and its comma, "!" or dash ("Hi referee, 2 on
    red" -> "2 on red"), or None when the line opens otherwise."""
    tokens, low = _tokens(text)
    past = _past_opener(tokens, low, 0, None)
    return " ".join(tokens[past:]) if past else None


class _Manners(NamedTuple):
    """One language's courtesies, folded as ``_folded`` reads a line (no accents, "ß" as "ss") and in lower case:
    the phrases a greeting opens with ("good morning"), comma-separated; the words it may greet ("all"); the
    words that thank or sign off ("thanks", "regards"); and the words that only stand beside those ("very much").
    Kept clear of moves and commands: no legal move and no command line reads as a courtesy (a property test)."""

    greetings: str
    greeted: str
    thanks: str
    beside: str


_MANNERS = {
    "en": _Manners(
        "hi, hello, hey, heya, hiya, howdy, dear, greetings, yo, morning, afternoon, evening, good morning, "
        "good afternoon, good evening, good day",
        "ref referee all everyone everybody there folks guys team again mr ms mrs dr sir",
        "thanks thank thx ty ta cheers best regards wishes sincerely yours bye goodbye cya later love care luck "
        "gl hf xx xo day weekend safe well",
        "you very much so a lot many kind kindest warm warmest the all truly faithfully see ya soon take good "
        "have fun x again in advance for now everyone and game help this it everything nice great keep stay",
    ),
    "de": _Manners(
        "hallo, moin, moin moin, servus, guten tag, guten morgen, guten abend, gruss gott, gruezi, liebe, lieber, "
        "sehr geehrte, sehr geehrter",
        "zusammen alle herr frau damen und herren",
        "danke dank gruss grusse grussen lg vg mfg tschuss bald dann spater",
        "viele vielen liebe lieben beste besten mit freundlichen freundliche herzliche herzlichen schone "
        "schonen schon sehr bis und",
    ),
    "fr": _Manners(
        "bonjour, bonsoir, salut, coucou, cher, chere",
        "a tous toutes monsieur madame",
        "merci cordialement amities amicalement bises bisous journee soiree salutations bientot",
        "et bonne bonnes beaucoup bien a vous toi tous mes meilleures sinceres votre pour encore excellente",
    ),
    "es": _Manners(
        "hola, buenos dias, buenas tardes, buenas noches, buenas, estimado, estimada, querido, querida",
        "a todos todas",
        "gracias saludos saludo abrazos abrazo besos chao adios atentamente",
        "muchas muchos mil un una y buen buena muy cordiales por todo de nuevo",
    ),
    "nl": _Manners(
        "hoi, hallo, hey, goedemorgen, goedemiddag, goedenavond, goedendag, goede morgen, beste, dag",
        "allemaal iedereen allen",
        "bedankt dank groetjes groet groeten doei ziens succes",
        "je u wel hartelijk hartelijke vriendelijke met tot zo alvast veel lieve",
    ),
    "it": _Manners(
        "ciao, buongiorno, buonasera, buon giorno, salve, caro, cara",
        "a tutti tutte",
        "grazie saluti saluto ciao arrivederci cordialmente giornata serata presto",
        "mille tante tanti cordiali distinti buona un e a",
    ),
    "pt": _Manners(
        "ola, oi, bom dia, boa tarde, boa noite, prezado, prezada, caro, cara",
        "a todos pessoal",
        "obrigado obrigada abracos abraco beijos atenciosamente tchau valeu cumprimentos",
        "muito muita um e",
    ),
    "sv": _Manners("hej, hej hej", "alla", "tack hej mvh halsningar", "sa mycket med vanliga vanlig basta"),
}
# A greeting's first words ("Hi", "Good morning", "Hola"), and the words that may follow them ("Hi ref", "Hi all")
# (longest first, so "good morning" is tried before "morning")
_GREETINGS = sorted(
    {tuple(greeting.split()) for manners in _MANNERS.values() for greeting in manners.greetings.split(", ")},
    key=len,
    reverse=True,
)
_GREETED = {word for manners in _MANNERS.values() for word in manners.greeted.split()}
# Words of thanks and of a sign-off: a line of these alone (and a name) says nothing to act on
_THANKS = {word for manners in _MANNERS.values() for word in manners.thanks.split()}
_THANKS_FILLER = {word for manners in _MANNERS.values() for word in manners.beside.split()}
_NAME = re.compile(r"[^\W\d_][\w'.-]*")  # a word of a name: "Carol", "O'Neil", "J."
_AROUND_A_WORD = ",.!¡¿-"  # punctuation a courtesy's words carry: "¡Gracias!", "Hoi,"


class Courtesy(Enum):
    """What a line of courtesy does: greet (it opens a mail) or thank and sign off (it closes one)."""

    GREETING = "greeting"
    SIGN_OFF = "sign-off"


def courtesy(text: str) -> Courtesy | None:
    """Whether the line only thanks or signs off ("Thanks!", "Cheers, Carol",
    "Best regards", "Merci et bonne journée"), or only greets ("Hi ref,",
    "Good morning all", "Hoi"): a line with nothing to act on.  None for any
    other line.  A sign-off is tried first, so "Liebe Grüße" signs off where
    "Liebe Alice" greets."""
    typed = [word for word in _folded(clean(text)).split() if word.strip(_AROUND_A_WORD)]
    low = [word.lower().strip(_AROUND_A_WORD) for word in typed]
    vocabulary = 0
    while vocabulary < len(low) and low[vocabulary] in _THANKS | _THANKS_FILLER:
        vocabulary += 1
    names = typed[vocabulary:]
    if any(word in _THANKS for word in low[:vocabulary]) and len(names) <= 3 and all(map(_named, names)):
        return Courtesy.SIGN_OFF
    for greeting in _GREETINGS:
        if tuple(low[: len(greeting)]) == greeting:
            rest = low[len(greeting) :]
            greets = len(rest) <= 3 and all(
                word in _GREETED or _named(typed[len(greeting) + at]) for at, word in enumerate(rest)
            )
            return Courtesy.GREETING if greets else None
    return None


def name_line(text: str) -> bool:
    """Whether the line could be a name signed under a sign-off ("Carol", "Ann B.")."""
    words = clean(text).split()
    return 0 < len(words) <= 3 and all(_named(word) for word in words)


def _name_word(word: str) -> bool:
    return bool(_NAME.fullmatch(word.strip(_AROUND_A_WORD)))


def _named(word: str) -> bool:
    """Whether a word after a greeting or thanks is a name ("Bob", not "can")."""
    return _name_word(word) and word[:1].isupper()


def _folded(text: str) -> str:
    """The text without accents ("Grüße" -> "Gruse"... "Olá" -> "Ola"), for the word lists above."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).replace("ß", "ss")


def is_question(text: str) -> bool:
    """Whether the line asks rather than says ("bid 7?"): no move, no command that cannot be undone."""
    return bool(
        _QUESTION.search(_EMOTICON.sub("", unicodedata.normalize("NFKC", _PRESENTATION.sub("", text))).rstrip())
    )


def words(text: str) -> list[str]:
    """The line's words in lower case, without a "please" or "thanks" after them."""
    tokens, low = _tokens(text)
    return [token.lower() for token in _without_trailers(tokens, low)]


def phrase(text: str, verbs: Mapping[str, str]) -> tuple[str, str] | None:
    """(verb, the rest) when the line asks for one of ``verbs`` (a word -> the
    verb it stands for: {"play": "bid"}), else None."""
    found = _read(text, verbs)
    return found[:2] if found else None


def _read(text: str, verbs: Mapping[str, str]) -> tuple[str, str, bool] | None:
    """phrase's (verb, the rest), and whether a dash stood between them."""
    tokens, low = _tokens(text)
    at = _past_opener(tokens, low, 0, verbs)
    while at < len(low) and low[at] in _COURTESIES and at + 1 < len(low):
        at += 1
    at = _past_label(low, at, verbs)
    noun = _noun_phrase(low, at, verbs)
    if noun is not None:
        verb, at = noun
        if verb is not None:
            return verb, " ".join(_argument(tokens[at:], low[at:])), False
    else:
        at = _past_lead_in(low, at, verbs)
    verb = _verb(low[at], verbs) if at < len(low) else None
    if verb is None:
        return None
    at += 1
    dashed = at < len(low) and low[at] in ("-", "--") and _sign_off(tokens[at + 1 :], low[at] == "--")
    while at < len(low) and low[at] in _SEPARATORS:
        at += 1
    while at + 1 < len(low) and low[at] in _ARTICLES:
        at += 1
    return verb, " ".join(_argument(tokens[at:], low[at:])), dashed


def _tokens(text: str) -> tuple[list[str], list[str]]:
    """The plain line's words as typed, and as matched: in lower case, without
    the comma or stop that ends them ("pass, please", "Pass. Thanks!")."""
    tokens = _TOKEN.findall(clean(text).replace("->", " -> ").replace("=>", " => "))
    return tokens, [token.lower().rstrip(",.!;") for token in tokens]


def move_line(text: str, verbs: Mapping[str, str]) -> str:
    """The line in a game's own form: "<verb> <rest>" when the grammar finds
    one of the game's verbs, else the plain line (``clean``)."""
    return move_lines(text, verbs)[0]


def move_lines(text: str, verbs: Mapping[str, str]) -> list[str]:
    """The line's readings in a game's own form, the likeliest first: a dash
    after the verb introduces its argument ("bid - K") or ends the move
    ("pawn - good luck!"), and only the game can tell which.  A correction
    ("actually bid 6") reads as the move it asks for."""
    text = correction(text, verbs) or text
    found = _read(text, verbs)
    if found is None:
        return [clean(text)]
    verb, rest, dashed = found
    return [f"{verb} {rest}".strip(), *([verb] if rest and dashed else [])]


def _past_label(low: list[str], at: int, verbs: Mapping[str, str]) -> int:
    """Past a label and its colon ("Move: pass", "Round 1: bid 7") when a
    verb follows it; "bid: 7" is the verb itself.  Only labels of a move:
    "Note: resign if ..." is a sentence, not a command."""
    for colon in range(at + 1, min(at + 4, len(low) - 1)):
        if low[colon] == ":":
            if low[at] in _LABELS and low[colon + 1] in verbs:
                return colon + 1
            break
    return at


def _past_opener(tokens: list[str], low: list[str], at: int, verbs: Mapping[str, str] | None) -> int:
    """Past "Hi referee," "Thanks!" "Actually," "OK -" before a move (with
    ``verbs`` None: before anything)."""
    if at >= len(low) or low[at] not in _OPENERS:
        return at
    for end in range(at + 1, min(at + 4, len(low))):
        past = end + 1 if low[end] in ("-", ":") else end
        if (
            (tokens[end - 1][-1:] in (",", "!", ".") or past > end)
            and past < len(low)
            and (
                verbs is None or _verb(low[past], verbs) or _past_lead_in(low, past, verbs) != past or low[past] == "my"
            )
        ):
            return past
    return at


def _past_lead_in(low: list[str], at: int, verbs: Mapping[str, str]) -> int:
    """Past "I", "I'd like to", "I'm going to", "I meant" when a verb follows."""
    for lead in _LEAD_INS:
        after = at + len(lead)
        if tuple(low[at:after]) == lead and after < len(low) and _verb(low[after], verbs):
            return after
    return at


def _verb(word: str, verbs: Mapping[str, str]) -> str | None:
    """The verb a word is, also as "bidding", "passing", "playing"."""
    if word in verbs:
        return verbs[word]
    if word.endswith("ing") and len(word) > 5:
        stem = word[:-3]
        for candidate in (stem, stem + "e", stem[:-1]):
            if candidate in verbs:
                return verbs[candidate]
    return None


def _noun_phrase(low: list[str], at: int, verbs: Mapping[str, str]) -> tuple[str | None, int] | None:
    """ "my bid is K", "my move: pass", "my choice is to play the king": the
    verb (None: read on from the index, a verb comes next) and where its
    argument starts; None when the line does not start so."""
    if low[at : at + 1] != ["my"] or at + 2 >= len(low) or low[at + 1] not in _NOUNS:
        return None
    noun, after = low[at + 1], at + 2
    while after < len(low) and (low[after] in _NOUN_FILLER or low[after].isdigit()):
        after += 1  # "my bid for this round is K"
    for link in _LINKS:
        if tuple(low[after : after + len(link)]) == link:
            after += len(link)
            break
    else:
        return None
    if after < len(low) and low[after] == "to":
        after += 1  # "my choice is to pass"
    if after < len(low) and _verb(low[after], verbs):
        return None, after
    while after + 1 < len(low) and low[after] in _ARTICLES:
        after += 1
    return (verbs[noun], after) if noun in verbs else (None, len(low))


def _argument(tokens: list[str], low: list[str]) -> list[str]:
    """What follows the verb, up to a dash before a sign-off ("bid K - good
    luck", "bid K -- Alice"), without a "please" or "thanks".  Anything else
    after a dash ("bid K - no, Q") stays, for the game to refuse."""
    for at in range(1, len(low)):
        if low[at] in ("-", "--", "---") and _sign_off(tokens[at + 1 :], low[at] != "-"):
            tokens, low = tokens[:at], low[:at]
            break
    return _without_trailers(tokens, low)


def _sign_off(tokens: list[str], double_dash: bool) -> bool:
    """Whether the words after a dash only sign off: "good luck!", "thanks",
    an initial ("A."), or after "--" a name ("-- Alice"); never a digit, a
    "no" or a "wait" (_TAKING_BACK)."""
    words = [t.strip(".,!;") for t in tokens]
    if not words or any(c.isdigit() for w in words for c in w):
        return False
    if len(words) <= 5 and all(w.lower() in _SIGN_OFFS for w in words):
        return True
    if len(words) == 1 and re.fullmatch(r"(?:[A-Z]\.?){1,3}", words[0]):
        return True
    return double_dash and len(words) <= 3 and all(w.isalpha() and w.lower() not in _TAKING_BACK for w in words)


def _without_trailers(tokens: list[str], low: list[str]) -> list[str]:
    """The words without a "please" or "thanks" after them."""
    end = len(tokens)
    trimmed = True
    while trimmed:
        trimmed = False
        for trailer in _TRAILERS:
            if end >= len(trailer) and tuple(low[end - len(trailer) : end]) == trailer:
                end -= len(trailer)
                trimmed = True
    kept = tokens[:end]
    if kept:
        kept[-1] = kept[-1].rstrip(",")
    return kept
