"""The optional DKIM requirement: a seat's command also needs the trusted
server's dkim=pass for the From's domain (issue 4, item 3)."""

from __future__ import annotations

from conftest import PLAYERS, FakeClock, reply

from referee.config import Config
from referee.engine import Engine
from referee.store import Store

TRUSTED = "mx.example.org"


def _engine(tmp_path) -> Engine:
    config = Config(
        address="referee@example.org",
        database=tmp_path / "games.db",
        reminder=None,
        outage_gap=None,
        dkim_authserv_id=TRUSTED,
    )
    engine = Engine(Store(config.database), config, FakeClock())
    engine.new_game("pure-skill", PLAYERS)
    return engine


def _bid(engine: Engine, results: str | None, card: str = "5") -> str:
    headers = {"Authentication-Results": results} if results else {}
    return engine.ingest(reply(engine, PLAYERS[0], f"bid {card}", headers=headers)).code


def test_a_passing_signature_from_the_trusted_server_lets_the_move_count(tmp_path):
    engine = _engine(tmp_path)
    results = (
        f"{TRUSTED}; spf=pass smtp.mailfrom=example.org; dkim=pass (2048-bit key) header.d=example.org header.s=s1"
    )
    assert _bid(engine, results) == "move"
    assert [m["move"] for m in engine.store.moves(1)] == ["bid 5"]


def test_a_parent_domain_signature_is_aligned(tmp_path):
    engine = _engine(tmp_path)
    alice = "alice@mail.example.org"
    # a seat whose address is in a subdomain of the signing domain
    engine.store.db["seats"].update((1, 0), {"address": alice})
    raw = reply(
        engine, alice, "bid 5", headers={"Authentication-Results": f"{TRUSTED}; dkim=pass header.d=example.org"}
    )
    assert engine.ingest(raw).code == "move"


def test_without_the_trusted_servers_pass_nothing_changes_and_the_player_is_told(tmp_path):
    engine = _engine(tmp_path)
    cases = [
        None,  # no verdict at all
        "evil.example; dkim=pass header.d=example.org",  # another server's (or the sender's own) header
        f"{TRUSTED}; dkim=fail header.d=example.org",
        f"{TRUSTED}; dkim=pass header.d=evil.example",  # signed, but not by the From's domain
        f"{TRUSTED}; dkim=pass header.d=ample.org",  # a suffix, but not a parent domain
        f"{TRUSTED}.evil.example; dkim=pass header.d=example.org",
        f"{TRUSTED}; dkim=pass header.d=org",  # a public suffix signs for no one under it
    ]
    for number, results in enumerate(cases):
        engine.clock.advance(minutes=61)  # such notices go out at most once an hour
        before = len(engine.store.outbox(None))
        assert _bid(engine, results, card=str(number + 2)) == "refused", results
        notices = engine.store.outbox(None)[before:]
        assert [n["recipients"] for n in notices] == [[PLAYERS[0]]]
        assert "DKIM" in notices[0]["raw"].decode()
    assert engine.store.moves(1) == []


def test_only_the_topmost_verdict_counts(tmp_path):
    """Our server writes its verdict on top; one further down came with the
    mail, whoever's name it bears."""
    engine = _engine(tmp_path)
    forged = f"{TRUSTED}; dkim=pass header.d=example.org"
    raw = reply(engine, PLAYERS[0], "bid 5", headers={"Authentication-Results": forged})
    ours = f"Authentication-Results: {TRUSTED}; dkim=fail header.d=example.org\r\n".encode()
    assert engine.ingest(ours + raw).code == "refused"
    assert engine.store.moves(1) == []


def test_a_signature_by_a_registrable_domain_under_a_two_label_suffix_counts(tmp_path):
    engine = _engine(tmp_path)
    alice = "alice@mail.example.co.uk"
    engine.store.db["seats"].update((1, 0), {"address": alice})
    for card, signer in (("5", "co.uk"), ("6", "example.co.uk")):
        results = f"{TRUSTED}; dkim=pass header.d={signer}"
        engine.ingest(reply(engine, alice, f"bid {card}", headers={"Authentication-Results": results}))
    assert [m["move"] for m in engine.store.moves(1)] == ["bid 6"]
