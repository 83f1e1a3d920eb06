"""The kernel page: which kernel the cockpit talks to, in which process, over what, since when.

The facts come from the client's ``status()``: an embedded kernel reports
this very process, a daemon its health sample. A daemon can be restarted
from here (the cockpit carries on with a client of the new one); an
embedded kernel cannot, and the page says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Static

from hz_kernel import operations as ops
from hz_kernel.api import KernelStatus
from hz_kernel.errors import HzError
from hz_tui import display, keymap
from hz_tui.widgets.facts import Facts
from hz_tui.widgets.key_bar import KeyBar

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp


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

    embedded = True
    """Until the status arrives, restarting is not offered."""

    def on_mount(self) -> None:
        self.title = "hz · kernel"
        self.load()

    @work(exclusive=True, group="daemon-page")
    async def load(self) -> None:
        cockpit = self.cockpit
        try:
            status = await cockpit.client.status()
        except HzError as exc:
            self.query_one(Facts).show([("Kernel", exc.one_line())])
            return
        self.embedded = status.embedded
        self.refresh_bindings()
        self.query_one(Facts).show(facts_of(status, cockpit.client.where, cockpit))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "restart":
            return None if self.embedded else True
        return True

    def action_restart(self) -> None:
        """Restart at once when no turn runs; else ask first, as the restart waits for them."""
        running = sum(1 for row in self.cockpit.rows.values() if row.state == "awake")
        if not running:
            self.restart_chosen("restart")
            return
        from hz_tui.screens.choose import ChooseScreen

        turns = "1 turn" if running == 1 else f"{running} turns"
        choices = [
            ("restart", "Wait for them to reach a step boundary, then restart"),
            ("cancel", "Cancel"),
        ]
        self.app.push_screen(ChooseScreen(f"{turns} running", choices), self.restart_chosen)

    def restart_chosen(self, choice: str | None) -> None:
        if choice == "restart":
            self.cockpit.restart_daemon()
            self.dismiss()

    def action_logs(self) -> None:
        self.cockpit.action_logs()

    def action_back(self) -> None:
        self.dismiss()

    def action_refresh(self) -> None:
        self.load()


def facts_of(status: KernelStatus, where: str, cockpit: CockpitApp) -> list[tuple[str, str]]:
    """The page's lines: the same facts for both kinds of kernel, each worded for its kind."""
    operations = f"{len(ops.OPERATIONS)} operations"
    if status.embedded:
        kind, process = "embedded in this cockpit", f"pid {status.pid} (this cockpit)"
        protocol = f"in-process calls · {operations}"
        restart = "not here: an embedded kernel lives and ends with this cockpit"
    else:
        kind, process = "a local daemon", f"pid {status.pid}"
        protocol = f"hz protocol v{status.protocol} over {status.address} · {operations}"
        restart = "R restarts the daemon; the cockpit reconnects to the new one"
    facts = [
        ("Kernel", kind),
        ("Talks to", where),
        ("Process", process),
        ("Protocol", protocol),
        ("Home", str(cockpit.home.root)),
        ("Database", str(cockpit.home.index_path)),
        ("Heinzels", str(status.heinzels)),
        ("Turns", f"{status.turns_running} running, {status.turns_queued} queued"),
        ("Uptime", f"{display.span(status.uptime_s)} (since {status.started_at})"),
    ]
    if status.memory_available_mb is not None:
        facts.append(("Memory", f"{status.memory_available_mb} MB available"))
    facts.append(("Restart", restart))
    return facts
