"""One heinzel's page: the live turn, its timeline, what waits, the inbox and the composer.

The facts, timeline, lessons and costs come from one ``heinzel.show`` and
the inbox from ``heinzel.inbox``; both are asked again whenever the live
feed says this heinzel's spine moved. The live turn panel reads the spine
and the turn's body itself, or the wire when attached with ``--connect``
(``hz_tui.widgets.live_turn``).
"""

from __future__ import annotations

import contextlib
import time
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import Header, Static
from ulid import ULID

from hz_kernel import operations as ops
from hz_kernel.api import HeinzelDetail, HeinzelSummary, InboxItem
from hz_kernel.clock import now_utc
from hz_kernel.errors import HzError
from hz_tui import display, keymap, rows
from hz_tui.messages import RowsUpdate
from hz_tui.screens.choose import ChooseScreen
from hz_tui.screens.confirm import ConfirmScreen
from hz_tui.screens.contract import ContractScreen
from hz_tui.screens.conversation import ConversationScreen
from hz_tui.screens.prompt import PromptScreen
from hz_tui.screens.transcript import TranscriptScreen
from hz_tui.watcher import SpineBatch
from hz_tui.widgets.composer import Composer
from hz_tui.widgets.costs import CostPanel
from hz_tui.widgets.facts import Facts
from hz_tui.widgets.inbox import InboxList
from hz_tui.widgets.key_bar import KeyBar
from hz_tui.widgets.lessons import LessonList
from hz_tui.widgets.live_turn import LiveTurnPanel, turn_panel
from hz_tui.widgets.page_scroll import PageScroll
from hz_tui.widgets.pending import PendingPanel
from hz_tui.widgets.timeline import Timeline

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp

#: A second Ctrl+C within this many seconds stops the running turn.
DOUBLE_PRESS_S = 2.0


class HeinzelScreen(Screen[None]):
    """The page of the heinzel with id ``heinzel_id``."""

    CSS_PATH = "heinzel.tcss"
    BINDINGS = keymap.HEINZEL_SCREEN
    KEY_PRIORITY: ClassVar[dict[str, int]] = {"app.review": 4}
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [
        (0, "-narrow"),
        (110, "-wide"),
        (200, "-vast"),  # the side column takes more: lessons and reports read whole
    ]

    def __init__(self, heinzel_id: str) -> None:
        super().__init__()
        self.heinzel_id = heinzel_id
        self.detail: HeinzelDetail | None = None
        self.inbox: list[InboxItem] = []
        self.inbox_skipped: list[str] = []
        self.load_error: str | None = None
        """Why the last ``load`` failed (coded), shown until one succeeds."""
        self.stop_armed_at = 0.0

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    @property
    def is_open(self) -> bool:
        """Still on the screen stack: a page closed while the kernel answered shows nothing."""
        return self in self.app.screen_stack

    @property
    def turn_panel(self) -> LiveTurnPanel:
        return self.query_one(LiveTurnPanel)

    @property
    def name_shown(self) -> str:
        return self.detail.heinzel.name if self.detail else self.heinzel_id

    def compose(self) -> ComposeResult:
        yield Header(icon="hz")
        with PageScroll(id="page"):
            yield Facts(id="facts")
            with Horizontal(id="columns"):
                with Vertical(id="main"):
                    yield Static("Live turn", classes="section")
                    yield turn_panel(self.cockpit, self.heinzel_id)
                    yield Static("Turns", classes="section")
                    yield Timeline(id="timeline")
                with Vertical(id="side"):
                    yield Static("Waiting on you", classes="section")
                    yield PendingPanel(id="pending")
                    yield Static("Inbox", classes="section")
                    yield InboxList(id="inbox")
                    yield Static("What I learned from you", classes="section")
                    yield LessonList(id="lessons")
                    yield Static("Cost this month by cause", classes="section")
                    yield CostPanel(id="costs")
        yield Composer(self.heinzel_id, id="composer")
        yield KeyBar()

    def on_mount(self) -> None:
        self.cockpit.rows_changed.subscribe(self, self.on_rows)
        self.cockpit.spines_moved.subscribe(self, self.on_spines)
        self.cockpit.ticker.ticked.subscribe(self, self.on_tick)
        self.app.theme_changed_signal.subscribe(self, self.on_theme)
        self.on_theme(self.app.current_theme)
        self.show_times(now_utc())  # "loading…" until the first answer, never an empty page
        self.load()

    def on_theme(self, theme: Theme) -> None:
        palette = rows.Palette.from_theme(self.app.theme_variables)
        self.query_one(Timeline).palette = palette
        self.turn_panel.restyle(palette)

    def on_rows(self, update: RowsUpdate) -> None:
        if self.heinzel_id in update.gone:
            self.notify("This heinzel is gone from the home.", severity="warning")
        elif self.heinzel_id in update.ids:
            self.load()
            composer = self.query_one(Composer)
            if not composer.dirty:  # a message another window sent leaves this one too
                composer.catch_up()

    def on_spines(self, batch: SpineBatch) -> None:
        self.turn_panel.take(batch)
        self.refresh_bindings()

    def key_applies(self, binding_id: str) -> bool:
        """For the key bar: K and the composer's Ctrl+C (stop) apply while a turn runs, y
        (answer) while a question waits; otherwise they show dimmed and are the first to
        leave a narrow bar (pressed, they still say why they do nothing)."""
        if binding_id in ("heinzel.stop_ask", "composer.stop_twice"):
            panel = next(iter(self.query(LiveTurnPanel)), None)  # None as the page closes
            return panel is not None and panel.running
        if binding_id == "heinzel.answer":
            return bool(self._pending_questions())
        return True

    def _pending_questions(self) -> list[str]:
        questions = self.detail.questions if self.detail else []
        return [q.question or "" for q in questions if q.status == "pending"]

    @work(exclusive=True, group="heinzel-page")
    async def load(self) -> None:
        client = self.cockpit.client
        try:
            detail = await client.call(ops.SHOW, ops.HeinzelRef(ref=self.heinzel_id))
            inbox = await client.call(ops.INBOX, ops.HeinzelRef(ref=self.heinzel_id))
        except HzError as exc:
            self.load_error = exc.one_line()
            with contextlib.suppress(NoMatches):  # the answer came as the page closed
                self.show_times(now_utc())
            return
        if not self.is_open:
            return
        self.load_error = None
        self.inbox, self.inbox_skipped = inbox.items, inbox.skipped
        with contextlib.suppress(NoMatches):  # the cockpit closing takes the page apart
            self.show(detail)

    def show(self, detail: HeinzelDetail) -> None:
        self.detail = detail
        self.cockpit.retitle(self, f"hz · {display.visible(detail.heinzel.name)}")
        self.show_times(now_utc())
        self.query_one(Timeline).show(detail.turns)
        self.query_one(LessonList).show(detail.lessons)
        self.query_one(CostPanel).show(detail.cost_month)
        damaged_as = detail.heinzel.name if detail.heinzel.damaged else None
        if self.turn_panel.damaged_as != damaged_as:
            self.turn_panel.damaged_as = damaged_as
            self.turn_panel.redraw()
        self.refresh_bindings()

    def on_tick(self, now: datetime) -> None:
        self.show_times(now)
        self.turn_panel.redraw()
        self.refresh_bindings()  # a turn seen ending over the wire

    def show_times(self, now: datetime) -> None:
        """What reads the clock ("last 3m ago", "placed now", "in 2h"), drawn again on every
        tick of the app's ticker so it moves between spine changes."""
        if self.detail is None:
            self.show_not_loaded()
            return
        facts = _facts(self.detail, now, rows.Palette.from_theme(self.app.theme_variables))
        if self.load_error is not None:
            facts.append(("Error", self.load_error))
        self.query_one(Facts).show(facts)
        self.query_one(PendingPanel).show(self.detail, now)
        self.query_one(InboxList).show(self.inbox, now, self.inbox_skipped)

    def show_not_loaded(self) -> None:
        """Before the first answer: loading, or the coded line of why it failed, and never a
        panel's empty-state text ("No messages wait."), which would read as "nothing here"."""
        if self.load_error is None:
            self.query_one(Facts).show([("Loading", "asking the kernel for this heinzel…")])
            placeholder = Text("loading…", style="dim")
        else:
            self.query_one(Facts).show([("Error", self.load_error)])
            overrides: dict[str, str] = getattr(self.app, "keymap_overrides", {})
            again = keymap.shown_keys("heinzel.refresh", overrides)
            placeholder = Text(f"not loaded (the error above; {again} tries again)", style="dim")
        for panel in (PendingPanel, InboxList, LessonList, CostPanel):
            self.query_one(panel).update(placeholder)

    # -- navigation and the heinzel actions ----------------------------------------------

    def action_back(self) -> None:
        self.dismiss()

    def action_refresh(self) -> None:
        self.load()

    def action_act(self, action: str) -> None:
        self.cockpit.act(self.heinzel_id, action)

    def action_contract(self) -> None:
        self.app.push_screen(ContractScreen(self.heinzel_id))

    def on_timeline_open_turn(self, message: Timeline.OpenTurn) -> None:
        self.app.push_screen(TranscriptScreen(self.heinzel_id, message.turn))

    def action_open_turn(self) -> None:
        """Enter wherever the focus is (but the composer): the timeline's highlighted turn,
        so a past turn's transcript needs no hunt for the timeline's focus first."""
        timeline = self.query_one(Timeline)
        if timeline.row_count:
            timeline.action_open_turn()
        else:
            self.action_transcript()

    def action_timeline_move(self, rows: int) -> None:
        """↓/j, ↑/k anywhere on the page (the composer aside): the next or previous turn, and
        the timeline scrolled into view."""
        timeline = self.query_one(Timeline)
        if not timeline.row_count:
            return
        if rows > 0:
            timeline.action_cursor_down()
        else:
            timeline.action_cursor_up()
        timeline.scroll_visible(animate=False)

    def action_transcript(self) -> None:
        """The newest turn's transcript (the palette's way in)."""
        self.app.push_screen(TranscriptScreen(self.heinzel_id))

    def action_conversation(self) -> None:
        self.app.push_screen(ConversationScreen(self.heinzel_id))

    def action_compose(self) -> None:
        self.query_one(Composer).input.focus()

    def action_follow(self) -> None:
        self.turn_panel.jump_to_latest()

    # -- stopping the running turn -------------------------------------------------------

    def action_stop_turn(self) -> None:
        """Ctrl+C: the first press names the step it would stop, a second within
        ``DOUBLE_PRESS_S`` stops the turn."""
        now = time.monotonic()
        if now - self.stop_armed_at <= DOUBLE_PRESS_S:
            self.stop_armed_at = 0.0
            self.stop_turn()
            return
        self.stop_armed_at = now
        self.notify(f"Press Ctrl+C again to stop {self.running_step()}.", timeout=DOUBLE_PRESS_S)

    def action_ask_stop(self) -> None:
        """K: "stop think?", naming the step, so nothing stops that the user did not see run;
        Cancel is highlighted, as in every confirmation: Enter alone never stops a turn."""
        if not self.turn_panel.running:
            self.notify("No turn is running.")
            return
        step = self.running_step()
        about = (
            "The turn ends abandoned; the messages it did not answer come back to the "
            "composer, unsent."
        )
        handing_off = any(
            row.effect == "handoff" and row.status == "started"
            for row in self.turn_panel.live.effects.values()
        )
        if handing_off:
            about += " The coding agent it handed a task to is stopped too (docs/handoff.md)."
        asked = ConfirmScreen(f"Stop {step}?", about, f"Stop {step}")
        self.app.push_screen(asked, lambda yes: self.stop_turn() if yes else None)

    def running_step(self) -> str:
        live = self.turn_panel.live
        return live.step if self.turn_panel.running and live.step else "the running turn"

    @work(exclusive=True, group="heinzel-stop")
    async def stop_turn(self) -> None:
        """Stop the turn and take back what no turn answered: the kernel withdraws those
        messages (``hand_back``), so they come back here unsent, never also to the next turn."""
        client = self.cockpit.client
        stop = ops.StopRequest(ref=self.heinzel_id, hand_back=True)
        try:
            report = await client.call(ops.STOP, stop)
        except HzError as exc:
            self.notify(f"{self.name_shown}: {exc.one_line()}", severity="error", timeout=10)
            return
        self.query_one(Composer).put_back(report.handed_back)
        given = len(report.handed_back)
        back = f"; {given} message{'s' if given > 1 else ''} back in the composer, unsent"
        if report.turn is None:
            self.notify(f"{self.name_shown}: no turn was running{back if given else ''}.")
        else:
            self.notify(f"{self.name_shown}: the turn was stopped{back if given else ''}.")
        try:
            inbox = await client.call(ops.INBOX, ops.HeinzelRef(ref=self.heinzel_id))
        except HzError:
            return  # the list catches up on the next refresh
        self.inbox, self.inbox_skipped = inbox.items, inbox.skipped
        self.query_one(InboxList).show(self.inbox, now_utc(), self.inbox_skipped)

    # -- answer, retry, dismiss ----------------------------------------------------------

    def action_answer(self) -> None:
        questions = self._pending_questions()
        if not questions:
            self.notify("No question waits for an answer.", severity="warning")
            return
        prompt = PromptScreen("Answer", questions[-1], placeholder="your answer")
        self.app.push_screen(prompt, self.send_answer)

    def send_answer(self, text: str | None) -> None:
        if text:
            request = ops.AnswerRequest(ref=self.heinzel_id, message=text, request_id=_request_id())
            self.send(ops.ANSWER, request, "answer sent")

    def action_retry(self) -> None:
        prompt = PromptScreen(
            "Try again",
            "Runs the last turn again from its inputs, with your hint for the model.",
            placeholder="a hint, e.g. shorter (optional)",
            allow_empty=True,
        )
        self.app.push_screen(prompt, self.send_retry)

    def send_retry(self, hint: str | None) -> None:
        if hint is not None:
            request = ops.RetryRequest(
                ref=self.heinzel_id, hint=hint or None, request_id=_request_id()
            )
            self.send(ops.RETRY, request, "trying again")

    def action_dismiss_lesson(self) -> None:
        lessons = [
            lesson
            for lesson in (self.detail.lessons if self.detail else [])
            if not lesson.dismissed
        ]
        if not lessons:
            self.notify("No lesson to dismiss.", severity="warning")
            return
        items = [(lesson.lesson_id, lesson.lesson) for lesson in lessons]
        self.app.push_screen(ChooseScreen("Dismiss which lesson?", items), self.send_dismiss)

    def send_dismiss(self, lesson_id: str | None) -> None:
        if lesson_id:
            request = ops.DismissRequest(ref=self.heinzel_id, lesson_id=lesson_id)
            self.send(ops.DISMISS, request, "lesson dismissed")

    @work(group="heinzel-send")
    async def send(
        self, operation: ops.Operation[ops.Req, ops.Resp], request: ops.Req, done: str
    ) -> None:
        try:
            await self.cockpit.client.call(operation, request)
        except HzError as exc:
            self.notify(f"{self.name_shown}: {exc.one_line()}", severity="error", timeout=10)
            return
        self.notify(f"{self.name_shown}: {done}.")
        self.load()


LOCAL = "local"
"""The model string of hz's built-in, offline stand-in model (docs/models.md)."""


def _request_id() -> str:
    """A fresh request id: one per message the user sends, never reused for another."""
    return f"cockpit-{ULID()}"


def _facts(
    detail: HeinzelDetail, now: datetime, palette: rows.Palette
) -> list[tuple[str, str | Text]]:
    """The page's header: who the heinzel is, what it keeps, when it ran and is due."""
    summary = detail.heinzel
    versions = ", ".join(f"v{n}" for n in detail.contract_versions) or "none yet"
    if summary.contract_version is not None:
        contract = f"{summary.contract_name or 'contract'} v{summary.contract_version}"
    else:
        contract = "not approved yet"
    facts: list[tuple[str, str | Text]] = [
        ("Heinzel", f"{summary.name}  ({summary.id})"),
        ("State", _state(summary)),
        ("Contract", f"{contract} · versions: {versions}"),
        ("Model", _model(detail)),
        ("Keeps", ", ".join(summary.assets) or "—"),
        ("Schedule", summary.schedule or "when an input moves"),
        ("Next due", display.due(summary.next_due, now)),
        ("Turns", f"{summary.turns_count} · last {display.ago(summary.last_turn_at, now)}"),
        ("Lessons", f"{summary.lessons_active} active"),
    ]
    if summary.waiting_until:
        facts.append(("Waiting until", display.clock(summary.waiting_until)))
    if summary.team is not None:
        facts += rows.team_facts(summary.team, palette, now)
    return facts


def _model(detail: HeinzelDetail) -> str | Text:
    """Which model the heinzel's turns use, and whether its contract or the home chose it.

    The built-in ``local`` model only lists and sorts what the inputs hold, so
    the page says so quietly, with the setting that switches to a real model.
    """
    if not detail.model:
        return "—"
    contract = detail.model_from == "contract"
    chosen = f"{detail.model} · " + ("set in the contract" if contract else "the home's default")
    if detail.model != LOCAL:
        return chosen
    setting = "agent.model in the contract" if contract else "[model] default in hz.toml"
    return Text.assemble(chosen, (f" · offline stand-in; a real model: {setting}", "dim"))


def _state(summary: HeinzelSummary) -> str:
    """The state, and why a turn of it waits for the kernel when one does."""
    if summary.damaged:
        return "damaged: run hz heinzel verify"
    if summary.queued:
        return f"{summary.state} · {display.queued(summary.queued)}"
    if summary.interrupted:
        return f"{summary.state} · interrupted: its turn resumes when it next runs"
    return summary.state
