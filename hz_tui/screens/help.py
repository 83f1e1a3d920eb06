"""F1: every key the cockpit answers to, grouped by where it works, after the user's overrides."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from hz_tui import keymap
from hz_tui.widgets.key_bar import SHORT

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp


class HelpScreen(ModalScreen[None]):
    """A scrollable list of every binding."""

    CSS_PATH = "help.tcss"
    BINDINGS = keymap.HELP

    def compose(self) -> ComposeResult:
        overrides = cast("CockpitApp", self.app).keymap_overrides
        blocks: list[Table | Text] = [
            Text("Keys (F1 or Escape closes this)", style="bold"),
            Text('Every key can be changed in cockpit.json under "keymap", by id.', style="dim"),
        ]
        for scope in keymap.SCOPES:
            table = Table(title=scope.title, title_justify="left", show_header=False, box=None)
            table.add_column("keys", style="bold", width=12, no_wrap=True)
            table.add_column("does", width=26, no_wrap=True)
            table.add_column("id", style="dim", no_wrap=True)
            for binding in scope.bindings:
                does = binding.description
                if (short := SHORT.get(binding.id or "")) and short != does:
                    does = f"{does} ({short})"  # what a narrow key bar calls it
                table.add_row(keymap.keys_for(binding, overrides), does, binding.id or "")
            blocks.append(table)
        with VerticalScroll(id="help"):
            yield Static(Group(*blocks), id="keys")

    def action_close(self) -> None:
        self.dismiss()
