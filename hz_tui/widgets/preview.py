"""The preview beside the home table: the highlighted heinzel at a glance (k9s's describe pane).

Drawn from the row the table already holds (``HeinzelSummary``), so moving
the cursor never asks the kernel anything; Enter opens the full page.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from hz_kernel.overview import HeinzelSummary
from hz_tui import display, rows
from hz_tui.rows import Palette


@dataclass(frozen=True)
class WrappedPath:
    """A path that wraps after a ``/`` to the width its cell gets, never inside a name."""

    path: str

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in display.path_lines(self.path, options.max_width):
            yield Text(line)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        longest = max(len(piece) for piece in display.path_pieces(self.path))
        return Measurement(min(longest, options.max_width), min(len(self.path), options.max_width))


class HeinzelPreview(Static):
    """What the highlighted heinzel is doing, waits for, last did and does next."""

    DEFAULT_CSS = """
    HeinzelPreview {
        height: auto;
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.item: HeinzelSummary | None = None
        self.shown = False
        """Whether ``show`` ran (before it, the pane is blank rather than "no heinzel")."""
        self.palette = Palette()
        self.note = ""
        """A line above the heinzel, saying why the pane shows as it does (full width)."""
        self.stale = False
        """The daemon is lost: whether a turn runs or waits now is not known."""
        self.damage: dict[str, str] = {}
        """What the spine check found for each damaged heinzel, by id, once the kernel said."""

    def show(
        self, item: HeinzelSummary | None, now: datetime, *, filtered_out: bool = False
    ) -> None:
        """Show ``item``; with none, ``filtered_out`` says the filter left no row to highlight."""
        self.item = item
        self.shown = True
        if item is None and filtered_out:
            described: Group | Text = Text("No heinzel matches the filter.", style="dim")
        else:
            damage = self.damage.get(item.id) if item is not None else None
            described = describe(item, now, self.palette, damage=damage, stale=self.stale)
        self.update(Group(Text(self.note, style="dim"), described) if self.note else described)


def describe(
    item: HeinzelSummary | None,
    now: datetime,
    palette: Palette,
    *,
    damage: str | None = None,
    stale: bool = False,
) -> Group | Text:
    """The preview's content for ``item`` (None: no row is highlighted).

    ``damage`` is the spine check's finding for a damaged heinzel (code, place,
    what to run); until it comes, the pane says the check is under way.
    """
    if item is None:
        return Text("No heinzel selected.", style="dim")
    state = rows.cells(item, palette, now)["state"].as_text()
    title = Text.assemble((item.name, "bold"), "  ", state)
    facts = Table.grid(padding=(0, 1))
    facts.add_column(style="dim", no_wrap=True)
    facts.add_column(overflow="fold")
    if item.contract_version is not None:
        facts.add_row("Contract", f"{item.contract_name or 'contract'} v{item.contract_version}")
    elif item.state == "proposed":
        facts.add_row("Contract", Text("waits for your approval (Enter to see it)", palette.warn))
    for asset in item.assets:
        facts.add_row("Keeps", WrappedPath(asset.removeprefix("doc:")))
    facts.add_row("Needs you", _waits(item, palette))
    if stale and rows.live_turn(item):
        facts.add_row("Last turn", Text("not known while reconnecting", style="dim"))
    else:
        facts.add_row("Last turn", _last_turn(item, now, palette))
    if item.last_report:
        facts.add_row("Report", display.visible(item.last_report))
    due = display.due(item.next_due, now)
    facts.add_row("Next due", f"{due} ({item.schedule})" if item.schedule else due)
    if item.waiting_until:
        facts.add_row("Waiting until", display.ago(item.waiting_until, now, exact=False))
    facts.add_row("Today", display.usd(item.cost_today))
    facts.add_row("Turns", str(item.turns_count))
    if item.lessons_active:
        facts.add_row("Lessons", str(item.lessons_active))
    for label, value in rows.team_facts(item.team, palette, now) if item.team else []:
        facts.add_row(label, value)
    if item.failure is not None:
        facts.add_row("Failing", Text(f"{item.failure.code}: {item.failure.message}", palette.bad))
    if item.damaged:
        found = display.visible(damage) if damage else "checking its spine…"
        facts.add_row("Damaged", Text(found, palette.bad))
    return Group(title, facts)


def _waits(item: HeinzelSummary, palette: Palette) -> Text:
    waits = rows.waits_on_user(item)
    if not waits:
        return Text("nothing", style="dim")
    hints = {
        "contract": "Enter, then a",
        "draft": "F4 to review",
        "question": "Enter, then y",
        "amendment": "Enter, then v",
    }
    return Text(", ".join(f"{what} ({hints[what]})" for what in waits), style=palette.warn)


def _last_turn(item: HeinzelSummary, now: datetime, palette: Palette) -> Text:
    if item.queued:
        return Text(display.queued(item.queued), style=palette.warn)
    if not item.last_turn_at:
        return Text("none yet", style="dim")
    when = display.ago(item.last_turn_at, now, exact=False)
    if item.state == "awake" and not item.last_disposition:
        if item.interrupted:
            return Text(f"interrupted, started {when}; resumes when it next runs", palette.warn)
        return Text(f"running, started {when}", style=palette.ok)
    what = item.last_disposition or "turn"
    cause = f" ({item.last_cause})" if item.last_cause else ""
    style = palette.bad if what in ("failed", "abandoned") else Style()
    return Text(f"{what}{cause} {when}", style=style)
