"""A small dialog that asks for one line of text: an answer, a hint for a retry."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from hz_tui import keymap
from hz_tui.widgets.in_order import InOrderInput


class PromptScreen(ModalScreen[str | None]):
    """Returns the text entered (Enter), or None (Escape)."""

    CSS_PATH = "prompt.tcss"
    BINDINGS = keymap.DIALOG

    def __init__(
        self, title: str, about: str, *, placeholder: str = "", allow_empty: bool = False
    ) -> None:
        super().__init__()
        self.heading = title
        self.about = about
        self.placeholder = placeholder
        self.allow_empty = allow_empty

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.heading, id="dialog-title")
            yield Static(self.about, id="dialog-about", markup=False)
            yield InOrderInput(placeholder=self.placeholder, id="dialog-input")

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.cursor_blink = not self.app.is_headless
        field.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        if value or self.allow_empty:
            self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)
