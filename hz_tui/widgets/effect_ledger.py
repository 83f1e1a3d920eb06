"""The live turn's effect ledger: each effect by key as it is journalled (started → done)."""

from __future__ import annotations

from textual import events
from textual.widgets import DataTable

from hz_tui.rows import Cell, Palette
from hz_tui.turn_state import EffectRow, short_key

#: Fixed columns; the key takes what is left (``KEY_MIN`` until the ledger knows its width).
COLUMNS = (("effect", "Effect", 21), ("key", "Key", 0), ("status", "Status", 20))
KEY_MIN = 16


class EffectLedger(DataTable[Cell]):
    """One row per effect key, updated in place as its events arrive."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="none", show_cursor=False)
        self.palette = Palette()
        self.effects: list[EffectRow] = []
        self.key_width = 0

    def on_mount(self) -> None:
        self._lay_out(KEY_MIN)

    def on_resize(self, event: events.Resize) -> None:
        fixed = sum(width for _, _, width in COLUMNS) + 2 * self.cell_padding * len(COLUMNS)
        width = max(KEY_MIN, event.size.width - fixed - 1)
        if width != self.key_width:
            self._lay_out(width)

    def _lay_out(self, key_width: int) -> None:
        self.key_width = key_width
        self.clear(columns=True)
        for key, label, column_width in COLUMNS:
            self.add_column(label, key=key, width=column_width or key_width)
        self.show(self.effects)

    def show(self, effects: list[EffectRow]) -> None:
        self.effects = list(effects)
        if not self.columns:
            return
        self.clear()
        for row in self.effects:
            style = {
                "done": self.palette.ok,
                "failed": self.palette.bad,
                "interrupted": self.palette.warn,
            }.get(row.status, self.palette.accent)
            status = row.status + (f": {row.detail}" if row.detail else "")
            self.add_row(Cell(row.effect), Cell(short_key(row.key)), Cell(status, style))
