"""Cost this month, by cause, as ``hz heinzel show`` reports it."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from hz_kernel.api import CostByCause
from hz_tui import display


class CostPanel(Static):
    """The month's total and one line per cause, largest first."""

    def show(self, cost: CostByCause) -> None:
        grid = Table.grid(padding=(0, 2))
        grid.add_column()
        grid.add_column(justify="right")
        grid.add_row(Text("this month", style="bold"), Text(display.usd(cost.total), style="bold"))
        for cause, amount in sorted(cost.by_cause.items(), key=lambda kv: -kv[1]):
            grid.add_row(Text(cause), Text(display.usd(amount)))
        self.update(grid)
