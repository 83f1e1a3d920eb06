"""Issue 14 item 5/7: a proposed heinzel waits on the user for its contract, and the home says
so everywhere it counts what waits: the Waits column, the preview and the totals."""

from __future__ import annotations

from pathlib import Path

from hz_kernel.client import LocalClient
from hz_kernel.kernel import Kernel
from hz_tui.app import CockpitApp
from hz_tui.widgets.heinzel_table import HeinzelTable
from tests.tui import worlds
from tests.tui.test_cockpit import SIZE, until
from tests.tui.test_home_control_room import preview_text, status_text


async def test_a_proposed_heinzel_counts_as_waiting_on_the_user(
    tmp_path: Path, pinned_clock: None
) -> None:
    world = worlds.make_world(tmp_path)
    client = LocalClient(await Kernel.open(world.home, long_lived=True))
    try:
        made = await client.kernel.new(text=worlds.digest("notes-digest"))
        app = CockpitApp(world.home, client, live=False)
        async with app.run_test(size=SIZE):
            await app.loaded.wait()
            table = app.get_home().query_one(HeinzelTable)
            await until(lambda: made.id in table.items)
            await until(lambda: "1 waiting on you" in status_text(app))
            assert "contract (Enter, then a)" in preview_text(app)
            assert table.shown[made.id]["waits"].plain == "contract"
    finally:
        await client.close()
