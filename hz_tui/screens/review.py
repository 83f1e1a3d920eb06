"""The review desk: the queue of waiting drafts across heinzels, each one's diff, decisions.

The highlighted draft's diff shows beside the queue: against the section's
last approved text by default (what changed since last time), or against
the draft as placed (what you edited) after ``b``; two sides when the
terminal is wide, one column otherwise; ``d`` shows the draft rendered as
Markdown. ``a`` approves, ``x`` rejects (held for a few seconds: ``u``
undoes it), space marks drafts and ``A`` approves every marked one, ``/``
filters, ``e`` opens ``$EDITOR`` at the draft's line. Every decision is one
kernel operation by draft key; the queue follows the spines like every
other screen. See ``hz_tui.review`` for the rules.

A reject whose few seconds end while the daemon is away (the link is
reconnecting) cannot be sent: its draft comes back to the queue marked as
waiting for the kernel, ``u`` still takes it back, and it is sent as soon as
the link is attached again (``on_link_changed``), without leaving the desk.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import shutil
import subprocess
import threading
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

from textual import events, work
from textual.app import ComposeResult, SuspendNotSupported
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Header, Input, Static
from watchfiles import awatch

from hz_kernel import operations as ops
from hz_kernel.api import DraftReview, DraftSummary
from hz_kernel.errors import HzError
from hz_tui import diffing, keymap, review, rows
from hz_tui.held_rejects import HeldRejects
from hz_tui.messages import RowsUpdate
from hz_tui.watcher import DEBOUNCE_MS, RUST_TIMEOUT_MS, STEP_MS
from hz_tui.widgets.diff_view import DiffView
from hz_tui.widgets.draft_queue import DraftQueue
from hz_tui.widgets.key_bar import KeyBar
from hz_tui.widgets.queue_filter import QueueFilter

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp
    from hz_tui.link import Link

#: Below this many columns the queue shrinks to the heinzels' names: the diff takes the width.
NARROW_COLUMNS = 110
#: Below this many columns the queue is not shown at all (``j``/``k`` still walk it; ``/`` shows
#: it until the filter is cleared): a list of names would leave the diff too narrow to read.
COLLAPSED_COLUMNS = 100
#: How long leaving the desk (or quitting) waits for the kernel to take each held rejection.
SEND_ON_LEAVING_S = 5.0
EMPTY = "No drafts wait for you. New ones appear here as they land."
FILTERED_OUT = "No draft matches the filter (/ to change it)."
#: Actions on the highlighted draft: hidden from the key bar while none is.
DRAFT_ACTIONS = frozenset({"decide", "select", "show", "switch_base", "toggle_markdown", "edit"})


class ReviewScreen(Screen[None]):
    """Every pending draft, reviewed one after the other or in a batch."""

    CSS_PATH = "review.tcss"
    BINDINGS = keymap.REVIEW
    KEYS_NOT_SHOWN: ClassVar[frozenset[str]] = frozenset({"app.review"})
    """F4 opens this desk: on it, the key bar's room goes to the desk's own keys."""

    def __init__(self) -> None:
        super().__init__()
        self.review: DraftReview | None = None
        self.shown: diffing.Diff | None = None
        """The diff on screen (None while the Markdown or a message is shown)."""
        self.base: review.Base = "approved"
        self.markdown = False
        self.decided: set[str] = set()
        """Keys approved or rejected here, hidden until the kernel's listing drops them too."""
        self.restored: str | None = None
        """The draft an undo brought back: the cursor goes to it once the queue lists it."""
        self.undo_seconds = review.UNDO_SECONDS
        self.undoable: dict[str, Timer] = {}
        """Rejections held for undo, oldest first, each with the timer that sends it."""
        self.undo_toasts: dict[str, str] = {}
        """The toast offering each held rejection's undo: taken down once the undo is used or
        its window ends, so no toast offers an undo that is gone."""
        self.held_here: set[str] = set()
        """Rejections this desk held and has not seen sent: sent when the desk closes."""
        self.waiting: dict[str, None] = {}
        """Rejections whose hold ended while the kernel was away, oldest first: still undoable,
        sent when the link is back."""
        self.sending: set[str] = set()
        """Rejections on their way to the kernel now: neither undone nor sent again."""
        self.rejected_rows: dict[str, DraftSummary] = {}
        """The queue rows of held rejections: an undo shows the draft again without the kernel."""
        self.watched = ""
        """The document watched for edits outside hz (the shown draft's; local kernels only)."""
        self.stop_watching = threading.Event()
        """Ends the watcher's thread at its next look: cancelling alone waits out its timeout."""
        self.watching: asyncio.Task[None] | None = None
        """The document's watcher: a task, not a worker, so waiting for the desk's workers to
        finish never waits for a watch that lasts as long as the desk."""

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    @property
    def queue(self) -> DraftQueue:
        return self.query_one(DraftQueue)

    @property
    def pane(self) -> DiffView:
        return self.query_one(DiffView)

    @property
    def held(self) -> HeldRejects:
        return HeldRejects(self.cockpit.home)

    @property
    def wide(self) -> bool:
        return self.app.size.width >= review.SIDE_BY_SIDE_COLUMNS

    def compose(self) -> ComposeResult:
        yield Header(icon="hz")
        with Horizontal(id="review"):
            with Vertical(id="queue-column"):
                yield QueueFilter(id="queue-filter")
                yield DraftQueue(id="queue")
            yield DiffView(id="diff")
        yield Static(id="review-status")
        yield KeyBar()

    def on_mount(self) -> None:
        self.title = "hz · review drafts"
        self.undo_seconds = self.cockpit.home.settings.cockpit.undo_seconds
        self.cockpit.rows_changed.subscribe(self, self.on_rows)
        self.cockpit.link.changed.subscribe(self, self.on_link_changed)
        self.cockpit.ticker.ticked.subscribe(self, self.on_tick)
        self.focus_queue()
        self.load()

    def on_rows(self, update: RowsUpdate) -> None:
        self.load()

    def on_tick(self, now: datetime) -> None:
        self.queue.retime(now)
        if self.cockpit.client.remote:
            self.refresh_review()  # no file to watch there: ask again, one draft per tick

    async def watch_document(self, path: Path, stop: threading.Event) -> None:
        """Show the draft again whenever its document changes on disk (an edit outside hz).

        The folder is watched, not the file: editors save by writing a new file over it.
        """
        folder = path.parent
        if not folder.is_dir():
            return
        async for _ in awatch(
            folder,
            watch_filter=lambda _change, changed: Path(changed).name == path.name,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            rust_timeout=RUST_TIMEOUT_MS,
            stop_event=stop,
        ):
            self.refresh_review()

    @work(exclusive=True, group="review-refresh")
    async def refresh_review(self) -> None:
        """Ask for the shown draft again; draw it only when it changed (keeps the scroll)."""
        shown = self.review
        if shown is None:
            return
        try:
            fresh = await self.cockpit.client.call(ops.REVIEW, ops.DraftKey(key=shown.key))
        except HzError:
            return  # the next change or tick asks again; Enter shows the error
        if self.review is shown and fresh != shown:
            self.review = fresh
            with contextlib.suppress(NoMatches):  # the answer came as the desk closed
                await self.draw()

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < NARROW_COLUMNS, "-narrow")
        collapsed = event.size.width < COLLAPSED_COLUMNS
        if collapsed != self.has_class("-collapsed"):
            self.set_class(collapsed, "-collapsed")
            if not self.has_class("-filtering"):
                self.focus_queue()
        self.redraw()

    @property
    def collapsed(self) -> bool:
        """The queue is hidden (a narrow terminal, not filtering): the diff has the keys."""
        return self.has_class("-collapsed") and not self.has_class("-filtering")

    def focus_queue(self) -> None:
        """Focus the queue, or the diff where the queue is hidden (its arrows then scroll)."""
        if self.collapsed:
            self.pane.focus()
        else:
            self.queue.focus()

    @work(exclusive=True, group="review-queue")
    async def load(self) -> None:
        try:
            listed = await self.cockpit.client.call(ops.DRAFTS, ops.Empty())
        except HzError as exc:
            with contextlib.suppress(NoMatches):  # the answer came as the desk closed
                self.pane.say(exc.one_line())
            return
        with contextlib.suppress(NoMatches):  # the cockpit closing takes the desk apart
            self.show_queue(listed.items)

    def show_queue(self, items: list[DraftSummary]) -> None:
        """The pending drafts the kernel listed, less the ones decided here but not yet sent."""
        self.decided &= {d.key for d in items}
        drafts = [d for d in items if d.key not in self.decided]
        before = self.queue.cursor_key()
        self.queue.show(drafts)
        self.follow_restored()
        self.after_queue_change(before)

    def follow_restored(self) -> None:
        """The cursor goes to a draft whose reject was undone, once the queue lists it."""
        if self.restored is not None and self.queue.draft(self.restored) is not None:
            self.queue.move_to(self.restored)  # not shown when the filter hides it
            self.restored = None

    def after_queue_change(self, before: str | None) -> None:
        self.update_status()
        self.refresh_bindings()
        key = self.queue.cursor_key()
        if key is None:
            self.review = None
            self.shown = None
            self.pane.say(FILTERED_OUT if self.queue.listed else EMPTY)
        elif key != before or self.review is None or self.review.key != key:
            self.show_review(key)

    def update_status(self) -> None:
        queue = self.queue
        count = len(queue.drafts)
        if not count:
            parts = ["nothing matches the filter" if queue.listed else "nothing waits for review"]
        else:
            shown = f" (of {len(queue.listed)})" if count != len(queue.listed) else ""
            parts = [f"draft {queue.cursor_row + 1} of {count}{shown}"]
            if self.collapsed and count > 1:
                walk = keymap.shown_keys("review.next", self.cockpit.keymap_overrides)
                parts[0] += f" ({walk}: the next)"
        if queue.selected:
            parts.append(f"{len(queue.selected)} selected: A approves them")
        if self.waiting:
            parts.insert(0, f"{len(self.waiting)} reject waiting for the kernel (✗): u undoes")
        if self.undoable:
            parts.insert(0, f"{len(self.undoable)} rejected: u undoes")
        if not count:
            pass  # no draft shown: no view of one to switch
        elif self.markdown:
            back = keymap.shown_keys("review.markdown", self.cockpit.keymap_overrides)
            parts.append(f"{review.MARKDOWN_MODE} ({back} returns to the diff)")
        else:
            switch = keymap.shown_keys("review.base", self.cockpit.keymap_overrides)
            parts.append(f"diff {review.BASE_NAMES[self.base]} ({switch} switches)")
        self.query_one("#review-status", Static).update(" · ".join(parts))
        self.refresh_bindings()  # u and A apply or no longer (``key_applies``)

    @work(exclusive=True, group="review-diff")
    async def show_review(self, key: str) -> None:
        try:
            shown = await self.cockpit.client.call(ops.REVIEW, ops.DraftKey(key=key))
        except HzError as exc:
            self.review = None
            self.shown = None
            with contextlib.suppress(NoMatches):  # the answer came as the desk closed
                self.pane.say(exc.one_line())
            return
        if not self.is_attached or not self.queue.is_attached or self.queue.cursor_key() != key:
            return
        self.review = shown
        if not self.cockpit.client.remote and shown.path != self.watched:
            self.watched = shown.path
            self.stop_watching.set()
            self.stop_watching = threading.Event()
            self.watching = asyncio.create_task(
                self.watch_document(Path(shown.path), self.stop_watching)
            )
        await self.draw()

    def redraw(self) -> None:
        if self.review is not None:
            self.run_worker(self.draw, exclusive=True, group="review-draw")

    async def draw(self) -> None:
        """Show the current draft as the desk is set: its diff (one or two sides) or Markdown."""
        shown = self.review
        if shown is None:
            return
        if self.markdown:
            self.shown = None
            await self.pane.show_markdown(review.draft_text(shown), review.markdown_header(shown))
            return
        self.shown = review.compare(shown, self.base)
        palette = rows.Palette.from_theme(self.app.theme_variables)
        self.pane.show(review.render_review(shown, self.base, self.shown, palette, wide=self.wide))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.update_status()
        key = event.row_key.value if event.row_key is not None else None  # None: queue emptied
        if key is not None and (self.review is None or self.review.key != key):
            self.show_review(key)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_show()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        before = self.queue.cursor_key()
        self.queue.set_filter(event.value)
        self.after_queue_change(before)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.focus_queue()

    def on_queue_filter_cleared(self, event: QueueFilter.Cleared) -> None:
        event.stop()
        self.remove_class("-filtering")
        self.focus_queue()

    # -- moving, looking ---------------------------------------------------------------

    def key_applies(self, binding_id: str) -> bool:
        """For the key bar: u applies while a reject can be undone, A while drafts are marked;
        otherwise they show dimmed and are the first to leave a narrow bar."""
        if binding_id == "review.undo":
            return bool(self.undoable or self.waiting)
        if binding_id == "review.approve_selected":
            queue = next(iter(self.query(DraftQueue)), None)  # None before the desk is composed
            return queue is not None and bool(queue.selected)
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A draft's actions leave the key bar (and do nothing) while no draft is shown."""
        if action in DRAFT_ACTIONS:
            queue = next(iter(self.query(DraftQueue)), None)  # None before the desk is composed
            return queue is not None and queue.cursor_key() is not None
        return True

    def action_move(self, delta: int, wrap: bool = False) -> None:
        """``j``/``k`` stop at the first and last draft (as Up/Down do); ``n``/``N`` wrap."""
        count = self.queue.row_count
        if not count:
            return
        row = self.queue.cursor_row + delta
        row = row % count if wrap else max(0, min(count - 1, row))
        self.queue.move_cursor(row=row, animate=False)

    def action_show(self) -> None:
        key = self.queue.cursor_key()
        if key is not None:
            self.show_review(key)

    def action_switch_base(self) -> None:
        """Since last approved ⇄ your edits (against the draft as placed)."""
        self.base = "placed" if self.base == "approved" else "approved"
        self.markdown = False
        self.update_status()
        self.redraw()

    def action_toggle_markdown(self) -> None:
        self.markdown = not self.markdown
        self.update_status()
        self.redraw()

    def action_filter(self) -> None:
        self.add_class("-filtering")
        self.query_one(QueueFilter).add_class("-active").focus()

    def action_select(self) -> None:
        if self.queue.toggle_selected() is not None:
            self.update_status()

    # -- deciding ----------------------------------------------------------------------

    def action_decide(self, verb: str) -> None:
        key = self.queue.cursor_key()
        if key is None:
            self.notify("No draft is selected.", severity="warning")
        elif verb == "approve":
            self.approve(key)
        else:
            self.hold_reject(key)

    def name_of(self, key: str) -> str:
        draft = self.queue.draft(key)
        return (draft.heinzel_name if draft else None) or "draft"

    def leave_queue(self, key: str) -> None:
        """A decided draft leaves the queue at once; the next one's diff shows."""
        self.decided.add(key)
        before = self.queue.cursor_key()
        self.queue.show([d for d in self.queue.listed if d.key != key])
        self.review = None
        self.after_queue_change(before)

    @work(group="review-decide")
    async def approve(self, key: str) -> None:
        name = self.name_of(key)
        try:
            await self.cockpit.client.call(ops.APPROVE, ops.ApproveRequest(ref=key))
        except HzError as exc:
            self.notify(f"{name}: {exc.one_line()}", severity="error", timeout=10)
            return
        self.notify(f"{name}: draft approved")
        self.leave_queue(key)
        self.load()

    @work(group="review-decide")
    async def action_approve_selected(self) -> None:
        """Approve every marked draft, one after the other; one result line each."""
        chosen = self.queue.selected_in_order()
        if not chosen:
            self.notify("Mark drafts with space first; A approves every marked one.")
            return
        lines = []
        for draft in chosen:
            name = draft.heinzel_name or draft.heinzel
            try:
                await self.cockpit.client.call(ops.APPROVE, ops.ApproveRequest(ref=draft.key))
            except HzError as exc:
                lines.append(f"✗ {name}: {exc.one_line()}")
                continue
            lines.append(f"✓ {name}: draft approved")
            self.queue.selected.discard(draft.key)
            self.leave_queue(draft.key)
        failed = sum(1 for line in lines if line.startswith("✗"))
        title = f"approved {len(lines) - failed} of {len(lines)}"
        self.notify(
            "\n".join(lines), title=title, severity="error" if failed else "information", timeout=10
        )
        self.update_status()
        self.load()

    def hold_reject(self, key: str) -> None:
        """Reject, held for ``undo_seconds``: on disk first, sent when the time is up."""
        name = self.name_of(key)
        try:
            self.held.hold(key, name)
        except HzError as exc:
            self.notify(f"{name}: not rejected: {exc.one_line()}", severity="error", timeout=10)
            return
        self.held_here.add(key)
        self.waiting.pop(key, None)
        self.queue.waiting.discard(key)
        draft = self.queue.draft(key)
        if draft is not None:
            self.rejected_rows[key] = draft
        self.undoable[key] = self.set_timer(self.undo_seconds, partial(self.send_held, key))
        self.undo_toasts[key] = f"{name}: draft rejected · u undoes it"
        self.notify(self.undo_toasts[key], timeout=max(self.undo_seconds, 1.0))
        self.leave_queue(key)

    def action_undo(self) -> None:
        """Take back the last rejection not sent: one still held, or one waiting for the
        kernel; its draft shows again at once (the kernel may be away)."""
        if self.undoable:
            key = next(reversed(self.undoable))
        elif self.waiting:
            key = next(reversed(self.waiting))
        else:
            self.notify("Nothing to undo: a rejection is sent once its few seconds are up.")
            return
        name = self.name_of_held(key)
        try:
            restored = self.held.release(key)
        except HzError as exc:
            self.notify(f"{name}: cannot undo: {exc.one_line()}", severity="error", timeout=10)
            return
        timer = self.undoable.pop(key, None)
        if timer is not None:
            timer.stop()
        self.undo_over(key)
        self.waiting.pop(key, None)
        self.queue.waiting.discard(key)
        self.held_here.discard(key)
        row = self.rejected_rows.pop(key, None)
        if not restored:
            # Someone else took it off the file (and sent it): the draft is not restored.
            gone = HzError("HZU245", "the rejection was already sent; the draft is not restored")
            self.notify(f"{name}: cannot undo: {gone.one_line()}", severity="error", timeout=10)
            self.leave_queue(key)
            return
        self.decided.discard(key)
        self.restored = key
        self.show_row(key, row)
        self.notify(f"{name}: reject undone; the draft still waits")
        if self.cockpit.link.attached:
            self.load()

    def show_row(self, key: str, row: DraftSummary | None) -> None:
        """Put a draft's row back in the queue (where the kernel lists it) if it is not there."""
        before = self.queue.cursor_key()
        listed = self.queue.listed
        if row is not None and self.queue.draft(key) is None:
            at = next((n for n, d in enumerate(listed) if d.placed_at > row.placed_at), None)
            listed = [*listed, row] if at is None else [*listed[:at], row, *listed[at:]]
        self.queue.show(listed)
        self.follow_restored()
        self.after_queue_change(before)

    def undo_over(self, key: str) -> None:
        """Take down the toast offering ``key``'s undo (unless it offers another's too)."""
        message = self.undo_toasts.pop(key, None)
        if message is not None and message not in self.undo_toasts.values():
            self.cockpit.notices.withdraw(message)

    def name_of_held(self, key: str) -> str:
        return next((h.name for h in self.held.load() if h.key == key), "draft")

    @work(group="review-held")
    async def send_held(self, key: str) -> None:
        """The undo window closed: send the rejection (unless it was undone meanwhile)."""
        self.undoable.pop(key, None)
        self.undo_over(key)
        await self.deliver(key)

    def on_link_changed(self, link: Link) -> None:
        """The link is back: send the rejections that waited for the kernel, now."""
        if link.attached and self.waiting:
            self.send_waiting()

    @work(group="review-held")
    async def send_waiting(self) -> None:
        for key in list(self.waiting):
            if key in self.waiting:  # not undone meanwhile
                del self.waiting[key]
                self.queue.waiting.discard(key)
                self.leave_queue(key)
                await self.deliver(key, again=True)

    async def deliver(self, key: str, *, again: bool = False) -> None:
        """Send one held rejection; one with no kernel to take it waits, shown and undoable."""
        held = next((h for h in self.held.load() if h.key == key), None)
        if held is None or key in self.sending:
            return
        self.sending.add(key)
        try:
            sent = await self.held.send(self.cockpit.client, held, again=again)
        finally:
            self.sending.discard(key)
        if sent.outcome == "unreachable":
            self.wait_for_kernel(key)
            self.notify(sent.line, severity="warning", timeout=10)
            return
        self.held_here.discard(key)
        self.rejected_rows.pop(key, None)
        if sent.outcome == "refused":
            self.decided.discard(key)
            self.notify(sent.line, severity="error", timeout=10)
            self.load()
        elif again:
            self.notify(sent.line)  # the reject that waited is in
        self.update_status()

    def wait_for_kernel(self, key: str) -> None:
        """The rejection could not be sent: its draft shows again, marked, and ``u`` undoes it."""
        self.waiting[key] = None
        self.queue.waiting.add(key)
        self.decided.discard(key)
        self.show_row(key, self.rejected_rows.get(key))

    async def on_unmount(self) -> None:
        """Leaving the desk (or quitting) ends the undo window: send what is still held; what
        finds no kernel is left to the cockpit, which sends it when the link is back."""
        self.stop_watching.set()
        for key, timer in self.undoable.items():
            timer.stop()
            self.undo_over(key)
        self.undoable.clear()
        for held in self.held.load():
            if held.key in self.held_here and held.key not in self.sending:
                again = held.key in self.waiting
                try:
                    async with asyncio.timeout(SEND_ON_LEAVING_S):
                        sent = await self.held.send(self.cockpit.client, held, again=again)
                except TimeoutError:
                    # A daemon that does not answer (stopped, say) must not hold the quit: it
                    # stays held, and the next cockpit sends it (looking first whether it went).
                    self.cockpit.unsent_rejects.add(held.key)
                    continue
                if sent.outcome == "unreachable":
                    self.cockpit.unsent_rejects.add(held.key)

    # -- the editor --------------------------------------------------------------------

    def action_edit(self) -> None:
        shown = self.review
        if shown is None or shown.key != self.queue.cursor_key():
            self.notify("Wait for the diff, then edit.", severity="warning")
            return
        if self.cockpit.client.remote:
            self.notify(
                "HZU126: the document is on the daemon's machine; edit it there, or approve here",
                severity="warning",
            )
            return
        try:
            command = review.editor_command(shown.path, shown.line)
        except HzError as exc:
            self.notify(exc.one_line(), severity="error", timeout=10)
            return
        returned = self.run_editor(command)
        if isinstance(returned, OSError):
            self.notify(f"HZU061: {command[0]}: {returned.strerror}", severity="error", timeout=10)
            return
        if returned != 0:
            self.notify(f"{command[0]} exited with {returned}", severity="warning")
        self.review = None
        self.show_review(shown.key)
        self.load()

    def run_editor(self, command: list[str]) -> int | OSError:
        """Run the editor in the terminal the cockpit hands over; its exit status, or why not.

        A program that cannot be started is found before the cockpit steps
        aside, and any failure inside is caught there: Textual takes the
        terminal back only when the ``suspend`` block ends without raising.
        """
        if shutil.which(command[0]) is None:
            return FileNotFoundError(errno.ENOENT, "no such program (set $VISUAL or $EDITOR)")
        try:
            with self.app.suspend():
                return _run(command, capture=False)
        except SuspendNotSupported:
            # No terminal to hand over (a headless run): the editor runs without one.
            return _run(command, capture=True)

    def action_back(self) -> None:
        """Escape clears the queue's filter first (as on the home), then leaves the desk."""
        bar = self.query_one(QueueFilter)
        if bar.value or bar.has_class("-active"):
            bar.clear()
            bar.remove_class("-active")
            self.remove_class("-filtering")
            self.focus_queue()
            return
        self.dismiss()


def _run(command: list[str], *, capture: bool) -> int | OSError:
    try:
        return subprocess.run(command, check=False, capture_output=capture).returncode
    except OSError as exc:
        return exc
