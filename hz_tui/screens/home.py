"""The home screen: every heinzel in one table, filtered with ``/``, opened with Enter."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import Header, Input

from hz_tui import keymap, new_heinzel, rows
from hz_tui.messages import RowsUpdate
from hz_tui.widgets.filter_bar import FilterBar
from hz_tui.widgets.heinzel_table import HeinzelTable
from hz_tui.widgets.key_bar import KeyBar
from hz_tui.widgets.status_line import StatusLine

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp

#: Relative times ("5m ago") are redrawn this often; only cells whose text changed are touched.
RETIME_SECONDS = 30.0


class HomeScreen(Screen[None]):
    """All heinzels, live."""

    CSS_PATH = "home.tcss"
    BINDINGS = keymap.HOME + keymap.HEINZEL_ACTIONS

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    @property
    def table(self) -> HeinzelTable:
        return self.query_one(HeinzelTable)

    @property
    def filter_bar(self) -> FilterBar:
        return self.query_one(FilterBar)

    def compose(self) -> ComposeResult:
        yield Header(icon="hz")
        yield FilterBar(id="filter")
        yield HeinzelTable(id="heinzels")
        yield StatusLine(id="status")
        yield KeyBar()

    def on_mount(self) -> None:
        self.table.palette = rows.Palette.from_theme(self.app.theme_variables)
        self.cockpit.rows_changed.subscribe(self, self.on_rows)
        self.app.theme_changed_signal.subscribe(self, self.on_theme)
        self.table.replace_all(self.cockpit.rows.values())
        self.set_interval(RETIME_SECONDS, self.table.retime)
        self.table.focus()
        self.update_status()

    def on_rows(self, update: RowsUpdate) -> None:
        if update.full:
            self.table.replace_all(update.rows)
        else:
            self.table.apply(update.rows, update.gone)
        self.update_status()

    def on_theme(self, theme: Theme) -> None:
        self.table.restyle(rows.Palette.from_theme(self.app.theme_variables))

    def update_status(self) -> None:
        table = self.table
        label = next(c.label for c in rows.COLUMNS if c.key == table.sort_column)
        self.query_one(StatusLine).show(
            total=len(table.items),
            shown=len(table.shown),
            waiting=sum(1 for item in table.items.values() if rows.waits_on_user(item)),
            filter_text=self.filter_bar.value,
            sort=f"{label.lower()}{' (reversed)' if table.sort_reverse else ''}",
        )

    # -- actions -----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":
            return bool(self.filter_bar.value) or self.filter_bar.has_focus
        return True

    def action_filter(self) -> None:
        self.filter_bar.add_class("-active")
        self.filter_bar.focus()

    def action_clear_filter(self) -> None:
        self.filter_bar.value = ""
        self.filter_bar.remove_class("-active")
        self.table.focus()

    def action_refresh(self) -> None:
        self.cockpit.reload()

    def action_new_heinzel(self) -> None:
        new_heinzel.start(self.cockpit)

    def action_act(self, action: str) -> None:
        self.cockpit.act_on_selected(action)

    def sort_by(self, column: str, reverse: bool | None = None) -> None:
        self.table.sort_by(column, reverse)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.table.set_filter(event.value)
        self.update_status()
        self.refresh_bindings()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.table.focus()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        if event.widget is self.filter_bar and not self.filter_bar.value:
            self.filter_bar.remove_class("-active")
        self.refresh_bindings()

    def on_heinzel_table_sorted(self) -> None:
        self.update_status()
