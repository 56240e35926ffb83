"""DKIM, as the referee's own mail server judged it (RFC 8601).

The referee does not verify signatures itself: the server that received
the mail did, and wrote its verdict in an Authentication-Results header
under its own name (the authserv-id).  Only that server's headers are
trusted; it removes any a sender forged under its name (RFC 8601 5).
"""

from __future__ import annotations

import re

from referee.mail.parse import Incoming

_COMMENT = re.compile(r"\([^()]*\)")


def dkim_passed(message: Incoming, authserv_id: str) -> bool:
    """Whether the trusted server found a valid DKIM signature of the From's
    domain (or a parent domain of it: relaxed alignment)."""
    domain = message.sender.rpartition("@")[2]
    for header in message.headers.get_all("Authentication-Results") or []:
        parts = [p.strip() for p in _COMMENT.sub(" ", str(header)).split(";")]
        if parts[0].lower().split()[:1] != [authserv_id.lower()]:
            continue  # another server's verdict, or one a sender wrote
        for result in parts[1:]:
            words = result.lower().split()
            if not words or words[0] != "dkim=pass":
                continue
            signer = next((w.partition("=")[2] for w in words if w.startswith("header.d=")), "")
            if signer and (domain == signer or domain.endswith("." + signer)):
                return True
    return False
