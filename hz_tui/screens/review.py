"""Draft review: the queue of waiting drafts across heinzels, each one's diff, and a decision.

``j``/``k`` move, the highlighted draft's diff shows beside the queue (Enter
shows it again), ``a`` approves, ``r`` rejects, ``e`` opens the document in
``$EDITOR`` and ``n`` goes to the next draft. Every decision is one kernel
operation (``approve``/``reject`` by draft key); the queue follows the
spines like every other screen.
"""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING, cast

from textual import work
from textual.app import ComposeResult, SuspendNotSupported
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from hz_kernel import operations as ops
from hz_kernel.api import DraftDiff
from hz_kernel.errors import HzError
from hz_tui import keymap, review, rows
from hz_tui.messages import RowsUpdate
from hz_tui.widgets.diff_view import DiffView
from hz_tui.widgets.draft_queue import DraftQueue
from hz_tui.widgets.key_bar import KeyBar

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp

EMPTY = "No drafts wait for you. New ones appear here as they land."


class ReviewScreen(Screen[None]):
    """Every pending draft, reviewed one after the other."""

    CSS_PATH = "review.tcss"
    BINDINGS = keymap.REVIEW

    def __init__(self) -> None:
        super().__init__()
        self.diff: DraftDiff | None = None
        self.decided: set[str] = set()
        """Keys approved or rejected here, hidden until the kernel's listing drops them too."""

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    @property
    def queue(self) -> DraftQueue:
        return self.query_one(DraftQueue)

    @property
    def pane(self) -> DiffView:
        return self.query_one(DiffView)

    def compose(self) -> ComposeResult:
        yield Header(icon="hz")
        with Horizontal(id="review"):
            yield DraftQueue(id="queue")
            yield DiffView(id="diff")
        yield Static(id="review-status")
        yield KeyBar()

    def on_mount(self) -> None:
        self.title = "hz · review drafts"
        self.cockpit.rows_changed.subscribe(self, self.on_rows)
        self.queue.focus()
        self.load()

    def on_rows(self, update: RowsUpdate) -> None:
        self.load()

    @work(exclusive=True, group="review-queue")
    async def load(self) -> None:
        try:
            listed = await self.cockpit.client.call(ops.DRAFTS, ops.Empty())
        except HzError as exc:
            self.pane.say(exc.one_line())
            return
        pending = {d.key for d in listed.items}
        self.decided &= pending
        drafts = [d for d in listed.items if d.key not in self.decided]
        before = self.queue.cursor_key()
        self.queue.show(drafts)
        self.update_status()
        key = self.queue.cursor_key()
        if key is None:
            self.diff = None
            self.pane.say(EMPTY)
        elif key != before or self.diff is None or self.diff.key != key:
            self.show_diff(key)

    def update_status(self) -> None:
        count = len(self.queue.drafts)
        if not count:
            line = "nothing waits for review"
        else:
            where = self.queue.cursor_row + 1
            line = f"draft {where} of {count} · a approve · r reject · e edit · n next"
        self.query_one("#review-status", Static).update(line)

    @work(exclusive=True, group="review-diff")
    async def show_diff(self, key: str) -> None:
        try:
            diff = await self.cockpit.client.call(ops.DIFF, ops.DraftKey(key=key))
        except HzError as exc:
            self.diff = None
            self.pane.say(exc.one_line())
            return
        if self.queue.cursor_key() != key:
            return
        self.diff = diff
        palette = rows.Palette.from_theme(self.app.theme_variables)
        self.pane.show(review.render_diff(diff, palette))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.update_status()
        key = event.row_key.value
        if key is not None and (self.diff is None or self.diff.key != key):
            self.show_diff(key)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_show()

    # -- actions -------------------------------------------------------------------------

    def action_move(self, delta: int) -> None:
        count = self.queue.row_count
        if count:
            self.queue.move_cursor(row=(self.queue.cursor_row + delta) % count, animate=False)

    def action_show(self) -> None:
        key = self.queue.cursor_key()
        if key is not None:
            self.show_diff(key)

    def action_decide(self, verb: str) -> None:
        key = self.queue.cursor_key()
        if key is None:
            self.notify("No draft is selected.", severity="warning")
            return
        self.decide(key, verb)

    @work(group="review-decide")
    async def decide(self, key: str, verb: str) -> None:
        """Approve or reject one draft; on success it leaves the queue at once."""
        draft = self.queue.draft(key)
        name = (draft.heinzel_name if draft else None) or "draft"
        operation = ops.APPROVE if verb == "approve" else ops.REJECT
        request = ops.ApproveRequest(ref=key) if verb == "approve" else ops.RejectRequest(ref=key)
        try:
            await self.cockpit.client.call(operation, request)
        except HzError as exc:
            self.notify(f"{name}: {exc.one_line()}", severity="error", timeout=10)
            return
        self.notify(f"{name}: draft {'approved' if verb == 'approve' else 'rejected'}")
        self.decided.add(key)
        self.queue.show([d for d in self.queue.drafts if d.key != key])
        self.diff = None
        self.update_status()
        self.load()

    def action_edit(self) -> None:
        diff = self.diff
        if diff is None or diff.key != self.queue.cursor_key():
            self.notify("Wait for the diff, then edit.", severity="warning")
            return
        if self.cockpit.client.remote:
            self.notify(
                "HZU126: the document is on the daemon's machine; edit it there, or approve here",
                severity="warning",
            )
            return
        command = review.editor_command(diff.path)
        try:
            with self.app.suspend():
                returned = subprocess.run(command, check=False).returncode
        except SuspendNotSupported:
            # No terminal to hand over (a headless run): the editor runs without one.
            returned = subprocess.run(command, check=False, capture_output=True).returncode
        except OSError as exc:
            self.notify(f"HZU061: {command[0]}: {exc.strerror}", severity="error", timeout=10)
            return
        if returned != 0:
            self.notify(f"{command[0]} exited with {returned}", severity="warning")
        self.diff = None
        self.show_diff(diff.key)
        self.load()

    def action_back(self) -> None:
        self.dismiss()
