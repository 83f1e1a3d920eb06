"""A wake is answered only once its request is durable (docs/format.md, Inbox).

The spine's own process writes a wake's request file without fsync: a turn
that starts at once records the request in its ``turn.started``, durable
before the answer, so the file is never synced. A wake answered before any
spine line names it (made to wait for a turn slot) has its file and folder
synced before the answer. A real long-lived kernel on a real home; the
fsyncs are seen by the path of each descriptor synced.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import digest_contract, make_world


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths this process fsyncs, in order."""
    paths: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return paths


async def test_a_wake_that_starts_at_once_is_answered_after_its_turn_started_unsynced(
    tmp_path: Path, synced: list[str]
) -> None:
    world = make_world(tmp_path)
    kernel = await Kernel.open(Home.resolve(world.home), long_lived=True)
    try:
        made = await kernel.new(text=digest_contract())
        await kernel.approve(ref=made.id)
        await kernel.wake(ref=made.id, request_id="r0")  # its inbox folders are made once
        await asyncio.wait(set(kernel.tasks), timeout=60)
        synced.clear()
        report = await kernel.wake(ref=made.id, request_id="r1")
        assert report.status == "started"
        started = [e for e in world.spine(made.id) if e["kind"] == "turn.started"]
        assert [e["turn"] for e in started][-1] == report.turn
        inbox = str(world.home / "heinzel" / made.id / "inbox")
        assert not [path for path in synced if path.startswith(inbox)]
        await asyncio.wait(set(kernel.tasks), timeout=60)
    finally:
        await kernel.close()
    assert not [path for path in synced if path.startswith(inbox)]


async def test_a_wake_made_to_wait_for_a_slot_is_answered_with_its_request_synced(
    tmp_path: Path, synced: list[str]
) -> None:
    world = make_world(tmp_path)
    with (world.home / "hz.toml").open("a") as toml:
        toml.write("[daemon]\nmax_concurrent_turns = 1\nmin_free_memory_mb = 0\n")
    kernel = await Kernel.open(Home.resolve(world.home), long_lived=True)
    try:
        made = await kernel.new(text=digest_contract())
        await kernel.approve(ref=made.id)
        inbox = world.home / "heinzel" / made.id / "inbox"
        async with kernel.admission.turn("someone-else"):
            synced.clear()
            report = await asyncio.wait_for(kernel.wake(ref=made.id, request_id="r2"), 30)
            assert report.status == "waiting"
            assert "turn.started" not in [e["kind"] for e in world.spine(made.id)]
            assert str(inbox / "r2.json") in synced
            assert str(inbox) in synced
        await asyncio.wait(set(kernel.tasks), timeout=60)
    finally:
        await kernel.close()
    finished = [e for e in world.spine(made.id) if e["kind"] == "turn.finished"]
    assert len(finished) == 1


async def test_a_stop_with_no_turn_running_says_none_on_a_long_lived_kernel(
    tmp_path: Path,
) -> None:
    """A daemon's kernel answered a stop with nothing to stop as a wake's ``started`` (the
    CLI then printed "started"); it is ``none``, as an embedded kernel's is."""
    world = make_world(tmp_path)
    kernel = await Kernel.open(Home.resolve(world.home), long_lived=True)
    try:
        made = await kernel.new(text=digest_contract())
        await kernel.approve(ref=made.id)
        report = await kernel.stop(ref=made.id)
        assert (report.status, report.turn, report.handed_back) == ("none", None, [])
    finally:
        await kernel.close()
