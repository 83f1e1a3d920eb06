"""A heinzel's inbox as the page shows it: the messages admitted and not yet taken up."""

from __future__ import annotations

from datetime import datetime

from rich.console import Group
from rich.text import Text
from textual.widgets import Static

from hz_kernel.api import InboxItem
from hz_tui import display

#: Statuses of an inbox item that still wait (``heinzel.inbox``); the rest reached a turn.
WAITING = ("pending", "requested")


def waiting(items: list[InboxItem]) -> list[InboxItem]:
    return [item for item in items if item.status in WAITING]


class InboxList(Static):
    """Waiting messages, oldest first, each with its mode and how long ago it came."""

    def show(self, items: list[InboxItem], now: datetime) -> None:
        pending = waiting(items)
        if not pending:
            self.update(Text("No messages wait.", style="dim"))
            return
        lines = []
        for item in pending:
            mode = item.mode.upper() if item.kind == "chat" else item.kind
            when = display.ago(item.admitted_at.isoformat(), now)
            first = item.message.splitlines()[0] if item.message else "(no text)"
            lines.append(Text.assemble((f"{mode:<6}", "bold"), " ", first, (f"  {when}", "dim")))
        self.update(Group(*lines))
