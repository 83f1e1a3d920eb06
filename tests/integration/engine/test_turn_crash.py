"""Kill a real ``hz`` process at every step boundary and mid-effect; the restart settles it.

Each case: a heinzel drafts into a real Markdown file from a real notes
folder. ``hz heinzel wake --request-id R`` is killed with SIGKILL right
after a named point is durable (``HZ_CRASH_AT``), then run again with the
same request id. Afterwards the document holds exactly one draft section,
the spine shows one ``draft.placed``, one ``turn.finished`` and one think
step with spend, and the chain is intact.
"""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path
from typing import cast

import pytest

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.store.scan import scan_file
from tests.support.homes import World, digest_contract, make_world

POINTS = [
    "turn.started",
    "step.done:gather",
    "attempt.started",
    "step.done:think",
    "step.done:outcome",
    "effect.started",
    "effect:before-done",
    "effect.done",
    "draft.placed",
    "step.done:act",
    # Group commit: killed while these wait in memory for their group's fsync, so they are
    # lost; the restart must come to the same end.
    "staged:step.done:gather",
    "staged:context.prepared",
    "staged:step.done:outcome",
    "staged:effect.done",
    "staged:draft.placed",
    "staged:step.done:act",
]


async def _create(world: World) -> str:
    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        made = await kernel.new(text=digest_contract())
        await kernel.approve(ref=made.id)
    finally:
        await kernel.close()
    return made.id


async def _in_process(world: World, command: str, **kwargs: str) -> None:
    """Restart: a fresh kernel in this process takes the lock the dead one left."""
    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        await getattr(kernel, command)(ref="notes-digest", **kwargs)
    finally:
        await kernel.close()


def _indexed(world: World, heinzel_id: str) -> tuple[int, str, int]:
    """The seq the index saw of the spine, the status of its turn, and the lines positioned."""
    index = sqlite3.connect(world.home / "heinzel" / "index.sqlite")
    try:
        (seen,) = index.execute(
            "SELECT seq FROM spines WHERE heinzel = ?", (heinzel_id,)
        ).fetchone()
        (status,) = index.execute("SELECT status FROM turns").fetchone()
        (positioned,) = index.execute("SELECT COUNT(*) FROM feed").fetchone()
    finally:
        index.close()
    return int(seen), str(status), int(positioned)


def _sections(world: World) -> int:
    return (world.reports / "digest.md").read_text().count("<!-- hz:begin ")


@pytest.mark.parametrize("point", POINTS)
async def test_crash_then_restart_settles_with_one_draft(tmp_path: Path, point: str) -> None:
    world = make_world(tmp_path)
    heinzel_id = await _create(world)
    crashed = world.hz("heinzel", "wake", "notes-digest", "--request-id", "r1", check=False,
                       HZ_CRASH_AT=point)  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    await _in_process(world, "wake", request_id="r1")
    kinds = world.kinds(heinzel_id)
    assert kinds.count("turn.started") == 1
    assert kinds.count("turn.finished") == 1
    assert kinds.count("draft.placed") == 1
    assert kinds.count("effect.started") == 1
    thinks = [e for e in world.spine(heinzel_id) if e["kind"] == "step.done"
              and e["data"]["step"] == "think"]  # fmt: skip
    assert len(thinks) == 1
    assert _sections(world) == 1
    finished = next(e for e in world.spine(heinzel_id) if e["kind"] == "turn.finished")
    assert finished["data"]["disposition"] == "drafted"
    assert scan_file(world.home / "heinzel" / heinzel_id / "session.jsonl").intact
    if point in ("effect:before-done", "staged:effect.done", "staged:draft.placed"):
        done = next(e for e in world.spine(heinzel_id) if e["kind"] == "effect.done")
        assert done["data"]["found_on_resume"] is True


async def test_a_turn_killed_before_its_last_lines_were_indexed_lists_right_after_open(
    tmp_path: Path,
) -> None:
    """Once the model has answered, a turn's lines are indexed together when it ends
    (``HeldSession.index_later``): killed in between, the index is behind the spine, and the
    next process's listing catches it up from the spine before it answers."""
    world = make_world(tmp_path)
    heinzel_id = await _create(world)
    crashed = world.hz("heinzel", "wake", "notes-digest", "--request-id", "r1", check=False,
                       HZ_CRASH_AT="effect:before-done")  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    spine = world.spine(heinzel_id)
    assert [e["kind"] for e in spine][-3:] == ["step.done", "step.done", "effect.started"]
    seen, status, positioned = _indexed(world, heinzel_id)
    assert seen < spine[-1]["seq"]  # the think step's end and the act's start: durable only
    assert status == "running" and positioned < len(spine)

    listed = world.hz("heinzel", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["id"] == heinzel_id and row["damaged"] is False
    assert _indexed(world, heinzel_id) == (spine[-1]["seq"], "running", len(spine))

    await _in_process(world, "wake", request_id="r1")
    assert world.kinds(heinzel_id).count("turn.finished") == 1
    assert _sections(world) == 1


async def test_output_that_streamed_before_a_crash_is_never_asked_for_again(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    heinzel_id = await _create(world)
    crashed = world.hz("heinzel", "wake", "notes-digest", "--request-id", "r1", check=False,
                       HZ_CRASH_AT="model:chunk")  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL
    await _in_process(world, "wake", request_id="r1")
    spine = world.spine(heinzel_id)
    failed = [e for e in spine if e["kind"] == "attempt.failed"]
    assert [e["data"]["code"] for e in failed] == ["engine_restart_mid_stream"]
    finished = [e for e in spine if e["kind"] == "turn.finished"]
    assert [e["data"]["disposition"] for e in finished] == ["failed"]
    assert [e["kind"] for e in spine].count("attempt.started") == 1


async def test_a_turn_failed_by_a_restart_mid_stream_counts_the_time_it_streamed(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    heinzel_id = await _create(world)
    crashed = world.hz("heinzel", "wake", "notes-digest", "--request-id", "r1", check=False,
                       HZ_CRASH_AT="model:chunk", HZ_CRASH_AT_COUNT="3",
                       HZ_MODEL_DELAY_MS="300")  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL
    await _in_process(world, "wake", request_id="r1")
    finished = next(e for e in world.spine(heinzel_id) if e["kind"] == "turn.finished")
    assert finished["data"]["disposition"] == "failed"
    # Two chunks were each held 300 ms before the third was written and the process died.
    assert finished["data"]["duration_ms"] >= 600


async def test_a_turn_resumed_too_often_is_abandoned(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    heinzel_id = await _create(world)
    first = world.hz("heinzel", "wake", "notes-digest", "--request-id", "r1", check=False,
                     HZ_CRASH_AT="step.done:gather")  # fmt: skip
    assert first.returncode == -signal.SIGKILL
    for _ in range(3):
        again = world.hz("heinzel", "resume", "notes-digest", check=False,
                         HZ_CRASH_AT="turn.resumed")  # fmt: skip
        assert again.returncode == -signal.SIGKILL
    await _in_process(world, "resume")
    spine = world.spine(heinzel_id)
    finished = [e for e in spine if e["kind"] == "turn.finished"]
    assert len(finished) == 1 and finished[0]["data"]["disposition"] == "abandoned"
    assert "resumed 3 times" in finished[0]["data"]["reason"]
    assert finished[0]["data"]["step"] == "gather"
    assert not (world.reports / "digest.md").exists()


async def test_a_resumed_turn_runs_under_its_pinned_contract_version(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    heinzel_id = await _create(world)
    crashed = world.hz("heinzel", "wake", "notes-digest", "--request-id", "r1", check=False,
                       HZ_CRASH_AT="step.done:gather")  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL
    kernel = await Kernel.open(Home.resolve(world.home))
    narrower = digest_contract().replace("max_usd: 0.2", "max_usd: 0.1")
    await kernel.amend(ref="notes-digest", text=narrower)
    await kernel.approve(ref="notes-digest")
    await kernel.resume(ref="notes-digest")
    placed = [e for e in world.spine(heinzel_id) if e["kind"] == "draft.placed"]
    assert [e["data"]["contract_version"] for e in placed] == [1]
    assert "(notes-digest v1)" in (world.reports / "digest.md").read_text()
    await kernel.wake(ref="notes-digest")
    await kernel.close()
    placed = [e for e in world.spine(heinzel_id) if e["kind"] == "draft.placed"]
    assert [e["data"]["contract_version"] for e in placed] == [1, 2]
    assert _sections(world) == 1


async def test_a_wake_killed_right_after_its_unsynced_request_is_run_once_by_the_next_tick(
    tmp_path: Path,
) -> None:
    """The spine's own process writes a wake's request without fsync, since the turn.started
    that names it comes first (docs/format.md, Inbox). Killed right after the write, the
    request (in the kernel's cache, which outlives the process) and its marker are found by
    the next tick, which runs it once; the same request id sent again runs nothing more."""
    world = make_world(tmp_path)
    heinzel_id = await _create(world)
    crashed = world.hz("heinzel", "wake", "notes-digest", "--request-id", "r1", check=False,
                       HZ_CRASH_AT="inbox:admitted")  # fmt: skip
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert "turn.started" not in world.kinds(heinzel_id)
    assert (world.home / "heinzel" / heinzel_id / "inbox" / "r1.json").is_file()

    kernel = await Kernel.open(Home.resolve(world.home))
    try:
        await kernel.tick_once()
    finally:
        await kernel.close()

    def asked() -> int:
        started = [e for e in world.spine(heinzel_id) if e["kind"] == "turn.started"]
        return sum(
            "r1" in cast(dict[str, list[str]], e["data"]).get("request_ids", []) for e in started
        )

    assert asked() == 1
    await _in_process(world, "wake", request_id="r1")
    assert asked() == 1
    assert world.kinds(heinzel_id).count("turn.finished") == world.kinds(heinzel_id).count(
        "turn.started"
    )
    assert _sections(world) == 1
    assert scan_file(world.home / "heinzel" / heinzel_id / "session.jsonl").intact
