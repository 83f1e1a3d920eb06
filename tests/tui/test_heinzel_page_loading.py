"""s9 item 2 (attack): a heinzel page opened before its data came showed empty panels and
"No messages wait." as if there were nothing; it now says it is loading, then why not."""

from __future__ import annotations

import asyncio
from typing import Any

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_tui.app import CockpitApp
from hz_tui.screens.heinzel import HeinzelScreen
from hz_tui.widgets.costs import CostPanel
from hz_tui.widgets.facts import Facts
from hz_tui.widgets.inbox import InboxList
from hz_tui.widgets.lessons import LessonList
from hz_tui.widgets.pending import PendingPanel
from tests.tui import homes
from tests.tui.test_cockpit import SIZE, text_of, until


class Gated:
    """A client whose ``heinzel.show`` waits for ``gate``, then answers or raises ``refusal``."""

    def __init__(self, inner: LocalClient) -> None:
        self.inner = inner
        self.gate = asyncio.Event()
        self.refusal: HzError | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def call(self, operation: Any, request: Any) -> Any:
        if operation is ops.SHOW:
            await self.gate.wait()
            if self.refusal is not None:
                raise self.refusal
        return await self.inner.call(operation, request)


def page_text(page: HeinzelScreen) -> str:
    panels = (Facts, PendingPanel, InboxList, LessonList, CostPanel)
    return " ".join(" ".join(text_of(page.query_one(panel)) for panel in panels).split())


async def test_attack_a_page_before_its_data_says_loading_then_the_coded_failure(
    cockpit_home: Home,
) -> None:
    inner = await LocalClient.open(cockpit_home)
    client = Gated(inner)
    heinzel_id = homes.heinzel_id(1)
    try:
        app = CockpitApp(cockpit_home, client, live=False)  # type: ignore[arg-type]
        async with app.run_test(size=SIZE) as pilot:
            await app.loaded.wait()
            app.open_heinzel(heinzel_id)
            await until(lambda: isinstance(app.screen, HeinzelScreen))
            page = app.screen
            assert isinstance(page, HeinzelScreen)
            await pilot.pause()
            shown = page_text(page)
            assert "asking the kernel" in shown and "loading…" in shown, shown
            assert "No messages wait" not in shown and "Nothing waits on you" not in shown

            client.refusal = HzError("HZS090", "the index cannot be read", "index.sqlite")
            client.gate.set()
            await until(lambda: page.load_error is not None)
            await pilot.pause()
            shown = page_text(page)
            assert "HZS090" in shown and "not loaded" in shown, shown
            assert "No messages wait" not in shown and "loading…" not in shown

            client.refusal = None
            await pilot.press("r")
            await until(lambda: page.detail is not None)
            await pilot.pause()
            shown = page_text(page)
            assert "HZS090" not in shown and "not loaded" not in shown
    finally:
        await inner.close()
