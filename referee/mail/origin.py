"""Where a mail came from, as far as the referee's own mail server says.

A From header proves nothing, and neither does anything else a sender
writes.  What the referee's own server adds on top of a mail can still tell
one sender's mail from another's, without proving who wrote it:

- ``checked``: the trusted server (``Config.trusted_authserv_id``) found that the
  From's domain sent it (``dkim.sender_checked``: aligned DKIM, SPF or
  DMARC).  Mail in another's name from elsewhere never is.
- ``net:<network>``: the network that handed the mail to the referee's mail
  server, by the address that server wrote in its Received header: the
  topmost Received header that names a public address in its from-clause
  (those above it are the mailbox provider's own hops, inside its network
  or without an address).  An IPv4 address counts by its /24, an IPv6 one by
  its /48: one host, or one sender's block of addresses, is one network.
- ``unknown``: neither (no trusted server configured, and no Received
  header with a public address: mail handed over by hand, say).

The origin keys the budgets of answers to mail that proves no seat
(``referee.limits``): mail from one network cannot spend what is kept for
another's, nor forged mail what is kept for checked mail.  A sender
who controls the headers below our server's can choose where the walk
lands only when our server wrote no public address (mail handed over on
a private network), and then gains no more than ``unknown``'s budgets.
"""

from __future__ import annotations

import ipaddress
import re

from referee.mail.dkim import sender_checked
from referee.mail.parse import Incoming

CHECKED = "checked"
UNKNOWN = "unknown"
_HOPS = 8  # Received headers walked from the top: a provider's own hops are a few
_FIELD = 2000  # characters of a Received header looked at
_LITERAL = re.compile(r"(helo=)?\[(?:ipv6:)?([0-9a-f:.]+)\]", re.IGNORECASE)  # "[192.0.2.1]", "[IPv6:2001:db8::1]"
_BY = re.compile(r"\sby\s", re.IGNORECASE)


def origin(message: Incoming, authserv_id: str | None) -> str:
    """``checked``, ``net:<network>`` or ``unknown`` (see the module's doc)."""
    if authserv_id and message.sender and sender_checked(message, authserv_id):
        return CHECKED
    network = connecting_network(message)
    return f"net:{network}" if network else UNKNOWN


def connecting_network(message: Incoming) -> str | None:
    """The network (``81.2.69.0/24``) of the public address that handed the
    mail to the referee's mail server, by the topmost Received header naming one."""
    for value in (message.headers.get_all("Received") or [])[:_HOPS]:
        address = _connecting_address(str(value)[:_FIELD])
        if address is not None and address.is_global:
            prefix = 24 if address.version == 4 else 48
            return str(ipaddress.ip_network(f"{address}/{prefix}", strict=False))
    return None


def _connecting_address(received: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a Received header's from-clause names for the connecting
    host: the last address literal before "by" that is not the HELO's own
    ("from HELO (rdns [ADDRESS])", Exim's "from [ADDRESS] (helo=...)")."""
    text = received.strip()
    if not text.lower().startswith("from"):
        return None  # a hop that names no sender ("by host with LMTP"), or not a Received at all
    clause = _BY.split(text.partition(";")[0], 1)[0]
    found = None
    for match in _LITERAL.finditer(clause):
        if match[1]:
            continue  # "helo=[1.2.3.4]": what the sender called itself
        try:
            found = ipaddress.ip_address(match[2])
        except ValueError:
            continue
    return found
