"""The contract page: a heinzel's contract versions, the diff between them, and what waits.

The list on the left holds the proposal waiting for approval (a new
heinzel's first contract, or an amendment, by the heinzel or by you) and
every approved version, newest first. The pane shows the selected one as a
diff from the version before it (a proposal: from the current version), or
its whole text (``d`` switches). ``a`` approves the waiting proposal, ``x``
declines it; both go through the kernel, and the page follows the change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Header, OptionList, Static
from textual.widgets.option_list import Option

from hz_kernel import operations as ops
from hz_kernel.api import ContractProposal, ContractView
from hz_kernel.errors import HzError
from hz_tui import actions, display, keymap, review, rows
from hz_tui.messages import RowsUpdate
from hz_tui.widgets.diff_view import DiffView
from hz_tui.widgets.key_bar import KeyBar

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp

PENDING = "pending"


class ContractScreen(Screen[None]):
    """One heinzel's contract in versions."""

    CSS_PATH = "contract.tcss"
    BINDINGS = keymap.CONTRACT

    def __init__(self, heinzel_id: str) -> None:
        super().__init__()
        self.heinzel_id = heinzel_id
        self.view: ContractView | None = None
        """The newest version and what waits (the list's source)."""
        self.shown: ContractView | None = None
        """The version in the pane (may be an older one)."""
        self.as_diff = True

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    @property
    def pending(self) -> ContractProposal | None:
        return self.view.pending if self.view else None

    def compose(self) -> ComposeResult:
        yield Header(icon="hz")
        with Horizontal(id="contract"):
            with Vertical(id="versions-column"):
                yield Static("Versions", classes="section")
                yield OptionList(id="versions")
            yield DiffView(id="contract-text")
        yield Static(id="contract-status")
        yield KeyBar()

    def on_mount(self) -> None:
        self.cockpit.rows_changed.subscribe(self, self.on_rows)
        self.query_one(OptionList).focus()
        self.load()

    def on_rows(self, update: RowsUpdate) -> None:
        if self.heinzel_id in update.ids:
            self.load()

    # -- loading -----------------------------------------------------------------------

    @work(exclusive=True, group="contract-page")
    async def load(self) -> None:
        try:
            view = await self.cockpit.client.call(
                ops.CONTRACT, ops.ContractRequest(ref=self.heinzel_id)
            )
        except HzError as exc:
            if not self._page_gone():
                self.query_one(DiffView).say(exc.one_line())
            return
        if self._page_gone():
            return
        self.view = self.shown = view
        self.cockpit.retitle(self, f"hz · {display.visible(view.name)} · contract")
        items = self.query_one(OptionList)
        items.clear_options()
        if view.pending is not None:
            items.add_option(Option(_pending_label(view.pending), id=PENDING))
        for number in reversed(view.versions):
            current = " (current)" if number == view.version else ""
            items.add_option(Option(f"v{number}{current}", id=f"v{number}"))
        if items.option_count:
            items.highlighted = 0
        else:
            self.query_one(DiffView).say("No contract yet.")
        self.refresh_bindings()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        choice = event.option.id
        if choice == PENDING:
            self.draw()
        elif choice is not None:
            self.show_version(int(choice[1:]))

    @work(exclusive=True, group="contract-version")
    async def show_version(self, number: int) -> None:
        if self.shown is not None and self.shown.version == number:
            self.draw()
            return
        try:
            self.shown = await self.cockpit.client.call(
                ops.CONTRACT, ops.ContractRequest(ref=self.heinzel_id, version=number)
            )
        except HzError as exc:
            if not self._page_gone():
                self.query_one(DiffView).say(exc.one_line())
            return
        if not self._page_gone():
            self.draw()

    def _page_gone(self) -> bool:
        """The page was closed while a read was in flight: its widgets are gone."""
        return not all(self.query(part) for part in ("#versions", "#contract-status", DiffView))

    # -- drawing -----------------------------------------------------------------------

    def draw(self) -> None:
        """Put the highlighted entry in the pane: its diff, or its whole text."""
        items = self.query_one(OptionList)
        highlighted = items.highlighted
        chosen = items.get_option_at_index(highlighted).id if highlighted is not None else None
        palette = rows.Palette.from_theme(self.app.theme_variables)
        pane = self.query_one(DiffView)
        status = self.query_one("#contract-status", Static)
        if chosen == PENDING and self.pending is not None:
            pending = self.pending
            if self.as_diff and pending.diff is not None:
                pane.show(review.colour_diff(pending.diff.splitlines(), palette))
                status.update("the proposal, as a diff from the current version (d: whole text)")
            else:
                pane.show(Text(pending.text))
                status.update("the proposal's whole text · a approves, x declines")
            return
        shown = self.shown
        if shown is None or shown.text is None:
            return
        if self.as_diff and shown.diff is not None:
            pane.show(review.colour_diff(shown.diff.splitlines(), palette))
            status.update(f"v{shown.version}, as a diff from v{shown.against} (d: whole text)")
        else:
            pane.show(Text(shown.text))
            first = " (the first version: nothing to diff)" if shown.diff is None else ""
            status.update(f"v{shown.version}, whole text{first}")

    # -- actions -----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Approve and decline leave the footer while nothing waits for them."""
        if action == "decide":
            return self.pending is not None
        return True

    def action_back(self) -> None:
        self.dismiss()

    def action_toggle_diff(self) -> None:
        self.as_diff = not self.as_diff
        self.draw()

    def action_decide(self, decision: str) -> None:
        self.decide(decision)

    @work(group="contract-decide")
    async def decide(self, decision: str) -> None:
        pending = self.pending
        if pending is None:
            return
        operation, request = actions.request_for(
            decision, self.heinzel_id, None, item=pending.short_key
        )
        name = self.view.name if self.view else self.heinzel_id
        try:
            decided = await self.cockpit.client.call(operation, request)
        except HzError as exc:
            self.notify(f"{name}: {exc.one_line()}", severity="error", timeout=10)
            return
        self.notify(actions.describe(name, decided))
        self.load()


def _pending_label(pending: ContractProposal) -> str:
    if pending.first:
        return "proposed (waits for you)"
    widens = " · widens" if pending.widens else ""
    return f"amendment by {pending.by}{widens}"
