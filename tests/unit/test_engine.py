"""The engine as players and the keeper meet it: the mail each one gets, what
it says, and what ``status`` shows, from real mails, a real store and the
shipped templates.  Time comes from the fake clock and the Received header."""

from __future__ import annotations

import hashlib
import logging
import re
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import PLAYERS, START, FakeClock, Seeds, last_id, mails, make_mail, reply, seat_address, send

from referee.config import Config
from referee.engine import Engine, EngineError
from referee.rules.pure_skill import card_long, card_name, card_value
from referee.store import Notify, Store
from referee.timeutil import from_iso, show

ALICE, BOB, CAROL = PLAYERS
DAVE = "dave@example.org"
_HAND = re.compile(r"hand\b[^:\n]*:\s*(?P<cards>[^\n]+)", re.I)
_BID_TEXT = re.compile(
    r"\bbid\s+(?:[2-9]|10|[AJQK]|ace|jack|queen|king|one|two|three|four|five|six|seven|"
    r"eight|nine|ten|eleven|twelve|thirteen)\b",
    re.I,
)


# -- helpers -------------------------------------------------------------------


def write(engine: Engine, clock: FakeClock, sender: str, text: str, **kwargs):
    """A mail to the referee's plain address (or ``to``): no reply token of its own."""
    kwargs.setdefault("received", clock())
    return engine.ingest(make_mail(sender, text, **kwargs))


def assert_notice_only(engine: Engine, after: int, owner: str, message_id: str) -> dict:
    """The one mail queued since ``after``: a notice to ``owner`` that a mail
    in their name was not accepted, which is no reply to that mail."""
    (notice,) = mails(engine, after=after)
    assert notice["recipients"] == [owner]
    assert "not accepted" in notice["subject"]
    assert notice["message"]["In-Reply-To"] is None
    assert message_id not in str(notice["message"].get("References", ""))
    return notice


def hand_in(body: str) -> list[int]:
    match = _HAND.search(body)
    assert match, f"no hand shown in:\n{body}"
    return sorted(card_value(word) for word in match["cards"].split())


def snapshot(engine: Engine, game: int = 1) -> tuple:
    """Everything a message could change about a game."""
    return (
        engine.store.moves(game),
        engine.store.phases(game),
        engine.store.seats(game),
        engine.store.game(game),
    )


def counted(engine: Engine, game: int, number: int) -> dict[int, int]:
    """Seat -> card of the bids that counted in resolved round ``number``."""
    step = next(s for s in engine.table(game).replay.steps if s.number == number)
    return dict(step.moves)


def resolved_rounds(engine: Engine, game: int = 1) -> list[int]:
    return [p["number"] for p in engine.store.phases(game) if p["resolved_at"]]


# -- a new game --------------------------------------------------------------------


def test_a_new_game_announces_the_seed_commitment_to_each_player(engine):
    game = engine.new_game("pure-skill", PLAYERS)
    seed = engine.table(game).seed
    commitment = hashlib.sha256(seed).hexdigest()
    assert engine.status(game)["seed_commitment"] == commitment
    assert engine.status(game)["seed"] is None
    for address in PLAYERS:
        first = mails(engine, address)[0]
        assert commitment in first["body"]
        assert seed.hex() not in first["body"]
    # one copy each, never a shared To: line
    assert all(len(m["recipients"]) == 1 for m in mails(engine))


def test_a_new_game_s_seed_and_the_referee_s_own_key_come_from_the_seed_source(config, clock):
    """The engine takes its seed source as it takes its clock (issue 31,
    item 7): each draw of it, in turn, is the key games.db keeps and each
    new game's seed."""
    draws = iter([b"k" * 32, b"1" * 32, b"2" * 32])
    engine = Engine(Store(config.database), config, clock, lambda n: next(draws)[:n])
    assert engine.key == (b"k" * 32).hex().encode() and engine.store.get_meta("secret_key") == (b"k" * 32).hex()
    assert [engine.table(engine.new_game("pure-skill", PLAYERS)).seed for _ in range(2)] == [b"1" * 32, b"2" * 32]
    assert Engine(Store(config.database), config, clock, lambda n: b"x" * n).key == engine.key  # kept, not drawn again


def test_no_test_patches_the_seed_source():
    """Tests inject seeds (conftest.Seeds, Engine(..., seeds)); none patches
    ``secrets``, which sqlite-utils draws its savepoint names from too."""
    tests = Path(__file__).resolve().parents[1]
    patching = re.compile(r"""(setattr|patch)\(\s*["'][\w.]*secrets\b""")
    found = [str(path.relative_to(tests)) for path in tests.rglob("*.py") if patching.search(path.read_text("utf-8"))]
    assert found == []


def test_each_player_is_prompted_privately_with_their_own_hand(engine, clock):
    game = engine.new_game("pure-skill", PLAYERS)
    # Round 1: everybody holds all thirteen, so play distinct cards to make hands differ.
    for address, card in zip(PLAYERS, ("3", "7", "J"), strict=True):
        send(engine, clock, address, f"bid {card}")
    assert resolved_rounds(engine) == [1]
    state = engine.table(game).state
    view = engine.status(game)
    assert view["phase"]["number"] == 2
    for seat, address in enumerate(PLAYERS):
        prompt = [m for m in mails(engine, address) if _HAND.search(m["body"])][-1]
        assert "Round 2" in prompt["subject"]
        shown = hand_in(prompt["body"])
        assert shown == sorted(state.hands[seat])
        others = [sorted(h) for s, h in enumerate(state.hands) if s != seat]
        assert shown not in others
        assert len(_HAND.findall(prompt["body"])) == 1  # no one else's hand
        # the prize and the deadline are in the prompt
        assert re.search(rf"\b{card_long(state.prize)} of spades", prompt["body"])
        assert show(view["phase"]["deadline"]) in prompt["body"]
        assert prompt["message"]["Auto-Submitted"] == "auto-generated"


def test_a_bid_causes_mail_to_the_bidder_alone_until_the_round_resolves(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    before = last_id(engine)
    send(engine, clock, ALICE, "bid 4")
    assert {tuple(m["recipients"]) for m in mails(engine, after=before)} == {(ALICE,)}
    before = last_id(engine)
    send(engine, clock, BOB, "bid 9")
    assert {tuple(m["recipients"]) for m in mails(engine, after=before)} == {(BOB,)}
    status = engine.status(1)
    assert status["phase"]["waiting_for"] == [CAROL]
    assert all(p["score"] == 0 for p in status["players"])


def test_no_mail_to_others_depends_on_an_unresolved_bid(tmp_path):
    """Non-interference: two games alike in all but alice's round-1 bid send
    bob and carol exactly the same mail until round 1 resolves."""
    seen = []
    for alice_bid in ("3", "Q"):
        # the same secret key too, so both games give each seat the same reply token
        config = Config(
            address="referee@example.org",
            reminder=None,
            outage_gap=None,
            database=tmp_path / f"{alice_bid}.db",
            secret_key=b"one key",
        )
        clock = FakeClock()
        engine = Engine(Store(config.database), config, clock, Seeds(bytes(range(32))))  # the same seed
        engine.new_game("pure-skill", PLAYERS)
        clock.advance(hours=1)
        send(engine, clock, ALICE, f"bid {alice_bid}")
        clock.advance(hours=1)
        send(engine, clock, BOB, "bid 7")
        send(engine, clock, CAROL, "bid 99")  # an error reply, still before resolution
        assert resolved_rounds(engine) == []
        others = [(m["recipients"], m["subject"], m["body"]) for m in mails(engine) if ALICE not in m["recipients"]]
        status = engine.status(1)
        seen.append((others, status, engine.history(1)))
        # alice's own receipt does show her bid
        assert f"bid {alice_bid}" in mails(engine, ALICE)[-1]["body"]
        # and once the round resolves, everyone learns it
        send(engine, clock, CAROL, "bid 5")
        assert counted(engine, 1, 1)[0] == card_value(alice_bid)
    assert seen[0] == seen[1]


# -- changing a bid ------------------------------------------------------------------


def test_the_last_bid_counts_and_the_receipt_names_the_bid_it_replaced(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    assert send(engine, clock, ALICE, "bid 5").code == "move"
    clock.advance(hours=1)
    assert send(engine, clock, ALICE, "BID king").code == "replaced"
    receipt = mails(engine, ALICE)[-1]
    assert "bid K" in receipt["body"] and "bid 5" in receipt["body"]
    assert "replace" in receipt["body"].lower()
    first_receipt = mails(engine, ALICE)[-2]
    assert "replace" not in first_receipt["body"].lower()
    send(engine, clock, BOB, "bid 2")
    send(engine, clock, CAROL, "bid 3")
    assert counted(engine, 1, 1) == {0: 13, 1: 2, 2: 3}
    assert engine.status(1)["players"][0]["score"] == engine.table(1).replay.steps[0].before.prize


def test_a_bid_read_out_of_order_is_not_said_to_replace_a_later_one(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    clock.advance(hours=3)  # the referee reads them all now
    send(engine, clock, ALICE, "bid 5", received=START + timedelta(hours=2))
    send(engine, clock, ALICE, "bid 6", received=START + timedelta(hours=1))
    send(engine, clock, BOB, "bid 2")
    send(engine, clock, CAROL, "bid 3")
    assert counted(engine, 1, 1)[0] == 5  # the last one the server received
    receipt = next(m for m in mails(engine, ALICE) if "bid 6" in m["body"])
    # the player must not be told that bid 6 is now their bid
    assert "replaces your earlier move (bid 5)" not in receipt["body"]


# -- deadlines -------------------------------------------------------------------------


def test_a_bid_received_after_the_deadline_is_refused_and_changes_nothing(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    deadline = from_iso(engine.status(1)["phase"]["deadline"])
    clock.advance(days=4)
    before, sent = snapshot(engine), last_id(engine)
    outcome = send(
        engine, clock, ALICE, "bid 7", received=deadline + timedelta(seconds=1), message_id="<late@example.net>"
    )
    assert outcome.code == "refused"
    assert snapshot(engine) == before
    (answer,) = mails(engine, after=sent)
    assert answer["recipients"] == [ALICE]
    assert answer["message"]["In-Reply-To"] == "<late@example.net>"
    assert f"deadline of Round 1 of 13 ({show(deadline)})" in " ".join(answer["body"].split())
    # the tick then fills every bid at random, alice's too
    assert engine.tick() == ["resolved game 1 Round 1 of 13"]
    assert {m["source"] for m in engine.store.final_moves(1, 1).values()} == {"random"}


def test_a_bid_received_before_the_deadline_counts_though_read_after_it(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    deadline = from_iso(engine.status(1)["phase"]["deadline"])
    clock.advance(days=3, hours=5)  # the referee reads its mail late; no tick yet
    outcome = send(engine, clock, ALICE, "bid 8", received=deadline - timedelta(minutes=1))
    assert outcome.code == "move"
    assert resolved_rounds(engine) == []  # reading mail never enforces a deadline: tick does
    engine.tick()  # the deadline has passed: the round resolves, random bids for the others
    assert resolved_rounds(engine) == [1]
    assert counted(engine, 1, 1)[0] == 8
    sources = {s: m["source"] for s, m in engine.store.final_moves(1, 1).items()}
    assert sources == {0: "mail", 1: "random", 2: "random"}


def test_the_deadline_is_the_last_moment_a_bid_counts(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    deadline = from_iso(engine.status(1)["phase"]["deadline"])
    clock.advance(days=3)  # now is the deadline; no tick has run
    assert send(engine, clock, ALICE, "bid 8", received=deadline).code == "move"
    engine.tick()
    assert counted(engine, 1, 1)[0] == 8


def test_a_mail_received_before_the_round_opened_is_refused(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    clock.advance(hours=1)
    for address in PLAYERS:
        send(engine, clock, address, "bid 2")
    assert engine.status(1)["phase"]["number"] == 2
    before = snapshot(engine)
    # received while round 1 was open, read only now that round 2 is
    outcome = send(engine, clock, ALICE, "bid 9", received=START + timedelta(minutes=30))
    assert outcome.code == "refused"
    assert snapshot(engine) == before


def test_the_last_owed_bid_resolves_the_round_at_once(engine, clock):
    engine.new_game("pure-skill", PLAYERS, notify=Notify.EVERY)  # (TURNS folds the receipt: test_notify.py)
    send(engine, clock, ALICE, "bid 4")
    send(engine, clock, BOB, "bid 5")
    assert resolved_rounds(engine) == []
    before = last_id(engine)
    clock.advance(minutes=10)
    send(engine, clock, CAROL, "bid 6", message_id="<last@example.net>")
    assert resolved_rounds(engine) == [1]
    status = engine.status(1)
    assert status["phase"]["number"] == 2
    assert from_iso(status["phase"]["deadline"]) == clock() + timedelta(days=3)
    new = mails(engine, after=before)
    # carol's receipt (the reply to her mail; queued once her mail is fully handled) ...
    (receipt,) = [m for m in new if m["message"]["In-Reply-To"] == "<last@example.net>"]
    assert receipt["recipients"] == [CAROL]
    assert "Round 1" in receipt["subject"]
    assert "the round is resolved" in receipt["body"]
    # ... and every player gets the result of round 1 and a prompt for round 2
    for address in PLAYERS:
        theirs = [m for m in new if m["recipients"] == [address] and m is not receipt]
        assert len(theirs) == 2, [m["subject"] for m in theirs]
        result, prompt = theirs
        assert "Round 1" in result["subject"] and not _HAND.search(result["body"])
        for bidder, card in zip(PLAYERS, ("4", "5", "6"), strict=True):
            assert re.search(rf"^\s*{re.escape(bidder)}\s+{card}\b", result["body"], re.M)
        assert "Round 2" in prompt["subject"] and _HAND.search(prompt["body"])
    assert engine.tick() == []


def test_a_settle_window_keeps_the_round_open_for_changes(engine, clock):
    engine.new_game("pure-skill", PLAYERS, settle=timedelta(minutes=30))
    for address, card in zip(PLAYERS, ("4", "5", "6"), strict=True):
        send(engine, clock, address, f"bid {card}")
    assert resolved_rounds(engine) == []
    assert engine.status(1)["phase"]["waiting_for"] == []
    clock.advance(minutes=20)
    assert engine.tick() == []
    assert resolved_rounds(engine) == []
    assert send(engine, clock, ALICE, "bid 10").code == "replaced"
    assert resolved_rounds(engine) == []
    clock.advance(minutes=11)  # 31 minutes after the last owed bid
    assert engine.tick() == ["resolved game 1 Round 1 of 13"]
    assert counted(engine, 1, 1) == {0: 10, 1: 5, 2: 6}


def test_a_change_after_the_settle_window_is_refused(engine, clock):
    engine.new_game("pure-skill", PLAYERS, settle=timedelta(minutes=30))
    for address in PLAYERS:
        send(engine, clock, address, "bid 5")
    clock.advance(minutes=40)  # the window closed, but no tick has run yet
    assert send(engine, clock, ALICE, "bid K").code == "refused"
    engine.tick()
    assert counted(engine, 1, 1) == {0: 5, 1: 5, 2: 5}


def test_the_deadline_is_three_days_unless_the_game_or_config_says_otherwise(tmp_path, clock):
    plain = Engine(Store(tmp_path / "a.db"), Config(address="referee@example.org"), clock)
    game = plain.new_game("pure-skill", PLAYERS)
    assert from_iso(plain.status(game)["phase"]["deadline"]) == START + timedelta(days=3)
    game = plain.new_game("pure-skill", PLAYERS, deadline=timedelta(hours=2))
    assert from_iso(plain.status(game)["phase"]["deadline"]) == START + timedelta(hours=2)
    # the prompt tells the player the same deadline, in UTC
    prompt = [m for m in mails(plain, ALICE) if "[pure-skill-2 " in m["subject"]][-1]
    assert show(START + timedelta(hours=2)) in prompt["body"]
    configured = Config(address="referee@example.org", deadline=timedelta(hours=36))
    other = Engine(Store(tmp_path / "b.db"), configured, clock)
    game = other.new_game("pure-skill", PLAYERS)
    assert from_iso(other.status(game)["phase"]["deadline"]) == START + timedelta(hours=36)
    game = other.new_game("pure-skill", PLAYERS, deadline=timedelta(minutes=90))
    assert from_iso(other.status(game)["phase"]["deadline"]) == START + timedelta(minutes=90)
    # each later round counts its deadline from when it opens
    clock.advance(hours=5)
    other.tick()
    assert from_iso(other.status(game)["phase"]["deadline"]) == clock() + timedelta(minutes=90)


def test_tick_is_idempotent(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    clock.advance(days=3)
    assert engine.tick() == ["resolved game 1 Round 1 of 13"]
    state, sent = snapshot(engine), last_id(engine)
    assert engine.tick() == []
    assert snapshot(engine) == state and last_id(engine) == sent


def test_a_zero_or_negative_deadline_is_refused(engine):
    with pytest.raises(EngineError):
        engine.new_game("pure-skill", PLAYERS, deadline=timedelta(0))
    assert engine.store.games() == []


# -- bots and leaving (rule 8) ---------------------------------------------------------


def test_a_game_of_bots_plays_itself_to_the_end(engine):
    game = engine.new_game("pure-skill", [], bots=3)
    status = engine.status(game)
    assert status["state"] == "finished"
    assert status["winner"] is None  # bots are not players (R2)
    assert all(p["bot"] for p in status["players"])
    assert hashlib.sha256(bytes.fromhex(status["seed"])).hexdigest() == status["seed_commitment"]
    assert resolved_rounds(engine, game) == list(range(1, 14))
    assert engine.store.outbox() == []  # nobody to write to


def test_resigning_makes_the_seat_a_bot_that_bids_at_once(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    send(engine, clock, BOB, "bid 3")
    before = last_id(engine)
    engine.resign(1, ALICE)
    moves = engine.store.final_moves(1, 1)
    assert moves[0]["source"] == "bot"
    status = engine.status(1)
    assert status["players"][0]["bot"] is True
    assert status["phase"]["waiting_for"] == [CAROL]
    new = mails(engine, after=before)
    assert [m for m in new if m["recipients"] == [ALICE]], "no confirmation to alice"
    confirmation = [m for m in new if m["recipients"] == [ALICE]]
    assert len(confirmation) == 1
    for address in (BOB, CAROL):
        told = [m for m in new if m["recipients"] == [address]]
        assert len(told) == 1 and ALICE in told[0]["body"]
    # alice gets nothing more about the game
    before = last_id(engine)
    send(engine, clock, CAROL, "bid 4")
    assert resolved_rounds(engine) == [1]
    assert mails(engine, ALICE, after=before) == []
    assert {m["recipients"][0] for m in mails(engine, after=before)} == {BOB, CAROL}


def test_a_bid_made_before_resigning_stands(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    send(engine, clock, ALICE, "bid Q")
    engine.resign(1, ALICE)
    assert engine.store.final_moves(1, 1)[0]["source"] == "mail"
    send(engine, clock, BOB, "bid 2")
    send(engine, clock, CAROL, "bid 3")
    assert counted(engine, 1, 1)[0] == 12
    # from round 2 on the bot bids
    assert engine.store.final_moves(1, 2)[0]["source"] == "bot"


def test_resigning_the_last_owed_bid_resolves_the_round(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    send(engine, clock, BOB, "bid 2")
    send(engine, clock, CAROL, "bid 3")
    engine.resign(1, ALICE)
    assert resolved_rounds(engine) == [1]


def test_a_resigned_players_mail_is_refused(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    engine.resign(1, ALICE)
    for subject in ("Re: [pure-skill-1] Round 1 of 13", "bid 4"):
        before, sent = snapshot(engine), last_id(engine)
        outcome = send(engine, clock, ALICE, "bid 4", subject=subject)
        assert outcome.code == "refused"
        assert snapshot(engine) == before
        (answer,) = mails(engine, after=sent)
        assert answer["recipients"] == [ALICE]
        assert "You left game 1" in answer["body"]


def test_resign_names_a_seat_that_is_played(engine):
    engine.new_game("pure-skill", PLAYERS)
    with pytest.raises(EngineError):
        engine.resign(1, DAVE)
    engine.resign(1, ALICE)
    with pytest.raises(EngineError):
        engine.resign(1, ALICE)
    with pytest.raises(EngineError):
        engine.resign(2, BOB)


def _play_to_the_end(engine, clock, choose) -> None:
    """Each round: ``choose(number, state, bot_card) -> {seat: card}`` for the humans."""
    while engine.status(1)["state"] == "running":
        number = engine.status(1)["phase"]["number"]
        state = engine.table(1).state
        bot = engine.store.final_moves(1, number)[0]  # a bot bids when the round opens
        assert bot["source"] == "bot"
        for seat, card in choose(number, state, card_value(bot["move"].split()[1])).items():
            send(engine, clock, PLAYERS[seat], f"bid {card_name(card)}")


def test_a_bot_with_the_top_total_does_not_win(engine, clock, seeds):
    """alice leaves at once; bob and carol shadow each other so neither takes a
    prize, except once: bob's King takes the smallest prize he can, and carol's
    King later ties the bot's.  The bot ends on top; bob wins (R2)."""
    seeds.fixed = bytes(range(32))
    engine.new_game("pure-skill", PLAYERS)
    engine.resign(1, ALICE)
    played = {"bob king": False}

    def choose(number, state, bot):
        common = sorted(state.hands[1] & state.hands[2] - {12, 13})
        if bot == 13:
            return {1: 12, 2: 13}
        if not played["bob king"] and (state.prize <= min(state.spades, default=13) or number == 12):
            played["bob king"] = True
            return {1: 13, 2: 12}
        return {1: common[0], 2: common[0]}

    _play_to_the_end(engine, clock, choose)
    status = engine.status(1)
    scores = {p["address"]: p["score"] for p in status["players"]}
    assert status["players"][0]["bot"]
    assert scores[ALICE] > scores[BOB] > scores[CAROL] == 0, scores
    assert status["winner"] == BOB
    final = mails(engine, BOB)[-1]
    assert "Game over" in final["subject"] and BOB in final["subject"]


def test_a_bot_on_top_and_humans_tied_means_no_winner(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    engine.resign(1, ALICE)

    def choose(number, state, bot):  # bob and carol always bid the same card
        low = min(state.hands[1])
        return {1: low, 2: low}

    _play_to_the_end(engine, clock, choose)
    status = engine.status(1)
    scores = [p["score"] for p in status["players"]]
    assert scores[1] == scores[2] == 0
    assert scores[0] > 0  # fails only if the bot bid A, 2, 3 ... K in order
    assert status["winner"] is None


# -- logs -----------------------------------------------------------------------------------


def test_logs_at_info_never_show_a_bid(engine, clock, caplog):
    caplog.set_level(logging.INFO)
    engine.new_game("pure-skill", PLAYERS, settle=timedelta(minutes=5))
    send(engine, clock, ALICE, "bid 9")
    send(engine, clock, ALICE, "bid queen")  # a replacement
    send(engine, clock, BOB, "bid 14")  # an error
    send(engine, clock, BOB, "bid 2")
    engine.resign(1, CAROL)  # a bot's bid
    clock.advance(minutes=6)
    engine.tick()
    clock.advance(days=3)
    engine.tick()  # random bids at the deadline
    send(engine, clock, ALICE, "bid 4")  # refused: round 2 resolved
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert any("resolved" in line for line in lines)  # the log is live
    assert [line for line in lines if _BID_TEXT.search(line)] == []


# -- messages that are not moves ----------------------------------------------------------


@pytest.mark.parametrize(
    "sender, subject, body",
    [
        pytest.param(DAVE, "hello", "Can I play?", id="unknown sender"),
        pytest.param(DAVE, "Re: [pure-skill-1] Round 1 of 13", "bid 5", id="unknown sender, tag"),
        pytest.param(ALICE, "Re: [pure-skill-1] Round 1 of 13", "what is this?", id="gibberish"),
        pytest.param(ALICE, "Re: [pure-skill-1] Round 1 of 13", "bid 14", id="no such card"),
        pytest.param(DAVE, "Re: [pure-skill-42] Round 1 of 13", "bid 5", id="unknown game tag"),
    ],
)
def test_a_message_that_is_no_move_changes_nothing_and_gets_one_reply(engine, clock, sender, subject, body):
    engine.new_game("pure-skill", PLAYERS)
    before, sent = snapshot(engine), last_id(engine)
    # a player replies to their game mail; a stranger can only write to the plain address
    post = send if sender in PLAYERS else write
    outcome = post(engine, clock, sender, body, subject=subject, message_id="<q1@example.net>")
    assert outcome.code == "refused"
    assert snapshot(engine) == before
    (answer,) = mails(engine, after=sent)
    assert answer["recipients"] == [sender]
    assert answer["message"]["To"] == sender
    assert answer["message"]["In-Reply-To"] == "<q1@example.net>"
    assert "<q1@example.net>" in answer["message"]["References"]
    assert answer["message"]["Auto-Submitted"] == "auto-replied"
    assert answer["subject"].lower().startswith("re:")
    assert answer["body"].strip()
    # the same message again is a duplicate: no second reply
    again = post(engine, clock, sender, body, subject=subject, message_id="<q1@example.net>")
    assert again.code == "duplicate"
    assert last_id(engine) == answer["id"]


def test_an_error_reply_lists_the_moves_the_player_can_make(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    send(engine, clock, ALICE, "bid 7")
    send(engine, clock, BOB, "bid 2")
    send(engine, clock, CAROL, "bid 3")
    send(engine, clock, ALICE, "bid 7", subject="Re: [pure-skill-1] Round 2 of 13")
    answer = mails(engine, ALICE)[-1]
    assert answer["message"]["Auto-Submitted"] == "auto-replied"
    listed = re.search(r"^.*\bbid A\b.*$", answer["body"], re.M)
    assert listed, answer["body"]
    assert "bid 7" not in listed[0] and "bid 6" in listed[0] and "bid 8" in listed[0]


@pytest.mark.parametrize(
    "sender, headers",
    [
        pytest.param(ALICE, {"Auto-Submitted": "auto-replied"}, id="auto-reply"),
        pytest.param(ALICE, {"Auto-Submitted": "auto-generated"}, id="auto-generated"),
        pytest.param(ALICE, {"Auto-Submitted": "(vacation) auto-replied"}, id="comment first"),
        pytest.param(ALICE, {"Auto-Submitted": "(out (of) office)auto-replied"}, id="nested comment"),
        pytest.param(ALICE, {"Auto-Submitted": "auto-replied; owner-email=a@example.org"}, id="with a parameter"),
        pytest.param(ALICE, {"Return-Path": "<>"}, id="bounce, empty return path"),
        pytest.param("MAILER-DAEMON@mx.example.org", {}, id="bounce from MAILER-DAEMON"),
        pytest.param(DAVE, {"List-Id": "<players.lists.example.org>"}, id="list mail"),
        pytest.param(ALICE, {"Precedence": "bulk"}, id="bulk"),
        pytest.param("referee@example.org", {}, id="our own address"),
        pytest.param("Referee <REFEREE@example.org>", {}, id="our own address, display name"),
    ],
)
def test_mail_that_must_not_be_answered_gets_no_reply(engine, clock, sender, headers):
    engine.new_game("pure-skill", PLAYERS)
    before, sent = snapshot(engine), last_id(engine)
    # even at alice's private reply address (an auto-reply to her prompt, say)
    outcome = write(engine, clock, sender, "bid 5", headers=headers, to=seat_address(engine, ALICE))
    assert outcome.code == "ignored"
    assert snapshot(engine) == before
    assert last_id(engine) == sent


@pytest.mark.parametrize("value", ["no", "no (a person wrote this)", "(typed) No"])
def test_mail_marked_auto_submitted_no_is_a_persons_and_answered(engine, clock, value):
    engine.new_game("pure-skill", PLAYERS)
    sent = last_id(engine)
    outcome = write(engine, clock, ALICE, "bid 5", headers={"Auto-Submitted": value}, to=seat_address(engine, ALICE))
    assert outcome.code == "move"
    assert [m["recipients"] for m in mails(engine, after=sent)] == [[ALICE]]  # her receipt


def test_the_same_message_is_handled_once(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    raw = reply(engine, ALICE, "bid 5", received=clock(), message_id="<once@example.net>")
    assert engine.ingest(raw).code == "move"
    sent = last_id(engine)
    assert engine.ingest(raw).code == "duplicate"
    # the same Message-ID with other bytes (a copy from another folder) too
    assert (
        engine.ingest(reply(engine, ALICE, "bid 9", received=clock(), message_id="<once@example.net>")).code
        == "duplicate"
    )
    assert len(engine.store.moves(1)) == 1
    assert last_id(engine) == sent
    assert len(engine.store.messages()) == 1


def test_a_message_without_message_id_is_handled_once_too(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    raw = reply(engine, ALICE, "bid 5", received=clock())
    raw = re.sub(rb"Message-ID: [^\r\n]*\r\n", b"", raw)
    assert b"Message-ID" not in raw
    assert engine.ingest(raw).code == "move"
    assert engine.ingest(raw).code == "duplicate"
    assert len(engine.store.moves(1)) == 1


def test_a_move_in_the_subject_counts_when_the_body_has_none(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    outcome = send(engine, clock, ALICE, "", subject="Re: [pure-skill-1] bid jack")
    assert outcome.code == "move"
    send(engine, clock, BOB, "\n\n> bid 3\n> quoted\n", subject="bid 4")
    send(engine, clock, CAROL, "bid 5")
    assert counted(engine, 1, 1) == {0: 11, 1: 4, 2: 5}


def test_quoted_lines_never_count(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    before, sent = snapshot(engine), last_id(engine)
    outcome = send(engine, clock, ALICE, "> bid 3\n>> bid 4\n")
    assert outcome.code == "refused"
    assert snapshot(engine) == before
    assert len(mails(engine, after=sent)) == 1
    # own text below a quote: the own line counts, the quoted one does not
    assert send(engine, clock, ALICE, "> bid 3\n\nbid 9\n").code == "move"
    assert engine.store.final_moves(1, 1)[0]["move"] == "bid 9"


def test_the_signature_and_quoted_reply_are_not_read(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    body = "-- \nbid 3\n"
    assert send(engine, clock, ALICE, body).code == "refused"
    body = "Hi!\n-----Original Message-----\nbid 3\n"  # Outlook: the original, unquoted
    assert send(engine, clock, ALICE, body).code == "refused"
    assert engine.store.moves(1) == []


def test_a_greeting_above_the_bid_does_not_stop_it(engine, clock):
    """Every own line is read: the bid below "Hi," counts, and the one reply
    answers it alone ("Hi," and "Thanks, Alice" beside a move need no answer)."""
    engine.new_game("pure-skill", PLAYERS)
    sent = last_id(engine)
    outcome = send(engine, clock, ALICE, "Hi,\nbid 5\nThanks, Alice\n")
    assert outcome.code == "move"
    assert [m["move"] for m in engine.store.moves(1)] == ["bid 5"]
    (answer,) = mails(engine, after=sent)
    body = answer["body"]
    assert "> Hi," not in body and "> Thanks, Alice" not in body and "Not done" not in body
    assert "Moves you can make now" not in body  # the mail made a move: no list of moves
    assert "> bid 5\nYour bid for Round 1 of 13 is in: bid 5." in body


def test_a_bottom_posted_bid_below_the_quote_counts(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    body = "On Sat, 21 Nov 2026, Referee <referee@example.org> wrote:\n> bid 3\n\nbid 4\n"
    assert send(engine, clock, ALICE, body).code == "move"
    assert [m["move"] for m in engine.store.moves(1)] == ["bid 4"]


def test_a_move_for_a_game_where_the_sender_has_no_seat_is_refused(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    others = [DAVE, "erin@example.org", "frank@example.org"]
    engine.new_game("pure-skill", others)
    before = (snapshot(engine, 1), snapshot(engine, 2))
    # the tag of a game she does not play, sent to the plain address: no token,
    # so nothing counts and alice (whose From it bears) is told
    sent = last_id(engine)
    outcome = write(
        engine, clock, ALICE, "bid 5", subject="Re: [pure-skill-2] Round 1 of 13", message_id="<tag2@example.net>"
    )
    assert outcome.code == "refused"
    assert (snapshot(engine, 1), snapshot(engine, 2)) == before
    assert_notice_only(engine, sent, ALICE, "<tag2@example.net>")
    # dave's reply address for game 2 (she saw one of his mails), from alice:
    # refused too, and only dave, the token's owner, is told
    sent = last_id(engine)
    outcome = write(engine, clock, ALICE, "bid 5", to=seat_address(engine, DAVE, 2), message_id="<dave2@example.net>")
    assert outcome.code == "refused"
    assert (snapshot(engine, 1), snapshot(engine, 2)) == before
    notice = assert_notice_only(engine, sent, DAVE, "<dave2@example.net>")
    assert ALICE in notice["body"]  # dave learns who used his reply address
    assert notice["subject"].startswith("[pure-skill-2] ")  # the game's tag, without his token


def test_the_game_is_found_by_the_reply_token(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    engine.new_game("pure-skill", [ALICE, "erin@example.org", "frank@example.org"])
    # by the token in the reply address the game's mail to her carries in Reply-To
    outcome = send(engine, clock, ALICE, "bid 5", game=2, subject="my bid")
    assert outcome.code == "move" and outcome.game_id == 2
    receipt = mails(engine, ALICE)[-1]
    assert receipt["subject"] == f"Re: {engine.table(2).tag(0)} my bid"
    assert str(receipt["message"]["Reply-To"]) == seat_address(engine, ALICE, 2)
    # or by the token in the subject tag alone, sent to the plain address
    token = engine.table(1).seats[0]["token"]
    outcome = write(engine, clock, ALICE, "bid 6", subject=f"Re: [pure-skill-1 {token}] my bid")
    assert outcome.code == "move" and outcome.game_id == 1
    assert engine.store.final_moves(1, 1)[0]["move"] == "bid 6"
    assert engine.store.final_moves(2, 1)[0]["move"] == "bid 5"
    # the old per-game plus-address and the bare game tag prove nothing: refused,
    # and alice is told how to reply instead (one such notice an hour at most)
    for number, (to, subject) in enumerate(
        (("referee+pure-skill-2@example.org", "my bid"), ("referee@example.org", "Re: [pure-skill-2] my bid"))
    ):
        clock.advance(minutes=61)
        before, sent = (snapshot(engine, 1), snapshot(engine, 2)), last_id(engine)
        outcome = write(engine, clock, ALICE, "bid 7", to=to, subject=subject, message_id=f"<old-{number}@example.net>")
        assert outcome.code == "refused"
        assert (snapshot(engine, 1), snapshot(engine, 2)) == before
        notice = assert_notice_only(engine, sent, ALICE, f"<old-{number}@example.net>")
        assert "private reply address" in notice["body"]
        assert "[pure-skill-" not in notice["subject"]  # two games: the notice names none
    sent = last_id(engine)
    assert write(engine, clock, ALICE, "bid 7", subject="my bid").code == "refused"
    assert last_id(engine) == sent  # within the hour: no second notice
    # bob plays one game only, but his From alone is no proof either
    sent = last_id(engine)
    outcome = write(engine, clock, BOB, "bid 6", subject="my bid", message_id="<bob@example.net>")
    assert outcome.code == "refused" and engine.store.final_moves(1, 1).get(1) is None
    notice = assert_notice_only(engine, sent, BOB, "<bob@example.net>")
    # the notice names his game but carries no token: a reply to it proves nothing
    assert notice["subject"].startswith(engine.table(1).tag() + " ")
    assert notice["message"]["Reply-To"] is None
    assert engine.table(1).seats[1]["token"] not in notice["raw"].decode()


def test_a_players_address_matches_whatever_its_case(engine, clock):
    engine.new_game("pure-skill", PLAYERS)
    outcome = write(engine, clock, "Alice Liddell <ALICE@Example.ORG>", "bid 5", to=seat_address(engine, ALICE).upper())
    assert outcome.code == "move"
    assert mails(engine)[-1]["recipients"] == [ALICE]
