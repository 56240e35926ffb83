"""The scores chart of a game's page, laid out here so its template only draws.

One point per round or auction, whatever the kind: a phase's label starts
with its unit and number as the mails say it ("Round 3 of 13", "Auction 8
(roll 2)", "Auction 4, turn 7", "Round 2 bidding, turn 5"), so the phases of
a turn-based game are grouped by that, and a group's point is the score after
its last phase.  The group still being played has no point yet.

The canvas is 400 units wide and scales to its container (a 360 px phone
shows its 15-unit text at about 12 px); it grows downwards for the key, which
wraps onto as many rows as the names need, so no name is ever cut.  Text
widths are estimated (0.6 em a character, more for capitals and wide
characters), never measured: the layout leaves room for the widest likely
glyphs rather than the average ones.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

WIDTH = 400
FONT = 15  # every text of the chart
PLOT_HEIGHT = 190
TOP = 30  # room above the plot for the y axis title
MAX_X_LABELS = 10  # across the x axis, however many points
MAX_Y_LABELS = 7  # up the y axis
MAX_MARKERS = 16  # per line: beyond that, markers only where the x labels are
ROW = 22  # a row of the key
SWATCH = 28  # a key entry's sample of the line, before its name
PAD = 8  # the canvas's inner margin at its edges

# The Okabe-Ito colours (safe for the common colour-vision deficiencies),
# darkened where needed to reach 4.5:1 against white; yellow becomes olive
# and sky blue an indigo, which are still told apart from the blue and the
# vermilion.  The dash pattern and the marker tell the lines apart without
# any colour: the marker's shape differs for each of the eight seats.
COLOURS = ("#000000", "#b34b00", "#0072b2", "#007a5a", "#a4437b", "#7a6a00", "#4a3b9c", "#6b6b6b")
DASHES = ("", "7 3", "2 3", "10 3 2 3")
MARKERS = ("circle", "square", "triangle", "diamond", "ring", "box", "nabla", "cross")
HOLLOW = {"ring", "box"}  # drawn white inside; "cross" is strokes only

UNIT = re.compile(r"(Round|Auction)\s+(\d+)\b")


@functools.cache  # (a few dozen characters, asked for again in every chart)
def char_width(char: str) -> float:
    """A character's width in em, on the generous side for a sans-serif face."""
    if unicodedata.east_asian_width(char) in "WF":
        return 1.0
    if char in "MWmw@%&":
        return 0.9
    if char.isupper():
        return 0.72
    return 0.6


def text_width(text: str, size: float = FONT) -> float:
    return sum(map(char_width, text)) * size


def score_chart(
    names: Sequence[str], phases: Sequence[Mapping[str, Any]], open_label: str | None = None
) -> dict[str, Any]:
    """The chart of ``names``' scores after each round or auction.

    ``phases`` are the resolved phases, in order, each with its ``label`` and
    ``events`` (a phase without a label is a point of its own); a phase's
    scores are the last ``scores`` its events carry, and a group without any
    has no point.  ``open_label`` is the label of the phase open now: its
    round or auction is not over, so it is left out."""
    unit, points = _points(len(names), phases, open_label)
    still = _key({"label": open_label})
    return layout(names, unit, points, pending=f"{still[0]} {still[1]}" if still else None)


def _key(phase: Mapping[str, Any]) -> tuple[str, int] | None:
    return _label_key(phase.get("label") or "")


@functools.lru_cache(maxsize=4096)  # (the same labels in every game of a kind)
def _label_key(label: str) -> tuple[str, int] | None:
    match = UNIT.match(label)
    return (match[1], int(match[2])) if match else None


def _points(
    seats: int, phases: Sequence[Mapping[str, Any]], open_label: str | None
) -> tuple[str, list[dict[str, Any]]]:
    """The unit of the x axis, and a point per group: its number and the
    scores after its last phase."""
    groups: list[dict[str, Any]] = []  # from the last: a group's scores are those of its last phase that has some
    key, wanted = None, False
    for index in range(len(phases) - 1, -1, -1):
        phase = phases[index]
        phase_key = _key(phase) or ("Phase", index + 1)
        if phase_key != key:
            key, wanted = phase_key, True
            groups.append({"key": key, "scores": None})
        if wanted:  # (its other phases' events are not looked through: a round of Bluff has a dozen)
            for event in reversed(phase.get("events") or ()):
                if "scores" in event:
                    groups[-1]["scores"] = event["scores"]  # (made numbers below)
                    wanted = False
                    break
    groups.reverse()
    for group in groups:
        if group["scores"] is not None:
            group["scores"] = _numbers(group["scores"])
    still = _key({"label": open_label})
    if groups and still is not None and groups[-1]["key"] == still:
        groups.pop()  # its round or auction goes on: its point comes at its end
    units = [g["key"][0] for g in groups] or [still[0] if still else "Round"]
    unit = max(dict.fromkeys(units), key=units.count)
    points = [
        {"number": g["key"][1], "scores": g["scores"]}
        for g in groups
        if g["scores"] is not None and len(g["scores"]) == seats
    ]
    return unit, points


def _numbers(scores: Sequence[Any]) -> list[int] | None:
    """Scores to chart, or None when one is not a number (nothing to draw)."""
    try:
        return [int(score) for score in scores]
    except (TypeError, ValueError):
        return None


def _x_ticks(numbers: list[int], dx: float) -> list[int]:
    """The indexes of the points whose numbers the x axis shows: at most
    MAX_X_LABELS, always the first and the last, each clear of the next."""
    last = len(numbers) - 1
    widest = max(text_width(str(n)) for n in numbers)
    step = 1
    while step < last and (last // step + 1 + (last % step > 0) > MAX_X_LABELS or step * dx < widest + 6):
        step = _next_step(step)
    ticks = [i for i in range(0, last + 1) if i % step == 0]
    if ticks[-1] != last:
        gap = (text_width(str(numbers[ticks[-1]])) + text_width(str(numbers[last]))) / 2 + 6
        if len(ticks) > 1 and (last - ticks[-1]) * dx < gap:
            ticks.pop()  # too close to the last: the last one wins
        ticks.append(last)
    return ticks


def _next_step(step: int) -> int:
    """The round step after ``step``: 1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500..."""
    magnitude = 1
    while True:
        for factor in (1, 2, 5) if magnitude < 10 else (1, 2, 2.5, 5):
            candidate = int(factor * magnitude)
            if candidate > step:
                return candidate
        magnitude *= 10


def _split(text: str, room: float, keep: int = 0) -> list[str]:
    """``text`` in lines no wider than ``room``, broken after a dot, a dash,
    an underscore, a plus or a space where one is near the end of a line,
    else anywhere; never inside its last ``keep`` characters (a score stays
    with the end of the name)."""
    lines: list[str] = []
    while text_width(text) > room and len(text) > keep + 1:
        fit, width = 0, 0.0
        while fit < len(text) - keep and width + char_width(text[fit]) * FONT <= room:
            width += char_width(text[fit]) * FONT
            fit += 1
        fit = max(fit, 1)
        if fit == len(text) - keep:  # the rest fits but for the score: leave it a piece of the name
            fit = max(1, fit - max(1, fit // 4))
        cut = max((i + 1 for i in range(fit // 2, fit) if text[i] in "._-+ "), default=fit)
        lines.append(text[:cut])
        text = text[cut:]
    lines.append(text)
    return lines


@functools.lru_cache(maxsize=8192)  # (the same points recur: games of a kind have as many rounds, and like scores)
def _marker_path(shape: str, x: float, y: float) -> str:
    """An SVG path of a marker centred on (x, y), about 9 units across."""

    def p(dx: float, dy: float) -> str:
        return f"{round(x + dx, 1)},{round(y + dy, 1)}"

    if shape in ("circle", "ring"):
        r = 4.5 if shape == "circle" else 4
        return f"M{p(-r, 0)}a{r},{r} 0 1,0 {2 * r},0a{r},{r} 0 1,0 {-2 * r},0Z"
    if shape in ("square", "box"):
        h = 4 if shape == "square" else 3.6
        return f"M{p(-h, -h)}L{p(h, -h)}L{p(h, h)}L{p(-h, h)}Z"
    if shape == "triangle":
        return f"M{p(0, -5.5)}L{p(5, 3.5)}L{p(-5, 3.5)}Z"
    if shape == "nabla":
        return f"M{p(0, 5.5)}L{p(5, -3.5)}L{p(-5, -3.5)}Z"
    if shape == "diamond":
        return f"M{p(0, -5.5)}L{p(5, 0)}L{p(0, 5.5)}L{p(-5, 0)}Z"
    return f"M{p(-4, -4)}L{p(4, 4)}M{p(-4, 4)}L{p(4, -4)}"  # cross


def style(seat: int) -> dict[str, Any]:
    """Seat ``seat``'s line: colour, dash pattern and marker, each its own."""
    marker = MARKERS[seat % len(MARKERS)]
    return {
        "colour": COLOURS[seat % len(COLOURS)],
        "dash": DASHES[seat % len(DASHES)],
        "marker": marker,
        "hollow": marker in HOLLOW,
        "strokes_only": marker == "cross",
    }


def layout(names: Sequence[str], unit: str, points: list[dict[str, Any]], pending: str | None = None) -> dict[str, Any]:
    """Everything the template draws, in the canvas's units."""
    seats = len(names)
    series = [[0] * seats] + [p["scores"] for p in points]  # everyone starts on 0
    numbers = [0] + [p["number"] for p in points]
    count = len(series) - 1
    # The y axis: round steps from below the lowest score (or 0) to above the highest.
    low = min(0, *(min(row) for row in series)) if seats else 0
    high = max(0, *(max(row) for row in series)) if seats else 0
    step = 1  # the finest round step that needs at most MAX_Y_LABELS numbers
    while math.ceil(high / step) - math.floor(low / step) + 1 > MAX_Y_LABELS:
        step = _next_step(step)
    bottom_value = math.floor(low / step) * step
    top_value = max(math.ceil(high / step) * step, bottom_value + step)
    yticks = list(range(bottom_value, top_value + 1, step))
    left = PAD + max(text_width(str(v)) for v in yticks) + 6
    right_edge = WIDTH - PAD - text_width(str(numbers[-1])) / 2
    plot = {"left": round(left, 1), "right": round(right_edge, 1), "top": TOP, "bottom": TOP + PLOT_HEIGHT}
    dx = (plot["right"] - plot["left"]) / count if count else 0.0

    def x(i: int) -> float:
        return round(plot["left"] + dx * i, 1)

    def y(value: float) -> float:
        return round(plot["bottom"] - PLOT_HEIGHT * (value - bottom_value) / (top_value - bottom_value), 1)

    ticks = _x_ticks(numbers, dx) if count else [0]
    marked = range(1, count + 1) if count <= MAX_MARKERS else sorted({i for i in ticks if i} | {count})
    lines = []
    for seat, name in enumerate(names):
        look = style(seat)
        points_xy = [(x(i), y(row[seat])) for i, row in enumerate(series)]
        markers = "".join(_marker_path(look["marker"], *points_xy[i]) for i in marked)
        lines.append({**look, "name": name, "points": points_xy, "markers": markers, "final": series[-1][seat]})
    # The key, under the x axis and its title: entries side by side while
    # they fit, one too long for a row broken over lines of its own.
    key_top = plot["bottom"] + 64  # the first row's baseline
    room = WIDTH - 2 * PAD
    row, cursor, entries = 0, 0.0, []
    for line in lines:
        label = f"{line['name']}: {line['final']}"
        width = SWATCH + 6 + text_width(label)
        if width <= room:
            if cursor and cursor + width > room:
                row, cursor = row + 1, 0.0
            texts = [label]
        else:
            if cursor:
                row, cursor = row + 1, 0.0
            texts = _split(label, room - SWATCH - 6, keep=len(label) - len(line["name"]))
        base = key_top + ROW * row
        entries.append(
            {
                **line,
                "texts": texts,
                "y": base,
                "x": round(PAD + cursor, 1),
                "text_x": round(PAD + cursor + SWATCH + 6, 1),
                "key_marker": _marker_path(line["marker"], PAD + cursor + SWATCH / 2, base - 5),
            }
        )
        if len(texts) > 1:
            row, cursor = row + len(texts), 0.0
        else:
            cursor += width + 16
    rows = row + (1 if cursor else 0)
    height = key_top + ROW * (rows - 1) + 4 + PAD
    return {
        "width": WIDTH,
        "height": round(height),
        "font": FONT,
        "unit": unit,
        "pending": pending,
        "count": count,
        "numbers": numbers,
        "row": ROW,
        "plot": plot,
        "lines": entries,
        "rows": [{"number": p["number"], "scores": p["scores"]} for p in points],
        "xticks": [(numbers[i], x(i)) for i in ticks],
        "yticks": [(v, y(v)) for v in yticks],
        "zero": y(0),
        "x_title": round((plot["left"] + plot["right"]) / 2, 1),
    }


def html(chart: Mapping[str, Any]) -> Markup:
    """The chart (``layout``'s) as the game's page shows it: the SVG, its
    caption, and the table of scores that stands for it, as HTML.  Written
    here, not by a template: a template's loop of many small attributes cost
    twice the rest of the chart.  Every text from the game (names, the unit)
    is escaped; the rest is numbers and this module's constants."""
    per = escape(chart["unit"].lower())
    if not chart["count"]:
        return Markup(f"<p>No {per} has ended yet.</p>\n")
    unit, plot, lines = escape(chart["unit"]), chart["plot"], chart["lines"]
    names = [escape(line["name"]) for line in lines]
    last = chart["numbers"][-1]
    desc = "; ".join(
        f"{name}: {line['final']} point{'' if line['final'] == 1 else 's'} at the end of {per} {last}"
        for name, line in zip(names, lines, strict=True)
    )
    out = [
        "<figure>\n",
        f'<svg role="img" aria-labelledby="chart-title chart-desc" viewBox="0 0 {chart["width"]} {chart["height"]}"'
        ' width="100%" style="max-width: 30rem; height: auto"'
        " font-family=\"system-ui, -apple-system, 'Segoe UI', sans-serif\""
        f' font-size="{chart["font"]}" xmlns="http://www.w3.org/2000/svg">\n',
        f'<title id="chart-title">Scores after each {per}</title>\n',
        f'<desc id="chart-desc">{desc}{"." if lines else ""}</desc>\n',
        '<g stroke="#767676" stroke-width="1">\n',
    ]
    left, right, top, bottom = plot["left"], plot["right"], plot["top"], plot["bottom"]
    below_zero = chart["yticks"][0][0] < 0
    for value, y in chart["yticks"]:
        if value == 0 and below_zero:
            out.append(f'<line class="zero" x1="{left}" y1="{y}" x2="{right}" y2="{y}"/>\n')
        elif y != bottom:
            out.append(
                f'<line class="grid" x1="{left}" y1="{y}" x2="{right}" y2="{y}"'
                ' stroke-width="0.5" stroke-dasharray="2 4"/>\n'
            )
    out += [
        f'<line class="axis" x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}"/>\n',
        f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{bottom}"/>\n',
        "</g>\n",
        '<g fill="#1a1a1a">\n',
        f'<text class="axis-title" x="8" y="{top - 12}">Points</text>\n',
    ]
    out += [
        f'<text class="ytick" x="{left - 6}" y="{y + 5}" text-anchor="end">{v}</text>\n' for v, y in chart["yticks"]
    ]
    out += [
        f'<text class="xtick" x="{x}" y="{bottom + 20}" text-anchor="middle">{number}</text>\n'
        for number, x in chart["xticks"]
    ]
    out += [
        f'<text class="axis-title" x="{chart["x_title"]}" y="{bottom + 40}" text-anchor="middle">{unit}</text>\n',
        "</g>\n",
    ]
    for line in lines:
        out.append(_series(line))
    out.append('<g class="key">\n')
    for line in lines:
        out.append(_key_entry(line, chart["row"]))
    out += [
        "</g>\n",
        "</svg>\n",
        f'<figcaption class="note">Each player\'s score at the end of each {per}: {per}s across, points up.'
        " Each line has its own colour, dash pattern and marker, as the key under the chart shows."
        + (
            f" {escape(chart['pending'])} is still being played: its point comes when it ends."
            if chart["pending"]
            else ""
        )
        + "</figcaption>\n",
        "</figure>\n",
        "<details>\n",
        "<summary>The scores as a table</summary>\n",
        '<div class="scroll">\n',
        '<table class="stack">\n',
        f'<caption class="note">Each player\'s score at the end of each {per}</caption>\n',
        f'<thead><tr><th scope="col">{unit}</th>'
        + "".join(f'<th scope="col" class="num">{name}</th>' for name in names)
        + "</tr></thead>\n",
        "<tbody>\n",
    ]
    for row in chart["rows"]:
        cells = "".join(
            f'<td class="num" data-label="{name}">{score}</td>'
            for name, score in zip(names, row["scores"], strict=True)
        )
        out.append(f'<tr><th scope="row" class="num" data-label="{unit}">{row["number"]}</th>{cells}</tr>\n')
    out.append("</tbody>\n</table>\n</div>\n</details>\n")
    return Markup("".join(out))


def _stroke(line: Mapping[str, Any]) -> str:
    """A line's (or a marker's) width and fill, by its marker's kind."""
    fill = "#fff" if line["hollow"] else ("none" if line["strokes_only"] else line["colour"])
    return f'stroke-width="{2 if line["strokes_only"] else 1.5}" fill="{fill}"'


def _series(line: Mapping[str, Any]) -> str:
    """A seat's line on the plot, and its markers."""
    dash = f' stroke-dasharray="{line["dash"]}"' if line["dash"] else ""
    points = " ".join(f"{x},{y}" for x, y in line["points"])
    markers = (
        f'<path class="markers {line["marker"]}" d="{line["markers"]}" {_stroke(line)}/>\n' if line["markers"] else ""
    )
    return (
        f'<g class="series" stroke="{line["colour"]}" fill="none">\n'
        f'<polyline stroke-width="2.5" stroke-linejoin="round"{dash} points="{points}"/>\n{markers}</g>\n'
    )


def _key_entry(line: Mapping[str, Any], row: int) -> str:
    """A seat's entry in the key: a piece of its line, its marker, its name and final score."""
    dash = f' stroke-dasharray="{line["dash"]}"' if line["dash"] else ""
    x, y, text_x = line["x"], line["y"], line["text_x"]
    spans = "".join(
        f'<tspan x="{text_x}" y="{y + row * index}">{escape(text)}</tspan>' for index, text in enumerate(line["texts"])
    )
    return (
        '<g class="entry">\n'
        f'<line x1="{x}" y1="{y - 5}" x2="{x + 28}" y2="{y - 5}" stroke="{line["colour"]}" stroke-width="2.5"{dash}/>\n'
        f'<path class="{line["marker"]}" d="{line["key_marker"]}" stroke="{line["colour"]}" {_stroke(line)}/>\n'
        f'<text fill="#1a1a1a" x="{text_x}" y="{y}">{spans}</text>\n'
        "</g>\n"
    )
