"""The spine: append, chain, torn tails, breaks, unknown kinds, the lock."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson
import pytest

from hz_kernel.errors import HzError
from hz_kernel.store.envelope import GENESIS, line_hash
from hz_kernel.store.locks import SpineBusy
from hz_kernel.store.scan import scan_file
from hz_kernel.store.spine import SPINE_NAME, SpineWriter
from hz_kernel.vocabulary import HeinzelCreated, LessonRecorded, StepDone, TurnStarted


def _fill(heinzel_dir: Path, n: int) -> None:
    with SpineWriter.open(heinzel_dir) as writer:
        writer.append(HeinzelCreated(name="weekly"))
        for i in range(n - 1):
            writer.append(StepDone(step="gather", output_hash=f"{i:064x}"), turn="T")


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def test_append_chains_every_line_to_the_previous(tmp_path: Path) -> None:
    _fill(tmp_path / "h", 5)
    lines = _lines(tmp_path / "h" / SPINE_NAME)
    assert len(lines) == 5
    prev = GENESIS
    for seq, line in enumerate(lines, start=1):
        obj = orjson.loads(line)
        assert list(obj) == ["v", "seq", "ts", "prev", "turn", "kind", "key", "data"]
        assert obj["seq"] == seq and obj["prev"] == prev and obj["v"] == 1
        prev = line_hash(line)
    found = scan_file(tmp_path / "h" / SPINE_NAME)
    assert found.intact and found.last_seq == 5 and found.torn is None


def test_files_are_private(tmp_path: Path) -> None:
    _fill(tmp_path / "h", 2)
    assert stat.S_IMODE(os.stat(tmp_path / "h").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "h" / SPINE_NAME).st_mode) == 0o600


def test_reopening_continues_the_chain(tmp_path: Path) -> None:
    _fill(tmp_path / "h", 3)
    with SpineWriter.open(tmp_path / "h") as writer:
        assert writer.last_seq == 3
        writer.append(StepDone(step="think"))
    found = scan_file(tmp_path / "h" / SPINE_NAME)
    assert found.intact and [e.seq for e in found.events] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    "tail",
    [b'{"v":1,"seq":4,"ts":"2026', b"\x00" * 4096, b'{"v":1,"seq":4' + b"\x00" * 300],
    ids=["partial-line", "nul-padding", "partial-then-nul"],
)
def test_torn_tail_is_invisible_then_cut_with_a_copy_kept(tmp_path: Path, tail: bytes) -> None:
    _fill(tmp_path / "h", 3)
    spine = tmp_path / "h" / SPINE_NAME
    whole = spine.read_bytes()
    with spine.open("ab") as f:
        f.write(tail)
    found = scan_file(spine)
    assert found.intact and found.last_seq == 3 and found.torn is not None
    assert found.torn.offset == len(whole)

    with SpineWriter.open(tmp_path / "h") as writer:
        writer.append(StepDone(step="act"))
    copy = tmp_path / "h" / f"{SPINE_NAME}.torn-{len(whole)}"
    assert copy.read_bytes() == tail
    after = scan_file(spine)
    assert after.intact and after.torn is None
    kinds = [e.kind for e in after.events]
    assert kinds[-2:] == ["spine.repaired", "step.done"]
    repaired = after.events[-2].data
    assert repaired == {"offset": len(whole), "dropped_bytes": len(tail), "kept_copy": copy.name}
    assert spine.read_bytes().startswith(whole)


def test_a_last_line_with_nul_padding_counts_as_torn(tmp_path: Path) -> None:
    _fill(tmp_path / "h", 3)
    spine = tmp_path / "h" / SPINE_NAME
    with spine.open("ab") as f:
        f.write(b"\x00" * 50 + b"\n")
    found = scan_file(spine)
    assert found.intact and found.torn is not None and found.torn.nul_padding


def test_hand_edited_middle_line_is_reported_with_its_seq(tmp_path: Path) -> None:
    _fill(tmp_path / "h", 6)
    spine = tmp_path / "h" / SPINE_NAME
    lines = _lines(spine)
    offset = sum(len(line) + 1 for line in lines[:2])
    lines[2] = lines[2].replace(b'"gather"', b'"think"')
    spine.write_bytes(b"\n".join(lines) + b"\n")
    found = scan_file(spine)
    assert not found.intact
    (brk,) = found.breaks
    assert brk.problem == "edited" and brk.seq == 3 and brk.offset == offset


def test_deleted_line_is_reported_as_missing(tmp_path: Path) -> None:
    _fill(tmp_path / "h", 6)
    spine = tmp_path / "h" / SPINE_NAME
    lines = _lines(spine)
    del lines[3]
    spine.write_bytes(b"\n".join(lines) + b"\n")
    (brk,) = scan_file(spine).breaks
    assert brk.problem == "missing" and brk.seq == 4


def test_bad_lines_never_crash_a_reader(tmp_path: Path) -> None:
    _fill(tmp_path / "h", 4)
    spine = tmp_path / "h" / SPINE_NAME
    lines = _lines(spine)
    lines.insert(2, b"[1, 2, 3]")
    lines.insert(3, b"not json at all")
    lines.insert(4, b"x" * (11 * 1024 * 1024))
    spine.write_bytes(b"\n".join(lines) + b"\n")
    found = scan_file(spine)
    problems = [b.problem for b in found.breaks]
    assert problems[:3] == ["not-an-object", "unreadable", "too-long"]
    assert [e.seq for e in found.events] == [1, 2, 3, 4]


def test_a_spine_that_is_a_directory_is_a_coded_error(tmp_path: Path) -> None:
    (tmp_path / "h" / SPINE_NAME).mkdir(parents=True)
    with pytest.raises(HzError) as caught:
        scan_file(tmp_path / "h" / SPINE_NAME)
    assert caught.value.code == "HZS011"


def test_unknown_kinds_are_kept_but_skipped_by_typed_readers(tmp_path: Path) -> None:
    _fill(tmp_path / "h", 2)
    spine = tmp_path / "h" / SPINE_NAME
    last = _lines(spine)[-1]
    future = {
        "v": 1,
        "seq": 3,
        "ts": "2026-11-30T10:00:00.000000Z",
        "prev": line_hash(last),
        "turn": None,
        "kind": "hologram.projected",
        "key": None,
        "data": {"beam": 1},
    }
    with spine.open("ab") as f:
        f.write(orjson.dumps(future) + b"\n")
    with SpineWriter.open(tmp_path / "h") as writer:
        writer.append(StepDone(step="finish"))
    found = scan_file(spine)
    assert found.intact and [e.kind for e in found.events][-2:] == [
        "hologram.projected",
        "step.done",
    ]
    assert found.events[-2].payload() is None
    assert isinstance(found.events[-1].payload(), StepDone)


def test_second_writer_gets_spine_busy_naming_the_holder(tmp_path: Path) -> None:
    _fill(tmp_path / "h", 1)
    with SpineWriter.open(tmp_path / "h"), pytest.raises(SpineBusy) as caught:
        SpineWriter.open(tmp_path / "h")
    assert caught.value.code == "HZS010" and caught.value.holder == os.getpid()


def test_content_never_enters_the_spine(tmp_path: Path) -> None:
    with SpineWriter.open(tmp_path / "h") as writer, pytest.raises(HzError) as caught:
        writer.append(LessonRecorded(lesson_id="L1", lesson="mail priya@example.com first"))
    assert caught.value.code == "HZS052"
    assert scan_file(tmp_path / "h" / SPINE_NAME).last_seq == 0


def test_turn_started_pins_versions(tmp_path: Path) -> None:
    with SpineWriter.open(tmp_path / "h") as writer:
        event = writer.append(
            TurnStarted(cause="schedule", keys=["hz-X@2026-10-30T15:00"], contract_version=2),
            turn="T1",
            key="hz-X@2026-10-30T15:00",
        )
    assert event.data["contract_version"] == 2 and event.data["vocabulary"] == 1


def test_s6_item3_a_complete_foreign_line_is_cut_too_and_the_chain_stays_whole(
    tmp_path: Path,
) -> None:
    """s6 attack 3: whatever another process appends under the writer (here a whole line) is
    kept beside the spine and cut before the writer's next line; the chain verifies."""
    with SpineWriter.open(tmp_path) as writer:
        writer.append(HeinzelCreated(name="a"))
        end = (tmp_path / SPINE_NAME).stat().st_size
        with (tmp_path / SPINE_NAME).open("ab") as out:
            out.write(b'{"v":1,"seq":2,"kind":"x"}\n')
        event = writer.append(StepDone(step="think"))
        (repaired,) = writer.take_interposed()
    assert repaired.kind == "spine.repaired" and repaired.data["offset"] == end
    assert event.seq == 3
    found = scan_file(tmp_path / SPINE_NAME)
    assert found.intact and [e.kind for e in found.events] == [
        "heinzel.created",
        "spine.repaired",
        "step.done",
    ]


def test_s6_item3_a_spine_cut_under_its_writer_is_refused_with_a_code(tmp_path: Path) -> None:
    """s6 attack 3: a spine another process made shorter lost durable lines; the writer
    writes nothing more after it (HZS100) instead of chaining onto the wrong place."""
    with SpineWriter.open(tmp_path) as writer:
        writer.append(HeinzelCreated(name="a"))
        writer.append(StepDone(step="think"))
        os.truncate(tmp_path / SPINE_NAME, 10)
        with pytest.raises(HzError) as refused:
            writer.append(StepDone(step="outcome"))
    assert refused.value.code == "HZS100"
    assert (tmp_path / SPINE_NAME).stat().st_size == 10


async def test_issue16_a_group_whose_body_cannot_sync_is_cut_off_whole(tmp_path: Path) -> None:
    """Group commit attack: the body a turn wrote ahead of its lines cannot be made durable
    (its fsync fails), so the flush is refused. The staged lines and the caller's line were
    refused with it: none of them may slip into the spine with a later, unrelated line."""
    from hz_kernel.store.index import Index
    from hz_kernel.store.session import HeldSession

    index = await Index.open(tmp_path / "index.sqlite")
    heinzel_dir = tmp_path / "hz-01M8WJPKXMD3FP8330AFAV0X7X"
    held = HeldSession(heinzel_dir.name, heinzel_dir, index)
    try:
        await held.append(HeinzelCreated(name="a"))
        held.stage(StepDone(step="outcome"), turn="T1")

        def body_sync_fails() -> None:
            raise HzError("HZS091", "no space left on device", str(heinzel_dir / "turns"))

        held.before_flush = body_sync_fails
        with pytest.raises(HzError):
            await held.append(StepDone(step="act"), turn="T1")
        held.before_flush = None
        await held.append(StepDone(step="gather"), turn="T2")
    finally:
        held.close()
        await index.close()
    found = scan_file(heinzel_dir / SPINE_NAME)
    assert found.intact
    assert [(e.turn, e.data.get("step")) for e in found.events] == [(None, None), ("T2", "gather")]


def _rechained(lines: list[bytes]) -> bytes:
    """The lines with every ``prev`` recomputed the writer's way: only their content is off."""
    out, prev = [], GENESIS
    for line in lines:
        envelope = orjson.loads(line)
        envelope["prev"] = prev
        out.append(orjson.dumps(envelope))
        prev = line_hash(out[-1])
    return b"".join(line + b"\n" for line in out)


@pytest.mark.parametrize(
    ("seq", "field", "value"),
    [
        (3, "data.step", 7),
        (3, "data.step", ["gather"]),
        (4, "data.output_hash", {"a": 1}),
        (1, "data.name", None),
        (1, "data", {}),
        (5, "data", [1, 2]),
        (2, "data.inputs", ["not an object"]),
        (2, "turn", 7),
        (2, "key", ["k"]),
        (2, "ts", 12345),
        (2, "v", "1"),
        (2, "kind", None),
    ],
)
def test_s11_a_line_of_the_wrong_types_is_damage_at_its_seq_and_is_not_read(
    tmp_path: Path, seq: int, field: str, value: object
) -> None:
    """s11: a hand edit that keeps the chain whole (every ``prev`` recomputed) but gives a
    field the wrong type is a break at that seq and byte; the line is not read as an event
    (every reader past the scan trusts the types), the lines around it are."""
    _fill(tmp_path / "h", 6)
    spine = tmp_path / "h" / SPINE_NAME
    lines = _lines(spine)
    envelope = orjson.loads(lines[seq - 1])
    if field.startswith("data."):
        envelope["data"][field[5:]] = value
    else:
        envelope[field] = value
    lines[seq - 1] = orjson.dumps(envelope)
    spine.write_bytes(_rechained(lines))
    offset = sum(len(line) + 1 for line in _lines(spine)[: seq - 1])

    found = scan_file(spine)
    (brk,) = found.breaks
    assert (brk.problem, brk.seq, brk.offset) == ("mistyped", seq, offset)
    assert [e.seq for e in found.events] == [n for n in range(1, 7) if n != seq]
    assert found.last_seq == 6 and found.lines == 6
    assert all(e.payload() is not None for e in found.events)
