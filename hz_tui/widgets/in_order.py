"""A field's own editing keys act in the order the keys came, however fast they come.

Textual inserts a typed character when the key reaches the focused widget,
but runs a widget's bindings (Backspace, Delete, Ctrl+K, Enter, ←) only once
the key has bubbled up to the app, a message hop per parent later. Keys that
arrive together (a fast typist, tmux ``send-keys``, a terminal's key repeat)
are all inserted before the first Backspace runs: ``zzz``, three Backspaces
and ``notes`` read as ``zzzno``. Running the widget's own bindings where the
key arrives keeps them in order with the characters.
"""

from __future__ import annotations

from textual import events
from textual.widget import Widget
from textual.widgets import Input


async def run_own_binding(widget: Widget, event: events.Key) -> bool:
    """Run ``widget``'s own binding for ``event``'s key now, rather than after the keys behind
    it: True when one ran (the event is then spent). Priority bindings ran before the key
    reached the widget, and an action ``widget`` refuses is left to the screen and the app."""
    for binding in widget._bindings.key_to_bindings.get(event.key, []):
        if not binding.priority and await widget.app.run_action(binding.action, widget):
            event.stop()
            event.prevent_default()
            return True
    return False


class InOrderInput(Input):
    """An ``Input`` whose editing keys and own bindings act in the order the keys came."""

    async def _on_key(self, event: events.Key) -> None:
        if not await run_own_binding(self, event):
            await super()._on_key(event)
