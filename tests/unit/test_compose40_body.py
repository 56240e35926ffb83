"""A mail's body as the referee writes it (ASCII lines, a signature's "-- ")
is quoted-printable exactly as MIMEText writes it, by the short path of
compose._ascii_qp where it applies (ASCII, nothing to quote but blanks) and by the library where not
(issue 36, item 1)."""

from email.mime.text import MIMEText

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.mail.compose import _SMTP, _UTF8_QP, _ascii_qp, plain_text_bytes

# Lines as templates write them: words, blanks (at the end too), tabs, "=", shorter and longer than a line of
# quoted-printable (76 characters), long ones ending in a blank where the library has room for "=20" or not.
_LINE = st.builds(
    lambda pieces, end: "".join(pieces) + end,
    st.lists(st.sampled_from(["word", " ", "\t", "=", "x" * 30, "y" * 74, "z" * 76, "-- ", "é", "\x0b"]), max_size=6),
    st.sampled_from(["", "", " ", "\t", "  "]),
)
_BODY = st.builds(lambda lines, end: "\n".join(lines) + end, st.lists(_LINE, max_size=8), st.sampled_from(["", "\n"]))


def _library(body: str) -> bytes:
    return MIMEText(body, "plain", _UTF8_QP).as_bytes(policy=_SMTP)


@settings(max_examples=500, deadline=None)
@given(_BODY)
def test_a_body_of_ascii_lines_is_written_as_the_email_library_writes_it(body):
    assert plain_text_bytes([], body) == _library(body)


def test_the_short_path_takes_the_referee_s_own_mail_and_leaves_the_rest():
    signed = "Round 1 of game 7 is resolved.\n\n-- \nPure Skill [pure-skill-7], refereed by mail.\n"
    assert _ascii_qp(signed) == signed.replace("-- \n", "--=20\n")
    footer = "Game of Pure Skill [pure-skill-20 z273vqvb4pibxvy4], refereed by mail at referee@example.org.\n"
    assert _ascii_qp(footer) == footer[:75] + "=\n" + footer[75:]
    for mail in (signed, footer, "x" * 75 + " \n", "x" * 76 + " ", "x" * 150 + "\t"):
        assert plain_text_bytes([], mail) == _library(mail)
    for other in ("caf\u00e9\n", "a=b\n", "tab\x0b\n", "cr\r\n"):
        assert _ascii_qp(other) is None
        assert plain_text_bytes([], other) == _library(other)
