"""The rows of Bid!'s table of auctions and Priority's tallies, as their
pages show them (site/bid/rounds.html.j2, site/priority/rounds.html.j2).

Written here, not by the templates' loops: a row a phase, a cell a seat,
each cell a dozen of the template's lookups and tests, were half the CPU of
a full render of Bid! games (issue 36).  What a row says in words (its
result) is still the game's macro (events/<kind>.txt.j2), passed in, so the
mail and a keeper's own words stay as they are.  Every text is escaped as
the templates escaped it; a keeper's own copy of the old loop still renders.
And a Game of Pure Skill's feed titles (pure_skill_headline), as its
headline macro words them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from referee.rules.bid import tile_name
from referee.rules.pure_skill import card_name

_BID_HOW = {  # a move not made by mail, marked after the seat's bid
    "random": '<abbr title="random: none by the deadline">*</abbr>',
    "bot": '<abbr title="a bot\'s random move">~</abbr>',
}


def _tiles(values: Sequence[int], between: str) -> str:
    return str(escape(between.join(tile_name(value) for value in values)))


def bid_rounds_html(
    rounds: Sequence[Mapping[str, Any]],
    players: Sequence[Mapping[str, Any]],
    names: Sequence[str],
    options: Mapping[str, Any],
    result: Callable[..., str],
) -> Markup:
    """Bid!'s table of auctions, a row a phase: its label, the dice, each
    seat's bid (or, for a cancelled auction, how it was), the result (by
    ``result``, events/bid.txt.j2's macro) and the totals."""
    seats = [(p["seat"], str(p["seat"]), f'" data-label="{escape(p["name"])}">') for p in players]
    rows = []
    for round_ in rounds:
        event, how = round_["events"][0], round_["how"]
        cells = []
        cancelled, winner, coins = event["type"] == "cancelled", event.get("winner"), event.get("coins_bid")
        for seat, key, label in seats:
            cell = ['<td class="num', " win" if winner == seat else "", label]
            if cancelled:
                cell.append(str(escape(event["how"][key])) if key in event["how"] else "")
            else:
                cell.append(_tiles(event["bids"][seat], " + "))
                if coins and key in coins:
                    cell.append(f" ({escape(coins[key])}¢)")
            cell.append(_BID_HOW.get(how.get(seat), ""))
            cell.append("</td>")
            cells.append("".join(cell))
        said = result(event, names, options, compact=True, html=True)
        totals = escape(" · ".join(map(str, event.get("scores", []))))
        rows.append(
            f'<tr id="phase-{escape(round_["number"])}"><th scope="row" class="line">{escape(round_["label"])}</th>'
            f'<td class="line" data-label="Dice">{_tiles(event["dice"], ", ")}</td>\n'
            f'{"".join(cells)}<td class="line who" data-label="Result">{said}</td>'
            f'<td class="line nowrap" data-label="Totals">{totals}</td></tr>\n'
        )
    return Markup("".join(rows))


def priority_tallies_html(
    rounds: Sequence[Mapping[str, Any]], players: Sequence[Mapping[str, Any]], colours: Sequence[str]
) -> Markup:
    """Priority's tallies, each after its round: who won the item (or the
    colours tied for the lowest total), and a table of every card shown,
    a row a colour (``colours``, the view's)."""
    out = []
    for round_ in rounds:
        for e in round_["events"]:
            if e["type"] != "tally":
                continue
            if e["winner"] is not None:
                won = f'<span class="win">{escape(players[e["winner"]]["name"])} ({escape(e["colour"])}) wins it</span>'
            else:
                won = f"{escape(' and '.join(map(str, e['lowest'])))} tie for the lowest total: discarded"
            out.append(
                f'<p id="tally-{escape(e["round"])}"><strong>Round {escape(e["round"])}</strong>, item '
                f'{escape(e["item"])}: {won} (<a href="#phase-{escape(round_["number"])}">its last turn</a>).</p>\n'
                '<div class="scroll">\n<table>\n<caption class="note">Every card, shown at the tally</caption>\n'
                '<thead><tr><th scope="col">Colour</th><th scope="col">Cards</th>'
                '<th scope="col" class="num">Total</th></tr></thead>\n<tbody>\n'
            )
            boards, lowest = e["boards"], e["lowest"]
            for colour in colours:
                cards = ", ".join(
                    f"{escape(p['name'])}: {escape(boards[p['seat']][colour])}"
                    for p in players
                    if colour in boards[p["seat"]]
                )
                out.append(
                    f'<tr><th scope="row">{escape(colour)}</th><td class="who">{cards or "none"}</td>'
                    f'<td class="num{" win" if colour in lowest else ""}">{escape(e["totals"][colour])}</td></tr>\n'
                )
            out.append("</tbody>\n</table>\n</div>\n")
    return Markup("".join(out))


def pure_skill_headline(round_: Mapping[str, Any], names: Sequence[str]) -> str:
    """A Game of Pure Skill's round in one line of plain text, as
    events/pure-skill.txt.j2's headline macro (its result, not compact)
    words it: "ann takes the 7", "tie, the 7 carries over", "tie, the 7 is
    discarded".  The site's feed titles (render._HEADLINE_FILTERS): the
    summary template's macro call a round was a tenth of a refresh of a
    game whose round resolved (issue 36); test_site42_pure_skill_titles
    holds the two the same."""
    event = round_["events"][0]
    if event["winner"] is not None:
        return f"{names[event['winner']]} takes the {card_name(event['prize'])}"
    if event["outcome"] == "carried":
        return f"tie, the {card_name(event['prize'])} carries over"
    return f"tie, the {card_name(event['prize'])} is discarded"
