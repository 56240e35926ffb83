"""What reaches a keeper's terminal or log never carries a control
character from a mail: an escape sequence in a Message-ID, a bounce's
diagnostic or a subject would act on the terminal it is printed to, and a
line break inside a log message would forge a log line.  Such characters
are written as visible escapes (``\\x1b``, ``\\u202e``) instead.

``LogFormatter`` does it for every log record's message (a traceback keeps
its lines); ``PrintableStream`` for what a command prints (its own line
breaks and tabs kept)."""

from __future__ import annotations

import logging
import re
from typing import Any, TextIO

# C0 and C1 controls, DEL, the line and paragraph separators, the bidi
# embeddings, overrides and isolates (which reorder what follows), the BOM.
_CONTROLS = "\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069\\ufeff"
_IN_OUTPUT = re.compile(f"[{_CONTROLS}]")
_IN_LOG_LINE = re.compile(f"[{_CONTROLS}\\t\\n]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escaped(text: str, one_line: bool = False) -> str:
    """``text`` with every control character written as its escape (with
    ``one_line``, tabs and line breaks too)."""
    return (_IN_LOG_LINE if one_line else _IN_OUTPUT).sub(_escape, text)


class LogFormatter(logging.Formatter):
    """A log line is one line, whatever a mail put into its message."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return escaped(super().formatMessage(record), one_line=True)


class PrintableStream:
    """A text stream that writes control characters as escapes."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(escaped(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, buffer ...
        return getattr(self.stream, name)
