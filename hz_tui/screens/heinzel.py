"""One heinzel's page: its contract versions, timeline of turns, lessons, what waits, and cost.

Everything comes from one ``heinzel.show``; the page asks again whenever
the live feed says this heinzel's spine moved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from hz_kernel import operations as ops
from hz_kernel.api import HeinzelDetail
from hz_kernel.errors import HzError
from hz_tui import display, keymap, rows
from hz_tui.messages import RowsUpdate
from hz_tui.widgets.costs import CostPanel
from hz_tui.widgets.facts import Facts
from hz_tui.widgets.lessons import LessonList
from hz_tui.widgets.pending import PendingPanel
from hz_tui.widgets.timeline import Timeline

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp


class HeinzelScreen(Screen[None]):
    """The page of the heinzel with id ``heinzel_id``."""

    CSS_PATH = "heinzel.tcss"
    BINDINGS = keymap.HEINZEL + keymap.HEINZEL_ACTIONS
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (110, "-wide")]

    def __init__(self, heinzel_id: str) -> None:
        super().__init__()
        self.heinzel_id = heinzel_id
        self.detail: HeinzelDetail | None = None

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    def compose(self) -> ComposeResult:
        yield Header(icon="hz")
        with VerticalScroll(id="page"):
            yield Facts(id="facts")
            with Horizontal(id="columns"):
                with Vertical(id="main"):
                    yield Static("Turns", classes="section")
                    yield Timeline(id="timeline")
                with Vertical(id="side"):
                    yield Static("Waiting on you", classes="section")
                    yield PendingPanel(id="pending")
                    yield Static("What I learned from you", classes="section")
                    yield LessonList(id="lessons")
                    yield Static("Cost this month by cause", classes="section")
                    yield CostPanel(id="costs")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.cockpit.rows_changed.subscribe(self, self.on_rows)
        self.query_one(Timeline).palette = rows.Palette.from_theme(self.app.theme_variables)
        self.load()

    def on_rows(self, update: RowsUpdate) -> None:
        if self.heinzel_id in update.gone:
            self.notify("This heinzel is gone from the home.", severity="warning")
        elif self.heinzel_id in update.ids:
            self.load()

    @work(exclusive=True, group="heinzel-page")
    async def load(self) -> None:
        try:
            detail = await self.cockpit.client.call(ops.SHOW, ops.HeinzelRef(ref=self.heinzel_id))
        except HzError as exc:
            self.query_one(Facts).show([("Error", exc.one_line())])
            return
        self.show(detail)

    def show(self, detail: HeinzelDetail) -> None:
        self.detail = detail
        summary = detail.heinzel
        self.title = f"hz · {summary.name}"
        versions = ", ".join(f"v{n}" for n in detail.contract_versions) or "none yet"
        if summary.contract_version is not None:
            contract = f"{summary.contract_name or 'contract'} v{summary.contract_version}"
        else:
            contract = "not approved yet"
        facts = [
            ("Heinzel", f"{summary.name}  ({summary.id})"),
            ("State", "damaged: run hz heinzel verify" if summary.damaged else summary.state),
            ("Contract", f"{contract} · versions: {versions}"),
            ("Keeps", ", ".join(summary.assets) or "—"),
            ("Schedule", summary.schedule or "when an input moves"),
            ("Next due", display.due(summary.next_due)),
            ("Turns", f"{summary.turns_count} · last {display.ago(summary.last_turn_at)}"),
            ("Lessons", f"{summary.lessons_active} active"),
        ]
        if summary.waiting_until:
            facts.append(("Waiting until", display.clock(summary.waiting_until)))
        self.query_one(Facts).show(facts)
        self.query_one(Timeline).show(detail.turns)
        self.query_one(PendingPanel).show(detail)
        self.query_one(LessonList).show(detail.lessons)
        self.query_one(CostPanel).show(detail.cost_month)

    def action_back(self) -> None:
        self.dismiss()

    def action_refresh(self) -> None:
        self.load()

    def action_act(self, action: str) -> None:
        self.cockpit.act(self.heinzel_id, action)
