"""The admission controller on its own: FIFO, deadlines, the memory floor, nested work."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

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
    controller = AdmissionController(1, 1000, sample=memory, poll_s=0.01)
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
    assert order == ["a"] and gate.slots_used == 1 and gate.queued == 3
    release.set()
    await asyncio.gather(*tasks)
    assert order == ["a", "b", "c", "d"] and gate.slots_used == 0
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
    assert gate.queued == 0
    with pytest.raises(AdmissionTimeout):
        async with gate.turn("expired", soon(-1)):
            pytest.fail("admitted after its deadline")
    waiter = asyncio.ensure_future(gate.turn("cancelled").__aenter__())
    await asyncio.sleep(0.01)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    assert gate.queued == 0 and gate.decisions[-1].reason == "cancelled"
    release.set()
    await running
    async with gate.turn("next", soon(1)):
        assert gate.slots_used == 1


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
    assert not admitted.is_set() and gate.queued == 1
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
    assert aborted.value.code == "HZD061" and gate.slots_used == 0


async def test_attempts_and_tools_inside_a_turn_reuse_its_slot(
    gate: AdmissionController, memory: Memory
) -> None:
    async with gate.turn("h1"):
        async with gate.attempt("h1"), gate.tool("h1"):
            assert gate.slots_used == 1
        with pytest.raises(AdmissionTimeout) as outside:
            async with gate.attempt("h2", soon(0.05)):
                pytest.fail("an attempt outside a turn needs a slot of its own")
        assert outside.value.decision.blocked_by == "capacity"
    with pytest.raises(AdmissionAborted):
        async with gate.turn("h1"):
            memory.mb = 10
            async with gate.tool("h1"):
                pytest.fail("a tool started under the memory floor")


def test_limits_come_from_settings() -> None:
    floor = AdmissionController.from_settings(DaemonSettings(max_concurrent_turns=3))
    assert floor.max_concurrent == 3 and floor.floor_mb == default_floor_mb() >= 1024
    assert (memory_available_mb() or 0) > 0
    explicit = AdmissionController.from_settings(DaemonSettings(min_free_memory_mb=0))
    assert explicit.floor_mb == 0
