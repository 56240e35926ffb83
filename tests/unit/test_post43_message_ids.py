"""A mail's Message-ID is the keyed digest docs/operations.md relies on:
mail handled again after a restore gets the very Message-IDs the players
hold, so the recipe may not change with the way it is computed."""

from __future__ import annotations

import hashlib
import hmac
import itertools

import pytest
from test_security import build

from referee.engine.post import Post


def documented_ids(key: bytes, domain: str, to: str, template: str, answers: str | None, tag: str | None) -> list[str]:
    """HMAC-SHA256(key, "message-id" NUL to-in-lower-case NUL template NUL
    answers NUL tag), its first 24 hex digits; the n-th such mail's with "-n"."""
    covered = "\0".join((to.lower(), template, answers or "", tag or "")).encode("utf-8", "surrogatepass")
    digest = hmac.new(key, b"message-id\0" + covered, hashlib.sha256).hexdigest()[:24]
    suffix = f".{tag}" if tag else ""
    return [f"<{digest}{suffix}@{domain}>", *(f"<{digest}-{n}{suffix}@{domain}>" for n in (2, 3))]


@pytest.mark.parametrize(
    ("to", "template", "answers", "tag"),
    [
        ("Alice@Example.org", "pure-skill/prompt", None, "g1p3"),
        ("bob@example.org", "reply", "<their-mail@example.net>", "g12p1"),
        ("carol@example.org", "over-limit", "sha256:ab", None),
        ("dörte@exämple.org", "reply", "<\udcff@example.net>", None),  # (a lone surrogate: a bad charset's)
    ],
)
def test_message_ids_follow_the_documented_recipe_under_each_key(tmp_path, to, template, answers, tag):
    for key in (b"first-key", b"second-key"):
        (tmp_path / key.decode()).mkdir()
        post: Post = build(tmp_path / key.decode(), secret_key=key).post
        made = list(itertools.islice(post._message_ids(to, template, answers, tag), 3))
        assert made == documented_ids(key, post.config.domain, to, template, answers, tag)
        assert made == list(itertools.islice(post._message_ids(to, template, answers, tag), 3))  # (asked again)
