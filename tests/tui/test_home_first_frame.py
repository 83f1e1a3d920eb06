"""Issue 14 (cold start of the cockpit): the home's first frame is the rows, nothing it can
do without; before the kernel answered the listing, an empty table is no empty home.

A real kernel behind every test; the test only holds the first ``heinzel.list`` back until it
has looked at the home, as a kernel still opening would.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hz_kernel import operations as ops
from hz_kernel.api import HeinzelSummary, KernelStatus
from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_kernel.operations import Operation, Req, Resp
from hz_tui.app import CockpitApp
from hz_tui.messages import RowsUpdate
from hz_tui.widgets.activity import ActivityPane
from hz_tui.widgets.preview import HeinzelPreview
from tests.tui import homes
from tests.tui.test_cockpit import SIZE, text_of


class HoldsTheListing:
    """The kernel's client as it is, except that ``heinzel.list`` waits until ``go`` is set."""

    remote = False

    def __init__(self, inner: LocalClient) -> None:
        self.inner = inner
        self.where = inner.where
        self.go = asyncio.Event()

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp:
        if operation is ops.LIST:
            await self.go.wait()
        return await self.inner.call(operation, request)

    def subscribe(self, after: int | None = None) -> Any:
        return self.inner.subscribe(after)

    async def status(self) -> KernelStatus:
        return await self.inner.status()

    async def warm(self) -> None:
        await self.inner.warm()

    async def close(self) -> None:
        await self.inner.close()


async def test_issue14_cold_start_an_unanswered_listing_is_no_empty_home(
    home: Home, monkeypatch
) -> None:
    """issue 14 (cold start): until the kernel has listed the heinzels, the home does not say
    "No heinzels yet" (a home of hundreds flashed it at every start); once it has, an empty
    home says how to begin."""
    monkeypatch.setenv("HZ_NOW", homes.NOW)
    client = HoldsTheListing(await LocalClient.open(home))
    try:
        app = CockpitApp(home, client, live=False)  # type: ignore[arg-type]
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            empty = app.get_home().query_one("#empty")
            assert not empty.display
            client.go.set()
            await app.loaded.wait()
            await pilot.pause()
            assert empty.display
            assert "No heinzels yet" in text_of(empty)  # type: ignore[arg-type]
    finally:
        await client.close()


async def test_issue14_cold_start_the_rows_are_drawn_before_the_side_panes(
    cockpit_home: Home,
) -> None:
    """issue 14 (cold start): the frame that first shows the rows does not wait for the
    preview and the activity (a table of their own to lay out); they are filled right after
    it, from the same rows."""
    client = HoldsTheListing(await LocalClient.open(cockpit_home))
    try:
        app = CockpitApp(cockpit_home, client, live=False)  # type: ignore[arg-type]
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            home = app.get_home()
            preview = home.query_one(HeinzelPreview)
            activity = home.query_one("#activity", ActivityPane)
            when_listed: list[tuple[int, HeinzelSummary | None, bool]] = []

            def listed(update: RowsUpdate) -> None:
                when_listed.append((home.table.row_count, preview.item, activity.seeded))

            app.rows_changed.subscribe(home, listed)  # called after the home's own handler
            client.go.set()
            await app.loaded.wait()
            await pilot.pause()
            shown, previewed, seeded = when_listed[0]
            assert shown == len(app.rows) > 0
            assert previewed is None and not seeded
            assert preview.item is not None
            assert preview.item.id == home.table.cursor_key()
            assert activity.seeded
    finally:
        await client.close()
