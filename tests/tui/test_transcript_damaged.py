"""Attack on issue 14, point 4: a damaged turn-body record never crashes the transcript.

A real turn runs on the embedded kernel; then its body gets a malformed
record appended (or its last line torn). The transcript opens from the
timeline as a user does, shows every whole record, names the damaged one
by its line, and says where a torn body was cut.
"""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import TypeVar

import pytest

from hz_kernel import api
from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.commands.watching import BODY_PAGE_BYTES
from hz_kernel.kernel import Kernel
from hz_kernel.store.bodies import BODY_LINE_MAX_BYTES, READ_CHUNK_BYTES, body_path
from hz_tui.app import CockpitApp
from hz_tui.widgets.live_turn import FileTurnPanel
from tests.tui import worlds
from tests.tui.test_cockpit import SIZE, open_page, until
from tests.tui.test_transcript import open_transcript, settled

T = TypeVar("T")

BAD = {
    "outcome str": b'{"ts":"2026-12-01T09:00:00Z","type":"outcome","outcome":"str"}',
    "outcome list": b'{"ts":"2026-12-01T09:00:00Z","type":"outcome","outcome":[1,2]}',
    "context 5": b'{"ts":"2026-12-01T09:00:00Z","type":"context","messages":5}',
    "context null": b'{"ts":"2026-12-01T09:00:00Z","type":"context","messages":null}',
    "messages str": b'{"ts":"2026-12-01T09:00:00Z","type":"messages","messages":"x"}',
    "messages mixed": b'{"ts":"2026-12-01T09:00:00Z","type":"messages","messages":[5,"a",null]}',
    "not json": b"{this is not json",
}


@pytest.fixture
async def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[LocalClient]:
    monkeypatch.setenv("HZ_NOW", "2026-12-01T09:00:00+00:00")
    world = worlds.make_world(tmp_path)
    opened = LocalClient(await Kernel.open(world.home, long_lived=True))
    opened.world = world  # type: ignore[attr-defined]
    try:
        yield opened
    finally:
        await opened.close()


async def finished_turn(client: LocalClient) -> tuple[worlds.World, str, Path]:
    world: worlds.World = client.world  # type: ignore[attr-defined]
    heinzel = await worlds.add_heinzel(client.kernel, world, "notes-digest")
    turn = await settled(client, heinzel, 1)
    return world, turn, body_path(world.home.heinzel_dir(heinzel), turn)


@pytest.mark.parametrize("bad", sorted(BAD))
async def test_attack4_a_damaged_body_record_is_shown_as_damaged_at_its_line(
    client: LocalClient, bad: str
) -> None:
    world, turn, body = await finished_turn(client)
    whole = body.read_bytes()
    line = whole.count(b"\n") + 1
    body.write_bytes(whole + BAD[bad] + b"\n")
    answer = await client.call(ops.TRANSCRIPT, ops.TranscriptRequest(ref="notes-digest", turn=turn))
    damaged = [r for r in answer.records if r["type"] == "damaged"]
    assert [r["line"] for r in damaged] == [line]
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, world.ids["notes-digest"])
        screen = await open_transcript(pilot, page, turn)
        await until(lambda: f"damaged record at line {line}" in screen.view.text_shown())
        assert "Model requests and answers" in screen.view.text_shown()
    assert app.return_code in (None, 0)


async def test_attack4_a_torn_body_says_where_it_was_cut(client: LocalClient) -> None:
    world, turn, body = await finished_turn(client)
    whole = body.read_bytes()
    lines = whole.count(b"\n")
    body.write_bytes(whole[: whole.rfind(b"\n", 0, len(whole) - 1) + 20])  # the last line torn
    answer = await client.call(ops.TRANSCRIPT, ops.TranscriptRequest(ref="notes-digest", turn=turn))
    assert answer.cut_at_line == lines
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, world.ids["notes-digest"])
        screen = await open_transcript(pilot, page, turn)
        await until(lambda: f"the body was cut at line {lines}" in screen.view.text_shown())


async def test_attack_a_body_changed_after_its_turn_ended_is_said_to_be(
    client: LocalClient,
) -> None:
    """s8 attack pass: a byte changed in a finished turn's body (``<history>`` made
    ``<hiStory>``) was shown as what the model got. The body no longer hashes to what
    ``turn.finished`` recorded, and the transcript says so (here "framing" is changed)."""
    world, turn, body = await finished_turn(client)
    whole = body.read_bytes()
    answer = await client.call(ops.TRANSCRIPT, ops.TranscriptRequest(ref="notes-digest", turn=turn))
    assert not answer.altered
    at = whole.index(b"framing")
    body.write_bytes(whole[:at] + b"fRaming" + whole[at + 7 :])
    answer = await client.call(ops.TRANSCRIPT, ops.TranscriptRequest(ref="notes-digest", turn=turn))
    assert answer.altered and answer.cut_at_line is None
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, world.ids["notes-digest"])
        screen = await open_transcript(pilot, page, turn)
        await until(lambda: "was changed after the turn ended" in screen.view.text_shown())


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink"])
async def test_attack_a_body_that_is_no_file_still_opens_the_page_and_says_so(
    client: LocalClient, kind: str
) -> None:
    """A FIFO, a directory or a symbolic link where the newest turn's body goes: the page
    opens, the transcript shows the coded refusal (never "expired", never loading for ever),
    and nothing blocks."""
    world, turn, body = await finished_turn(client)
    body.unlink()
    if kind == "fifo":
        os.mkfifo(body)
    elif kind == "symlink":
        (body.parent / "elsewhere.jsonl").write_bytes(b'{"type": "chunk", "text": "not here"}\n')
        body.symlink_to(body.parent / "elsewhere.jsonl")
    else:
        body.mkdir()
    body_read = await client.call(ops.TURN_BODY, ops.TurnBodyRequest(ref="notes-digest"))
    assert body_read.turn == turn and body_read.events
    assert body_read.refused is not None and body_read.refused.startswith("HZS090")
    app = CockpitApp(world.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, world.ids["notes-digest"])
        live = page.query_one(FileTurnPanel)
        await until(lambda: "HZS090" in live.stream.placeholder)
        screen = await open_transcript(pilot, page, turn)
        await until(lambda: "HZS090" in screen.view.text_shown())
        assert "Outcome" in screen.view.text_shown(), "what the spine keeps is still shown"
    assert app.return_code in (None, 0)


async def test_attack_a_torn_last_line_longer_than_a_page_is_cut_after_the_whole_lines(
    client: LocalClient,
) -> None:
    """The body's last line, torn, is larger than one page of reading: the cut is named at
    the line after the whole ones, not at line 1."""
    _, turn, body = await finished_turn(client)
    whole = body.read_bytes()
    lines = whole.count(b"\n")
    body.write_bytes(whole + b'{"type": "chunk", "text": "' + b"x" * (BODY_PAGE_BYTES + 10))
    answers = []
    offset = 0
    while True:
        answer = await client.call(
            ops.TRANSCRIPT,
            ops.TranscriptRequest(ref="notes-digest", turn=turn, after_offset=offset),
        )
        answers.append(answer)
        if not answer.more:
            break
        offset = answer.offset
    assert answers[-1].cut_at_line == lines + 1


async def _with_peak(read: Awaitable[T]) -> tuple[T, int]:
    """What ``read`` answers and the most memory Python held while it ran."""
    tracemalloc.start()
    try:
        return await read, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def _all_pages(client: LocalClient, turn: str) -> list[api.TurnTranscript]:
    answers = []
    offset = 0
    while True:
        answer = await client.call(
            ops.TRANSCRIPT,
            ops.TranscriptRequest(ref="notes-digest", turn=turn, after_offset=offset),
        )
        answers.append(answer)
        if not answer.more:
            return answers
        offset = answer.offset


async def test_attack_a_huge_torn_last_line_is_never_read_whole(client: LocalClient) -> None:
    """s6 item 1: a torn last line many times a read chunk (here 48 MiB, sparse) is looked
    through in bounded chunks, never held whole; the transcript still says where it was cut."""
    _, turn, body = await finished_turn(client)
    lines = body.read_bytes().count(b"\n")
    with body.open("ab") as out:
        out.write(b'{"type": "chunk", "text": "')
        out.truncate(out.tell() + (48 << 20))
    answers, peak = await _with_peak(_all_pages(client, turn))
    assert answers[-1].cut_at_line == lines + 1
    assert peak < 8 * READ_CHUNK_BYTES, f"reading held {peak} bytes"


async def test_attack_a_line_over_the_cap_is_damaged_and_the_lines_after_it_are_read(
    client: LocalClient,
) -> None:
    """s6 item 1: a whole line longer than the store's body line cap is named damaged at its
    line without being loaded, and the records after it still come."""
    _, turn, body = await finished_turn(client)
    lines = body.read_bytes().count(b"\n")
    with body.open("ab") as out:
        out.write(b'{"type": "chunk", "text": "')
        out.truncate(out.tell() + BODY_LINE_MAX_BYTES + 10)
        out.seek(0, os.SEEK_END)
        out.write(b'"}\n{"ts": "2026-12-01T09:00:00Z", "type": "chunk", "text": "after"}\n')
    answers, peak = await _with_peak(_all_pages(client, turn))
    records = [r for answer in answers for r in answer.records]
    damaged = [r for r in records if r["type"] == "damaged"]
    assert [r["line"] for r in damaged] == [lines + 1]
    assert "longer than" in damaged[0]["reason"]
    assert records[-1] == {"ts": "2026-12-01T09:00:00Z", "type": "chunk", "text": "after"}
    assert answers[-1].cut_at_line is None
    assert peak < 8 * READ_CHUNK_BYTES, f"reading held {peak} bytes"
