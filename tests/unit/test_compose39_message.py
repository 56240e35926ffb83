"""Composer.message writes a mail as MIMEText and the email library would, byte for byte (issue 36)."""

from datetime import UTC, datetime
from email.header import Header
from email.mime.text import MIMEText
from email.utils import format_datetime, formataddr

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.config import Config
from referee.mail.compose import _SMTP, _UTF8_QP, Composer, encodable, header_safe

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=120)
NOW = datetime(2026, 11, 27, 15, 4, 5, tzinfo=UTC)


def _library(config: Config, to: str, subject: str, body: str, message_id: str, **optional: str) -> bytes:
    """The same mail built as a MIMEText and written by the email library."""
    mail = MIMEText(encodable(body), "plain", _UTF8_QP)
    mail["From"] = formataddr((config.name, config.address), charset="utf-8")
    mail["To"] = to
    subject = header_safe(subject)
    mail["Subject"] = subject if subject.isascii() else Header(subject, "utf-8")
    mail["Date"] = format_datetime(NOW)
    mail["Message-ID"] = message_id
    if optional.get("reply_to"):
        mail["Reply-To"] = optional["reply_to"]
    if optional.get("in_reply_to"):
        mail["In-Reply-To"] = optional["in_reply_to"]
        mail["References"] = optional["in_reply_to"]
    mail["Auto-Submitted"] = "auto-replied" if optional.get("in_reply_to") else "auto-generated"
    if optional.get("unsubscribe"):
        mail["List-Unsubscribe"] = f"<mailto:{optional['unsubscribe']}?subject=unsubscribe>"
    return mail.as_bytes(policy=_SMTP)


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(["Referee", "Der Schiedsrichter Über Alles", "A, B; C", "x" * 90]) | text,
    subject=text,
    body=text | st.sampled_from(["", "-- \nfoo", "a\tb \n" * 30, "é" * 80 + "\n"]),
    answering=st.booleans(),
)
def test_a_composed_mail_is_what_the_email_library_writes(name, subject, body, answering):
    """From (written once for every mail of the composer), To, Subject, the body: as MIMEText writes them."""
    config = Config(address="referee@example.org", name=name)
    composer = Composer(config)
    optional = {
        "reply_to": "referee+abc@example.org",
        "unsubscribe": "referee+u-abcdefghijklmnopqrstuvwxyz@example.org",
    }
    if answering:
        optional["in_reply_to"] = "<m1@example.net>"
    for to in ("alice@example.org", "bob@example.org"):  # (the second mail reuses the From line)
        message_id = f"<{to}.id@example.org>"
        _, raw = composer.message(to=[to], subject=subject, body=body, now=NOW, message_id=message_id, **optional)
        assert raw == _library(config, to, subject, body, message_id, **optional)
