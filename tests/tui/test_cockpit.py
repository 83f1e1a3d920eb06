"""The cockpit driven with Textual's Pilot against a real embedded kernel on a real home."""

from __future__ import annotations

import asyncio
import io
import json
import stat
from collections.abc import Callable

import pytest
from rich.console import Console
from textual.widgets import Header, Static

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.vocabulary import DraftPlaced
from hz_tui import keymap, settings
from hz_tui.app import CockpitApp
from hz_tui.screens.confirm import ConfirmScreen
from hz_tui.screens.daemon import DaemonScreen
from hz_tui.screens.heinzel import HeinzelScreen
from hz_tui.screens.help import HelpScreen
from hz_tui.screens.home import HomeScreen
from hz_tui.widgets.facts import Facts
from hz_tui.widgets.heinzel_table import HeinzelTable
from hz_tui.widgets.lessons import LessonList
from hz_tui.widgets.pending import PendingPanel
from hz_tui.widgets.timeline import Timeline
from tests.tui import homes

SIZE = (120, 40)


def text_of(widget: Static) -> str:
    """What a static widget shows, as plain text."""
    console = Console(width=200, file=io.StringIO(), record=True)
    console.print(widget.content)
    return console.export_text()


async def until(check: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait for ``check`` to hold (the live path crosses a thread and the kernel).

    The timeout only ends a test that would otherwise hang: a loaded CI
    machine may take many seconds for what takes milliseconds here.
    """
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def table_of(app: CockpitApp) -> HeinzelTable:
    return app.get_home().query_one(HeinzelTable)


def names_in_order(table: HeinzelTable) -> list[str]:
    return [table.items[heinzel_id].name for heinzel_id in table.order]


async def open_page(pilot, heinzel_id: str) -> HeinzelScreen:
    app = pilot.app
    app.open_heinzel(heinzel_id)
    await pilot.pause()
    page = app.screen
    assert isinstance(page, HeinzelScreen) and page.heinzel_id == heinzel_id
    await until(lambda: page.detail is not None)
    await pilot.pause()
    return page


async def test_shell_help_palette_kernel_page_and_theme(cockpit_home: Home, client) -> None:
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        assert app.link.where == f"embedded kernel on {cockpit_home.root}"
        assert app.sub_title in (app.link.where, "embedded kernel"), "brief where it is cut"
        assert isinstance(app.screen, HomeScreen) and app.screen.query_one(Header)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        shown = text_of(app.screen.query_one("#keys", Static))
        assert all(binding_id in shown for binding_id in keymap.binding_ids())
        await pilot.press("escape", "ctrl+p", *"kern")
        await pilot.pause(0.2)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, DaemonScreen)
        facts = " ".join(text_of(app.screen.query_one(Facts)).split())
        assert "embedded in this cockpit" in facts and "Heinzels 9" in facts
        assert f"Database {cockpit_home.index_path}" in facts
        assert app.theme == "hz-dark"
        await pilot.press("f3")
        assert app.theme == "hz-light"
    path = settings.prefs_path(cockpit_home)
    assert json.loads(path.read_text())["theme"] == "hz-light"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert CockpitApp(cockpit_home, client, live=False).theme == "hz-light"


async def test_no_color_and_keymap_from_cockpit_json(
    cockpit_home: Home, client, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.save_prefs(cockpit_home, settings.CockpitPrefs(keymap={"home.filter": "f"}))
    before = settings.prefs_path(cockpit_home).read_bytes()
    monkeypatch.setenv("NO_COLOR", "1")
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        assert app.theme == "hz-ansi"
        await pilot.press("f3", "f", *"dig")
        assert names_in_order(table_of(app)) == ["oncall-digest"]
    assert settings.prefs_path(cockpit_home).read_bytes() == before


async def test_home_filters_sorts_opens_by_keys_and_mouse(cockpit_home: Home, client) -> None:
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        table = table_of(app)
        assert table.row_count == 9 and names_in_order(table)[0] == "build-health"
        await pilot.press("slash", *"LOG")
        assert names_in_order(table) == ["changelog"]
        app.get_home().filter_bar.value = "waiting"
        await pilot.pause()
        assert names_in_order(table) == ["changelog", "oncall-digest", "roadmap-notes"]
        await pilot.press("escape", "escape")
        assert table.row_count == 9 and table.has_focus
        await pilot.press("s")
        assert table.sort_column == "state" and names_in_order(table)[0] == "release-notes"
        await pilot.press("S")
        assert names_in_order(table)[-1] == "release-notes"
        await pilot.click(HeinzelTable, offset=(table.size.width - 3, 0))  # "Today", the last
        assert table.sort_column == "cost" and names_in_order(table)[0] == "oncall-digest"
        table.sort_by("name", reverse=False)
        table.move_cursor(row=0)
        await pilot.press("down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, HeinzelScreen)
        assert app.screen.heinzel_id == homes.heinzel_id(2)
        await pilot.press("escape")
        assert isinstance(app.screen, HomeScreen)
        await pilot.click(HeinzelTable, offset=(5, 3))
        await pilot.click(HeinzelTable, offset=(5, 3))
        await pilot.pause()
        assert isinstance(app.screen, HeinzelScreen)


async def test_heinzel_page_shows_versions_lessons_pending_and_costs(
    cockpit_home: Home, client
) -> None:
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, homes.heinzel_id(1))
        assert page.detail is not None and page.detail.contract_versions == [1, 2]
        facts = text_of(page.query_one(Facts))
        assert "weekly-report v2" in facts and "v1, v2" in facts
        lessons = text_of(page.query_one(LessonList))
        assert "Risks go above the summary." in lessons
        assert "dismissed No adjectives in headings." in lessons
        costs = " ".join(text_of(page.query_one("#costs", Static)).split())
        assert "this month $0.72 schedule $0.65 approval $0.05 asked $0.02" in costs
        timeline = page.query_one(Timeline)
        assert [str(timeline.get_row_at(i)[1]) for i in range(timeline.row_count)] == [
            "asked",
            "schedule",
            "approval",
            "schedule",
        ]
        page = await open_page(pilot, homes.heinzel_id(3))
        assert "Who owns the pager" in text_of(page.query_one(PendingPanel))
        page = await open_page(pilot, homes.heinzel_id(4))
        assert "widens: inputs.board" in text_of(page.query_one(PendingPanel))
        assert len(app.screen_stack) == 3


async def test_usable_at_80x24_and_240x70(cockpit_home: Home, client) -> None:
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.loaded.wait()
        for width, height in ((80, 24), (240, 70)):
            await pilot.resize_terminal(width, height)
            await pilot.pause()
            table = table_of(app)
            assert table.widths["name"] >= 14 and table.row_count == 9
            assert sum(table.widths.values()) + 2 * len(table.widths) <= width


async def test_live_rows_follow_spine_appends_cell_by_cell(cockpit_home: Home, client) -> None:
    app = CockpitApp(cockpit_home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.pause(0.2)
        table = table_of(app)
        docs, weekly = homes.heinzel_id(6), homes.heinzel_id(1)
        untouched = table.shown[weekly]["name"]
        assert table.shown[docs]["waits"].plain == ""
        page = await open_page(pilot, docs)
        writer = await Kernel.open(cockpit_home)
        try:
            draft = DraftPlaced(
                key="k2", asset="doc:docs/index.md#pages", hash="c" * 64, size=9, contract_version=1
            )
            await writer.append(docs, draft, turn="01JC0CKP1T0000000600000099")
            await until(lambda: table.shown[docs]["waits"].plain == "draft")
            await until(
                lambda: "Draft in doc:docs/index.md#pages" in text_of(page.query_one(PendingPanel))
            )
            assert table.shown[weekly]["name"] is untouched
            assert table.row_count == 9
            newcomer = await writer.create_heinzel("newcomer")
            await until(lambda: newcomer in table.shown)
            assert table.row_count == 10
        finally:
            await writer.close()


async def test_actions_go_through_the_kernel_and_come_back_live(cockpit_home: Home, client) -> None:
    app = CockpitApp(cockpit_home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.pause(0.2)
        table = table_of(app)
        health = homes.heinzel_id(9)
        table.move_cursor(row=table.position[health])
        await pilot.press("p")
        await until(lambda: table.shown[health]["state"].plain == "paused")
        await pilot.press("p")
        await until(lambda: table.shown[health]["state"].plain == "asleep")
        page = await open_page(pilot, health)
        await pilot.press("R")
        await until(lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(lambda: page.detail is not None and page.detail.heinzel.state == "retired")
        await pilot.press("x")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HeinzelScreen)
        assert app.rows[health].state == "retired"


async def test_a_listing_read_before_a_change_never_hides_it(cockpit_home: Home, client) -> None:
    """A full reload that raced a live change (a reconnect while the user acts) keeps the
    newer row: rows are compared by their spine position, not by arrival."""
    from hz_tui.messages import RowsUpdate

    app = CockpitApp(cockpit_home, client)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        table = table_of(app)
        health = homes.heinzel_id(9)
        before = app.rows[health]
        paused = before.model_copy(update={"state": "paused", "seq": before.seq + 1})
        app.publish(RowsUpdate(rows=[paused]))
        await pilot.pause()
        assert table.shown[health]["state"].plain == "paused"
        others = [row for heinzel, row in app.rows.items() if heinzel != health]
        app.publish(RowsUpdate(rows=[*others, before], full=True))
        await pilot.pause()
        assert app.rows[health].state == "paused"
        assert table.shown[health]["state"].plain == "paused"
        later = paused.model_copy(update={"state": "asleep", "seq": paused.seq + 1})
        app.publish(RowsUpdate(rows=[later]))
        await pilot.pause()
        assert table.shown[health]["state"].plain == "asleep"
