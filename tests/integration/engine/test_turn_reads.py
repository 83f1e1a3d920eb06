"""Issue 16: what a turn of a heinzel the kernel holds does not read again.

A long-lived kernel (the daemon's) keeps the heinzel's session between turns:
its turns take their pinned contract version from there, not from disk.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hz_kernel.contracts import CompiledContract, ContractVersions
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from tests.support.homes import digest_contract, make_world


async def _turns(kernel: Kernel, heinzel_id: str, count: int) -> None:
    for _ in range(count):
        report = await kernel.wake(ref=heinzel_id)
        assert report.status == "started"
        await asyncio.wait_for(asyncio.gather(*kernel.tasks), 60)


async def test_issue16_turns_of_a_held_heinzel_read_their_contract_version_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world(tmp_path)
    reads: list[int] = []
    real = ContractVersions.read

    def counted(self: ContractVersions, number: int) -> tuple[str, CompiledContract]:
        reads.append(number)
        return real(self, number)

    monkeypatch.setattr(ContractVersions, "read", counted)
    kernel = await Kernel.open(Home.resolve(world.home), long_lived=True)
    try:
        made = await kernel.new(text=digest_contract())
        await kernel.approve(ref=made.id)
        reads.clear()
        await _turns(kernel, made.id, 3)
        turns = kernel.sessions[made.id].projection.turns.values()
        finished = [t for t in turns if t["status"] == "finished"]
    finally:
        await kernel.close()
    assert len(finished) == 3
    assert reads == [1]
