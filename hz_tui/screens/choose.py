"""A small dialog that picks one of a few items: which lesson to dismiss."""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from hz_tui import keymap


class ChooseScreen(ModalScreen[str | None]):
    """Returns the id of the item chosen (Enter or a click), or None (Escape).

    ``typed``: a dialog that opens while the user is typing (the composer's
    conflict) hands the characters that arrive after it back to the text
    they were meant for, instead of dropping them.
    """

    CSS_PATH = "choose.tcss"
    BINDINGS = keymap.DIALOG
    AUTO_FOCUS = "OptionList"

    def __init__(
        self,
        title: str,
        items: list[tuple[str, str]],
        typed: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.heading = title
        self.items = items
        self.typed = typed

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.heading, id="dialog-title")
            yield OptionList(*(Option(label, id=ident) for ident, label in self.items))

    def on_key(self, event: events.Key) -> None:
        if self.typed is not None and event.is_printable and event.character:
            event.stop()
            event.prevent_default()
            self.typed(event.character)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
