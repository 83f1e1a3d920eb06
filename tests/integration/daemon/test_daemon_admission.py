"""The admission controller on its own: FIFO, deadlines, the memory floor, attempt slots."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import psutil
import pytest
from pydantic import ValidationError

from hz_kernel.config import DaemonSettings
from hz_kernel.daemon.admission import (
    AdmissionAborted,
    AdmissionController,
    AdmissionTimeout,
    default_floor_mb,
    memory_available_mb,
)


class Memory:
    """A memory sample the test sets (the controller's only input it does not own)."""

    def __init__(self, mb: int = 8000) -> None:
        self.mb = mb

    def __call__(self) -> int:
        return self.mb


@pytest.fixture
def memory() -> Memory:
    return Memory()


@pytest.fixture
async def gate(memory: Memory) -> AsyncIterator[AdmissionController]:
    controller = AdmissionController(1, 1, 1000, sample=memory, poll_s=0.01)
    yield controller
    await controller.close()


def soon(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


async def test_turns_are_admitted_first_in_first_out(gate: AdmissionController) -> None:
    order: list[str] = []
    release = asyncio.Event()

    async def turn(name: str) -> None:
        async with gate.turn(name):
            order.append(name)
            await release.wait()

    tasks = []
    for name in ("a", "b", "c", "d"):
        tasks.append(asyncio.ensure_future(turn(name)))
        await asyncio.sleep(0)
    await asyncio.sleep(0.01)
    assert order == ["a"] and gate.slots_used("turn") == 1 and gate.queued("turn") == 3
    release.set()
    await asyncio.gather(*tasks)
    assert order == ["a", "b", "c", "d"] and gate.slots_used("turn") == 0
    reasons = [(d.owner, d.reason) for d in gate.decisions]
    assert reasons == [("a", "free"), ("b", "capacity"), ("c", "capacity"), ("d", "capacity")]


async def test_queued_work_keeps_its_deadline_and_leaves_for_good(
    gate: AdmissionController,
) -> None:
    held = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with gate.turn("holder"):
            held.set()
            await release.wait()

    running = asyncio.ensure_future(holder())
    await held.wait()
    with pytest.raises(AdmissionTimeout) as late:
        async with gate.turn("late", soon(0.05)):
            pytest.fail("admitted past capacity")
    assert late.value.code == "HZD060" and late.value.decision.blocked_by == "capacity"
    assert late.value.decision.reason == "timeout" and late.value.decision.waited_s >= 0.04
    assert gate.queued("turn") == 0
    with pytest.raises(AdmissionTimeout):
        async with gate.turn("expired", soon(-1)):
            pytest.fail("admitted after its deadline")
    waiter = asyncio.ensure_future(gate.turn("cancelled").__aenter__())
    await asyncio.sleep(0.01)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    assert gate.queued("turn") == 0 and gate.decisions[-1].reason == "cancelled"
    release.set()
    await running
    async with gate.turn("next", soon(1)):
        assert gate.slots_used("turn") == 1


async def test_low_memory_blocks_new_work_until_it_recovers(
    gate: AdmissionController, memory: Memory
) -> None:
    memory.mb = 500
    admitted = asyncio.Event()

    async def turn() -> None:
        async with gate.turn("starved"):
            admitted.set()

    task = asyncio.ensure_future(turn())
    await asyncio.sleep(0.05)
    assert not admitted.is_set() and gate.queued("turn") == 1
    memory.mb = 4000
    await asyncio.wait_for(task, 2)
    decision = gate.decisions[-1]
    assert decision.admitted and decision.reason == "low-memory"


async def test_low_memory_aborts_running_work(gate: AdmissionController, memory: Memory) -> None:
    started = asyncio.Event()

    async def turn() -> None:
        async with gate.turn("big"):
            started.set()
            await asyncio.sleep(10)

    task = asyncio.ensure_future(turn())
    await started.wait()
    memory.mb = 10
    with pytest.raises(AdmissionAborted) as aborted:
        await asyncio.wait_for(task, 2)
    assert aborted.value.code == "HZD061" and gate.slots_used("turn") == 0


async def test_attempts_take_slots_of_their_own_pool(
    gate: AdmissionController, memory: Memory
) -> None:
    """Issue 13 item 2: a model attempt waits for an attempt slot, not a turn slot, so a turn
    holding the only turn slot still gets one; the attempt pool is FIFO and bounded too."""
    async with gate.turn("h1"):
        async with gate.attempt("h1"):
            assert gate.slots_used("turn") == 1 and gate.slots_used("attempt") == 1
            with pytest.raises(AdmissionTimeout) as second:
                async with gate.attempt("h2", soon(0.05)):
                    pytest.fail("a second attempt past max_concurrent_attempts")
            assert second.value.decision.blocked_by == "capacity"
        assert gate.slots_used("attempt") == 0
    with pytest.raises(AdmissionAborted):
        async with gate.turn("h1"):
            memory.mb = 10
            async with gate.attempt("h1"):
                pytest.fail("an attempt started under the memory floor")


async def test_issue13_item2_a_memory_floor_holds_turns_and_attempts_in_order(
    memory: Memory,
) -> None:
    """Issue 13 item 2: under the floor nothing new starts, whatever the free slots; each
    waiter says it waits for low memory, and all start in arrival order once memory is back."""
    gate = AdmissionController(4, 4, 1000, sample=memory, poll_s=0.01)
    try:
        memory.mb = 999
        order: list[str] = []
        told: list[tuple[str, str]] = []

        async def turn(name: str) -> None:
            async def waits(reason: str) -> None:
                told.append((name, reason))

            async with gate.turn(name, on_wait=waits), gate.attempt(name):
                order.append(name)

        tasks = []
        for name in ("a", "b", "c"):
            tasks.append(asyncio.ensure_future(turn(name)))
            await asyncio.sleep(0)
        await asyncio.sleep(0.05)
        assert order == [] and gate.queued("turn") == 3 and gate.running("turn") == 0
        assert told == [("a", "low-memory"), ("b", "low-memory"), ("c", "low-memory")]
        assert [t.blocked_by for t in gate.tickets("turn")] == ["low-memory"] * 3
        assert gate.last_sample == 999
        memory.mb = 1000
        await asyncio.wait_for(asyncio.gather(*tasks), 2)
        assert order == ["a", "b", "c"]
        turns = [d for d in gate.decisions if d.kind == "turn"]
        assert [(d.owner, d.admitted, d.reason) for d in turns] == [
            ("a", True, "low-memory"),
            ("b", True, "low-memory"),
            ("c", True, "low-memory"),
        ]
    finally:
        await gate.close()


async def test_issue13_item2_a_floor_with_no_reading_enforces_nothing() -> None:
    """Issue 13 item 2: where free memory cannot be read, work is admitted by capacity alone."""
    gate = AdmissionController(1, 1, 10**9, sample=lambda: None, poll_s=0.01)
    try:
        async with gate.turn("h"), gate.attempt("h"):
            assert gate.running("turn") == 1 and gate.last_sample is None
    finally:
        await gate.close()


def test_limits_come_from_settings() -> None:
    floor = AdmissionController.from_settings(
        DaemonSettings(max_concurrent_turns=3, max_concurrent_attempts=2)
    )
    assert floor.max_turns == 3 and floor.max_attempts == 2
    total_mb = psutil.virtual_memory().total >> 20
    assert floor.floor_mb == default_floor_mb() == max(1024, total_mb // 8)
    assert (memory_available_mb() or 0) > 0
    explicit = AdmissionController.from_settings(DaemonSettings(min_free_memory_mb=0))
    assert explicit.floor_mb == 0


@pytest.mark.parametrize(
    "bad",
    [
        {"max_concurrent_attempts": 0},
        {"max_concurrent_attempts": 257},
        {"max_concurrent_turns": 0},
        {"min_free_memory_mb": -1},
        {"max_concurrent_attempt": 2},
    ],
)
def test_issue13_item2_limits_out_of_bounds_or_misspelt_are_refused(bad: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        DaemonSettings.model_validate(bad)
