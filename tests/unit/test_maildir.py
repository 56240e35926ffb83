"""A local Maildir as the mail source: what is read, in which order, with
which receipt time, and how handled mail is filed away."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from referee.mail.maildir import MaildirSource, delivery_time
from referee.mail.source import EXCERPT, Received, SourceError

T0 = 1_700_000_000  # 2023-11-14 22:13:20 UTC


def maildir(root: Path) -> Path:
    for sub in ("tmp", "new", "cur"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    return root


def deliver(box: Path, name: str, raw: bytes | None = None, sub: str = "new") -> bytes:
    raw = raw if raw is not None else f"Subject: {name}\r\n\r\nbid 5\r\n".encode()
    (box / sub / name).write_bytes(raw)
    return raw


def fetch(source: MaildirSource) -> list[Received]:
    return asyncio.run(source.fetch())


def done(source: MaildirSource, message: Received, quarantine: bool = False) -> None:
    asyncio.run(source.done([message], quarantine=quarantine))


def utc(seconds: int, microsecond: int = 0) -> datetime:
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=microsecond)


@pytest.fixture
def box(tmp_path: Path) -> Path:
    return maildir(tmp_path / "Maildir")


def test_delivery_order_oldest_first_ties_by_name(box):
    deliver(box, f"{T0 + 20}.1_0.mx")
    deliver(box, f"{T0}.b.mx")
    deliver(box, f"{T0}.a.mx")
    deliver(box, f"{T0 + 5}.M999P1.mx", sub="cur")
    deliver(box, f"{T0 + 5}.M000001P1.mx")
    refs = [m.ref for m in fetch(MaildirSource(box))]
    assert refs == [
        f"{T0}.a.mx",
        f"{T0}.b.mx",
        f"{T0 + 5}.M000001P1.mx",
        f"{T0 + 5}.M999P1.mx",
        f"{T0 + 20}.1_0.mx",
    ]
    assert refs == [m.ref for m in fetch(MaildirSource(box))]  # stable


def test_receipt_time_from_the_name(box):
    deliver(box, f"{T0}.12345_1.mx.example.org")
    deliver(box, f"{T0 + 1}.M123456P4321Q7.mx.example.org")
    deliver(box, f"{T0 + 2}.M150150P12345V00000000000000FEI00000001_0.mx,S=44:2,S", sub="cur")
    deliver(box, f"{T0 + 3}.#2M42P7.mx")
    os.utime(box / "new" / f"{T0}.12345_1.mx.example.org", (T0 + 999, T0 + 999))
    received = [m.received_at for m in fetch(MaildirSource(box))]
    assert received == [utc(T0), utc(T0 + 1, 123456), utc(T0 + 2, 150150), utc(T0 + 3, 42)]
    assert all(moment.tzinfo is UTC for moment in received)


def test_receipt_time_from_mtime_when_the_name_has_none(box):
    raw = b"Received: from x by y; Tue, 2 Jan 2001 00:00:00 +0000\r\nDate: Mon, 1 Jan 2001 00:00:00 +0000\r\n\r\nhi\r\n"
    deliver(box, "no-timestamp-here", raw)
    os.utime(box / "new" / "no-timestamp-here", (T0, T0 + 0.25))
    (message,) = fetch(MaildirSource(box))
    assert message.received_at == utc(T0, 250000)
    assert message.received_at.tzinfo is UTC


def test_delivery_time_names():
    assert delivery_time(f"{T0}.M5P9.host:2,S") == utc(T0, 5)
    assert delivery_time(f"{T0}.P9M1234567.host") == utc(T0)  # not microseconds: 7 digits
    assert delivery_time("host.M5P9") is None
    assert delivery_time(str(T0)) is None
    assert delivery_time("9" * 40 + ".x.host") is None  # past datetime's range


def test_exact_bytes_come_back(box):
    raw = b"From: a@example.net\r\nSubject: =?utf-8?q?caf=C3=A9?=\r\n\r\n\xff\x00bid 5\n\r\nend"
    deliver(box, f"{T0}.x.mx", raw)
    (message,) = fetch(MaildirSource(box))
    assert message.raw == raw


def test_fetch_changes_nothing(box):
    deliver(box, f"{T0}.x.mx")
    deliver(box, f"{T0 + 1}.y.mx:2,", sub="cur")
    before = sorted(p.relative_to(box) for p in box.rglob("*"))
    fetch(MaildirSource(box))
    fetch(MaildirSource(box))
    assert sorted(p.relative_to(box) for p in box.rglob("*")) == before


def test_done_files_into_processed_and_it_is_not_fetched_again(box):
    raw = deliver(box, f"{T0}.x.mx")
    deliver(box, f"{T0 + 1}.y.mx")
    source = MaildirSource(box)
    first, second = fetch(source)
    done(source, first)
    filed = box / ".processed" / "cur" / f"{T0}.x.mx:2,S"
    assert filed.read_bytes() == raw
    assert not (box / "new" / f"{T0}.x.mx").exists()
    assert (box / ".processed" / "maildirfolder").exists()
    assert all((box / ".processed" / sub).is_dir() for sub in ("tmp", "new"))
    assert [m.ref for m in fetch(source)] == [second.ref]
    assert [m.ref for m in fetch(MaildirSource(box))] == [second.ref]


def test_done_keeps_an_existing_info_part(box):
    deliver(box, f"{T0}.x.mx:2,RS", sub="cur")
    source = MaildirSource(box)
    (message,) = fetch(source)
    assert message.ref == f"{T0}.x.mx"
    done(source, message)
    assert os.listdir(box / ".processed" / "cur") == [f"{T0}.x.mx:2,RS"]


def test_quarantine(box):
    raw = deliver(box, f"{T0}.x.mx")
    source = MaildirSource(box, processed="Done", quarantine="Bad")
    (message,) = fetch(source)
    done(source, message, quarantine=True)
    assert (box / ".Bad" / "cur" / f"{T0}.x.mx:2,S").read_bytes() == raw
    assert not (box / ".Done").exists()
    assert fetch(source) == []


def test_done_twice_is_harmless(box):
    raw = deliver(box, f"{T0}.x.mx")
    source = MaildirSource(box)
    (message,) = fetch(source)
    done(source, message)
    done(source, message)
    done(MaildirSource(box), message)  # a later run that re-read it before a crash
    done(source, message, quarantine=True)
    assert os.listdir(box / ".processed" / "cur") == [f"{T0}.x.mx:2,S"]
    assert (box / ".processed" / "cur" / f"{T0}.x.mx:2,S").read_bytes() == raw
    assert not (box / ".quarantine" / "cur").exists() or os.listdir(box / ".quarantine" / "cur") == []


def test_done_finds_a_message_a_reader_moved_to_cur(box):
    raw = deliver(box, f"{T0}.x.mx")
    source = MaildirSource(box)
    (message,) = fetch(source)
    os.rename(box / "new" / f"{T0}.x.mx", box / "cur" / f"{T0}.x.mx:2,F")
    done(source, message)
    assert (box / ".processed" / "cur" / f"{T0}.x.mx:2,F").read_bytes() == raw


def test_done_never_overwrites_an_already_filed_name(box):
    old = deliver(box, f"{T0}.x.mx")
    source = MaildirSource(box)
    done(source, fetch(source)[0])
    new = deliver(box, f"{T0}.x.mx", b"Subject: another\r\n\r\nbid 7\r\n")
    done(source, fetch(source)[0])
    cur = box / ".processed" / "cur"
    assert sorted(p.read_bytes() for p in cur.iterdir()) == sorted([old, new])


def test_new_and_cur_both_read(box):
    deliver(box, f"{T0}.a.mx")
    deliver(box, f"{T0 + 1}.b.mx:2,S", sub="cur")
    deliver(box, f"{T0 + 2}.c.mx:2,", sub="cur")
    messages = fetch(MaildirSource(box))
    assert [m.ref for m in messages] == [f"{T0}.a.mx", f"{T0 + 1}.b.mx", f"{T0 + 2}.c.mx"]


def test_a_second_source_does_not_hand_out_filed_mail(box):
    deliver(box, f"{T0}.a.mx")
    deliver(box, f"{T0 + 1}.b.mx")
    one, two = MaildirSource(box), MaildirSource(box)
    a, b = fetch(one)
    done(one, a)
    assert [m.ref for m in fetch(two)] == [b.ref]
    done(two, b, quarantine=True)
    done(one, b)  # the first source, late: already filed, nothing happens
    assert fetch(one) == fetch(two) == []
    assert os.listdir(box / ".quarantine" / "cur") == [f"{T0 + 1}.b.mx:2,S"]
    assert os.listdir(box / ".processed" / "cur") == [f"{T0}.a.mx:2,S"]


def test_missing_maildir_raises_source_error(tmp_path):
    path = tmp_path / "nowhere"
    with pytest.raises(SourceError) as caught:
        fetch(MaildirSource(path))
    assert str(path) in str(caught.value)
    assert "\n" not in str(caught.value)
    assert not path.exists()


def test_maildir_without_cur_raises_source_error(tmp_path):
    path = tmp_path / "half"
    (path / "new").mkdir(parents=True)
    with pytest.raises(SourceError, match="half"):
        fetch(MaildirSource(path))


def test_maildir_that_is_a_file_raises_source_error(tmp_path):
    path = tmp_path / "file"
    path.write_bytes(b"not a maildir")
    with pytest.raises(SourceError, match="file"):
        fetch(MaildirSource(path))


def test_unreadable_maildir_raises_source_error(box):
    # Not chmod 0: the tests run as root in CI, and root reads any directory.
    shutil.rmtree(box / "new")
    (box / "new").write_text("a file where the new/ folder should be")
    with pytest.raises(SourceError, match=str(box)):
        fetch(MaildirSource(box))


def test_tmp_files_and_hidden_files_are_never_read(box):
    deliver(box, f"{T0}.inprogress.mx", sub="tmp")
    deliver(box, ".hidden")
    (box / "new" / f"{T0}.adir.mx").mkdir()
    os.mkfifo(box / "new" / f"{T0}.pipe.mx")  # opening it to read would hang
    deliver(box, f"{T0 + 1}.a.mx")
    assert [m.ref for m in fetch(MaildirSource(box))] == [f"{T0 + 1}.a.mx"]
    assert (box / "tmp" / f"{T0}.inprogress.mx").exists()


def test_close_is_present(box):
    asyncio.run(MaildirSource(box).close())


def test_folder_names_are_plain():
    with pytest.raises(ValueError):
        MaildirSource(Path("x"), processed="../elsewhere")


def test_waiting_lists_the_oldest_with_their_sizes_and_reads_nothing(box):
    for n in range(5):
        deliver(box, f"{T0 + 10 - n}.{n}.mx", b"x" * (n + 1))
    source = MaildirSource(box)
    listed = asyncio.run(source.waiting(3))
    assert [(m.ref, m.received_at, m.size) for m in listed] == [
        (f"{T0 + 6}.4.mx", utc(T0 + 6), 5),
        (f"{T0 + 7}.3.mx", utc(T0 + 7), 4),
        (f"{T0 + 8}.2.mx", utc(T0 + 8), 3),
    ]
    assert [m.raw for m in asyncio.run(source.read(listed[1:])).messages] == [b"x" * 4, b"x" * 3]


def test_a_message_over_max_size_is_read_only_in_part(box):
    big = deliver(box, f"{T0}.big.mx", b"Subject: big\r\n\r\n" + b"y" * (2 * EXCERPT))
    small = deliver(box, f"{T0 + 1}.small.mx", b"Subject: small\r\n\r\n" + b"y" * 100)
    source = MaildirSource(box, max_size=EXCERPT)
    read, unreadable = asyncio.run(source.read(asyncio.run(source.waiting(10))))
    assert [(m.raw, m.size) for m in read] == [(big[:EXCERPT], len(big)), (small, None)] and unreadable == []


def test_a_message_that_cannot_be_read_is_told_apart_from_one_gone(box):
    deliver(box, f"{T0}.gone.mx")
    deliver(box, f"{T0 + 1}.moved.mx")
    deliver(box, f"{T0 + 2}.broken.mx")
    source = MaildirSource(box)
    listed = asyncio.run(source.waiting(10))
    os.unlink(box / "new" / f"{T0}.gone.mx")  # filed by another source meanwhile
    os.rename(box / "new" / f"{T0 + 1}.moved.mx", box / "cur" / f"{T0 + 1}.moved.mx:2,S")  # a mail reader's
    os.unlink(box / "new" / f"{T0 + 2}.broken.mx")
    os.symlink(f"{T0 + 2}.broken.mx", box / "new" / f"{T0 + 2}.broken.mx")  # a loop: ELOOP, which root gets too
    read, unreadable = asyncio.run(source.read(listed))
    assert [m.ref for m in read] == [f"{T0 + 1}.moved.mx"]
    assert [m.ref for m in unreadable] == [f"{T0 + 2}.broken.mx"]


def test_the_files_are_read_and_filed_on_one_thread_of_the_sources_own(box):
    """asyncio's own pool grows to several threads, each with its stack and a
    malloc arena of up to 64 MB of address space: under a memory limit that
    counts address space (ulimit -v), that is most of the room."""
    for n in range(20):
        deliver(box, f"{T0 + n}.{n}.mx")
    source = MaildirSource(box)

    async def work() -> set[str]:
        for _ in range(5):
            messages = await source.fetch()
            await source.done(messages[:4])
        return {t.name for t in threading.enumerate() if t.name.startswith("maildir")}

    assert len(asyncio.run(work())) == 1 and os.listdir(box / "new") == []
    asyncio.run(source.close())
    assert source._thread is None
