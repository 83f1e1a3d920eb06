"""The live turn panel: the step strip, the streaming output and the effect ledger of one heinzel.

Two readers feed the same panel. ``FileTurnPanel`` (the kernel's machine)
reads files only: the spine is tailed from a window before its end (a
turn's events are a few kilobytes, a heinzel's life may be megabytes) and
read again whenever the watcher says the spine moved; the newest turn's
body is tailed by offset for ``chunk`` records, polled every ``POLL_S``
while the turn runs and read once more when it ends. ``WireTurnPanel``
(``hz --connect``) catches up with ``turn.body`` when it opens, then takes
the feed's spine lines and body deltas, reading the body again from its
offset whenever a delta does not continue where it stands.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical

from hz_kernel import operations as ops
from hz_kernel.errors import HzError
from hz_kernel.following import SHOWN_TYPES, BodyCursor
from hz_tui.files import NotRegular
from hz_tui.rows import Palette
from hz_tui.tail import SPINE_NAME, BodyTail, SpineLine, SpineTail
from hz_tui.turn_state import LiveTurn, TurnFollower, chunk_text
from hz_tui.watcher import SpineBatch
from hz_tui.widgets.effect_ledger import EffectLedger
from hz_tui.widgets.step_line import StepLine
from hz_tui.widgets.stream_view import StreamView

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp

POLL_S = 0.1
HANDOFF_TICK_S = 1.0
"""How often the step line's handoff clock moves while a runner works."""
SPINE_WINDOW = 256 * 1024
WAITING_FOR_OUTPUT = "The model's output streams here while the turn thinks."
NO_BODY = "This turn's body is gone (pruned after the retention period)."
NO_OUTPUT = "This turn streamed no model output."


class LiveTurnPanel(Vertical):
    """The newest turn of one heinzel, live; subclasses say where its lines and output come from."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.follower = TurnFollower()
        self.palette = Palette()
        self.damaged_as: str | None = None
        """The heinzel's name while its spine is damaged: past the break nothing is read, so a
        turn that looks running may have ended; the panel says so instead of "running"."""

    @property
    def live(self) -> LiveTurn:
        return self.follower.current

    @property
    def running(self) -> bool:
        return self.live.status == "running"

    @property
    def stream(self) -> StreamView:
        return self.query_one(StreamView)

    def compose(self) -> ComposeResult:
        yield StepLine(id="steps")
        yield StreamView(id="stream")
        yield EffectLedger(id="effects")

    def prepare(self) -> None:
        """What both readers do on mount (not ``on_mount``: Textual calls that of every class)."""
        self.query_one(EffectLedger).palette = self.palette
        self.stream.reset(WAITING_FOR_OUTPUT)
        self.set_interval(HANDOFF_TICK_S, self.tick_handoff)

    def tick_handoff(self) -> None:
        """Move the handoff's elapsed time on; nothing to draw when no runner works."""
        if self.live.handoff is not None and self.running:
            self.query_one(StepLine).show(self.live, self.palette, damaged_as=self.damaged_as)

    def take(self, batch: SpineBatch) -> None:
        """Take what the live source delivered (the batch may concern other heinzels)."""
        raise NotImplementedError

    def restyle(self, palette: Palette) -> None:
        self.palette = palette
        self.query_one(EffectLedger).palette = palette
        self.redraw()

    def redraw(self) -> None:
        self.query_one(StepLine).show(self.live, self.palette, damaged_as=self.damaged_as)
        ledger = self.query_one(EffectLedger)
        ledger.show(list(self.live.effects.values()))
        ledger.display = bool(self.live.effects)

    def jump_to_latest(self) -> None:
        self.stream.jump_to_latest()


def turn_panel(cockpit: CockpitApp, heinzel_id: str) -> LiveTurnPanel:
    """The panel for this cockpit: the wire's when attached with ``--connect``, else the files'."""
    if cockpit.client.remote:
        return WireTurnPanel(heinzel_id, id="live")
    return FileTurnPanel(cockpit.home.heinzel_dir(heinzel_id), id="live")


class FileTurnPanel(LiveTurnPanel):
    """Reads the heinzel's spine and the turn's body from the files of ``heinzel_dir``."""

    def __init__(self, heinzel_dir: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.heinzel_dir = heinzel_dir
        self.spine = SpineTail.near_end(heinzel_dir / SPINE_NAME, SPINE_WINDOW)
        self.body: BodyTail | None = None
        self.body_done = True

    def on_mount(self) -> None:
        self.prepare()
        self.read_spine()
        self.set_interval(POLL_S, self.poll_body)

    def take(self, batch: SpineBatch) -> None:
        if self.heinzel_dir.name in batch.moved:
            self.read_spine()

    def read_spine(self) -> None:
        """Take in what the spine gained; switch to a new turn's body when one started."""
        turn_before = self.live.turn
        changed = False
        while found := self.spine.read_new().lines:
            changed |= self.follower.apply(found)
        if self.live.turn != turn_before and self.live.turn is not None:
            self.body = BodyTail.of_turn(self.heinzel_dir, self.live.turn)
            self.body_done = False
            self.stream.reset(WAITING_FOR_OUTPUT)
        if changed:
            self.redraw()
        self.poll_body()

    def poll_body(self) -> None:
        """Append newly streamed output; after the turn ended, read once more and stop."""
        if self.body is None or self.body_done:
            return
        stream = self.stream
        if not self.body.exists():
            if self.live.status == "finished":
                self.body_done = True
                stream.reset(NO_BODY)
            return
        try:
            records = self.body.read_new()
        except NotRegular as exc:
            self.body_done = True
            stream.reset(exc.one_line())
            return
        stream.append(chunk_text(records))
        if self.live.status == "finished":
            self.body_done = True
            if not stream.text:
                stream.reset(NO_OUTPUT)


class WireTurnPanel(LiveTurnPanel):
    """Follows the heinzel's newest turn through the kernel's operations and the feed only."""

    def __init__(self, heinzel_id: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.heinzel_id = heinzel_id
        self.cursor: BodyCursor | None = None
        self.caught_up = False
        self.held: list[SpineBatch] = []
        """Batches that came while catching up, taken once the page has caught up."""
        self.reading = False
        self.read_again = False
        self.settled = False

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    def on_mount(self) -> None:
        self.prepare()
        self.catch_up()

    @work(exclusive=True, group="wire-turn")
    async def catch_up(self) -> None:
        """The newest turn as it stands (``turn.body``), then what the feed brought meanwhile."""
        self.caught_up = False
        try:
            now = await self.cockpit.client.call(
                ops.TURN_BODY, ops.TurnBodyRequest(ref=self.heinzel_id, types=SHOWN_TYPES)
            )
        except HzError as exc:
            error, now = exc.one_line(), None
        if not self.is_attached:
            return  # the page closed while the kernel answered
        if now is None:
            self.stream.reset(error)
        self.follower = TurnFollower()
        self.cursor = None
        if now is not None and now.turn is not None:
            self.follower.apply([SpineLine.model_validate(e) for e in now.events])
            cursor = self.switch_to(now.turn, now.offset)
            cursor.present, cursor.refused = now.present, now.refused
            self.stream.append(chunk_text(now.records))
            self.read_again = now.more
        self.caught_up = True
        held, self.held = self.held, []
        for batch in held:
            self.take(batch)
        self.redraw()
        self.settle()

    def switch_to(self, turn: str, offset: int = 0) -> BodyCursor:
        """Show ``turn`` from here on, its output read from ``offset``."""
        self.cursor = BodyCursor(self.heinzel_id, turn, offset)
        self.settled = False
        self.stream.reset(WAITING_FOR_OUTPUT)
        return self.cursor

    def take(self, batch: SpineBatch) -> None:
        if batch.reload:
            self.catch_up()
            return
        lines = batch.lines.get(self.heinzel_id, [])
        deltas = batch.bodies.get(self.heinzel_id, [])
        if not lines and not deltas:
            return
        if not self.caught_up:
            self.held.append(batch)
            return
        turn_before = self.live.turn
        changed = self.follower.apply(lines)
        if self.live.turn != turn_before and self.live.turn is not None:
            self.switch_to(self.live.turn)
        for delta in deltas:
            cursor = self.cursor
            if cursor is None or delta.turn != cursor.turn:
                continue
            text = None if self.reading else cursor.take(delta.record)
            if text is None:
                self.read_again = True
                break
            self.stream.append(text)
        if changed:
            self.redraw()
        self.settle()

    def settle(self) -> None:
        """Read the body when a delta left a gap, and once more after the turn ended."""
        ended = self.live.status == "finished" and not self.settled
        if self.cursor is not None and (self.read_again or ended) and not self.reading:
            self.read_body()

    @work(group="wire-body")
    async def read_body(self) -> None:
        """Read the body from the cursor to its end; deltas that come meanwhile are read too."""
        cursor = self.cursor
        if cursor is None:
            return
        self.reading = True
        try:
            while True:
                self.read_again = False
                text = await cursor.read(self.cockpit.client)
                if cursor is not self.cursor or not self.is_attached:
                    return
                self.stream.append(text)
                if not self.read_again:
                    break
        except HzError as exc:
            if self.is_attached:
                self.notify(exc.one_line(), severity="warning")
            return
        finally:
            self.reading = False
        if self.live.status == "finished":
            self.settled = True
            if cursor.refused:
                self.stream.reset(cursor.refused)
            elif not cursor.present:
                self.stream.reset(NO_BODY)
            elif not self.stream.text:
                self.stream.reset(NO_OUTPUT)
