"""The kernel page: which kernel the cockpit talks to, what it runs and waits on, and its limits.

Everything comes from the client's ``status()`` (the operations table's
side of the wire), never from files, so the page reads the same for an
embedded kernel (this very process) and a daemon (its health sample),
local or remote: the running and queued turns, the tick (last, next, what
it left undone), the admission limits and the memory sample. A daemon can
be restarted from here (the cockpit carries on with a client of the new
one); an embedded kernel cannot, and the page says so.

While the cockpit reconnects to a lost daemon, the page says so and shows
none of the lost daemon's figures (they would read as current); it samples
again as soon as the cockpit is attached.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Static

from hz_kernel import operations as ops
from hz_kernel.api import KernelStatus, TickStatus, TurnActivity
from hz_kernel.clock import now_utc, stamp
from hz_kernel.errors import HzError
from hz_tui import display, keymap, rows
from hz_tui.link import Link, NotConnected
from hz_tui.widgets.facts import Facts
from hz_tui.widgets.key_bar import KeyBar

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp

#: The page samples the kernel again this often while it is shown (elapsed times move).
REFRESH_S = 2.0

#: The parts a sample fills in.
PARTS = ("#facts", "#turns", "#tick", "#limits")


class DaemonScreen(Screen[None]):
    """Facts about the kernel behind the cockpit, and the work it runs now."""

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
            yield Static("Turns", classes="section")
            yield Static(id="turns")
            yield Static("Tick", classes="section")
            yield Facts(id="tick")
            yield Static("Limits", classes="section")
            yield Facts(id="limits")
        yield KeyBar()

    def on_mount(self) -> None:
        self.title = "hz · kernel"
        self.load()
        self.set_interval(REFRESH_S, self.load)
        self.cockpit.link.changed.subscribe(self, self.on_link_changed)

    def on_link_changed(self, link: Link) -> None:
        if link.attached:
            self.load()
        else:
            self.show_reconnecting()

    def show_reconnecting(self) -> None:
        """No figures while the daemon is lost: the last ones sampled are no longer true."""
        if not self.parts_shown():
            return
        unknown = "not known while reconnecting"
        self.query_one("#facts", Facts).show(
            [
                ("Kernel", "reconnecting… (this page fills in once a daemon answers)"),
                ("Lost", self.cockpit.link.described),
            ]
        )
        muted = rows.Palette.from_theme(self.app.theme_variables).muted
        self.query_one("#turns", Static).update(Text(f"{unknown.capitalize()}.", style=muted))
        self.query_one("#tick", Facts).show([("Loop", unknown)])
        self.query_one("#limits", Facts).show([("Limits", unknown)])

    @work(exclusive=True, group="daemon-page")
    async def load(self) -> None:
        cockpit = self.cockpit
        try:
            status = await cockpit.client.status()
        except NotConnected:
            self.show_reconnecting()
            return
        except HzError as exc:
            if self.parts_shown():
                self.query_one("#facts", Facts).show([("Kernel", exc.one_line())])
            return
        if not self.parts_shown():
            return
        self.query_one("#facts", Facts).show(facts_of(status, cockpit.client.where, cockpit))
        palette = rows.Palette.from_theme(self.app.theme_variables)
        self.query_one("#turns", Static).update(turns_table(status.turns, palette))
        self.query_one("#tick", Facts).show(tick_facts(status.tick))
        self.query_one("#limits", Facts).show(limit_facts(status))

    def parts_shown(self) -> bool:
        """Whether the page still has its parts: a sample that arrives while the page (or the
        whole app) is being taken down has nowhere to go and is dropped."""
        return self.is_attached and all(self.query(part) for part in PARTS)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """An embedded kernel has no daemon to restart: the key leaves the key bar and the
        palette (and does nothing) there."""
        if action == "restart":
            return self.cockpit.link.daemon
        return True

    def action_restart(self) -> None:
        """Ask first (naming the turns that will pause); a remote cockpit's restart is
        refused with its reason (HZU125) rather than ignored."""
        if not self.cockpit.link.daemon:
            return
        if self.cockpit.client.remote:
            self.cockpit.restart_daemon()
            return
        from hz_tui.screens.confirm import ConfirmScreen

        if not self.cockpit.link.attached:  # the lost daemon is gone: this starts one
            about = "No daemon answers for this home: one starts here, and the cockpit attaches."
            asked = ConfirmScreen("Start the daemon?", about, "Start")
            self.app.push_screen(asked, lambda yes: self.restart_chosen("restart" if yes else None))
            return
        running = sum(
            1 for row in self.cockpit.rows.values() if row.state == "awake" and not row.interrupted
        )
        if running:
            turns, reach, them = (
                ("1 turn runs", "it reaches", "it")
                if running == 1
                else (f"{running} turns run", "they reach", "them")
            )
            about = (
                f"{turns}: the daemon waits until {reach} a step boundary, then restarts, "
                f"and the new one resumes {them}."
            )
        else:
            about = "Every window attached to it reconnects to the new one; no work is lost."
        asked = ConfirmScreen("Restart the daemon?", about, "Restart")
        self.app.push_screen(asked, lambda yes: self.restart_chosen("restart" if yes else None))

    def restart_chosen(self, choice: str | None) -> None:
        if choice == "restart":
            self.cockpit.restart_daemon()  # the page stays: it shows the new daemon once it answers

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
    elif cockpit.client.remote:
        kind, process = "a daemon attached by its wire only (hz --connect)", f"pid {status.pid}"
        protocol = f"hz protocol v{status.protocol} over {status.address} · {operations}"
        restart = "on the daemon's machine: hz daemon restart"
    else:
        kind, process = "a local daemon", f"pid {status.pid}"
        protocol = f"hz protocol v{status.protocol} over {status.address} · {operations}"
        key = keymap.shown_keys("daemon.restart", cockpit.keymap_overrides)
        restart = f"{key} restarts the daemon; the cockpit reconnects to the new one"
    home = (
        [("Home", "on the daemon's machine (see Talks to)")]
        if cockpit.client.remote
        else [("Home", str(cockpit.home.root)), ("Database", str(cockpit.home.index_path))]
    )
    return [
        ("Kernel", kind),
        ("Talks to", where),
        ("Process", process),
        ("Protocol", protocol),
        *home,
        ("Heinzels", str(status.heinzels)),
        ("Uptime", f"{display.span(status.uptime_s)} (since {status.started_at})"),
        ("Restart", restart),
    ]


def turns_table(turns: list[TurnActivity], palette: rows.Palette) -> Table | Text:
    """Running turns (heinzel, step, elapsed, cost so far), then the queued ones and why."""
    if not turns:
        return Text("No turn runs or waits.", style=palette.muted)
    table = Table(box=None, padding=(0, 2, 0, 0), show_edge=False, header_style="bold")
    # Too narrow for every column, the name is cut (with "…"): Rich narrows only a column
    # that may wrap, and cut every column alike (a short one, the step, to nothing).
    table.add_column("Heinzel", overflow="ellipsis")
    for label, justify in (("State", "left"), ("Step", "left"), ("Elapsed", "right"),
                           ("Cost so far", "right")):  # fmt: skip
        table.add_column(label, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for turn in turns:
        if turn.queued is not None:
            table.add_row(
                turn.name,
                Text(display.queued(turn.queued), style=palette.warn),
                "—",
                f"waited {display.span(turn.elapsed_s)}",
                "—",
            )
        else:
            table.add_row(
                turn.name,
                Text("running", style=palette.ok),
                turn.step or "—",
                display.span(turn.elapsed_s),
                display.usd(turn.usd),
            )
    return table


def _next_tick(tick: TickStatus) -> str:
    """When the next tick comes: a tick under way (or late) puts it after its own end, never in
    the past (new-user pass: "Next 15:20 (3s ago)" beside "ticking since 15:20")."""
    if tick.ticking_since:
        return f"when this one ends, then every {display.span(tick.interval_s)}"
    if not tick.next_at:
        return "after the first"
    if tick.next_at <= stamp(now_utc()):
        return "due now"
    return f"{display.clock(tick.next_at)} ({display.ago(tick.next_at)})"


def tick_facts(tick: TickStatus | None) -> list[tuple[str, str]]:
    """When the kernel last ticked and ticks next, and what its last tick left undone."""
    if tick is None:
        return [("Loop", "none runs beside this kernel")]
    facts = [
        ("Every", display.span(tick.interval_s)),
        ("Last", f"{display.clock(tick.last_at)} ({display.ago(tick.last_at)})"
         if tick.last_at else "not yet"),
        ("Next", _next_tick(tick)),
        ("Ticks", f"{tick.ticks} · last woke {tick.woken}"),
        ("Skipped", ", ".join(tick.skipped) or "nothing"),
        ("Deferred", ", ".join(tick.deferred) or "nothing"),
    ]  # fmt: skip
    if tick.ticking_since:
        since = f"{display.clock(tick.ticking_since)} ({display.ago(tick.ticking_since)})"
        facts.insert(2, ("Now", f"ticking since {since}: it runs the turns it woke to their end"))
    if tick.error:
        facts.append(("Failed", tick.error))
    return facts


def limit_facts(status: KernelStatus) -> list[tuple[str, str]]:
    """The admission limits beside what they hold now, and the memory sample under its floor."""
    memory = (
        f"{status.memory_available_mb} MB available"
        if status.memory_available_mb is not None
        else "available memory unknown (no floor enforced)"
    )
    low = (
        status.memory_available_mb is not None
        and status.memory_floor_mb is not None
        and status.memory_available_mb < status.memory_floor_mb
    )
    return [
        (
            "Turns",
            f"{status.turns_running} running, {status.turns_queued} queued "
            f"· at most {status.max_concurrent_turns} at once",
        ),
        (
            "Model attempts",
            f"{status.attempts_running} running, {status.attempts_queued} queued "
            f"· at most {status.max_concurrent_attempts} at once",
        ),
        (
            "Memory",
            f"{memory} · floor {status.memory_floor_mb} MB"
            + (" · under the floor: nothing new starts" if low else ""),
        ),
    ]
