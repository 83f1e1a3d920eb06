"""The model's output as it streams: follows the end until the user scrolls up.

Chunks are appended to one text (the last ``KEEP_CHARS`` of it) shown
wrapped. While the view sits at its end it follows new output; a scroll up
stops that, and scrolling back to the end or "jump to latest" resumes it.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

KEEP_CHARS = 64 * 1024


class StreamView(VerticalScroll):
    """Streamed text with a follow-the-end mode."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = ""
        self.placeholder = ""
        self.following = True

    def compose(self) -> ComposeResult:
        yield Static(id="stream-text")

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value < old_value:
            self.following = False
        elif new_value >= self.max_scroll_y:
            self.following = True

    def reset(self, placeholder: str) -> None:
        """Empty the view for a new turn; ``placeholder`` shows until output arrives."""
        self.text = ""
        self.placeholder = placeholder
        self.following = True
        self._draw()
        self.scroll_home(animate=False)

    def append(self, chunk: str) -> None:
        if not chunk:
            return
        self.text = (self.text + chunk)[-KEEP_CHARS:]
        self._draw()
        if self.following:
            self.call_after_refresh(self.scroll_end, animate=False)

    def jump_to_latest(self) -> None:
        self.following = True
        self.scroll_end(animate=False)

    def _draw(self) -> None:
        shown = Text(self.text) if self.text else Text(self.placeholder, style="dim")
        self.query_one("#stream-text", Static).update(shown)
