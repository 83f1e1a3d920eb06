"""The footer: the current screen's keys on one line, drawn as text, not as a widget per key.

Textual's ``Footer`` composes one widget per key and recomposes on every
focus change; at start-up and on each screen switch that costs more than
drawing the rest of the cockpit. This bar renders the same information
(the shown, active bindings; disabled ones dimmed; the command palette key
on the right) as one line and redraws only when that line would change.
A click on a key presses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget

GAP = 2


@dataclass(frozen=True)
class _Key:
    key: str
    display: str
    description: str
    enabled: bool


class KeyBar(Widget):
    """One line of keys for the screen it sits on."""

    ALLOW_SELECT = False

    COMPONENT_CLASSES: ClassVar[set[str]] = {"key-bar--key", "key-bar--description"}

    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        width: 1fr;
        color: $footer-foreground;
        background: $footer-background;
        & > .key-bar--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .key-bar--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.keys: tuple[_Key, ...] = ()
        self.palette_key: _Key | None = None
        self._spans: list[tuple[int, int, _Key]] = []

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        keys: list[_Key] = []
        palette: _Key | None = None
        seen: set[str] = set()
        for key, active in screen.active_bindings.items():
            binding = active.binding
            entry = _Key(
                key, self.app.get_key_display(binding), binding.description, active.enabled
            )
            if key == self.app.COMMAND_PALETTE_BINDING and self.app.ENABLE_COMMAND_PALETTE:
                palette = entry
            elif binding.show and binding.action not in seen:
                seen.add(binding.action)
                keys.append(entry)
        if (tuple(keys), palette) != (self.keys, self.palette_key):
            self.keys, self.palette_key = tuple(keys), palette
            self.refresh()

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-bar--key")
        description_style = self.get_component_rich_style("key-bar--description")
        line = Text(no_wrap=True, overflow="crop", end="")
        self._spans = []

        def add(entry: _Key) -> None:
            start = line.cell_len
            dim = Style() if entry.enabled else Style(dim=True)
            line.append(entry.display, key_style + dim)
            if entry.description:
                line.append(f" {entry.description}", description_style + dim)
            self._spans.append((start, line.cell_len, entry))

        gap = GAP if self._width_with_gap(GAP) <= self.size.width else 1
        line.append(" ")
        for entry in self.keys:
            if line.cell_len + _width(entry) > self.size.width:
                break  # a key cut in half helps nobody; F1 lists them all
            add(entry)
            line.append(" " * gap)
        if self.palette_key is not None:
            room = self.size.width - line.cell_len - _width(self.palette_key) - 1
            if room >= 0:
                line.append(" " * room)
                add(self.palette_key)
        return line

    def _width_with_gap(self, gap: int) -> int:
        return 1 + sum(_width(entry) + gap for entry in self.keys)

    def on_click(self, event: events.Click) -> None:
        for start, end, entry in self._spans:
            if start <= event.x < end:
                if entry.enabled:
                    self.app.simulate_key(entry.key)
                else:
                    self.app.bell()
                return


def _width(entry: _Key) -> int:
    """Cells one key takes: its key, a space and its description."""
    return cell_len(entry.display) + (1 + cell_len(entry.description) if entry.description else 0)
