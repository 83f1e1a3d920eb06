"""issue 14 item 5: relative times tick on every page, the heinzel page and the review desk
too, on the app's one ticker (``hz_tui.ticking``), with no spine change between.

The clock is moved with ``time_machine`` (``HZ_NOW`` unset); the world is built
at the moved-to time, so every time on screen starts at "now".
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from time_machine import TimeMachineFixture

from hz_kernel.client import LocalClient
from hz_tui.app import CockpitApp
from hz_tui.widgets.draft_queue import DraftQueue
from hz_tui.widgets.facts import Facts
from hz_tui.widgets.pending import PendingPanel
from hz_tui.widgets.step_line import StepLine
from tests.tui import worlds
from tests.tui.test_cockpit import SIZE, open_page, text_of, until
from tests.tui.test_review_desk import client_for, open_desk

NOW = "2026-12-01T09:00:00+00:00"


@pytest.fixture
async def world(
    tmp_path: Path,
    time_machine: TimeMachineFixture,
    pinned_clock: None,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[tuple[worlds.World, LocalClient]]:
    monkeypatch.delenv("HZ_NOW")
    time_machine.move_to(NOW, tick=False)
    made = await worlds.build(tmp_path, ("notes-digest",))
    client = await client_for(made)
    try:
        yield made, client
    finally:
        await client.close()


async def test_issue14_item5_the_heinzel_page_s_relative_times_tick(
    world: tuple[worlds.World, LocalClient], time_machine: TimeMachineFixture
) -> None:
    """ "Turns 1 · last now", "started now" and "placed now" move to "3m ago" on the ticker's
    next tick: they stayed frozen until the spine moved."""
    made, client = world
    app = CockpitApp(made.home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, made.ids["notes-digest"])
        await until(lambda: page.turn_panel.live.status == "finished")
        await pilot.pause()
        facts, pending = page.query_one(Facts), page.query_one(PendingPanel)
        steps = page.query_one(StepLine)
        assert "1 · last now" in text_of(facts)
        assert "started now" in text_of(steps) and "placed now" in text_of(pending)
        spine = page.turn_panel.follower.last_seq
        time_machine.shift(timedelta(minutes=3))
        app.ticker.tick()
        await pilot.pause()
        assert "1 · last 3m ago" in text_of(facts)
        assert "started 3m ago" in text_of(steps) and "placed 3m ago" in text_of(pending)
        assert page.turn_panel.follower.last_seq == spine  # the clock moved, not the spine


async def test_issue14_item5_the_review_desk_s_placed_column_ticks(
    world: tuple[worlds.World, LocalClient], time_machine: TimeMachineFixture
) -> None:
    """F4's Placed column ("11s ago") stayed frozen until the queue reloaded."""
    made, client = world
    app = CockpitApp(made.home, client)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_desk(pilot, 1)
        queue = screen.query_one(DraftQueue)
        key = queue.drafts[0].key
        assert queue.get_cell(key, "placed").plain == "now"
        time_machine.shift(timedelta(seconds=11))
        app.ticker.tick()
        await pilot.pause()
        assert queue.get_cell(key, "placed").plain == "11s ago"
        time_machine.shift(timedelta(hours=2))
        app.ticker.tick()
        await pilot.pause()
        assert queue.get_cell(key, "placed").plain == "2h ago"
