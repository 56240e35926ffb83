"""The IMAP source over TLS: STARTTLS (which aioimaplib lacks, so the source
upgrades the connection itself) and implicit TLS, against a real Dovecot."""

import asyncio
import ssl

import pytest

from referee.config import Server
from referee.mail.imap import ImapSource
from referee.mail.source import SourceError
from referee.store import Store

RAW = (
    b"From: alice@example.org\r\nTo: referee@example.org\r\nSubject: bid\r\nMessage-ID: <tls-{n}@x>\r\n\r\nbid {n}\r\n"
)


def trusting(dovecot_tls) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(dovecot_tls.ca_file))


async def fetch_all(source: ImapSource) -> list[bytes]:
    try:
        return [m.raw for m in await source.fetch()]
    finally:
        await source.close()


@pytest.mark.parametrize("security", ["starttls", "tls"])
def test_mail_is_read_over_tls(dovecot_tls, tmp_path, security):
    n = len(security)
    dovecot_tls.append("referee@example.org", RAW.replace(b"{n}", str(n).encode()))
    port = dovecot_tls.imap_port if security == "starttls" else dovecot_tls.imaps_port
    server = Server(host="127.0.0.1", port=port, security=security, username="referee@example.org", password="secret")
    source = ImapSource(server, Store(tmp_path / "games.db"), timeout=10, ssl_context=trusting(dovecot_tls))
    bodies = asyncio.run(fetch_all(source))
    assert any(f"bid {n}".encode() in body for body in bodies)


def test_an_untrusted_certificate_is_refused(dovecot_tls, tmp_path):
    server = Server(
        host="127.0.0.1", port=dovecot_tls.imaps_port, security="tls", username="referee@example.org", password="secret"
    )
    source = ImapSource(server, Store(tmp_path / "games.db"), timeout=10)  # the system's CAs
    with pytest.raises(SourceError, match="cannot connect"):
        asyncio.run(fetch_all(source))
