"""DKIM, as the referee's own mail server judged it (RFC 8601).

The referee does not verify signatures itself: the server that received
the mail did, and wrote its verdict in an Authentication-Results header
under its own name (the authserv-id), on top of the mail as it came.  Only
that topmost header counts: any below it was there before our server saw the
mail, and a sender can write one under any name (RFC 8601 5).
"""

from __future__ import annotations

from functools import cache

from publicsuffixlist import PublicSuffixList

from referee.mail.parse import Incoming, header_text, without_comments


def dkim_passed(message: Incoming, authserv_id: str) -> bool:
    """Whether the trusted server found a valid DKIM signature of the From's
    domain, or of a parent domain of it that is not a public suffix (relaxed
    alignment: example.org may sign for mail.example.org, org for nobody)."""
    domain = message.sender.rpartition("@")[2]
    top = header_text(message.headers, "Authentication-Results")  # the first is the topmost
    parts = [p.strip() for p in without_comments(top).split(";")]
    if parts[0].lower().split()[:1] != [authserv_id.lower()]:
        return False  # no verdict on top, or another server's, or one a sender wrote
    for result in parts[1:]:
        words = result.lower().split()
        if not words or words[0] != "dkim=pass":
            continue
        signer = next((w.partition("=")[2] for w in words if w.startswith("header.d=")), "")
        if signer and (domain == signer or domain.endswith("." + signer)) and not _public(signer):
            return True
    return False


def _public(domain: str) -> bool:
    """Whether ``domain`` is a public suffix (org, co.uk, github.io), by the
    list bundled with the publicsuffixlist package: never fetched at run time."""
    return _suffixes().is_public(domain)


@cache
def _suffixes() -> PublicSuffixList:
    return PublicSuffixList()  # 30 ms to build: once, and only in DKIM mode
