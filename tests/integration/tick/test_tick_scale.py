"""Hundreds of heinzels over a few shared inputs: one fetch per input, wakes bounded per tick."""

from __future__ import annotations

from tick_helpers import (
    approved,
    contract,
    counted_shell,
    fetch_count,
    open_kernel,
    write_settings,
    written_heinzels,
)
from time_machine import TimeMachineFixture

from tests.support.homes import World

INPUTS = 20
PER_INPUT = 10


async def test_200_heinzels_over_20_inputs_fetch_each_input_once_and_wake_oldest_first(
    world: World, clock: TimeMachineFixture
) -> None:
    write_settings(world.home, max_wakes_per_tick=2)
    data = [world.root / f"feed-{n:02d}.txt" for n in range(INPUTS)]
    counters = [world.root / f"fetched-{n:02d}" for n in range(INPUTS)]
    for n, path in enumerate(data):
        path.write_text(f"feed {n}\n")
    text = contract("w00-00", inputs={"feed": counted_shell(data[0], counters[0])})
    written_heinzels(
        world.home,
        text,
        {
            f"w{n:02d}-{m:02d}": {"feed": counted_shell(data[n], counters[n])}
            for n in range(INPUTS)
            for m in range(PER_INPUT)
        },
    )
    kernel = await open_kernel(world.home)
    try:
        clock.move_to("2026-12-01T10:00:00Z")
        first = await kernel.tick_once()
        assert first.fetches == INPUTS
        assert [fetch_count(c) for c in counters] == [1] * INPUTS
        assert [w.name for w in first.woken] == ["w00-00", "w00-01"]
        assert len(first.deferred) == INPUTS * PER_INPUT - 2
        assert {d.reason for d in first.deferred} == {"max-wakes"}
        assert first.spines_opened == 2

        late = world.root / "late.txt"
        late.write_text("late\n")
        text = contract("a-late", inputs={"feed": counted_shell(late, world.root / "fetched-late")})
        await approved(kernel, text)
        clock.move_to("2026-12-01T10:01:00Z")
        second = await kernel.tick_once()
        assert second.fetches == 1 and second.from_cache == INPUTS
        assert [fetch_count(c) for c in counters] == [1] * INPUTS
        assert [w.name for w in second.woken] == ["w00-02", "w00-03"]
        assert second.deferred[-1].name == "a-late"
        assert second.deferred[0].due_at < second.deferred[-1].due_at
    finally:
        await kernel.close()


async def test_heinzels_in_step_are_passed_over_until_their_input_moves_then_all_wake(
    world: World, clock: TimeMachineFixture
) -> None:
    """Issue 16: heinzels with nothing owed come back from the tick's query only as their
    shared inputs text; when that input moves, every heinzel reading it is read in full and
    woken in the same tick, and the heinzels of the input that stayed still sleep on."""
    write_settings(world.home, max_wakes_per_tick=10)
    data = [world.root / f"feed-{n}.txt" for n in range(2)]
    counters = [world.root / f"fetched-{n}" for n in range(2)]
    for n, path in enumerate(data):
        path.write_text(f"feed {n}\n")
    names = {f"w{n}-{m}": n for n in range(2) for m in range(3)}
    text = contract("w0-0", inputs={"feed": counted_shell(data[0], counters[0])})
    written_heinzels(
        world.home,
        text,
        {name: {"feed": counted_shell(data[n], counters[n])} for name, n in names.items()},
    )
    kernel = await open_kernel(world.home)
    try:
        clock.move_to("2026-12-01T10:00:00Z")
        first = await kernel.tick_once()
        assert sorted(w.name for w in first.woken) == sorted(names)

        clock.move_to("2026-12-01T10:01:00Z")
        idle = await kernel.tick_once()
        assert (idle.due, idle.fetches, idle.index_queries, idle.spines_opened) == (0, 0, 1, 0)

        data[1].write_text("feed 1, moved\n")
        clock.move_to("2026-12-01T11:05:00Z")
        moved = await kernel.tick_once()
        assert moved.fetches == 2
        assert sorted(w.name for w in moved.woken) == ["w1-0", "w1-1", "w1-2"]
        assert {c for w in moved.woken for c in w.causes} == {"source-changed"}
        assert moved.deferred == [] and moved.skipped == [] and moved.problems == []
    finally:
        await kernel.close()
