"""The review pane: the draft as placed against the document's text now, as a coloured diff."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static


class DiffView(VerticalScroll):
    """A scrollable diff (or a line saying why there is none)."""

    def compose(self) -> ComposeResult:
        yield Static(id="diff-text")

    def show(self, text: Text) -> None:
        self.query_one("#diff-text", Static).update(text)
        self.scroll_home(animate=False)

    def say(self, message: str) -> None:
        self.show(Text(message, style="dim"))
