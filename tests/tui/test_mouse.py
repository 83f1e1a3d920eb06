"""issue 14 item 6: the mouse works where a user expects it, with Pilot over real kernels.

A click selects a heinzel row and a second click (or a double click) opens
it; a click on a key of the key bar runs it; a click on a draft shows it; a
click on a turn selects it and a second opens its transcript; the wheel
scrolls the transcript, the diff and the daemon log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widget import Widget

from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_tui.app import CockpitApp
from hz_tui.screens.heinzel import HeinzelScreen
from hz_tui.screens.logs import LogScreen
from hz_tui.screens.review import ReviewScreen
from hz_tui.screens.transcript import TranscriptScreen
from hz_tui.widgets.diff_view import DiffView
from hz_tui.widgets.heinzel_table import HEADER_LINES, HeinzelTable
from hz_tui.widgets.key_bar import KeyBar
from hz_tui.widgets.timeline import Timeline
from hz_tui.widgets.transcript_view import TranscriptView
from tests.tui import homes, worlds
from tests.tui.test_cockpit import SIZE, open_page, until

NOW = "2026-12-01T09:00:00+00:00"
#: Small enough that a transcript, a diff and a log overflow their panes.
SHORT = (100, 16)


async def wheel_down(pilot: Pilot[int], widget: Widget) -> None:
    """One turn of the wheel over ``widget`` (Pilot has clicks but no wheel)."""
    await pilot._post_mouse_events([events.MouseScrollDown], widget, offset=(2, 2))
    await pilot.pause()


async def test_issue14_item6_a_click_selects_a_heinzel_a_second_or_a_double_click_opens(
    cockpit_home: Home, client: LocalClient
) -> None:
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        table = app.get_home().query_one(HeinzelTable)
        assert table.cursor_row == 0
        await pilot.click(HeinzelTable, offset=(5, HEADER_LINES + 2))
        assert table.cursor_row == 2 and app.screen is app.get_home()
        chosen = table.cursor_key()
        await pilot.click(HeinzelTable, offset=(5, HEADER_LINES + 2))
        await until(lambda: isinstance(app.screen, HeinzelScreen))
        assert app.screen.heinzel_id == chosen  # type: ignore[attr-defined]
        await pilot.press("escape")
        await until(lambda: app.screen is app.get_home())
        await pilot.double_click(HeinzelTable, offset=(5, HEADER_LINES + 4))
        await until(lambda: isinstance(app.screen, HeinzelScreen))
        assert app.screen.heinzel_id == table.cursor_key() != chosen  # type: ignore[attr-defined]


async def test_issue14_item6_a_click_on_a_key_of_the_key_bar_runs_it(
    cockpit_home: Home, client: LocalClient
) -> None:
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        bar = app.screen.query_one(KeyBar)
        start, _, _ = next(span for span in bar._spans if span[2].key == "f4")
        await pilot.click(bar, offset=(start + 1, 0))
        await until(lambda: isinstance(app.screen, ReviewScreen))
        await pilot.pause()
        bar = app.screen.query_one(KeyBar)
        start, _, _ = next(span for span in bar._spans if span[2].key == "escape")
        await pilot.click(bar, offset=(start + 1, 0))
        await until(lambda: app.screen is app.get_home())


async def test_issue14_item6_a_click_on_a_turn_selects_it_and_a_second_opens_its_transcript(
    cockpit_home: Home, client: LocalClient
) -> None:
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, homes.heinzel_id(1))
        timeline = page.query_one(Timeline)
        await until(lambda: timeline.row_count >= 3)
        timeline.scroll_visible(animate=False)
        await pilot.pause()
        await pilot.click(timeline, offset=(4, 3))  # the header, then the third turn
        assert timeline.cursor_row == 2 and app.screen is page
        turn = timeline.coordinate_to_cell_key(timeline.cursor_coordinate).row_key.value
        await pilot.click(timeline, offset=(4, 3))
        await until(lambda: isinstance(app.screen, TranscriptScreen))
        await until(lambda: app.screen.model.turn == turn)  # type: ignore[attr-defined]


@pytest.fixture
async def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[LocalClient]:
    monkeypatch.setenv("HZ_NOW", NOW)
    world = await worlds.build(tmp_path, ("notes-digest", "team-digest", "ops-digest"))
    client = LocalClient(await Kernel.open(world.home, long_lived=True))
    try:
        yield client
    finally:
        await client.close()


async def test_issue14_item6_a_click_on_a_draft_shows_it_and_the_wheel_scrolls_its_diff(
    desk: LocalClient,
) -> None:
    app = CockpitApp(desk.kernel.home, desk)
    async with app.run_test(size=SHORT) as pilot:
        await app.loaded.wait()
        await pilot.pause(0.2)
        await pilot.press("f4")
        await until(lambda: isinstance(app.screen, ReviewScreen))
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        await until(lambda: screen.queue.row_count == 3 and screen.review is not None)
        third = screen.queue.drafts[2]
        await pilot.click(screen.queue, offset=(4, 3))  # the header, then the third draft
        await until(lambda: screen.review is not None and screen.review.key == third.key)
        pane = screen.query_one(DiffView)
        await until(lambda: pane.max_scroll_y > 0)
        await wheel_down(pilot, pane)
        assert pane.scroll_y > 0


async def test_issue14_item6_the_wheel_scrolls_the_transcript_and_the_daemon_log(
    cockpit_home: Home, client: LocalClient
) -> None:
    (cockpit_home.root / "daemon.log").write_text(
        "".join(f"2026-12-01 09:00:{n % 60:02d} INFO line {n}\n" for n in range(200))
    )
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SHORT) as pilot:
        await app.loaded.wait()
        app.push_screen(TranscriptScreen(homes.heinzel_id(1)))
        await until(lambda: isinstance(app.screen, TranscriptScreen))
        await pilot.pause()
        view = app.screen.query_one(TranscriptView)
        await until(lambda: view.max_scroll_y > 0)
        view.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        await wheel_down(pilot, view)
        assert view.scroll_y > 0
        await pilot.press("escape")
        app.action_logs()
        await until(lambda: isinstance(app.screen, LogScreen))
        await pilot.pause()
        log = app.screen.query_one("#log")
        await until(lambda: log.max_scroll_y > 0)
        log.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        top = log.scroll_y
        await wheel_down(pilot, log)
        assert log.scroll_y > top
