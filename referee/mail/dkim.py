"""DKIM, SPF and DMARC, as the referee's own mail server judged them (RFC 8601).

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
    for words in _results(message, authserv_id):
        if words[0] != "dkim=pass":
            continue
        signer = _property(words, "header.d")
        if signer and (domain == signer or domain.endswith("." + signer)) and not _public(signer):
            return True
    return False


def sender_checked(message: Incoming, authserv_id: str) -> bool:
    """Whether the trusted server's verdict shows the mail comes from its
    From's domain: a DKIM signature as ``dkim_passed`` takes it, an SPF pass
    for an envelope sender of the From's registrable domain (DMARC's relaxed
    alignment), or a DMARC pass for the From's domain.  It says the From's
    domain sent the mail, not who wrote it: a domain's own users can still
    write in each other's names, if their provider lets them."""
    domain = message.sender.rpartition("@")[2]
    if not domain:
        return False
    if dkim_passed(message, authserv_id):
        return True
    for words in _results(message, authserv_id):
        if words[0] == "spf=pass":
            envelope = _property(words, "smtp.mailfrom").rpartition("@")[2]
            if envelope and _registrable(envelope) is not None and _registrable(envelope) == _registrable(domain):
                return True
        elif words[0] == "dmarc=pass" and _property(words, "header.from") == domain:
            return True
    return False


def _results(message: Incoming, authserv_id: str) -> list[list[str]]:
    """The results of the topmost Authentication-Results, each as its words
    in lower case, when the trusted server wrote it; else none."""
    top = header_text(message.headers, "Authentication-Results")  # the first is the topmost
    parts = [p.strip() for p in without_comments(top).split(";")]
    if parts[0].lower().split()[:1] != [authserv_id.lower()]:
        return []  # no verdict on top, or another server's, or one a sender wrote
    return [words for words in (part.lower().split() for part in parts[1:]) if words]


def _property(words: list[str], name: str) -> str:
    """A result's ``name=value`` (header.d, smtp.mailfrom ...), or ""."""
    return next((w.partition("=")[2].strip('"') for w in words if w.startswith(name + "=")), "")


def _public(domain: str) -> bool:
    """Whether ``domain`` is a public suffix (org, co.uk, github.io), by the
    list bundled with the publicsuffixlist package: never fetched at run time."""
    return _suffixes().is_public(domain)


def _registrable(domain: str) -> str | None:
    """The registrable domain of ``domain`` (mail.example.co.uk -> example.co.uk);
    None for a public suffix itself."""
    return _suffixes().privatesuffix(domain)


@cache
def _suffixes() -> PublicSuffixList:
    return PublicSuffixList()  # 30 ms to build: once, and only in DKIM mode
