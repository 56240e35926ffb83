"""The scores chart of a game's page, read as a person would read it: every
point and every word on the canvas, none running into another, negative
scores inside the axes, the x axis in the game's own unit (rounds or
auctions, never turns), eight players told apart, every name in full in the
key and in the table that stands for the chart, and nothing of a round or
auction that has not ended.

The SVG is parsed with xml.etree; a text's width is estimated at 0.6 em a
character (what a sans-serif face needs for most lowercase text)."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import FakeClock
from test_site import Page, contrast, page

from referee.config import Config
from referee.engine import Engine
from referee.record import join_record, part_names
from referee.rules import get_game
from referee.site.public import score_chart
from referee.site.render import Site
from referee.store import Store

SVG = "{http://www.w3.org/2000/svg}"
EM = 0.6  # a character's estimated width, in em
LONG = "carol.with.a.long.name.that.goes.on.and.on"
NASTY = 'o\'hara & <co> "quoted"'


# -- drawing a chart ------------------------------------------------------------------------


def draw(names: list[str], phases: list[dict], open_label: str | None = None) -> str:
    """The chart's HTML, as a game page includes it."""
    site = Site(None, Path("/nonexistent"))  # only its templates and their escaping
    return site.env.get_template("site/_chart.svg.j2").render(chart=score_chart(names, phases, open_label))


def rounds(scores: list[list[int]], word: str = "Round") -> list[dict]:
    """Resolved phases, one a round (or auction), each with the scores after it."""
    return [{"label": f"{word} {n}", "events": [{"type": "x", "scores": row}]} for n, row in enumerate(scores, 1)]


def svg_of(html: str) -> ET.Element:
    return ET.fromstring(html[html.index("<svg") : html.index("</svg>") + len("</svg>")])


def view_box(svg: ET.Element) -> tuple[float, float, float, float]:
    x, y, width, height = (float(v) for v in svg.get("viewBox").split())
    return x, y, x + width, y + height


def font_size(svg: ET.Element, element: ET.Element) -> float:
    """The font size an element inherits (from itself or its nearest ancestor that sets one)."""
    parents = {child: parent for parent in svg.iter() for child in parent}
    while element is not None and element.get("font-size") is None:
        element = parents.get(element)
    return float((element if element is not None else svg).get("font-size") or 16)


def text_boxes(svg: ET.Element, texts: list[ET.Element] | None = None) -> list[tuple[str, float, float, float, float]]:
    """Each line of text on the canvas (or of ``texts``): (text, left, top, right, bottom)."""
    boxes = []
    for text in svg.iter(f"{SVG}text") if texts is None else texts:
        size = font_size(svg, text)
        spans = list(text.iter(f"{SVG}tspan")) or [text]
        for span in spans:
            words = "".join(span.itertext()) if span is not text else (text.text or "")
            x, y = float(span.get("x") or text.get("x")), float(span.get("y") or text.get("y"))
            width = EM * size * len(words)
            anchor = text.get("text-anchor", "start")
            left = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
            boxes.append((words, left, y - 0.8 * size, left + width, y + 0.25 * size))
    return boxes


def numbers(path: str) -> list[float]:
    return [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", path)]


def marker_points(d: str) -> list[tuple[float, float]]:
    """The absolute points of a marker path (its arcs are relative: their
    extent is at most the first point plus the diameter)."""
    points = []
    for command, args in re.findall(r"([MLa])([^MLaZ]*)", d):
        values = numbers(args)
        if command in "ML":
            points.append((values[0], values[1]))
        else:
            x, y = points[-1]
            points.append((x + values[-2], y))  # the far side of the circle
    return points


def plot_box(svg: ET.Element) -> tuple[float, float, float, float]:
    """The axes' box: left, top, right, bottom."""
    lines = [line for line in svg.iter(f"{SVG}line") if line.get("class") == "axis"]
    xs = [float(line.get(k)) for line in lines for k in ("x1", "x2")]
    ys = [float(line.get(k)) for line in lines for k in ("y1", "y2")]
    return min(xs), min(ys), max(xs), max(ys)


def series(svg: ET.Element) -> list[ET.Element]:
    return [g for g in svg.iter(f"{SVG}g") if g.get("class") == "series"]


def line_points(group: ET.Element) -> list[tuple[float, float]]:
    (polyline,) = group.iter(f"{SVG}polyline")
    return [tuple(float(v) for v in pair.split(",")) for pair in polyline.get("points").split()]


def texts_of(svg: ET.Element, cls: str) -> list[ET.Element]:
    return [t for t in svg.iter(f"{SVG}text") if t.get("class") == cls]


def key_entries(svg: ET.Element) -> list[ET.Element]:
    return [g for g in svg.iter(f"{SVG}g") if g.get("class") == "entry"]


def key_text(entry: ET.Element) -> str:
    (text,) = entry.iter(f"{SVG}text")
    return "".join(text.itertext())


def alternative(html: str) -> Page:
    """The table that stands for the chart, under its <details>."""
    start = html.index("<details>")
    return Page(html[start : html.index("</details>", start) + len("</details>")])


def check_canvas(svg: ET.Element) -> None:
    """Every point, marker and word inside the viewBox; no two texts overlap."""
    left, top, right, bottom = view_box(svg)
    for group in series(svg):
        for x, y in line_points(group):
            assert left <= x <= right and top <= y <= bottom, (x, y)
    for path in svg.iter(f"{SVG}path"):
        for x, y in marker_points(path.get("d")):
            assert left <= x - 1 and x + 1 <= right and top <= y - 1 and y + 1 <= bottom, (path.get("d"), x, y)
    boxes = text_boxes(svg)
    for words, x0, y0, x1, y1 in boxes:
        assert left <= x0 and x1 <= right and top <= y0 and y1 <= bottom, (words, x0, y0, x1, y1, view_box(svg))
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = a[3] <= b[1] or b[3] <= a[1] or a[4] <= b[2] or b[4] <= a[2]
            assert apart, f"{a[0]!r} runs into {b[0]!r}"


# -- the canvas ----------------------------------------------------------------------------------

SHAPES = {
    "13 rounds, 3 players": (["alice", "bob", "carol"], rounds([[r, 2 * r, 41 - r] for r in range(13)])),
    "Bid!, negative scores, long names": (
        ["alice", LONG, "bob", NASTY],
        rounds([[5 * r - 40, -3 * r, 7 * r, (-1) ** r * 9] for r in range(30)], "Auction"),
    ),
    "8 players, 14 rounds": ([f"player {n}" for n in range(8)], rounds([[r * n for n in range(8)] for r in range(14)])),
    "200 auctions": (["alice", "bob", "carol"], rounds([[r, 100 - r, r // 2] for r in range(200)], "Auction")),
    "1 round": (["alice", "bob"], rounds([[1, 0]])),
    "all on 0": (["alice", "bob"], rounds([[0, 0]] * 5)),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_every_point_and_every_word_is_on_the_canvas_and_none_overlaps(shape):
    names, phases = SHAPES[shape]
    check_canvas(svg_of(draw(names, phases)))


def test_negative_scores_are_inside_the_axes_and_the_y_axis_spans_them_and_0():
    scores = [[-5, 3, 0], [-27, 8, 1], [-12, 15, -1], [-30, 22, -4]]  # Bid! takes points away
    svg = svg_of(draw(["alice", "bob", "carol"], rounds(scores, "Auction")))
    left, top, right, bottom = plot_box(svg)
    for group in series(svg):
        for x, y in line_points(group):
            assert left <= x <= right and top <= y <= bottom, (x, y, plot_box(svg))
    ticks = {int(t.text): float(t.get("y")) - 5 for t in texts_of(svg, "ytick")}  # value -> its height
    assert 0 in ticks and min(ticks) <= -30 and max(ticks) >= 22
    # alice's lowest point is drawn where the y axis puts -30
    lowest = max(line_points(series(svg)[0]), key=lambda point: point[1])
    per_point = (ticks[min(ticks)] - ticks[max(ticks)]) / (max(ticks) - min(ticks))
    assert lowest[1] == pytest.approx(ticks[0] + 30 * per_point, abs=0.2)
    assert [z for z in svg.iter(f"{SVG}line") if z.get("class") == "zero"]  # a line marks 0


@pytest.mark.parametrize("count", [1, 2, 3, 7, 9, 10, 11, 13, 14, 17, 31, 47, 99, 100, 101, 200, 999])
def test_the_x_axis_shows_at_most_ten_numbers_always_the_first_and_last_and_none_overlap(count):
    svg = svg_of(draw(["alice", "bob"], rounds([[r, 1] for r in range(count)], "Auction")))
    ticks = texts_of(svg, "xtick")
    assert len(ticks) <= 10
    assert ticks[0].text == "0" and ticks[-1].text == str(count)
    assert [int(t.text) for t in ticks] == sorted(int(t.text) for t in ticks)
    boxes = text_boxes(svg, ticks)
    for a, b in itertools.pairwise(boxes):
        assert a[3] + 2 <= b[1], f"{a[0]} runs into {b[0]}"
    check_canvas(svg)


def test_a_game_of_200_turns_counts_its_auctions_along_the_x_axis():
    """Ice Ice Baby: 25 auctions of 8 turns each are 25 points, each the
    score after the auction's last turn, and at most ten numbers."""
    phases = [
        {
            "label": f"Auction {a}, turn {t}" if t <= 6 else f"Auction {a} scoring, offer {t - 6}",
            "events": [{"type": "bid", "scores": [a * 10 + t, a]}],
        }
        for a in range(1, 26)
        for t in range(1, 9)
    ]
    assert len(phases) == 200
    html = draw(["alice", "bob"], phases)
    svg = svg_of(html)
    assert [len(line_points(g)) for g in series(svg)] == [26, 26]  # the start and 25 auctions
    assert len(texts_of(svg, "xtick")) <= 10 and texts_of(svg, "xtick")[-1].text == "25"
    assert [t.text for t in texts_of(svg, "axis-title")] == ["Points", "Auction"]
    rows = alternative(html).table("Auction")["rows"][1:]
    assert [[c["text"] for c in row["cells"]] for row in rows] == [
        [str(a), str(a * 10 + 8), str(a)] for a in range(1, 26)
    ]
    check_canvas(svg)


def test_eight_players_get_eight_distinct_styles_that_the_key_repeats():
    names = [f"player {n}" for n in range(8)]
    svg = svg_of(draw(names, rounds([[n * r for n in range(8)] for r in range(5)])))
    styles = []
    for group, entry in zip(series(svg), key_entries(svg), strict=True):
        (polyline,) = group.iter(f"{SVG}polyline")
        (marker,) = group.iter(f"{SVG}path")
        style = (group.get("stroke"), polyline.get("stroke-dasharray"), marker.get("class").split()[-1])
        styles.append(style)
        (sample,) = entry.iter(f"{SVG}line")
        (sample_marker,) = entry.iter(f"{SVG}path")
        assert (sample.get("stroke"), sample.get("stroke-dasharray"), sample_marker.get("class")) == style
        assert contrast(style[0]) >= 4.5  # a line and a filled marker both show on white
    assert len(set(styles)) == 8
    assert len({s[0] for s in styles}) == 8 and len({s[2] for s in styles}) == 8  # colours, shapes
    assert len({s[1] for s in styles}) >= 4  # and dash patterns


def test_the_key_and_the_table_name_everyone_in_full_escaped():
    wide = "日本語の名前です" * 3
    names = ["alice", LONG + LONG, NASTY, wide, "W" * 60]
    scores = [[1, -2, 3, 40, -5], [10, -20, 30, 4, 5]]
    html = draw(names, rounds(scores))
    assert "<co>" not in html and "&lt;co&gt;" in html  # text, never markup
    svg = svg_of(html)
    assert [key_text(entry) for entry in key_entries(svg)] == [f"{n}: {s}" for n, s in zip(names, scores[-1])]
    desc = svg.find(f"{SVG}desc").text
    for name, score in zip(names, scores[-1]):
        assert f"{name}: {score} point" in desc
    table = alternative(html).table("Round")
    assert [c["text"] for c in table["rows"][0]["cells"]] == ["Round", *names]
    assert [[c["text"] for c in row["cells"]] for row in table["rows"][1:]] == [
        ["1", *map(str, scores[0])],
        ["2", *map(str, scores[1])],
    ]
    assert table["caption"].strip()
    check_canvas(svg)


def test_the_chart_scales_to_its_container_and_its_text_reads_on_a_phone():
    svg = svg_of(draw(["alice", "bob"], rounds([[1, 2]] * 13)))
    assert svg.get("width") == "100%" and svg.get("height") is None and svg.get("viewBox")
    width = view_box(svg)[2] - view_box(svg)[0]
    phone = 360 - 2 * 16  # the page's padding, 1rem a side
    assert float(svg.get("font-size")) * phone / width >= 12  # px, on a 360 px screen


def test_a_round_or_auction_not_over_has_no_point_yet():
    phases = [{"label": f"Auction {a}, turn {t}", "events": [{"scores": [a, t]}]} for a in (1, 2, 3) for t in (1, 2)]
    html = draw(["alice", "bob"], phases, open_label="Auction 3, turn 3")
    svg = svg_of(html)
    assert [len(line_points(g)) for g in series(svg)] == [3, 3]  # the start, auctions 1 and 2
    assert [key_text(entry) for entry in key_entries(svg)] == ["alice: 2", "bob: 2"]
    assert "Auction 3 is still being played" in re.sub(r"\s+", " ", html)
    assert "No auction has ended yet." in draw(["alice", "bob"], phases[:2], open_label="Auction 1, turn 3")


# -- on the pages of played games -------------------------------------------------------------

KINDS = {"pure-skill": 3, "bid": 4, "ice": 4, "priority": 5, "bluff": 5}
UNIT = {"pure-skill": "Round", "bid": "Auction", "ice": "Auction", "priority": "Round", "bluff": "Round"}
ADDRESSES = ["alice", f"{LONG}", "bob", "dave.o'hara&co", "erin"]


def middle_of_an_auction(engine: Engine, clock: FakeClock) -> int:
    """An Ice Ice Baby game with an auction ended and the next one under
    way (a turn of it resolved, another open): alice's turns are resolved
    at their deadlines, the bots' at once.  A game that ends before (it
    can, by the luck of the draws) is left finished and another one begun."""
    players = [f"{name}@example.org" for name in ADDRESSES[:3]]
    for _ in range(10):
        game = engine.new_game("ice", players)
        for player in players[1:]:
            engine.resign(game, player)
        while (table := engine.table(game)).open_phase is not None:
            if len(table.phases) > 1:
                now, last = (re.match(r"Auction (\d+)", p["label"])[1] for p in (table.open_phase, table.phases[-2]))
                if int(now) >= 2 and now == last:
                    return game
            clock.advance(days=7)
            engine.tick()
    raise AssertionError("no Ice Ice Baby game of ten reached its second auction")


@pytest.fixture(scope="module")
def games(tmp_path_factory) -> tuple[Engine, Path, dict[str, int]]:
    """A finished game of each kind (every seat left at once: random bots
    play it to the end), and an Ice Ice Baby game in the middle of an
    auction."""
    root = tmp_path_factory.mktemp("charts")
    clock = FakeClock()
    config = Config(address="referee@example.org", database=root / "games.db", reminder=None, outage_gap=None)
    engine = Engine(Store(config.database), config, clock)
    ids = {}
    for kind, seats in KINDS.items():
        players = [f"{name}@example.org" for name in ADDRESSES[:seats]]
        ids[kind] = engine.new_game(kind, players)
        for player in players:
            engine.resign(ids[kind], player)
        assert engine.table(ids[kind]).row["state"] == "finished"
    ids["running"] = middle_of_an_auction(engine, clock)
    Site(engine, root / "site").render()
    yield engine, root / "site", ids
    shutil.rmtree(root, ignore_errors=True)


def whole_record(folder: Path) -> dict:
    """A game's published record, its parts joined (a long game's: record.split_record)."""
    head = json.loads((folder / "record.json").read_text(encoding="utf-8"))
    parts = [json.loads((folder / name).read_text(encoding="utf-8")) for name in part_names(head)]
    return join_record(head, parts) if parts else head


def groups(record: dict) -> list[tuple[str, list[int]]]:
    """Each round or auction of a record, in order, with the scores after its last phase."""
    found: list[tuple[str, list[int]]] = []
    for entry in record["phases"]:
        name = re.match(r"(Round|Auction) \d+", entry["label"])[0]
        scores = next((e["scores"] for e in reversed(entry["events"]) if "scores" in e), None)
        if found and found[-1][0] == name:
            found[-1] = (name, scores or found[-1][1])
        else:
            found.append((name, scores))
    return [(name, scores) for name, scores in found if scores is not None]


@pytest.mark.parametrize("kind", [*KINDS, "running"])
def test_a_games_page_charts_each_round_or_auction_in_its_own_unit(games, kind):
    engine, site, ids = games
    game = ids[kind]
    unit = UNIT.get(kind, "Auction")
    html = (site / f"games/{game}/index.html").read_text(encoding="utf-8")
    parsed = page(site, f"games/{game}/index.html")
    assert f"Scores by {unit.lower()}" in [text for tag, text in parsed.headings if tag == "h2"]
    svg = svg_of(html)
    assert svg.find(f"{SVG}title").text == f"Scores after each {unit.lower()}"
    assert [t.text for t in texts_of(svg, "axis-title")] == ["Points", unit]
    record = whole_record(site / f"games/{game}")
    expected = groups(record)
    table = engine.table(game)
    if kind == "running":  # the auction being played has no point yet
        still = re.match(r"Auction \d+", table.open_phase["label"])[0]
        assert expected[-1][0] == still
        expected = expected[:-1]
        assert f"{still} is still being played" in parsed.text
    else:
        final = list(get_game(table.row["kind"]).result(table.state).scores)
        assert expected[-1][1] == final
    assert expected
    names = [p["name"] for p in record["players"]]
    rows = alternative(html).table(unit)["rows"]
    assert [c["text"] for c in rows[0]["cells"]] == [unit, *names]
    assert [[c["text"] for c in row["cells"]] for row in rows[1:]] == [
        [name.split()[1], *map(str, scores)] for name, scores in expected
    ]
    assert [len(line_points(g)) for g in series(svg)] == [len(expected) + 1] * len(names)
    assert [key_text(entry) for entry in key_entries(svg)] == [f"{n}: {s}" for n, s in zip(names, expected[-1][1])]
    assert len(texts_of(svg, "xtick")) <= 10
    check_canvas(svg)
