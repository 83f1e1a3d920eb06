"""A heinzel's conversation: every message you sent it, oldest first, and where each went.

Each message shows when it was sent, its mode (STEER or QUEUE), and its
route: steered into a running turn, queued as (or for) a turn, an answer,
or still waiting; with the turn it reached. It is read with
``heinzel.conversation`` (so it works attached with ``--connect``), again
whenever the heinzel's spine moves, and searched like a transcript.
"""

from __future__ import annotations

from textual import work
from textual.widgets import Static

from hz_kernel import operations as ops
from hz_kernel.errors import HzError
from hz_tui import display
from hz_tui.screens.transcript import SearchableScreen
from hz_tui.transcript import conversation_lines
from hz_tui.watcher import SpineBatch


class ConversationScreen(SearchableScreen):
    """The messages sent to the heinzel with id ``heinzel_id``."""

    def on_mount(self) -> None:
        super().on_mount()
        self.title = "hz · conversation"
        self.cockpit.spines_moved.subscribe(self, self.on_spines)
        self.load()

    def on_spines(self, batch: SpineBatch) -> None:
        if batch.reload or self.heinzel_id in batch.moved or batch.lines.get(self.heinzel_id):
            self.load()

    @work(exclusive=True, group="conversation")
    async def load(self) -> None:
        try:
            conversation = await self.cockpit.client.call(
                ops.CONVERSATION, ops.HeinzelRef(ref=self.heinzel_id)
            )
        except HzError as exc:
            if self.is_attached:
                self.query_one("#search-status", Static).update(exc.one_line())
            return
        if not self.is_attached:
            return
        self.cockpit.retitle(self, f"hz · {display.visible(conversation.name)} · conversation")
        self.show_lines(conversation_lines(conversation))
