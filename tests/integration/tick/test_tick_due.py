"""What the index says is due: outputs gone stale, waiting turns whose condition holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tick_helpers import approved, contract, open_kernel
from time_machine import TimeMachineFixture
from ulid import ULID

from hz_kernel.kernel import Kernel
from hz_kernel.vocabulary import (
    ApprovalObserved,
    DraftPlaced,
    TurnFinished,
    TurnStarted,
    TurnWaiting,
)
from tests.support.homes import World


async def _drafted(kernel: Kernel, heinzel_id: str, output: str) -> tuple[str, str]:
    """A finished turn that placed a draft, as the engine leaves it: (turn, draft key)."""
    turn = str(ULID())
    wake = f"{heinzel_id}@{turn}"
    draft = f"{heinzel_id}@v1@{turn}@doc:{output}.md#{output}"
    async with kernel.holding(heinzel_id) as held:
        await held.append(
            TurnStarted(cause="asked", keys=[wake], contract_version=1), turn=turn, key=wake
        )
        await held.append(
            DraftPlaced(
                key=draft,
                asset=f"doc:{output}.md#{output}",
                output=output,
                hash="d" * 64,
                size=10,
                contract_version=1,
            ),
            turn=turn,
            key=draft,
        )
        await held.append(TurnFinished(disposition="drafted", causes=["asked"]), turn=turn)
    return turn, draft


async def _approve_draft(kernel: Kernel, heinzel_id: str, draft: str) -> str:
    async with kernel.holding(heinzel_id) as held:
        event = await held.append(
            ApprovalObserved(key=draft, share_changed=0.1, output_fp="f" * 64)
        )
    return event.ts


async def test_an_approved_output_goes_stale_after_valid_for_and_wakes_once(
    world: World, clock: TimeMachineFixture
) -> None:
    (world.root / "summary.md").write_text("# Summary\n")
    kernel = await open_kernel(world.home)
    try:
        heinzel_id = await approved(kernel, contract("summary", valid_for="1d"))
        _, draft = await _drafted(kernel, heinzel_id, "summary")
        assert await kernel.plan_wakes(now=datetime.now(UTC) + timedelta(days=2)) == []
        decided = datetime.fromisoformat(await _approve_draft(kernel, heinzel_id, draft))
        valid_until = (decided + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

        assert await kernel.plan_wakes(now=decided + timedelta(hours=23)) == []
        later = decided + timedelta(days=1, minutes=1)
        clock.move_to(later.isoformat())
        report = await kernel.tick_once()
        (woken,) = report.woken
        assert report.problems == [] and woken.causes == ["stale"]
        assert woken.keys == [f"{heinzel_id}@stale:summary:{valid_until}"]
        again = await kernel.tick_once()
        assert again.due == 0
    finally:
        await kernel.close()


async def test_a_waiting_turn_is_due_when_its_draft_is_decided_or_its_time_is_up(
    world: World,
) -> None:
    kernel = await open_kernel(world.home)
    try:
        heinzel_id = await approved(kernel, contract("review"))
        _, draft = await _drafted(kernel, heinzel_id, "review")
        waiting = str(ULID())
        wake = f"{heinzel_id}@{waiting}"
        until = datetime.now(UTC) + timedelta(days=3)
        async with kernel.holding(heinzel_id) as held:
            await held.append(
                TurnStarted(cause="asked", keys=[wake], contract_version=1), turn=waiting, key=wake
            )
            on = {"kind": "approval", "key": draft}
            await held.append(TurnWaiting(step="act", until=until, on=on), turn=waiting)
        assert await kernel.plan_wakes() == []
        (timer,) = await kernel.plan_wakes(now=until + timedelta(minutes=1))
        assert (timer.action, timer.woken_by, timer.waiting_turn) == ("resume", "timer", waiting)

        await _approve_draft(kernel, heinzel_id, draft)
        (plan,) = await kernel.plan_wakes()
        assert (plan.action, plan.woken_by, plan.waiting_turn) == ("resume", "approval", waiting)
    finally:
        await kernel.close()


async def test_the_listing_says_when_each_heinzel_is_next_due(
    world: World, clock: TimeMachineFixture
) -> None:
    clock.move_to("2026-12-01T10:00:00Z")  # a Tuesday
    kernel = await open_kernel(world.home)
    try:
        friday = await approved(kernel, contract("friday", schedule="0 16 * * FRI"))
        hourly = await approved(kernel, contract("hourly", schedule="30 * * * *"))
        unscheduled = await approved(kernel, contract("unscheduled"))
        paused = await approved(kernel, contract("paused", schedule="30 * * * *"))
        await kernel.pause(ref=paused)
        due = {row.id: row.next_due for row in (await kernel.list_heinzels()).items}
        shown = (await kernel.show(friday)).heinzel.next_due
    finally:
        await kernel.close()
    assert due[friday] == shown == "2026-12-04T16:00:00Z"
    assert due[hourly] == "2026-12-01T10:30:00Z"
    assert due[unscheduled] is None and due[paused] is None
