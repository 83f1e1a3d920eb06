"""Lines of a transcript, wrapped, drawn a screenful at a time, with search matches marked.

A turn's transcript may run to thousands of lines; a ``Static`` would lay
all of them out on every change. This view keeps them as ``Line``s, wraps
them to its width into rows (slices of a line), and renders only the rows
in sight (Textual's line API, as its ``Log`` does). Text from others is
drawn inert (``display.visible``): controls as symbols, hidden characters
as U+FFFD. Matches of a search are marked in place, the current one
apart; while the view sits at its end it follows what is added.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rich.cells import cell_len, get_character_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from hz_tui import display
from hz_tui.transcript import Line, Match


class TranscriptView(ScrollView, can_focus=True):
    """Wrapped, searchable lines; ``show`` replaces them, keeping the place (or the end)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "transcript--title",
        "transcript--heading",
        "transcript--label",
        "transcript--dim",
        "transcript--ok",
        "transcript--bad",
        "transcript--match",
        "transcript--current",
    }

    DEFAULT_CSS = """
    TranscriptView {
        height: 1fr;
        padding: 0 1;
        & > .transcript--title { text-style: bold; color: $text-accent; }
        & > .transcript--heading { text-style: bold; color: $accent; }
        & > .transcript--label { color: $text-secondary; text-style: bold; }
        & > .transcript--dim { color: $text-muted; }
        & > .transcript--ok { color: $text-success; }
        & > .transcript--bad { color: $text-error; }
        & > .transcript--match { background: $warning 40%; }
        & > .transcript--current { background: $warning; color: $background; text-style: bold; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[Line] = []
        self.rows: list[tuple[int, int, int]] = []
        """Each drawn row: the line it shows and the slice of that line's text."""
        self.first_row: list[int] = []
        self.wrapped_at = 0
        self.matches: list[Match] = []
        self.current: int | None = None
        self._marks: dict[int, list[tuple[int, int, bool]]] = {}
        self.following = False

    # -- content ----------------------------------------------------------------------------

    def show(self, lines: list[Line]) -> None:
        # A view that follows (a running turn) or that a reader scrolled to its end moves to
        # the new end; one whose text fitted the screen was never scrolled, so a past turn
        # read in several pages stays at its top.
        at_end = self.max_scroll_y > 0 and self.scroll_y >= self.max_scroll_y
        follow = self.following or (bool(self.rows) and at_end)
        self.lines = [line if line.text.isprintable() else _inert(line) for line in lines]
        self._wrap()
        if follow:
            self.following = True
            self.scroll_end(animate=False, immediate=True)

    def text_shown(self) -> str:
        """Every line as drawn, one per line (what a reader of the screen could copy)."""
        return "\n".join(line.text for line in self.lines)

    def on_resize(self) -> None:
        if self.scrollable_content_region.width != self.wrapped_at:
            self._wrap()
            if self.following:
                self.scroll_end(animate=False, immediate=True)

    def watch_show_vertical_scrollbar(self) -> None:
        """The scrollbar came (or went) after the rows were wrapped: no resize says so, but
        the rows must wrap to the width it leaves, or it hides their last letters."""
        self.on_resize()

    def _wrap(self) -> None:
        width = max(self.scrollable_content_region.width, 10)
        self.wrapped_at = self.scrollable_content_region.width
        rows: list[tuple[int, int, int]] = []
        first: list[int] = []
        for number, line in enumerate(self.lines):
            first.append(len(rows))
            rows.extend((number, start, end) for start, end in _spans(line.text, width))
        self.rows, self.first_row = rows, first
        self.virtual_size = Size(width, len(rows))
        self.refresh()

    # -- following ------------------------------------------------------------------------

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value < old_value:
            self.following = False
        elif new_value >= self.max_scroll_y:
            self.following = True

    def follow(self) -> None:
        self.following = True
        self.scroll_end(animate=False, immediate=True)

    # -- search ---------------------------------------------------------------------------

    def mark(self, matches: list[Match], current: int | None, *, into_sight: bool = True) -> None:
        """Mark ``matches``; the one at index ``current`` is set apart (and brought into sight)."""
        self.matches, self.current = matches, current
        marks: dict[int, list[tuple[int, int, bool]]] = {}
        for index, match in enumerate(matches):
            for number, start, end in match.spans(self.lines):
                marks.setdefault(number, []).append((start, end, index == current))
        self._marks = marks
        if into_sight and current is not None and matches:
            self.following = False
            row = self.row_of(matches[current])
            self.scroll_to(y=max(0, row - self.size.height // 3), animate=False, immediate=True)
        self.refresh()

    def row_of(self, match: Match) -> int:
        row = self.first_row[match.line]
        while (
            row + 1 < len(self.rows)
            and self.rows[row + 1][0] == match.line
            and self.rows[row + 1][1] <= match.start
        ):
            row += 1
        return row

    # -- drawing ---------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        index = round(self.scroll_offset.y) + y
        if index >= len(self.rows):
            return Strip.blank(width, base)
        number, start, end = self.rows[index]
        line = self.lines[number]
        style = base
        if line.tone != "body":
            style = base + self.get_component_rich_style(f"transcript--{line.tone}")
        text = line.text[start:end]
        segments = self._segments(text, number, start, end, style)
        return Strip(segments).crop_extend(0, width, base)

    def _segments(
        self, text: str, number: int, start: int, end: int, style: Style
    ) -> list[Segment]:
        marks = [
            (max(s, start) - start, min(e, end) - start, current)
            for s, e, current in self._marks.get(number, ())
            if s < end and e > start
        ]
        if not marks:
            return [Segment(text, style)]
        match = self.get_component_rich_style("transcript--match")
        current = self.get_component_rich_style("transcript--current")
        segments = []
        at = 0
        for s, e, is_current in marks:
            if s > at:
                segments.append(Segment(text[at:s], style))
            segments.append(Segment(text[s:e], style + (current if is_current else match)))
            at = e
        if at < len(text):
            segments.append(Segment(text[at:], style))
        return segments


def _inert(line: Line) -> Line:
    """``line`` with what would drive the terminal or hide words made visible, one character
    for one (search offsets stay right); a tab is a space."""
    return dataclasses.replace(line, text=display.visible(line.text).replace("\t", " "))


def _spans(text: str, width: int) -> list[tuple[int, int]]:
    """Slices of ``text`` that fit ``width`` cells, broken after a space where one is near."""
    if not text:
        return [(0, 0)]
    if text.isascii():
        if len(text) <= width:
            return [(0, len(text))]
        spans = []
        start = 0
        while len(text) - start > width:
            cut = text.rfind(" ", start, start + width)
            end = cut + 1 if cut > start + width // 2 else start + width
            spans.append((start, end))
            start = end
        spans.append((start, len(text)))
        return spans
    if cell_len(text) <= width:
        return [(0, len(text))]
    spans = []
    start = cells = 0
    for at, char in enumerate(text):
        size = get_character_cell_size(char)
        if cells + size > width and at > start:
            spans.append((start, at))
            start, cells = at, 0
        cells += size
    spans.append((start, len(text)))
    return spans
