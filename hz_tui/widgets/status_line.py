"""The line under the home table: totals first (running, waiting on you, spent against the
day's cap), then the count, the filter and the sort."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from hz_kernel.overview import SpendToday
from hz_tui import display


@dataclass(frozen=True)
class Totals:
    """What the home adds up from its rows, plus the kernel's figure for today's spending."""

    total: int
    shown: int
    running: int
    waiting: int
    drafts: int
    spend: SpendToday | None
    """None until the kernel answered ``costs.today``."""


class StatusLine(Static):
    """Totals and the active filter, so an empty table never looks like a broken one."""

    _shown: Text | None = None

    def show(self, totals: Totals, *, filter_text: str, sort: str, warn: Style) -> None:
        parts: list[Text | str] = [f"{totals.running} running"]
        drafts = f" ({totals.drafts} draft{'s' if totals.drafts != 1 else ''})"
        parts.append(f"{totals.waiting} waiting on you{drafts if totals.drafts else ''}")
        spend = totals.spend
        if spend is not None:
            spent = f"{display.usd(spend.spent_usd)} of {display.usd(spend.cap_usd)} today"
            over = spend.spent_usd >= spend.cap_usd
            parts.append(Text(f"{spent}: cap reached" if over else spent, warn if over else ""))
        heinzels = f"{totals.total} heinzel{'s' if totals.total != 1 else ''}"
        parts.append(heinzels if totals.shown == totals.total else f"{totals.shown} of {heinzels}")
        if filter_text:
            parts.append(f"filter: {display.echoed(filter_text)}")
        parts.append(f"sorted by {sort}")
        line = Text()
        for index, part in enumerate(parts):
            if index:
                line.append(" · ")
            line.append(part)
        if line != self._shown:  # an update lays the screen out again: only when it reads anew
            self._shown = line
            self.update(line)
