"""The daily cap across all heinzels: due turns are skipped and the user is told once a day."""

from __future__ import annotations

from tick_helpers import approved, contract, counted_shell, open_kernel, write_settings
from ulid import ULID

from hz_kernel.kernel import Kernel
from hz_kernel.vocabulary import Cause, TurnFinished, TurnStarted
from tests.support.homes import World


async def _spent(kernel: Kernel, heinzel_id: str, cause: Cause, usd: float) -> None:
    """What a priced turn leaves in the spine (the local model costs nothing)."""
    turn = str(ULID())
    key = f"{heinzel_id}@{turn}"
    async with kernel.holding(heinzel_id) as held:
        await held.append(
            TurnStarted(cause=cause, keys=[key], contract_version=1), turn=turn, key=key
        )
        await held.append(TurnFinished(disposition="drafted", causes=[cause], usd=usd), turn=turn)


def _watching(world: World, name: str) -> str:
    feed = world.root / f"{name}.txt"
    feed.write_text(f"{name}\n")
    return contract(name, inputs={"feed": counted_shell(feed, world.root / f"{name}.count")})


async def test_at_the_daily_cap_due_turns_are_skipped_and_the_user_told_once(
    world: World,
) -> None:
    write_settings(world.home, max_usd_per_day=0.5)
    kernel = await open_kernel(world.home)
    try:
        spender = await approved(kernel, _watching(world, "spender"))
        await approved(kernel, _watching(world, "saver"))
        await _spent(kernel, spender, "schedule", 0.6)
        first = await kernel.tick_once()
        assert first.woken == []
        assert sorted((s.name, s.reason) for s in first.skipped) == [
            ("saver", "cap"),
            ("spender", "cap"),
        ]
        (notice,) = first.notices
        assert "0.50 USD" in notice
        notices = await kernel.index.fetch("", "SELECT heinzel, key FROM notices")
        assert [n["key"] for n in notices] == [f"cap@{first.at.date().isoformat()}"]

        await approved(kernel, _watching(world, "latecomer"))
        second = await kernel.tick_once()
        assert [(s.name, s.reason) for s in second.skipped] == [("latecomer", "cap")]
        assert second.notices == []
        assert len(await kernel.index.fetch("", "SELECT key FROM notices")) == 1
    finally:
        await kernel.close()


async def test_show_reports_this_months_cost_by_cause(world: World) -> None:
    kernel = await open_kernel(world.home)
    try:
        heinzel_id = await approved(kernel, _watching(world, "weekly"))
        await _spent(kernel, heinzel_id, "schedule", 2.4)
        await _spent(kernel, heinzel_id, "asked", 0.7)
        cost = (await kernel.show("weekly")).cost_month
        assert cost.total == 3.1
        assert cost.by_cause == {"schedule": 2.4, "asked": 0.7}
    finally:
        await kernel.close()
