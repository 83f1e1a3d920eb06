"""An ``if-moved`` slot where nothing moved costs one spine line and no model call."""

from __future__ import annotations

from tick_helpers import approved, open_kernel, spine_kinds
from time_machine import TimeMachineFixture

from tests.support.homes import World, digest_contract


async def test_an_if_moved_slot_with_nothing_moved_writes_one_line_and_calls_no_model(
    world: World, clock: TimeMachineFixture
) -> None:
    kernel = await open_kernel(world.home)
    try:
        heinzel_id = await approved(kernel, digest_contract())
        clock.move_to("2026-12-01T09:00:30Z")
        first = await kernel.tick_once()
        (woken,) = first.woken
        assert woken.causes == ["schedule", "source-changed", "created"]
        assert woken.keys[0] == f"{heinzel_id}@2026-12-01T09:00"
        assert woken.keys[-1] == f"{heinzel_id}@created"

        before = spine_kinds(world.home, heinzel_id)
        clock.move_to("2026-12-02T09:00:30Z")
        quiet = await kernel.tick_once()
        (skipped,) = quiet.skipped
        assert (skipped.reason, skipped.moved) == ("nothing-moved", [])
        assert skipped.keys == [f"{heinzel_id}@2026-12-02T09:00"]
        assert quiet.woken == [] and quiet.fetches == 1
        after = spine_kinds(world.home, heinzel_id)
        assert after == [*before, "turn.skipped"]
        assert after.count("attempt.started") == before.count("attempt.started") == 1

        clock.move_to("2026-12-02T09:05:00Z")
        idle = await kernel.tick_once()
        assert (idle.due, idle.fetches, idle.index_queries, idle.spines_opened) == (0, 0, 1, 0)

        (world.notes / "wednesday.md").write_text("# Wednesday\n- paired on the release\n")
        clock.move_to("2026-12-03T09:00:30Z")
        moved = await kernel.tick_once()
        (woken,) = moved.woken
        assert woken.causes == ["schedule", "source-changed"]
        assert spine_kinds(world.home, heinzel_id).count("attempt.started") == 2
    finally:
        await kernel.close()
