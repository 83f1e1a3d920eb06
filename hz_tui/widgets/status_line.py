"""The line under the home table: how many heinzels, how many wait on you, the filter and sort."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class StatusLine(Static):
    """Counts and the active filter, so an empty table never looks like a broken one."""

    def show(self, *, total: int, shown: int, waiting: int, filter_text: str, sort: str) -> None:
        parts = [f"{total} heinzel{'s' if total != 1 else ''}"]
        if shown != total:
            parts.append(f"{shown} shown")
        parts.append(f"{waiting} waiting on you")
        if filter_text:
            parts.append(f"filter: {filter_text}")
        parts.append(f"sorted by {sort}")
        self.update(Text(" · ".join(parts)))
