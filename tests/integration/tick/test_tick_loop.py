"""The loop the daemon and the embedded cockpit run, and its interval."""

from __future__ import annotations

import asyncio

import pytest
from tick_helpers import open_kernel

from hz_kernel.commands.tick import run_tick_loop, tick_interval
from hz_kernel.config import Settings
from hz_kernel.errors import HzError
from hz_kernel.tick.report import TickReport
from tests.support.homes import World


def test_the_interval_comes_from_hz_tick_seconds_else_the_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HZ_TICK_SECONDS", raising=False)
    assert tick_interval(Settings()) == Settings().daemon.tick_seconds
    monkeypatch.setenv("HZ_TICK_SECONDS", "2.5")
    assert tick_interval(Settings()) == 2.5
    monkeypatch.setenv("HZ_TICK_SECONDS", "soon")
    with pytest.raises(HzError) as caught:
        tick_interval(Settings())
    assert caught.value.code == "HZT104"


async def test_the_loop_ticks_until_stopped(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HZ_TICK_SECONDS", "0.01")
    kernel = await open_kernel(world.home)
    stop = asyncio.Event()
    reports: list[TickReport] = []

    def seen(report: TickReport) -> None:
        reports.append(report)
        if len(reports) == 3:
            stop.set()

    try:
        await asyncio.wait_for(run_tick_loop(kernel, None, stop, on_report=seen), timeout=10)  # type: ignore[arg-type]
    finally:
        await kernel.close()
    assert len(reports) == 3
    assert all(r.due == 0 and r.index_queries == 1 for r in reports)
