"""Two cockpits on one home, each on its own kernel, both showing one heinzel's page.

Each app runs its own tasks; a test's call into one of them says which
(Textual finds "the app" of a call through a context variable), so keys go
through ``Windows.keys`` and direct calls follow ``Windows.into``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from textual._context import active_app
from textual.pilot import Pilot

from hz_kernel.client import LocalClient
from hz_kernel.kernel import Kernel
from hz_tui.app import CockpitApp
from hz_tui.widgets.composer import Composer
from tests.tui import worlds
from tests.tui.test_cockpit import SIZE, open_page


@dataclass
class Windows:
    first: CockpitApp
    second: CockpitApp
    one: Pilot[None]
    two: Pilot[None]
    mine: Composer
    """The first window's composer."""
    theirs: Composer
    """The second window's composer."""

    @staticmethod
    def into(app: CockpitApp) -> None:
        """Make ``app`` the one the next direct call belongs to."""
        active_app.set(app)

    async def keys(self, pilot: Pilot[None], *pressed: str) -> None:
        active_app.set(pilot.app)
        await pilot.press(*pressed)


@asynccontextmanager
async def two_windows(
    world: worlds.World, client: LocalClient, heinzel: str
) -> AsyncIterator[Windows]:
    """The first window on ``client``, the second on a kernel of its own; both pages open."""
    second_client = LocalClient(await Kernel.open(world.home))
    first, second = CockpitApp(world.home, client), CockpitApp(world.home, second_client)
    try:
        async with first.run_test(size=SIZE) as one, second.run_test(size=SIZE) as two:
            await first.loaded.wait()
            await second.loaded.wait()
            active_app.set(first)
            page_one = await open_page(one, heinzel)
            active_app.set(second)
            page_two = await open_page(two, heinzel)
            yield Windows(
                first, second, one, two, page_one.query_one(Composer), page_two.query_one(Composer)
            )
    finally:
        await second_client.close()
