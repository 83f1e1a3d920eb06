"""The line under the home table: totals first (running, waiting on you, spent against the
day's cap), then the count, the filter and the sort."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import events
from textual.widgets import Static

from hz_kernel.overview import SpendToday
from hz_tui import display


@dataclass(frozen=True)
class Totals:
    """What the home adds up from its rows, plus the kernel's figure for today's spending."""

    total: int
    shown: int
    running: int | None
    """None while the daemon is lost: what runs now is not known."""
    waiting: int
    drafts: int
    spend: SpendToday | None
    """None until the kernel answered ``costs.today``."""


#: Which parts go first when the line is too narrow for all: the sort, then the count.
_DROPPED_FIRST = ("sort", "count", "spend", "filter", "waiting")


class StatusLine(Static):
    """Totals and the active filter, so an empty table never looks like a broken one.

    A line too long for the terminal drops whole parts, least needed first,
    rather than ending mid-word.
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._parts: dict[str, Text] = {}
        self._shown: Text | None = None

    def show(self, totals: Totals, *, filter_text: str, sort: str, warn: Style) -> None:
        running = "running: not known" if totals.running is None else f"{totals.running} running"
        parts = {"running": Text(running)}
        drafts = f" ({totals.drafts} draft{'s' if totals.drafts != 1 else ''})"
        parts["waiting"] = Text(f"{totals.waiting} waiting on you{drafts if totals.drafts else ''}")
        spend = totals.spend
        if spend is not None:
            spent = f"{display.usd(spend.spent_usd)} of {display.usd(spend.cap_usd)} today"
            over = spend.spent_usd >= spend.cap_usd
            parts["spend"] = Text(f"{spent}: cap reached" if over else spent, warn if over else "")
        heinzels = f"{totals.total} heinzel{'s' if totals.total != 1 else ''}"
        count = heinzels if totals.shown == totals.total else f"{totals.shown} of {heinzels}"
        parts["count"] = Text(count)
        if filter_text:
            parts["filter"] = Text(f"filter: {display.echoed(filter_text)}")
        parts["sort"] = Text(f"sorted by {sort}")
        if parts != self._parts:
            self._parts = parts
            self._fit()

    def on_resize(self, event: events.Resize) -> None:
        self._fit()

    def _fit(self) -> None:
        parts = dict(self._parts)
        width = self.content_size.width
        for name in _DROPPED_FIRST:
            if width <= 0 or _joined(parts).cell_len <= width:
                break
            parts.pop(name, None)
        line = _joined(parts)
        if line != self._shown:  # an update lays the screen out again: only when it reads anew
            self._shown = line
            self.update(line)


def _joined(parts: dict[str, Text]) -> Text:
    return Text(" · ").join(parts.values())
