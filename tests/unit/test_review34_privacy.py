"""Review of issue 34 (privacy): what readers (a club's list, observers at
each level) are sent depends on public facts only; table talk relays none
of a quoted prompt; standings and logs name no address."""

from __future__ import annotations

import random
import re
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock
from test_club_list_privacy import ROUND, SETTLE, Twins, play_phase

from referee.config import Config
from referee.engine import Engine
from referee.store import Notify, Store

LIST = "club@lists.example.org"
WATCHERS = {level: f"watch-{level.value}@example.net" for level in Notify}
_DIGEST = re.compile(rb"(Record digest [^:\n]*(?::[^:\n]*)*: )[0-9a-f-]{19}")


def readers_mail(engine: Engine) -> dict[str, list[bytes]]:
    found: dict[str, list[bytes]] = {}
    for m in engine.store.outbox(None):
        (to,) = m["recipients"]
        if to == LIST or to in WATCHERS.values():
            found.setdefault(to, []).append(_DIGEST.sub(rb"\1<digest>", m["raw"]))
    return found


class ReaderTwins(Twins):
    """Twins whose game has a list at ``level`` and an observer at each level."""

    def __init__(self, root: Path, kind: str, options: dict, level: Notify):
        self.clock = FakeClock()
        config = Config(
            address="referee@example.org",
            database=root / "unused.db",
            reminder=None,
            outage_gap=None,
            secret_key=b"one referee's secret key",
            announce_to=(LIST,),
            announce_notify=level,
        )
        self.engine = Engine(Store(":memory:"), config, self.clock)
        self.game = self.engine.new_game(kind, PLAYERS, deadline=ROUND, settle=SETTLE, options=options)
        for watching, address in WATCHERS.items():
            self.engine.observers.watch(self.game, address, watching)
        self.twin = Engine(Store(":memory:"), config, self.clock)
        self.engine.store.db.conn.backup(self.twin.store.db.conn)
        self.kind, self.players = kind, PLAYERS

    def compare(self) -> None:
        assert readers_mail(self.twin) == readers_mail(self.engine)


@pytest.mark.parametrize("level", [Notify.TURNS, Notify.DIGEST])
@pytest.mark.parametrize(
    ("kind", "options", "seed", "phases"),
    [
        ("pure-skill", {}, 1, 13),
        ("bid", {"max_auctions": 10}, 2, 99),
        ("bluff", {}, 5, 40),
        ("priority", {}, 6, 40),
    ],
)
def test_readers_at_every_level_get_mail_of_public_facts_only(tmp_path, kind, options, seed, phases, level):
    twins = ReaderTwins(tmp_path, kind, options, level)
    chooser = random.Random(seed)
    twins.compare()
    for _ in range(phases):
        play_phase(twins, chooser)
        twins.clock.advance(hours=13)
        twins.engine.tick()
        twins.twin.tick()
        twins.compare()
        if not twins.running():
            break
    got = readers_mail(twins.engine)
    assert set(got) == {LIST, *WATCHERS.values()}, {k: len(v) for k, v in got.items()}


# -- standings -----------------------------------------------------------------------


def test_standings_name_a_player_who_moved_address_as_their_game_did_never_by_the_new_address(tmp_path):
    """Bob moves mid-game to an address of another local part (and another
    player there shares it): the game's page and every public copy still
    call him "bob"; the standings must too, never "robert.smith" nor
    "robert.smith (hidden.example)", which only his new, private address
    gives away."""
    from test_club_standings import ALICE, BOB, CAROL, STRANGER, Club, page_tables

    club = Club(tmp_path)
    moved, namesake = "robert.smith@hidden.example", "robert.smith@example.org"
    club.play("pure-skill", [ALICE, BOB, CAROL], then={2: lambda game: club.engine.address(game, BOB, moved, "shell")})
    club.play("pure-skill", [ALICE, CAROL, namesake])
    assert club.engine.table(1).names[1] == "bob"
    tables = page_tables(club.site(tmp_path / "site"))
    names = list(tables["All games"])
    assert "bob" in names and not [name for name in names if "hidden" in name], names
    text = club.ask(STRANGER, "STANDINGS")
    assert "hidden" not in text and "bob" in text


# -- colours: Auction's secret colours change nothing a reader is sent ----------------


def test_a_reader_s_copies_do_not_depend_on_the_colours_nobody_has_seen(tmp_path):
    """Auction (priority cards): each seat's colour is its own until it
    wins an item (P2).  Every kind of copy a reader gets (the start, a
    turn's result, the TURNS round result with its preface, a daily
    digest), made from the game with two unrevealed colours swapped, is
    byte for byte the same, for the list and for an observer."""
    from dataclasses import replace as changed

    from conftest import body_of, to_deadline
    from test_ingest_priority import FOUR

    from referee.engine.post import Reader
    from referee.record import Replay

    clock = FakeClock()
    config = Config(address="referee@example.org", database=tmp_path / "games.db", outage_gap=None)
    engine = Engine(Store(config.database), config, clock)
    game = engine.new_game("priority", FOUR, turn_deadline=timedelta(hours=6))
    engine.observers.watch(game, WATCHERS[Notify.TURNS], Notify.TURNS)
    for _ in range(5):
        to_deadline(engine, clock, game)
        engine.tick()
    real = engine.table(game)
    hidden = [seat for seat in range(len(FOUR)) if seat not in real.state.revealed]
    colours = list(real.state.colours)
    colours[hidden[0]], colours[hidden[1]] = colours[hidden[1]], colours[hidden[0]]
    other = changed(real, replay=Replay(changed(real.state, colours=tuple(colours)), real.replay.steps))
    number = real.replay.steps[-1].number
    readers = [Reader(LIST, Notify.EVERY), *engine.post.readers(real)]
    for template, extra in (
        ("priority/start", {"digest": "", "notify_help": True}),
        ("priority/round", {"digest": ""}),
        ("daily", {"rounds": [], "since": real.row["created_at"], "digest": "", "digest_help": "round"}),
    ):
        for reader in readers:
            bodies = []
            for table in (real, other):
                context = {**engine.post.context(table), "round": engine.post.round_context(table, number), **extra}
                if template == "daily":
                    context["rounds"] = [engine.post.round_context(table, n) for n in range(1, number + 1)]
                engine.post.to_reader(table, reader, template, context, ["(preface)"])
                bodies.append(body_of(engine.store.outbox(None)[-1]["raw"]))
            assert bodies[0] == bodies[1], (template, reader.address)
    # (the seat's own view does change: the swap is one a reader would notice, were it shown)
    assert engine.post.context(real, hidden[0])["view"] != engine.post.context(other, hidden[0])["view"]


# -- an observer who takes a seat -------------------------------------------------------


def _one_start_each(engine: Engine, address: str) -> list[str]:
    return [
        m["subject"] for m in engine.store.outbox(None) if m["recipients"] == [address] and "begins" in m["subject"]
    ]


def test_an_observer_who_joins_the_game_gets_its_mail_once_as_a_player(engine):
    """Zoe follows an open game (WATCH), then JOINs it: from then on she is
    a player, sent each public mail once, as a player (not a second,
    reader's copy of each, at the reader's level)."""
    from conftest import join

    zoe = "zoe@example.net"
    game, _ = join(engine, "pure-skill", PLAYERS[0])
    engine.observers.watch(game, zoe, Notify.EVERY)
    join(engine, "pure-skill", zoe)
    join(engine, "pure-skill", PLAYERS[1])
    assert engine.table(game).row["state"] == "running"
    assert len(_one_start_each(engine, zoe)) == 1, _one_start_each(engine, zoe)


def test_an_observer_given_a_seat_by_the_keeper_gets_its_mail_once_as_a_player(engine, clock):
    zoe = "zoe@example.net"
    game = engine.new_game("pure-skill", PLAYERS)
    engine.observers.watch(game, zoe, Notify.EVERY)
    engine.replace(game, "2", zoe, "shell", "bob moved away")
    before = len([m for m in engine.store.outbox(None) if m["recipients"] == [zoe]])
    engine.say(game, "Welcome, zoe.", "shell")
    said = [m["subject"] for m in engine.store.outbox(None) if m["recipients"] == [zoe]][before:]
    assert len(said) == 1, said


# -- table talk in a reply that quotes the prompt --------------------------------------

_REF = "Referee <referee@example.org>"
_ON = "On Sat, 21 Nov 2026 at 12:00, " + _REF + " wrote:"


def _quoted(body: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in body.splitlines())


def _html(body: str) -> str:
    import html

    return "".join(f"<div>{html.escape(line)}</div>" for line in body.splitlines())


_FORMS = {
    "gmail, top-posted": lambda b, w: f"{w}\n\n{_ON}\n\n{_quoted(b)}\n",
    "bottom-posted, attribution": lambda b, w: f"{_ON}\n{_quoted(b)}\n\n{w}\n",
    "outlook": lambda b, w: f"{w}\n\n-----Original Message-----\nFrom: {_REF}\nSent: Saturday\nSubject: x\n\n{b}\n",
    "outlook web": lambda b, w: f"{w}\n\n________________________________\nFrom: {_REF}\nSent: Saturday\n\n{b}\n",
    "apple mail": lambda b, w: (
        f"{w}\n\nSent from my iPhone\n\n> On 21 Nov 2026, at 12:00, {_REF} wrote:\n> \n{_quoted(b)}\n"
    ),
    "pasted, unmarked": lambda b, w: f"{w}\n\n{_ON}\n\n{b}\n",
    "pasted, no header": lambda b, w: f"{w}\n\n{b}\n",
    "indented": lambda b, w: f"{w}\n\n" + "\n".join(f"\t{line}" for line in b.splitlines()) + "\n",
    "signature": lambda b, w: f"{w}\n\n-- \nAlice\n\n{_ON}\n{_quoted(b)}\n",
}
_HTML_FORMS = {
    "html gmail": lambda b, w: (
        "<div dir='ltr'>" + w.replace("\n", "<br>") + "</div><div class='gmail_quote'><div class='gmail_attr'>"
        f"{_ON.replace('<', '&lt;').replace('>', '&gt;')}<br></div><blockquote class='gmail_quote'>{_html(b)}"
        "</blockquote></div>"
    ),
    "html outlook": lambda b, w: (
        "<div>" + w.replace("\n", "<br>") + "</div><hr><div id='divRplyFwdMsg'><b>From:</b> Referee "
        f"&lt;referee@example.org&gt;<br><b>Sent:</b> Saturday</div><div>{_html(b)}</div>"
    ),
    "html apple": lambda b, w: (
        "<html><body>" + w.replace("\n", "<br>") + "<br><blockquote type='cite'>On 21 Nov 2026, at 12:00, "
        f"Referee &lt;referee@example.org&gt; wrote:<br><br></blockquote><blockquote type='cite'>{_html(b)}"
        "</blockquote></body></html>"
    ),
}


@pytest.mark.parametrize("paragraph", [False, True], ids=["one line", "paragraph"])
@pytest.mark.parametrize("form", [*_FORMS, *_HTML_FORMS])
def test_table_talk_in_a_reply_to_the_prompt_relays_no_line_of_it(engine, clock, form, paragraph):
    """Auction (priority cards, white press): Alice's prompt holds her
    colour and hand; a TELL in her reply to it, however her client quotes
    it (or HTML-only), relays her own words and nothing of it."""
    from conftest import Mailbox, make_mail
    from test_ingest_priority import FOUR

    game = engine.new_game("priority", FOUR, turn_deadline=timedelta(hours=6))
    box = Mailbox(engine)
    prompt = [m for m in box.to(FOUR[0]) if "begins" in m["subject"]][-1]  # her colour, privately
    assert "Your colour is" in prompt["body"]  # (what must not be relayed)
    words = "TELL ALL\nhello there\nEND" if paragraph else "TELL ALL hello there"
    html = form in _HTML_FORMS
    body = (_HTML_FORMS if html else _FORMS)[form](prompt["body"], words)
    thread = {"In-Reply-To": prompt["message_id"], "References": prompt["message_id"]}
    raw = make_mail(FOUR[0], body, to=prompt["reply_to"], headers=thread, subject=f"Re: {prompt['subject']}")
    if html:
        raw = raw.replace(b"text/plain", b"text/html")
    assert engine.ingest(raw).code == "done"
    [relayed] = [m for m in box.to(FOUR[1]) if "writes to the table" in m["subject"]]
    said = relayed["body"].split("through the referee:\n", 1)[1].split("\n\nTo answer", 1)[0]
    assert said.strip() == "hello there", said
    assert engine.table(game).open_phase["number"] == 1 and engine.store.moves(game) == []
