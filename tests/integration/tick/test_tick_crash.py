"""A tick killed between fetch and wake re-wakes from the source cache, never fetching twice."""

from __future__ import annotations

import signal
import subprocess
import sys

from tick_helpers import approved, contract, counted_shell, fetch_count, open_kernel, spine_kinds
from time_machine import TimeMachineFixture

from tests.support.homes import World

# One tick in its own process, as `hz tick --once` runs it.
_TICK_ONCE = """
import asyncio
from hz_kernel.commands.tick import TickCommands
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel

kernel_class = Kernel if issubclass(Kernel, TickCommands) else type("K", (TickCommands, Kernel), {})

async def main() -> None:
    kernel = await kernel_class.open(Home.resolve())
    try:
        print((await kernel.tick_once()).model_dump_json())
    finally:
        await kernel.close()

asyncio.run(main())
"""


def tick_killed_at(world: World, crash_at: str) -> None:
    """One tick at 10:00 in its own process, SIGKILLed at ``crash_at`` (``HZ_CRASH_AT``)."""
    crashed = subprocess.run(
        [sys.executable, "-c", _TICK_ONCE],
        capture_output=True,
        text=True,
        timeout=60,
        env=world.env(HZ_NOW="2026-12-01T10:00:00Z", HZ_CRASH_AT=crash_at),
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr


async def test_a_crash_after_fetch_rewakes_from_the_cache_without_a_second_fetch(
    world: World, clock: TimeMachineFixture
) -> None:
    feed, counter = world.root / "feed.txt", world.root / "fetched"
    feed.write_text("release 1.2 is out\n")
    kernel = await open_kernel(world.home)
    try:
        # No recheck: the input is due on every tick, so only the staged arrival keeps the
        # restarted tick from fetching it again.
        feed_input = {**counted_shell(feed, counter), "recheck": None}
        text = contract("releases", inputs={"feed": feed_input})
        heinzel_id = await approved(kernel, text)
    finally:
        await kernel.close()

    tick_killed_at(world, "tick:after-fetch")
    assert fetch_count(counter) == 1
    assert "turn.started" not in spine_kinds(world.home, heinzel_id)

    clock.move_to("2026-12-01T10:00:00Z")
    kernel = await open_kernel(world.home)
    try:
        report = await kernel.tick_once()
    finally:
        await kernel.close()
    assert (report.fetches, report.from_cache) == (0, 1)
    (woken,) = report.woken
    assert woken.causes == ["source-changed", "created"]  # its first turn
    assert woken.keys[0].startswith(f"{heinzel_id}@feed:")
    assert fetch_count(counter) == 1
    kinds = spine_kinds(world.home, heinzel_id)
    assert kinds.count("turn.started") == 1 and kinds.count("turn.finished") == 1


async def test_a_turn_cut_off_by_a_crash_is_resumed_by_the_next_tick(
    world: World, clock: TimeMachineFixture
) -> None:
    feed, counter = world.root / "feed.txt", world.root / "fetched"
    feed.write_text("release 1.3 is out\n")
    kernel = await open_kernel(world.home)
    try:
        text = contract("releases", inputs={"feed": counted_shell(feed, counter)})
        heinzel_id = await approved(kernel, text)
    finally:
        await kernel.close()
    tick_killed_at(world, "step.done:gather")
    # Gather's end is committed in one group with the think step's first lines.
    assert spine_kinds(world.home, heinzel_id)[-4:] == [
        "turn.started",
        "step.done",
        "context.prepared",
        "attempt.started",
    ]

    clock.move_to("2026-12-01T10:01:00Z")
    kernel = await open_kernel(world.home)
    try:
        (row,) = (await kernel.list_heinzels()).items
        assert row.state == "awake"
        report = await kernel.tick_once()
    finally:
        await kernel.close()
    assert [w.name for w in report.woken] == ["releases"] and report.problems == []
    kinds = spine_kinds(world.home, heinzel_id)
    assert kinds.count("turn.started") == 1 and kinds.count("turn.finished") == 1
    assert "turn.resumed" in kinds
    assert fetch_count(counter) == 1
