"""The home table: every heinzel as one keyed row, drawn line by line from cached strips.

A line-API widget rather than ``DataTable``: with hundreds of rows and a
live feed, what matters is that one changed heinzel costs one re-rendered
line. Each row's strip is built once from its cells and kept until those
cells change (or the column widths or palette do); the cursor, hover and
zebra backgrounds are laid under the cached strip when a line is drawn.

The widget keeps the summaries it was given (``items``), the cells of the
rows that pass the filter (``shown``) and their order (``order``). An
update compares new cells with shown ones and refreshes only the lines that
differ; a change to the sorted column re-sorts (a list of ids, not widgets).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from hz_kernel.clock import now_utc
from hz_kernel.overview import HeinzelSummary
from hz_tui import keymap, rows
from hz_tui.messages import OpenHeinzel
from hz_tui.rows import Palette, RowCell

CELL_PADDING = 1
HEADER_LINES = 1
SORT_MARKS = {False: "▲", True: "▼"}


class HeinzelTable(ScrollView, can_focus=True):
    """Heinzels, filtered and sorted, keyed by id."""

    BINDINGS = keymap.HEINZEL_TABLE

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "heinzel-table--header",
        "heinzel-table--header-sorted",
        "heinzel-table--cursor",
        "heinzel-table--even-row",
        "heinzel-table--hover",
    }

    DEFAULT_CSS = """
    HeinzelTable {
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        overflow-y: auto;
        &:focus {
            background-tint: $foreground 5%;
            & > .heinzel-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
        }
        & > .heinzel-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .heinzel-table--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .heinzel-table--header-sorted {
            color: $accent;
        }
        & > .heinzel-table--even-row {
            background: $surface-lighten-1 50%;
        }
        &:dark > .heinzel-table--even-row {
            background: $surface-darken-1 40%;
        }
        & > .heinzel-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .heinzel-table--hover {
            background: $block-hover-background;
        }
    }
    """

    class Sorted(Message):
        """The sort column or direction changed."""

    class Highlighted(Message):
        """The cursor is on another heinzel (or on none: ``heinzel_id`` None)."""

        def __init__(self, heinzel_id: str | None) -> None:
            super().__init__()
            self.heinzel_id = heinzel_id

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.items: dict[str, HeinzelSummary] = {}
        self.shown: dict[str, dict[str, RowCell]] = {}
        self.order: list[str] = []
        self.position: dict[str, int] = {}
        self.terms: list[str] = []
        self.sort_column = "name"
        self.sort_reverse = False
        self.palette = Palette()
        self.stale = False
        """The daemon is lost (reconnecting): running and queued turns show as not known."""
        self.widths: dict[str, int] = rows.column_widths(0, CELL_PADDING)
        self.wanted: dict[str, int] = {}
        """The longest text seen per growing column: spare width goes where text is cut."""
        self.cursor_row = 0
        self.hover_row: int | None = None
        self._strips: dict[str, Strip] = {}
        self._header: Strip | None = None
        self._highlighted: str | None = None

    @property
    def row_count(self) -> int:
        return len(self.order)

    # -- layout ------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        self._lay_out()

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        """A scrollbar that comes or goes changes the width the columns share (no resize)."""
        self._lay_out()

    def _lay_out(self) -> None:
        """Fit the columns to the width; a new layout drops every cached line."""
        widths = rows.column_widths(self.scrollable_content_region.width, CELL_PADDING, self.wanted)
        if widths != self.widths:
            self.widths = widths
            self._forget_lines()
        self._size_virtually()

    def _size_virtually(self) -> None:
        self.virtual_size = Size(
            self.scrollable_content_region.width, HEADER_LINES + len(self.order)
        )

    def _forget_lines(self) -> None:
        self._strips.clear()
        self._header = None
        self.refresh()

    def notify_style_update(self) -> None:
        """The header's look comes from CSS; row strips hold only their cells' own styles."""
        super().notify_style_update()
        self._header = None

    # -- data --------------------------------------------------------------------------

    def replace_all(self, items: Iterable[HeinzelSummary]) -> None:
        """Make the table show exactly ``items`` (the first load, or a manual refresh)."""
        fresh = {item.id: item for item in items}
        gone = [heinzel_id for heinzel_id in self.items if heinzel_id not in fresh]
        self.apply(fresh.values(), gone)

    def apply(self, changed: Iterable[HeinzelSummary], gone: Iterable[str] = ()) -> None:
        """Fold changed and removed heinzels in, redrawing only the rows that differ."""
        focused = self.cursor_key()
        reorder = False
        now = now_utc()
        for heinzel_id in gone:
            self.items.pop(heinzel_id, None)
            if self.shown.pop(heinzel_id, None) is not None:
                reorder = True
        for item in changed:
            self.items[item.id] = item
            visible = rows.matches(item, self.terms)
            if item.id in self.shown and not visible:
                del self.shown[item.id]
                reorder = True
            elif item.id in self.shown:
                reorder |= self._update(item.id, self._measured(self._cells(item, now)))
            elif visible:
                self.shown[item.id] = self._measured(self._cells(item, now))
                reorder = True
        if any(self.wanted.get(key, 0) > self.widths[key] for key in rows.GROWING):
            self._lay_out()
        if reorder:
            self._resort(focused)

    def _cells(self, item: HeinzelSummary, now: datetime) -> dict[str, RowCell]:
        return rows.cells(item, self.palette, now, stale=self.stale)

    def _measured(self, cells: dict[str, RowCell]) -> dict[str, RowCell]:
        """Note how wide the growing columns' texts are (for ``_lay_out``); the cells."""
        for key in rows.GROWING:
            text = cells[key].plain
            width = len(text) if text.isascii() else cell_len(text)
            self.wanted[key] = max(self.wanted.get(key, 0), width)
        return cells

    def retime(self) -> None:
        """Redraw the cells that show relative times (the clock moved on)."""
        self.apply(list(self.items.values()))

    def set_stale(self, stale: bool) -> None:
        """Mark the rows' running and queued turns as not known (or known again)."""
        if stale != self.stale:
            self.stale = stale
            self.retime()

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
        now = now_utc()
        self.shown = {
            heinzel_id: self.shown.get(heinzel_id) or self._cells(item, now)
            for heinzel_id, item in self.items.items()
            if rows.matches(item, terms)
        }
        self._resort(focused)

    def sort_by(self, column: str, reverse: bool | None = None) -> None:
        self.sort_column = column
        self.sort_reverse = self.sort_reverse if reverse is None else reverse
        self._header = None
        self._resort(self.cursor_key())
        self.post_message(self.Sorted())

    # -- cursor ------------------------------------------------------------------------

    def cursor_key(self) -> str | None:
        """The id of the highlighted heinzel, if any row is shown."""
        if not self.order:
            return None
        return self.order[min(self.cursor_row, len(self.order) - 1)]

    def move_cursor(self, *, row: int, animate: bool = False) -> None:
        """Put the cursor on ``row`` (clamped) and scroll it into view."""
        previous = self.cursor_row
        self.cursor_row = max(0, min(row, len(self.order) - 1))
        if previous != self.cursor_row:
            self._refresh_row(previous)
            self._refresh_row(self.cursor_row)
        self._scroll_to_cursor(animate)
        self._announce_cursor()

    def _announce_cursor(self) -> None:
        """Tell the screen when the highlighted heinzel changed (the preview follows it)."""
        key = self.cursor_key()
        if key != self._highlighted:
            self._highlighted = key
            self.post_message(self.Highlighted(key))

    def _scroll_to_cursor(self, animate: bool) -> None:
        rows_in_view = max(1, self.scrollable_content_region.height - HEADER_LINES)
        top = round(self.scroll_y)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=animate, immediate=True)
        elif self.cursor_row >= top + rows_in_view:
            self.scroll_to(y=self.cursor_row - rows_in_view + 1, animate=animate, immediate=True)

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - HEADER_LINES - 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(row=self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(row=self.cursor_row + 1)

    def action_page_up(self) -> None:
        self.move_cursor(row=self.cursor_row - self._page())

    def action_page_down(self) -> None:
        self.move_cursor(row=self.cursor_row + self._page())

    def action_first(self) -> None:
        self.move_cursor(row=0)

    def action_last(self) -> None:
        self.move_cursor(row=len(self.order) - 1)

    # -- actions -----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Opening and sorting leave the key bar (and do nothing) while no row shows."""
        if action in ("open", "sort_next", "sort_reverse"):
            return bool(self.order)
        return True

    def action_open(self) -> None:
        key = self.cursor_key()
        if key is not None:
            self.post_message(OpenHeinzel(key))

    def action_sort_next(self) -> None:
        keys = rows.COLUMN_KEYS
        self.sort_by(keys[(keys.index(self.sort_column) + 1) % len(keys)], reverse=False)

    def action_sort_reverse(self) -> None:
        self.sort_by(self.sort_column, reverse=not self.sort_reverse)

    # -- mouse -------------------------------------------------------------------------

    def on_click(self, event: events.Click) -> None:
        """Header: sort by that column (again: reverse). Row: select it; a second click opens."""
        event.stop()
        if event.y < HEADER_LINES:
            column = self._column_at(event.x)
            if column == self.sort_column:
                self.action_sort_reverse()
            elif column is not None:
                self.sort_by(column, reverse=False)
            return
        row = self._row_at(event.y)
        if row is None:
            return
        if row == self.cursor_row or event.chain > 1:
            self.move_cursor(row=row)
            self.action_open()
        else:
            self.move_cursor(row=row)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._hover(self._row_at(event.y))

    def on_leave(self, event: events.Leave) -> None:
        self._hover(None)

    def _hover(self, row: int | None) -> None:
        if row != self.hover_row:
            previous, self.hover_row = self.hover_row, row
            for changed in (previous, row):
                if changed is not None:
                    self._refresh_row(changed)

    def _row_at(self, y: int) -> int | None:
        if y < HEADER_LINES:
            return None
        row = round(self.scroll_y) + y - HEADER_LINES
        return row if 0 <= row < len(self.order) else None

    def _column_at(self, x: int) -> str | None:
        left = 0
        for key in rows.COLUMN_KEYS:
            left += self.widths[key] + 2 * CELL_PADDING
            if x < left:
                return key
        return None

    # -- drawing -----------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y < HEADER_LINES:
            return self._header_strip().crop_extend(0, width, self._header_style())
        row = round(self.scroll_y) + y - HEADER_LINES
        if row >= len(self.order):
            return Strip.blank(width, self.rich_style)
        style = self._row_style(row)
        strip = self._row_strip(self.order[row])
        if row == self.cursor_row:
            # The selection's own colours: a cell's warning or failure colour (or dimness) on
            # the cursor's blue read at 1.2:1 to 1.4:1 ("waiting", "failed" all but vanished).
            strip = Strip([_plain(segment) for segment in strip], strip.cell_length)
        return strip.apply_style(style).crop_extend(0, width, style)

    def _row_style(self, row: int) -> Style:
        style = self.rich_style
        if row % 2:
            style += self.get_component_rich_style("heinzel-table--even-row", partial=True)
        if row == self.hover_row:
            style += self.get_component_rich_style("heinzel-table--hover", partial=True)
        if row == self.cursor_row:
            style += self.get_component_rich_style("heinzel-table--cursor", partial=True)
        return style

    def _row_strip(self, heinzel_id: str) -> Strip:
        strip = self._strips.get(heinzel_id)
        if strip is None:
            cells = self.shown[heinzel_id]
            strip = self._line(
                (cells[key].plain, cells[key].style, cells[key].kept) for key in rows.COLUMN_KEYS
            )
            self._strips[heinzel_id] = strip
        return strip

    def _header_strip(self) -> Strip:
        if self._header is None:
            base = self._header_style()
            sorted_style = base + self.get_component_rich_style(
                "heinzel-table--header-sorted", partial=True
            )
            labels = []
            for spec in rows.COLUMNS:
                if spec.key == self.sort_column:
                    # The mark says how the rows are sorted: the label is cut, never the mark.
                    label = _cut(spec.label, self.widths[spec.key] - 2)
                    mark = SORT_MARKS[self.sort_reverse]
                    labels.append((f"{label} {mark}".lstrip(), sorted_style, 0))
                else:
                    labels.append((spec.label, base, 0))
            self._header = self._line(labels).apply_style(base)
        return self._header

    def _header_style(self) -> Style:
        return self.get_component_rich_style("heinzel-table--header")

    def _line(self, cells: Iterable[tuple[str, Style, int]]) -> Strip:
        """One row's segments: each cell padded, cut to its column with an ellipsis (before
        the last ``kept`` characters of its text, which stay)."""
        pad = Segment(" " * CELL_PADDING, Style())
        segments: list[Segment] = []
        for key, (text, style, kept) in zip(rows.COLUMN_KEYS, cells, strict=True):
            width = self.widths[key]
            segments += [pad, Segment(set_cell_size(_cut(text, width, kept), width), style), pad]
        return Strip(segments)

    def _refresh_row(self, row: int) -> None:
        self.refresh_line(HEADER_LINES + row)

    # -- internals ---------------------------------------------------------------------

    def _update(self, heinzel_id: str, cells: dict[str, RowCell]) -> bool:
        """Take the new cells; redraw the row if any differ. True when the sort value moved."""
        old = self.shown[heinzel_id]
        self.shown[heinzel_id] = cells
        changed = [key for key, cell in cells.items() if cell.signature != old[key].signature]
        if not changed:
            return False
        self._strips.pop(heinzel_id, None)
        self._refresh_row(self.position[heinzel_id])
        return any(key in (self.sort_column, "name") for key in changed)

    def _resort(self, focused: str | None) -> None:
        """Order the shown rows by the sort column (then name) and keep the cursor's heinzel."""
        column = self.sort_column
        self.order = sorted(
            self.shown,
            key=lambda h: (self.shown[h][column].order, self.shown[h]["name"].order),
            reverse=self.sort_reverse,
        )
        self.position = {heinzel_id: row for row, heinzel_id in enumerate(self.order)}
        self._strips = {h: strip for h, strip in self._strips.items() if h in self.shown}
        self._size_virtually()
        self.refresh()
        row = self.position.get(focused, self.cursor_row) if focused else self.cursor_row
        self.cursor_row = max(0, min(row, len(self.order) - 1))
        self._scroll_to_cursor(animate=False)
        self._announce_cursor()


def _cut(text: str, width: int, kept: int = 0) -> str:
    """``text`` cut to ``width`` cells with an ellipsis (whole when it fits); its last
    ``kept`` characters stay while the ellipsis has a character of the rest before it."""
    if cell_len(text) <= width:
        return text
    tail = text[len(text) - kept :] if kept else ""
    if tail and width >= cell_len(tail) + 2:
        return set_cell_size(text[: len(text) - kept], width - 1 - cell_len(tail)) + "…" + tail
    return set_cell_size(text, width - 1) + "…" if width > 0 else ""


def _plain(segment: Segment) -> Segment:
    """``segment`` without colours or dimness, keeping bold, italic and underline."""
    style = segment.style
    if style is None:
        return segment
    kept = Style(bold=style.bold, italic=style.italic, underline=style.underline)
    return Segment(segment.text, kept)
