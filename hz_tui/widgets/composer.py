"""The composer on a heinzel's page: a multi-line message, its STEER/QUEUE mode, its history.

STEER reaches the model of the running turn before its next request; QUEUE
becomes the next turn. Enter sends (``heinzel.chat``); Ctrl+J (and
Shift+Enter where the terminal reports it) starts a new line; ↑ on the
first line and ↓ on the last walk the messages sent before. The text is
kept by the kernel as it is typed (``composer.save``), under the revision
this window last saw, so a second window on the heinzel never overwrites
newer text: it takes it, or asks which to keep (``hz_tui.composer_store``).
A message is saved with its request id before it goes out; a failed send
leaves both in place, so Enter again cannot make a second message, and one
that finds the cockpit reconnecting goes out by itself, once, when the link
is back. Escape only leaves the composer; stopping a turn is the page's.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar, cast

from pydantic import BaseModel, ValidationError
from textual import events, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.timer import Timer
from textual.widgets import Static, TextArea

from hz_kernel import operations as ops
from hz_kernel.api import (
    CHAT_MESSAGE_MAX_CHARS,
    COMPOSER_TEXT_MAX_BYTES,
    Admitted,
    ComposerText,
    InboxItem,
)
from hz_kernel.errors import HzError
from hz_tui import display, keymap
from hz_tui.composer_kept import Kept, KeptComposer
from hz_tui.composer_store import (
    Choice,
    ComposerState,
    HistoryWalk,
    Outgoing,
    new_window_id,
    reconcile,
    same_message,
)
from hz_tui.link import Link, NotConnected
from hz_tui.screens.choose import ChooseScreen
from hz_tui.widgets.in_order import run_own_binding

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp

SAVE_AFTER_S = 0.3
#: The composer's own actions that must keep their place among the keys typed around them.
IN_ORDER = ("send", "newline", "older", "newer", "toggle_mode")
MODE_LABELS = {"steer": " STEER ", "queue": " QUEUE "}
SENT = {
    "steered": "steered into the running turn",
    "requested": "is queued for the turn after the running one",
    "delivered": "started a turn",
    "queued": "is in the inbox: another process holds this heinzel, its next tick delivers it",
}
#: The hint in an empty composer: what fits its 67 columns at 80 (↑ history is in the help).
PLACEHOLDER = "Enter sends · Ctrl+J new line · Ctrl+T steer/queue · Esc leaves"
#: A save that finds a newer revision saves again over it at most this often before giving up.
REBASES = 3
#: Saves started by composers that closed, until the kernel answered them.
CLOSING: set[asyncio.Future[bool]] = set()


#: How long a closing cockpit waits for those saves (a daemon that hangs must not hold it).
SETTLE_S = 5.0


async def settle() -> None:
    """Wait for the saves of composers that closed (the cockpit awaits this before it goes)."""
    if CLOSING:
        await asyncio.wait(set(CLOSING), timeout=SETTLE_S)


class ComposerArea(TextArea):
    """The composer's text; its keys act on the composer around it."""

    BINDINGS = keymap.COMPOSER

    def on_mount(self) -> None:
        self.cursor_blink = not self.app.is_headless

    @property
    def composer(self) -> Composer:
        return cast("Composer", self.parent)

    def on_focus(self) -> None:
        self.composer.catch_up()

    async def _on_key(self, event: events.Key) -> None:
        """Send, new line, history and editing keys act here, in the order the keys came.

        As bindings they would run when the key reached the app (a priority
        binding: before the keys typed just ahead of it were inserted): a
        fast typist, or tmux's ``send-keys``, would see the new line land
        in the middle of the word before it.
        """
        # The widget's bindings as the user's keymap left them (``cockpit.json`` overrides by id).
        bound = self._bindings.key_to_bindings.get(event.key, [])
        for binding in bound:
            if binding.action in IN_ORDER:
                event.stop()
                event.prevent_default()
                getattr(self, f"action_{binding.action}")()
                return
        # The text area's own editing keys too (Backspace, Ctrl+K, ←, …).
        if not await run_own_binding(self, event):
            await super()._on_key(event)

    def action_send(self) -> None:
        self.composer.send()

    def action_newline(self) -> None:
        self.insert("\n")

    def action_older(self) -> None:
        if not self.navigator.is_first_wrapped_line(self.cursor_location):
            self.action_cursor_up()
        else:
            self.composer.walk_history(older=True)

    def action_newer(self) -> None:
        if not self.navigator.is_last_wrapped_line(self.cursor_location):
            self.action_cursor_down()
        else:
            self.composer.walk_history(older=False)

    def action_toggle_mode(self) -> None:
        self.composer.toggle_mode()

    def action_leave(self) -> None:
        """Back to the page: never a stop, whatever runs.

        A conflict the user set aside is not asked again on the way out: the
        text stays unsaved here (and on this machine) until a change or Enter.
        """
        if not self.composer.unsaved_conflict:
            self.composer.save_soon(0)
        page = self.screen.query("#page").first() if self.screen.query("#page") else None
        if page is not None and page.focusable:
            page.focus()
        else:
            self.screen.set_focus(None)


class Composer(Horizontal):
    """A message to one heinzel, with its mode and the id it is sent under."""

    DEFAULT_CSS = """
    Composer {
        height: auto;
        margin: 0 1;
    }
    Composer #composer-mode {
        width: 9;
        height: 100%;
        content-align: center middle;
        text-style: bold;
        background: $panel;
        color: $text-muted;
    }
    Composer #composer-mode.-steer {
        background: $warning;
        color: $background;
    }
    Composer #composer-mode.-conflict {
        background: $error;
        color: $background;
    }
    Composer #composer-input {
        width: 1fr;
        height: auto;
        min-height: 3;
        max-height: 10;
        padding: 1 1 1 1;
        background: $boost;
    }
    Composer.-sending #composer-input {
        opacity: 70%;
    }
    """

    def __init__(self, heinzel_id: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.heinzel_id = heinzel_id
        self.window = new_window_id()
        self.base = ComposerText(heinzel=heinzel_id)
        """The revision this window last saw the kernel keep."""
        self.state = ComposerState()
        self.kept_here = False
        """This window's text is kept on this machine too, until the kernel has it."""
        self.walk = HistoryWalk()
        self.loaded = False
        self.saving = asyncio.Lock()
        self.save_timer: Timer | None = None
        self.conflict_open = False
        self.unsaved_conflict = False
        """The user closed the conflict question without a choice: the next change asks again."""
        self.sending_now = False
        self.after_reconnect = False
        """A save or send found the link down: do it once the link is back."""
        self.too_long = False
        """The text is over what the kernel keeps (said once, until it fits again)."""

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    @property
    def input(self) -> ComposerArea:
        return self.query_one(ComposerArea)

    @property
    def dirty(self) -> bool:
        """This window shows something the kernel does not keep yet."""
        return not self.state.same_as(self.base)

    def compose(self) -> ComposeResult:
        yield Static(id="composer-mode")
        yield ComposerArea(
            placeholder=PLACEHOLDER,
            id="composer-input",
            highlight_cursor_line=False,
            compact=True,
        )

    @property
    def kept(self) -> KeptComposer:
        return KeptComposer(self.cockpit.home, self.heinzel_id)

    def on_mount(self) -> None:
        left = self.kept.load()
        if left is not None:
            self.base, self.state, self.window = left.base, left.state, left.window
            self.kept_here = True
            self.notify(
                "Your unsent message from before is back; it is saved as the kernel answers."
            )
        self.show(self.state)
        self.cockpit.link.changed.subscribe(self, self.on_link_changed)
        self.cockpit.ticker.ticked.subscribe(self, self.on_tick)
        self.catch_up()

    def on_tick(self, now: datetime) -> None:
        """Another window's newer text shows here live, unless this one has edits of its own.

        The text is content, so no spine event carries it: the shared clock
        asks ``composer.get`` (one small file read). A window with unsaved
        edits keeps them; its next save meets the newer text as before.
        """
        idle = not (self.dirty or self.conflict_open or self.sending_now or self.saving.locked())
        if self.loaded and idle and self.save_timer is None and self.cockpit.link.attached:
            self.catch_up()

    def on_unmount(self) -> None:
        """A page (or the cockpit) closing saves what the last keys typed; ``settle`` awaits it.

        The text is written to this machine first: a daemon that is away (the
        cockpit reconnecting) or a cockpit that ends before the kernel answers
        never loses it; the next page on this heinzel shows it again.
        """
        if self.save_timer is not None:
            self.save_timer.stop()
        if not self.dirty:
            return
        try:
            self.kept.keep(Kept(base=self.base, state=self.state, window=self.window))
            self.kept_here = True
        except HzError as exc:
            self.notify(exc.one_line(), severity="error", timeout=10)
        if self.loaded:
            closing = asyncio.ensure_future(self._save(closing=True))
            CLOSING.add(closing)
            closing.add_done_callback(CLOSING.discard)

    def _saved_by_kernel(self) -> None:
        """The kernel keeps all this window shows: the copy on this machine can go."""
        if self.kept_here and not self.dirty:
            self.kept_here = False
            self.kept.release()

    def on_link_changed(self, link: Link) -> None:
        if not link.attached or not self.after_reconnect or self.sending_now:
            return
        self.after_reconnect = False
        outgoing = self.state.outgoing
        if not self.loaded:
            self.catch_up()
        elif outgoing is not None:
            self.deliver(outgoing)
        else:
            self.save_soon(0)

    # -- showing ---------------------------------------------------------------------------

    def show_mode(self) -> None:
        label = next(iter(self.query("#composer-mode").results(Static)), None)
        if label is None:
            return  # the window is closing: its children are gone before it
        label.update(
            MODE_LABELS[self.state.mode] + ("\n unsaved " if self.unsaved_conflict else "")
        )
        label.set_class(self.state.mode == "steer", "-steer")
        label.set_class(self.unsaved_conflict, "-conflict")

    def show(self, state: ComposerState) -> None:
        """Show ``state`` (the text only when it differs, so the cursor stays where it is)."""
        self.state = state
        if not self.is_attached or not self.query("#composer-input"):
            return  # not shown yet, or closing (a load that answers late finds no area)
        area = self.input
        if area.text != state.text:
            area.text = state.text
            area.move_cursor(area.document.end)
        self.show_mode()

    def take(self, saved: ComposerText) -> None:
        """The kernel's composer is the one to show: nothing of this window's is lost by it."""
        self.base = saved
        self.walk.stop()
        self.show(ComposerState.of(saved))

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        self.typed()

    def typed(self) -> None:
        """Take the text on screen as this window's.

        ``Changed`` arrives after any key already queued behind the edit
        (tmux ``send-keys``, a paste then Enter), so the keys that act on the
        text call this first rather than trust the last ``Changed``.
        """
        text = self.input.text
        if text != self.state.text:
            if self.unsaved_conflict:
                self.unsaved_conflict = False
                self.show_mode()
            self.walk.stop()
            self.state = self.state.model_copy(update={"text": text})
            self.save_soon()

    # -- keeping the text --------------------------------------------------------------------

    @work(group="composer-load")
    async def catch_up(self) -> None:
        """Ask the kernel for the composer; newer text than this window's shows here.

        Only newer: an answer asked for before this window's own save (a send
        right after focus) comes back older than what it saved, and showing it
        would bring back a message already sent.
        """
        try:
            saved = await self.cockpit.client.call(
                ops.COMPOSER, ops.HeinzelRef(ref=self.heinzel_id)
            )
        except HzError as exc:
            if not self.loaded:
                self.after_reconnect = True
            if not isinstance(exc, NotConnected):
                self.notify(exc.one_line(), severity="error", timeout=10)
            return
        async with self.saving:
            self.loaded = True
            if self.conflict_open:
                return
            if saved.revision > self.base.revision and not self.dirty:
                self.take(saved)
        if self.dirty:
            self.save_soon()
        else:
            self._saved_by_kernel()

    def save_soon(self, after: float = SAVE_AFTER_S) -> None:
        """Save once typing paused for ``after`` seconds (0: now)."""
        if self.save_timer is not None:
            self.save_timer.stop()
            self.save_timer = None
        if after <= 0:
            self.save()
        else:
            self.save_timer = self.set_timer(after, self._save_later)

    def _save_later(self) -> None:
        self.save_timer = None
        self.save()

    @work(group="composer-save")
    async def save(self) -> None:
        await self._save()

    async def _save(self, *, closing: bool = False) -> bool:
        """Save this window's composer over the revision it saw; True once the kernel keeps it.

        False when the link is down (kept here, saved once it is back), the
        kernel refused (a toast says why), or another window's newer text
        waits for the user's choice. ``closing``: the window is going, no one
        can choose; both texts are kept.
        """
        async with self.saving:
            for _ in range(REBASES):
                if not self.loaded or self.conflict_open:
                    return False
                if not self.dirty:
                    self._saved_by_kernel()
                    return True
                state = self.state
                if not self._fits(state.text):
                    return False
                try:
                    request = built(
                        ops.ComposerSaveRequest,
                        ref=self.heinzel_id,
                        base=self.base.revision,
                        text=state.text,
                        mode=state.mode,
                        outgoing=state.outgoing,
                        window=self.window,
                    )
                    answer = await self.cockpit.client.call(ops.COMPOSER_SAVE, request)
                except NotConnected as exc:
                    self.after_reconnect = True
                    self.notify(
                        f"Not saved yet: {exc.one_line()}; kept here until the daemon is back",
                        severity="warning",
                        timeout=10,
                    )
                    return False
                except HzError as exc:
                    self.notify(exc.one_line(), severity="error", timeout=10)
                    return False
                if answer.saved:
                    self.base = answer.current
                    continue
                if not await self._meet(answer.current, closing=closing):
                    return False
            self._saved_by_kernel()
            return not self.dirty

    def _fits(self, text: str) -> bool:
        """Whether the kernel can keep ``text``; a longer one stays in this window only."""
        size = ops.json_bytes(text)
        if size <= COMPOSER_TEXT_MAX_BYTES:
            self.too_long = False
            return True
        if not self.too_long:
            self.too_long = True
            self.notify(
                f"HZU227: not saved: the text takes {size // 1024} KiB, the composer keeps "
                f"{COMPOSER_TEXT_MAX_BYTES // 1024} KiB; it stays in this window only",
                severity="warning",
                timeout=10,
            )
        return False

    async def _meet(self, theirs: ComposerText, *, closing: bool = False) -> bool:
        """Another window saved ``theirs`` first; True when this window may save over it now."""
        action = reconcile(self.base, self.state, theirs, self.window)
        if action == "take":
            self.take(theirs)
            return True
        if action == "rebase":
            self.base = theirs
            return True
        if closing:
            self.base, self.state = theirs, self.state.resolved("both", theirs)
            return True
        self._ask(theirs)
        return False

    def _ask(self, theirs: ComposerText) -> None:
        """Both windows changed the text: the user keeps one, or both (nothing is lost)."""
        self.conflict_open = True
        if self.unsaved_conflict:
            self.unsaved_conflict = False
            self.show_mode()
        # Both first: an Enter that lands as the dialog opens keeps every word.
        choices: list[tuple[str, str]] = [
            ("both", "Both: theirs, then mine"),
            ("mine", f"Keep mine: {_first_line(self.state.text)}"),
            ("theirs", f"Take theirs: {_first_line(theirs.text)}"),
        ]
        title = "HZU220: another window changed this message. Which text stays?"
        self.app.push_screen(
            ChooseScreen(title, choices, typed=self._typed_behind),
            lambda c: self._resolve(c, theirs),
        )

    def _typed_behind(self, characters: str) -> None:
        """Keys that reach the conflict dialog while typing go on into this text."""
        self.input.insert(characters)

    def _resolve(self, choice: str | None, theirs: ComposerText) -> None:
        self.conflict_open = False
        if choice is None:
            self.unsaved_conflict = True
            self.show_mode()
            self.notify(
                "HZU220: not saved: another window's newer text waits; "
                "the next change or Enter asks again which to keep",
                severity="warning",
                timeout=10,
            )
            return
        self.base = theirs
        self.walk.stop()
        self.show(self.state.resolved(cast("Choice", choice), theirs))
        outgoing = self.state.outgoing
        if choice == "mine" and outgoing is not None:
            self.deliver(outgoing)  # the Enter that met the other text still sends it
        else:
            self.save_soon(0)

    def toggle_mode(self) -> None:
        mode = "queue" if self.state.mode == "steer" else "steer"
        self.state = self.state.model_copy(update={"mode": mode})
        self.show_mode()
        self.save_soon()

    def walk_history(self, *, older: bool) -> None:
        self.typed()
        history = self.base.history
        shown = self.walk.older(history, self.state.text) if older else self.walk.newer(history)
        if shown is None:
            return
        self.state = self.state.model_copy(update={"text": shown})
        area = self.input
        area.text = shown
        area.move_cursor(area.document.end if not older else (0, len(shown.split("\n")[0])))
        self.save_soon()

    def put_back(self, items: list[InboxItem]) -> None:
        """Show the messages a stopped turn gave back, in the mode they were sent in.

        They go in at the start of the text on screen, by an edit of the text
        area rather than a new text: what was typed while the stop was asked
        (keys already in, or still queued behind this) stays, and so does
        the cursor, which moves along with it.
        """
        if not items:
            return
        self.walk.stop()
        area = self.input
        typed = area.text
        given = "\n\n".join(item.message for item in items)
        area.insert(f"{given}\n\n" if typed else given, (0, 0))
        self.state = self.state.given_back(items, typed)
        self.show_mode()
        self.save_soon(0)

    # -- sending ---------------------------------------------------------------------------

    def send(self) -> None:
        self.typed()
        message = self.state.text.strip()
        if self.conflict_open or not message:
            return
        if self.sending_now:
            self.notify(
                "HZU225: not sent: the message before is still on its way; "
                "Enter sends this one once it is in",
                severity="warning",
            )
            return
        if len(message) > CHAT_MESSAGE_MAX_CHARS:
            self.notify(
                f"HZU226: not sent: the message has {len(message):,} characters, "
                f"a message takes at most {CHAT_MESSAGE_MAX_CHARS:,}; it stays here",
                severity="error",
                timeout=10,
            )
            return
        self.walk.stop()
        self.state = self.state.sending()
        self.save_and_deliver()

    @work(group="composer-send")
    async def save_and_deliver(self) -> None:
        """Save the message with its request id, then send it; a change elsewhere sends nothing."""
        outgoing = self.state.outgoing
        if outgoing is None:
            return
        if self.save_timer is not None:
            self.save_timer.stop()
            self.save_timer = None
        if not await self._save():
            if self.after_reconnect:
                self.notify("Not sent yet: it goes out once the daemon is back", timeout=10)
            return
        if self.state.outgoing == outgoing:
            await self._deliver(outgoing)
        elif same_message(outgoing, self.state.outgoing):
            self.notify("Another window is sending this message: it goes once, from there.")
        elif self.base.history[-1:] == [outgoing.message] and not self.state.text.strip():
            self.notify("Another window sent this message just now: it went once.")
        else:
            self.notify(
                "HZU225: not sent: another window changed this message first; "
                "its text shows now, Enter sends it",
                severity="warning",
                timeout=10,
            )

    @work(group="composer-send")
    async def deliver(self, outgoing: Outgoing) -> None:
        if await self._save() and self.state.outgoing == outgoing:
            await self._deliver(outgoing)

    async def _deliver(self, outgoing: Outgoing) -> None:
        """Send one message; only its acknowledgement clears it."""
        self.sending_now = True
        self.add_class("-sending")
        try:
            request = built(
                ops.ChatRequest,
                ref=self.heinzel_id,
                message=outgoing.message,
                mode=outgoing.mode,
                request_id=outgoing.request_id,
            )
            admitted = await self.cockpit.client.call(ops.CHAT, request)
        except NotConnected as exc:
            self.after_reconnect = True
            self.notify(
                f"Not sent yet: {exc.one_line()}; it goes out once the daemon is back",
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
        await self._acknowledge(admitted.request_id)
        row = self.cockpit.rows.get(self.heinzel_id)
        name = display.visible(row.name) if row is not None else self.heinzel_id
        self.notify(f"{name}: the message {sent_notice(admitted)}.")

    async def _acknowledge(self, request_id: str) -> None:
        """Tell the kernel the inbox has ``request_id``; text typed meanwhile stays."""
        sent = ops.ComposerSentRequest(
            ref=self.heinzel_id, request_id=request_id, window=self.window
        )
        async with self.saving:
            try:
                kept = await self.cockpit.client.call(ops.COMPOSER_SENT, sent)
            except HzError as exc:
                self.notify(exc.one_line(), severity="warning", timeout=10)
                return
            typed = self.state.acknowledged(request_id)
            if not typed.text or typed.text == kept.text:
                self.take(kept)
                return
            self.state = typed
            if kept.text:
                self._ask(kept)
                return
            self.base = kept
        self.save_soon(0)


def sent_notice(admitted: Admitted) -> str:
    """What became of a message sent, in the words of its mode."""
    if admitted.status != "pending":
        return SENT.get(admitted.status, admitted.status)
    if admitted.turn is None:  # steered or queued alike: with no turn running, one starts
        return "is in the inbox: no turn runs, so it starts the next one"
    if admitted.mode == "queue":
        return "is queued for the turn after the running one"
    return "is in the inbox: it steers the running turn at its next step"


Model = TypeVar("Model", bound=BaseModel)


def built(model: type[Model], **fields: object) -> Model:
    """``model`` of ``fields``, or the field it refuses as a coded error (never a traceback)."""
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        place = ".".join(str(part) for part in first["loc"]) or model.__name__
        raise HzError("HZU228", f"the cockpit could not send this: {first['msg']}", place) from None


def _first_line(text: str, width: int = 50) -> str:
    line = text.strip().split("\n")[0] if text.strip() else "(empty)"
    more = "…" if len(line) > width or "\n" in text.strip() else ""
    return line[:width] + more
