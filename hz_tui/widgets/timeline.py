"""One heinzel's turns, newest first: when, cause, how it ended, the report line, cost.

Enter (or a click on the selected row) asks for the turn's transcript.
"""

from __future__ import annotations

from rich.style import Style
from textual import events
from textual.message import Message
from textual.widgets import DataTable

from hz_kernel.api import TurnSummary
from hz_tui import display, keymap
from hz_tui.rows import Cell, Palette
from hz_tui.turn_state import step_under_way

#: Fixed columns; the report takes what is left (at least ``REPORT_MIN``).
COLUMNS = (
    ("started", "Started (UTC)", 16),
    ("cause", "Cause", 12),
    ("outcome", "Outcome", 10),
    ("report", "Report", 0),
    ("cost", "Cost", 7),
)
REPORT_MIN = 16


class Timeline(DataTable[Cell]):
    """The timeline of turns, keyed by turn id so a live refresh only touches what moved."""

    BINDINGS = keymap.TIMELINE

    class OpenTurn(Message):
        """The user asked for this turn's transcript."""

        def __init__(self, turn: str) -> None:
            super().__init__()
            self.turn = turn

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.palette = Palette()
        self.turns: list[TurnSummary] = []
        self.report_width = 0

    def on_resize(self, event: events.Resize) -> None:
        fixed = sum(width for _, _, width in COLUMNS) + 2 * self.cell_padding * len(COLUMNS)
        report = max(REPORT_MIN, event.size.width - fixed - 1)
        if report != self.report_width:
            self.report_width = report
            self.clear(columns=True)
            for key, label, width in COLUMNS:
                self.add_column(label, key=key, width=width or report)
            self.show(self.turns)

    def action_open_turn(self) -> None:
        if self.row_count:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
            if key is not None:
                self.post_message(self.OpenTurn(key))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """A click on the selected row (Enter is ``action_open_turn``)."""
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.OpenTurn(event.row_key.value))

    def show(self, turns: list[TurnSummary]) -> None:
        self.turns = turns
        if not self.columns:
            return
        wanted = {turn.turn for turn in turns}
        for key in [k.value for k in self.rows if k.value not in wanted]:
            if key is not None:
                self.remove_row(key)
        added = False
        for turn in turns:
            cells = _cells(turn, self.palette)
            if turn.turn in self.rows:
                for column, cell in cells.items():
                    if self.get_cell(turn.turn, column).signature != cell.signature:
                        self.update_cell(turn.turn, column, cell)
            else:
                self.add_row(*cells.values(), key=turn.turn)
                added = True
        if added:
            self.sort("started", key=lambda cell: cell.order, reverse=True)


def _cells(turn: TurnSummary, palette: Palette) -> dict[str, Cell]:
    if turn.status == "running":
        outcome = Cell(f"{step_under_way(turn.step)}…", palette.ok)
    else:
        outcome_text = turn.disposition or turn.status
        bad = outcome_text in ("failed", "abandoned")
        outcome = Cell(outcome_text, palette.bad if bad else Style())
    causes = ", ".join(turn.causes) if turn.causes else (turn.cause or "—")
    return {
        "started": Cell(display.clock(turn.started_at), order=(turn.started_at, turn.seq)),
        "cause": Cell(causes),
        "outcome": outcome,
        "report": Cell(turn.report or turn.reason or ""),
        "cost": Cell(display.usd(turn.usd), order=turn.usd),
    }
