"""The engine's mail: what templates about a game may use, and every mail to
a seat or an address, queued in the outbox inside the caller's transaction.

Public mail is built from the public view; a seat's own mail (a prompt, a
receipt, its private news) from that seat's view only.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import logging
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from referee import limits
from referee.config import Config
from referee.mail.compose import Composer, encodable
from referee.mail.origin import UNKNOWN
from referee.mail.parse import is_address
from referee.mail.tokens import phase_tag, tagged, token_address, unsubscribe_token, unwatch_token
from referee.resources import game_folder, game_record, rules_page
from referee.store import Act, DelegationRow, GameRow, GameState, MailState, Notify, SeatRow, Store
from referee.tables import Table, deadlines, own_calendar
from referee.timeutil import EventClock, from_iso, iso

log = logging.getLogger("referee")

_MAX_LEGAL_SHOWN = 20

NO_NEWS = object()  # an announcement that carries no private news (see Post.announce)


def _held(table: Table, number: int) -> list[dict[str, Any]]:
    """The deadline moves a seat's time away made in phase ``number`` (its
    opening's, when the phase before it is announced): each seat, from
    where and to when (templates/mail/_away.txt.j2)."""
    return [
        {
            "seat": i["detail"]["seat"],
            "who": table.label(i["detail"]["seat"]),
            "old": i["detail"]["old"],
            "until": i["detail"]["new"],
        }
        for i in table.interventions
        if i["act"] == Act.ABSENT and i["phase"] == number
    ]


class OwnView(Mapping[str, Any]):
    """A seat's own view (Game.view) for that seat's copy of an announcement:
    made when a template first reads it, so a game whose templates never do
    pays nothing for it."""

    def __init__(self, table: Table, seat: int):
        self._table, self._seat = table, seat

    @cached_property
    def _view(self) -> dict[str, Any]:
        return self._table.rules.view(self._table.state, self._seat)

    def __getitem__(self, key: str) -> Any:
        return self._view[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._view)

    def __len__(self) -> int:
        return len(self._view)


@dataclass(frozen=True)
class Reader:
    """Someone who gets a game's public mail without a seat in it: a club's
    list (``[club] announce_to``, the game's own ``announce_to``) or an
    observer (WATCH).  Their copy is the public one: players by name, never
    an address, no seat's view or news."""

    address: str
    level: Notify
    unsubscribe: str | None = None  # an observer's unsubscribe address (List-Unsubscribe)
    token: str | None = None  # an observer's reply token (tokens.watcher_token): their Reply-To and subject tag


@dataclass(eq=False)
class Reply:
    """The reply to a seat's mail that moved, held while what its moves
    completed is resolved (Post.replying)."""

    table: Table  # the game as the mail found it: the reply names the phase open then
    seat: int
    context: dict[str, Any]  # what reply.txt.j2 shows: its ``answers``, line by line
    headers: dict[str, Any]  # in_reply_to, answers, references, budget, origin
    folded: bool = False  # it went at the top of another mail to the seat


@dataclass(eq=False)
class Post:
    store: Store
    config: Config
    clock: EventClock
    composer: Composer
    key: bytes
    # While mail handled before a restore is handled again (Engine.restoring),
    # whether the referee sent a mail, by its Message-ID, before the restore:
    # such a mail is kept as "restored", not sent again.
    sent_before: Callable[[str], bool] | None = None
    held: Reply | None = field(default=None, init=False)  # (only inside ``replying``)
    _game_info: tuple[GameRow, dict[str, Any]] | None = field(default=None, init=False)  # (see ``game_info``)

    def level(self, table: Table, seat: int) -> Notify:
        """How much mail a seat wants: its own choice (NOTIFY), else its
        game's (the keeper's, at NEW), else the config's."""
        chosen = table.seats[seat]["notify"] or table.row["notify"]
        return Notify(chosen) if chosen else self.config.notify

    # -- what templates see ----------------------------------------------------

    def context(self, table: Table, seat: int | None = None, history: bool = False) -> dict[str, Any]:
        """What templates about a game may use.  ``view`` is the seat's own
        view and ``notify`` its level, or the public view (and None) when
        ``seat`` is None.  ``rounds`` (every resolved phase) only with
        ``history``: few mails show it."""
        phase = table.open_phase
        result = table.rules.result(table.state)
        now = self.clock.awake()  # "in 2 days": from when the mail is written, even for a mail read late
        context = {
            "game": self.game_info(table),
            "players": [
                {"seat": s["seat"], "label": table.label(s["seat"]), "bot": not table.human(s["seat"])}
                for s in table.seats
            ],
            "seat": seat,
            "notify": None if seat is None else self.level(table, seat),  # how much mail the seat gets
            "view": table.rules.view(table.state, seat),
            "phase": phase and {**phase, "left": from_iso(phase["deadline"]) - now},
            "result": result,
            "referee": self.config.address,
            "public_copy": False,  # (True in a reader's copy: Post.to_reader)
        }
        if history:
            context["rounds"] = [self.round_context(table, s.number) for s in table.replay.steps]
        return context

    def game_info(self, table: Table) -> dict[str, Any]:
        """The game itself, as every mail about it may show it (``game`` in
        templates).  Made of the games row alone (and the config), and kept
        for the row it was made of: a row is read anew when the game changes,
        never changed, so a result and the prompts after it make it once.
        (Every caller copies it to change it: a seat's tag, an observer's.)"""
        kept = self._game_info
        if kept is not None and kept[0] is table.row:
            return kept[1]
        info = self._made_game_info(table)
        self._game_info = (table.row, info)
        return info

    def _made_game_info(self, table: Table) -> dict[str, Any]:
        return {
            "id": table.id,
            "kind": table.row["kind"],
            "title": table.rules.title,
            "name": table.row["name"],
            "tag": table.tag(),
            "state": table.row["state"],
            "move_word": table.rules.move_word,
            "example": table.rules.example or f"{table.rules.move_word} 7",
            "seed_commitment": table.row["seed_commitment"],
            "seed": table.row["seed"] if table.row["state"] == GameState.FINISHED else None,
            "deadline": timedelta(seconds=table.row["deadline_seconds"]),
            "deadlines": deadlines(table.row),
            "options": table.row["options"],
            # where the site publishes the game's rules and rulings, its page and its record, when its address is known
            "rules_url": self.on_site(rules_page(table.row["kind"])),
            "page_url": self.on_site(f"{game_folder(table.id)}/"),
            "record_url": self.on_site(game_record(table.id)),
            # whether its game-over mail says what its kind awards where a club keeps such books (Pure Skill's rule 5)
            "awards": bool(self.config.awards if table.row["awards"] is None else table.row["awards"]),
            # the table talk it relays (TELL: engine.talk), for its players' start mail; the rule that forbids it
            "press": table.row["press"] or table.rules.press.value,
            "press_rule": "" if table.row["press"] else table.rules.press_rule,
        }

    def on_site(self, path: str) -> str | None:
        """The web address of ``path`` on the site, when the config knows the site's address (``site_url``)."""
        return f"{self.config.site_url}/{path}" if self.config.site_url else None

    def round_context(self, table: Table, number: int) -> dict[str, Any]:
        """One resolved phase, from the record alone (so it replays exactly).

        Public: what the moves were is told only through the game's events,
        since some games keep moves hidden after they resolve."""
        step = next(step for step in table.replay.steps if step.number == number)
        moves = table.counted[number]
        following = table.phases[number] if number < len(table.phases) else None
        return {
            "number": number,
            "label": step.phase.label,
            "events": step.events,
            "how": {seat: moves[seat]["source"] for seat in step.moves},
            "next": following
            and {"label": following["label"], "deadline": following["deadline"], "held": _held(table, number + 1)},
        }

    def legal(self, table: Table, seat: int) -> dict[str, Any]:
        """The moves a seat can make now, as text for its private mail: the
        first few (``more_legal`` says whether there are others)."""
        moves = table.rules.legal_moves(table.state, seat)
        return {
            "legal": [table.rules.move_text(m) for m in moves[:_MAX_LEGAL_SHOWN]],
            "more_legal": len(moves) > _MAX_LEGAL_SHOWN,
        }

    # -- sending ---------------------------------------------------------------

    def announce(
        self,
        table: Table,
        template: str,
        context: dict[str, Any],
        news_since: Any = NO_NEWS,
        leavers: bool = False,
        skip: int | None = None,
        preface: Mapping[int, Sequence[str]] | None = None,
    ) -> None:
        """A public mail to every person still playing: one copy each, so each
        copy can carry that player's own reply address; with ``leavers``, to
        those who left the game too.  With ``news_since`` (the state before
        the change announced; None for the deal), each copy also carries its
        seat's private news (Game.private_news), if any: one seat's news
        reaches only that seat's copy.  Each copy may also show what its
        reader knows now, as their own prompt would (``mine``: their seat's
        view, made only if the template reads it).  Every seat but ``skip``;
        ``preface``: what goes at the top of a seat's copy (see ``send``).
        A seat's stand-in gets a copy of the seat's only when it carries news."""
        for seat in range(len(table.seats)):
            if seat == skip:
                continue
            if table.human(seat) or (leavers and table.seats[seat]["address"] is not None):
                news = None if news_since is NO_NEWS else table.rules.private_news(news_since, table.state, seat)
                self.copy(table, seat, template, context, news, (preface or {}).get(seat, ()))
        for reader in self.readers(table):  # what every seat is sent, every level of reader is too
            self.to_reader(table, reader, template, context)

    # -- those who read a game's public mail without a seat ---------------------

    def readers(self, table: Table) -> list[Reader]:
        """Who gets the game's public mail besides its players (see ``readers_of``)."""
        return self.readers_of(table.row)

    def readers_of(self, game: GameRow) -> list[Reader]:
        """Who gets a game's public mail besides its players: the club's
        lists (the config's and the game's own), at ``[club] announce_notify``,
        and its observers (WATCH), each at their level (else the config's
        ``notify``), with their reply token and unsubscribe address; not an
        observer who plays a seat of it now (their seat's mail is theirs)."""
        lists = dict.fromkeys([*self.config.announce_to, *game["announce_to"]])
        readers = [Reader(address, self.config.announce_notify) for address in lists]
        watchers = self.store.watchers(game["id"])
        # An observer who took a seat since (a JOIN, a REPLACE, a place from standby) gets the seat's mail:
        # not a second copy of each, whose reply token is no seat's.  (Its seats are read only if it has one.)
        playing = (
            {s["address"].lower() for s in self.store.seats(game["id"]) if s["address"] and not s["bot"]}
            if watchers
            else set()
        )
        for watcher in watchers:
            address = watcher["address"]
            if address.lower() in playing:
                continue
            readers.append(
                Reader(
                    address,
                    Notify(watcher["notify"]) if watcher["notify"] else self.config.notify,
                    token_address(self.config.address, unwatch_token(self.key, game["id"], address)),
                    watcher["token"],
                )
            )
        return readers

    def by_name(self, table: Table, players: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Templates' ``players`` labelled by their names (Table.names), not
        their addresses: as a reader's copy shows them."""
        return [{**p, "label": table.names[p["seat"]]} for p in players]

    def to_reader(
        self, table: Table, reader: Reader, template: str, context: dict[str, Any], preface: Sequence[str] = ()
    ) -> None:
        """A reader's copy of a public mail: built from the public view
        (``context`` is one), players by their names, no seat's own view or
        news; ``public_copy`` tells a template it writes one.  Any player's
        address left in it (a seat's, one it had, a stand-in's: who left, who
        is away, words of the keeper's that name one) becomes that player's
        name, so a copy that goes beyond the players never shows one.  With
        the site's address, its Archived-At is the game's page."""
        names = _Relabel(self.public_names(table))
        players = self.by_name(table, context.get("players", []))
        headers: dict[str, Any] = {"unsubscribe": reader.unsubscribe} if reader.unsubscribe else {}
        game = context.get("game")
        if reader.token is not None:  # an observer's: their replies (NOTIFY, UNWATCH) prove them
            headers["reply_to"] = token_address(self.config.address, reader.token)
            game = game and {**game, "tag": tagged(table.tag(), reader.token)}
        self.mail(
            table.id,
            reader.address,
            template,
            names.within(
                {
                    **{k: v for k, v in context.items() if k != "mine"},  # (templates ask whether ``mine`` is defined)
                    "game": game,
                    "players": players,  # (``seat``, if any, is the seat the mail tells of, as in every copy)
                    "news": None,
                    "notify": reader.level,
                    "own_calendar": None,
                    "public_copy": True,
                    "observer": reader.token is not None,  # (their footer says how to change or stop it)
                }
            ),
            preface=[names.within(piece) for piece in preface],
            id_tag=phase_tag(table.id, table.open_phase["number"] if table.open_phase else None),
            archived_at=self.on_site(f"{game_folder(table.id)}/"),
            **headers,
        )

    def public_names(self, table: Table) -> dict[str, str]:
        """Each address a player of the game plays or played from, or stood
        in from, lower case, and the name a copy beyond the players gives it
        (Table.names; a stand-in's, "<name>'s stand-in")."""
        names: dict[str, str] = {}
        for act in table.interventions:
            detail = act["detail"]
            if act["act"] == Act.REPLACE:  # the one who left had the seat's name; the newcomer got their own
                names[detail["was_address"] or ""] = detail["was"]
                names[detail["address"]] = detail["name"]
            elif act["act"] == Act.ADDRESS:
                names[detail["was_address"]] = names[detail["address"]] = table.names[detail["seat"]]
            elif act["act"] == Act.DELEGATE and detail.get("address"):
                names[detail["address"]] = f"{table.names[detail['seat']]}'s stand-in"
        for seat in table.seats:
            if seat["address"]:
                names[seat["address"]] = table.names[seat["seat"]]
        return {address.lower(): name for address, name in names.items() if address}

    def copy(
        self,
        table: Table,
        seat: int,
        template: str,
        context: dict[str, Any],
        news: Mapping[str, Any] | None = None,
        preface: Sequence[str] = (),
    ) -> None:
        """One seat's copy of a public mail (see ``announce``), with its
        private news (which its stand-in, if any, gets a copy of)."""
        mine = OwnView(table, seat)
        self.send(
            table,
            seat,
            template,
            {**context, "news": news, "mine": mine, "notify": self.level(table, seat)},
            preface,
            copy=bool(news),
        )

    def prompt(self, table: Table, seat: int, preface: Sequence[str] = (), copy: bool = True) -> None:
        """A mover's prompt (its kind's ``prompt`` template): the seat's view,
        and the moves it can make now (``legal``), which every prompt lists
        as the reminder and a refused move do."""
        self.send(table, seat, f"{table.row['kind']}/prompt", self.prompt_context(table, seat), preface, copy=copy)

    def prompt_context(self, table: Table, seat: int) -> dict[str, Any]:
        """What a prompt shows: the seat's view and its legal moves."""
        return {**self.context(table, seat), **self.legal(table, seat)}

    def send(
        self,
        table: Table,
        seat: int,
        template: str,
        context: dict[str, Any],
        preface: Sequence[str] = (),
        copy: bool = True,
        **headers: Any,
    ) -> None:
        """A mail to a seat: its subject tag and Reply-To carry the seat's
        token, its Message-ID the phase open now (see tokens.phase_tag): a
        prompt's, a receipt's (the reply goes before the phase is settled), or
        the one an announcement of a result opens.  ``preface``: pieces of
        text (Composer.section) that go at the top of its body; a reply held
        for the seat (``replying``) goes above them.  Its List-Unsubscribe
        names the seat's unsubscribe address (tokens.unsubscribe_token), and
        templates may show the seat's own calendar (``own_calendar``).  With
        ``copy``, a stand-in in their turn at the seat (engine.delegating)
        gets it too, at their own reply address (not spending the answers
        ``headers`` may count)."""
        row = table.seats[seat]
        context = {
            **context,
            "game": {**context["game"], "tag": table.tag(seat)},
            "own_calendar": self.calendar(row),
        }
        phase = table.open_phase
        held, folding = self.held, False
        if held is not None and (held.table.id, held.seat) == (table.id, seat) and self._answerable(held):
            receipt = self.composer.section("_receipt", **held.context, timezone=self.store.timezone(table.label(seat)))
            preface, headers, held.folded, folding = [receipt, *preface], {**held.headers, **headers}, True, True
        self.mail(
            table.id,
            table.label(seat),
            template,
            context,
            preface=preface,
            **{
                "reply_to": token_address(self.config.address, row["token"]),
                "id_tag": phase_tag(table.id, phase["number"] if phase else None),
                "unsubscribe": row["address"]
                and token_address(self.config.address, unsubscribe_token(self.key, table.id, seat, row["address"])),
                **headers,
            },
        )
        shared = _for_stand_in(context) if copy else None
        # A receipt folded in here is the stand-in's too, as the reply on its own would be (``_send_reply``).
        answered = _for_stand_in({**held.context, "game": context["game"]}) if held and folding else None
        # A stand-in's turn is always recorded (Act.DELEGATE, with its delegations row): a game whose record
        # has none has no stand-in to copy, and its mail does not ask (a statement a mail).
        if (shared is not None or answered is not None) and _ever_delegated(table):
            for stand_in in self.store.delegations(table.id, iso(self.clock())):
                if stand_in["seat"] == seat and answered is not None and held is not None:
                    self.to_stand_in(held.table, stand_in, "reply", answered)
                if stand_in["seat"] == seat and shared is not None:
                    self.to_stand_in(table, stand_in, template, shared)

    def to_stand_in(
        self, table: Table, stand_in: DelegationRow, template: str, context: dict[str, Any], **headers: Any
    ) -> None:
        """A mail about a seat to its stand-in: the subject tag and Reply-To
        carry the stand-in's own token; the template sees ``stand_in`` (the
        seat, its name, the turn's end and the stand-in's address).  No
        List-Unsubscribe (it would quiet the seat's player), nor the seat's
        own calendar."""
        seat = stand_in["seat"]
        tag = tagged(table.tag(), stand_in["token"] or "")
        phase = table.open_phase
        context = {
            **context,
            "game": {**context["game"], "tag": tag},
            "own_calendar": None,
            "stand_in": {
                "seat": seat,
                "name": table.names[seat],
                "until": stand_in["until"],
                "address": stand_in["address"],
            },
        }
        if "subject" in context:  # a reply's subject, made with the seat's tag
            context["subject"] = context["subject"].replace(table.tag(seat), tag)
        self.mail(
            table.id,
            stand_in["address"],
            template,
            context,
            **{
                "reply_to": token_address(self.config.address, stand_in["token"] or ""),
                "id_tag": phase_tag(table.id, phase["number"] if phase else None),
                **headers,
            },
        )

    def calendar(self, seat: SeatRow) -> str | None:
        """Where a seat's own calendar is (tables.own_calendar): its address
        on the site, or its path there when the site's address is not
        configured; None when there is no site, or no person plays the seat."""
        path = own_calendar(self.key, seat)
        if path is None or not (self.config.site_url or self.config.site_dir):
            return None
        return f"{self.config.site_url}/{path}" if self.config.site_url else path

    @contextmanager
    def replying(self, table: Table, seat: int, context: dict[str, Any], headers: dict[str, Any]) -> Iterator[None]:
        """Around the resolution of what a seat's mail with a move completed
        (its phase, perhaps the next ones), the reply to it (reply.txt.j2's
        ``context``, its ``headers``; ``table`` as the mail found the game):
        at NOTIFY EVERY it goes first, on its own, as ever.  At the quieter
        levels it is held, and the first mail to the seat meanwhile carries
        it at its top (its move ended the round: the result; its turn comes
        again at once: the prompt); with none, it goes on its own after them."""
        reply = Reply(table, seat, context, headers)
        if self.level(reply.table, reply.seat) is Notify.EVERY:
            self._send_reply(reply)
            yield
            return
        self.held = reply
        try:
            yield
        finally:
            self.held = None
        if not reply.folded:
            self._send_reply(reply)

    def _send_reply(self, reply: Reply) -> None:
        # Tagged with the phase the mail answered, whatever it completed (Phases.check_thread reads it).
        open_ = reply.table.open_phase
        tag = phase_tag(reply.table.id, open_["number"] if open_ else None)
        self.send(reply.table, reply.seat, "reply", reply.context, id_tag=tag, **reply.headers)

    def _answerable(self, held: Reply) -> bool:
        """Whether a held reply may go at the top of a mail now: not gone
        yet, and within the seat's answers (referee.limits).  A mail that
        may not carry it goes without it, and the reply its own way after
        (perhaps as the over-limit notice)."""
        if held.folded:
            return False
        budget, origin = held.headers.get("budget", "player"), held.headers.get("origin", UNKNOWN)
        to = held.table.label(held.seat)
        return limits.verdict(self.store, self.config, to, budget, self.clock(), origin) == limits.Verdict.SEND

    def mail(
        self,
        game_id: int | None,
        to: str,
        template: str,
        context: dict[str, Any],
        answers: str | None = None,
        budget: limits.Budget = "player",
        origin: str = UNKNOWN,
        preface: Sequence[str] = (),
        always: bool = False,
        **headers: Any,
    ) -> bool:
        """Render and queue one mail to ``to``, showing times in their zone too.

        ``answers`` is the key of the message this mail answers; it spends
        ``budget`` (see referee.limits) of the message's ``origin``
        (referee.mail.origin).  Returns False when the budget held it back
        (the address may get the over-limit notice instead).  ``always``: it
        is spent, but never held back (the one confirmation of a sign-up the
        answer made: at most one a sign-up, which only a proven reply makes)."""
        now = self.clock()
        if not is_address(to):  # seats and senders are checked; this keeps it so for any caller
            log.warning("not mailing %r: not an address SMTP can carry", to)
            return False
        if answers and not always:
            decision = limits.verdict(self.store, self.config, to, budget, now, origin)
            if decision != limits.Verdict.SEND:
                log.info("not answering %s: over its %s answers for the hour", to, budget)
                if decision == limits.Verdict.NOTIFY:
                    context = {
                        "game": context.get("game"),
                        "referee": self.config.address,
                        "budget": budget,
                        "resumes": limits.resumes_at(self.store, to, budget, now, origin),
                    }
                    self._queue(
                        game_id,
                        to,
                        "over-limit",
                        context,
                        now,
                        answers,
                        limits.over_limit(budget),
                        {k: v for k, v in headers.items() if k in ("reply_to", "id_tag", "unsubscribe")},
                        origin,
                    )
                return False
        self._queue(game_id, to, template, context, now, answers, budget if answers else None, headers, origin, preface)
        return True

    def _queue(
        self,
        game_id: int | None,
        to: str,
        template: str,
        context: dict[str, Any],
        now: datetime,
        answers: str | None,
        budget: limits.Counted | None,
        headers: dict[str, Any],
        origin: str = UNKNOWN,
        preface: Sequence[str] = (),
    ) -> None:
        context = {**context, "timezone": self.store.timezone(to)}
        subject, body = self.composer.render(template, **context)
        if preface:
            body = "\n\n".join([*preface, body])
        id_tag = headers.pop("id_tag", None)
        for message_id in self._message_ids(to, template, answers, id_tag):
            # Dated when it is written, even if it answers a mail read late.
            message_id, raw = self.composer.message(
                to=[to], subject=subject, body=body, now=self.clock.real(), message_id=message_id, **headers
            )
            queued = self.store.queue_mail(
                message_id=message_id,
                game_id=game_id,
                recipients=[to],
                state=MailState.RESTORED if self.sent_before and self.sent_before(message_id) else MailState.QUEUED,
                subject=subject,
                raw=raw,
                text=encodable(body),  # as sent: what a reply quoting it is read against, without parsing raw again
                created_at=iso(now),
                answers=answers,
                budget=budget,
                answer_to=limits.normalised(to) if budget else None,
                answer_from=origin if budget else None,
            )
            if queued:  # (else a mail of that Message-ID was queued before: the same mail again, under the next)
                return

    @cached_property
    def _message_id_key(self) -> hmac.HMAC:
        """The keyed hash every Message-ID's digest begins from, its key and
        prefix hashed once: a copy of it hashes only the rest.  (OpenSSL's
        one-shot hmac.digest lets the GIL go and takes it back for every mail,
        which costs the referee's thread some 30 us while the sending thread
        runs; a copy's update of a few bytes keeps it.)"""
        return hmac.new(self.key, b"message-id\0", hashlib.sha256)

    def _message_ids(self, to: str, template: str, answers: str | None, id_tag: str | None) -> Iterator[str]:
        """The Message-IDs that the same mail always gets, in order: the
        n-th such mail takes the n-th one free (Store.queue_mail says whether
        it was).  A keyed digest of whom it is to, which template, the phase
        of the game open (``id_tag``, tokens.phase_tag, which ends its left
        part) and the message it answers.  Mail handled again after a restore
        (docs/operations.md) makes the same mails in the same order, under
        the Message-IDs the players hold, even where a word differs ("in 2
        days" said a minute later); the key keeps them unguessable."""
        covered = "\0".join((to.lower(), template, answers or "", id_tag or ""))
        keyed = self._message_id_key.copy()  # (the HMAC of b"message-id\0" + covered: the same bytes)
        keyed.update(covered.encode("utf-8", "surrogatepass"))
        digest = keyed.hexdigest()[:24]
        tag = f".{id_tag}" if id_tag else ""
        yield f"<{digest}{tag}@{self.config.domain}>"
        for copy in itertools.count(2):
            yield f"<{digest}-{copy}{tag}@{self.config.domain}>"


class _Relabel:
    """Players' addresses, wherever they are in a mail's context (or a piece
    of text), replaced by their names (Post.to_reader)."""

    def __init__(self, names: Mapping[str, str]):
        self.names = names
        longest_first = sorted(names, key=len, reverse=True)
        # an address alone, not the end of a longer one nor the start of one in a longer domain
        self.pattern = (
            re.compile(r"(?<![\w.+-])(?:" + "|".join(map(re.escape, longest_first)) + r")(?![\w-]|\.\w)", re.I)
            if names
            else None
        )

    def within(self, value: Any) -> Any:
        """``value``, each string in it relabelled (dicts, lists and tuples walked)."""
        if isinstance(value, str):
            if self.pattern is None:
                return value
            changed = self.pattern.sub(lambda found: self.names[found.group().lower()], value)
            return value if changed == value else changed  # (an unchanged value keeps its type: a StrEnum's)
        if isinstance(value, dict):
            return {key: self.within(item) for key, item in value.items()}
        if type(value) in (list, tuple):  # (exactly: a named tuple is left as it is)
            return type(value)(self.within(item) for item in value)
        return value


def _ever_delegated(table: Table) -> bool:
    """Whether any seat of the game ever had a stand-in (Delegating.accept
    records each turn as an Act.DELEGATE intervention)."""
    return any(act["act"] == Act.DELEGATE for act in table.interventions)


def _for_stand_in(context: dict[str, Any]) -> dict[str, Any] | None:
    """What of a seat's mail its stand-in is copied: all of it, but of an
    answer to the player's mail only the answers to its moves (the rest,
    a reason for a time away, a new address, is the player's own); None
    when nothing is left."""
    if "answers" not in context:
        return context
    moves = [answer for answer in context["answers"] if answer.get("move")]
    return {**context, "answers": moves} if moves else None
