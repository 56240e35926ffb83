"""Reading a received mail: when the server got it, who sent it, which
message it is, and the lines the player wrote (each one a command)."""

from __future__ import annotations

import hashlib
from datetime import timedelta, timezone
from email.message import EmailMessage
from email.utils import format_datetime

import pytest
from conftest import PLAYERS, START, body_of, make_mail, seat_address
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.desk import COMMANDS
from referee.mail.commands import command_lines, first_own_line, own_lines, without_tags
from referee.mail.parse import parse
from referee.mail.tokens import tokens_named

ALICE = PLAYERS[0]
NOW = START + timedelta(days=1)


def mail(headers: list[tuple[str, str]], body: str = "bid 5") -> bytes:
    lines = [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines + ["Content-Type: text/plain; charset=utf-8", "", body]) + "\r\n").encode()


def html_mail(html: str, *, plain: str | None = None, to: str = "referee@example.org") -> bytes:
    message = EmailMessage()
    message["From"] = ALICE
    message["To"] = to
    message["Subject"] = "Re: [pure-skill-1] Round 1 of 13"
    message["Message-ID"] = "<html@example.net>"
    message["Received"] = f"from client by mx.example.org; {format_datetime(START)}"
    if plain is None:
        message.set_content(html, subtype="html")
    else:
        message.set_content(plain)
        message.add_alternative(html, subtype="html")
    return bytes(message)


# -- receipt time ------------------------------------------------------------------------


def test_the_receipt_time_is_the_topmost_received_header():
    ours, earlier, sent = START, START - timedelta(minutes=7), START - timedelta(days=2)
    raw = mail(
        [
            ("Received", f"from relay.example.net by mx.example.org; {format_datetime(ours)}"),
            ("Received", f"from client by relay.example.net; {format_datetime(earlier)}"),
            ("Delivery-date", format_datetime(earlier)),
            ("From", ALICE),
            ("Date", format_datetime(sent)),
        ]
    )
    assert parse(raw, NOW).received_at == ours


def test_the_receipt_time_is_in_utc_whatever_zone_the_server_writes():
    local = START.astimezone(timezone(timedelta(hours=-5)))
    raw = mail([("Received", f"by mx.example.org; {format_datetime(local)} (EST)"), ("From", ALICE)])
    received = parse(raw, NOW).received_at
    assert received == START
    assert received.utcoffset() == timedelta(0)


def test_without_received_the_delivery_date_counts():
    raw = mail(
        [
            ("Delivery-date", format_datetime(START)),
            ("From", ALICE),
            ("Date", format_datetime(START - timedelta(days=3))),
        ]
    )
    assert parse(raw, NOW).received_at == START


def test_without_either_header_the_receipt_time_is_now_never_the_date_header():
    raw = mail([("From", ALICE), ("Date", format_datetime(START - timedelta(days=3)))])
    assert parse(raw, NOW).received_at == NOW


def test_a_sender_cannot_backdate_a_bid_with_the_date_header(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    deadline = START + timedelta(days=3)
    clock.advance(days=4)
    raw = mail(
        [
            ("Received", f"by mx.example.org; {format_datetime(deadline + timedelta(hours=2))}"),
            ("From", ALICE),
            ("To", seat_address(engine, ALICE)),
            ("Subject", "Re: [pure-skill-1]"),
            ("Date", format_datetime(START)),
            ("Message-ID", "<backdated@example.net>"),
        ]
    )
    assert engine.ingest(raw).code == "refused"
    assert engine.store.moves(1) == []
    answer = engine.store.outbox()[-1]  # the reply says why: received after the deadline
    assert answer["recipients"] == [ALICE] and "after the deadline" in body_of(answer["raw"])


# -- who and which -----------------------------------------------------------------------------


def test_the_key_is_the_message_id():
    raw = make_mail(ALICE, "bid 5", message_id="<abc.123@example.net>")
    incoming = parse(raw, NOW)
    assert incoming.key == incoming.message_id == "<abc.123@example.net>"


def test_without_a_message_id_the_key_is_the_sha256_of_the_bytes():
    raw = mail([("From", ALICE), ("Subject", "bid 5")])
    incoming = parse(raw, NOW)
    assert incoming.message_id is None
    assert hashlib.sha256(raw).hexdigest() in incoming.key
    assert parse(raw, NOW + timedelta(hours=1)).key == incoming.key
    other = mail([("From", ALICE), ("Subject", "bid 6")])
    assert parse(other, NOW).key != incoming.key


def test_the_sender_is_the_from_address_in_lower_case():
    raw = mail([("From", '"Alice L." <Alice@Example.ORG>'), ("Sender", "list@example.net")])
    assert parse(raw, NOW).sender == ALICE


def test_recipients_come_from_delivered_to_x_original_to_to_and_cc():
    raw = mail(
        [
            ("Delivered-To", "Referee+abcdefghijklmnop@example.org"),
            ("X-Original-To", "referee+qrstuvwxyz234567@example.org"),
            ("To", "Someone <someone@example.net>"),
            ("Cc", "referee@example.org, bob@example.org"),
            ("From", ALICE),
        ]
    )
    recipients = parse(raw, NOW).recipients
    assert "referee+abcdefghijklmnop@example.org" in recipients
    assert "referee+qrstuvwxyz234567@example.org" in recipients
    assert {"someone@example.net", "referee@example.org", "bob@example.org"} <= set(recipients)


def test_tokens_are_named_by_plus_addresses_and_subject_tags():
    raw = mail(
        [
            ("Delivered-To", "Referee+ABCDEFGHIJKLMNOP@example.org"),
            ("To", "referee+pure-skill-1@example.org, other+qrstuvwxyz234567@example.org"),
            ("From", ALICE),
            ("Subject", "Re: [pure-skill-1 mnopqrstuvwxyz23] Round 1 of 13"),
        ]
    )
    # the old per-game plus-address and another mailbox's plus-address are no tokens
    assert tokens_named(parse(raw, NOW), "referee@example.org") == ["abcdefghijklmnop", "mnopqrstuvwxyz23"]


def test_a_mail_with_broken_headers_still_parses():
    raw = b"From: \r\nSubject: =?bogus?Q?x?=\r\nReceived: garbage; not a date\r\n\r\nbid 5\r\n"
    incoming = parse(raw, NOW)
    assert incoming.sender == ""
    assert incoming.received_at == NOW
    assert first_own_line(incoming.text) == "bid 5"


# -- the body -----------------------------------------------------------------------------------


def test_an_html_only_body_is_read_as_text():
    incoming = parse(
        html_mail(
            '<html><body><div dir="ltr">bid K<br></div><div><br></div><blockquote>bid 2</blockquote></body></html>'
        ),
        NOW,
    )
    assert "<" not in incoming.text
    assert first_own_line(incoming.text) == "bid K"


def test_an_html_only_bid_is_taken(engine):
    engine.new_game("pure-skill", PLAYERS)
    raw = html_mail("<div dir=ltr><p>Bid queen</p></div>", to=seat_address(engine, ALICE))
    assert engine.ingest(raw).code == "move"
    assert engine.store.final_moves(1, 1)[0]["move"] == "bid Q"


def test_inline_html_tags_do_not_split_a_line():
    incoming = parse(html_mail("<p>Bid <b>queen</b></p>"), NOW)
    assert first_own_line(incoming.text) == "Bid queen"


def test_the_plain_part_is_preferred_to_the_html_part():
    incoming = parse(html_mail("<p>bid 2</p>", plain="bid 9\n"), NOW)
    assert first_own_line(incoming.text) == "bid 9"


def test_html_entities_are_decoded():
    incoming = parse(html_mail("<div>bid&nbsp;K</div>"), NOW)
    assert first_own_line(incoming.text).split() == ["bid", "K"]


def test_html_head_and_style_are_not_text():
    html = "<html><head><title>Re: game</title><style>p { margin: 0 }</style></head><body><p>bid K</p></body></html>"
    assert first_own_line(parse(html_mail(html), NOW).text) == "bid K"


@pytest.mark.parametrize("encoding", ["base64", "quoted-printable"])
def test_an_encoded_plain_body_is_decoded(encoding):
    message = EmailMessage()
    message["From"] = ALICE
    message.set_content("bid Königin?\nbid 10\n", cte=encoding)
    text = parse(bytes(message), NOW).text
    assert text.splitlines()[:2] == ["bid Königin?", "bid 10"]


def test_crlf_line_ends_are_plain_newlines():
    incoming = parse(make_mail(ALICE, "bid 5\r\n\r\n-- \r\nAlice"), NOW)
    assert "\r" not in incoming.text
    assert first_own_line(incoming.text) == "bid 5"


# -- the player's own lines ---------------------------------------------------------------------


def test_the_first_own_line_skips_blank_and_quoted_lines():
    assert first_own_line("\n\n> bid 3\n>> bid 4\n  \n  bid 7  \nbid 8\n") == "bid 7"


def test_the_first_own_line_stops_at_the_signature():
    assert first_own_line("-- \nbid 3\n") is None
    assert first_own_line("\n> quoted\n-- \nAlice\n") is None
    assert first_own_line("bid 2\n-- \nbid 3\n") == "bid 2"


def test_an_attribution_line_and_its_quote_are_skipped():
    text = "On Sat, 21 Nov 2026 at 12:00, Referee <referee@example.org> wrote:\n> prompt\nbid 3\n"
    assert first_own_line(text) == "bid 3"  # bottom-posted
    assert first_own_line("bid 4\n\n" + text) == "bid 4"  # top-posted


def test_outlook_s_unquoted_original_ends_the_own_text():
    assert first_own_line("From: Referee <referee@example.org>\nSent: Saturday\nbid 3\n") is None
    assert first_own_line("-----Original Message-----\nbid 3\n") is None


@pytest.mark.parametrize(
    "marker",
    [
        "----- Forwarded message from Referee <referee@example.org> -----",  # mutt
        "---------- Forwarded message ---------",  # Gmail
        "Begin forwarded message:",  # Apple Mail
        "-------- Message transféré --------",  # Thunderbird, fr
    ],
)
def test_a_forwarded_original_ends_the_own_text(marker):
    assert own_lines(f"FYI\n\n{marker}\nDate: Sat\n\n    bid K\n") == ["FYI"]


def test_a_quoted_attribution_line_is_only_a_quote():
    assert first_own_line("> On Friday Bob wrote:\nbid 6\n") == "bid 6"


def test_every_own_line_is_read_in_order():
    text = "Hi,\n\n> bid 3\nbid 7\n  status  \nOn Friday Bob wrote:\n> hand\nresign\n-- \nhelp\n"
    assert own_lines(text) == ["Hi,", "bid 7", "status", "resign"]
    assert own_lines(text, 2) == ["Hi,", "bid 7"]
    assert first_own_line(text) == "Hi,"


def test_the_subject_is_read_only_when_the_body_has_no_own_line():
    raw = make_mail(ALICE, "> bid 3\n", subject="Re: RE: Fwd: [pure-skill-1] bid 10")
    assert command_lines(parse(raw, NOW)) == ["bid 10"]
    raw = make_mail(ALICE, "", subject="Re: [pure-skill-1 abcdefghijklmnop] bid 10")
    assert command_lines(parse(raw, NOW)) == ["bid 10"]
    raw = make_mail(ALICE, "bid 2", subject="Re: [pure-skill-1] bid 10")
    assert command_lines(parse(raw, NOW)) == ["bid 2"]
    raw = make_mail(ALICE, "Hi,\nbid 2\nstatus", subject="Re: [pure-skill-1] bid 10")
    assert command_lines(parse(raw, NOW)) == ["Hi,", "bid 2", "status"]
    raw = make_mail(ALICE, "> quoted only\n", subject="Re: [pure-skill-1 abcdefghijklmnop]")
    assert command_lines(parse(raw, NOW)) == []


def test_a_mail_is_read_no_further_than_one_line_past_the_limit():
    from referee.mail.commands import MAX_LINES

    raw = make_mail(ALICE, "\n".join(f"bid {n}" for n in range(100)))
    assert command_lines(parse(raw, NOW)) == [f"bid {n}" for n in range(MAX_LINES + 1)]


def test_without_tags_drops_reply_prefixes_and_game_tags():
    assert without_tags("Re: AW: [pure-skill-1 abcdefghijklmnop] Round 1 of 13") == "Round 1 of 13"
    assert without_tags("Fwd: [pure-skill-12]   bid  K") == "bid K"
    assert without_tags("[pure-skill abcdefghijklmnop] Join") == "Join"
    assert without_tags("Re: [pure-skill-1]") == ""


@pytest.mark.parametrize(
    ("line", "word", "argument"),
    [
        ("STATUS", "status", ""),
        ("  Help!  ", "help", ""),
        ("join Pure-Skill", "join", "Pure-Skill"),
        ("TIMEZONE   Europe/Berlin", "timezone", "Europe/Berlin"),
        ("Quit.", "quit", ""),
        ("*STATUS*", "status", ""),
        ("- help", "help", ""),
        ("\uff28\uff25\uff2c\uff30", "help", ""),  # full-width
        ("Timezone: America/Port_of_Spain.", "timezone", "America/Port_of_Spain"),
        ("JOIN: pure-skill!", "join", "pure-skill"),
        ("I resign.", "resign", ""),
        ("bid 5", "", ""),  # a move, not a command
        ("Hi,", "", ""),
        ("Thanks for the game", "", ""),
        ("Note: resign if you must", "", ""),  # a sentence, not RESIGN
        ("Resign.", "resign", ""),
        ("I resign", "resign", ""),
        ("I'll resign if I lose this round.", "", ""),  # what cannot be undone counts only said alone
        ("Resign?", "", ""),
        ("Hi, resign", "", ""),
        ("I'll end up bidding K", "", ""),  # END and QUIT stop the reading: never in a sentence
        ("I quit smoking", "", ""),
        ("I'll leave it to you", "", ""),
        ("I'll join you for a beer", "", ""),  # after a lead-in, an argument must name a game
        ("Let me list my reasons", "", ""),
        ("I'd like to join Ice Ice Baby", "join", "Ice Ice Baby"),
        ("Command: status", "status", ""),
    ],
)
def test_a_line_is_read_as_a_command_word_and_its_argument(line, word, argument):
    command = COMMANDS.read(line)
    assert (command.word, command.argument, command.line) == (word, argument, line.strip())


_words = st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=8)
_line = st.lists(_words, min_size=1, max_size=5).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(quoted=st.lists(_line, max_size=4), blanks=st.integers(0, 3), own=_line, after=st.lists(_line, max_size=3))
def test_the_first_own_line_is_the_first_unquoted_line(quoted, blanks, own, after):
    text = "\n".join(["> " + line for line in quoted] + [""] * blanks + [own] + after)
    assert first_own_line(text) == own


# -- never answered (found in review) ------------------------------------------------------------


def _classified(headers: dict[str, str], sender: str = "alice@example.org") -> str | None:
    from conftest import make_mail

    from referee.mail.classify import never_answer

    return never_answer(parse(make_mail(sender, "bid 3", headers=headers), NOW), "referee@example.org")


def test_auto_submitted_no_with_a_comment_is_a_person_s_mail():
    assert _classified({"Auto-Submitted": "no (sent by hand)"}) is None


@pytest.mark.parametrize(
    "headers",
    [
        {"Auto-Submitted": "auto-replied (vacation)"},
        {"Precedence": "auto_reply"},
        {"List-Unsubscribe": "<mailto:leave@lists.example.org>"},
        {"List-Post": "<mailto:club@lists.example.org>"},
    ],
)
def test_automatic_and_list_mail_is_never_answered(headers):
    assert _classified(headers) is not None


def test_mail_from_our_own_plus_address_is_ours():
    assert _classified({}, sender="referee+abcdefghijklmnop@example.org") == "our own mail"
    assert _classified({}, sender="referee+pure-skill-1@example.org") == "our own mail"
    assert _classified({}, sender="referee.fan@example.org") is None


# -- more clients and charsets ---------------------------------------------------------------


def _plain(body: bytes, content_type: str = "text/plain") -> bytes:
    head = (
        f"From: alice@example.org\r\nTo: referee@example.org\r\nSubject: Re: x\r\n"
        f"Message-ID: <p@x>\r\nMIME-Version: 1.0\r\nContent-Type: {content_type}\r\n"
        "Content-Transfer-Encoding: 8bit\r\n\r\n"
    )
    return head.encode() + body


def test_format_flowed_soft_breaks_are_joined_and_quotes_kept():
    text = parse(
        _plain(b"bid \r\nK\r\n> quoted \r\n> prompt\r\n", "text/plain; charset=utf-8; format=flowed"), NOW
    ).text
    assert text.splitlines() == ["bid K", "> quoted prompt"]
    assert first_own_line(text) == "bid K"


def test_format_flowed_delsp_removes_the_added_space():
    text = parse(_plain(b"bid  \r\nK\r\n", "text/plain; charset=utf-8; format=flowed; delsp=yes"), NOW).text
    assert text.splitlines()[0] == "bid K"


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("Jürgen: bid K".encode(), "text/plain"),  # undeclared 8-bit UTF-8
        ("Jürgen: bid K".encode("latin-1"), "text/plain"),  # undeclared Latin-1
        ("Jürgen: bid K".encode("latin-1"), "text/plain; charset=x-unheard-of"),
        ("Jürgen: bid K".encode("cp1252"), "text/plain; charset=windows-1252"),
    ],
)
def test_any_charset_or_none_is_read(body, content_type):
    assert parse(_plain(body, content_type), NOW).text.startswith("Jürgen: bid K")


@pytest.mark.parametrize(
    "attribution",
    [
        "On Sat, Nov 21, 2026 at 12:00 PM Referee <\nreferee@example.org> wrote:",  # Gmail, wrapped
        "Am 21.11.2026 um 12:00 schrieb Referee <referee@example.org>:",
        "Le 21 nov. 2026 à 12:00, Referee <referee@example.org> a écrit :",
        "El sáb, 21 nov 2026 a las 12:00, Referee escribió:",
        "Op 21 nov. 2026 om 12:00 schreef Referee:",
    ],
)
def test_attribution_lines_in_many_forms_are_skipped(attribution):
    assert first_own_line(f"{attribution}\n> the prompt\n\nbid 5\n") == "bid 5"


def test_outlook_web_s_underline_block_ends_the_own_text():
    assert first_own_line("bid 9\n\n________________________________\nFrom: Referee\n") == "bid 9"
    assert first_own_line("________________________________\nFrom: Referee\nbid 2\n") is None


def test_an_oversized_message_is_not_parsed_past_its_headers():
    raw = _plain(b"bid K\r\n" + b"x" * 5000)
    message = parse(raw, NOW, max_size=1000)
    assert message.oversized and message.text == "" and message.sender == "alice@example.org"
    assert not parse(raw, NOW, max_size=10_000).oversized


# -- hostile input (issue 12) -----------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "Alice <alice@example.org>",
        '"Smith, Alice" <alice@example.org>',
        "alice@example.org",
        "alice@example.org (Alice)",
        "<Alice@Example.org>",
        "=?utf-8?q?Al=C3=AFce?= <alice@example.org>",
        "Al\u00efce L. <alice@example.org>",  # a raw UTF-8 display name
        '"alice@example.org" <alice@example.org>',
        "Alice\r\n <alice@example.org>",  # folded
        "Alice (home) <alice@example.org>",
        "Alice <alice@example.org> (home)",
        '"Eve" (not alice@example.org) <alice@example.org>',
    ],
)
def test_an_ordinary_from_names_its_address(value):
    assert parse(mail([("From", value)]), NOW).sender == ALICE


@pytest.mark.parametrize(
    "headers",
    [
        [("From", "alice@example.org <eve@example.org>")],
        [("From", "<alice@example.org> eve@example.org")],
        [("From", "=?utf-8?q?alice@example.org?=")],  # the address in an encoded word
        [("From", 'ali"ce@example.org')],
        [("From", "Alice <alice@example.org>, eve@example.org")],
        [("From", "friends: alice@example.org;")],
        [("From", "=?utf-8?q?=0BName:?=")],  # decodes to a control character
        [("From", "Alice\x0b <alice@example.org>")],
        [("From", "<>")],
        [("From", ALICE), ("From", "eve@example.org")],
    ],
)
def test_an_ambiguous_or_malformed_from_names_nobody(headers):
    assert parse(mail(headers), NOW).sender == ""


def test_an_internationalised_from_names_its_address():
    raw = "From: J\u00f6rg <j\u00f6rg@b\u00fccher.example>\r\n\r\nbid 5\r\n".encode()
    assert parse(raw, NOW).sender == "j\u00f6rg@b\u00fccher.example"


@pytest.mark.parametrize(
    "address", ["a\u2028b@example.org", "a\u00a0b@example.org", "a\x85b@example.org", "a\u200bb@example.org"]
)
def test_a_from_address_with_an_invisible_or_breaking_character_names_nobody(address):
    assert parse(f"From: {address}\r\n\r\nbid 5\r\n".encode(), NOW).sender == ""


def test_a_from_address_in_bytes_that_are_not_utf8_names_nobody():
    assert parse(b"From: j\xf6rg@example.org\r\n\r\nbid 5\r\n", NOW).sender == ""


def test_a_second_from_among_thousands_of_fields_still_makes_the_sender_nobody():
    raw = mail([("From", ALICE)] + [("Received", "x")] * 600 + [("From", "eve@example.org")])
    assert parse(raw, NOW).sender == ""


def test_a_from_line_with_a_space_before_its_colon_makes_the_sender_nobody():
    """Python's parser sets "From :" aside; servers reading obsolete syntax take it as a From."""
    assert parse(mail([("From", ALICE), ("From ", "eve@example.org")]), NOW).sender == ""


def test_an_address_whose_lower_case_is_another_ascii_address_names_nobody():
    assert parse("From: \u212aate@example.org\r\n\r\nbid 5\r\n".encode(), NOW).sender == ""


def test_a_from_too_long_to_keep_whole_names_nobody():
    from referee.mail.parse import MAX_FIELD

    assert parse(mail([("From", '"' + "x" * MAX_FIELD + f'" <{ALICE}>')]), NOW).sender == ""


def test_the_fields_the_referee_reads_are_kept_among_thousands_of_others():
    junk = [(f"X-Junk-{i}", "x") for i in range(2000)]
    raw = mail(
        junk
        + [
            ("From", f"Al\u00efce <{ALICE}>"),
            ("To", "referee+abcdefghijklmnop@example.org"),
            ("Subject", "Re: [pure-skill-1] Round 1"),
            ("Message-ID", "<late@example.net>"),
            ("X-Long", "y" * 10_000),
        ]
    )
    incoming = parse(raw, NOW)
    assert incoming.sender == ALICE
    assert incoming.recipients == ("referee+abcdefghijklmnop@example.org",)
    assert incoming.subject == "Re: [pure-skill-1] Round 1"
    assert incoming.message_id == "<late@example.net>"
    assert first_own_line(incoming.text) == "bid 5"  # its Content-Type came last of all
    assert len(incoming.headers) <= 600  # the rest are dropped


def test_a_raw_utf8_header_survives_a_long_field_beside_it():
    raw = mail(
        [
            ("From", f"J\u00fcrgen <{ALICE}>"),
            ("Subject", "Gr\u00fc\u00dfe: bid 5"),
            ("References", "<a@example.net> " * 1000),
        ]
    )
    incoming = parse(raw, NOW)
    assert (incoming.sender, incoming.subject) == (ALICE, "Grüße: bid 5")


@pytest.mark.parametrize("charset", ["idna", "undefined", '"ut\x00f-8"', "punycode"])
def test_a_charset_no_text_can_be_decoded_with_is_read_as_if_undeclared(charset):
    text = parse(_plain("Jürgen: bid K".encode(), f"text/plain; charset={charset}"), NOW).text
    assert text.startswith("Jürgen: bid K")


def test_html_the_standard_parser_gives_up_on_keeps_the_text_before():
    incoming = parse(html_mail("<p>bid K</p><![CDA[ <p>more</p>"), NOW)
    assert first_own_line(incoming.text) == "bid K"


@pytest.mark.parametrize("reference", ["&#" + "1" * 5000 + ";", "&#" + "9" * 8, "&#x" + "f" * 5000 + ";"])
def test_a_character_reference_beyond_unicode_reads_as_a_replacement_character(reference):
    """(html.unescape raised ValueError on a decimal one of over 4,300 digits: the mail failed.)"""
    assert parse(html_mail(f"<p>bid K</p><p>{reference}</p>"), NOW).text.split() == ["bid", "K", "\ufffd"]


def test_a_received_date_beyond_what_utc_can_hold_is_no_receipt_time():
    raw = mail(
        [
            ("Received", "by mx.example.org; Fri, 31 Dec 9999 23:59:59 -1200"),
            ("Delivery-date", format_datetime(START)),
            ("From", ALICE),
        ]
    )
    assert parse(raw, NOW).received_at == START


def test_a_mail_whose_headers_hold_many_boundaries_still_has_its_headers():
    raw = mail([("From", ALICE)] + [("X-Junk", "boundary=b")] * 300)
    incoming = parse(raw, NOW)
    assert incoming.sender == ALICE
    assert incoming.headers.get_content_type() == "text/plain"


_ATEXT = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+/=?^_`{|}~-")


@settings(max_examples=500)
@given(char=st.characters(), where=st.sampled_from(["local", "domain"]))
def test_an_address_may_hold_any_letter_of_its_part_and_any_non_ascii_character(char, where):
    """RFC 5322 atext (a local part) or letter, digit and hyphen (a domain
    label), and, for RFC 6532, any printable character from U+00A1 up; a
    dot between two of them."""
    address = f"a{char}b@example.org" if where == "local" else f"alice@ex{char}ample.org"
    allowed = (
        _ATEXT if where == "local" else set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
    ) | {"."}
    readable = char in allowed or (ord(char) >= 0xA1 and char.isprintable())
    raw = f"From: Alice <{address}>\r\nSubject: x\r\n\r\nbid 5\r\n".encode("utf-8", "surrogatepass")
    sender = parse(raw, START).sender
    assert (sender == address.lower()) == readable, (repr(char), sender)


@pytest.mark.parametrize("line", ["1<" * 100_000, "  1<" * 50_000, "On 1 " + "1<" * 100_000 + " wrote:"])
def test_a_hostile_line_is_read_in_linear_time(line):
    """Lines a quote's patterns would backtrack over quadratically (96 s for
    the first before they were kept to attribution-sized lines); bench/engine.py
    times them.  Not one of them is an attribution."""
    assert own_lines(f"{line}\nbid 7\n", 2) == [line.strip(), "bid 7"]


PROMPT = [
    "Round 1 of 13 of game 1 is open.",
    "",
    "To bid, reply to this mail with one line, for example:",
    "",
    "    bid K",
    "",
    "Cards may be written A (or ace, 1), 2 to 10, J (jack), Q (queen), K (king),",
    "in any case.",
]


def test_a_lone_quoted_example_indented_further_than_the_referee_wrote_it_is_a_quote():
    assert own_lines("OK\n\n\t    bid K\n\nthanks\n", answered=PROMPT) == ["OK", "thanks"]
    assert own_lines("  bid K\n", answered=PROMPT) == ["bid K"]  # her own, indented less


def test_an_unmarked_copy_of_the_referees_mail_is_a_quote_whoever_heads_it():
    """Outlook in Danish: a header the reader does not know, the original unmarked below it."""
    original = "\n".join(PROMPT)
    body = f"bid Q\n\nFra: Referee <referee@example.org>\nSendt: 21. november 2026\n\n{original}\n"
    assert own_lines(body, answered=PROMPT) == ["bid Q"]
    body = f"bid Q\n\nAfsender ukendt\n\n{original}\n"
    assert "bid K" not in own_lines(body, answered=PROMPT)


def test_an_attribution_left_standing_above_a_reply_does_not_hide_it():
    assert own_lines("On Sat, 21 Nov 2026 at 12:00, Referee <referee@example.org> wrote:\n\nbid 7\n") == ["bid 7"]
    assert own_lines("Referee <referee@example.org> writes:\n\nbid 7\n") == ["bid 7"]
    long = (
        "On Sat, 21 Nov 2026 at 12:00, Referee <referee@example.org> wrote:\n\nHi referee,\n\nbid K\n\nThanks,\nAlice"
    )
    assert own_lines(long, answered=PROMPT) == ["Hi referee,", "bid K", "Thanks,", "Alice"]
    # an original pasted unmarked below it is not hers
    pasted = "On Sat, 21 Nov 2026 at 12:00, Referee <referee@example.org> wrote:\n" + "\n".join(PROMPT)
    assert own_lines(f"bid 7\n\n{pasted}\n", answered=PROMPT) == ["bid 7"]


def test_a_copied_example_above_a_signature_is_the_players_own():
    """Her "-- " is the referee's footer line too; the two are no neighbours there."""
    prompt = [*PROMPT, "", "-- ", "Game 1, refereed by mail."]
    assert own_lines("    bid K\n\n-- \nAlice\n", answered=prompt) == ["bid K"]


@pytest.mark.parametrize("line", ["bid->K", "bid-> K", "play->queen"])
def test_an_arrow_is_no_supercite_quote(line):
    assert own_lines(f"{line}\n") == [line]


@pytest.mark.parametrize(
    "header",
    [
        "Fra: Referee",
        "Kimden: Referee",
        "差出人: Referee",
        "*From:* Referee",
        "-----Oprindelig meddelelse-----",
        "-------- Message original --------",
    ],
)
def test_outlooks_original_in_other_languages_ends_the_own_text(header):
    assert own_lines(f"bid Q\n\n{header}\n\n    bid K\n") == ["bid Q"]


def test_an_original_pasted_with_its_indent_lost_is_a_quote_with_or_without_an_attribution():
    """An HTML reply whose quote is no blockquote, or a client that strips
    leading spaces: the example "bid K" stands flush left among the copy."""
    flat = "\n".join(line.strip() for line in PROMPT)
    attribution = "On Saturday, November 21, 2026, 12:00:00 PM GMT, Referee <referee@example.org> wrote:"
    assert own_lines(f"Hi\n{attribution}\n{flat}\n", answered=PROMPT) == ["Hi"]
    assert "bid K" not in own_lines(f"Hi\n\n{flat}\n", answered=PROMPT)


def test_one_line_of_the_referees_indented_by_the_client_is_a_quote():
    """s-nail quoting one flush-left line of a Bluff prompt with a TAB."""
    prompt = ["Reply with the dice to roll again, or:", "", "keep them all."]
    assert own_lines("\tkeep them all.\n\nreroll 1\n", answered=prompt) == ["reroll 1"]
