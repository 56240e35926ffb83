"""A game's public page in a real browser: Debian's headless Chromium, driven
by Selenium through Debian's ChromeDriver (never a downloaded browser or
driver), at a phone's width.

Without Chromium, ChromeDriver or Selenium the test is skipped, or fails
when CI is set, as the Dovecot tests do (tests/integration/conftest.py).
"""

from __future__ import annotations

import base64
import functools
import http.server
import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import required
from conftest import PLAYERS, FakeClock, reply
from referee.engine import Engine
from referee.rules.pure_skill import card_name
from referee.site.render import Site

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
PACKAGES = "the Debian packages chromium and chromium-driver, and the test extra's selenium"
WIDTH, HEIGHT = 360, 800  # a phone's screen, in CSS pixels
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"  # kept after the run, for a look
ALICE, BOB, CAROL = PLAYERS


def unavailable(reason: str) -> None:
    """Skip, or fail in CI, because the browser cannot run."""
    required.unavailable(reason, PACKAGES)


# -- the site, served on loopback --------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
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


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Headless Chromium with a phone's WIDTH x HEIGHT viewport and a fresh profile."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            unavailable(f"{path} is not installed")
    try:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        unavailable(f"Selenium is not installed: {exc}")
    # Both paths are given, so Selenium Manager never runs; were it to, offline.
    monkeypatch.setenv("SE_OFFLINE", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1",
                 f"--user-data-dir={tmp_path / 'chromium-profile'}"):  # fmt: skip
        options.add_argument(flag)
    # A phone's viewport (headless windows are at least 500 pixels wide): the
    # page is laid out as on a phone, its <meta name="viewport"> included.
    options.add_experimental_option("mobileEmulation", {
        "deviceMetrics": {"width": WIDTH, "height": HEIGHT, "pixelRatio": 1.0, "mobile": True, "touch": True}})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=str(CHROMEDRIVER), log_output=str(tmp_path / "chromedriver.log"))
    try:
        driver = webdriver.Chrome(service=service, options=options)
    except WebDriverException as exc:
        unavailable(f"Chromium cannot start: {exc.msg}")
    try:
        driver.set_page_load_timeout(30)
        yield driver
    finally:
        driver.quit()


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
    bids = [card_name(bid) + {"random": "*", "bot": "~"}.get(how[seat], "")
            for seat, bid in enumerate(event["bids"])]  # fmt: skip
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

    browser.get(serve(site) + "games/1/")
    assert browser.execute_script("return window.innerWidth") == WIDTH

    assert browser.find_element(By.TAG_NAME, "h1").text == f"Game 1: {record['game']['title']}"

    # The rounds table: a row per resolved round, each cell as the record says.
    heading = browser.find_element(By.XPATH, "//h2[normalize-space()='Rounds']")
    table = heading.find_element(By.XPATH, "following-sibling::div[@class='scroll'][1]/table")
    header = [cell.text for cell in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert header == ["Round", "Prize", *names, "Result", f"Totals ({' · '.join(names)})"]
    rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    shown = [[cell.text for cell in row.find_elements(By.CSS_SELECTOR, "th, td")] for row in rows]
    assert shown == [expected_row(phase, names) for phase in record["phases"]]
    assert shown[3][4].endswith("*") and shown[2][-2] == "tie: discarded"  # what the game above played

    # The chart: drawn, within the phone's width, its key naming each line with its final score.
    chart = browser.find_element(By.CSS_SELECTOR, "figure svg[role=img]")
    assert chart.accessible_name.startswith("Scores after each round")  # its <title>, then its <desc>
    box = browser.execute_script("const r = arguments[0].getBoundingClientRect();"
                                 "return {left: r.left, right: r.right, width: r.width, height: r.height};",
                                 chart)  # fmt: skip
    assert box["width"] > 0 and box["height"] > 0, box
    assert 0 <= box["left"] and box["right"] <= WIDTH, box
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

    # A screenshot of the whole page, top to bottom, for a person to look at.
    png = browser.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
    shot = tmp_path / f"game-page-{WIDTH}.png"
    shot.write_bytes(base64.b64decode(png["data"]))
    OUTPUT.mkdir(exist_ok=True)
    kept = OUTPUT / shot.name
    shutil.copyfile(shot, kept)
    print(f"screenshot: {kept} (and {shot})")
