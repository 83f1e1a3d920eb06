"""The home screen: every heinzel in one table, a preview and the activity beside it.

The table filters with ``/`` and opens with Enter; the preview (``o``)
follows the cursor from the rows the table already holds; the activity
pane lists what the spines just said; the line under the table totals
turns running, what waits on the user and today's spending against the
daily cap. Where the terminal is too narrow for the preview beside a table
that keeps its columns, the preview gives way and the activity shrinks to
one line; ``o`` then shows the preview full width in the table's place
(k9s's describe view), and ``o`` or Escape goes back to the table.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.theme import Theme
from textual.timer import Timer
from textual.widgets import Header, Input, Static

from hz_kernel import operations as ops
from hz_kernel.clock import now_utc
from hz_kernel.errors import HzError
from hz_kernel.home import SPINE_NAME
from hz_kernel.overview import HeinzelSummary, SpendToday
from hz_tui import display, keymap, new_heinzel, rows, themes
from hz_tui.messages import RowsUpdate
from hz_tui.watcher import SpineBatch
from hz_tui.widgets import activity
from hz_tui.widgets.activity import ActivityPane
from hz_tui.widgets.filter_bar import FilterBar
from hz_tui.widgets.heinzel_table import CELL_PADDING, HeinzelTable
from hz_tui.widgets.key_bar import KeyBar
from hz_tui.widgets.preview import HeinzelPreview
from hz_tui.widgets.status_line import StatusLine, Totals

if TYPE_CHECKING:
    from hz_kernel.api import VerifyReport
    from hz_tui.app import CockpitApp
    from hz_tui.link import Link

#: The side panes' width beside the table (``home.tcss``: ``HomeScreen #side``).
SIDE_WIDTH = 44
#: From this width the preview and activity sit beside a table that keeps every column;
#: narrower, they give way (the activity is one line, ``o`` shows the preview full width).
BESIDE_FROM = rows.table_min_width(CELL_PADDING) + SIDE_WIDTH
#: From this width on, the preview and activity take what the table's columns leave.
WIDE_FROM = 180
#: The side panes' least width from ``WIDE_FROM`` on (``home.tcss``: ``HomeScreen.-wide #side``).
SIDE_WIDE = 60
#: The preview redraws at most this often while the cursor moves (a held key).
PREVIEW_EVERY_S = 0.05
#: Spending is asked again this long after a row's cost moved (a burst asks once).
SPEND_AFTER_S = 0.5

FULL_NOTE = "Preview, full width (too narrow beside the table) · o or Esc: back"
EMPTY = (
    "No heinzels yet.\n\n"
    "Press {new} to create one from a template or a sentence,\n"
    "or run `hz demo` for a throwaway home with a few to try."
)

LIST_FAILED = (
    "The heinzels could not be listed.\n\n"
    "{error}\n\n"
    "Press {retry} to list them again once that is put right."
)


class HomeScreen(Screen[None]):
    """All heinzels, live."""

    CSS_PATH = "home.tcss"
    BINDINGS = keymap.HOME_SCREEN
    KEY_PRIORITY: ClassVar[dict[str, int]] = {
        "app.daemon": 3,
        "app.review": 3,
        "app.quit": 4,
        "home.new": 2,
    }
    """The kernel page and the review desk are where the home leads, and the home is where one
    quits (both passes at 80 columns looked for Quit): they stay on a narrow bar, and New (the
    empty home names its key; F1 lists it) gives way first."""
    #: The table has the keys from the start (the hidden filter never holds them, even briefly:
    #: each move of the focus restyles the widgets it leaves and enters).
    AUTO_FOCUS = "#heinzels"

    def __init__(self) -> None:
        super().__init__()
        self.preview_wanted: bool | None = None
        """The user's choice with ``o`` where the preview fits beside the table; None: shown."""
        self.preview_full = False
        """Too narrow for it beside the table, the preview shows full width in its place."""
        self._beside = False
        """The preview showed beside the table at the last layout (it gives way with a note)."""
        self._offered = (False, True)
        """Whether the key bar offers the row keys, and New: there are rows, the list was read."""
        self._history_asked = False
        """The activity's history was read from the spines once (after the first rows)."""
        self.history_shown = False
        """That history is in the activity (pictures wait for it)."""
        self.spend: SpendToday | None = None
        self._preview_timer: Timer | None = None
        self._spend_timer: Timer | None = None
        self._rows_spent: float | None = None
        """What the rows' costs today added up to: when it moves, the kernel is asked again."""
        self._side_due = False

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    @property
    def table(self) -> HeinzelTable:
        return self.query_one(HeinzelTable)

    @property
    def filter_bar(self) -> FilterBar:
        return self.query_one(FilterBar)

    @property
    def preview(self) -> HeinzelPreview:
        return self.query_one(HeinzelPreview)

    @property
    def activity(self) -> ActivityPane:
        return self.query_one("#activity", ActivityPane)

    @property
    def activity_panes(self) -> list[ActivityPane]:
        """The pane beside the table and the one-line form under it (one shows at a time)."""
        return list(self.query(ActivityPane))

    def compose(self) -> ComposeResult:
        yield Header(icon="hz")
        yield FilterBar(id="filter")
        with Horizontal(id="main"):
            with Vertical(id="list"):
                yield HeinzelTable(id="heinzels")
                yield Static(id="empty")
            with Vertical(id="side"):
                yield HeinzelPreview(id="preview")
                yield ActivityPane(id="activity")
        yield ActivityPane(id="activity-line", classes="-line")
        yield StatusLine(id="status")
        yield KeyBar()

    def on_mount(self) -> None:
        palette = rows.Palette.from_theme(self.app.theme_variables)
        self.table.palette = self.preview.palette = palette
        for pane in self.activity_panes:
            pane.palette = palette
        self.cockpit.rows_changed.subscribe(self, self.on_rows)
        self.cockpit.spines_moved.subscribe(self, self.on_spines)
        self.cockpit.ticker.ticked.subscribe(self, self.on_tick)
        self.cockpit.link.changed.subscribe(self, self.on_link_changed)
        self.table.stale = self.preview.stale = not self.cockpit.link.attached
        self.app.theme_changed_signal.subscribe(self, self.on_theme)
        self.set_class(themes.no_color(), "-mono")
        self.table.replace_all(self.cockpit.rows.values())
        self.lay_out()
        if self.cockpit.listed:
            # This frame has the rows; said before the side panes fill in, after the same frame.
            self.call_after_refresh(self.cockpit.first_frame_drawn)
        self.after_rows(full=True)

    # -- live data ---------------------------------------------------------------------

    def on_link_changed(self, link: Link) -> None:
        """While the daemon is lost, the rows' running and queued turns are not known."""
        self.preview.stale = not link.attached
        self.table.set_stale(not link.attached)
        self.show_preview(now_utc())
        self.update_status()

    def on_rows(self, update: RowsUpdate) -> None:
        if update.full:
            self.table.replace_all(update.rows)
        else:
            self.table.apply(update.rows, update.gone)
        self.after_rows(full=update.full)

    def after_rows(self, *, full: bool) -> None:
        """Totals, the empty message, (after the rows are drawn) the side panes, and (when
        costs moved) today's spending."""
        self.update_status()
        self.show_empty()
        self.fit_side()
        if not self._side_due:
            # The rows go on screen first: the preview and the activity (a table of their own
            # to lay out) follow in the next frame, once for any number of updates meanwhile.
            self._side_due = True
            self.call_after_refresh(self.fill_side)
        spent = round(sum(item.cost_today for item in self.table.items.values()), 6)
        moved, self._rows_spent = spent != self._rows_spent, spent
        if full:
            self.ask_spend()
        elif moved:
            self.ask_spend_soon()

    def fit_side(self) -> None:
        """On a wide terminal, what the table's columns leave goes to the preview and the
        activity (their lines are cut too), never less than the CSS's width, at most half."""
        side = self.query_one("#side")
        width = self.size.width
        if width < WIDE_FROM or not self._beside:
            side.styles.width = None
            return
        table = self.table
        edges = table.outer_size.width - table.scrollable_content_region.width
        left = width - rows.natural_width(CELL_PADDING, table.wanted) - max(edges, 0)
        wanted = min(max(left, SIDE_WIDE), width // 2)
        if side.styles.width is None or side.styles.width.value != wanted:
            side.styles.width = wanted

    def fill_side(self) -> None:
        """The preview of the highlighted row, and the activity seeded from the rows."""
        self._side_due = False
        now = now_utc()
        key = self.table.cursor_key()
        item = self.table.items.get(key) if key else None
        if not self.preview.shown or item != self.preview.item:
            self.show_preview(now)  # the clock's tick redraws it as time passes
        for pane in self.activity_panes:
            pane.seed(self.table.items.values(), now)
        if not self._history_asked and self.table.items:
            self._history_asked = True
            self.read_history(list(self.table.items.values()))

    @work(thread=True, group="history")
    def read_history(self, items: list[HeinzelSummary]) -> None:
        """The recently active spines' tails, read off the event loop, into the activity."""
        entries = activity.from_spine_tails(self.cockpit.home.heinzel_root, items)
        self.app.call_from_thread(self._show_history, entries)

    def _show_history(self, entries: list[activity.Activity]) -> None:
        for pane in self.activity_panes:
            pane.add_history(entries, now_utc())
        self.history_shown = True

    def on_spines(self, batch: SpineBatch) -> None:
        names = self.cockpit.names | {h: item.name for h, item in self.table.items.items()}
        entries = activity.from_batch(batch, names)
        for pane in self.activity_panes:
            pane.add(entries, now_utc())

    def on_tick(self, now: datetime) -> None:
        self.table.retime()
        self.show_preview(now)
        for pane in self.activity_panes:
            pane.show(now)

    def on_theme(self, theme: Theme) -> None:
        palette = rows.Palette.from_theme(self.app.theme_variables)
        self.table.restyle(palette)
        self.preview.palette = palette
        now = now_utc()
        self.show_preview(now)
        for pane in self.activity_panes:
            pane.palette = palette
            pane.show(now)
        self.update_status()

    def ask_spend_soon(self) -> None:
        if self._spend_timer is None:
            self._spend_timer = self.set_timer(SPEND_AFTER_S, self.ask_spend)

    @work(exclusive=True, group="spend")
    async def ask_spend(self) -> None:
        """Today's spending and the cap, from the kernel (costs of heinzels gone count too)."""
        self._spend_timer = None
        # Spending needs the kernel itself: an embedded one opens after the first frame.
        await self.cockpit.warmed.wait()
        try:
            self.spend = await self.cockpit.client.call(ops.SPEND, ops.Empty())
        except HzError:
            return  # the header says when the kernel is away; the line keeps the last figure
        with contextlib.suppress(NoMatches):  # the answer came as the cockpit closed its home
            self.update_status()

    def update_status(self) -> None:
        table = self.table
        items = table.items.values()
        label = next(c.label for c in rows.COLUMNS if c.key == table.sort_column)
        totals = Totals(
            total=len(table.items),
            shown=len(table.shown),
            running=None
            if table.stale
            else sum(1 for i in items if i.state == "awake" and not (i.queued or i.interrupted)),
            waiting=sum(1 for i in items if rows.waits_on_user(i)),
            drafts=sum(1 for i in items if i.pending_draft),
            spend=self.spend,
        )
        self.query_one(StatusLine).show(
            totals,
            filter_text=self.filter_bar.value,
            sort=f"{label.lower()}{' (reversed)' if table.sort_reverse else ''}",
            warn=table.palette.warn,
        )

    def show_empty(self) -> None:
        """An empty table says why: no heinzels at all, or none that match the filter."""
        table = self.table
        empty = self.query_one("#empty", Static)
        failed = self.cockpit.list_error
        blank = (self.cockpit.listed or failed is not None) and not table.order
        if (bool(table.order), failed is None) != self._offered:
            self._offered = (bool(table.order), failed is None)
            self.refresh_bindings()  # the row keys (and New) come to the key bar, or leave it
        empty.display = blank
        self.query_one("#list").set_class(blank, "-empty")
        if not blank:
            return
        if failed is not None and not table.items:
            retry = keymap.shown_keys("home.refresh", self.cockpit.keymap_overrides)
            empty.update(Text(LIST_FAILED.format(error=display.visible(failed), retry=retry)))
        elif table.items:
            words = display.echoed(self.filter_bar.value)
            empty.update(Text(f"no heinzel matches '{words}' (Esc clears the filter)"))
        else:
            new = keymap.shown_keys("home.new", self.cockpit.keymap_overrides)
            empty.update(Text(EMPTY.format(new=new)))

    # -- the preview -------------------------------------------------------------------

    def on_heinzel_table_highlighted(self, message: HeinzelTable.Highlighted) -> None:
        if self._preview_timer is None:
            self._preview_timer = self.set_timer(PREVIEW_EVERY_S, self._preview_due)

    def _preview_due(self) -> None:
        self._preview_timer = None
        self.show_preview(now_utc())

    def show_preview(self, now: datetime) -> None:
        if not self.preview.display:
            return
        key = self.table.cursor_key()
        item = self.table.items.get(key) if key else None
        if item is not None and item.damaged != (item.id in self.preview.damage):
            if item.damaged:
                self.preview.damage[item.id] = ""  # asked once: the pane says it is checking
                self.ask_damage(item.id, item.name)
            else:
                del self.preview.damage[item.id]  # accepted: a later break is checked afresh
        self.preview.show(item, now, filtered_out=bool(self.table.items) and key is None)

    @work(group="damage")
    async def ask_damage(self, heinzel_id: str, name: str) -> None:
        """Ask the kernel what is wrong with a damaged heinzel's spine, for the preview."""
        await self.cockpit.warmed.wait()
        try:
            found = await self.cockpit.client.call(ops.VERIFY, ops.VerifyRequest(ref=heinzel_id))
        except HzError as exc:
            line = f"{exc.code}: {exc.message}"
        else:
            line = _damage_line(found.items, name, self.cockpit.home.heinzel_dir(heinzel_id))
        self.preview.damage[heinzel_id] = line
        with contextlib.suppress(NoMatches):
            self.show_preview(now_utc())

    @property
    def fits_beside(self) -> bool:
        """The preview fits beside the table without cutting the table's columns."""
        return self.size.width >= BESIDE_FROM

    @property
    def preview_shown(self) -> bool:
        if not self.fits_beside:
            return self.preview_full
        return self.preview_wanted is not False

    def on_resize(self, event: events.Resize) -> None:
        self.lay_out()

    def lay_out(self) -> None:
        """Preview and activity beside the table; too narrow for that, the table alone with the
        activity as a line under it, or (``o``) the preview full width in the table's place."""
        beside = self.fits_beside
        if beside:
            self.preview_full = False
        full = self.preview_full
        preview = self.preview_shown
        if self._beside and not beside and self.app.screen is self:  # said where it applies
            self.notify(
                f"The preview gives way below {BESIDE_FROM} columns so the table keeps its "
                "columns: o shows it full width."
            )
        self._beside = beside and preview
        self.set_class(not beside, "-narrow")
        self.set_class(full, "-full")
        self.set_class(self.size.width >= WIDE_FROM, "-wide")
        self.fit_side()
        # Hidden with ``o``, the preview takes the activity pane with it: the table gets the
        # width (new-user pass: at 120 columns it stayed cut while the activity filled the side).
        side = (beside and preview) or full
        self.query_one("#list").display = not full
        self.query_one("#side").display = side
        self.preview.display = preview
        self.preview.note = FULL_NOTE if full else ""
        self.query_one("#activity-line").display = not side
        if not full and self.table.display and self.focused is None:
            self.table.focus()
        now = now_utc()
        self.show_preview(now)
        for pane in self.activity_panes:
            pane.show(now)

    # -- actions -----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":
            return bool(self.filter_bar.value) or self.filter_bar.has_focus or self.preview_full
        if action == "act":
            table = next(iter(self.query(HeinzelTable)), None)  # None before the home is composed
            return table is not None and bool(table.order)  # no row, no heinzel to act on
        if action == "new_heinzel":
            return self.cockpit.list_error is None  # a home that cannot be listed takes none
        return True

    def action_toggle_preview(self) -> None:
        if self.fits_beside:
            self.preview_wanted = not self.preview_shown
        else:
            self.preview_full = not self.preview_full
        self.lay_out()
        self.refresh_bindings()

    def action_filter(self) -> None:
        self.filter_bar.add_class("-active")
        self.filter_bar.focus()

    def action_clear_filter(self) -> None:
        if self.preview_full:
            self.action_toggle_preview()
            return
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
        self.show_empty()
        self.show_preview(now_utc())  # no row left to highlight: the preview says so
        self.refresh_bindings()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.table.focus()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        if event.widget is self.filter_bar and not self.filter_bar.value:
            self.filter_bar.remove_class("-active")
        self.refresh_bindings()

    def on_heinzel_table_sorted(self) -> None:
        self.update_status()


def _damage_line(reports: Sequence[VerifyReport], name: str, folder: Path) -> str:
    """The first problem the spine check found, with its code and place, and what to run."""
    problems = [p for r in reports for p in r.problems if not p.accepted]
    accept = f"hz heinzel verify {name} --accept records the break"
    if not problems:
        return f"the spine disagrees with the index; {accept}"
    first = problems[0]
    where = f"byte {first.offset}" if first.seq is None else f"seq {first.seq}, byte {first.offset}"
    spine = folder / SPINE_NAME
    if first.problem == "unreadable-file":
        return f"{first.code}: {first.detail} ({spine})"
    return f"{first.code} at {where} of {spine}: {first.detail}; {accept}"
