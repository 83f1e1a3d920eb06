"""The model's output as it streams: follows the end until the user scrolls up.

Chunks are appended to one text (the last ``KEEP_CHARS`` of it) shown
wrapped. Following is a state, not a guess from the scroll position: only
the user turns it off (the wheel, a key or the scrollbar moving up), and
reaching the end again or "jump to latest" turns it back on. The scroll
position alone would lie: a resize, a wider page (its scrollbar gone) or a
trimmed text shortens the view, the position is clamped, and a clamp looks
just like a scroll up. While following a text taller than the view, the view
is anchored to its end, so Textual keeps it there at every layout, whatever
changed the height (a shorter text stays at the top).
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.scrollbar import ScrollTo, ScrollUp
from textual.widgets import Static

from hz_tui import display

KEEP_CHARS = 64 * 1024


class StreamView(VerticalScroll):
    """Streamed text with a follow-the-end mode."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = ""
        self.placeholder = ""
        self.following = True

    def compose(self) -> ComposeResult:
        yield Static(id="stream-text")

    # -- following -----------------------------------------------------------------------

    def follow(self) -> None:
        """Follow the end from now on."""
        self.following = True
        self._pin()

    def stop_following(self) -> None:
        """The user moved up: stay where they are while output keeps coming."""
        self.following = False
        self.anchor(False)

    def _pin(self) -> None:
        """Anchor to the end while following a text that overflows the view."""
        self.anchor(self.following and self.max_scroll_y > 0)

    def on_resize(self, event: events.Resize) -> None:
        """The view changed size: anchor if its text overflows now."""
        self._pin()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if not self.following and new_value >= self.max_scroll_y:
            # Back at the end. Anchoring scrolls, which must wait for a scroll animation
            # (this watcher may run inside one) to finish.
            self.following = True
            self.call_after_refresh(self._pin)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        if not (event.ctrl or event.shift):
            self.stop_following()

    def on_scroll_up(self, message: ScrollUp) -> None:
        self.stop_following()

    def on_scroll_to(self, message: ScrollTo) -> None:
        if message.y is not None and message.y < self.scroll_y:
            self.stop_following()

    def action_scroll_up(self) -> None:
        self.stop_following()
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self.stop_following()
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self.stop_following()
        super().action_scroll_home()

    # -- content -------------------------------------------------------------------------

    def reset(self, placeholder: str) -> None:
        """Empty the view for a new turn; ``placeholder`` shows until output arrives."""
        self.text = ""
        self.placeholder = placeholder
        self.following = True
        self.anchor(False)
        self._draw()
        self.scroll_home(animate=False, immediate=True)

    def append(self, chunk: str) -> None:
        if not chunk:
            return
        self.text = (self.text + display.visible(chunk))[-KEEP_CHARS:]
        self._draw()
        if self.following:
            self._pin()
            self.call_after_refresh(self._pin)  # the text may overflow only once laid out

    def jump_to_latest(self) -> None:
        self.follow()

    def _draw(self) -> None:
        shown = Text(self.text) if self.text else Text(self.placeholder, style="dim")
        self.query_one("#stream-text", Static).update(shown)
