"""Label/value pairs laid out as two aligned columns (the heinzel header, the kernel page)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.widgets import Static


class Facts(Static):
    """A block of facts; values are plain text (or styled ``Text``), never markup."""

    def show(self, facts: Sequence[tuple[str, str | Text]]) -> None:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for label, value in facts:
            grid.add_row(Text(label), Text(value) if isinstance(value, str) else value)
        self.update(grid)
