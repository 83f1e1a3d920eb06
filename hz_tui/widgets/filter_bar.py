"""The home filter: words that must all match a heinzel's name, artifact, state or contract."""

from __future__ import annotations

from textual import events
from textual.widgets import Input

from hz_tui import keymap, paste


class FilterBar(Input):
    """An input that filters as you type; Escape clears it and hands the keys back to the
    table, Enter or Down hands them back with the filter kept."""

    BINDINGS = keymap.FILTER_BAR

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder="filter: name, artifact, state, contract", id=id)

    def on_mount(self) -> None:
        # A blinking cursor makes every screenshot differ; headless runs get a steady one.
        self.cursor_blink = not self.app.is_headless

    def _on_paste(self, event: events.Paste) -> None:
        """A paste filters by its text: no colour codes or control characters in the filter."""
        event.prevent_default()  # Input's own handler would insert the raw text too
        super()._on_paste(events.Paste(paste.as_text(event.text)))
        event.stop()

    def action_clear(self) -> None:
        """One Escape clears the filter, as the empty table's hint says."""
        self.action_to_table()
        self.value = ""
        self.remove_class("-active")

    def action_to_table(self) -> None:
        """Hand the keys back to the table; the filter stays until cleared."""
        self.screen.focus_next("HeinzelTable")
