"""One heinzel's turns, newest first: when, cause, how it ended, the report line, cost.

Enter (or a click on the selected row) asks for the turn's transcript.
As on the home table, the columns whose text gets cut (the causes, the
report) share what the fixed ones leave: the causes get what their longest
text needs, the report the rest, so a wide terminal shows both whole. A
column stays free for the scrollbar: a long timeline never pushes the cost out.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.style import Style
from textual import events
from textual.message import Message
from textual.widgets import DataTable

from hz_kernel.api import TurnSummary
from hz_tui import display, keymap
from hz_tui.rows import Cell, Palette
from hz_tui.turn_state import step_under_way

#: The columns and their least widths; the cause grows to its text, the report takes the rest.
COLUMNS = (
    ("started", "Started (UTC)", 16),
    ("cause", "Cause", 12),
    ("outcome", "Outcome", 10),
    ("report", "Report", 16),
    ("cost", "Cost", 7),
)
#: Kept free for the vertical scrollbar (``scrollbar-size-vertical``): a long timeline's bar
#: never pushes the cost out of sight.
SCROLLBAR = 1
#: The columns whose text gets cut, in the order they get spare width.
GROWING = ("cause", "report")


def column_widths(available: int, padding: int, wanted: dict[str, int]) -> dict[str, int]:
    """Widths for a timeline ``available`` cells wide: each column its least, then what is left
    to the growing columns, each up to its longest text (``wanted``), and the rest to the report."""
    widths = {key: least for key, _, least in COLUMNS}
    rest = available - sum(widths.values()) - 2 * padding * len(COLUMNS)
    for key in GROWING:
        more = min(max(0, rest), max(0, wanted.get(key, 0) - widths[key]))
        widths[key] += more
        rest -= more
    widths["report"] += max(0, rest)
    return widths


class Timeline(DataTable[Cell]):
    """The timeline of turns, keyed by turn id so a live refresh only touches what moved."""

    BINDINGS = keymap.TIMELINE

    class OpenTurn(Message):
        """The user asked for this turn's transcript."""

        def __init__(self, turn: str) -> None:
            super().__init__()
            self.turn = turn

    DEFAULT_CSS = """
    Timeline {
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.palette = Palette()
        self.turns: list[TurnSummary] = []
        self.widths: dict[str, int] = {}

    def on_resize(self, event: events.Resize) -> None:
        self._lay_out()

    def _lay_out(self) -> bool:
        """Fit the columns to the width and the turns' texts; True when that re-added the rows."""
        cells = [_cells(turn, self.palette) for turn in self.turns]
        wanted = {key: max((cell_len(c[key].plain) for c in cells), default=0) for key in GROWING}
        available = self.size.width - SCROLLBAR
        widths = column_widths(available, self.cell_padding, wanted)
        if widths != self.widths:
            self.widths = widths
            self.clear(columns=True)
            for key, label, _ in COLUMNS:
                self.add_column(label, key=key, width=widths[key])
            self._fill(self.turns)
            return True
        return False

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
        if self.columns and not self._lay_out():
            self._fill(turns)

    def _fill(self, turns: list[TurnSummary]) -> None:
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
    causes = display.causes(turn.causes) or turn.cause or "—"
    return {
        "started": Cell(display.clock(turn.started_at), order=(turn.started_at, turn.seq)),
        "cause": Cell(causes),
        "outcome": outcome,
        "report": Cell(display.visible(turn.report or turn.reason or "")),
        "cost": Cell(display.usd(turn.usd), order=turn.usd),
    }
