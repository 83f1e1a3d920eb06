"""The composer on a heinzel's page: a message, its STEER/QUEUE mode, sent through the kernel.

STEER reaches the model of the running turn before its next request; QUEUE
becomes the next turn. Enter sends (``heinzel.chat``) with a request id kept
on disk until the kernel acknowledges it (``hz_tui.composer_store``); a
failed send leaves the text and the id in place, so Enter again cannot make
a second message. A message that finds the cockpit reconnecting to its
daemon (``NotConnected``, also when the daemon went away mid-call) goes out
by itself, once, under its id when the link is back. The text is saved as
it is typed, so closing the cockpit loses nothing. Stopping the turn is the
page's job; the composer forwards Escape and a double Ctrl+C to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Static

from hz_kernel import operations as ops
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_tui import composer_store, keymap
from hz_tui.composer_store import ComposerState, Mode, Outgoing
from hz_tui.link import Link, NotConnected

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp

SAVE_AFTER_S = 0.3
MODE_LABELS = {"steer": " STEER ", "queue": " QUEUE "}
SENT = {
    "pending": "is in the inbox: it reaches the turn at its next step",
    "steered": "steered into the running turn",
    "requested": "is queued for the next turn",
    "delivered": "started a turn",
    "queued": "is in the inbox: another process holds this heinzel, its next tick delivers it",
}


class ComposerInput(Input):
    """The composer's line of text; its keys act on the composer around it."""

    BINDINGS = keymap.COMPOSER

    def on_mount(self) -> None:
        self.cursor_blink = not self.app.is_headless

    @property
    def composer(self) -> Composer:
        return cast("Composer", self.parent)

    def action_send(self) -> None:
        self.composer.send()

    def action_toggle_mode(self) -> None:
        self.composer.toggle_mode()

    def action_stop_or_leave(self) -> None:
        self.post_message(Composer.StopAsked(twice_needed=False))

    def action_stop_twice(self) -> None:
        self.post_message(Composer.StopAsked(twice_needed=True))


class Composer(Horizontal):
    """A message to one heinzel, with its mode and the id it is sent under."""

    class StopAsked(Message):
        """Escape (``twice_needed`` False) or Ctrl+C (True) in the composer."""

        def __init__(self, *, twice_needed: bool) -> None:
            super().__init__()
            self.twice_needed = twice_needed

    def __init__(self, home: Home, heinzel_id: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.home = home
        self.heinzel_id = heinzel_id
        self.state = composer_store.load_composer(home, heinzel_id)
        self.save_timer: Timer | None = None
        self.sending_now = False
        self.after_reconnect = False
        """A send found the link down: deliver the outgoing message once it is back."""

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    @property
    def input(self) -> ComposerInput:
        return self.query_one(ComposerInput)

    def compose(self) -> ComposeResult:
        yield Static(id="composer-mode")
        yield ComposerInput(
            value=self.state.text,
            placeholder="a message: Enter sends · Ctrl+T steer/queue · Esc stops the turn",
            id="composer-input",
        )

    def on_mount(self) -> None:
        self.show_mode()
        self.cockpit.link.changed.subscribe(self, self.on_link_changed)

    def on_link_changed(self, link: Link) -> None:
        outgoing = self.state.outgoing
        if link.attached and self.after_reconnect and outgoing and not self.sending_now:
            self.after_reconnect = False
            self.deliver(outgoing)

    def on_unmount(self) -> None:
        self.save_now()

    def show_mode(self) -> None:
        label = self.query_one("#composer-mode", Static)
        label.update(MODE_LABELS[self.state.mode])
        label.set_class(self.state.mode == "steer", "-steer")

    # -- keeping the text --------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if event.value != self.state.text:
            self.state = self.state.model_copy(update={"text": event.value})
            self.save_soon()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()

    def save_soon(self) -> None:
        if self.save_timer is not None:
            self.save_timer.stop()
        self.save_timer = self.set_timer(SAVE_AFTER_S, self.save_now)

    def save_now(self) -> bool:
        """Write the composer to disk now; False (and a warning) when that failed."""
        if self.save_timer is not None:
            self.save_timer.stop()
            self.save_timer = None
        try:
            composer_store.save_composer(self.home, self.heinzel_id, self.state)
        except HzError as exc:
            self.notify(exc.one_line(), severity="error", timeout=10)
            return False
        return True

    def toggle_mode(self) -> None:
        mode = "queue" if self.state.mode == "steer" else "steer"
        self.state = self.state.model_copy(update={"mode": mode})
        self.show_mode()
        self.save_soon()

    def put_back(self, messages: list[str], request_id: str | None, mode: Mode = "queue") -> None:
        """Show messages taken back from the queue; one kept alone keeps its request id.

        Sent again unchanged (same text, same ``mode``), that one message
        reaches the kernel under its old id, which the inbox already holds: it
        is not taken twice. Changed, it gets a new id.
        """
        if not messages:
            return
        typed = self.state.text.strip()
        text = "\n\n".join([*messages, typed] if typed else messages)
        outgoing = None
        if request_id is not None and len(messages) == 1 and not typed:
            outgoing = Outgoing(request_id=request_id, message=messages[0], mode=mode)
        else:
            mode = "queue"
        self.state = ComposerState(text=text, mode=mode, outgoing=outgoing)
        self.input.value = text
        self.input.cursor_position = len(text)
        self.show_mode()
        self.save_now()

    # -- sending -------------------------------------------------------------------------

    def send(self) -> None:
        if self.sending_now or not self.state.text.strip():
            return
        outgoing_state = self.state.sending()
        self.state = outgoing_state
        if not self.save_now():
            return
        assert outgoing_state.outgoing is not None
        self.deliver(outgoing_state.outgoing)

    @work(group="composer-send")
    async def deliver(self, outgoing: Outgoing) -> None:
        """Send one message; only its acknowledgement clears it."""
        self.sending_now = True
        self.add_class("-sending")
        request = ops.ChatRequest(
            ref=self.heinzel_id,
            message=outgoing.message,
            mode=outgoing.mode,
            request_id=outgoing.request_id,
        )
        try:
            admitted = await self.cockpit.client.call(ops.CHAT, request)
        except NotConnected as exc:
            self.after_reconnect = True
            self.notify(
                f"Not sent yet: {exc.one_line()}; it goes out once the cockpit is back",
                severity="warning",
                timeout=10,
            )
            return
        except HzError as exc:
            self.notify(
                f"Not sent: {exc.one_line()} (Enter sends it again, under the same id)",
                severity="error",
                timeout=10,
            )
            return
        finally:
            self.sending_now = False
            self.remove_class("-sending")
        self.state = self.state.acknowledged(admitted.request_id)
        if self.input.value != self.state.text:
            self.input.value = self.state.text
        self.save_now()
        self.notify(f"The message {SENT.get(admitted.status, admitted.status)}.")
