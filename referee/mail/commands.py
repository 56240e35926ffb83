"""Which lines of a message are a player's commands.

One command per line, in any case, read in order: every line the player
wrote themselves.  Not theirs are:

- quoted lines, however their client marks them: ``>``, ``|``, ``:``,
  supercite's ``name>``, or an indent (a TAB or a run of spaces, as mailx,
  s-nail and Emacs' mail-mode quote) where an attribution line introduces
  it, where it runs over several lines, or where it repeats the referee's
  mail it answers;
- the attribution above a quote ("On ... wrote:", "Referee writes:",
  "Quoting ...:", "* Referee [date]:", in the languages players write in),
  and an original a client pasted unquoted below one;
- everything from a signature (``-- ``, ``__``), a phone's "Sent from my
  ..." (in many languages) or an unquoted original message (Outlook) onward.

A mail with no such line is read from its subject instead, so a move typed
as the subject counts too.  How a line is read is ``referee.rules.reading``'s
job: one grammar for commands and moves.  Which words are commands is the
desk's command table's to say (``referee.desk.COMMANDS``): it hands this
module its ``Vocabulary``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from referee.mail.parse import MAX_TEXT, Incoming
from referee.rules import kind_named
from referee.rules.reading import is_question, phrase, words

MAX_LINES = 25  # a mail is read no further: a move is a line, not an essay
MAX_LINE = 200  # characters of a line kept (and quoted back): no command is longer

_TAG = re.compile(r"\[(?P<kind>[a-z][a-z-]*)-(?P<id>\d+)(\s+[a-z2-7]+)?\]", re.I)
_ANY_TAG = re.compile(r"\[[a-z][a-z0-9-]*(\s+[a-z2-7]+)?\]", re.I)
_REPLY_PREFIX = re.compile(r"^\s*((re|fwd?|aw|sv|antw)\s*(\[\d+\])?\s*:\s*)+", re.I)

# A quote marked line by line: ">", "|", ": " (mutt's indent_string), supercite's "bob> "
_MARKED = re.compile(r"^\s*(>|\||:(\s|$)|[a-z][\w.]{0,11}>(\s|$))", re.I)
_INDENTS = ("\t", "  ")  # mailx and s-nail quote with a TAB, Emacs' mail-mode with spaces (str.startswith: no regex)
_MOST_LINES = 5000  # of a mail's text are looked at: a reply quoting a long mail has a few hundred
_LONG_INDENT = 4  # indented lines in a run that make it a quote with no attribution: nobody indents a letter
_ECHOED = 2  # lines of the referee's own mail that make a run of lines a quote of it
_WROTE = (
    r"wrote|writes|schrieb|schreibt|a écrit|écrit|escribió|escribio|ha scritto|scrive|schreef"
    r"|skrev|escreveu|kirjoitti|napsal\(a\)|napsal|napisał\(a\)|napisał|pisze|napisala|написал\(а\)"
    r"|написал|написала|пишет|yazdı|έγραψε"
)
# Attributions, every one a line that ends in ":", each read by what stands
# at its start and its end (see _attribution_line), never by a pattern that
# could backtrack over the line:
# "On <date>, <name> wrote:" above a quote, in the languages players write in
_ON = re.compile(r"(on|am|le|el|il|op|den|em|w dniu|dne)\b", re.IGNORECASE)
_ON_WROTE = re.compile(
    r"\b(wrote|schrieb|a écrit|escribió|ha scritto|schreef|skrev|escreveu|pisze|napisał|napsal)\b", re.IGNORECASE
)
# Any other client's: "<name> writes:" (the verb among the last four words), "Quoting <name>:",
# "* <name> [<date>]:", "In message <id>, <name> writes:"
_WROTE_AT_END = re.compile(rf"\b({_WROTE})\Z", re.IGNORECASE)
_LONGEST_VERB = max(len(verb.replace("\\", "")) for verb in _WROTE.split("|"))  # characters
_QUOTING = re.compile(r"(quoting|zitat von|citando|citazione di|citation de)\b", re.IGNORECASE)
# Gmail in languages whose attribution has no verb: "2026年11月21日(土) 12:00 Referee <r@example.org>:"
_NOT_IN_ADDRESS = re.compile(r"[<>\s]")
_WORD = re.compile(r"\S+")
_DIGIT = re.compile(r"\d")
_LONGEST_ATTRIBUTION = 300  # characters; a real one is under 150, even with a long name and address
_CUT = re.compile(r"^\[\s*(\.\.\.|…|snip|snipped|cut)\s*\]$", re.I)  # "[...]" where a quote was trimmed
_OPENER = re.compile(r"^(on|am|le|el|il|op|den|em)\s", re.I)  # an attribution wrapped over lines
# Outlook and webmail put the original below an unquoted header block
_ORIGINAL = re.compile(
    r"^(-{2,}\s*(original message|ursprüngliche nachricht|originalnachricht|message d'origine|message original"
    r"|mensaje original|messaggio originale|oorspronkelijk bericht|ursprungligt meddelande|mensagem original"
    r"|oprindelig meddelelse|opprinnelig melding|alkuperäinen viesti|oryginalna wiadomość|původní zpráva"
    r"|исходное сообщение|eredeti üzenet|forwarded message|weitergeleitete nachricht|message transféré"
    r"|mensaje reenviado)\b|begin forwarded message:|_{10,}$"
    r"|\*?(from|von|de|van|da|från|fra|od|от|від|kimden|feladó|από|de la|dari|nuo|šalje|từ|差出人|发件人|寄件者"
    r"|보낸 사람)\s?:\*?\s)",
    re.I,
)
_SIGNATURE = re.compile(r"^(--|_{2,})\s*$")  # "-- " (RFC 3676), "--", and "__"; flush left, never quoted
# What phones and webmail sign with, unasked
_DEVICE_SIGNATURE = re.compile(
    r"^(sent from (my )?\w|sent with \w|sent via \w|sent using \w|get outlook for|von meinem \w+ gesendet"
    r"|gesendet von meinem|gesendet mit|envoyé de mon|envoyé depuis|enviado desde mi|enviado do meu|enviado de meu"
    r"|inviato da|inviato dal|verzonden vanaf|verstuurd vanaf|skickat från|sendt fra|lähetetty|wysłane z"
    r"|odesláno z|отправлено с|\S*から送信|发自我的|從我的)",
    re.I,
)


@dataclass(frozen=True)
class Vocabulary:
    """The words of the command language (anything else may be a game's
    move), as the desk's command table lists them: every word and synonym,
    and those that count only said alone ("Resign.", "I quit"), never in a
    sentence ("I'll resign if I lose", "I'll end up bidding K")."""

    words: Mapping[str, str]  # each word as said -> itself: a command is known by the word said
    alone: frozenset[str]

    @classmethod
    def of(cls, words: Iterable[str], alone: Iterable[str]) -> Vocabulary:
        return cls({word: word for word in words}, frozenset(alone))


@dataclass(frozen=True)
class Command:
    """One line of a mail, read as a command."""

    word: str  # a word of the vocabulary, as said ("quit"), or "" when the line is none (perhaps a move)
    argument: str  # the rest of the line
    line: str  # the line as written

    @classmethod
    def read(cls, line: str, vocabulary: Vocabulary) -> Command:
        word, argument = phrase(line, vocabulary.words) or ("", "")
        if word in vocabulary.alone and (words(line) not in ([word], ["i", word]) or is_question(line)):
            word, argument = "", ""
        elif word and argument and words(line)[0] != word and not kind_named(argument):
            word, argument = "", ""  # "I'll join you for a beer", "Let me list my reasons": sentences
        return cls(word, argument, line.strip())


def tag(kind: str, game_id: int) -> str:
    """The game's subject tag, ``[pure-skill-7]``."""
    return f"[{kind}-{game_id}]"


def without_tags(subject: str) -> str:
    """A subject without Re:/Fwd: prefixes and game tags: what it says itself."""
    return " ".join(_ANY_TAG.sub(" ", _REPLY_PREFIX.sub("", subject)).split())


def command_lines(
    message: Incoming, answered: Collection[str] = (), answered_subject: Callable[[], str] = str
) -> list[str]:
    """The lines to read as commands, at most MAX_LINES + 1 (so a caller can
    tell the mail was longer): the player's own lines, else the subject,
    unless it is only the subject of the referee's mail answered (a reply
    that quotes and says nothing).  ``answered`` is the text of that mail,
    if known; ``answered_subject`` looks up its subject."""
    lines = own_lines(message.text, MAX_LINES + 1, answered)
    if not lines and (subject := without_tags(message.subject)) and subject != without_tags(answered_subject()):
        lines = [subject]
    return [line if len(line) <= MAX_LINE else line[:MAX_LINE] + "…" for line in lines]


def own_lines(text: str, limit: int | None = None, answered: Collection[str] = ()) -> list[str]:
    """The non-blank lines the player wrote, stripped, up to ``limit``.

    Quoted lines and the attribution above them are skipped (so top-posted,
    bottom-posted and inline replies all count); a signature or an
    unquoted original ends the text.  Only the text's first _MOST_LINES
    lines and MAX_TEXT characters are looked at, each step in one pass."""
    lines = text[:MAX_TEXT].splitlines()[:_MOST_LINES]
    mail = _Answered(answered)
    quoted, marked = _quoted(lines, mail)
    pasted: list[bool] | None = None  # _pasted_below, once an attribution asks
    own: list[str] = []
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or quoted[index] or _CUT.match(stripped):
            continue
        if _SIGNATURE.match(line) or _ORIGINAL.match(stripped) or _DEVICE_SIGNATURE.match(stripped):
            break
        if _attribution(lines, index):
            pasted = _pasted_below(lines, marked, mail) if pasted is None else pasted
            if pasted[index]:
                break  # a client that pasted the original below its attribution, unmarked
            continue
        own.append(stripped)
        if limit is not None and len(own) >= limit:
            break
    return own


def first_own_line(text: str) -> str | None:
    """The first line the player wrote, if any."""
    lines = own_lines(text, 1)
    return lines[0] if lines else None


class _Answered:
    """The referee's mail a message answers, line by line, as a quote of it
    is recognised: by its words, or by the very line, indent and all."""

    def __init__(self, lines: Collection[str]):
        own = [line.rstrip() for line in lines if line.strip()]
        plain = [_plain(line) for line in own]
        self.words = set(plain)
        self.lines = set(own)
        self.by_text: dict[str, set[str]] = {}  # a line without its indent -> the mail's lines so
        for line in own:
            self.by_text.setdefault(line.strip(), set()).add(line)
        self.pairs = set(itertools.pairwise(own))  # lines that follow each other, past blank ones
        self.text = "\n".join(plain)  # each line's words, for a line wrapped again

    def echoes(self, line: str) -> bool:
        """The line is one of the mail's, word for word."""
        return _plain(line) in self.words

    def repeats(self, line: str) -> bool:
        """The line is one of the mail's as it stood, or indented further
        (a client's indent before the mail's own: TAB + "    bid K")."""
        return bool(self._own(line))

    def follows(self, first: str, second: str) -> bool:
        """The two lines stand one after the other in the mail (a client's indent aside)."""
        return any((a, b) in self.pairs for a in self._own(first) for b in self._own(second))

    def continues(self, first: str, second: str) -> bool:
        """The two lines are one of the mail's, wrapped again: together they
        stand within one of its lines ("Moves you can make now: ..., bid" +
        "black 4.", a client's narrower wrap of the list of moves)."""
        return bool(self.text) and f"{_plain(first)} {_plain(second)}" in self.text

    def _own(self, line: str) -> list[str]:
        line = line.rstrip()
        return [own for own in self.by_text.get(line.strip(), ()) if line.endswith(own)]


def _quoted(lines: list[str], answered: _Answered) -> tuple[list[bool], list[bool]]:
    """Which lines are quoted, and which of them by a mark or an indent:
    marked lines; runs of indented lines that an attribution introduces,
    that are long, or that repeat the mail answered (even one line, indented
    further than the mail had it); and unmarked runs that copy the mail
    answered line for line (an original pasted without a mark, under a
    header the reader did not know), with what stands between its lines."""
    quoted = [bool(_MARKED.match(line)) for line in lines]
    index = 0
    while index < len(lines):
        if not lines[index].startswith(_INDENTS) or not lines[index].strip() or quoted[index]:
            index += 1
            continue
        run = _indented_run(lines, index)
        text = [lines[i] for i in run if lines[i].strip()]
        before = next((i for i in range(index - 1, -1, -1) if lines[i].strip()), None)
        introduced = before is not None and _attribution(lines, before)
        echoed = sum(answered.echoes(line) for line in text)
        deeper = any(answered.repeats(line) and line.rstrip() not in answered.lines for line in text)
        if introduced or len(text) >= _LONG_INDENT or echoed >= _ECHOED or deeper:
            for i in run:
                quoted[i] = True
        index = run[-1] + 1
    marked = list(quoted)
    _copies(lines, quoted, answered)
    return quoted, marked


def _copies(lines: list[str], quoted: list[bool], answered: _Answered) -> None:
    """Mark each line that is the answered mail's own, indent and all, next
    (past blank lines) to another that is its neighbour there too; then a
    line of the mail's words between two such lines (its indent lost); and two
    lines next to each other that together stand within one of its lines (a
    line a client wrapped again)."""
    copied = [
        i
        for i, line in enumerate(lines)
        if line.strip() and not quoted[i] and not _SIGNATURE.match(line) and answered.repeats(line)
    ]
    for before, after in itertools.pairwise(copied):
        if all(not lines[i].strip() for i in range(before + 1, after)) and answered.follows(
            lines[before], lines[after]
        ):
            quoted[before] = quoted[after] = True
    for at in range(len(lines) - 1):  # a line of the mail a client wrapped again, pasted unmarked
        if quoted[at] and quoted[at + 1]:
            continue  # both quoted already (a marked quote's lines): nothing to mark, no text to search
        first, second = lines[at], lines[at + 1]
        if first.strip() and second.strip() and not _SIGNATURE.match(second) and answered.continues(first, second):
            quoted[at] = quoted[at + 1] = True
    text = [i for i, line in enumerate(lines) if line.strip()]
    for before, at, after in zip(text, text[1:], text[2:]):
        if quoted[before] and quoted[after] and not quoted[at] and answered.echoes(lines[at]):
            quoted[at] = True


def _indented_run(lines: list[str], start: int) -> list[int]:
    """The indices of the indented lines from ``start`` on, with the blank
    lines between them (a quoted paragraph break)."""
    run, index = [start], start + 1
    while index < len(lines):
        if lines[index].startswith(_INDENTS) and lines[index].strip():
            run.append(index)
        elif lines[index].strip():
            break
        index += 1
    return run


def _attribution(lines: list[str], index: int) -> bool:
    """Whether the line introduces a quote, alone or with the line before or
    after it (Gmail wraps a long "On ... wrote:" over two lines)."""
    line = lines[index].strip()
    if len(line) > _LONGEST_ATTRIBUTION:
        return False  # none is so long
    if _attribution_line(line):
        return True
    following = lines[index + 1].strip()[:_LONGEST_ATTRIBUTION] if index + 1 < len(lines) else ""
    if _OPENER.match(line) and _on_wrote(f"{line} {following}"):
        return True
    previous = lines[index - 1].strip()[:_LONGEST_ATTRIBUTION] if index else ""
    return bool(_OPENER.match(previous) and _on_wrote(f"{previous} {line}"))


def _attribution_line(line: str) -> bool:
    """Whether one line (stripped) is an attribution in any
    client's form; in time linear in the line: each form is checked by what
    stands at the line's start and end, and a pattern searched once."""
    if not line.endswith(":"):
        return False  # every attribution ends so
    return _on_wrote(line) or _name_writes(line) or _quoting(line) or _starred(line) or _addressed(line)


def _on_wrote(line: str) -> bool:
    """ "On <date>, <name> wrote:": an opener, then a verb, with no ":" after it but the last."""
    opener = _ON.match(line)
    if not opener or not line.endswith(":"):
        return False
    after = max(opener.end(), line.rfind(":", 0, -1) + 1)
    return bool(_ON_WROTE.search(line, after, len(line) - 1))


def _before_colon(line: str) -> str:
    """The line without its last ":" and one space before it."""
    text = line[:-1]
    return text[:-1] if text[-1:].isspace() else text


def _name_writes(line: str) -> bool:
    """ "<name> writes:", "Bob wrote on Friday:": a verb, then at most three words."""
    text = _before_colon(line)
    if not text or text[-1].isspace():
        return False
    ends = [word.end() for word in _WORD.finditer(text)][-4:]  # the verb ends where one of these does
    return any(_WROTE_AT_END.search(text, max(0, end - _LONGEST_VERB), end) for end in ends)


def _quoting(line: str) -> bool:
    """ "Quoting <name>:", in the languages players write in."""
    return bool(_QUOTING.match(line))


def _starred(line: str) -> bool:
    """ "* <name> [<date>]:" (mutt's, and slrn's): a "[...]" that holds a digit, last."""
    text = _before_colon(line)
    if len(text) < 3 or text[0] != "*" or not text[1].isspace() or text[-1] != "]":
        return False
    close = len(text) - 1
    opening = text.find("[", max(text.rfind("]", 0, close) + 1, 2), close)
    return opening >= 0 and bool(_DIGIT.search(text, opening + 1, close))


def _addressed(line: str) -> bool:
    """ "<date> <name> <address>:", Gmail's without a verb: a digit, then the address last."""
    text = _before_colon(line)
    text = text.removesuffix(")")
    if not text.endswith(">"):
        return False
    close = len(text) - 1
    opening = text.rfind("<", 0, close)
    if opening < 0 or _NOT_IN_ADDRESS.search(text, opening + 1, close):
        return False
    at = text.find("@", opening + 2, close - 1)
    return at >= 0 and bool(_DIGIT.search(text, 0, opening))


def _pasted_below(lines: list[str], quoted: list[bool], answered: _Answered) -> list[bool]:
    """For each line, whether the referee's mail was pasted unmarked below
    it (were it an attribution): two of the lines below it, up to one
    quoted by a mark or an indent, are its lines.  A reply
    typed under an attribution left standing ("On ... wrote:" + "bid K")
    is the player's own, however long.  When the mail answered is not on
    record, four lines or more are taken for a pasted original: better a
    reply not read (and said so) than a quoted example played.  Counted in
    one pass from the last line up, so a mail of attributions is not read
    again below each one."""
    pasted = [False] * len(lines)
    below = echoed = 0  # lines below, up to the first quoted one, and those of them the mail's
    for index in range(len(lines) - 1, -1, -1):
        pasted[index] = echoed >= _ECHOED if answered.words else below >= _LONG_INDENT
        if quoted[index]:
            below = echoed = 0
        elif lines[index].strip():
            below += 1
            echoed += bool(answered.words) and answered.echoes(lines[index])
    return pasted


def _plain(line: str) -> str:
    """A line compared with the referee's mail: its words, in lower case."""
    return " ".join(line.split()).lower()
