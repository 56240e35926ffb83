"""The scores chart (referee.site.chart.html) and the calendars' head,
events and alarms (render.py's ics_head, ics_event, ics_alarm) are written
by Python since 769da44 and da597bc, where templates wrote them: the same
bytes as those templates (tests/fixtures/templates39), for any names,
scores, rounds, labels, pauses and reminders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.site.chart import score_chart
from referee.site.render import Site, _fold_ics

OLD = Path(__file__).parents[1] / "fixtures" / "templates39"
SITE = Site(None, Path("unused"))  # type: ignore[arg-type]  # (its environment alone: no records read)
BEFORE = SITE.env.overlay(loader=jinja2.FileSystemLoader(str(OLD)))  # (the same settings, filters and globals)

# What a name or a label may hold that HTML or iCalendar escapes, or that is wide, or not there.
name = st.text(st.sampled_from(list("ab<&\"'> éZ漢\u200b-_.xyQ")), max_size=30)
label = st.text(st.sampled_from(list("ab,;\\\n\r é漢<&\"':0 R")), max_size=60)
moment = st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))


@settings(max_examples=300, deadline=None)
@given(names=st.lists(name, min_size=1, max_size=8), data=st.data())
def test_review39_a_chart_is_what_its_template_wrote(names, data):
    """0, 1 or many rounds (or auctions, or unnumbered phases), scores below zero, one still being played."""
    count = data.draw(st.integers(0, 60))
    unit = data.draw(st.sampled_from(["Round", "Auction", None]))
    scores = st.lists(st.integers(-500, 100_000), min_size=len(names), max_size=len(names))
    phases = [
        {"label": f"{unit} {number}" if unit else None, "events": [{"scores": data.draw(scores)}]}
        for number in range(1, count + 1)
    ]
    open_label = data.draw(st.sampled_from([None, f"Round {count + 1}", f"Auction {count}", "Round 1 bidding"]))
    chart = score_chart(names, phases, open_label)
    written = SITE.env.get_template("site/_chart.svg.j2").render(chart=chart)
    assert written == BEFORE.get_template("site/_chart.svg.j2").render(chart=chart)


# A keeper's own templates folder holding copies of the calendars as they were before (they call
# ics.head, ics.event and ics.alarm), beside the shipped _calendar.ics.j2.
KEEPERS = SITE.env.overlay(
    loader=jinja2.ChoiceLoader(
        [
            jinja2.DictLoader(
                {name: (OLD / name).read_text() for name in ("site/deadlines.ics.j2", "site/own-deadlines.ics.j2")}
            ),
            SITE.env.loader,  # type: ignore[list-item]
        ]
    )
)


def _both(name: str, context: dict[str, Any]) -> tuple[str, str]:
    written, before, keepers = (
        _fold_ics(env.get_template(name).render(**context)) for env in (SITE.env, BEFORE, KEEPERS)
    )
    assert keepers == before  # (a keeper's old copy still renders, and writes what it wrote)
    return written, before


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_review39_a_calendar_is_what_its_macros_wrote(data):
    """The public deadlines.ics and a seat's own: phases resolved, the open
    one with its deadline and alarm, or paused (until a time or not), or none."""
    rows = st.lists(st.fixed_dictionaries({"number": st.integers(1, 500), "label": label, "resolved_at": moment}))
    pause = st.none() | st.fixed_dictionaries({"at": moment, "until": st.none() | moment})
    phase = st.none() | st.fixed_dictionaries({"label": label, "deadline": moment, "paused": pause})
    context = {
        "game": {"id": data.draw(st.integers(1, 10**6)), "title": data.draw(label)},
        "rounds": data.draw(rows),
        "phase": data.draw(phase),
        "open_number": data.draw(st.integers(1, 99)),
        "stamp": data.draw(moment),
        "uid": data.draw(st.sampled_from(["7.games.example.org", "7.ex,ample;org"])),
    }
    public, before = _both("site/deadlines.ics.j2", context)
    assert public == before
    seat = {
        "seat": data.draw(st.integers(0, 5)),
        "closed": data.draw(rows),
        "moves_now": context["phase"] is not None and data.draw(st.booleans()),
        "remind": data.draw(st.none() | moment),
    }
    own, before = _both("site/own-deadlines.ics.j2", context | seat)
    assert own == before
