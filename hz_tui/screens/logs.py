"""The daemon's log: its last lines, then whatever it writes, followed across rotations.

Long lines wrap to the width (``LogView``): nothing is cut.

The cockpit reads ``<home>/daemon.log`` (and the rotated files for the first
screenful) straight from disk, as it reads the spines. A cockpit with no
access to that file — a daemon under systemd logs to the journal, a daemon
on another machine keeps its log there — says so instead of showing nothing.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Header, Static

from hz_kernel import logfiles
from hz_tui import keymap
from hz_tui.widgets.key_bar import KeyBar
from hz_tui.widgets.log_view import LogView

#: Lines read back when the page opens, and the most the page keeps.
TAIL_LINES = 500
MAX_LINES = 5000
#: How often the page looks for new lines while following.
POLL_S = 0.5


class LogScreen(Screen[None]):
    """The tail of ``daemon.log``, following it while ``follow`` is on."""

    CSS_PATH = "logs.tcss"
    BINDINGS = keymap.LOGS

    follow = True

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.follower = logfiles.Follower(root)

    def compose(self) -> ComposeResult:
        yield Header(icon="hz")
        yield Static(id="log-where")
        yield LogView(id="log", max_lines=MAX_LINES)
        yield KeyBar()

    def on_mount(self) -> None:
        self.title = "hz · daemon log"
        path = logfiles.log_path(self.root)
        self.follower.start()
        lines = logfiles.tail(self.root, TAIL_LINES)
        log = self.query_one(LogView)
        if not lines and not path.exists():
            log.write_lines(
                [
                    f"No daemon log at {path}. A daemon run by systemd logs to the journal "
                    "(journalctl --user -u hz-daemon.service); one on another machine keeps "
                    "its log there. New lines appear here if this file is written."
                ]
            )
        log.write_lines([logfiles.visible(line) for line in lines])
        self.set_interval(POLL_S, self.poll)
        self.show_where()

    def show_where(self) -> None:
        state = "following" if self.follow else "paused (f follows again)"
        where = self.query_one("#log-where", Static)
        where.update(f"{logfiles.log_path(self.root)} · {state}")

    def poll(self) -> None:
        if not self.follow:
            return
        lines = self.follower.read()
        if lines:
            self.query_one(LogView).write_lines([logfiles.visible(line) for line in lines])

    def action_toggle_follow(self) -> None:
        self.follow = not self.follow
        log = self.query_one(LogView)
        log.following = self.follow
        if self.follow:
            self.poll()
            log.follow()
        self.show_where()

    def action_back(self) -> None:
        self.dismiss()

    def on_unmount(self) -> None:
        self.follower.close()
