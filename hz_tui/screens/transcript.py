"""A turn's transcript: everything the turn did and was given, live while it runs, searchable.

The page asks the kernel (``turn.transcript``, on any head, so it works
attached with ``--connect``) and lays the answer out with
``hz_tui.transcript``. While the turn runs it reads on from the body offset
it reached: on a timer and whenever the live feed says the heinzel's spine
moved. ``/`` searches what is shown; ``n`` and ``N`` walk the matches.
``SearchableScreen`` is that search, shared with the conversation page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual import on, work
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Header, Input, Static

from hz_kernel import operations as ops
from hz_kernel.errors import HzError
from hz_tui import display, keymap
from hz_tui.transcript import Line, TranscriptModel, find
from hz_tui.watcher import SpineBatch
from hz_tui.widgets.in_order import InOrderInput
from hz_tui.widgets.key_bar import KeyBar
from hz_tui.widgets.transcript_view import TranscriptView

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp

#: How often a running turn's transcript reads on (the feed also wakes it).
POLL_S = 0.25


class SearchInput(InOrderInput):
    """The search line: Esc closes it, the matches stay marked."""

    BINDINGS = keymap.SEARCH

    def action_close(self) -> None:
        screen = self.screen
        if isinstance(screen, SearchableScreen):
            screen.close_search()


class SearchableScreen(Screen[None]):
    """A page of lines in a ``TranscriptView`` with ``/`` search and ``n``/``N`` to walk it."""

    CSS_PATH = "transcript.tcss"
    BINDINGS = keymap.TRANSCRIPT

    def __init__(self, heinzel_id: str) -> None:
        super().__init__()
        self.heinzel_id = heinzel_id
        self.query_text = ""

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    @property
    def view(self) -> TranscriptView:
        return self.query_one(TranscriptView)

    def compose(self) -> ComposeResult:
        yield Header(icon="hz")
        yield TranscriptView(id="transcript")
        yield Static(id="search-status")
        yield KeyBar()

    def on_mount(self) -> None:
        self.view.focus()

    def show_lines(self, lines: list[Line]) -> None:
        self.view.show(lines)
        if self.query_text:
            self._mark(self.view.current, jump=False)

    # -- search -------------------------------------------------------------------------

    async def action_search(self) -> None:
        """Open the search line (made on first use: most pages are read, not searched)."""
        found = self.query(SearchInput)
        search = (
            found.first() if found else SearchInput(placeholder="search this page", id="search")
        )
        if not found:
            await self.mount(search, before="#search-status")
        search.display = True
        search.value = self.query_text
        search.focus()

    def close_search(self) -> None:
        self.query_one(SearchInput).display = False
        self.view.focus()

    @on(Input.Changed, "#search")
    def typed(self, event: Input.Changed) -> None:
        self.query_text = event.value
        self._mark(self._next_from_sight(), jump=True)

    @on(Input.Submitted, "#search")
    def searched(self, event: Input.Submitted) -> None:
        self.query_text = event.value
        self._mark(self._next_from_sight(), jump=True)
        self.close_search()

    def action_next_match(self) -> None:
        self._step(1)

    def action_previous_match(self) -> None:
        self._step(-1)

    def _step(self, by: int) -> None:
        view = self.view
        if not self.query_text:
            self.run_worker(self.action_search())
            return
        if not view.matches:
            self._mark(None, jump=False)
            return
        current = view.current if view.current is not None else (-1 if by > 0 else 0)
        self._mark((current + by) % len(view.matches), jump=True)

    def _next_from_sight(self) -> int | None:
        """The first match at or below the top of the view (the search starts where you are)."""
        matches = find(self.view.lines, self.query_text)
        if not matches:
            return None
        top = round(self.view.scroll_y)
        for index, match in enumerate(matches):
            if self.view.row_of(match) >= top:
                return index
        return 0

    def _mark(self, current: int | None, *, jump: bool) -> None:
        view = self.view
        matches = find(view.lines, self.query_text)
        if current is not None and current >= len(matches):
            current = len(matches) - 1 if matches else None
        view.mark(matches, current, into_sight=jump)
        status = self.query_one("#search-status", Static)
        if not self.query_text:
            status.update("")
        elif not matches:
            status.update(f"no match for “{self.query_text}”")
        else:
            at = f"{current + 1} of " if current is not None else ""
            status.update(f"{at}{len(matches)} matches for “{self.query_text}” · n next · N back")

    # -- moving -------------------------------------------------------------------------

    def action_back(self) -> None:
        self.dismiss()

    def action_scroll_lines(self, by: int) -> None:
        self.view.scroll_relative(y=by, animate=False)

    def action_top(self) -> None:
        self.view.following = False
        self.view.scroll_home(animate=False)

    def action_follow(self) -> None:
        self.view.follow()


class TranscriptScreen(SearchableScreen):
    """The transcript of ``turn`` (None: the heinzel's newest turn) of one heinzel."""

    BINDINGS = keymap.TURN_PAGE

    def __init__(self, heinzel_id: str, turn: str | None = None) -> None:
        super().__init__(heinzel_id)
        self.model = TranscriptModel(heinzel=heinzel_id, turn=None)
        self.wanted = turn
        self.reading = False
        self.read_again = False

    def on_mount(self) -> None:
        super().on_mount()
        self.title = "hz · transcript"
        self.show_lines(self.model.lines())
        self.cockpit.spines_moved.subscribe(self, self.on_spines)
        self.set_interval(POLL_S, self.poll)
        self.read()

    def on_spines(self, batch: SpineBatch) -> None:
        mine = self.heinzel_id
        if batch.reload or mine in batch.moved or batch.lines.get(mine) or batch.bodies.get(mine):
            self.read()

    def poll(self) -> None:
        if self.model.running:
            self.read()

    @work(group="transcript")
    async def read(self) -> None:
        """Read on from where the transcript stands; one reader at a time, never a gap."""
        if self.reading:
            self.read_again = True
            return
        self.reading = True
        first = not self.model.loaded
        changed = False
        try:
            while True:
                self.read_again = False
                request = ops.TranscriptRequest(
                    ref=self.heinzel_id,
                    turn=self.model.turn or self.wanted,
                    after_offset=self.model.offset,
                )
                answer = await self.cockpit.client.call(ops.TRANSCRIPT, request)
                if not self.is_attached:
                    return
                changed |= self.model.take(answer)
                if not (answer.more or self.read_again):
                    break
        except HzError as exc:
            if self.is_attached:
                self.query_one("#search-status", Static).update(exc.one_line())
            return
        finally:
            self.reading = False
        if first:
            self.cockpit.retitle(self, f"hz · {display.visible(self.model.name)} · transcript")
            self.view.following = self.model.running
        if changed:
            self.show_lines(self.model.lines())

    def action_forget(self) -> None:
        """Ask what the model should read in this turn's place (nothing, if left empty)."""
        turn = self.model.turn
        if turn is None:
            self.notify("no turn to hide yet", severity="warning")
            return
        from hz_tui.screens.prompt import PromptScreen

        asking = PromptScreen(
            f"Hide turn {turn} from the model",
            "From the next turn on the model does not see this turn in its history; the record "
            "and this transcript keep it. Type a line for the model to read in its place, or "
            "leave it empty. Enter hides it, Escape keeps it.",
            placeholder="(nothing in its place)",
            allow_empty=True,
        )
        self.app.push_screen(asking, lambda instead: self._forget(turn, instead))

    @work(group="forget")
    async def _forget(self, turn: str, instead: str | None) -> None:
        if instead is None:
            return
        request = ops.ForgetRequest(ref=self.heinzel_id, turn=turn, instead=instead.strip() or None)
        try:
            await self.cockpit.client.call(ops.FORGET, request)
        except HzError as exc:
            self.notify(exc.one_line(), severity="error", timeout=10)
            return
        said = " (your line stands in its place)" if request.instead else ""
        self.notify(f"The model no longer sees turn {turn}{said}; the record keeps it.")
