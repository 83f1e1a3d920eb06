"""The footer: the current screen's keys on one line, drawn as text, not as a widget per key.

Textual's ``Footer`` composes one widget per key and recomposes on every
focus change; at start-up and on each screen switch that costs more than
drawing the rest of the cockpit. This bar renders the same information
(the shown, active bindings; disabled ones dimmed; the command palette key
on the right) as one line and redraws only when that line would change.
A click on a key presses it.

When the line is too narrow for every key (80 columns), long labels take
their short form (``SHORT``) first; then keys go by priority, not by
position: the least important (and the disabled) leave first. Help (F1,
which lists them all), leaving a page and the screen's own keys stay; the
global keys that F1 and the palette list (F2, F4, quitting, the palette
itself) give way to them. A screen raises or lowers a key's priority with
``KEY_PRIORITY`` (the home keeps F2 and F4, a heinzel page F4) and hides
the keys it lists in ``KEYS_NOT_SHOWN`` (the review desk its own F4). A
screen's ``key_applies``
names the keys that do nothing in its present state (K with no turn
running, u with nothing to undo): they are drawn dimmed and leave a narrow
line first, so the keys that apply fit at 80 columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget

GAP = 2
#: Priority by binding id (``hz_tui.keymap``); a key not named here is ``NORMAL``.
NORMAL = 1
#: Keys at or below this (and the disabled) leave a narrow line before any label shortens.
OPTIONAL = 0
PRIORITY = {
    "app.help": 9,
    "app.quit": 2,
    "app.commands": 2,
    "app.review": 2,
    "table.open": 4,
    "home.filter": 4,
    "act.approve": 4,
    "heinzel.compose": 4,
    "composer.send": 4,
    "review.approve": 4,
    "review.reject": 4,
    "review.base": 4,
    "review.markdown": 4,
    "review.filter": 4,
    "contract.approve": 4,
    "contract.reject": 4,
    "home.new": 3,
    "table.sort": 3,
    "act.wake": 3,
    "heinzel.answer": 4,
    "heinzel.retry": 3,
    "heinzel.contract": 3,
    "heinzel.conversation": 3,
    "transcript.search": 4,
    "transcript.next": 3,
    "transcript.previous": 3,
    "transcript.end": 3,
    "review.select": 3,
    "review.edit": 3,
    "review.undo": 4,
    "review.approve_selected": 4,
    "heinzel.stop_ask": 4,
    "composer.stop_twice": 4,
    "composer.newline": 4,
    "composer.mode": 3,
    "daemon.refresh": 3,
    "daemon.restart": 3,
    "daemon.logs": 3,
    "app.daemon": 0,
}
#: Any binding that leaves the page or dialog (``*.back``, ``*.close``, …) counts as this.
LEAVE_PRIORITY = 5
LEAVING = ("back", "close", "cancel", "dismiss", "leave")
#: The short label of a key whose own does not fit a narrow line, by binding id.
SHORT = {
    "heinzel.compose": "Write",
    "heinzel.retry": "Retry",
    "heinzel.stop_ask": "Stop",
    "composer.stop_twice": "Stop",
    "heinzel.conversation": "Chat",
    "transcript.next": "Next",
    "transcript.previous": "Prev",
    "transcript.end": "End",
    "review.select": "Mark",
    "review.base": "Base",
    "review.edit": "Edit",
    "review.undo": "Undo",
    "review.approve_selected": "Batch",
    "composer.leave": "Leave",
}
#: How a key shows on a narrow line where its name is long.
SHORT_DISPLAY = {"space": "␣", "ctrl+j": "^j"}


@dataclass(frozen=True)
class _Key:
    key: str
    display: str
    description: str
    enabled: bool
    priority: int = NORMAL
    short: str = ""
    """The label on a narrow line ("" keeps ``description``)."""
    applies: bool = True
    """False while the key would do nothing here (drawn dimmed; pressed, it says why)."""


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
        raised: Mapping[str, int] = getattr(screen, "KEY_PRIORITY", {})
        applies: Callable[[str], bool] = getattr(screen, "key_applies", lambda _: True)
        for key, active in screen.active_bindings.items():
            binding = active.binding
            applying = active.enabled and applies(binding.id or "")
            entry = _Key(
                key,
                self.app.get_key_display(binding),
                binding.description,
                active.enabled,
                _priority(binding.id, applying, raised),
                SHORT.get(binding.id or "", ""),
                applying,
            )
            if key == self.app.COMMAND_PALETTE_BINDING and self.app.ENABLE_COMMAND_PALETTE:
                palette = entry
            elif binding.id in getattr(screen, "KEYS_NOT_SHOWN", ()):
                continue
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
            dim = Style() if entry.applies else Style(dim=True)
            line.append(entry.display, key_style + dim)
            if entry.description:
                line.append(f" {entry.description}", description_style + dim)
            self._spans.append((start, line.cell_len, entry))

        shown, gap = self._fitting()
        key = self.palette_key.key if self.palette_key else None
        palette = next((entry for entry in shown if entry.key == key), None)
        line.append(" ")
        for entry in shown:
            if entry is not palette:
                add(entry)
                line.append(" " * gap)
        if palette is not None:
            line.append(" " * max(0, self.size.width - line.cell_len - _width(palette) - 1))
            add(palette)
        return line

    def _fitting(self) -> tuple[list[_Key], int]:
        """The keys that fit the width, in their order, and the gap between them.

        All fit with the wide gap, or with a one-cell gap; else the optional
        keys (``OPTIONAL`` and below, the disabled ones) leave; then labels
        shorten, and the least important key (the last of equals) leaves,
        until the rest fit.
        """
        width = self.size.width
        candidates = list(self.keys) + ([self.palette_key] if self.palette_key else [])
        if _line_width(candidates, GAP) <= width:
            return candidates, GAP
        while _line_width(candidates, 1) > width:
            least = _least(candidates)
            if least.priority > OPTIONAL:
                break
            candidates.remove(least)
        else:
            return candidates, 1
        candidates = [_shortened(entry) for entry in candidates]
        while candidates and _line_width(candidates, 1) > width:
            candidates.remove(_least(candidates))
        return candidates, 1

    def on_click(self, event: events.Click) -> None:
        for start, end, entry in self._spans:
            if start <= event.x < end:
                if entry.enabled:
                    self.app.simulate_key(entry.key)
                else:
                    self.app.bell()
                return


def _priority(binding_id: str | None, enabled: bool, raised: Mapping[str, int]) -> int:
    """How long a key stays on a narrow bar; a disabled key goes before every enabled one.

    ``raised``: the screen's own priorities, before the cockpit's.
    """
    if binding_id is None:
        priority = NORMAL
    elif binding_id in raised:
        priority = raised[binding_id]
    elif binding_id in PRIORITY:
        priority = PRIORITY[binding_id]
    elif binding_id.rpartition(".")[2] in LEAVING:
        priority = LEAVE_PRIORITY
    else:
        priority = NORMAL
    return priority if enabled else -1


def _least(entries: list[_Key]) -> _Key:
    """The key to leave first: the least important, the last of equals."""
    return min(entries, key=lambda e: (e.priority, -entries.index(e)))


def _shortened(entry: _Key) -> _Key:
    """The key as a narrow line shows it: its short label, a short name for a long key."""
    return replace(
        entry,
        display=SHORT_DISPLAY.get(entry.key, entry.display),
        description=entry.short or entry.description,
    )


def _line_width(entries: list[_Key], gap: int) -> int:
    """Cells a line of ``entries`` takes: a leading space, each key and a gap after it."""
    return 1 + sum(_width(entry) + gap for entry in entries)


def _width(entry: _Key) -> int:
    """Cells one key takes: its key, a space and its description."""
    return cell_len(entry.display) + (1 + cell_len(entry.description) if entry.description else 0)
