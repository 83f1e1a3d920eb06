"""The home filter: words that must all match a heinzel's name, artifact, state or contract."""

from __future__ import annotations

from hz_tui import keymap
from hz_tui.widgets.in_order import InOrderInput


class FilterBar(InOrderInput):
    """An input that filters as you type; Escape clears it and hands the keys back to the
    table, Enter or Down hands them back with the filter kept."""

    BINDINGS = keymap.FILTER_BAR

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder="filter: name, artifact, state, contract", id=id)

    def on_mount(self) -> None:
        # A blinking cursor makes every screenshot differ; headless runs get a steady one.
        self.cursor_blink = not self.app.is_headless

    def action_clear(self) -> None:
        """One Escape clears the filter, as the empty table's hint says."""
        self.action_to_table()
        self.value = ""
        self.remove_class("-active")

    def action_to_table(self) -> None:
        """Hand the keys back to the table; the filter stays until cleared."""
        self.screen.focus_next("HeinzelTable")
