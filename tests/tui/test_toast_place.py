"""Issue 14 item 5 (attack): toasts never cover the composer, the key bar or the review keys.

Textual docks its toasts at the bottom right, over the heinzel page's
composer (where the user types) and the review desk's key bar; hz stacks
them at the top right, under the header. A repeat still groups (``×N``), and
under ``NO_COLOR`` a toast is framed, told apart from the page.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets._toast import Toast

from hz_kernel.home import Home
from hz_tui.app import CockpitApp
from hz_tui.widgets.key_bar import KeyBar
from tests.tui import homes, worlds
from tests.tui.cells import screen_cells, unreadable
from tests.tui.test_cockpit import SIZE, open_page, until
from tests.tui.test_review_desk import THREE, client_for, open_desk
from tests.tui.test_snapshots import cockpit, open_weekly, then

MESSAGE = "a toast long enough to wrap over two lines of its own, as errors often are"


def toasts(app: CockpitApp) -> list[Toast]:
    return [toast for toast in app.screen.query(Toast) if toast.region]


async def show_toasts(app: CockpitApp) -> list[Region]:
    """Post one notice three times (one grouped toast) and two others; their regions."""
    for _ in range(3):
        app.notify(MESSAGE, timeout=600)
    app.notify("HZU999: a second toast", severity="error", timeout=600)
    app.notify("a third toast", severity="warning", timeout=600)
    await until(lambda: len(toasts(app)) == 3)
    await until(lambda: any("×3" in str(t.render()) for t in toasts(app)))
    return [toast.region for toast in toasts(app)]


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
async def test_issue14_item5_toasts_on_a_heinzel_page_leave_the_composer_and_keys_clear(
    cockpit_home: Home, client, size: tuple[int, int]
) -> None:
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=size, notifications=True) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, homes.heinzel_id(1))
        app.clear_notifications()
        regions = await show_toasts(app)
        composer = page.query_one("#composer").region
        keys = page.query_one(KeyBar).region
        for region in regions:
            assert not region.overlaps(composer), (region, composer)
            assert not region.overlaps(keys), (region, keys)
            assert region.y >= 1  # under the header
            assert region.right <= size[0] and region.bottom <= size[1]


async def test_issue14_item5_toasts_on_the_review_desk_leave_its_key_bar_clear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HZ_NOW", "2026-12-01T09:00:00+00:00")
    world = await worlds.build(tmp_path, THREE)
    client = await client_for(world)
    try:
        app = CockpitApp(world.home, client)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            screen = await open_desk(pilot, 3)
            app.clear_notifications()
            regions = await show_toasts(app)
            keys = screen.query_one(KeyBar).region
            status = screen.query_one("#review-status").region
            for region in regions:
                assert not region.overlaps(keys) and not region.overlaps(status), region
    finally:
        await client.close()


async def test_issue14_item5_under_no_color_a_toast_is_framed(
    cockpit_home: Home, client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NO_COLOR strips the toast's background and its severity's coloured edge (a half block,
    read by its colour alone): a frame of box lines tells it from the page."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await app.loaded.wait()
        await open_page(pilot, homes.heinzel_id(1))
        app.clear_notifications()
        regions = await show_toasts(app)
        await pilot.pause()
        cells = screen_cells(app)
        assert unreadable(cells) == []
        for region in regions:
            rows = [
                "".join(c.text for c in cells[y][region.x : region.right])
                for y in range(region.y, region.bottom)
            ]
            assert rows[0][0] == "╭" and rows[0][-1] == "╮", rows
            assert rows[-1][0] == "╰" and rows[-1][-1] == "╯", rows
            assert all(row[0] == "│" and row[-1] == "│" for row in rows[1:-1]), rows
            assert not any(mark in row for row in rows for mark in "▌▐▊▎"), rows


def test_issue14_item5_toasts_at_the_top_right_of_a_heinzel_page(
    snap_compare, snapshot_client
) -> None:
    """issue 14 item 5: a grouped toast (×3) and two others stack under the header, the
    composer and the key bar stay clear."""
    home, client = snapshot_client
    app = cockpit(home, client, "hz-dark")

    async def toasted(pilot: Pilot[int]) -> None:
        pilot.app.clear_notifications()
        await show_toasts(pilot.app)  # type: ignore[arg-type]
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=then(open_weekly, toasted))
