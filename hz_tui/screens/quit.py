"""The question an embedded cockpit asks when it quits while its kernel runs turns.

Quitting closes the embedded kernel, which cuts its running turns at their
last checkpoint. The user chooses: quit and cut them (a kernel that starts
later resumes them), hand them to the daemon (started now, it resumes and
finishes them while the window is gone), or stay.
"""

from __future__ import annotations

from typing import Literal

from hz_tui.screens.choose import ChooseScreen

QuitChoice = Literal["cut", "daemon", "stay"]


class QuitScreen(ChooseScreen):
    """Returns ``cut``, ``daemon`` or ``stay`` (also Escape)."""

    def __init__(self, running: int) -> None:
        turns = "1 turn is running" if running == 1 else f"{running} turns running"
        super().__init__(
            f"{turns}: quit and cut them, hand them to the daemon, or stay?",
            [
                ("cut", "Quit and cut them (they resume when a kernel next starts)"),
                ("daemon", "Hand them to the daemon (it starts now and finishes them)"),
                ("stay", "Stay"),
            ],
        )

    def action_cancel(self) -> None:
        self.dismiss("stay")
