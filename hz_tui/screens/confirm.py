"""A yes/no question before a destructive action: retire a heinzel, restart the daemon.

``y`` (or Enter on *Yes*, or a click) confirms; Escape (or Enter on the
highlighted *Cancel*) keeps things as they are. The answer is the screen's
result, so a caller awaits it with ``push_screen_wait`` or passes a callback.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from hz_tui import keymap


class ConfirmScreen(ModalScreen[bool]):
    """Returns True when the user confirmed, False otherwise."""

    CSS_PATH = "confirm.tcss"
    BINDINGS = keymap.CONFIRM

    def __init__(self, question: str, about: str, yes: str) -> None:
        super().__init__()
        self.question = question
        self.about = about
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.question, id="dialog-title")
            yield Static(self.about, id="dialog-about")
            overrides = getattr(self.app, "keymap_overrides", {})
            yes, cancel = (
                keymap.shown_keys(i, overrides) for i in ("confirm.yes", "confirm.cancel")
            )
            yield OptionList(
                Option(f"{yes}  {self.yes}", id="yes"), Option(f"{cancel}  Cancel", id="no")
            )

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = 1  # Enter alone never destroys anything
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id == "yes")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
