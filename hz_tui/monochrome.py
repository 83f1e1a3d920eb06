"""What the cockpit draws differently under ``NO_COLOR``: no marks that only colour explains.

Textual's monochrome filter strips colours but keeps the characters, so
anything drawn to be read by its colour turns into a bare glyph. A
scrollbar's thumb ends in eighth-blocks (``▄``, ``▏``) whose meaning was the
thumb's colour: under ``NO_COLOR`` the thumb is drawn in whole cells of
reverse video (the body already is), so it still reads as a thumb and
nothing else is left behind. The home's pane rules go too (``home.tcss``,
``-mono``): blank space parts the panes.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.segment import Segments
from textual.scrollbar import ScrollBar, ScrollBarRender

from hz_tui import themes


class _WholeCells(ScrollBarRender):
    VERTICAL_BARS: ClassVar[list[str]] = [" "] * 8
    HORIZONTAL_BARS: ClassVar[list[str]] = [" "] * 8


class ScrollBars(ScrollBarRender):
    """Textual's scrollbar, in whole cells while ``NO_COLOR`` is set."""

    @classmethod
    def render_bar(cls, *args: Any, **kwargs: Any) -> Segments:
        if themes.no_color():
            return _WholeCells.render_bar(*args, **kwargs)
        return super().render_bar(*args, **kwargs)


def install() -> None:
    """Every scrollbar draws through ``ScrollBars`` (the same as Textual's with colour)."""
    ScrollBar.renderer = ScrollBars
