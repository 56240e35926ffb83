"""Composing a mail: the quick serialiser writes what the email library would."""

from email import message_from_bytes, policy
from email.header import Header
from email.mime.text import MIMEText

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.mail.compose import _SMTP, _UTF8_QP, header_safe, plain_text_bytes


def _written(mail: MIMEText, body: str = "body") -> bytes:
    """``mail`` as Composer.message writes it, without building the MIMEText:
    its headers after MIMEText's own three, and its ``body``."""
    return plain_text_bytes(list(mail.raw_items())[3:], body)


header_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=120)


@settings(max_examples=300, deadline=None)
@given(
    body=st.text(st.characters(blacklist_categories=("Cs",)), max_size=400)
    | st.sampled_from(["", "a  \n", "=\n" * 40]),
    subject=header_text,
    name=header_text,
    to=st.lists(st.emails(), min_size=1, max_size=4),
    references=st.lists(st.emails(), max_size=10),
)
def test_the_quick_serialiser_writes_exactly_what_the_email_library_would(body, subject, name, to, references):
    mail = MIMEText(body, "plain", _UTF8_QP)
    subject = header_safe(subject)
    mail["From"] = f"{name} <referee@example.org>" if name.isascii() else Header(name, "utf-8")
    mail["To"] = ", ".join(to)
    mail["Subject"] = subject if subject.isascii() else Header(subject, "utf-8")
    mail["X-Raw"] = name  # unsanitised: control characters, runs of blanks, long lines
    if references:
        mail["References"] = " ".join(f"<{r}>" for r in references)
    assert _written(mail, body) == mail.as_bytes(policy=_SMTP)


@settings(max_examples=500, deadline=None)
@given(
    name=st.sampled_from(["List-Unsubscribe", "Archived-At", "Subject", "X-A"]),
    word=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=300),
)
def test_a_value_of_one_word_is_written_as_the_email_library_would_fold_it(name, word):
    """On its field's line if it fits, else alone on the next (a List-Unsubscribe token makes it long)."""
    mail = MIMEText("body", "plain", _UTF8_QP)
    mail[name] = word
    assert _written(mail) == mail.as_bytes(policy=_SMTP)


@settings(max_examples=1000, deadline=None)
@given(
    name=st.sampled_from(["Subject", "List-Unsubscribe", "X-A", "X-A-Rather-Long-Field-Name-Of-Forty-Characters"]),
    # any printable ASCII: blanks, runs of them, ";", "," and x's
    words=st.lists(
        st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=0, max_size=40),
        min_size=1,
        max_size=12,
    ),
    separator=st.sampled_from([" ", "  ", "; ", ", ", ";", ","]),
)
def test_a_line_of_printable_ascii_is_folded_as_the_email_library_would(name, words, separator):
    """A subject with a seat's token is too long for one line: folded by its shape, as the library would."""
    value = separator.join(words)
    mail = MIMEText("body", "plain", _UTF8_QP)
    mail[name] = value
    assert _written(mail) == mail.as_bytes(policy=_SMTP)


def test_a_round_mail_s_subject_is_folded_as_the_email_library_would():
    for token in ("mdgqhwtw7wbyxctc", "edfpgfsycao2kjbp"):
        mail = MIMEText("body", "plain", _UTF8_QP)
        mail["Subject"] = f"[pure-skill-1 {token}] Round 1 of 13: the prize is the 9 of spades, or a x"
        assert b"\r\n " in _written(mail)  # (folded: too long for a line)
        assert _written(mail) == mail.as_bytes(policy=_SMTP)


def test_a_composed_mail_reads_back_as_written(engine):
    subject = "Re: [pure-skill-1] Round 3 of 13 — ünïcode and a rather long subject line " * 2
    message_id, raw = engine.post.composer.message(
        to=["alice@example.org"],
        subject=subject,
        body="Bid 7.\n-- \nthe referee\n",
        now=engine.clock(),
        in_reply_to="<a@b>",
        references="<x@y> <a@b>",
    )
    mail = message_from_bytes(raw, policy=policy.default)
    assert mail["Subject"] == header_safe(subject) and mail["Message-ID"] == message_id
    assert mail.get_content().replace("\r\n", "\n") == "Bid 7.\n-- \nthe referee\n"
    assert all(len(line) <= 998 for line in raw.split(b"\r\n")) and b"\n" not in raw.replace(b"\r\n", b"")
