"""Issue 14 item 1, every terminal: NO_COLOR, low-colour terminals, and every width.

The cells checked are the compositor's, after Textual's line filters: what
the driver writes to the terminal (``tests/tui/cells.py``).
"""

from __future__ import annotations

import asyncio
import fcntl
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from textual.pilot import Pilot

from hz_kernel.client import LocalClient
from hz_kernel.home import Home
from hz_kernel.terms import Cause
from hz_kernel.vocabulary import ContractApproved, TurnFinished, TurnStarted
from hz_tui import settings, themes
from hz_tui.app import CockpitApp
from hz_tui.screens.heinzel import HeinzelScreen
from hz_tui.widgets.timeline import Timeline
from tests.tui import homes
from tests.tui.cells import row_text, screen_cells, unreadable
from tests.tui.test_cockpit import open_page, table_of
from tests.tui.test_snapshots import loaded

SIZE = (120, 40)


def cursor_line(app: CockpitApp) -> int:
    """The screen line of the home table's cursor row."""
    table = table_of(app)
    return table.region.y + 1 + table.cursor_row


async def test_no_color_gives_a_readable_screen_with_the_selection_in_reverse(
    cockpit_home: Home, client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14 item 1: with NO_COLOR no cell is black on black (or any colour on itself), on
    the home and on a heinzel's page, and the selected row is reverse video."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        cells = screen_cells(app)
        assert unreadable(cells) == []
        selected = cursor_line(app)
        assert "build-health" in row_text(cells, selected)
        # The table's own cells: the preview pane may sit beside it.
        table = table_of(app).region
        span = slice(table.x + 1, table.right - 1)
        assert all(cell.reverse for cell in cells[selected][span])
        assert not any(cell.reverse for cell in cells[selected + 1][span])
        await pilot.press("j")
        cells = screen_cells(app)
        assert "changelog" in row_text(cells, selected + 1)
        assert all(cell.reverse for cell in cells[selected + 1][span])

        await open_page(pilot, homes.heinzel_id(1))
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, HeinzelScreen)
        cells = screen_cells(app)
        assert "weekly-report" in "".join(row_text(cells, y) for y in range(len(cells)))
        assert unreadable(cells) == []


#: Marks read by their colour: scrollbar thumbs' eighth-blocks, the panes' tinted rules.
COLOUR_MARKS = set("▁▂▃▄▅▆▇▉▊▋▌▍▎▏")


async def test_issue14_item1_no_color_draws_no_mark_that_only_colour_explains(
    cockpit_home: Home, client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 14 item 1: under NO_COLOR no cell holds a bar that meant something only by its
    colour — a scrollbar thumb's eighth-block ends, the home's tinted pane rules — on the home,
    a scrolled heinzel page and a transcript; scrollbars are whole cells of reverse video and
    the selected row stays reverse video."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=(120, 12)) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        cells = screen_cells(app)
        assert [c for row in cells for c in row if c.text in COLOUR_MARKS] == []
        table = table_of(app).region
        assert all(c.reverse for c in cells[cursor_line(app)][table.x + 1 : table.right - 3])
        page = await open_page(pilot, homes.heinzel_id(1))
        await app.workers.wait_for_complete()
        await pilot.pause()
        for _ in range(3):
            assert page.query_one("#page").max_scroll_y > 0
            cells = screen_cells(app)
            assert [c for row in cells for c in row if c.text in COLOUR_MARKS] == []
            assert any(c.reverse for row in cells for c in row[-6:]), "the scrollbar's thumb"
            page.query_one("#page").scroll_relative(y=3, animate=False)
            await pilot.pause()


async def test_no_color_keeps_the_screen_monochrome_when_the_theme_key_is_pressed(
    cockpit_home: Home, client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14 item 1: F3 under NO_COLOR neither colours the screen nor saves a theme."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.press("f3")
        await pilot.pause()
        assert app.theme == themes.ANSI
        assert unreadable(screen_cells(app)) == []
    assert not settings.prefs_path(cockpit_home).exists()


@pytest.mark.parametrize("term", ["linux", "screen"])
async def test_a_low_colour_terminal_gets_the_ansi_theme_and_every_cursor_row_reads(
    cockpit_home: Home, client, monkeypatch: pytest.MonkeyPatch, term: str
) -> None:
    """Issue 14 item 1: TERM=linux / screen (sixteen colours) start in the ANSI theme, even
    over a saved choice, and with the cursor on any row — "waiting", "draft", "failed" among
    them — no cell shows its foreground on its own colour."""
    settings.save_prefs(cockpit_home, settings.CockpitPrefs(theme=themes.DARK))
    monkeypatch.setenv("TERM", term)
    monkeypatch.delenv("COLORTERM")
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        assert app.console.color_system == "standard"
        assert app.theme == themes.ANSI
        table = table_of(app)
        seen = set()
        for row in range(table.row_count):
            table.move_cursor(row=row)
            await pilot.pause()
            cells = screen_cells(app, bright_backgrounds=term != "linux")
            seen.add(row_text(cells, cursor_line(app)).split()[1])
            assert unreadable(cells) == [], row_text(cells, cursor_line(app))
        assert {"waiting", "asleep", "awake", "proposed"} <= seen
        await pilot.press("f3")
        assert app.theme != themes.ANSI
    assert settings.load_prefs(cockpit_home)[0].theme == themes.DARK


def _contrast(fg: object, bg: object) -> float:
    """WCAG's contrast ratio of two RGB triplets (the terminal's own colours count as 21:1)."""
    if not (isinstance(fg, tuple) and isinstance(bg, tuple)):
        return 21.0

    def luminance(rgb: tuple[int, int, int]) -> float:
        def channel(c: int) -> float:
            v = c / 255
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

        r, g, b = (channel(c) for c in rgb)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    light, dark = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


@pytest.mark.parametrize("theme", [themes.DARK, themes.LIGHT])
async def test_new_user_the_selected_row_reads_in_the_full_colour_themes(
    cockpit_home: Home, client, theme: str
) -> None:
    """New-user pass: in hz-dark "waiting" and "draft" on the cursor's blue read at 1.4:1 and
    "failed" at 1.2:1. With the cursor on each row, every letter of the selected row reads
    at 4.5:1 or better."""
    settings.save_prefs(cockpit_home, settings.CockpitPrefs(theme=theme))
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        assert app.theme == theme
        table = table_of(app)
        span = slice(table.region.x, table.region.right - 1)
        for row in range(table.row_count):
            table.move_cursor(row=row)
            await pilot.pause()
            cells = screen_cells(app)[cursor_line(app)][span]
            faint = [c.text for c in cells if c.text.strip() and _contrast(c.fg, c.bg) < 4.5]
            assert not faint, (row_text(screen_cells(app), cursor_line(app)), faint)


async def test_a_full_colour_terminal_keeps_the_saved_theme(
    cockpit_home: Home, client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14 item 1: only a low-colour terminal overrules the user's theme."""
    settings.save_prefs(cockpit_home, settings.CockpitPrefs(theme=themes.LIGHT))
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("COLORTERM")
    assert CockpitApp(cockpit_home, client, live=False).theme == themes.LIGHT


# -- widths ------------------------------------------------------------------------------

#: The narrowest a pane of text may get before it stops being usable.
USABLE_COLUMNS = 60
LONG_NAME = "quarterly-infrastructure-cost-and-capacity-review"


def key_bar_text(app: CockpitApp) -> str:
    cells = screen_cells(app)
    return row_text(cells, len(cells) - 1)


async def test_at_80_columns_the_key_bar_keeps_the_keys_that_matter(
    cockpit_home: Home, client
) -> None:
    """Issue 14 item 1: at 80×24 the keys that matter stay on the bar (Help above all, which
    lists the rest), on the home and on a heinzel's page; no key is cut in half. On the
    home, where one quits, Quit stays too (both passes looked for it at 80 columns); on a
    page quitting and the palette, in F1, give way to the page's own keys
    (tests/tui/test_key_bar_narrow.py); at 120 columns they show."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        bar = key_bar_text(app)
        for key in ("⏎ Open", "/ Filter", "a Approve", "f4 Review", "f1 Help", "^q Quit"):
            assert key in bar, (key, bar)
        await open_page(pilot, homes.heinzel_id(1))
        await pilot.pause()
        bar = key_bar_text(app)
        for key in ("esc Back", "i Write", "a Approve", "f1 Help", "f4 Review"):
            assert key in bar, (key, bar)
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        bar = key_bar_text(app)
        assert "^q Quit" in bar and bar.rstrip().endswith("Commands"), bar


async def test_at_80_columns_no_pane_of_the_heinzel_page_is_unusably_narrow(
    cockpit_home: Home, client
) -> None:
    """Issue 14 item 1: at 80×24 the page's side lists stack under the live turn, and every
    pane keeps at least ``USABLE_COLUMNS``; the home table keeps its key columns."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        header = row_text(screen_cells(app), table_of(app).region.y)
        for label in ("Name", "State", "Due", "Last turn", "Waits", "Today"):
            assert label in header
        assert table_of(app).widths["name"] >= len("roadmap-notes")
        page = await open_page(pilot, homes.heinzel_id(1))
        await app.workers.wait_for_complete()
        await pilot.pause()
        for pane in ("#main", "#side", "#stream", "#timeline", "#pending", "#lessons", "#facts"):
            assert page.query_one(pane).region.width >= USABLE_COLUMNS, pane
        assert page.query_one("#side").region.y > page.query_one("#main").region.y


async def test_at_240_columns_the_spare_width_goes_to_the_cut_columns(
    cockpit_home: Home, client
) -> None:
    """Issue 14 item 1: a name cut at 120 columns is shown whole at 240×70, and no pane of the
    heinzel page is narrow there either."""
    made = await client.kernel.new(
        text=homes.CONTRACT.format(
            name=LONG_NAME, schedule="0 9 * * *", asset="doc:long.md#x", max_usd="0.5"
        )
    )
    await client.kernel.approve(ref=made.id)
    for size, whole in (((120, 40), False), ((240, 70), True)):
        app = CockpitApp(cockpit_home, client, live=False)
        async with app.run_test(size=size) as pilot:
            await app.loaded.wait()
            await pilot.pause()
            table = table_of(app)
            cells = screen_cells(app)
            names = [row_text(cells, y)[1 : 1 + table.widths["name"]] for y in range(size[1])]
            assert (LONG_NAME in names) is whole, size
            if whole:
                assert table.widths["last_turn"] >= len("drafted 31d ago")
                page = await open_page(pilot, homes.heinzel_id(1))
                await app.workers.wait_for_complete()
                await pilot.pause()
                assert page.query_one("#side").region.width >= 38
                assert page.query_one("#main").region.width >= 3 * USABLE_COLUMNS


LONG_REPORT = (
    "drafted 40 lines from the incident notes, the on-call handover and the capacity board; "
    "two sections need a look"
)


async def test_issue14_item1_at_240_columns_the_timeline_gives_spare_width_to_its_cut_columns(
    cockpit_home: Home, client
) -> None:
    """issue 14 item 1: on a heinzel's page at 240 columns the timeline's cut columns — a turn's
    several causes and a long report — take the width the fixed columns leave, so both read
    whole; with more turns than the timeline shows, its scrollbar never pushes the cost out."""
    writer = homes.Writer(client.kernel, 30, "capacity-review")
    fingerprint = await writer.create(
        homes.days_ago(40), schedule="0 9 * * *", asset="doc:cap.md#x"
    )
    await writer.event(ContractApproved(version=1, fingerprint=fingerprint), homes.days_ago(40, 16))
    for day in range(30, 5, -1):
        await writer.turn(homes.days_ago(day))
    turn = homes.turn_id(30, 99)
    at = homes.days_ago(1)
    causes: list[Cause] = ["source-changed", "schedule", "asked"]
    await writer.event(
        TurnStarted(cause="source-changed", causes=causes, contract_version=1), at, turn=turn
    )
    finished = TurnFinished(disposition="drafted", causes=causes, report=LONG_REPORT, usd=0.4)
    await writer.event(finished, at + timedelta(seconds=30), turn=turn)
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=(240, 70)) as pilot:
        await app.loaded.wait()
        page = await open_page(pilot, writer.id)
        await app.workers.wait_for_complete()
        await pilot.pause()
        timeline = page.query_one(Timeline)
        assert timeline.row_count == 26 and timeline.max_scroll_y > 0
        cells = screen_cells(app)
        row = row_text(cells, timeline.region.y + 1)[timeline.region.x : timeline.region.right]
        assert "source-changed, schedule, asked" in row and LONG_REPORT in row, row
        assert "$0.40" in row and timeline.max_scroll_x == 0


# -- pictures ----------------------------------------------------------------------------

#: The pictures' home, at a fixed path (the header shows it), locked only while a test runs:
#: the shared snapshot home's session-long lock would keep a second worker waiting.
PICTURE_HOME = Path("/tmp/hz-cockpit-snapshots/terminals/home")


@pytest.fixture
def picture_client(
    pinned_clock: None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Home, LocalClient]]:
    PICTURE_HOME.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(PICTURE_HOME.parent / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(PICTURE_HOME, ignore_errors=True)
        home = Home.resolve(PICTURE_HOME, create=True)
        asyncio.run(homes.build(home))
        monkeypatch.setenv("HZ_HOME", str(PICTURE_HOME))
        opened = asyncio.run(LocalClient.open(home))
        try:
            yield home, opened
        finally:
            asyncio.run(opened.close())


async def _loaded(pilot: Pilot[int]) -> None:
    """As the other pictures: the rows and the totals line with today's spending."""
    await loaded(pilot)


async def _weekly_page(pilot: Pilot[int]) -> None:
    await _loaded(pilot)
    pilot.app.push_screen(HeinzelScreen(homes.heinzel_id(1)))
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_no_color_home_picture(snap_compare, picture_client, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    home, client = picture_client
    app = CockpitApp(home, client, live=False)
    assert snap_compare(app, terminal_size=(120, 40), run_before=_loaded)


def test_no_color_heinzel_page_picture(snap_compare, picture_client, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    home, client = picture_client
    app = CockpitApp(home, client, live=False)
    assert snap_compare(app, terminal_size=(120, 40), run_before=_weekly_page)


def test_linux_console_ansi_theme_picture(snap_compare, picture_client, monkeypatch) -> None:
    monkeypatch.setenv("TERM", "linux")
    monkeypatch.delenv("COLORTERM")
    home, client = picture_client
    app = CockpitApp(home, client, live=False)
    assert app.theme == themes.ANSI
    assert snap_compare(app, terminal_size=(120, 40), run_before=_loaded)


def test_heinzel_page_at_80x24_picture(snap_compare, picture_client) -> None:
    home, client = picture_client
    app = CockpitApp(home, client, live=False)
    assert snap_compare(app, terminal_size=(80, 24), run_before=_weekly_page)
