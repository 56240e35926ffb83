"""The two ways a request is turned down, shared by every layer that may say no."""

from __future__ import annotations


class EngineError(ValueError):
    """A keeper's request that cannot be carried out; the message says why."""


class Refusal(Exception):
    """A player's command that changes nothing; the player is told ``reason``.
    With ``legal``, the answer lists the moves the seat can make now;
    ``attempt`` says the line looked like a move (see Desk._error);
    ``suggestion`` is the legal move it was most likely meant as, if one."""

    def __init__(self, reason: str, legal: bool = False, attempt: bool = False, suggestion: str | None = None):
        super().__init__(reason)
        self.reason, self.legal, self.attempt, self.suggestion = reason, legal, attempt, suggestion
