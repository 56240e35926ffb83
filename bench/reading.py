"""Benchmark: the CPU one mail's reading costs, on hostile shapes of 10 KB
to 10 MB (issue 29, item 1: linear time for every mail).

Each input is one mail from a seat of a running game of Pure Skill, to its
reply address, in reply to the referee's prompt (so the desk compares its
quotes with that mail and reads its lines as moves), handed to
``Engine.ingest``: the whole path a message takes (``referee.mail.parse``,
classification, tokens, which lines are the player's own, the grammar, the
moves and the answer).  It prints, for each shape and size, what became of
the mail, the CPU time (``time.process_time``, in a process of its own),
the CPU time per MB, the part of it ``parse`` took, and the process's peak
memory.  If reading is linear, the time per MB stays flat (or falls) as the
size grows tenfold.

The referee reads mail up to ``max_message_size`` (5 MB by default); a
larger one is read no further than its header section.  So the 10 MB
inputs show that path, unless ``--limit 16M`` raises the limit and reads
them in full.  A measurement over ``--cap`` seconds of CPU (60) is stopped
and shown as "> 60 s"; the larger sizes of that shape (up to the limit)
are not tried, and shown as "> 60 s*".
Asserts nothing.

Run from the top of the checkout:  python3 bench/reading.py [--only WORD] [--sizes 10K,1M] [--limit 16M]
"""

from __future__ import annotations

import argparse
import base64
import multiprocessing
import os
import quopri
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import referee.engine
from referee.config import Config
from referee.engine import Engine
from referee.store import Store

START = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)  # the game opens; the mail comes at 12:30
PLAYERS = ["alice@example.org", "bob@example.org", "carol@example.org"]
KB, MB = 1024, 1024 * 1024
SIZES = [10 * KB, 100 * KB, MB, 5 * MB, 10 * MB]
ATTRIBUTION = "On Sat, 21 Nov 2026 at 12:00, Referee <referee@example.org> wrote:"
LOREM = "lorem ipsum dolor sit amet, consectetur adipiscing elit "


class Mail:
    """What a shape needs to know to write a seat's reply."""

    def __init__(self, token: str, in_reply_to: str):
        self.token, self.in_reply_to = token, in_reply_to

    def head(
        self,
        content_type: str = "text/plain; charset=utf-8",
        extra: str = "",
        subject: str | None = None,
        cte: str | None = None,
    ) -> str:
        subject = subject if subject is not None else f"Re: [pure-skill-1 {self.token}] Round 1 of 13"
        return (
            "Received: from client.example.net by mx.example.org; Sat, 21 Nov 2026 12:30:00 +0000\r\n"
            f"From: Alice <alice@example.org>\r\nTo: referee+{self.token}@example.org\r\n"
            f"Subject: {subject}\r\nMessage-ID: <bench@example.net>\r\n"
            f"In-Reply-To: {self.in_reply_to}\r\nReferences: {self.in_reply_to}\r\n"
            f"MIME-Version: 1.0\r\nContent-Type: {content_type}\r\n"
            + (f"Content-Transfer-Encoding: {cte}\r\n" if cte else "")
            + extra
            + "\r\n"
        )


def fill(unit: str, size: int, head: str = "", tail: str = "") -> str:
    """``unit`` repeated between ``head`` and ``tail``, to about ``size`` characters."""
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


def text(body: Callable[[int], str], **head: Any) -> Callable[[Mail, int], bytes]:
    """A shape that is a plain-text (or other single-part) body of ``size``."""

    def make(mail: Mail, size: int) -> bytes:
        top = mail.head(**head)
        return (top + body(size - len(top))).encode("utf-8", "surrogateescape")

    return make


def encoded(body: Callable[[int], str], charset: str, declared: str = "") -> Callable[[Mail, int], bytes]:
    """A plain-text body of ``size`` bytes in another charset (``declared``,
    when the text is written already encoded)."""

    def make(mail: Mail, size: int) -> bytes:
        top = mail.head(content_type=f"text/plain; charset={declared or charset}").encode()
        data = body(size).encode(charset)
        return top + data[: max(0, size - len(top))]

    return make


def transfer(body: Callable[[int], str], cte: str, kind: str = "plain") -> Callable[[Mail, int], bytes]:
    """A body of ``size`` bytes once encoded in base64 or quoted-printable."""

    def make(mail: Mail, size: int) -> bytes:
        top = mail.head(content_type=f"text/{kind}; charset=utf-8", cte=cte).encode()
        data = body(size - len(top)).encode()
        data = (base64.encodebytes(data) if cte == "base64" else quopri.encodestring(data)).replace(b"\n", b"\r\n")
        data = data[: size - len(top)]
        return top + data[: data.rfind(b"\r\n") + 2]  # whole lines

    return make


def stray(raw: bytes) -> bytes:
    """A "!" at the end of each line of the body: not base64."""
    head, _, body = raw.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n" + body.replace(b"\r\n", b"!\r\n")


def html(body: Callable[[int], str]) -> Callable[[Mail, int], bytes]:
    return text(body, content_type="text/html; charset=utf-8")


def flowed(body: Callable[[int], str], delsp: bool = False) -> Callable[[Mail, int], bytes]:
    return text(body, content_type="text/plain; charset=utf-8; format=flowed" + ("; delsp=yes" if delsp else ""))


def header_shape(field: Callable[[int], str]) -> Callable[[Mail, int], bytes]:
    """A mail whose header section is most of its ``size``."""

    def make(mail: Mail, size: int) -> bytes:
        return (mail.head(extra=field(size - len(mail.head()) - 16)) + "bid 7\r\n").encode()

    return make


def subject_shape(subject: Callable[[int], str]) -> Callable[[Mail, int], bytes]:
    """A mail with no body, whose subject is read as its one line."""

    def make(mail: Mail, size: int) -> bytes:
        return mail.head(subject=subject(size - len(mail.head()))).encode()

    return make


def multipart(parts: Callable[[int], list[tuple[str, str]]], kind: str = "mixed") -> Callable[[Mail, int], bytes]:
    def make(mail: Mail, size: int) -> bytes:
        body = "".join(
            f"--b\r\nContent-Type: {ctype}\r\n\r\n{content}\r\n"
            for ctype, content in parts(size - len(mail.head()) - 512)
        )
        return (mail.head(content_type=f'multipart/{kind}; boundary="b"') + body + "--b--\r\n").encode()

    return make


def nested(depth: Callable[[int], int], unit: str = LOREM + "\r\n", equals: str = "=") -> Callable[[Mail, int], bytes]:
    """multipart/mixed inside multipart/mixed ..., ``depth`` deep, the text
    at the bottom filling the rest of ``size`` with ``unit``."""

    def make(mail: Mail, size: int) -> bytes:
        levels = depth(size)
        opening = "".join(
            f'Content-Type: multipart/mixed; boundary{equals}"b{i}"\r\n\r\n--b{i}\r\n' for i in range(1, levels)
        )
        closing = "".join(f"\r\n--b{i}--" for i in reversed(range(1, levels)))
        top = mail.head(content_type='multipart/mixed; boundary="b0"', extra="")
        frame = top + "--b0\r\n" + opening + "Content-Type: text/plain\r\n\r\nbid 7\r\n" + closing + "\r\n--b0--\r\n"
        padding = fill(unit, size - len(frame) - 16) if size > len(frame) + 16 else ""
        return (frame.replace("bid 7\r\n", "bid 7\r\n" + padding, 1)).encode()

    return make


def report(size: int) -> list[tuple[str, str]]:
    """A delivery-status notification whose status part is most of ``size``."""
    groups = fill("Final-Recipient: rfc822; x@example.net\r\nAction: delayed\r\nStatus: 4.0.0\r\n\r\n", size)
    return [("text/plain", "Delivery failed."), ("message/delivery-status", "Reporting-MTA: dns; mx\r\n\r\n" + groups)]


def attribution_over_long_lines(size: int) -> str:
    """The review's first: attributions (as many of the 5,000 lines read as
    half the size holds) above 24 long lines of the player's own; each
    attribution made the reader scan every line below it again."""
    count = min(4900, max(1, size // 2 // (len(ATTRIBUTION) + 1)))
    attributions = (ATTRIBUTION + "\n") * count
    width = max(10, (size - len(attributions)) // 24)
    return "bid 7\n" + attributions + (fill(LOREM, width) + "\n") * 24


def deep_html(tag: str) -> Callable[[int], str]:
    def body(size: int) -> str:
        half = (size - 8) // (2 * len(tag) + 5)
        return f"<{tag}>" * half + "bid 7" + f"</{tag}>" * half

    return body


UTF7_SHIFTS = "+AGEAYgBj-a"  # "abc" shifted into base64, then out, and a letter: the most state changes


SHAPES: dict[str, Callable[[Mail, int], bytes]] = {
    # -- the review's five ------------------------------------------------------------------
    "attribution lines above long lines": text(attribution_over_long_lines),
    "html: '<a ' repeated": html(lambda size: fill("<a ", size, "<p>bid 7</p>")),
    "flowed: every line continues": flowed(lambda size: fill("lorem ipsum \n", size, "bid 7\n\n")),
    "attribution that backtracks (* [1[1...)": text(lambda size: fill("* " + "[1" * 149 + "\n  x\n", size, "bid 7\n")),
    "'On x wrote:' repeated": text(lambda size: fill("On x wrote:\n", size, "bid 7\n")),
    # -- quotes, attributions, signatures, lines ---------------------------------------------
    "address attribution that backtracks (1<1<...)": text(lambda size: fill("1<" * 150 + "\n  x\n", size, "bid 7\n")),
    "wrapped attributions (On ... / wrote)": text(
        lambda size: fill("On " + "wrote " * 49 + "\nwrote wrote\n", size, "bid 7\n")
    ),
    "'> ' quoted lines": text(lambda size: fill("> " + LOREM + "\n", size, "bid 7\n\n")),
    "'>' x 1000 then a word, each line": text(lambda size: fill(">" * 1000 + " bid 7\n", size, "bid 7\n")),
    "flowed: '>' x 100, every line continues": flowed(lambda size: fill(">" * 100 + " lorem \n", size, "bid 7\n")),
    "flowed delsp: depth changes every line": flowed(
        lambda size: fill("> a \n>> b \nc \n", size, "bid 7\n"), delsp=True
    ),
    "indented quote of the prompt, repeated": text(
        lambda size: fill("\t    bid K\n\n", size, "bid 7\n\n" + ATTRIBUTION + "\n")
    ),
    "indented runs under attributions": text(lambda size: fill(ATTRIBUTION + "\n  " + LOREM + "\n", size, "bid 7\n")),
    "supercite 'name>' lines": text(lambda size: fill("Referee> " + LOREM + "\n", size, "bid 7\n")),
    "long signature": text(lambda size: fill(LOREM + "\n", size, "bid 7\n-- \n")),
    "many blank lines": text(lambda size: fill("\n", size, "bid 7\n")),
    "blank lines between indented lines": text(lambda size: fill("  x\n" + "\n" * 50, size, "bid 7\n")),
    "one huge line of letters": text(lambda size: fill("x", size, "bid 7\n")),
    "one huge line of words": text(lambda size: fill("bid 7 ", size)),
    "one huge line of spaces then a mark": text(lambda size: fill(" ", size, "bid 7\n", ">")),
    "one huge line of underscores": text(lambda size: fill("_", size, "bid 7\n", "x")),
    "no line break at all": lambda mail, size: fill(
        "x", size, f"From: alice@example.org To: referee+{mail.token}@example.org Subject: bid 7 "
    ).encode(),
    "command lines repeated": text(lambda size: fill("help\nbid 7\nstatus\n", size)),
    # table talk (TELL): its words on its line, or the paragraph below it (refused in Pure Skill, by its rule 7,
    # after they are read)
    "TELL with one huge line of words": text(lambda size: fill("lorem ", size, "TELL ALL ")),
    "TELL then a huge paragraph": text(lambda size: fill(LOREM + "\n", size, "TELL ALL\n")),
    "TELL lines repeated": text(lambda size: fill("TELL bob GREY x\n", size)),
    "bid lines repeated": text(lambda size: fill("bid 7\n", size)),
    # (issue 35: a correction takes back the moves above it; greetings and sign-offs beside a move go unanswered)
    "corrections repeated": text(lambda size: fill("bid 5\nno wait, make it bid 7\n", size)),
    "corrections on the move's own line repeated": text(lambda size: fill("bid 5 no wait, bid 7\n", size)),
    "one huge line of corrections on the move's line": text(lambda size: fill("bid 5 - no, make it ", size, "", "7\n")),
    "greetings and sign-offs repeated": text(lambda size: fill("Hi ref,\nThanks!\nCheers,\n", size, "bid 7\n")),
    "sentences naming a card repeated": text(lambda size: fill("Going with the 7 of hearts this round.\n", size)),
    "CR line ends": text(lambda size: fill(LOREM + "\r", size, "bid 7\r")),
    "mixed CRLF, CR and LF line ends": text(lambda size: fill("a\r\rb\r\n\nc\n\r", size, "bid 7\r\n")),
    "'-----Original Message-----' repeated": text(lambda size: fill("  -----Original Message-----\n", size, "bid 7\n")),
    "device signatures ('Sent from my' ...) indented": text(
        lambda size: fill("  Sent from my phone\n", size, "bid 7\n")
    ),
    # -- MIME ------------------------------------------------------------------------------
    "base64 body": transfer(lambda size: fill(LOREM + "\n", size, "bid 7\n"), "base64"),
    "quoted-printable body, soft breaks": transfer(lambda size: fill("x=\r\n", size, "bid 7\n"), "quoted-printable"),
    "quoted-printable body of =XX": transfer(lambda size: fill("\u00e9", size // 6, "bid 7\n"), "quoted-printable"),
    "base64 body, a stray '!' on each line": lambda mail, size: stray(
        transfer(lambda n: fill(LOREM + "\n", n, "bid 7\n"), "base64")(mail, size * 77 // 78)
    ),
    "base64 html body": transfer(lambda size: fill("<p>" + LOREM, size, "<p>bid 7"), "base64", "html"),
    "multipart nested 199 deep, text at the bottom": nested(lambda size: 199),
    "multipart nested as deep as the size allows": nested(lambda size: size // 80),
    "multipart nested deep, 'boundary =' spaced": nested(lambda size: min(size // 80, 400), equals=" ="),
    "multipart nested 10 deep, blank lines": nested(lambda size: 10, "\r\n"),
    "multipart, a part of blank lines": nested(lambda size: 1, "\r\n"),
    "many parts": multipart(lambda size: [("text/plain", "bid 7")] * (size // 40)),
    "many parts, multipart in an encoded word": lambda mail, size: multipart(
        lambda n: [("text/plain", "bid 7")] * (n // 40)
    )(mail, size).replace(b'multipart/mixed; boundary="b"', b"=?utf-8?q?multipart=2Fmixed=3B_boundary=3Db?=", 1),
    "199 large parts": multipart(lambda size: [("text/plain", fill(LOREM + "\r\n", size // 199 - 64))] * 199),
    "alternative: small text, huge html": multipart(
        lambda size: [("text/plain", "bid 7"), ("text/html", fill("<a ", size))], "alternative"
    ),
    "delivery report, huge status part": multipart(report, "report; report-type=delivery-status"),
    "a header field folded over many lines": header_shape(lambda size: fill("\r\n x", size, "X-Junk: a")),
    "the Subject folded over many lines": lambda mail, size: (
        mail.head(subject=fill("\r\n Re:", size - 512, "x")) + "bid 7\r\n"
    ).encode(),
    "Auto-Submitted of nested comments": header_shape(
        lambda size: "Auto-Submitted: " + "(" * (size // 2 - 16) + ")" * (size // 2 - 16) + " no\r\n"
    ),
    "many header fields": header_shape(lambda size: fill("X-Junk: x\r\n", size)),
    # (a club's list: whether a mail is the referee's own coming back is read from these)
    "List-Id and X-Original-From folded over many lines": header_shape(
        lambda size: fill(
            "\r\n referee@example.org", size // 2, "List-Id: <club.lists.example.org>\r\nX-Original-From: x"
        )
    ),
    "many List-Id fields": header_shape(lambda size: fill("List-Id: <club.lists.example.org>\r\n", size)),
    "many Received fields": header_shape(
        lambda size: fill("Received: from a by b; Sat, 21 Nov 2026 12:00:00 +0000\r\n", size)
    ),
    "a Subject of encoded words": subject_shape(lambda size: fill("=?utf-8?q?b=C3=A9d?= ", size)),
    "a Subject of reply prefixes": subject_shape(lambda size: fill("Re: ", size, "", "bid 7")),
    "a Subject of tag openings": subject_shape(lambda size: fill("[a-1 a", size, "", "bid 7")),
    "a Subject of command words": subject_shape(lambda size: fill("help ", size)),
    "charset utf-7, shifting": encoded(lambda size: fill(UTF7_SHIFTS, size, "bid 7\n"), "ascii", "utf-7"),
    "charset utf-16": encoded(lambda size: fill(LOREM + "\n", size // 2, "bid 7\n"), "utf-16"),
    "charset iso-2022-jp, escaping": encoded(lambda size: fill("a\u3042", size // 5, "bid 7\n"), "iso-2022-jp"),
    "charset gb18030": encoded(lambda size: fill("\u4e2d\u6587 ", size * 3 // 5, "bid 7\n"), "gb18030"),
    "charset unicode_escape, named characters": encoded(
        lambda size: fill("\\N{LATIN SMALL LETTER E WITH ACUTE}", size, "bid 7\n"), "ascii", "unicode_escape"
    ),
    "charset latin-1": encoded(lambda size: fill("\u00e9t\u00e9 ", size, "bid 7\n"), "latin-1"),
    # -- HTML ------------------------------------------------------------------------------
    "html: deep <div> nesting": html(deep_html("div")),
    "html: deep <blockquote> nesting": html(deep_html("blockquote")),
    "html: many entities": html(lambda size: fill("&amp;&#128512;&eacute;", size, "<p>bid 7</p>")),
    "html: '&' unterminated": html(lambda size: fill("&#", size, "<p>bid 7</p>")),
    "html: '<p' unclosed": html(lambda size: fill("<p", size, "<p>bid 7</p>")),
    "html: an attribute never closed": html(lambda size: fill("x", size, '<p>bid 7</p><a href="')),
    "html: a huge attribute": html(lambda size: fill("x", size, '<p>bid 7</p><a href="', '">')),
    "html: '<!--' unclosed": html(lambda size: fill("<!--", size, "<p>bid 7</p>")),
    "html: many comments": html(lambda size: fill("<!-- x -->", size, "<p>bid 7</p>")),
    "html: '</' repeated": html(lambda size: fill("</", size, "<p>bid 7</p>")),
    "html: '<!' repeated": html(lambda size: fill("<!", size, "<p>bid 7</p>")),
    "html: '<![CDATA[' repeated": html(lambda size: fill("<![CDATA[", size, "<p>bid 7</p>")),
    "html: <script> unclosed, '</scr' inside": html(lambda size: fill("</scr", size, "<p>bid 7</p><script>")),
    "html: many <br>": html(lambda size: fill("<br>", size, "<p>bid 7</p>")),
    "html: many <p>words</p>": html(lambda size: fill("<p>" + LOREM + "</p>", size, "<p>bid 7</p>")),
}


def measure(name: str, size: int, limit: int, cap: float, pipe: Any) -> None:
    """In a process of its own: one mail of the shape, ingested; its CPU
    time (and parse's share), its outcome and the peak memory, sent back."""
    with tempfile.TemporaryDirectory() as folder:
        config = Config(
            address="referee@example.org",
            database=Path(folder, "games.db"),
            reminder=None,
            outage_gap=None,
            secret_key=b"bench",
            replies_per_hour=10**6,
            max_message_size=limit,
        )
        engine = Engine(Store(config.database), config, lambda: START)
        engine.new_game("pure-skill", PLAYERS)
        token = engine.table(1).seats[0]["token"]
        prompt = [row for row in engine.store.outbox() if row["recipients"] == [PLAYERS[0]]][-1]  # round 1's
        raw = SHAPES[name](Mail(token, prompt["message_id"]), size)
        parsing = [0.0]
        parse = referee.engine.parse

        def timed_parse(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return parse(*args, **kwargs)
            finally:
                parsing[0] += time.process_time() - start

        referee.engine.parse = timed_parse  # type: ignore[attr-defined]
        used = time.process_time()
        resource.setrlimit(resource.RLIMIT_CPU, (int(used + cap) + 1, int(used + cap) + 2))
        start = time.process_time()
        outcome = engine.ingest(raw)
        took = time.process_time() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        pipe.send((len(raw), outcome.code, took, parsing[0], peak))


def run(name: str, size: int, limit: int, cap: float) -> tuple[int, str, float, float, int] | None:
    """One measurement in a forked process: None if it ran past the cap."""
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    process = context.Process(target=measure, args=(name, size, limit, cap, sending))
    process.start()
    sending.close()
    try:
        result = receiving.recv() if receiving.poll(cap * 5 + 60) else None
    except EOFError:  # the process was stopped at the cap (SIGXCPU)
        result = None
    if result is None and process.is_alive():
        process.kill()
    process.join()
    return result


def label(size: int) -> str:
    return f"{size // KB} KB" if size < MB else f"{size // MB} MB"


def parse_size(text: str) -> int:
    text = text.strip().upper()
    unit = {"K": KB, "M": MB}.get(text[-1:], 1)
    return int(float(text.rstrip("KMB") if unit != 1 else text) * unit)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="shapes whose name holds this (repeatable)")
    parser.add_argument("--sizes", help="comma-separated sizes, like 10K,1M (default 10K,100K,1M,5M,10M)")
    parser.add_argument("--limit", default=str(Config.max_message_size), help="max_message_size (default 5M)")
    parser.add_argument("--cap", type=float, default=60.0, help="seconds of CPU one measurement may take")
    args = parser.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else SIZES
    limit = parse_size(args.limit)
    names = [n for n in SHAPES if not args.only or any(o.lower() in n.lower() for o in args.only)]
    print(
        f"Engine.ingest of one mail from a seat, CPU time (time.process_time); max_message_size {label(limit)}: "
        f"larger mail is read no further than its headers.  {os.cpu_count()} cores; cap {args.cap:.0f} s."
    )
    print(f"{'shape':48} {'size':>6} {'outcome':>8} {'CPU s':>8} {'s/MB':>7} {'parse s':>8} {'peak MB':>8}")
    worst: tuple[float, str] = (0.0, "")
    for name in names:
        over = False  # a smaller size read in full went over the cap: a larger one is not tried
        for size in sizes:
            skipped = over and size <= limit
            result = None if skipped else run(name, size, limit, args.cap)
            if result is None:
                over = over or size <= limit
                mark = f"> {args.cap:.0f} s" + ("*" if skipped else "")
                print(f"{name[:48]:48} {label(size):>6} {'':>8} {mark:>9}", flush=True)
                if size <= limit:
                    worst = max(worst, (float("inf"), f"{name} at {label(size)}"))
                continue
            length, code, took, parsing, peak = result
            print(
                f"{name[:48]:48} {label(size):>6} {code[:8]:>8} {took:8.3f} {took / (length / MB):7.2f} "
                f"{parsing:8.3f} {peak / MB:8.0f}",
                flush=True,
            )
            if length <= limit:
                worst = max(worst, (took, f"{name} at {label(size)}"))
        print(flush=True)
    print(f"* not run: a smaller size took over {args.cap:.0f} s")
    print(
        f"worst at or under {label(limit)}: {worst[1]}, "
        + ("over the cap" if worst[0] == float("inf") else f"{worst[0]:.2f} s CPU")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
