"""Issue 14, every terminal (s8): what a width or a height leaves is laid out, never clipped.

The home table fits its region whatever narrows it (the filter line, a
scrollbar), keeps its sort mark on a narrow header and gives the width its
columns' texts leave unused to the one still cut; the kernel page keeps its
keys at 80 columns, its turns cut a name rather than drop a column, and the
home's totals line shows whole parts.
"""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from hz_kernel.client import LocalClient
from hz_kernel.connect import connect
from hz_kernel.home import Home
from hz_kernel.overview import TurnActivity
from hz_tui import rows
from hz_tui.app import CockpitApp
from hz_tui.screens.daemon import DaemonScreen, turns_table
from hz_tui.widgets.heinzel_table import CELL_PADDING, HeinzelTable
from hz_tui.widgets.status_line import StatusLine
from tests.tui import homes
from tests.tui.cells import row_text, screen_cells
from tests.tui.test_attach import daemon
from tests.tui.test_cockpit import table_of, text_of, until
from tests.tui.test_terminals import LONG_NAME, key_bar_text

__all__ = ["daemon"]  # the fixture: a daemon started on the standard home, stopped after


def drawn_width(table: HeinzelTable) -> int:
    """The cells the table's columns take, the last one's outer padding aside."""
    return sum(table.widths.values()) + CELL_PADDING * (2 * len(table.widths) - 1)


def table_lines(app: CockpitApp) -> list[str]:
    """The table's lines as the terminal shows them, header first."""
    table = table_of(app)
    cells = screen_cells(app)
    region = table.region
    return [row_text(cells, y)[region.x : region.right] for y in range(region.y, region.bottom)]


@pytest.mark.parametrize("size", [(120, 40), (120, 14), (120, 12), (80, 24), (80, 12)])
async def test_s8_an_open_filter_or_a_scrollbar_never_clips_the_home_tables_last_column(
    cockpit_home: Home, client: LocalClient, size: tuple[int, int]
) -> None:
    """s8 item 1: with the filter line open the table keeps its full width (the filter's side
    margin narrowed every sibling), and a scrollbar that comes with it (a short terminal)
    lays the columns out again: the columns fit, each cost reads whole."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=size) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        table = table_of(app)
        before = table.region.width
        assert drawn_width(table) <= table.scrollable_content_region.width
        await pilot.press("slash")
        await pilot.pause()
        assert table.region.width == before
        assert drawn_width(table) <= table.scrollable_content_region.width
        costs = [cell["cost"].plain for cell in table.shown.values()]
        lines = table_lines(app)
        assert lines[0].rstrip(" ▄▀█▁▂▃▅▆▇").endswith("Today"), lines[0]
        visible = lines[1 : 1 + min(table.row_count, table.scrollable_content_region.height - 1)]
        for line in visible:
            assert any(line.rstrip(" ▄▀█▁▂▃▅▆▇").endswith(cost) for cost in costs), line


async def test_s8_a_scrollbar_that_comes_with_more_rows_lays_the_columns_out_again(
    cockpit_home: Home, client: LocalClient
) -> None:
    """s8 item 1: a filter emptied in a short terminal brings the rows back and, with them, a
    scrollbar; no resize comes with it, and the table's last column was clipped ("$0.0")."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.loaded.wait()
        await pilot.press("slash", *"digest")
        await pilot.resize_terminal(120, 12)
        await pilot.pause()
        table = table_of(app)
        assert not table.show_vertical_scrollbar
        app.get_home().filter_bar.value = ""
        await pilot.pause()
        assert table.show_vertical_scrollbar
        assert drawn_width(table) <= table.scrollable_content_region.width
        costs = {cells["cost"].plain for cells in table.shown.values()}
        for line in table_lines(app)[1:]:
            assert line[: drawn_width(table)].rstrip().endswith(tuple(costs)), line


def test_s8_the_home_columns_fit_every_width_cut_rather_than_pushed_out() -> None:
    """s8 item 1: at every width down to the columns' least the columns fit (the last one's
    outer padding aside), with and without long texts."""
    long = {"name": 60, "last_turn": 30, "waits": 36, "contract": 63}
    for available in range(len(rows.COLUMNS) * (rows.CUT_MIN + 2), 300):
        for wanted in ({}, long):
            widths = rows.column_widths(available, CELL_PADDING, wanted)
            used = sum(widths.values()) + CELL_PADDING * (2 * len(widths) - 1)
            assert used <= available, (available, wanted, widths)
            assert min(widths.values()) >= rows.CUT_MIN


def header_cells(app: CockpitApp) -> dict[str, str]:
    """The header's label per column as drawn."""
    table = table_of(app)
    header = table_lines(app)[0]
    labels, left = {}, 0
    for key in rows.COLUMN_KEYS:
        width = table.widths[key] + 2 * CELL_PADDING
        labels[key] = header[left : left + width].strip()
        left += width
    return labels


async def test_s8_the_sort_mark_stays_on_a_narrow_header_whose_label_is_cut(
    cockpit_home: Home, client: LocalClient
) -> None:
    """s8 item 2: sorted by a column narrower than its label and the mark, the label is cut
    with ``…`` and the mark shows, either way round; a label that fits keeps its whole."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        home = app.get_home()
        for column, label in (("contract", "Contract"), ("waits", "Waits"), ("name", "Name")):
            for reverse, mark in ((False, "▲"), (True, "▼")):
                home.sort_by(column, reverse)
                await pilot.pause()
                shown = header_cells(app)[column]
                assert shown.endswith(f" {mark}"), (column, shown)
                if len(label) + 2 > table_of(app).widths[column]:
                    assert shown.startswith(label[:2]) and "…" in shown, (column, shown)
                else:
                    assert shown == f"{label} {mark}"


async def test_s8_at_240_columns_a_cut_column_takes_what_the_others_leave_unused(
    cockpit_home: Home, client: LocalClient
) -> None:
    """s8 item 3: at 240×70 a long name's contract ("… v1") was cut to 31 cells while Waits and
    Last turn kept 20 each for texts of 9 and 15: now the name reads whole, the contract
    gets what they leave, and no growing column keeps width its text does not use while
    another is cut."""
    made = await client.kernel.new(
        text=homes.CONTRACT.format(
            name=LONG_NAME, schedule="0 9 * * *", asset="doc:long.md#x", max_usd="0.5"
        )
    )
    await client.kernel.approve(ref=made.id)
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=(240, 70)) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        table = table_of(app)
        widths, wanted = table.widths, table.wanted
        cut = [key for key in rows.GROWING if wanted[key] > widths[key]]
        assert cut == ["contract"], (widths, wanted)
        for spec in rows.COLUMNS:
            if spec.key in rows.GROWING and spec.key not in cut:
                least = rows.NAME_MIN if spec.key == "name" else spec.narrow
                floor = max(least, len(spec.label) + 2, wanted[spec.key])
                assert widths[spec.key] == floor, (spec.key, widths, wanted)
        assert any(LONG_NAME in line for line in table_lines(app))
        contract = next(line for line in table_lines(app) if LONG_NAME in line)
        assert LONG_NAME[:40] in contract.split(LONG_NAME, 1)[1], contract


async def test_s8_at_80_columns_the_kernel_page_of_a_daemon_keeps_every_key_of_its_own(
    daemon: Home,
) -> None:
    """s8 item 4: a daemon's kernel page at 80×24 showed Restart but not l Daemon log; its own
    keys (refresh, restart, the log) stay, the palette key (F1 lists it) gives way."""
    client = await connect(daemon)
    app = CockpitApp(daemon, client)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await app.loaded.wait()
            await pilot.press("f2")
            await until(lambda: isinstance(app.screen, DaemonScreen))
            await until(lambda: "a local daemon" in text_of(app.screen.query_one("#facts")))
            await pilot.pause()
            bar = key_bar_text(app)
            for key in ("esc Back", "r Refresh", "^r Restart daemon", "l Daemon log", "f1 Help"):
                assert key in bar, (key, bar)
    finally:
        await app.link.close()


def test_s8_the_kernel_pages_turns_cut_a_long_name_rather_than_drop_a_column() -> None:
    """s8 item 4: 74 cells (the page at 80 columns, with its scrollbar) were too few for a long
    name: Rich cut every column alike and the Step vanished. The name is cut with "…"."""
    turns = [
        TurnActivity(heinzel="h1", name=LONG_NAME, step="outcome", elapsed_s=3700, usd=1.25),
        TurnActivity(heinzel="h2", name="weekly-report", queued="low-memory", elapsed_s=4000),
    ]
    out = io.StringIO()
    Console(file=out, width=74, color_system=None).print(turns_table(turns, rows.Palette()))
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["Heinzel", "State", "Step", "Elapsed", "Cost", "so", "far"]
    assert "outcome" in lines[1] and "$1.25" in lines[1] and "…" in lines[1], lines
    assert "queued: low memory" in lines[2] and "waited 1h 6m" in lines[2], lines


async def test_s8_at_80_columns_the_totals_line_shows_whole_parts(
    cockpit_home: Home, client: LocalClient
) -> None:
    """s8 item 4: the home's totals line, too long for 80 columns, was cut after a dangling
    "·"; it shows whole parts (the sort gives way first), and all of them when wide."""
    app = CockpitApp(cockpit_home, client, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.loaded.wait()
        home = app.get_home()
        await until(lambda: home.spend is not None)
        await pilot.pause()
        status = home.query_one(StatusLine)
        parts = [part.plain for part in status._parts.values()]
        shown = row_text(screen_cells(app), status.region.y).strip()
        assert shown.split(" · ") == [part for part in parts if not part.startswith("sorted")]
        await pilot.resize_terminal(160, 40)
        await pilot.pause()
        assert row_text(screen_cells(app), status.region.y).strip().split(" · ") == parts
