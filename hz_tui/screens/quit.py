"""The question an embedded cockpit asks when it quits while its kernel runs turns.

Quitting closes the embedded kernel, which cuts its running turns at their
last checkpoint. The user chooses: quit and cut them (a kernel that starts
later resumes them), hand them to the daemon (started now, it resumes and
finishes them while the window is gone), or stay. Turns start and end while
the question is open, so it counts them again every ``RECOUNT_S`` and says
what is true now, in the right number. With turns running, Enter hands them
to the daemon: a quick ``q`` then Enter never cuts a turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from textual.widgets import OptionList, Static

from hz_tui.screens.choose import ChooseScreen

QuitChoice = Literal["cut", "daemon", "stay"]

#: How often the open question counts the running turns again.
RECOUNT_S = 0.25


def wording(running: int) -> tuple[str, list[tuple[str, str]]]:
    """The title and the three options for ``running`` turns."""
    if running == 0:
        return "No turn is running now: quit, or stay?", [
            ("cut", "Quit"),
            ("daemon", "Quit and start the daemon (it runs the home's work from now on)"),
            ("stay", "Stay"),
        ]
    if running == 1:
        turns, it, they = "1 turn running", "it", "it resumes"
    else:
        turns, it, they = f"{running} turns running", "them", "they resume"
    return f"{turns}: quit and cut {it}, hand {it} to the daemon, or stay?", [
        ("cut", f"Quit and cut {it} ({they} when a kernel next starts)"),
        ("daemon", f"Hand {it} to the daemon (it starts now and finishes {it})"),
        ("stay", "Stay"),
    ]


def default_choice(running: int) -> int:
    """What Enter does at once: with turns running, hand them to the daemon (nothing is cut);
    with none, quit."""
    return 1 if running else 0


class QuitScreen(ChooseScreen):
    """Returns ``cut``, ``daemon`` or ``stay`` (also Escape); ``count`` says how many turns run."""

    def __init__(self, count: Callable[[], int]) -> None:
        self.count = count
        self.running = count()
        super().__init__(*wording(self.running))

    def on_mount(self) -> None:
        self.query_one(OptionList).highlighted = default_choice(self.running)
        self.set_interval(RECOUNT_S, self.recount)

    def recount(self) -> None:
        running = self.count()
        if running == self.running:
            return
        options = self.query_one(OptionList)
        untouched = options.highlighted == default_choice(self.running)
        self.running = running
        title, items = wording(running)
        self.query_one("#dialog-title", Static).update(title)
        for ident, label in items:
            options.replace_option_prompt(ident, label)
        if untouched:  # the user has not chosen yet: Enter means what is safe now
            options.highlighted = default_choice(running)

    def action_cancel(self) -> None:
        self.dismiss("stay")
