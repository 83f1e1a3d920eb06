"""Issue 14 item 5 (attack): toasts never cover what the user needs at that moment.

Textual docks its toasts at the bottom right, over the heinzel page's
composer (where the user types) and the key bar; at the top right they
covered the review desk's document header, the table's column names and the
preview's name. hz stands them on whatever is under the page's body and
keeps them out of the body's first rows (``hz_tui.toast_place``). The rule
is checked as a property on the home, the review desk and a heinzel page at
80×24 and 120×40: no toast meets the header, the body's head rows, the
focused widget, or anything under the body. A repeat still groups (``×N``),
and under ``NO_COLOR`` a toast is framed, told apart from the page.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header, Input, Static, TextArea
from textual.widgets._toast import Toast

from hz_kernel.home import Home
from hz_tui.app import CockpitApp
from hz_tui.screens.heinzel import HeinzelScreen
from hz_tui.screens.help import HelpScreen
from hz_tui.screens.home import HomeScreen
from hz_tui.screens.notices import NoticesScreen
from hz_tui.screens.review import ReviewScreen
from hz_tui.toast_place import HEAD_ROWS
from hz_tui.widgets.key_bar import KeyBar
from tests.tui import homes, worlds
from tests.tui.cells import screen_cells, unreadable
from tests.tui.test_cockpit import SIZE, open_page, text_of, until
from tests.tui.test_review_desk import THREE, client_for, open_desk
from tests.tui.test_review_snapshots import desk, world_root
from tests.tui.test_snapshots import cockpit, then

__all__ = ["desk", "world_root"]  # fixtures of the review desk's pictures, shared

MESSAGE = "a toast long enough to wrap over two lines of its own, as errors often are"
SIZES = [SIZE, (80, 24)]


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


def head(widget: Widget) -> Region:
    """The first rows of a widget: the names of a table's columns, a document's header."""
    region = widget.region
    return Region(region.x, region.y, region.width, min(HEAD_ROWS, region.height))


def needed(screen: Screen[object]) -> Iterable[tuple[str, Region]]:
    """What a toast must leave clear on ``screen``: the header, the key bar, the focused
    input, the head of the body and everything under the body."""
    yield "header", screen.query_one(Header).region
    yield "key bar", screen.query_one(KeyBar).region
    if isinstance(screen.focused, Input | TextArea):
        yield "focused input", screen.focused.region
    if isinstance(screen, HeinzelScreen):
        yield "composer", screen.query_one("#composer").region
        yield "page head", head(screen.query_one("#page"))
    elif isinstance(screen, ReviewScreen):
        yield "status", screen.query_one("#review-status").region
        yield "document header", head(screen.query_one("#diff"))
        yield "queue head", head(screen.query_one("#queue"))
    elif isinstance(screen, HomeScreen):
        yield "status", screen.query_one("#status").region
        yield "activity line", screen.query_one("#activity-line").region
        yield "column names", head(screen.query_one("#heinzels"))
        if screen.query_one("#side").display:
            yield "preview head", head(screen.query_one("#preview"))


def assert_clear(app: CockpitApp, regions: list[Region]) -> None:
    width, height = app.size
    for region in regions:
        assert region.right <= width and region.bottom <= height, region
        for what, clear in needed(app.screen):
            assert not region.overlaps(clear), (what, region, clear)


@pytest.mark.parametrize("size", SIZES)
async def test_issue14_item5_toasts_on_a_heinzel_page_leave_the_composer_keys_and_head_clear(
    cockpit_home: Home, client, size: tuple[int, int]
) -> None:
    """Also while the user types a message of several lines: the composer grows and the
    toasts move up with it."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=size, notifications=True) as pilot:
        await app.loaded.wait()
        await open_page(pilot, homes.heinzel_id(1))
        app.clear_notifications()
        assert_clear(app, await show_toasts(app))
        composer = app.screen.query_one("#composer")
        short = composer.region.height
        await pilot.press("i", *"one", "ctrl+j", *"two", "ctrl+j", *"three", "ctrl+j", *"four")
        await until(lambda: composer.region.height > short)
        await pilot.pause()
        await until(lambda: all(t.region.bottom <= composer.region.y for t in toasts(app)))
        assert_clear(app, [toast.region for toast in toasts(app)])


@pytest.mark.parametrize("size", SIZES)
async def test_issue14_item5_toasts_on_the_home_leave_the_columns_preview_and_keys_clear(
    cockpit_home: Home, client, size: tuple[int, int]
) -> None:
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=size, notifications=True) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        app.clear_notifications()
        assert_clear(app, await show_toasts(app))


@pytest.mark.parametrize("size", SIZES)
async def test_attack_toasts_never_cover_the_help_dialog(
    cockpit_home: Home, client, size: tuple[int, int]
) -> None:
    """Attack pass: at 80×24 toasts covered the last lines of F1's keys. On a dialog they
    stand in the rows under it, or wait unseen for it to close, and come back after."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=size, notifications=True) as pilot:
        await app.loaded.wait()
        await pilot.press("f1")
        await until(lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause()
        for n in range(3):
            app.notify(f"{MESSAGE} ({n})", timeout=600)
        await pilot.pause()
        await pilot.pause()
        dialog = app.screen.query_one("#help").region
        assert dialog.height > 0
        assert not any(toast.region.overlaps(dialog) for toast in toasts(app))
        await pilot.press("escape")
        await until(lambda: isinstance(app.screen, HomeScreen) and bool(toasts(app)))


@pytest.mark.parametrize("size", SIZES)
async def test_issue14_item5_toasts_on_the_review_desk_leave_its_header_and_keys_clear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    monkeypatch.setenv("HZ_NOW", "2026-12-01T09:00:00+00:00")
    world = await worlds.build(tmp_path, THREE)
    client = await client_for(world)
    try:
        app = CockpitApp(world.home, client)
        async with app.run_test(size=size, notifications=True) as pilot:
            await open_desk(pilot, 3)
            app.clear_notifications()
            assert_clear(app, await show_toasts(app))
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


async def toasted(pilot: Pilot[int]) -> None:
    pilot.app.clear_notifications()
    await show_toasts(pilot.app)  # type: ignore[arg-type]
    await pilot.pause()


async def on_weekly(pilot: Pilot[int]) -> None:
    await open_page(pilot, homes.heinzel_id(1))


async def on_desk(pilot: Pilot[int]) -> None:
    await pilot.app.loaded.wait()  # type: ignore[attr-defined]
    await pilot.press("f4")
    screen = pilot.app.screen
    assert isinstance(screen, ReviewScreen)
    await until(lambda: screen.shown is not None and screen.queue.row_count == 2)
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=["120x40", "80x24"])
def test_issue14_item5_toasts_on_a_heinzel_page(
    snap_compare, snapshot_client, size: tuple[int, int]
) -> None:
    """issue 14 item 5: a grouped toast (×3) and two others stand on the composer; the
    header, the facts, the composer and the key bar stay clear."""
    home, client = snapshot_client
    app = cockpit(home, client, "hz-dark")
    assert snap_compare(app, terminal_size=size, run_before=then(on_weekly, toasted))


@pytest.mark.parametrize("size", SIZES, ids=["120x40", "80x24"])
def test_issue14_item5_toasts_on_the_home(
    snap_compare, snapshot_client, size: tuple[int, int]
) -> None:
    """issue 14 item 5: toasts stand on the activity and status lines; the column names and
    the preview's head stay clear."""
    home, client = snapshot_client
    app = cockpit(home, client, "hz-dark")
    assert snap_compare(app, terminal_size=size, run_before=then(toasted))


@pytest.mark.parametrize("size", SIZES, ids=["120x40", "80x24"])
def test_issue14_item5_toasts_on_the_review_desk(snap_compare, desk, size: tuple[int, int]) -> None:
    """issue 14 item 5: toasts stand on the status line; the document header down to "since
    last approved" stays clear."""
    home, client = desk
    app = cockpit(home, client, "hz-dark")
    assert snap_compare(app, terminal_size=size, run_before=then(on_desk, toasted))


def shown_texts(shown: list[Toast]) -> str:
    return " ".join(str(toast.render()) for toast in shown)


def shown_whole(app: CockpitApp, toast: Toast) -> bool:
    """Whether every row of ``toast`` is on screen (not cut by the rack's height)."""
    placed = app.screen._compositor.visible_widgets.get(toast)
    return placed is not None and placed[1].contains_region(placed[0])


async def test_s6_toasts_that_do_not_all_fit_over_a_grown_composer_show_the_newest_whole(
    cockpit_home: Home, client
) -> None:
    """At 80×24 a message of several lines leaves room for fewer toasts than arrive: the
    newest show whole and the oldest leave the rack (F5 keeps them), none shows cut."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await app.loaded.wait()
        await open_page(pilot, homes.heinzel_id(1))
        app.clear_notifications()
        composer = app.screen.query_one("#composer")
        short = composer.region.height
        await pilot.press("i", *"one")
        for line in ("two", "three", "four", "five", "six", "seven", "eight"):
            await pilot.press("ctrl+j", *line)
        await until(lambda: composer.region.height > short)
        for n in range(4):
            app.notify(f"{MESSAGE} ({n})", timeout=600)
        app.notify("HZU999: the newest toast", severity="error", timeout=600)

        def newest_whole() -> bool:
            shown = toasts(app)
            return bool(shown) and "the newest toast" in str(shown[-1].render())

        await until(newest_whole)
        await pilot.pause()
        shown = toasts(app)
        assert len(shown) < 5, "they cannot all fit at 80x24 over four lines of message"
        placed = app.screen._compositor.visible_widgets
        assert all(shown_whole(app, toast) for toast in shown), [
            (placed[t][:2] if t in placed else None, composer.region) for t in shown
        ]
        assert_clear(app, [toast.region for toast in shown])
        assert app.notices.showing == [
            notice for notice in app.notices.history if notice.message in shown_texts(shown)
        ], "a toast taken down no longer counts as showing"
        await pilot.press("f5")
        await until(lambda: isinstance(app.screen, NoticesScreen))
        listed = text_of(app.screen.query_one("#notices", Static))
        assert all(f"({n})" in listed for n in range(4)) and "the newest toast" in listed


@pytest.mark.parametrize("size", [*SIZES, (240, 70)])
async def test_s6_toasts_meet_the_right_edge_with_no_gutter_showing_the_page_through(
    cockpit_home: Home, client, size: tuple[int, int]
) -> None:
    """The rack's scrollbar gutter left two empty columns right of every toast, where the page
    under it showed through (a cut cell's "…" read as the toast's)."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=size, notifications=True) as pilot:
        await app.loaded.wait()
        app.clear_notifications()
        regions = await show_toasts(app)
        await pilot.pause()
        assert [region.right for region in regions] == [size[0]] * 3
