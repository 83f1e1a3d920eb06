"""The review queue: every draft waiting for the user, across heinzels, oldest first."""

from __future__ import annotations

from collections.abc import Iterable

from textual import events
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist

from hz_kernel.api import DraftSummary
from hz_kernel.clock import now_utc
from hz_tui import display
from hz_tui.rows import Cell

#: Fixed columns; the document takes what is left.
COLUMNS = (("heinzel", "Heinzel", 16), ("asset", "Document", 0), ("placed", "Placed", 8))
ASSET_MIN = 16


class DraftQueue(DataTable[Cell]):
    """Drafts keyed by their draft key; a refresh keeps the cursor on the same draft."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.drafts: list[DraftSummary] = []
        self.asset_width = 0

    def on_resize(self, event: events.Resize) -> None:
        fixed = sum(width for _, _, width in COLUMNS) + 2 * self.cell_padding * len(COLUMNS)
        asset = max(ASSET_MIN, event.size.width - fixed - 2)
        if asset != self.asset_width:
            self.asset_width = asset
            self.clear(columns=True)
            for key, label, width in COLUMNS:
                self.add_column(label, key=key, width=width or asset)
            self.show(self.drafts)

    def show(self, drafts: Iterable[DraftSummary]) -> None:
        """Show exactly ``drafts``, in order, keeping the highlighted draft if it is still there."""
        focused = self.cursor_key()
        position = self.cursor_row
        self.drafts = list(drafts)
        if not self.columns:
            return
        self.clear()
        now = now_utc()
        for draft in self.drafts:
            asset = (draft.asset or "?").removeprefix("doc:")
            self.add_row(
                Cell(draft.heinzel_name or draft.heinzel),
                Cell(asset),
                Cell(display.ago(draft.placed_at, now, exact=False)),
                key=draft.key,
            )
        keys = [d.key for d in self.drafts]
        if focused in keys:
            self.move_cursor(row=keys.index(focused), animate=False)
        elif self.drafts:
            self.move_cursor(row=min(position, len(self.drafts) - 1), animate=False)

    def cursor_key(self) -> str | None:
        """The key of the highlighted draft, if any."""
        if not self.row_count:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except CellDoesNotExist:
            return None

    def draft(self, key: str | None) -> DraftSummary | None:
        return next((d for d in self.drafts if d.key == key), None)
