"""Turn bodies and inbox request files."""

from __future__ import annotations

import os
import stat
import tracemalloc
from pathlib import Path

from ulid import ULID

from hz_kernel.store.bodies import READ_CHUNK_BYTES, BodyWriter, body_path, read_body
from hz_kernel.store.inbox import Inbox, InboxRequest, undelivered


def test_body_records_round_trip_and_hash(tmp_path: Path) -> None:
    turn = str(ULID())
    body = BodyWriter(tmp_path, turn)
    body.write("input", name="notes", content="# hello")
    body.write("model", chunk="Draft")
    body.sync()
    first_hash = body.hash
    body.close()
    records = read_body(tmp_path, turn)
    assert [r["type"] for r in records or []] == ["input", "model"]
    assert stat.S_IMODE(os.stat(body_path(tmp_path, turn)).st_mode) == 0o600
    reopened = BodyWriter(tmp_path, turn)
    assert reopened.hash == first_hash
    reopened.close()


def test_body_reopen_drops_a_torn_record(tmp_path: Path) -> None:
    turn = str(ULID())
    body = BodyWriter(tmp_path, turn)
    body.write("input", name="a")
    body.close()
    with body_path(tmp_path, turn).open("ab") as f:
        f.write(b'{"ts": "2026-')
    body = BodyWriter(tmp_path, turn)
    body.write("input", name="b")
    body.close()
    assert [r["name"] for r in read_body(tmp_path, turn) or []] == ["a", "b"]


def test_s6_item1_a_huge_torn_tail_is_read_and_cut_in_bounded_memory(tmp_path: Path) -> None:
    """s6 item 1: the engine's whole-body read and a writer reopening after a crash look
    through a torn tail many chunks long (sparse, 96 MiB) without holding it; a record
    longer than a chunk is still read whole (orjson takes a multiple of it while parsing)."""
    turn = str(ULID())
    body = BodyWriter(tmp_path, turn)
    body.write("input", name="a", content="x" * (READ_CHUNK_BYTES + 100))
    body.write("input", name="b")
    whole_hash, whole_size = body.hash, body.size
    body.close()
    with body_path(tmp_path, turn).open("ab") as f:
        f.write(b'{"ts": "2026-')
        f.truncate(f.tell() + (96 << 20))
    tracemalloc.start()
    try:
        records = read_body(tmp_path, turn) or []
        reopened = BodyWriter(tmp_path, turn)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    reopened.close()
    assert [r["name"] for r in records] == ["a", "b"]
    assert (reopened.hash, reopened.size) == (whole_hash, whole_size)
    assert body_path(tmp_path, turn).stat().st_size == whole_size
    assert peak < 32 * READ_CHUNK_BYTES, f"reading held {peak} bytes"


def test_missing_body_reads_as_none(tmp_path: Path) -> None:
    assert read_body(tmp_path, str(ULID())) is None
    assert read_body(tmp_path, "../../etc/passwd") is None


def test_inbox_admission_is_idempotent_by_request_id(tmp_path: Path) -> None:
    inbox = Inbox(tmp_path)
    first, created = inbox.admit(InboxRequest(request_id="r1", heinzel="hz-x", message="shorter"))
    again, created_again = inbox.admit(
        InboxRequest(request_id="r1", heinzel="hz-x", message="shorter")
    )
    assert created and not created_again
    assert again.message == "shorter" and again.admitted_at == first.admitted_at
    assert [r.request_id for r in inbox.all()] == ["r1"]
    assert stat.S_IMODE(os.stat(tmp_path / "inbox" / "r1.json").st_mode) == 0o600


def test_issue12_item13_a_request_id_reused_for_other_content_is_refused(tmp_path: Path) -> None:
    """The same id asking something else would be answered for the first request and its
    content would reach no turn: it is refused with a code, and the first stays as it was."""
    import pytest

    from hz_kernel.errors import HzError

    inbox = Inbox(tmp_path)
    inbox.admit(InboxRequest(request_id="r1", heinzel="hz-x", kind="wake"))
    for other in (
        InboxRequest(request_id="r1", heinzel="hz-x", kind="chat", message="shorter"),
        InboxRequest(request_id="r1", heinzel="hz-x", kind="wake", message="now"),
    ):
        with pytest.raises(HzError) as caught:
            inbox.admit(other)
        assert caught.value.code == "HZS034"
    (stored,) = inbox.all()
    assert (stored.kind, stored.message) == ("wake", "")


def test_issue16_a_delivered_request_is_set_aside_unread_and_still_found(tmp_path: Path) -> None:
    """What a turn looks through for new requests does not grow with those it took: a taken
    request moves into ``delivered/``, yet every other reader still finds it, and its id still
    answers a retry and refuses other content."""
    import pytest

    from hz_kernel.errors import HzError

    inbox = Inbox(tmp_path)
    for n in range(3):
        inbox.admit(InboxRequest(request_id=f"r{n}", heinzel="hz-x", message=f"note {n}"))
    assert [r.request_id for r in inbox.pending({"r0", "r1"})] == ["r2"]
    assert sorted(p.name for p in (tmp_path / "inbox").glob("*.json")) == ["r2.json"]
    assert [r.request_id for r in inbox.pending({"r0", "r1"})] == ["r2"]
    assert [r.request_id for r in inbox.all()] == ["r0", "r1", "r2"]
    assert inbox.get("r1") is not None and inbox.get("r1").message == "note 1"  # type: ignore[union-attr]
    stored, created = inbox.admit(InboxRequest(request_id="r1", heinzel="hz-x", message="note 1"))
    assert not created and stored.message == "note 1"
    with pytest.raises(HzError) as caught:
        inbox.admit(InboxRequest(request_id="r1", heinzel="hz-x", message="other"))
    assert caught.value.code == "HZS034"
    assert [r.request_id for r in inbox.withdraw([stored])] == ["r1"]
    assert (tmp_path / "inbox" / "withdrawn" / "r1.json").is_file()


def test_issue16_a_link_where_delivered_should_be_is_never_written_through(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    inbox = Inbox(tmp_path / "h")
    inbox.admit(InboxRequest(request_id="r1", heinzel="hz-x", message="hi"))
    (inbox.dir / "delivered").symlink_to(elsewhere)
    assert inbox.pending({"r1"}) == []
    assert list(elsewhere.iterdir()) == []
    assert [r.request_id for r in inbox.all()] == ["r1"]


def test_issue12_item10_admission_marks_the_inbox_for_the_next_tick(tmp_path: Path) -> None:
    """A marker under ``<home>/heinzel/undelivered/`` is left before the request's file."""
    heinzel_dir = tmp_path / "hz-01M8RQXYP3E4E4YHD6CC4HSM66"
    inbox = Inbox(heinzel_dir)
    assert undelivered(tmp_path) == set()
    inbox.admit(InboxRequest(request_id="r1", heinzel=heinzel_dir.name, message="hi"))
    assert undelivered(tmp_path) == {heinzel_dir.name}
    inbox.unmark()
    assert undelivered(tmp_path) == set()


def test_inbox_refuses_path_like_ids(tmp_path: Path) -> None:
    import pytest

    from hz_kernel.errors import HzError

    with pytest.raises(HzError) as caught:
        Inbox(tmp_path).admit(InboxRequest(request_id="../x", heinzel="hz-x"))
    assert caught.value.code == "HZS030"


def test_issue16_a_link_where_delivered_should_be_is_never_read_through(tmp_path: Path) -> None:
    """A request file in a folder ``delivered`` links to is not this inbox's: no reader finds
    it and no stop moves it into ``withdrawn/``."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = InboxRequest(request_id="r9", heinzel="hz-x", message="not from this inbox")
    (elsewhere / "r9.json").write_text(planted.model_dump_json())
    inbox = Inbox(tmp_path / "h")
    inbox.admit(InboxRequest(request_id="r1", heinzel="hz-x", message="hi"))
    (inbox.dir / "delivered").symlink_to(elsewhere)
    assert inbox.get("r9") is None
    assert [r.request_id for r in inbox.all()] == ["r1"]
    assert inbox.withdraw([planted]) == []
    assert (elsewhere / "r9.json").is_file()
    stored, created = inbox.admit(InboxRequest(request_id="r9", heinzel="hz-x", message="mine"))
    assert created and stored.message == "mine"


def test_issue16_setting_aside_never_replaces_a_request_already_aside(tmp_path: Path) -> None:
    """A request id in both folders with other content (a restored backup, a hand copy): the
    set-aside leaves both files, so no admitted text is ever deleted."""
    inbox = Inbox(tmp_path)
    inbox.admit(InboxRequest(request_id="r1", heinzel="hz-x", message="first"))
    assert inbox.pending({"r1"}) == []
    again = InboxRequest(request_id="r1", heinzel="hz-x", message="second")
    (inbox.dir / "r1.json").write_text(again.model_dump_json())
    assert inbox.pending({"r1"}) == []
    aside = InboxRequest.model_validate_json((inbox.dir / "delivered" / "r1.json").read_text())
    assert aside.message == "first"
    assert (inbox.dir / "r1.json").is_file()


def test_issue16_an_id_set_aside_while_it_was_admitted_again_is_not_admitted_twice(
    tmp_path: Path,
) -> None:
    """The race of a retry with a turn: between the retry's look (nothing found) and its write,
    the first admission is taken and set aside. The retry must not become a second request
    under the same id (it would reach no turn, and the set-aside would meet two files)."""
    import pytest

    from hz_kernel.errors import HzError

    class Racing(Inbox):
        def mark(self) -> None:
            super().mark()
            first = Inbox(self.dir.parent)
            first.admit(InboxRequest(request_id="r1", heinzel="hz-x", message="first"))
            assert first.pending({"r1"}) == []

    with pytest.raises(HzError) as caught:
        Racing(tmp_path).admit(InboxRequest(request_id="r1", heinzel="hz-x", message="second"))
    assert caught.value.code == "HZS034"
    assert not (tmp_path / "inbox" / "r1.json").exists()
    stored, created = Racing(tmp_path).admit(
        InboxRequest(request_id="r1", heinzel="hz-x", message="first")
    )
    assert (stored.message, created) == ("first", False)
