"""The review queue's filter: words matched against each draft's heinzel and document."""

from __future__ import annotations

from textual.message import Message

from hz_tui.widgets.draft_queue import DraftQueue
from hz_tui.widgets.filter_bar import FilterBar


class QueueFilter(FilterBar):
    """Filters the queue as you type; Escape clears it, and it or Down hands the keys back."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.placeholder = "filter drafts: heinzel, document"

    class Cleared(Message):
        """Escape cleared the filter: a desk that showed its list only to filter hides it."""

    def action_to_table(self) -> None:
        self.screen.query_one(DraftQueue).focus()

    def action_clear(self) -> None:
        super().action_clear()
        self.post_message(self.Cleared())
