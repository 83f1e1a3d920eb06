"""F5: every notice the cockpit raised since it started, newest first, with how long ago.

Toasts go after a few seconds and at most a few show at once; this page is
where one that went too soon is read again. A notice repeated while its
toast showed is one line with a count (``hz_tui.notices.NoticeBoard``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, cast

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Static

from hz_kernel.clock import now_utc
from hz_tui import display, keymap
from hz_tui.notices import Notice
from hz_tui.widgets.key_bar import KeyBar

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp

SEVERITY_STYLE = {"information": "", "warning": "bold", "error": "bold"}
SEVERITY_LABEL = {"information": "info", "warning": "warning", "error": "error"}


class NoticesScreen(Screen[None]):
    """The notice history, kept current as notices come and the clock moves."""

    CSS_PATH = "notices.tcss"
    BINDINGS = keymap.NOTICES

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    def compose(self) -> ComposeResult:
        yield Header(icon="hz")
        with VerticalScroll(id="notices-scroll"):
            yield Static(id="notices")
        yield KeyBar()

    def on_mount(self) -> None:
        self.title = "hz · notices"
        self.cockpit.notices.changed.subscribe(self, self.on_notice)
        self.cockpit.ticker.ticked.subscribe(self, self.show)
        self.show(now_utc())

    def on_notice(self, notice: Notice) -> None:
        self.show(now_utc())

    def show(self, now: datetime) -> None:
        history = list(reversed(self.cockpit.notices.history))
        widget = self.query_one("#notices", Static)
        if not history:
            widget.update(Text("No notices since the cockpit started.", style="dim"))
            return
        table = Table(show_header=True, header_style="bold", box=None, expand=True)
        table.add_column("When", no_wrap=True, width=10)
        table.add_column("", no_wrap=True, width=7)
        table.add_column("Notice", ratio=1)
        for notice in history:
            when = display.ago(notice.at.isoformat(), now, exact=False)
            label = SEVERITY_LABEL[notice.severity]
            style = SEVERITY_STYLE[notice.severity]
            text = Text(notice.text)
            if notice.title:
                text = Text.assemble((notice.title, "bold"), " ", text)
            table.add_row(when, Text(label, style=style), text)
        widget.update(table)

    def action_close(self) -> None:
        self.dismiss()
