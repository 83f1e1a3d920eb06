"""The scrolling body of a heinzel's page.

Its arrows are the page's, not the scroll's: ↑/↓ (and k/j) move the
timeline's highlighted turn from anywhere on the page, as they move the
cursor on every other screen, so a past turn's transcript is Enter away
without hunting for the timeline's focus. The page scrolls by PgUp/PgDn,
Home/End and the mouse wheel.
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll


class PageScroll(VerticalScroll, inherit_bindings=False):
    """A vertical scroll that leaves the arrow keys to its screen."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("home", "scroll_home", "Scroll home", show=False),
        Binding("end", "scroll_end", "Scroll end", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
    ]
