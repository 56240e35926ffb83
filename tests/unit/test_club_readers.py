"""The club's list gets a game's public mail (issue 34, item 2): a copy of
the start, of each round's result and of the end, players named by their
names and never by an address (Post.readers, Post.to_reader)."""

from __future__ import annotations

import pytest
from conftest import PLAYERS
from test_notify import KINDS, Played

from referee.store import Notify

LIST = "club@lists.example.org"


@pytest.fixture(scope="module", params=KINDS)
def played(request, tmp_path_factory) -> Played:
    return Played(tmp_path_factory.mktemp(request.param), request.param, announce_to=(LIST,))


def test_the_list_gets_the_start_each_round_s_result_and_the_end(played):
    subjects = played.subjects(LIST)
    assert len(subjects) == played.rounds + 2  # the start, one per round, the end (its last round's result)
    assert "Game over" in subjects[-1] or "over" in subjects[-1].lower()


def test_the_list_s_copies_name_no_player_s_address(played):
    for mail in played.box.to(LIST):
        text = mail["raw"].decode("utf-8", "replace")
        assert not [address for address in PLAYERS if address in text]


def test_a_list_at_every_gets_each_phase_s_result(tmp_path):
    played = Played(tmp_path, "ice", announce_to=(LIST,), announce_notify=Notify.EVERY)
    # the start, each phase's result, the end
    assert len(played.subjects(LIST)) == len(played.engine.table(1).phases) + 2


def test_the_list_s_round_result_tells_the_round_s_earlier_phases_as_the_list_s_not_a_player_s(played):
    tops = [m["body"] for m in played.box.to(LIST) if "Earlier in this round:" in m["body"]]
    if len(played.engine.table(1).phases) > played.rounds:  # a kind whose rounds have several phases
        assert tops
    assert not [m for m in played.box.to(LIST) if "Since your last mail" in m["body"]]
