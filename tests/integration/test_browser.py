"""The game pages in a real browser: Debian's headless Chromium, driven by
Selenium through Debian's ChromeDriver (never a downloaded browser or
driver), at a phone's width (360 px) and a laptop's (1,280 px).

Without Chromium, ChromeDriver or Selenium the tests are skipped, or fail
when CI is set, as the Dovecot tests do (tests/integration/conftest.py).
Screenshots of every page are kept in test-output/ for a person to look at.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import itertools
import json
import os
import random
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import required
from conftest import PLAYERS, FakeClock, Seeds, reply

from referee.engine import Engine
from referee.engine.keeping import SHELL
from referee.rules.pure_skill import card_name
from referee.site.render import Site
from referee.timeutil import from_iso, show, show_duration

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
PACKAGES = "the Debian packages chromium and chromium-driver, and the test extra's selenium"
WIDTH, HEIGHT = 360, 800  # a phone's screen, in CSS pixels
WIDE = 1280  # a laptop's
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"  # kept after the run, for a look
ALICE, BOB, CAROL = PLAYERS


def unavailable(reason: str) -> None:
    """Skip, or fail in CI, because the browser cannot run."""
    required.unavailable(reason, PACKAGES)


# -- the site, served on loopback --------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # the base class's name
        pass


@pytest.fixture
def serve() -> Iterator[Any]:
    """``serve(folder)`` -> the address of a web server on 127.0.0.1 (a free
    port) serving the folder, as any static web server would."""
    servers = []

    def start(folder: Path) -> str:
        handler = functools.partial(_QuietHandler, directory=str(folder))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


# -- the browser ---------------------------------------------------------------


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Chromium with a fresh profile, one for the module's tests
    (a start costs seconds); ``viewport`` sets its screen before a page."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            unavailable(f"{path} is not installed")
    try:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        unavailable(f"Selenium is not installed: {exc}")
    folder = tmp_path_factory.mktemp("chromium")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        f"--window-size={WIDE},{HEIGHT}",
        f"--user-data-dir={folder / 'profile'}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=str(CHROMEDRIVER), log_output=str(folder / "chromedriver.log"))
    # Both paths are given, so Selenium Manager never runs; were it to, offline.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SE_OFFLINE", "true")
        try:
            driver = webdriver.Chrome(service=service, options=options)
        except WebDriverException as exc:
            unavailable(f"Chromium cannot start: {exc.msg}")
    try:
        driver.set_page_load_timeout(30)
        yield driver
    finally:
        driver.quit()


def viewport(driver: Any, width: int) -> None:
    """Lay pages out on a screen ``width`` CSS pixels wide: below 500 as a
    phone (its <meta name="viewport"> obeyed), else as a laptop."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": width < 500},
    )


def screenshot(driver: Any, name: str) -> Path:
    """The whole page, top to bottom, as OUTPUT/name.png (kept after the run)."""
    png = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
    OUTPUT.mkdir(exist_ok=True)
    kept = OUTPUT / f"{name}.png"
    kept.write_bytes(base64.b64decode(png["data"]))
    return kept


# -- a game ------------------------------------------------------------------------


def play(engine: Engine, clock: FakeClock, bids: dict[str, str]) -> None:
    """Each of ``bids``' players replies with their bid, an hour apart."""
    for player, card in bids.items():
        clock.advance(hours=1)
        outcome = engine.ingest(reply(engine, player, f"bid {card}", received=clock()))
        assert outcome.code == "move", outcome


def expected_row(phase: dict[str, Any], names: list[str]) -> list[str]:
    """The rounds table's cells for a resolved phase, from the game's record."""
    (event,) = phase["events"]
    how = {m["seat"]: m["source"] for m in phase["moves"]}
    prize = card_name(event["prize"])
    if event["pot"]:  # prizes carried over from tied rounds
        prize += " + " + ", ".join(card_name(card) for card in event["pot"])
    bids = [card_name(bid) + {"random": "*", "bot": "~"}.get(how[seat], "") for seat, bid in enumerate(event["bids"])]
    if event["winner"] is not None:
        result = f"{names[event['winner']]} +{event['value']}"
    else:
        result = "tie: carried over" if event["outcome"] == "carried" else "tie: discarded"
    totals = " · ".join(str(score) for score in event["scores"])  # the running totals
    return [str(event["round"]), prize, *bids, result, totals]


def test_a_game_page_renders_its_rounds_and_chart_on_a_phone(engine, clock, tmp_path, serve, browser):
    from selenium.webdriver.common.by import By

    engine.new_game("pure-skill", PLAYERS)
    play(engine, clock, {ALICE: "3", BOB: "7", CAROL: "J"})  # carol takes the prize
    play(engine, clock, {ALICE: "K", BOB: "2", CAROL: "5"})  # alice does
    play(engine, clock, {ALICE: "9", BOB: "9", CAROL: "A"})  # a tie: the prize is discarded
    play(engine, clock, {ALICE: "4", BOB: "Q"})  # carol misses the deadline
    clock.advance(days=3)
    assert engine.tick() == ["resolved game 1 Round 4 of 13"]
    assert engine.store.final_moves(1, 4)[2]["source"] == "random"

    site = tmp_path / "site"
    Site(engine, site).render()
    record = json.loads((site / "games/1/record.json").read_text(encoding="utf-8"))
    names = [p["name"] for p in record["players"]]
    assert names == ["alice", "bob", "carol"]
    assert [p["number"] for p in record["phases"]] == [1, 2, 3, 4]

    viewport(browser, WIDTH)
    browser.get_log("browser")  # only this page's messages below
    browser.get(serve(site) + "games/1/")
    assert browser.execute_script("return window.innerWidth") == WIDTH

    assert browser.find_element(By.TAG_NAME, "h1").text == f"Game 1: {record['game']['title']}"

    # The rounds table: a row per resolved round, each cell as the record says.
    heading = browser.find_element(By.XPATH, "//h2[normalize-space()='Rounds']")
    table = heading.find_element(By.XPATH, "following-sibling::div[contains(@class, 'scroll')][1]/table")
    # On a phone each round is a card, its column headings read by screen readers only.
    header = [cell.get_attribute("textContent") for cell in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert header == ["Round", "Prize", *names, "Result", f"Totals ({' · '.join(names)})"]
    rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    shown = [[cell.text for cell in row.find_elements(By.CSS_SELECTOR, "th, td")] for row in rows]
    assert shown == [expected_row(phase, names) for phase in record["phases"]]
    assert shown[3][4].endswith("*") and shown[2][-2] == "tie: discarded"  # what the game above played

    # The chart: drawn, within the phone's width, its key naming each line with its final score.
    chart = browser.find_element(By.CSS_SELECTOR, "figure svg[role=img]")
    assert chart.accessible_name.startswith("Scores after each round")  # its <title>, then its <desc>
    box = browser.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return {left: r.left, right: r.right, width: r.width, height: r.height};",
        chart,
    )
    assert box["width"] > 0 and box["height"] > 0, box
    assert box["left"] >= 0 and box["right"] <= WIDTH, box
    finals = record["phases"][-1]["events"][-1]["scores"]
    labels = [label.text for label in chart.find_elements(By.CSS_SELECTOR, "g.key text")]
    assert labels == [f"{name}: {score}" for name, score in zip(names, finals, strict=True)]
    players = browser.find_element(By.XPATH, "//h2[normalize-space()='Players']/following-sibling::div[1]/table")
    scores = [cell.text for cell in players.find_elements(By.CSS_SELECTOR, "tbody td:last-child")]
    assert scores == [str(score) for score in finals]  # the players table agrees with the chart

    # Only a table may scroll sideways, inside its own box: never the page.
    scroll = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll[0] <= scroll[1], f"the page scrolls sideways: {scroll}"

    # No console errors (a missing favicon.ico is the web server's business, not the page's).
    log = browser.get_log("browser")
    errors = [entry for entry in log if entry["level"] == "SEVERE" and "favicon.ico" not in entry["message"]]
    assert errors == [], errors

    print(f"screenshot: {screenshot(browser, f'game-page-{WIDTH}')}")


def test_the_time_left_before_a_deadline_is_told_by_the_browser(engine, clock, tmp_path, serve, browser):
    """A page is written only when its game changes (issue 36): the time
    left before its deadline is worked out in the browser, from the page's
    <time datetime>, in the mail's words (show_duration), for the game's
    page and the index; "any moment now" once the deadline has passed; a
    paused game's page has no deadline to count down to."""
    from selenium.webdriver.common.by import By

    engine.new_game("pure-skill", PLAYERS)
    engine.new_game("pure-skill", PLAYERS)
    engine.pause(2, SHELL, "holidays")
    site = tmp_path / "site"
    Site(engine, site).render()
    deadline = from_iso(engine.table(1).open_phase["deadline"])
    base = serve(site)
    viewport(browser, WIDTH)
    soon, late = timedelta(hours=2, minutes=58, seconds=30), timedelta(hours=-1)
    assert show_duration(soon) == "2 hours 58 minutes"  # the mail's words
    for before, told in ((soon, "(in 2 hours 58 minutes)"), (late, "(any moment now)")):
        # The browser's clock, set to ``before`` the deadline for the pages loaded next.
        moment = int((deadline - before).timestamp() * 1000)
        fixed = browser.execute_cdp_cmd(
            "Page.addScriptToEvaluateOnNewDocument", {"source": f"Date.now = () => {moment};"}
        )
        try:
            browser.get(f"{base}games/1/")
            line = browser.find_element(By.XPATH, "//p[starts-with(normalize-space(), 'Deadline:')]").text
            assert line == f"Deadline: {show(deadline)} {told}.", line
            browser.get(base)
            assert f"deadline {show(deadline)} {told}" in browser.find_element(By.TAG_NAME, "body").text
            browser.get(f"{base}games/2/")
            assert "(in " not in browser.find_element(By.TAG_NAME, "body").text
        finally:
            browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", fixed)
    browser.get(f"{base}games/1/")
    print(f"screenshot: {screenshot(browser, f'time-left-{WIDTH}')}")


# -- every kind of game, finished and running, on a phone and a laptop -------------


LONG = "carol.with.a.long.address@example.org"  # a name with no space to break at
QUOTED = "o'brien@example.org"  # a name HTML must escape
OTHERS = ["alice@example.org", "bob@example.org", "dave@example.org"]
SEATS = {"pure-skill": 3, "bid": 4, "ice": 4, "priority": 6, "bluff": 5}
# Where a running game stops: in the first phase whose label has this in it
# (with the seeds below: a Bid! coin tie-break, an Ice Ice Baby scoring
# round, an Auction round after a tally, Bluff's second round of bidding
# with a few bids on the tracks).
RUNNING = {
    "pure-skill": "Round 6",
    "bid": "coin",
    "ice": "scoring",
    "priority": "Round 2",
    "bluff": "Round 2 bidding, turn 5",
}


def every_kind(engine: Engine, clock: FakeClock, seeds: Seeds) -> dict[tuple[str, str], int]:
    """A finished and a running game of each kind -> its id.  Finished: the
    long name and o'brien with bots; o'brien resigns, the long name misses
    every deadline (random moves).  Running: o'brien, the long name, others
    and a bot; two rounds of deadlines missed, one player resigns, then the
    people mail random legal moves until the phase in RUNNING.  The seeds
    are fixed, so every run plays the same games."""
    serial = itertools.count()

    def new_game(*players: Any, **how: Any) -> int:  # the n-th game made has the seed sha256("browser n")
        seeds.fixed = hashlib.sha256(b"browser %d" % next(serial)).digest()
        return engine.new_game(*players, **how)

    hour = {
        "deadline": timedelta(hours=1),
        "turn_deadline": timedelta(hours=1),
        "decision_deadline": timedelta(hours=1),
    }
    games = {}
    for kind, seats in SEATS.items():
        game = new_game(kind, [LONG, QUOTED], bots=seats - 2, name="A “long” name, <b>not</b> bold", **hour)
        for n in range(500):
            if engine.table(game).row["state"] == "finished":
                break
            clock.advance(hours=1)
            engine.tick()
            if n == 1:
                engine.resign(game, QUOTED)
        assert engine.table(game).row["state"] == "finished", kind
        games[(kind, "finished")] = game
    for kind, seats in SEATS.items():
        games[(kind, "running")] = new_game(kind, [QUOTED, LONG, *OTHERS[: seats - 3]], bots=1, **hour)
    for _ in range(2):  # every running game's people miss two deadlines
        clock.advance(hours=1)
        engine.tick()
    pick = random.Random(18)
    for kind, seats in SEATS.items():
        game = games[(kind, "running")]
        engine.resign(game, OTHERS[0] if seats > 3 else LONG)
        for _ in range(300):  # no tick: no other game's deadline passes meanwhile
            table = engine.table(game)
            if table.open_phase is None or RUNNING[kind] in table.open_phase["label"]:
                break
            for seat in table.waiting_for(table.open_phase):
                move = pick.choice(table.rules.legal_moves(table.state, seat))
                clock.advance(minutes=1)
                mail = reply(
                    engine, table.seats[seat]["address"], table.rules.move_text(move), game=game, received=clock()
                )
                assert engine.ingest(mail).code == "move"
        assert engine.table(game).open_phase is not None, f"the running game of {kind} ended"
    return games


# Every cell of every table, and every table's scroll box, measured in the
# page: a cell must lie inside the screen and inside its table's box (a
# table that has to scroll sideways fails: at these two widths none may),
# and its content must fit in it.  The column headings a phone hides for
# screen readers (a 1 px box) are left out of the last check only.
MEASURE = """
const screen = window.innerWidth, found = [];
const where = (e) => { const t = e.closest('table'), c = t && t.querySelector('caption');
  let h = (e.closest('.scroll') || t || e).previousElementSibling;
  while (h && !/^H[1-6]$/.test(h.tagName)) h = h.previousElementSibling;
  return ((h ? h.textContent : '') + ' / ' + (c ? c.textContent : '')).trim().slice(0, 70); };
for (const box of document.querySelectorAll('.scroll')) {
  if (box.scrollWidth > box.clientWidth + 1)
    found.push(`${where(box)}: the table is ${box.scrollWidth} px wide in a box of ${box.clientWidth}`);
}
for (const cell of document.querySelectorAll('th, td')) {
  const r = cell.getBoundingClientRect(), box = cell.closest('.scroll');
  const within = box ? box.getBoundingClientRect() : {left: 0, right: screen};
  const text = JSON.stringify(cell.textContent.trim().slice(0, 40));
  if (r.width === 0 && r.height === 0) continue;  // not shown (an empty cell in a card)
  if (r.left < -0.5 || r.right > screen + 0.5 || r.left < within.left - 0.5 || r.right > within.right + 0.5)
    found.push(`${where(cell)}: cell ${text} spans ${Math.round(r.left)} to ${Math.round(r.right)} px`);
  const head = cell.closest('thead');
  if ((!head || head.getBoundingClientRect().width > 1) && cell.scrollWidth > cell.clientWidth + 1)
    found.push(`${where(cell)}: cell ${text} holds ${cell.scrollWidth} px in ${cell.clientWidth}`);
}
return {page: document.documentElement.scrollWidth, screen: screen, found: found,
        tables: document.querySelectorAll('table').length, title: document.querySelector('h1').textContent,
        text: document.body.innerText};
"""


def test_every_kinds_pages_fit_a_phone_and_a_laptop(engine, clock, seeds, tmp_path, serve, browser):
    """A finished and a running game of each kind, at 360 and 1,280 px: the
    page never scrolls sideways and every cell of every table (players,
    board, rounds, final scoring) is on the screen, whole; a screenshot of
    each page goes to test-output/.  Likewise the history pages of the
    games long enough for them (issue 36: older phases, a block a page)."""
    games = every_kind(engine, clock, seeds)
    site = tmp_path / "site"
    Site(engine, site).render()
    base = serve(site)
    problems, shots = [], []
    for width in (WIDTH, WIDE):
        viewport(browser, width)
        for (kind, state), game in games.items():
            browser.get(f"{base}games/{game}/")
            seen = browser.execute_script(MEASURE)
            page = f"{kind}, {state}, at {width} px"
            assert seen["screen"] == width and seen["tables"] >= 2, (page, seen["screen"], seen["tables"])
            assert "o'brien" in seen["text"] and "carol.with.a.long.address" in seen["text"]
            assert state == "running" or seen["title"].endswith("“A “long” name, <b>not</b> bold”")  # as text
            if seen["page"] > width:
                problems.append(f"{page}: the page is {seen['page']} px wide, it scrolls sideways")
            problems += [f"{page}: {found}" for found in seen["found"]]
            shots.append(screenshot(browser, f"{kind}-{state}-{width}"))
            for history in sorted((site / f"games/{game}").glob("history-*.html")):  # a long game's older phases
                browser.get(f"{base}games/{game}/{history.name}")
                seen = browser.execute_script(MEASURE)
                page = f"{kind}, {state}, {history.name}, at {width} px"
                assert seen["tables"] >= 1, page
                if seen["page"] > width:
                    problems.append(f"{page}: the page is {seen['page']} px wide, it scrolls sideways")
                problems += [f"{page}: {found}" for found in seen["found"]]
                shots.append(screenshot(browser, f"{kind}-{state}-{history.stem}-{width}"))
    assert any("history-" in shot.name for shot in shots), "no game here is long enough for a history page"
    assert problems == [], "\n".join(problems)
    print(f"screenshots: {len(shots)} in {OUTPUT}")
