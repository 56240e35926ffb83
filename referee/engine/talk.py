"""Table talk: a seat's words relayed to other seats of its game (TELL),
and their answers relayed back.

What a game relays is its press (``games.press``, else its kind's
``Game.press``): none (TELL is refused, citing the rule that forbids talk),
white (each message signed with the writer's seat name, Table.names) or
grey (unsigned ones too, when the writer asks).  A relayed mail is from the
referee and names players by their names alone, never an address; it
carries the writer's words and nothing of the writer's game (no view, no
hand, no news).  Its Reply-To is an address of its own (a ``press_tokens``
row: the message, the seat it went to and the seat that wrote it), so a
reply from the reader's address goes back to the writer alone, as table
talk in the same form, signed or not: under grey press the reader answers
without learning who wrote.  A reply to it is never read as a move or a
command: all of it is words to pass on.

Table talk changes no game and no seat, so it is no intervention and no
part of the game's record, the site or a list's copies; each message is
counted in ``press`` (who, when, to how many: never what it said), for
the rate limit, ``[club] press_per_day`` per seat in any day.  Bots and
seats whose player left get none; a stand-in neither sends nor gets it
(a seat's table talk is its player's own word: see the desk).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from referee.config import Config
from referee.engine.post import Post
from referee.errors import Refusal, Why
from referee.mail.tokens import make_token, phase_tag, tagged, token_address
from referee.rules.api import Press
from referee.store import Act, PressTokenRow, Store
from referee.tables import Table
from referee.timeutil import EventClock, from_iso, iso

log = logging.getLogger("referee")

MOST_CHARACTERS = 4000  # of one message of table talk: a letter, not an attachment
_EVERYONE = ("all", "everyone", "everybody")
_DAY = timedelta(days=1)


@dataclass(eq=False)
class TableTalk:
    store: Store
    config: Config
    clock: EventClock
    key: bytes
    post: Post

    def press(self, table: Table) -> Press:
        """The table talk a game relays: its own (the keeper's at NEW, its
        sign-up's options), else its kind's."""
        chosen = table.row["press"]
        return Press(chosen) if chosen else table.rules.press

    def tell(self, table: Table, seat: int, whom: str, text: str, grey: bool) -> dict[str, Any]:
        """A seat's TELL: ``text`` to the seat ``whom`` names (a name, a
        unique start of one, a seat's number) or to every other seat a
        person plays (ALL); unsigned with ``grey``.  Refusal says why not.
        What the answer to the TELL shows."""
        self._allowed(table, grey)
        if not whom:
            raise Refusal(Why.TELL_HOW)
        everyone = whom.strip("<>,;:.!").lower() in _EVERYONE
        to = self._readers(table, seat) if everyone else [self._seat_named(table, seat, whom)]
        if not to:
            raise Refusal(Why.TELL_WHO, name=whom, problem="alone", names=[])
        return self._relay(table, seat, to, text, signed=not grey, everyone=everyone)

    def answer(self, table: Table, reply: PressTokenRow, text: str) -> dict[str, Any]:
        """A reply to a relayed message, from the seat it went to: to the
        seat that wrote it alone, signed or not as that was."""
        signed = bool(reply["signed"])
        self._allowed(table, not signed)
        writer = reply["to_seat"]
        took = self.taken_over(table, writer, reply)  # (the newcomer in the seat wrote nothing, and reads no answer)
        if (took is not None or not self._reads(table, writer)) and not signed:
            # Unsigned, its writer is not to be known: "they left" would name them among those who did.  It is
            # answered as if passed on, counted as any (its receipt says an unsigned answer reaches its writer
            # only if they still play), and goes to nobody.
            return self._relay(table, reply["seat"], [], text, signed=False, everyone=False, answer=True)
        if took is not None:
            raise Refusal(Why.TELL_WHO, name=took["detail"]["was"], problem="gone", names=[])
        if not self._reads(table, writer):
            raise Refusal(Why.TELL_WHO, name=table.names[writer], problem="left", names=[])
        return self._relay(table, reply["seat"], [writer], text, signed=signed, everyone=False, answer=True)

    def taken_over(self, table: Table, seat: int, reply: PressTokenRow) -> dict[str, Any] | None:
        """The first takeover of ``seat`` (Keeping.replace) since the message
        ``reply`` answers was relayed, if any: from then on the seat is
        another person's, and that message, its reply address and the
        answers to it are not.  (A takeover in the same second counts: a
        newcomer cannot have written before the seat was theirs.)"""
        at = self.store.press_at(reply["press_id"])
        return next(
            (
                dict(act)
                for act in table.interventions
                if act["act"] == Act.REPLACE and act["detail"]["seat"] == seat and act["at"] >= at
            ),
            None,
        )

    def reader_address(self, table: Table, reply: PressTokenRow) -> str | None:
        """The address the message with the reply address ``reply`` went to,
        as its seat's player's is now (a move to another address is still
        them); the one who left, if someone took the seat over since."""
        took = self.taken_over(table, reply["seat"], reply)
        return took["detail"]["was_address"] if took is not None else table.seats[reply["seat"]]["address"]

    def _allowed(self, table: Table, grey: bool) -> None:
        press = self.press(table)
        if press is Press.NONE:
            own = table.row["press"] is not None  # the keeper's (or the sign-up's) choice, not the rules'
            raise Refusal(Why.PRESS_NONE, title=table.rules.title, rule="" if own else table.rules.press_rule)
        if grey and press is not Press.GREY:
            raise Refusal(Why.PRESS_SIGNED, title=table.rules.title)

    def _reads(self, table: Table, seat: int) -> bool:
        """Whether a person plays the seat (a bot's, and a seat whose player left, get no table talk)."""
        return table.human(seat) and table.seats[seat]["address"] is not None

    def _readers(self, table: Table, seat: int) -> list[int]:
        return [other for other in range(len(table.seats)) if other != seat and self._reads(table, other)]

    def _seat_named(self, table: Table, seat: int, whom: str) -> int:
        """The seat a TELL names: its number (2, #2), its name, its player's
        address (as the writer's game mail shows it), or the start of one
        name alone; refused when it names nobody, several, the writer,
        or a seat no person plays."""
        said = whom.strip("<>,;:.!").lower()
        names = [name.lower() for name in table.names]
        number = said.lstrip("#")
        if number.isdigit():
            found = [int(number) - 1] if 1 <= int(number) <= len(table.seats) else []
        else:
            # The writer's own game mail names the others by address: that names them too.
            addresses = [(row["address"] or "").lower() for row in table.seats]
            found = [s for s, name in enumerate(names) if name == said]
            found = found or [s for s, address in enumerate(addresses) if address and address == said]
            found = found or [s for s, name in enumerate(names) if name.startswith(said)]
        others = [table.names[s] for s in self._readers(table, seat)]
        if not found:
            raise Refusal(Why.TELL_WHO, name=whom, problem="nobody", names=others)
        if len(found) > 1:
            raise Refusal(Why.TELL_WHO, name=whom, problem="several", names=[table.names[s] for s in found])
        named = found[0]
        if named == seat:
            raise Refusal(Why.TELL_WHO, name=whom, problem="self", names=others)
        if not self._reads(table, named):
            problem = "left" if table.seats[named]["resigned_at"] else "bot"
            raise Refusal(Why.TELL_WHO, name=table.names[named], problem=problem, names=others)
        return named

    def _relay(
        self, table: Table, seat: int, to: list[int], text: str, signed: bool, everyone: bool, answer: bool = False
    ) -> dict[str, Any]:
        """The words to each seat of ``to``, each copy with a reply address
        of its own; counted against the writer's seat."""
        text = text.strip()
        if not text:
            raise Refusal(Why.TELL_HOW, problem="answer" if answer else "text")
        if len(text) > MOST_CHARACTERS:
            raise Refusal(Why.PRESS_TOO_LONG, size=len(text), most=MOST_CHARACTERS)
        now = self.clock()
        most = self.config.press_per_day
        sent = self.store.press_since(table.id, seat, iso(now - _DAY))
        if len(sent) >= most:
            raise Refusal(Why.PRESS_LIMIT, most=most, at=from_iso(sent[len(sent) - most]) + _DAY if most else None)
        press_id = self.store.add_press(table.id, seat, iso(now), len(to), signed)
        phase = table.open_phase
        for reader in to:
            token = make_token(self.key, "press", press_id, reader)
            self.store.add_press_token(
                PressTokenRow(
                    token=token, game_id=table.id, seat=reader, to_seat=seat, signed=int(signed), press_id=press_id
                )
            )
            context = {
                "game": {**self.post.game_info(table), "tag": tagged(table.tag(), token)},
                "writer": table.names[seat] if signed else None,
                "reader": table.names[reader],
                "everyone": everyone,
                "answer": answer,
                "lines": text.splitlines(),
                "referee": self.config.address,
            }
            self.post.mail(
                table.id,
                table.label(reader),
                "press",
                context,
                reply_to=token_address(self.config.address, token),
                id_tag=phase_tag(table.id, phase["number"] if phase else None),
            )
        # Never the words, nor (unsigned) whom they went to beyond how many.
        log.info(
            "game %d seat %d: table talk to %d seat(s), %s",
            table.id,
            seat + 1,
            len(to),
            "signed" if signed else "unsigned",
        )
        return {
            "to": [table.names[reader] for reader in to] if signed or not answer else [],
            "everyone": everyone,
            "signed": signed,
            "signed_as": table.names[seat],
            "answer": answer,
            "sent": len(sent) + 1,
            "most": most,
        }
