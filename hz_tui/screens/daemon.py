"""The kernel page: which kernel the cockpit talks to, in which process, over what, since when.

An embedded kernel runs in this very process, so its facts are known here.
A daemon's facts (its pid, protocol and uptime) come from its status
operation; until the kernel offers one this page says so rather than guess.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, cast

from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Static

from hz_kernel import operations as ops
from hz_kernel.client import LocalClient
from hz_kernel.clock import now_utc
from hz_kernel.errors import HzError
from hz_tui import display, keymap
from hz_tui.widgets.facts import Facts
from hz_tui.widgets.key_bar import KeyBar

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp

NOT_REPORTED = "not reported (the daemon has no status operation yet)"


class DaemonScreen(Screen[None]):
    """Facts about the kernel behind the cockpit."""

    CSS_PATH = "daemon.tcss"
    BINDINGS = keymap.DAEMON

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    def compose(self) -> ComposeResult:
        yield Header(icon="hz")
        with VerticalScroll(id="page"):
            yield Static("Kernel", classes="section")
            yield Facts(id="facts")
        yield KeyBar()

    def on_mount(self) -> None:
        self.title = "hz · kernel"
        self.load()

    @work(exclusive=True, group="daemon-page")
    async def load(self) -> None:
        cockpit = self.cockpit
        try:
            count = str(len((await cockpit.client.call(ops.LIST, ops.ListRequest())).items))
        except HzError as exc:
            count = exc.one_line()
        embedded = isinstance(cockpit.client, LocalClient)
        uptime = (now_utc() - cockpit.started_at).total_seconds()
        facts = [
            ("Kernel", "embedded in this cockpit" if embedded else "a local daemon"),
            ("Talks to", cockpit.client.where),
            ("Process", f"pid {os.getpid()} (this cockpit)" if embedded else NOT_REPORTED),
            (
                "Protocol",
                f"in-process calls · {len(ops.OPERATIONS)} operations"
                if embedded
                else NOT_REPORTED,
            ),
            ("Home", str(cockpit.home.root)),
            ("Database", str(cockpit.home.index_path)),
            ("Heinzels", count),
            ("Uptime", display.span(uptime) if embedded else NOT_REPORTED),
        ]
        self.query_one(Facts).show(facts)

    def action_back(self) -> None:
        self.dismiss()

    def action_refresh(self) -> None:
        self.load()
