"""The public history site: static files that any web server (or a folder on
GitHub Pages) can serve.

    index.html              every game: open for sign-up, running, finished
    standings.html          every player's games, wins, places and moves by
                            mail, per kind and over all (referee.standings),
                            written again when a game ends
    feed.atom               every game's results, newest first
    games/N/index.html      a game's page: players, the open phase, its
                            rounds (a long game's newest block of them),
                            the scores chart, the seed
    games/N/history-K.html  a long game's older phases, HISTORY_BLOCK a page
                            (block K: phases 100(K-1)+1 to 100K): written
                            when the block fills, and again when the game
                            ends (the end reveals moves kept hidden till then)
    games/N/record.json     its record, for `referee verify` (a long game's:
                            its head, and record-K.json its parts)
    games/N/feed.atom       its results as they come (the newest WINDOW)
    games/N/deadlines.ics   its next deadline, for a calendar (and the
                            newest CALENDAR_PAST phases resolved)
    private/TOKEN.ics       a seat's own deadlines and reminders, at a name
                            only its player is told (tables.own_calendar):
                            no page links to it, and private/index.html
                            keeps a web server from listing the folder

Only the games whose rows changed since the last render are written again
(``.render-state.json`` keeps a fingerprint of each, what the index says of
it, and its feed entries for the site's feed), and of those only the files
that changed: a move that resolves nothing changes the game's page, not its
record, feed or calendars (the state keeps a digest of each; a calendar's
DTSTAMP is when its event last changed, not the time of the render: RFC
5545 allows it).  Nothing shown depends on the
clock (the time left before a deadline is worked out in the reader's
browser), so time passing writes nothing.  Every file is
written under a temporary name and renamed, so a web server never serves
half a page.  Everything shown comes from ``referee.site.public``.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import heapq
import json
import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NotRequired, Protocol, TypedDict

import jinja2
import orjson
from markupsafe import Markup, escape

import referee.record
from referee.config import Config
from referee.record import RECORD_FORMAT, part_name, split_record
from referee.resources import game_folder, game_record, rule_texts, rules_page, template_folders
from referee.rules import GAMES, get_game
from referee.site.chart import UNIT
from referee.site.chart import html as chart_html
from referee.site.public import page_context
from referee.site.rows import bid_rounds_html, priority_tallies_html, pure_skill_headline
from referee.standings import PAGE as STANDINGS_PAGE
from referee.standings import standings
from referee.store import GameRow, GameState, InterventionRow, PhaseRow, StorageFault, Store
from referee.tables import PRIVATE, Table, Tables, own_calendar, reminder_time
from referee.templating import Environment, template_cache
from referee.timeutil import Clock, from_iso, iso, show

log = logging.getLogger("referee.site")

_STATE_FILE = ".render-state.json"
_FEED_ENTRIES = 100  # the site's feed: every game's end, and the newest of the other entries
_LAYOUT = "13"  # bump when the pages' layout changes: every page is then written again
# A long game grows by its new phase, never rewritten whole (issue 36): its
# older phases are on history pages of HISTORY_BLOCK phases each, written
# once when the block fills; its feed holds its newest WINDOW entries (an
# Atom feed is a window, as the site's is) and its calendars the open phase
# and the newest CALENDAR_PAST resolved (a deadline long past matters little
# in a calendar).  A game of HISTORY_BLOCK phases or fewer has one page.
HISTORY_BLOCK = 100
WINDOW = 100  # as the site's feed (_FEED_ENTRIES)
CALENDAR_PAST = 50  # (each seat's own calendar is written at each move: 8 of them in an 8-player game)


class Records(Protocol):
    """What the site reads: the store, its games by replay, the config, the
    clock, and the referee's secret key (the seats' own calendars are named
    by it).  The engine's rooms (an Engine) are one; the site changes nothing."""

    store: Store
    tables: Tables
    config: Config
    key: bytes

    @property
    def clock(self) -> Clock: ...


class _Rendered(TypedDict):
    """What the state file (_STATE_FILE) keeps of a game's last render."""

    fingerprint: str  # of what its pages showed (Site._fingerprint)
    entries: list[dict[str, Any]]  # its feed entries, those still among the site feed's newest
    summary: dict[str, Any]  # what the index tells of it (Site._summary, who is awaited, who won)
    # a digest of its seats' own calendars' names (never the names: the state file is on the site too)
    calendars: str
    # a long game's history pages and record parts: how many are written
    # (the full ones), and a digest of what else they show (Site._history_key):
    # a new block writes its page alone, a new digest (the game's end) all
    history: NotRequired[dict[str, Any]]
    # a digest of what its calendars show (Site._calendars_shown): while it is the same they are not rendered
    ics: NotRequired[str]
    # a digest of its record.json (a long game's head) and feed.atom as written: the same text is not written again
    texts: NotRequired[dict[str, str]]


@dataclass
class Report:
    written: list[str] = field(default_factory=list)  # paths relative to the site folder
    games_rendered: int = 0
    games_unchanged: int = 0


class Site:
    def __init__(
        self,
        records: Records,
        folder: Path,
        templates: Path | None = None,
        cache: Path | None = None,
        block: int = HISTORY_BLOCK,
        window: int = WINDOW,
        past: int = CALENDAR_PAST,
    ):
        self.records = records
        self.folder = Path(folder)
        self.block = block  # phases per history page (HISTORY_BLOCK; smaller in tests)
        self.window = window  # a game's feed entries (WINDOW; smaller in tests)
        self.past = past  # its calendars' past events (CALENDAR_PAST; likewise)
        self._folders: set[str] = set()  # made already
        self.keeper = Path(templates) if templates else None  # the keeper's own templates, which come first
        self._headline_filters: dict[str, Callable[[dict[str, Any], list[str]], str] | None] = {}  # by kind
        folders = [str(templates)] if templates else []
        folders += [str(folder) for folder in template_folders()]  # the referee's, then each game's own
        self.env = Environment(
            loader=jinja2.FileSystemLoader(folders),
            # Pages, feeds and charts escape what they show as HTML and XML;
            # plain text (a feed entry's title, escaped once where it is
            # used) and iCalendar (which escapes its own way: ics_text) not.
            autoescape=jinja2.select_autoescape(disabled_extensions=("txt.j2", "ics.j2"), default=True),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            auto_reload=False,  # templates do not change while the referee runs: no stat per render
            cache_size=-1,  # every template kept in a plain dict, not an LRU cache behind a lock (a few dozen)
            keep_trailing_newline=True,  # iCalendar's last line ends in CRLF too
            bytecode_cache=template_cache(cache, "site"),  # (Config.template_cache)
        )
        self.env.filters.update(when=show, iso=iso_text, ics_time=_ics_time, ics_text=_ics_text, chart_html=chart_html)
        self.env.filters.update(  # (the rows' and headlines' the site writes itself: rows.py)
            atom_entries=_atom_entries,
            bid_rounds_html=bid_rounds_html,
            priority_tallies_html=priority_tallies_html,
            pure_skill_headline=pure_skill_headline,
        )
        self.env.globals.update(
            ics_head=_ics_head, ics_event=_ics_event, ics_alarm=_ics_alarm, ics_resolved=_ics_resolved
        )
        for game in GAMES.values():
            self.env.filters.update(game.filters)

    def refresh(self) -> None:
        """Write the pages of the games that changed, as the referee's work
        goes on: a page that fails is logged, and never stops the games."""
        try:
            self.render()
        except (StorageFault, OSError) as error:  # games.db, a full disk, a folder it may not write: one line
            log.error("the site could not be written (%s); the games go on", error)
        except Exception:  # (the games matter more than their pages)
            log.exception("the site could not be written; the games go on")

    def render(self, force: bool = False) -> Report:
        """Write what changed since the last render (everything with ``force``).

        What changed is found from the store in one query (Store.site_versions)
        and the state file's fingerprints: a refresh that finds nothing
        changed reads nothing else and writes no file.  Nothing a page shows
        depends on the clock (the time left before a deadline is worked out
        in the reader's browser), so time passing changes no page."""
        with _collecting_less():
            return self._render(force)

    def _render(self, force: bool) -> Report:
        now = self.records.clock()
        known = {} if force else self._read_state()
        report = Report()
        versions = self.records.store.site_versions()
        fingerprints = {str(id_): self._fingerprint(version) for id_, version in versions.items()}
        changed = [id_ for id_ in versions if _fingerprint_of(known.get(str(id_))) != fingerprints[str(id_)]]
        report.games_unchanged = len(versions) - len(changed)
        index_missing = not (self.folder / "index.html").exists()
        if not changed and not force and not index_missing:
            return report  # (what is kept of a game that is no longer in the store stays: games are never deleted)
        unchanged = set(versions) - set(changed)
        state: dict[str, _Rendered] = {str(id_): known[str(id_)] for id_ in unchanged}
        paused = self.records.store.paused() if changed else {}
        watched = self.records.store.watcher_counts() if changed else {}  # how many follow each game: never who
        calendars_changed = False  # whether a seat's own calendar changed name: the others are taken down
        # The newest _FEED_ENTRIES times of the site feed's entries (not the
        # games' ends) of the games before this one in the state's order,
        # which is _newest's order among entries of the same time.
        newest: list[str] = []
        for game in state.values():
            _keep_newest(newest, game["entries"])
        ended = False  # whether a finished game was written: the standings may have changed
        for id_ in changed:
            row = self.records.store.game(id_)
            assert row is not None  # (a game is never deleted)
            # (a started game's table: read once, for its index line, its calendars' names and its pages)
            table = self.records.tables.table(id_) if row["state"] != GameState.OPEN else None
            summary = self._summary(row, table, paused.get(id_), watched.get(id_, 0))
            calendar_names = self._calendar_names(id_, table)
            own = _digest(sorted(calendar_names.values()))
            before = known.get(str(id_))
            state[str(id_)] = {
                "fingerprint": fingerprints[str(id_)],
                "entries": [],
                "summary": summary,
                "calendars": own,
            }
            if table is not None:
                self._render_game(table, now, report, before, state[str(id_)], calendar_names, _crowded(newest))
                _keep_newest(newest, state[str(id_)]["entries"])
            calendars_changed = calendars_changed or own != _calendars_of(known.get(str(id_)))
            report.games_rendered += 1
            ended = ended or row["state"] == GameState.FINISHED
        if calendars_changed:  # a seat taken over, left, or its player's address changed
            self._take_down({path for id_ in versions for path in self._calendars(id_)}, report)
        entries = _newest([e for game in state.values() for e in game["entries"]])
        summaries = [state[str(id_)]["summary"] for id_ in versions]  # what the index tells of each game
        self._render_index(summaries, entries, now, report)
        self._render_rules(report)
        if ended or force or not (self.folder / STANDINGS_PAGE).exists():
            self._render_standings(now, report)
        # An entry out of the newest now never comes back (every new entry
        # is newer), so the state keeps only those and the games' ends:
        # it stays small however many rounds the site has.
        kept = {entry["id"] for entry in entries}
        for game in state.values():
            game["entries"] = [entry for entry in game["entries"] if entry["id"] in kept]
        if state != known:
            self._write(_STATE_FILE, json.dumps(state, sort_keys=True))
        return report

    # -- one game ------------------------------------------------------------

    def _render_game(
        self,
        table: Table,
        now: datetime,
        report: Report,
        before: _Rendered | None,
        rendered: _Rendered,
        calendar_names: dict[int, str],
        crowded: str | None = None,
    ) -> None:
        """Write a game's files, and keep in ``rendered`` its feed entries for
        the site's feed, what the index tells of it (who is awaited, who won:
        both change only with the game), its history pages and its record's
        parts (``before``: what the last render kept of it, None for a first
        or forced render; ``calendar_names``: its seats' own calendars',
        Site._calendar_names; ``crowded``: a time at or before which no entry
        of this game can be among the site feed's newest, _crowded).  Only the phases the files written show are made
        into rounds and record entries (``since``): a long game's older ones
        are on the site already, as they stay."""
        game_id = table.id
        resolved = len(table.replay.steps)
        pages = (resolved - 1) // self.block if resolved > self.block else 0  # full blocks not on the page
        shown = pages * self.block  # the game's page shows the phases after these
        part = referee.record.PART_PHASES  # (read here, not imported: a test makes parts small)
        full_parts = resolved // part if resolved > part else 0  # (no parts: the record is whole)
        kept = before.get("history", {}) if before is not None else {}
        # (a short game has neither history pages nor parts, so no key of them: it is not worked out)
        key = self._history_key(table) if kept or pages or full_parts else None
        if kept.get("key") != key:  # what they show besides their phases changed: all are written again
            kept = {}
        history_written = kept.get("pages", 0)  # history pages as they should be on the site
        parts_written = kept.get("parts", 0)  # the record's full parts, likewise
        if before is None:  # every entry the feeds can show: the game's newest, and the site's not crowded out
            entries_from = _feed_start(table.phases[:resolved], self.window, crowded) + 1
        else:  # the newest: the older ones are kept as the last render made them
            entries_from = _window_start(table.phases[:resolved], self.window) + 1
        # the first phase of the first part to write: the last part, or the first not written yet
        parts_from = 1 if resolved <= part else min(parts_written, (resolved - 1) // part) * part + 1
        since = min(
            shown + 1,  # the game's page
            history_written * self.block + 1,  # the history pages not written yet
            entries_from,  # the feeds
            resolved - self.past + 1,  # the calendar
            parts_from,  # the record's parts not written yet
        )
        since = max(1, since)
        context = {
            **page_context(table, since),
            "now": iso(now),
            "referee": self.records.config.address,
            "watchers": rendered["summary"]["watchers"],
        }
        kind = table.row["kind"]
        rounds = context["rounds"]  # of the phases from ``since``

        def phases(first: int, last: int = resolved) -> list[dict[str, Any]]:
            return rounds[first - since : last - since + 1]

        scores = _scores_before(table, entries_from, len(context["names"]))
        context["entries"] = self._entries(context, kind, phases(entries_from), scores, self._linker(game_id, shown))
        base = game_folder(game_id)
        history = [self._block(table, k) for k in range(1, pages + 1)]
        page = {**context, "rounds": phases(shown + 1), "history": history}
        self._write(f"{base}/index.html", self.env.get_template("site/game.html.j2").render(**page), report)
        template = self.env.get_template("site/history.html.j2")
        for k, block in enumerate(history[history_written:], history_written + 1):
            text = template.render(
                **{**context, "rounds": phases(block["first"], block["last"])}, block=block, history=history, number=k
            )
            self._write(f"{base}/{block['page']}", text, report)
        written = before.get("texts") if before is not None else None
        rendered["texts"] = {}
        self._write_record(game_id, context["record"], since, parts_from, report, written, rendered["texts"])
        if pages or full_parts:  # (only a long game's: the state file is written whole, and kept small)
            rendered["history"] = {"key": key, "pages": pages, "parts": full_parts}
        own = [entry for entry in context["entries"] if entry["feeds"] != "site"][: self.window]
        feed = self.env.get_template("site/feed.atom.j2").render(
            title=f"{table.rules.title}, game {game_id}",
            entries=own,
            updated=own[0]["updated"] if own else table.row["created_at"],
            feed_id=f"{self._urn()}:game:{game_id}",
            link=f"{base}/",
            base="../../",
        )
        self._write_changed(f"{base}/feed.atom", feed, report, written, rendered["texts"])
        calendars = self._calendars_shown(table, context, phases(resolved - self.past + 1), calendar_names)
        # (made afresh above, it holds no list or dict inside itself: json's check for one was half the dump)
        rendered["ics"] = _digest([_LAYOUT, json.dumps(calendars, sort_keys=True, check_circular=False)])
        if before is None or before.get("ics") != rendered["ics"]:  # (a move that resolves nothing changes none)
            self._render_calendars(calendars, report)
        rendered["summary"] = {
            **rendered["summary"],
            "waiting": context["phase"]["waiting"] if context["phase"] else [],
            "winner": context["record"]["winner"],
        }
        entries = [entry for entry in context["entries"] if entry["feeds"] != "game"]
        if before is not None:  # the older entries this render did not make are kept as the last one did
            made = {entry["id"] for entry in entries}
            entries += [self._relinked(entry, game_id, shown) for entry in before["entries"] if entry["id"] not in made]
        rendered["entries"] = entries

    def _block(self, table: Table, number: int) -> dict[str, Any]:
        """History page ``number``: its name, its phases, and the rounds or
        auctions they are of, which a reader knows them by ("Round 1 to
        Round 2")."""
        first, last = (number - 1) * self.block + 1, number * self.block
        groups = dict.fromkeys(_group(table.phases[n - 1]["label"]) for n in (first, last))
        return {"page": _history_page(number), "first": first, "last": last, "groups": " to ".join(groups)}

    def _history_key(self, table: Table) -> str:
        """What a long game's history pages and record parts show besides
        their phases, which stay as they were resolved: the layout and the
        record's format, the game's state (its end reveals every move), its
        names and players, and the referee's address (in the footer).  While
        it is unchanged, a page or a part once written stays as it is."""
        row = table.row
        facts = [
            _LAYOUT,
            RECORD_FORMAT,
            row["state"],
            table.rules.title,
            row["name"] or "",
            self.records.config.address,
        ]
        players = json.dumps(table.record_head()["players"], sort_keys=True)
        return _digest([*facts, *table.names, players])

    def _linker(self, game_id: int, shown: int) -> Callable[[int], str]:
        """The address of phase N's row, from the site's root: on the game's
        page (its phases after ``shown``), or on its history page."""
        base = game_folder(game_id)

        def link(number: int) -> str:
            if number > shown:
                return f"{base}/#phase-{number}"
            return f"{base}/{_history_page((number - 1) // self.block + 1)}#phase-{number}"

        return link

    def _relinked(self, entry: dict[str, Any], game_id: int, shown: int) -> dict[str, Any]:
        """An entry kept from an earlier render, linked where its phase is now
        (a full block moves from the game's page to a history page)."""
        match = re.search(r"#phase-(\d+)$", entry["link"])
        return {**entry, "link": self._linker(game_id, shown)(int(match[1]))} if match else entry

    def _calendars_shown(
        self, table: Table, context: dict[str, Any], rounds: list[dict[str, Any]], names: dict[int, str]
    ) -> dict[str, Any]:
        """All that the game's calendars show, and nothing else: the public
        deadlines.ics (the newest ``rounds`` resolved and the open phase) and
        each seat's own (tables.own_calendar: the phases in which it moves,
        each dated when it closed, and the open one, if it moves in it, at
        its deadline, with an alarm when the referee's reminder is due,
        tables.reminder_time); the game and phase in each summary, nothing
        of a seat's hand or moves.  The calendars are rendered from this
        alone, so its digest (the state's ``ics``) changes whenever one of
        them would: a move that resolves nothing changes none of them."""
        phase = context["phase"]
        open_ = table.open_phase if phase is not None else None  # (none in a cancelled game)
        remind = None  # no reminder while paused: no deadline runs
        if open_ is not None and not phase["paused"]:
            remind = reminder_time(open_, self.records.config.reminder)

        def dated(rows: list[Any]) -> list[dict[str, Any]]:
            return [{"number": row["number"], "label": row["label"], "resolved_at": row["resolved_at"]} for row in rows]

        own = [
            {
                "path": path,
                "seat": seat,
                "closed": dated([p for p in table.phases if p["resolved_at"] and seat in p["movers"]][-self.past :]),
                "moves_now": open_ is not None and seat in open_["movers"],
                "remind": remind and iso(remind),
            }
            for seat, path in sorted(names.items())
        ]
        return {
            "game": {"id": table.id, "title": table.rules.title},
            "rounds": dated(rounds),
            "phase": phase and {"label": phase["label"], "deadline": phase["deadline"], "paused": phase["paused"]},
            "open_number": open_ and open_["number"],
            "stamp": open_ and _stamp(open_, context["acts"]),
            "uid": f"{table.id}.{self.records.config.domain}",
            "own": own,
        }

    def _render_calendars(self, calendars: dict[str, Any], report: Report) -> None:
        """The game's deadlines.ics and its seats' own calendars, from what
        they show (Site._calendars_shown)."""
        shown = {name: value for name, value in calendars.items() if name != "own"}
        text = self.env.get_template("site/deadlines.ics.j2").render(**shown)
        self._write(f"{game_folder(calendars['game']['id'])}/deadlines.ics", _fold_ics(text), report)
        template = self.env.get_template("site/own-deadlines.ics.j2")
        for seat in calendars["own"]:
            self._write(seat["path"], _fold_ics(template.render(**shown, **seat)), report)

    def _write_record(
        self,
        game_id: int,
        record: dict[str, Any],
        since: int,
        parts_from: int,
        report: Report,
        written: dict[str, str] | None,
        texts: dict[str, str],
    ) -> None:
        """A game's record.json; a long game's in parts (record.split_record):
        the head, and the parts from the one that holds phase ``parts_from``
        (the others are on the site as they are: a resolved phase does not
        change while the game runs).  ``record`` has the phases from number
        ``since`` (at most ``parts_from``) only.  The head (or the whole
        record) is written only when it changed (Site._write_changed: a move
        that resolves nothing changes no record)."""
        placeholders: list[Any] = [None] * (since - 1)  # (the phases before: in parts not written here)
        head, parts = split_record({**record, "phases": placeholders + record["phases"]})
        assert since == 1 or parts, "a whole record is made of every phase"
        for number, part in enumerate(parts, 1):
            if number > (parts_from - 1) // referee.record.PART_PHASES:
                text = _record_text(part)
                self._write(f"{game_folder(game_id)}/{part_name(number)}", text, report)
        self._write_changed(game_record(game_id), _record_text(head), report, written, texts)

    def _calendars(self, game_id: int) -> list[str]:
        """The names of a game's seats' own calendars (tables.own_calendar)."""
        return list(self._calendar_names(game_id).values())

    def _calendar_names(self, game_id: int, table: Table | None = None) -> dict[int, str]:
        """A game's seats' own calendars' names (tables.own_calendar), by
        seat: of the seats a person plays.  A started game's seats are
        its ``table``'s (read for its pages anyway: no query of its own)."""
        seats = table.seats if table is not None else self.records.store.seats(game_id)
        return {seat["seat"]: path for seat in seats if (path := own_calendar(self.records.key, seat))}

    def _take_down(self, calendars: set[str], report: Report) -> None:
        """Remove every seat's calendar but ``calendars`` (those of seats a
        person plays now): a calendar stops with its seat's player, and its
        name is never used again.  And keep a web server from listing them."""
        folder = self.folder / PRIVATE
        for path in folder.glob("*.ics"):
            if f"{PRIVATE}/{path.name}" not in calendars:
                path.unlink(missing_ok=True)
                log.info("a seat's own calendar was taken down: its seat changed hands")
        index = self.env.get_template("site/private.html.j2").render(now=None, referee=self.records.config.address)
        if not (folder / "index.html").exists():
            self._write(f"{PRIVATE}/index.html", index, report)

    def _entries(
        self,
        context: dict[str, Any],
        kind: str,
        rounds: list[dict[str, Any]],
        scores: list[Any],
        link: Callable[[int], str],
    ) -> list[dict[str, Any]]:
        """Atom entries of a game, newest first, each with a line of content
        (the scores, the players), and the ``feeds`` it is in: the game's
        feed has its start, each phase and its end; the site's feed has its
        start, each round or auction (one entry for an Ice Ice Baby
        auction's many turns), and its end.  Of ``rounds`` only (every phase,
        or the newest of a long game from the start of their round or
        auction: the feeds show no more, and the render state keeps the site
        feed's older ones); ``scores``, those announced before them;
        ``link``, a phase's address (Site._linker)."""
        game, names = context["game"], context["names"]
        players = ", ".join(
            p["name"] + (" (a random bot)" if p["bot_from_phase"] == 0 else "")  # as at the start
            for p in context["record"]["players"]
        )
        entries = [
            {
                "id": f"{self._urn()}:game:{game['id']}:start",
                "updated": game["created_at"],
                "title": f"Game {game['id']} begins",
                "link": f"games/{game['id']}/",
                "content": f"{context['record']['game']['title']}. Players, in seating order: {players}.",
                "feeds": "both",
            }
        ]
        titles = self._titles(kind, rounds, names, game)
        groups = [_group(entry["label"]) for entry in rounds]
        # The group after each round's: the next round's, after the last the open phase's, if one (at the
        # end none: the last round or auction is over).
        open_ = context["phase"] if game["state"] != GameState.FINISHED else None
        after: list[str | None] = [*groups[1:], _group(open_["label"]) if open_ else None] if groups else []
        group: list[str] = []
        phase_id = f"{self._urn()}:game:{game['id']}:phase:"
        game_title = f"Game {game['id']}, "
        shown: list[Any] | None = None  # the scores ``standing`` tells (most phases change none)
        for entry, title, its_group, next_group in zip(rounds, titles, groups, after, strict=True):
            for event in reversed(entry["events"]):
                if "scores" in event:
                    scores = event["scores"]
                    break
            if scores != shown:
                standing = ", ".join(f"{names[seat]} {score}" for seat, score in enumerate(scores))
                shown = scores
            number = entry["number"]
            phase = {
                "id": f"{phase_id}{number}",
                "updated": entry["resolved_at"],
                "title": f"{game_title}{title}",
                "link": link(number),
                "content": f"{title}. Scores: {standing}.",
                "feeds": "game",
            }
            entries.append(phase)
            group.append(title)
            if its_group != next_group:
                if len(group) == 1:
                    phase["feeds"] = "both"
                else:
                    entries.append(self._headline(game["id"], its_group, group, phase, standing))
                group = []
        if game["state"] == GameState.FINISHED:
            winner = context["record"]["winner"]
            final = ", ".join(f"{p['name']} {p['score']}" for p in context["players"])
            entries.append(
                {
                    "id": f"{self._urn()}:game:{game['id']}:end",
                    "updated": game["finished_at"],
                    "title": f"Game {game['id']} is over: {winner + ' wins' if winner else 'no winner'}",
                    "link": f"games/{game['id']}/#end",
                    "content": f"Final scores: {final}. The seed is published: anyone can replay "
                    "the game from its record with `referee verify`.",
                    "feeds": "both",
                }
            )
        return entries[::-1]

    def _titles(self, kind: str, rounds: list[dict[str, Any]], names: list[str], game: dict[str, Any]) -> list[str]:
        """A feed title per phase of ``rounds``, as site/<kind>/summary.txt.j2
        writes them ("Round 2 bidding, turn 3: ann bids green 2"): by the
        game's headline filter itself where that template and the headline
        macro it calls are the referee's own and the macro is the filter
        (Site._headline_filter), else by the template, in one render (a
        template per line costs more than the line)."""
        headline = self._headline_filter(kind)
        if headline is not None:
            return [f"{entry['label']}: {headline(entry, names)}".strip() for entry in rounds]
        template = self.env.get_template(f"site/{kind}/summary.txt.j2")
        lines = template.render(rounds=rounds, names=names, game=game).split("\n")
        return [title.strip() for title in lines if title.strip()]

    def _headline_filter(self, kind: str) -> Callable[[dict[str, Any], list[str]], str] | None:
        """The filter a kind's feed titles are made by, when the templates
        that make them are the referee's own: its summary template writes
        each phase's "label: headline" and its headline macro (in plain
        text) is the filter _HEADLINE_FILTERS names.  A macro call a phase
        cost more than the line (a tenth of Bluff's render).  A keeper's
        own copy of either template is rendered as it is."""
        if kind not in self._headline_filters:
            names = (f"site/{kind}/summary.txt.j2", f"events/{kind}.txt.j2")
            keeper = self.keeper is not None and any((self.keeper / name).is_file() for name in names)
            name = _HEADLINE_FILTERS.get(kind)
            self._headline_filters[kind] = None if keeper or name is None else self.env.filters[name]
        return self._headline_filters[kind]

    def _headline(
        self, game_id: int, name: str, titles: list[str], last: dict[str, Any], standing: str
    ) -> dict[str, Any]:
        """The site feed's one entry for a round or auction of several phases:
        what they decided (the parts of their lines after the move: "alice
        wins the auction"), at its last phase."""
        outcomes = [part for title in titles for part in title.split("; ")[1:]]
        return {
            **last,
            "id": f"{self._urn()}:game:{game_id}:{name.lower().replace(' ', '-')}",
            "title": f"Game {game_id}, {name}: {'; '.join(outcomes) or titles[-1]}",
            "content": f"After {len(titles)} moves, scores: {standing}.",  # the moves: the game's feed
            "feeds": "site",
        }

    def _urn(self) -> str:
        return f"urn:referee:{self.records.config.domain}"

    # -- the index and the site's feed -------------------------------------

    def _summary(
        self, row: GameRow, table: Table | None, pause: InterventionRow | None, watchers: int
    ) -> dict[str, Any]:
        """A line of the index about one game, from the store alone (cheap)
        and a started game's ``table`` (read for its pages anyway); ``pause``,
        the pause in force (Store.paused): then no deadline runs, and the
        line says so instead; ``watchers``, how many follow it.
        Nothing in it depends on the clock: the reader's browser tells the
        time left before the deadline."""
        phase = table.open_phase if table is not None and row["state"] == GameState.RUNNING else None
        return {
            "id": row["id"],
            "kind": row["kind"],
            "title": get_game(row["kind"]).title,
            "name": row["name"],
            "state": row["state"],
            "created_at": row["created_at"],
            "finished_at": row["finished_at"],
            "phase": phase and {"label": phase["label"], "deadline": phase["deadline"]},
            "paused": pause and {"at": pause["at"], "until": pause["detail"].get("until")},
            "signed": len(self.records.store.signups(row["id"])) if row["state"] == GameState.OPEN else None,
            "wanted": row["seats_wanted"],
            "asked": _asked(row) if row["state"] == GameState.OPEN else "",
            "watchers": watchers,
        }

    def _fingerprint(self, version: str) -> str:
        """Changes whenever what a game's pages show may change: its rows
        (``version``, Store.site_versions), the pages' layout, the record's
        format, and what the config and the secret key put in them (the
        referee's address, the calendars' ids and alarms, the seats' own
        calendars' names).  The key enters only through a hash of it, and
        that only through this digest: the state file is on the site too."""
        config = self.records.config
        facts = [
            _LAYOUT,
            RECORD_FORMAT,  # a new record format rewrites every record.json
            config.address,
            config.domain,
            str(config.reminder),
            hashlib.sha256(b"referee site fingerprint\n" + self.records.key).hexdigest(),
            version,
        ]
        return _digest(facts)

    def _render_index(
        self, summaries: list[dict[str, Any]], entries: list[dict[str, Any]], now: datetime, report: Report
    ) -> None:
        order = {GameState.RUNNING: 0, GameState.OPEN: 1, GameState.FINISHED: 2}
        games = sorted(summaries, key=lambda g: (order.get(g["state"], 3), -g["id"]))
        self._write(
            "index.html",
            self.env.get_template("site/index.html.j2").render(
                games=games, now=iso(now), referee=self.records.config.address
            ),
            report,
        )
        self._write(
            "feed.atom",
            self.env.get_template("site/feed.atom.j2").render(
                title=f"Games refereed by {self.records.config.address}",
                entries=entries,
                updated=entries[0]["updated"] if entries else iso(now),
                feed_id=self._urn(),
                link="./",
                base="",
            ),
            report,
        )

    def _render_standings(self, now: datetime, report: Report) -> None:
        """The standings over every finished game (referee.standings), as
        STANDINGS tells them by mail: written when a game has ended."""
        page = self.env.get_template("site/standings.html.j2").render(
            standings=standings(self.records.store, self.records.tables),
            titles={kind: game.title for kind, game in GAMES.items()},
            now=iso(now),
            referee=self.records.config.address,
        )
        self._write(STANDINGS_PAGE, page, report)

    def _render_rules(self, report: Report) -> None:
        """Each kind's rule text and rulings, at rules/<kind>.html, written
        only when they changed (they change with the referee, not the games)."""
        for kind in GAMES:
            rules, rulings = rule_texts(kind)
            page = self.env.get_template("site/rules.html.j2").render(
                title=get_game(kind).title, now=None, referee=self.records.config.address, rules=rules, rulings=rulings
            )
            name = rules_page(kind)
            path = self.folder / name
            if not path.exists() or path.read_text(encoding="utf-8") != page:
                self._write(name, page, report)

    # -- files -------------------------------------------------------------

    def _read_state(self) -> dict[str, _Rendered]:
        """The state file's games; a game kept in a shape this code does not
        write (a damaged file, a hand's edit) is left out, and is so written
        again, as is every game when the file is not a state at all."""
        try:
            state = json.loads((self.folder / _STATE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(state, dict):
            return {}
        return {id_: game for id_, game in state.items() if _sound(game)}

    def _write_changed(
        self, name: str, text: str | bytes, report: Report, written: dict[str, str] | None, texts: dict[str, str]
    ) -> None:
        """Write ``name`` unless the last render wrote it as ``text`` already
        (``written``: the digests of a game's files as the state file keeps
        them, Site._render_game's ``before``; None, or a name not in it: it
        is written).  The state file is written after the files, so a digest
        kept there is of a file on the site (only `referee render --force`
        writes back a file deleted by hand).  ``texts`` gets its digest."""
        key = name.rsplit("/", 1)[-1]
        data = text if isinstance(text, bytes) else text.encode()  # (once, for its digest and the file)
        texts[key] = hashlib.sha256(data).hexdigest()[:24]  # (_digest([text]) of a text)
        if not isinstance(written, dict) or written.get(key) != texts[key]:
            self._write(name, data, report)

    def _write(self, name: str, text: str | bytes, report: Report | None = None) -> None:
        """Write ``name`` whole or not at all: a temporary file, then a rename.
        (By the os module's calls, not pathlib's and a text file's: a refresh
        writes a file or more for each game that changed, and those cost
        half the CPU of a write, which is a few system calls.)"""
        folder, base = os.path.split(os.path.join(self.folder, name))
        if folder not in self._folders:
            os.makedirs(folder, exist_ok=True)
            self._folders.add(folder)
        temporary = os.path.join(folder, f".{base}.{os.getpid()}.tmp")  # one writer: the run lock
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.fchmod(descriptor, 0o644)  # the site is public, whatever the umask
                data = memoryview(text if isinstance(text, bytes) else text.encode())
                while data:  # (a write may take less than all)
                    data = data[os.write(descriptor, data) :]
            finally:
                os.close(descriptor)
            os.replace(temporary, os.path.join(folder, base))
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        if report is not None:
            report.written.append(name)


# The filter each kind's headline macro (events/<kind>.txt.j2's ``headline``,
# with html false) writes its line by, where its site/<kind>/summary.txt.j2
# is "label: headline" a phase (test_site41_titles holds the two the same).
_HEADLINE_FILTERS = {
    "bluff": "bluff_headline",
    "ice": "ice_headline",
    "priority": "priority_headline",
    "pure-skill": "pure_skill_headline",  # (the site's: rows.pure_skill_headline)
}

_SUMMARY_KEYS = {"id", "kind", "title", "name", "state", "created_at", "finished_at", "phase", "paused", "signed"}
_SUMMARY_KEYS |= {"wanted", "asked", "watchers"}  # (Site._summary's)
_ENTRY_KEYS = {"id", "updated", "title", "link", "content", "feeds"}  # a feed entry's (Site._entries)


# The cyclic garbage collector's first threshold while the site is written
# (Python's default: 700 allocations net between collections).  At 10,000 a
# forced render of 200 Bluff games still collected 10 times (0.04-0.05 s of
# CPU); at 100,000 once, as the thresholds come back (0.014-0.03 s), freeing
# as much (Bluff's render makes no cycle; Ice's some 450 objects).
_YOUNG_COLLECTION = 100_000


@contextmanager
def _collecting_less() -> Iterator[None]:
    """Run Python's cyclic garbage collector less often while the site is
    written, then as before.  A render makes millions of short-lived objects
    (the replays' states, the pages' dicts, Jinja's contexts) that their
    reference counts free, nearly all; at the default thresholds the
    collector looked through them 1,330 times in a forced render of 200 Bluff
    games, a tenth of its CPU.  What cycles it makes are still collected,
    after every _YOUNG_COLLECTION allocations.  (referee.fetch turns the
    collector off for a record's parse, which makes no cycle at all.)"""
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], _YOUNG_COLLECTION), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def _sound(game: Any) -> bool:
    """Whether a game's entry in the state file is as render() writes it:
    what it reads of one kept unchanged (its index line, its feed entries)."""
    if not isinstance(game, dict) or not all(isinstance(game.get(key), str) for key in ("fingerprint", "calendars")):
        return False
    entries, summary = game.get("entries"), game.get("summary")
    if not isinstance(entries, list) or not isinstance(summary, dict) or not summary.keys() >= _SUMMARY_KEYS:
        return False
    if summary["state"] != GameState.OPEN and not {"waiting", "winner"} <= summary.keys():
        return False
    return all(
        isinstance(entry, dict)
        and entry.keys() >= _ENTRY_KEYS
        and isinstance(entry["id"], str)
        and isinstance(entry["updated"], str)
        for entry in entries
    )


def _stamp(phase: PhaseRow, acts: list[dict[str, Any]]) -> str:
    """When what the calendars show of the open ``phase`` last changed: it
    opened, or a keeper's or the referee's act in it (an extension, a pause,
    a takeover...) was the last to; their DTSTAMP (RFC 5545 allows the time
    the event was last revised), which stays as it is while they do."""
    times = [phase["opened_at"], *(act["at"] for act in acts if act["phase"] == phase["number"])]
    return max(times, key=from_iso)


def _calendars_of(rendered: _Rendered | None) -> str | None:
    return rendered.get("calendars") if rendered is not None else None


def _fingerprint_of(rendered: _Rendered | None) -> str | None:
    return rendered.get("fingerprint") if rendered is not None else None


def _record_text(record: dict[str, Any]) -> bytes:
    """A game's record.json (or a part of it) as the site has it: its keys
    sorted, in UTF-8, without spaces.  By orjson, not the json module: a
    Bluff game's record is some 80 KB of small dicts, which json's C
    encoder wrote in 1.4 ms and orjson writes in 0.2 (issue 36: a tenth of
    a forced render).  A record holding what orjson refuses and json wrote
    (a whole number beyond 64 bits, as a player may choose for an option; a
    key that is not a string) is written by json, as before, so such a game
    does not stop the site (tests/unit/test_record48_text.py)."""
    try:
        return orjson.dumps(record, option=_ORJSON_AS_JSON)
    except orjson.JSONEncodeError:
        return json.dumps(record, sort_keys=True, ensure_ascii=False, check_circular=False).encode()


# Sorted keys; and a subclass of str, int, dict or list other than an enum, a
# date or a dataclass passed by, so refused, so written by json as before
# (orjson would write them its own way).  (orjson writes an Enum's value and a
# UUID, which json refused: no record of the referee's holds either.)
_ORJSON_AS_JSON = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)


def _digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:24]


@functools.lru_cache(maxsize=4096)  # (the same labels in every game of a kind, each asked for a few times)
def _group(label: str) -> str:
    """The round or auction a phase belongs to, from its label: "Auction 8,
    turn 3" and "Auction 8 scoring, offer 1" are "Auction 8"."""
    match = UNIT.match(label)  # the chart's points are these groups too
    return f"{match[1]} {match[2]}" if match else label


def _history_page(number: int) -> str:
    return f"history-{number}.html"


def _window_start(phases: list[Any], size: int) -> int:
    """Where the newest ``size`` of ``phases`` (rows with a label) start, as
    an index, moved back to the start of their first round or auction (its
    headline counts all its phases)."""
    first = max(0, len(phases) - size)
    while 0 < first < len(phases) and _group(phases[first - 1]["label"]) == _group(phases[first]["label"]):
        first -= 1
    return first


def _feed_start(phases: list[Any], size: int, crowded: str | None) -> int:
    """Where the phases the feeds can show start, as an index: the game's
    feed's newest ``size`` (_window_start), and every round or auction whose
    site entry (at its last phase's resolution) is newer than ``crowded``
    (_crowded), from its start (its headline counts all its phases)."""
    first = _window_start(phases, size)
    if crowded is None:
        return 0
    for index, phase in enumerate(phases[:first]):
        if phase["resolved_at"] <= crowded:  # (the site feed compares the times as text too: _newest)
            continue
        if index + 1 == len(phases) or _group(phases[index + 1]["label"]) != _group(phase["label"]):  # its last
            return _window_start(phases[: index + 1], 1)
    return first


def _keep_newest(newest: list[str], entries: list[dict[str, Any]]) -> None:
    """Add to ``newest`` (a heap) the times of ``entries`` that compete for
    the site feed (not a game's end: those are all shown, _newest), keeping
    the newest _FEED_ENTRIES."""
    for entry in entries:
        if not entry["id"].endswith(":end"):
            if len(newest) < _FEED_ENTRIES:
                heapq.heappush(newest, entry["updated"])
            elif entry["updated"] > newest[0]:
                heapq.heapreplace(newest, entry["updated"])


def _crowded(newest: list[str]) -> str | None:
    """The time at or before which an entry of a game rendered next is never
    among the site feed's newest: _newest sorts by time, keeping the order
    of the state (the order games are rendered in) among equal times, so
    _FEED_ENTRIES entries of the games before it, as new or newer, come
    first.  (The entries of the games after it can only crowd out more.)
    None while fewer than _FEED_ENTRIES are known."""
    return newest[0] if len(newest) == _FEED_ENTRIES else None


def _scores_before(table: Table, number: int, seats: int) -> list[Any]:
    """The scores announced last before phase ``number`` (none: all 0)."""
    for step in reversed(table.replay.steps[: number - 1]):
        for event in reversed(step.events):
            if "scores" in event:
                return list(event["scores"])
    return [0] * seats


def _newest(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The site feed's entries, newest first: every game's end (a game
    whose last rounds were crowded out by busier games still says who won),
    and the newest ``_FEED_ENTRIES`` of the others."""
    ends = [e for e in entries if e["id"].endswith(":end")]
    others = sorted((e for e in entries if not e["id"].endswith(":end")), key=lambda e: e["updated"], reverse=True)
    return sorted(ends + others[:_FEED_ENTRIES], key=lambda e: e["updated"], reverse=True)


# Stored times are already "2026-11-24T12:00:00Z"; these filters only reshape
# that text (thousands of times a render: parsing each would cost a tenth of it).


def iso_text(text: str) -> str:
    return text if text.endswith("Z") else iso(from_iso(text))


def _atom_entries(entries: list[dict[str, Any]]) -> Markup:
    """A feed's entries (Site._entries'), as Atom: each text escaped as
    XML.  (Written here, not by a template: a loop of its small elements
    cost most of a feed; a keeper's own feed.atom.j2 may still loop.)"""
    out = []
    for entry in entries:
        title, id_, link, content = entry["title"], entry["id"], entry["link"], entry["content"]
        updated = iso_text(entry["updated"])
        # (most entries have no character to escape: one search of their texts, not one a text)
        if _special(f"{title}{id_}{updated}{link}{content or ''}"):
            title, id_, updated, link, content = (
                _xml(title),
                _xml(id_),
                _xml(updated),
                _xml(link),
                content and _xml(content),
            )
        out.append(
            f"<entry>\n<title>{title}</title>\n<id>{id_}</id>\n<updated>{updated}</updated>\n"
            f'<link rel="alternate" href="{link}"/>\n'
            + (f'<content type="text">{content}</content>' if content else "")
            + "</entry>\n"
        )
    return Markup("".join(out))


def _xml(text: object) -> str:
    """``text`` escaped as the templates escape it (markupsafe.escape), without
    making a Markup of each piece (five of them an entry, thousands a feed)."""
    if hasattr(text, "__html__"):
        return str(escape(text))
    text = str(text)
    if not _special(text):  # (most: an address, a time, a title of words)
        return text
    return (
        text.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;").replace("'", "&#39;").replace('"', "&#34;")
    )


def _special(text: str) -> bool:
    """Whether ``text`` has a character that XML escapes.  (Five searches
    of a character each: a search of the class [&<>'"] by a regular
    expression cost thirty times as much, over a feed entry's texts.)"""
    return "&" in text or "<" in text or ">" in text or "'" in text or '"' in text


def _ics_text(text: object) -> str:
    """A TEXT value of iCalendar (RFC 5545, 3.3.11): backslash, semicolon
    and comma escaped, a line break as ``\\n``."""
    text = str(text).replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")
    return "\\n".join(text.splitlines())


def _ics_head(name: str) -> str:
    """An iCalendar file's first lines, up to its events."""
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//referee//play-by-mail deadlines//EN\r\n"
        f"X-WR-CALNAME:{_ics_text(name)}\r\n"
    )


def _ics_event(uid: str, stamp: str, at: str, summary: str, description: str | None = None, alarm: str = "") -> str:
    """An event of a calendar at ``at`` (the deadline, or when a phase was
    resolved), with its ``alarm`` (_ics_alarm) if any.  (A function, not a
    template's macro: a calendar has an event a phase, and a macro's call
    cost more than its lines.)"""
    # (a resolved phase is stamped when it was resolved: that time made once)
    stamped, at = (_ics_time(at),) * 2 if stamp == at else (_ics_time(stamp), _ics_time(at))
    lines = [f"BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:{stamped}\r\nDTSTART:{at}\r\nDTEND:{at}\r\n"]
    lines.append(f"SUMMARY:{_ics_text(summary)}\r\n")
    if description:
        lines.append(f"DESCRIPTION:{_ics_text(description)}\r\n")
    lines.append(f"{alarm}END:VEVENT\r\n")
    return "".join(lines)


def _ics_resolved(phases: list[dict[str, Any]], uid: str, at: str, summary: str, then: str) -> str:
    """The events of resolved ``phases`` (each dated when it was resolved):
    a phase's UID is its number between ``uid`` and ``at``, its summary its
    label between ``summary`` and ``then``.  (A calendar has one a phase:
    a template's loop of _ics_event cost most of the calendar.)"""
    events = (
        _ics_event(
            f"{uid}{phase['number']}{at}",
            phase["resolved_at"],
            phase["resolved_at"],
            f"{summary}{phase['label']}{then}",
        )
        for phase in phases
    )
    return "".join(events)


def _ics_alarm(trigger: str, description: str) -> str:
    """An event's alarm, shown at ``trigger`` (its TRIGGER's parameters and value)."""
    return (
        f"BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:{_ics_text(description)}\r\nTRIGGER{trigger}\r\nEND:VALARM\r\n"
    )


def _fold_ics(text: str) -> str:
    """iCalendar's lines folded at 75 octets (RFC 5545, 3.1): a line goes on
    after CRLF and a space, never inside a UTF-8 character."""
    split = text.split("\r\n")
    if text.isascii() and max(map(len, split)) <= 75:  # (nearly every calendar: nothing to fold)
        return text
    lines = []
    for line in split:
        if len(line) <= 75 and line.isascii():  # (most lines: an octet a character, and short)
            lines.append(line)
            continue
        data, chunks, limit = line.encode(), [], 75
        while len(data) > limit:
            cut = limit
            while data[cut] & 0xC0 == 0x80:  # a continuation byte: cut before its character
                cut -= 1
            chunks.append(data[:cut])
            data, limit = data[cut:], 74  # the space that starts the next line counts
        lines.append(b"\r\n ".join([*chunks, data]).decode())
    return "\r\n".join(lines)


def _ics_time(text: str) -> str:
    """``20261124T120000Z``: iCalendar's UTC form."""
    return iso_text(text).replace("-", "").replace(":", "")


def _asked(row: GameRow) -> str:
    """An open game's options where they differ from its kind's defaults, and
    its press if chosen, as a JOIN names them ("reroll=coin press=grey"): as
    LIST shows them (Reports' _options_shown)."""
    defaults = get_game(row["kind"]).options
    named = [
        f"{name}={str(value).lower() if isinstance(value, bool) else value}"
        for name, value in row["options"].items()
        if defaults.get(name) != value
    ]
    return " ".join(named + ([f"press={row['press']}"] if row["press"] else []))
