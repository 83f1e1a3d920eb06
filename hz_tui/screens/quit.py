"""The question an embedded cockpit asks when it quits while its kernel runs turns.

Quitting closes the embedded kernel, which cuts its running turns at their
last checkpoint. The user chooses: quit and cut them (a kernel that starts
later resumes them), hand them to the daemon (started now, it resumes and
finishes them while the window is gone), or stay. Turns start and end while
the question is open, so it counts them again every ``RECOUNT_S`` and says
what is true now, in the right number. With turns running, Enter hands them
to the daemon: a quick ``q`` then Enter never cuts a turn.

A cockpit whose daemon stops when it closes (``hz demo``) asks the same
about that daemon's turns, offering to quit once they end instead of a
daemon to hand them to; there too Enter cuts nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from textual.widgets import OptionList, Static

from hz_tui.screens.choose import ChooseScreen

QuitChoice = Literal["cut", "daemon", "wait", "stay"]

#: How often the open question counts the running turns again.
RECOUNT_S = 0.25


IDLE = "No turn is running now: quit, or stay?"


def wording(running: int, *, daemon_ends: bool = False) -> tuple[str, list[tuple[str, str]]]:
    """The title and the three options for ``running`` turns."""
    if daemon_ends:
        return _wording_daemon_ends(running)
    if running == 0:
        return IDLE, [
            ("cut", "Quit"),
            ("daemon", "Quit and start the daemon (it runs the home's work from now on)"),
            ("stay", "Stay"),
        ]
    turns, it, they, s = _counted(running)
    return f"{turns}: quit and cut {it}, hand {it} to the daemon, or stay?", [
        ("cut", f"Quit and cut {it} ({they} resume{s} when a kernel next starts)"),
        ("daemon", f"Hand {it} to the daemon (it starts now and finishes {it})"),
        ("stay", "Stay"),
    ]


def _wording_daemon_ends(running: int) -> tuple[str, list[tuple[str, str]]]:
    """The question when the daemon stops with the window: wait for its turns, or cut them."""
    if running == 0:
        return IDLE, [("wait", "Quit"), ("cut", "Quit now"), ("stay", "Stay")]
    turns, it, they, s = _counted(running)
    return f"{turns}, and the daemon stops with this window: wait, cut {it}, or stay?", [
        ("wait", f"Quit when {they} end{s}"),
        ("cut", f"Quit now and cut {it} (the daemon stops with the window)"),
        ("stay", "Stay"),
    ]


def _counted(running: int) -> tuple[str, str, str, str]:
    """The count, the object and subject pronouns, and the verb's ending, in number."""
    if running == 1:
        return "1 turn running", "it", "it", "s"
    return f"{running} turns running", "them", "they", ""


def default_choice(running: int, *, daemon_ends: bool = False) -> int:
    """What Enter does at once: with turns running, hand them to the daemon or wait for them
    (nothing is cut); with none, quit."""
    return 0 if daemon_ends else 1 if running else 0


class QuitScreen(ChooseScreen):
    """Returns ``cut``, ``daemon``, ``wait`` or ``stay`` (also Escape).

    ``count`` says how many turns run; ``daemon_ends``: the daemon stops with
    the window, so ``wait`` stands where ``daemon`` would.
    """

    def __init__(self, count: Callable[[], int], *, daemon_ends: bool = False) -> None:
        self.count = count
        self.daemon_ends = daemon_ends
        self.running = count()
        super().__init__(*wording(self.running, daemon_ends=daemon_ends))

    def on_mount(self) -> None:
        self.query_one(OptionList).highlighted = self._default(self.running)
        self.set_interval(RECOUNT_S, self.recount)

    def recount(self) -> None:
        running = self.count()
        if running == self.running:
            return
        options = self.query_one(OptionList)
        untouched = options.highlighted == self._default(self.running)
        self.running = running
        title, items = wording(running, daemon_ends=self.daemon_ends)
        self.query_one("#dialog-title", Static).update(title)
        for ident, label in items:
            options.replace_option_prompt(ident, label)
        if untouched:  # the user has not chosen yet: Enter means what is safe now
            options.highlighted = self._default(running)

    def _default(self, running: int) -> int:
        return default_choice(running, daemon_ends=self.daemon_ends)

    def action_cancel(self) -> None:
        self.dismiss("stay")
