"""The live turn panel: the step strip, the streaming output and the effect ledger of one heinzel.

It reads files only. The spine is tailed from a window before its end (a
turn's events are a few kilobytes, a heinzel's life may be megabytes) and
read again whenever the watcher says the spine moved. The newest turn's
body is tailed by offset for ``chunk`` records, polled every ``POLL_S``
while the turn runs and read once more when it ends.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Vertical

from hz_tui.rows import Palette
from hz_tui.tail import SPINE_NAME, BodyTail, SpineTail
from hz_tui.turn_state import LiveTurn, TurnFollower, chunk_text
from hz_tui.widgets.effect_ledger import EffectLedger
from hz_tui.widgets.step_line import StepLine
from hz_tui.widgets.stream_view import StreamView

POLL_S = 0.1
SPINE_WINDOW = 256 * 1024
WAITING_FOR_OUTPUT = "The model's output streams here while the turn thinks."
NO_BODY = "This turn's body is gone (pruned after the retention period)."


class LiveTurnPanel(Vertical):
    """The newest turn of the heinzel whose folder is ``heinzel_dir``, live."""

    def __init__(self, heinzel_dir: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.heinzel_dir = heinzel_dir
        self.spine = SpineTail.near_end(heinzel_dir / SPINE_NAME, SPINE_WINDOW)
        self.follower = TurnFollower()
        self.body: BodyTail | None = None
        self.body_done = True
        self.palette = Palette()

    @property
    def live(self) -> LiveTurn:
        return self.follower.current

    @property
    def running(self) -> bool:
        return self.live.status == "running"

    def compose(self) -> ComposeResult:
        yield StepLine(id="steps")
        yield StreamView(id="stream")
        yield EffectLedger(id="effects")

    def on_mount(self) -> None:
        self.query_one(EffectLedger).palette = self.palette
        self.query_one(StreamView).reset(WAITING_FOR_OUTPUT)
        self.read_spine()
        self.set_interval(POLL_S, self.poll_body)

    def restyle(self, palette: Palette) -> None:
        self.palette = palette
        self.query_one(EffectLedger).palette = palette
        self.redraw()

    def read_spine(self) -> None:
        """Take in what the spine gained; switch to a new turn's body when one started."""
        turn_before = self.live.turn
        changed = False
        while found := self.spine.read_new().lines:
            changed |= self.follower.apply(found)
        if self.live.turn != turn_before and self.live.turn is not None:
            self.body = BodyTail.of_turn(self.heinzel_dir, self.live.turn)
            self.body_done = False
            self.query_one(StreamView).reset(WAITING_FOR_OUTPUT)
        if changed:
            self.redraw()
        self.poll_body()

    def poll_body(self) -> None:
        """Append newly streamed output; after the turn ended, read once more and stop."""
        if self.body is None or self.body_done:
            return
        stream = self.query_one(StreamView)
        if not self.body.exists():
            if self.live.status == "finished":
                self.body_done = True
                stream.reset(NO_BODY)
            return
        stream.append(chunk_text(self.body.read_new()))
        if self.live.status == "finished":
            self.body_done = True
            if not stream.text:
                stream.reset("This turn streamed no model output.")

    def redraw(self) -> None:
        self.query_one(StepLine).show(self.live, self.palette)
        ledger = self.query_one(EffectLedger)
        ledger.show(list(self.live.effects.values()))
        ledger.display = bool(self.live.effects)

    def jump_to_latest(self) -> None:
        self.query_one(StreamView).jump_to_latest()
