"""Review of issue 36's site (rv-site): the change detection (Store.site_versions
and the state file), the time-left script, and the record in parts."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, FakeClock, join
from test_idle36_site import two  # noqa: F401  (the fixture)
from test_site import game_files, page

import referee.check
import referee.fetch
import referee.record
import referee.site.render
from referee.cli import main
from referee.engine import Engine
from referee.engine.keeping import SHELL
from referee.site.render import Site
from referee.timeutil import show_duration

ALICE, BOB, CAROL = PLAYERS
DORA = "dora@example.net"


def resign(engine: Engine, clock: FakeClock) -> None:
    engine.resign(1, BOB)


def new_address(engine: Engine, clock: FakeClock) -> None:
    engine.address(1, "2", DORA, SHELL, "a new mailbox")


def resume(engine: Engine, clock: FakeClock) -> None:
    engine.resume(2, SHELL, "back")


def cancel(engine: Engine, clock: FakeClock) -> None:
    engine.cancel(1, SHELL, "nobody plays")


def deadline_passes(engine: Engine, clock: FakeClock) -> None:
    clock.advance(days=3)
    engine.tick()


@pytest.mark.parametrize(
    ("change", "game"),
    [(resign, 1), (new_address, 1), (resume, 2), (cancel, 1), (deadline_passes, 1)],
    ids=["resign", "address", "resume", "cancel", "resolved"],
)
def test_each_change_rewrites_the_game_and_the_index(two, clock, tmp_path, change, game):  # noqa: F811
    """Each change rewrites its game's page and the index, and the site is
    then what a fresh render writes (but for the footer's time)."""
    site = tmp_path / "site"
    Site(two, site).render()
    before = (site / f"games/{game}/index.html").read_text().split("<footer>")[0]
    clock.advance(hours=1)
    change(two, clock)
    report = Site(two, site).render()
    assert {f"games/{game}/index.html", "index.html"} <= set(report.written)
    after = (site / f"games/{game}/index.html").read_text().split("<footer>")[0]
    assert after != before
    fresh = tmp_path / "fresh"
    Site(two, fresh).render()

    def body(folder: Path, name: str) -> str:
        return (folder / name).read_text().split("<footer>")[0]

    for name in ("index.html", "games/1/index.html", "games/2/index.html", *game_files(1), *game_files(2)):
        assert body(site, name) == body(fresh, name), name


def test_a_sign_up_rewrites_the_index(engine, clock, tmp_path):
    site = tmp_path / "site"
    join(engine, "pure-skill", ALICE)
    Site(engine, site).render()
    assert "1 of" in page(site, "index.html").text
    join(engine, "pure-skill", BOB)
    Site(engine, site).render()
    assert "2 of" in page(site, "index.html").text


def test_the_end_of_a_game_rewrites_the_standings(engine, clock, tmp_path):
    site = tmp_path / "site"
    engine.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=1))
    Site(engine, site).render()
    before = (site / "standings.html").read_text()
    for _ in range(20):
        clock.advance(hours=1)
        engine.tick()
    assert engine.table(1).row["state"] == "finished"
    Site(engine, site).render()
    assert (site / "standings.html").read_text() != before
    assert "alice" in (site / "standings.html").read_text()


def test_a_new_reminder_or_address_rewrites_the_pages(two, clock, tmp_path):  # noqa: F811
    site = tmp_path / "site"
    Site(two, site).render()
    two.config = dataclasses.replace(two.config, address="judge@example.org")
    report = Site(two, site).render()
    assert report.games_rendered == 2
    assert "judge@example.org" in (site / "games/1/index.html").read_text()
    two.config = dataclasses.replace(two.config, reminder=timedelta(hours=2))
    assert Site(two, site).render().games_rendered == 2


def test_a_new_layout_rewrites_every_page(two, clock, tmp_path, monkeypatch):  # noqa: F811
    site = tmp_path / "site"
    Site(two, site).render()
    monkeypatch.setattr(referee.site.render, "_LAYOUT", "upgraded")
    assert Site(two, site).render().games_rendered == 2


def test_a_deleted_state_file_rewrites_every_game(two, clock, tmp_path):  # noqa: F811
    site = tmp_path / "site"
    Site(two, site).render()
    (site / ".render-state.json").unlink()
    assert Site(two, site).render().games_rendered == 2
    assert Site(two, site).render().written == []


@pytest.mark.parametrize("damage", ["[]", "null", '"x"', "3", '{"1": []}', '{"1": {"fingerprint": 5}}'])
def test_a_state_file_of_the_wrong_shape_is_a_site_written_again(two, clock, tmp_path, damage):  # noqa: F811
    """A state file that is JSON but not the state's shape (a damaged disk,
    a hand's edit) was read as it was, and every render raised (refresh
    logged it): the site stopped changing for good, moves and all."""
    site = tmp_path / "site"
    Site(two, site).render()
    (site / ".render-state.json").write_text(damage)
    report = Site(two, site).render()
    assert report.games_rendered == 2
    assert Site(two, site).render().written == []


def test_a_state_entry_that_lacks_a_field_is_written_again(two, clock, tmp_path):  # noqa: F811
    site = tmp_path / "site"
    Site(two, site).render()
    state = json.loads((site / ".render-state.json").read_text())
    del state["2"]["summary"]
    (site / ".render-state.json").write_text(json.dumps(state))
    clock.advance(hours=1)
    two.extend(1, timedelta(hours=5), SHELL, "a wedding")  # game 1 changed, game 2 did not
    report = Site(two, site).render()
    assert report.games_rendered == 2
    assert "Game 2" in page(site, "index.html").text


# -- the time-left script ------------------------------------------------------


def test_the_script_words_are_show_durations():
    """The browser's words (the script, run here by a tiny interpreter of its
    one function: Python's divmod as the script's floor and subtraction)."""
    folder = Path(referee.site.render.__file__).parents[2] / "templates/site/_time_left.html.j2"
    script = folder.read_text()
    assert '[["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]]' in script
    assert "parts.slice(0, 2)" in script and '(count !== 1 ? "s" : "")' in script

    def words(seconds: int) -> str:  # the script's words(), line by line
        parts = []
        for name, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
            count = seconds // size
            seconds -= count * size
            if count:
                parts.append(f"{count} {name}{'s' if count != 1 else ''}")
        return " ".join(parts[:2])

    for seconds in (1, 59, 60, 61, 3600, 3601, 86399, 86400, 90061, 10 * 86400 + 5):
        assert words(seconds) == show_duration(timedelta(seconds=seconds))


def test_without_script_a_running_page_shows_the_deadline_itself(two, clock, tmp_path):  # noqa: F811
    site = tmp_path / "site"
    Site(two, site).render()
    deadline = two.table(1).open_phase["deadline"]
    text = page(site, "games/1/index.html").text
    assert f"Deadline: {deadline[:10]} {deadline[11:16]} UTC." in text


# -- the record in parts -------------------------------------------------------

PART = 4


@pytest.fixture
def small_parts(monkeypatch):
    monkeypatch.setattr(referee.record, "PART_PHASES", PART)


def verify(path: Path | str, capsys) -> tuple[int, str]:
    status = main(["verify", str(path)])
    captured = capsys.readouterr()
    return status, (captured.out + captured.err).strip().splitlines()[-1]


def test_the_end_rewrites_the_old_parts_with_every_move(small_parts, engine, clock, tmp_path, capsys):
    """Bluff hides its moves while it runs (moves_public False): a part
    published then has them as null, and the end must write it again."""
    engine.new_game("bluff", PLAYERS)
    folder = tmp_path / "site"
    site = Site(engine, folder)
    site.render()
    ticks = 0
    while engine.table(1).row["state"] != "finished":
        clock.advance(hours=12)
        engine.tick()
        ticks += 1
        assert ticks < 2000
        if ticks % 10 == 0 or ticks == 3 * PART:
            site.render()
        if ticks == 3 * PART:
            hidden = json.loads((folder / "games/1/record-1.json").read_text())
            assert any(move["move"] is None for phase in hidden["phases"] for move in phase["moves"])
    site.render()
    head = json.loads((folder / "games/1/record.json").read_text())
    for name in head["parts"]:
        part = json.loads((folder / "games/1" / name).read_text())
        assert all(move["move"] is not None for phase in part["phases"] for move in phase["moves"]), name
    status, line = verify(folder / "games/1/record.json", capsys)
    assert status == 0, line


@pytest.mark.parametrize("phases", [PART, PART + 1, 2 * PART])
def test_the_join_at_the_edges(small_parts, phases):
    record = {"format": "f", "game": {"id": 7}, "phases": [{"number": n} for n in range(1, phases + 1)]}
    head, parts = referee.record.split_record(record)
    if phases <= PART:
        assert parts == [] and head == record
        return
    assert [len(part["phases"]) for part in parts] == ([PART, 1] if phases == PART + 1 else [PART, PART])
    names = referee.record.part_names(head)
    assert referee.record.join_record(head, parts) == record and len(names) == len(parts)


def test_a_last_part_longer_than_a_part_is_refused(small_parts):
    record = {"format": "f", "game": {"id": 7}, "phases": [{"number": n} for n in range(1, 3 * PART + 1)]}
    head, parts = referee.record.split_record(record)
    parts[-1]["phases"] += [{"number": 99}] * PART
    with pytest.raises(referee.record.PartsError):
        referee.record.join_record(head, parts)


def test_a_head_naming_very_many_parts_is_refused_before_any_is_read(tmp_path, capsys, monkeypatch):
    """A record comes from anyone (referee.fetch): a head naming half a
    million parts had verify read half a million files or addresses, each
    up to 16 MB, with no limit on the whole."""
    head = {"format": referee.record.RECORD_FORMAT, "game": {"id": 1}}
    head["parts"] = [referee.record.part_name(n) for n in range(1, 500_001)]
    (tmp_path / "record.json").write_text(json.dumps(head))
    read: list[str] = []
    original = referee.check.load_record

    def counting(source: str, **limits):
        read.append(source)
        return original(source, **limits)

    monkeypatch.setattr(referee.check, "load_record", counting)
    status, line = verify(tmp_path / "record.json", capsys)
    assert status == 1 and "parts" in line
    assert len(read) == 1


def test_the_parts_together_are_held_to_one_records_size(tmp_path, capsys, monkeypatch):
    """Each part was read up to fetch.MAX_BYTES: a head of two parts could
    make verify read twice a record's most, of 56, 56 times: now each part
    is held to its share."""
    head = {"format": referee.record.RECORD_FORMAT, "game": {"id": 1}, "parts": ["record-1.json", "record-2.json"]}
    (tmp_path / "record.json").write_text(json.dumps(head))
    monkeypatch.setattr(referee.fetch, "MAX_BYTES", 1000)
    part = {"game": 1, "part": 1, "phases": [{"x": "a" * 600}]}
    (tmp_path / "record-1.json").write_text(json.dumps(part))
    (tmp_path / "record-2.json").write_text(json.dumps({**part, "part": 2}))
    status, line = verify(tmp_path / "record.json", capsys)
    assert status == 2 and "larger than" in line
