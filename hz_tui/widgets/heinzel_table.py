"""The home table: every heinzel as one keyed row, changed cell by cell, never rebuilt per event.

Rows are keyed by heinzel id. The widget keeps the summaries it was given
(``items``) and the cells it shows (``shown``); an update compares new cells
with shown ones and touches only what differs. A filter removes and re-adds
rows (``DataTable`` cannot hide one). A full rebuild happens only when the
width changes the column layout.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from textual import events
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist

from hz_kernel.api import HeinzelSummary
from hz_kernel.clock import now_utc
from hz_tui import keymap, rows
from hz_tui.messages import OpenHeinzel
from hz_tui.rows import Cell, Palette

CELL_PADDING = 1


class HeinzelTable(DataTable[Cell]):
    """Heinzels, filtered and sorted, keyed by id."""

    BINDINGS = keymap.HEINZEL_TABLE

    class Sorted(Message):
        """The sort column or direction changed."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True, cell_padding=CELL_PADDING)
        self.items: dict[str, HeinzelSummary] = {}
        self.shown: dict[str, dict[str, Cell]] = {}
        self.terms: list[str] = []
        self.sort_column = "name"
        self.sort_reverse = False
        self.palette = Palette()
        self.widths: dict[str, int] = {}

    # -- layout ------------------------------------------------------------------------

    def on_mount(self) -> None:
        self._lay_out(self.size.width or 80)

    def on_resize(self, event: events.Resize) -> None:
        widths = rows.column_widths(self._usable(event.size.width), CELL_PADDING)
        if widths != self.widths:
            self._lay_out(event.size.width)

    def _usable(self, width: int) -> int:
        return max(0, width - 2)

    def _lay_out(self, width: int) -> None:
        """(Re)create the columns for this width and put the visible rows back."""
        focused = self.cursor_key()
        self.widths = rows.column_widths(self._usable(width), CELL_PADDING)
        self.clear(columns=True)
        for spec in rows.COLUMNS:
            self.add_column(spec.label, key=spec.key, width=self.widths[spec.key])
        shown, self.shown = self.shown, {}
        now = now_utc()
        for heinzel_id in shown:
            self._add(heinzel_id, now)
        self._resort(focused)

    # -- data --------------------------------------------------------------------------

    def replace_all(self, items: Iterable[HeinzelSummary]) -> None:
        """Make the table show exactly ``items`` (the first load, or a manual refresh)."""
        fresh = {item.id: item for item in items}
        gone = [heinzel_id for heinzel_id in self.items if heinzel_id not in fresh]
        self.apply(fresh.values(), gone)

    def apply(self, changed: Iterable[HeinzelSummary], gone: Iterable[str] = ()) -> None:
        """Fold changed and removed heinzels in, touching only the cells that differ."""
        focused = self.cursor_key()
        reorder = False
        now = now_utc()
        for heinzel_id in gone:
            self.items.pop(heinzel_id, None)
            if heinzel_id in self.shown:
                self._remove(heinzel_id)
        for item in changed:
            self.items[item.id] = item
            visible = rows.matches(item, self.terms)
            if item.id in self.shown and not visible:
                self._remove(item.id)
            elif item.id in self.shown:
                reorder |= self._update(item.id, rows.cells(item, self.palette, now))
            elif visible:
                self._add(item.id, now)
                reorder = True
        if reorder:
            self._resort(focused)

    def retime(self) -> None:
        """Redraw the cells that show relative times (the clock moved on)."""
        self.apply(list(self.items.values()))

    def restyle(self, palette: Palette) -> None:
        """Re-render every cell with a new theme's palette."""
        self.palette = palette
        self.retime()

    def set_filter(self, text: str) -> None:
        """Show only heinzels whose name, artifact, state or contract match every word."""
        terms = rows.filter_terms(text)
        if terms == self.terms:
            return
        focused = self.cursor_key()
        self.terms = terms
        for heinzel_id in list(self.shown):
            if not rows.matches(self.items[heinzel_id], terms):
                self._remove(heinzel_id)
        added = False
        now = now_utc()
        for heinzel_id, item in self.items.items():
            if heinzel_id not in self.shown and rows.matches(item, terms):
                self._add(heinzel_id, now)
                added = True
        if added:
            self._resort(focused)

    def sort_by(self, column: str, reverse: bool | None = None) -> None:
        self.sort_column = column
        self.sort_reverse = self.sort_reverse if reverse is None else reverse
        self._resort(self.cursor_key())
        self.post_message(self.Sorted())

    # -- actions -----------------------------------------------------------------------

    def action_open(self) -> None:
        key = self.cursor_key()
        if key is not None:
            self.post_message(OpenHeinzel(key))

    def action_sort_next(self) -> None:
        keys = rows.COLUMN_KEYS
        self.sort_by(keys[(keys.index(self.sort_column) + 1) % len(keys)], reverse=False)

    def action_sort_reverse(self) -> None:
        self.sort_by(self.sort_column, reverse=not self.sort_reverse)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        column = str(event.column_key.value)
        if column == self.sort_column:
            self.action_sort_reverse()
        else:
            self.sort_by(column, reverse=False)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(OpenHeinzel(event.row_key.value))

    # -- internals ---------------------------------------------------------------------

    def cursor_key(self) -> str | None:
        """The id of the highlighted heinzel, if any row is shown."""
        if not self.row_count:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except CellDoesNotExist:
            return None

    def _add(self, heinzel_id: str, now: datetime) -> None:
        cells = rows.cells(self.items[heinzel_id], self.palette, now)
        self.shown[heinzel_id] = cells
        self.add_row(*(cells[key] for key in rows.COLUMN_KEYS), key=heinzel_id)

    def _remove(self, heinzel_id: str) -> None:
        self.shown.pop(heinzel_id, None)
        self.remove_row(heinzel_id)

    def _update(self, heinzel_id: str, cells: dict[str, Cell]) -> bool:
        """Update the cells that changed; True when the sort column's value moved."""
        old = self.shown[heinzel_id]
        moved = False
        for key, cell in cells.items():
            if cell.signature != old[key].signature:
                self.update_cell(heinzel_id, key, cell)
                moved |= key in (self.sort_column, "name")
        self.shown[heinzel_id] = cells
        return moved

    def _resort(self, focused: str | None) -> None:
        if not self.row_count:
            return
        self.sort(
            self.sort_column,
            "name",
            key=lambda pair: (pair[0].order, pair[1].order),
            reverse=self.sort_reverse,
        )
        if focused is not None and focused in self.shown:
            self.move_cursor(row=self.get_row_index(focused), animate=False)
