"""A heinzel's inbox as the page shows it: the messages admitted and not yet taken up."""

from __future__ import annotations

from collections.abc import Sequence
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
    """Waiting messages, oldest first, each with its mode and how long ago it came; first the
    entries skipped as no regular files (HZS090), so a stray FIFO never hides the inbox."""

    def show(self, items: list[InboxItem], now: datetime, skipped: Sequence[str] = ()) -> None:
        pending = waiting(items)
        lines = [Text.assemble(("skipped: ", "bold"), why) for why in skipped]
        if not pending:
            lines.append(Text("No messages wait.", style="dim"))
            self.update(Group(*lines))
            return
        for item in pending:
            mode = item.mode.upper() if item.kind == "chat" else item.kind
            when = display.ago(item.admitted_at.isoformat(), now)
            first = item.message.splitlines()[0] if item.message else "(no text)"
            lines.append(Text.assemble((f"{mode:<6}", "bold"), " ", first, (f"  {when}", "dim")))
        self.update(Group(*lines))
