"""The review queue: every draft waiting for the user, across heinzels, oldest first.

Space marks drafts for a batch decision (the first column shows the mark);
a filter narrows the queue to drafts whose heinzel or document has every
word typed. Marks on drafts that leave the queue are forgotten. A draft whose
reject waits for the kernel (the daemon is away) stays listed, marked ``✗``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from textual import events
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist

from hz_kernel.api import DraftSummary
from hz_kernel.clock import now_utc
from hz_tui import display
from hz_tui.rows import Cell

#: Fixed columns; the document takes what is left.
COLUMNS = (
    ("mark", "", 1),
    ("heinzel", "Heinzel", 16),
    ("asset", "Document", 0),
    ("placed", "Placed", 8),
)
ASSET_MIN = 16
#: Narrower than this, the queue shows the mark and the heinzel only (the diff needs the room).
FULL_WIDTH = 40
MARKED = "●"
WAITING = "✗"


def matches(draft: DraftSummary, words: list[str]) -> bool:
    """Every word (lower case) appears in the draft's heinzel name or document."""
    haystack = f"{draft.heinzel_name or draft.heinzel} {draft.asset or ''}".lower()
    return all(word in haystack for word in words)


def successor(draft: DraftSummary, drafts: list[DraftSummary]) -> int | None:
    """The row of ``draft`` in ``drafts``, else of the one that replaced it: a heinzel that
    drafts its section again re-lands the draft under a new key, later in the queue."""
    for row, other in enumerate(drafts):
        if other.key == draft.key:
            return row
    for row, other in enumerate(drafts):
        if (other.heinzel, other.asset) == (draft.heinzel, draft.asset):
            return row
    return None


class DraftQueue(DataTable[Cell]):
    """Drafts keyed by their draft key; a refresh keeps the cursor on the same draft."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.listed: list[DraftSummary] = []
        """Every draft given to ``show``; ``drafts`` is the part the filter lets through."""
        self.drafts: list[DraftSummary] = []
        self.selected: set[str] = set()
        self.waiting: set[str] = set()
        """Drafts whose reject waits for the kernel: shown, marked ``WAITING``."""
        self.words: list[str] = []
        self.asset_width = 0

    def on_resize(self, event: events.Resize) -> None:
        columns = COLUMNS if event.size.width >= FULL_WIDTH else COLUMNS[:2]
        fixed = sum(width for _, _, width in columns) + 2 * self.cell_padding * len(columns)
        asset = max(ASSET_MIN, event.size.width - fixed - 2)
        if len(columns) < len(COLUMNS):
            asset = -max(1, event.size.width - 2 * self.cell_padding * 2 - 3)
        if asset != self.asset_width:
            self.asset_width = asset
            followed, position = self.draft(self.cursor_key()), self.cursor_row
            self.clear(columns=True)
            for key, label, width in columns:
                self.add_column(
                    label,
                    key=key,
                    width=(abs(asset) if key == "heinzel" and asset < 0 else width or asset),
                )
            self.fill(self.listed, followed, position)

    def show(self, drafts: Iterable[DraftSummary]) -> None:
        """Show ``drafts`` that pass the filter, in order; the cursor follows the highlighted
        draft (k9s and lazygit keep the item, not the row: ``a`` must hit the draft read)."""
        self.fill(drafts, self.draft(self.cursor_key()), self.cursor_row)

    def fill(
        self, drafts: Iterable[DraftSummary], followed: DraftSummary | None, position: int
    ) -> None:
        """List ``drafts`` with the cursor on ``followed``, on the draft that replaced it, or
        (both gone) on the row nearest ``position``."""
        self.listed = list(drafts)
        self.selected &= {d.key for d in self.listed}
        self.drafts = [d for d in self.listed if matches(d, self.words)]
        if not self.columns:
            return
        self.clear()
        now = now_utc()
        narrow = len(self.columns) < len(COLUMNS)
        for draft in self.drafts:
            asset = (draft.asset or "?").removeprefix("doc:")
            cells = [
                Cell(self.mark(draft.key)),
                Cell(draft.heinzel_name or draft.heinzel),
                Cell(asset),
                Cell(display.ago(draft.placed_at, now, exact=False)),
            ]
            self.add_row(*cells[: 2 if narrow else 4], key=draft.key)
        row = None if followed is None else successor(followed, self.drafts)
        if row is not None:
            self.move_cursor(row=row, animate=False)
        elif self.drafts:
            self.move_cursor(row=min(position, len(self.drafts) - 1), animate=False)

    def retime(self, now: datetime) -> None:
        """Move the Placed column ("11s ago") to ``now``: the app's ticker calls, not the spine."""
        if "placed" not in self.columns:
            return
        for draft in self.drafts:
            cell = Cell(display.ago(draft.placed_at, now, exact=False))
            if self.get_cell(draft.key, "placed").signature != cell.signature:
                self.update_cell(draft.key, "placed", cell)

    def set_filter(self, text: str) -> None:
        self.words = text.lower().split()
        self.show(self.listed)

    def toggle_selected(self) -> str | None:
        """Mark or unmark the highlighted draft; its key."""
        key = self.cursor_key()
        if key is None:
            return None
        self.selected ^= {key}
        self.update_cell(key, "mark", Cell(self.mark(key)))
        return key

    def mark(self, key: str) -> str:
        return WAITING if key in self.waiting else MARKED if key in self.selected else ""

    def selected_in_order(self) -> list[DraftSummary]:
        """The marked drafts, in queue order (hidden by the filter or not)."""
        return [d for d in self.listed if d.key in self.selected]

    def move_to(self, key: str) -> bool:
        """Put the cursor on the draft ``key``; whether the queue shows it."""
        keys = [d.key for d in self.drafts]
        if key not in keys:
            return False
        self.move_cursor(row=keys.index(key), animate=False)
        return True

    def cursor_key(self) -> str | None:
        """The key of the highlighted draft, if any."""
        if not self.row_count:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except CellDoesNotExist:
            return None

    def draft(self, key: str | None) -> DraftSummary | None:
        return next((d for d in self.listed if d.key == key), None)
