"""Issue 13 item 2: the kernel's own admission controller gates its turns, and a turn that waits
says why on its row and in its spine, then keeps its deadline or ends when stopped.

A real kernel on a real home; the test holds the only turn slot itself through the kernel's
own controller, so "the house is full" does not depend on how fast a turn runs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import World, digest_contract, make_world


async def _kernel(world: World, settings: str) -> tuple[Kernel, str]:
    with (world.home / "hz.toml").open("a") as toml:
        toml.write(settings)
    kernel = await Kernel.open(Home.resolve(world.home))
    made = await kernel.new(text=digest_contract())
    await kernel.approve(ref=made.id)
    return kernel, made.id


async def _queued(kernel: Kernel) -> None:
    for _ in range(3000):
        if kernel.admission.queued("turn"):
            return
        await asyncio.sleep(0.01)
    pytest.fail("the wake never queued")


async def test_issue13_item2_a_queued_turn_is_listed_journalled_and_keeps_its_deadline(
    tmp_path: Path,
) -> None:
    """A wake behind a full house is ``queued: capacity`` on its row and journals
    ``turn.queued`` first; when its deadline (``turn_timeout_s`` from the wake) passes
    unadmitted it starts and ends at once, abandoned with ``HZD060``."""
    world = make_world(tmp_path)
    kernel, heinzel_id = await _kernel(
        world, "[daemon]\nmax_concurrent_turns = 1\nmin_free_memory_mb = 0\n"
        "[heinzel]\nturn_timeout_s = 3.0\n"
    )  # fmt: skip
    try:
        async with kernel.admission.turn("someone-else"):
            woken = asyncio.ensure_future(kernel.wake(ref=heinzel_id))
            await _queued(kernel)
            row = (await kernel.list_heinzels()).items[0]
            assert row.queued == "capacity"
            assert (await kernel.show(heinzel_id)).heinzel.queued == "capacity"
            assert [t.queued for t in kernel.turn_activity()] == [None, "capacity"]
            report = await asyncio.wait_for(woken, 30)
        assert report.status == "finished" and report.disposition == "abandoned"
        assert report.reason is not None and report.reason.startswith("HZD060: ")
        assert (await kernel.list_heinzels()).items[0].queued is None
    finally:
        await kernel.close()
    kinds = [e["kind"] for e in world.spine(heinzel_id) if e["turn"] == report.turn]
    assert kinds == ["turn.queued", "turn.started", "turn.finished"]


async def test_issue13_item2_a_turn_stopped_while_queued_ends_stopped_and_never_runs(
    tmp_path: Path,
) -> None:
    """``stop`` reaches a turn that waits for a slot: it ends ``abandoned`` (``stopped``)
    without a step or a model request, and the slot's holder is untouched."""
    world = make_world(tmp_path)
    kernel, heinzel_id = await _kernel(
        world, "[daemon]\nmax_concurrent_turns = 1\nmin_free_memory_mb = 0\n"
    )
    try:
        async with kernel.admission.turn("someone-else"):
            woken = asyncio.ensure_future(kernel.wake(ref=heinzel_id))
            await _queued(kernel)
            stopped = await asyncio.wait_for(kernel.stop(ref=heinzel_id), 30)
            report = await asyncio.wait_for(woken, 30)
            assert kernel.admission.running("turn") == 1
    finally:
        await kernel.close()
    assert stopped.disposition == "abandoned" and stopped.reason == "stopped"
    assert report.turn == stopped.turn
    kinds = [e["kind"] for e in world.spine(heinzel_id) if e["turn"] == report.turn]
    assert kinds == ["turn.queued", "turn.started", "turn.finished"]
