"""Where the live turn is: the five steps (done, under way, to come), the attempt, the status.

A turn that failed or was stopped shows the steps that ran, the one it ended
in (✗ failed, ■ stopped) and the ones it never reached, never all five ticked.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from hz_kernel.clock import now_utc
from hz_kernel.terms import STEP_NAMES
from hz_tui import display
from hz_tui.rows import Palette
from hz_tui.turn_state import LiveTurn

BOLD = Style(bold=True)
#: How the step a turn ended in is marked, by how it ended.
HALT_MARKS = {"failed": "✗", "abandoned": "■"}


class StepLine(Static):
    """Two lines: the steps as a strip, then how the turn stands."""

    def show(self, live: LiveTurn, palette: Palette, *, damaged_as: str | None = None) -> None:
        if damaged_as is not None and live.status != "finished":
            self.update(
                Text.assemble(
                    ("The spine is damaged: ", palette.bad + BOLD),
                    "what happened after the break is not read, so this turn may have ended. ",
                    (f"hz heinzel verify {damaged_as}", "bold"),
                    " says where; --accept goes on from there.",
                )
            )
            return
        if live.turn is None:
            self.update(Text("No turn has run yet.", style="dim"))
            return
        strip = Text()
        current = live.step
        for number, step in enumerate(STEP_NAMES):
            if number:
                strip.append(" › ", style="dim")
            if step == current:
                mark = "◐" if live.status == "waiting" else "●"
                strip.append(f"{mark} {step}", style=palette.accent + BOLD)
                if step == "think" and live.requests:
                    retry = f", retry {live.retries}" if live.retries else ""
                    strip.append(f" (request {live.requests}{retry})", style=palette.accent)
            elif step == live.halted_at:
                mark = HALT_MARKS.get(live.disposition or "", "✗")
                strip.append(f"{mark} {step}", style=palette.bad + BOLD)
            elif step in live.done:
                strip.append(f"✓ {step}", style=palette.ok)
            else:
                strip.append(f"· {step}", style="dim")
        self.update(Text("\n").join([strip, _status(live, palette)]))


def _status(live: LiveTurn, palette: Palette) -> Text:
    causes = display.causes(live.causes) or "?"
    started = display.ago(live.started_at) if live.started_at else "earlier"
    line = Text()
    if live.status == "finished":
        ending = live.disposition or "finished"
        bad = ending in ("failed", "abandoned")
        line.append(ending, style=(palette.bad if bad else palette.ok) + BOLD)
        if live.reason:
            line.append(f" ({live.reason})", style=palette.bad if bad else "")
    elif live.status == "waiting":
        until = display.clock(live.waiting_until) if live.waiting_until else "a condition"
        line.append(f"waiting until {until}", style=palette.warn + BOLD)
    else:
        line.append(f"running: {live.step}", style=palette.ok + BOLD)
    if live.handoff is not None and live.status == "running":
        since = display.parse_time(live.handoff.since)
        elapsed = display.span((now_utc() - since).total_seconds()) if since else "?"
        line.append(f" · handoff: running {live.handoff.runner} {elapsed}", style=palette.accent)
    if live.attempt_note:
        line.append(f" · {live.attempt_note}", style=palette.warn)
    line.append(f" · cause {causes} · started {started}", style="dim")
    if live.steered or live.requested:
        line.append(f" · {live.steered} steered, {live.requested} queued", style="dim")
    if live.report:
        line.append(f"\n{live.report}")
    return line
