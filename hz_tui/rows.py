"""The home table's model: what each column shows for a heinzel, how it filters and sorts.

Kept apart from the widget so the rules (which words a filter matches, what
"waits on you" means, how a state sorts) read in one place and are tested
without a screen. A cell carries the value it sorts by, so a table sorts
by meaning (state order, newest first, cost) rather than by the text shown.
The page tables (``DataTable``) show ``Cell``s, rich ``Text``, as they are;
the home table draws ``RowCell``s (its text, style and sort value only: a
home of hundreds builds thousands at start) into its cached row strips.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from rich.style import Style
from rich.text import Text
from textual.color import Color, ColorParseError

from hz_kernel.overview import HeinzelSummary, TeamView
from hz_tui import display

#: The style of a cell with none of its own (one instance: a home of hundreds of rows builds
#: thousands of cells).
PLAIN = Style()


class Cell(Text):
    """One table cell: styled text plus the value it sorts by."""

    def __init__(self, text: str, style: Style | str = "", *, order: object = None) -> None:
        super().__init__(text, style=style, no_wrap=True, overflow="ellipsis", end="")
        self.order = order if order is not None else text.lower()

    @property
    def signature(self) -> tuple[str, str, object]:
        """What decides whether a redraw is needed: text, style and sort value."""
        return (self.plain, str(self.style), self.order)


class RowCell:
    """One cell of the home table: its text (safe to draw), style and the value it sorts by;
    ``kept``: how many of its last characters stay when the column cuts it (a team mark)."""

    __slots__ = ("kept", "order", "plain", "style")

    def __init__(
        self, text: str, style: Style = PLAIN, *, order: object = None, kept: int = 0
    ) -> None:
        self.plain = display.visible(text)
        self.style = style
        self.order = order if order is not None else text.lower()
        self.kept = kept

    @property
    def signature(self) -> tuple[str, Style, object, int]:
        """What decides whether a redraw is needed: text, style, sort value and kept tail."""
        return (self.plain, self.style, self.order, self.kept)

    def as_text(self) -> Text:
        return Text(self.plain, style=self.style, end="")


@dataclass(frozen=True)
class Palette:
    """The few styles the table uses, resolved from the current theme."""

    ok: Style = field(default_factory=Style)
    warn: Style = field(default_factory=Style)
    bad: Style = field(default_factory=Style)
    accent: Style = field(default_factory=Style)
    muted: Style = field(default_factory=lambda: Style(dim=True))

    @classmethod
    def from_theme(cls, variables: Mapping[str, str]) -> Palette:
        """Resolve semantic colours from a Textual theme's variables (ANSI names included)."""

        def colour(name: str) -> Style:
            try:
                return Style(color=Color.parse(variables[name]).rich_color)
            except (KeyError, ColorParseError):
                return Style()

        return cls(
            ok=colour("success"),
            warn=colour("warning"),
            bad=colour("error"),
            accent=colour("accent"),
        )


@dataclass(frozen=True)
class ColumnSpec:
    key: str
    label: str
    narrow: int
    wide: int


#: What the last-turn cell says of a running or queued turn while the daemon is lost.
NOT_KNOWN = "not known now"

#: The home table's columns; ``name`` takes whatever width is left.
COLUMNS: tuple[ColumnSpec, ...] = (
    ColumnSpec("name", "Name", 0, 0),
    ColumnSpec("state", "State", 8, 9),
    ColumnSpec("contract", "Contract", 9, 20),
    ColumnSpec("next_due", "Due", 7, 10),
    ColumnSpec("last_turn", "Last turn", 14, 20),
    ColumnSpec("waits", "Waits", 6, 20),
    ColumnSpec("cost", "Today", 6, 9),
)
COLUMN_KEYS = tuple(c.key for c in COLUMNS)
WIDE_FROM = 116
NAME_MIN = 14
NAME_MAX = 24
#: The columns whose text gets cut, in the order they get spare width back.
GROWING = ("name", "last_turn", "waits", "contract")
#: The most a growing column asks for when the table yields its spare width to what is beside it.
GROWN_MAX = 40
#: The columns that give way, in that order, when the table is narrower than its columns'
#: least widths (a narrowed region, a scrollbar): each is cut (with ``…``) down to ``CUT_MIN``.
SHRINKING = ("contract", "waits", "last_turn", "next_due", "state", "name", "cost")
CUT_MIN = 4


def table_min_width(padding: int) -> int:
    """How wide a table must be to show every column at its narrow width (the name at its
    least), the outer edges' padding aside."""
    return sum(c.narrow for c in COLUMNS) + NAME_MIN + 2 * padding * (len(COLUMNS) - 1)


def column_widths(
    available: int, padding: int, wanted: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Widths for a table ``available`` cells wide.

    Fixed columns take their narrow or wide width and the name at least
    ``NAME_MIN``; what is left goes to the columns whose longest text
    (``wanted``; a name gets ``NAME_MAX`` in any case) would be cut, in
    ``GROWING`` order, each up to ``GROWN_MAX``. A column still cut then
    gets the width the other growing columns' texts leave unused, beyond
    ``GROWN_MAX`` too; the rest goes to the contract. Narrower than every
    column's least, the columns give way in ``SHRINKING`` order (after the
    last one's outer padding): they are cut, never pushed past the edge.
    """
    wide = available >= WIDE_FROM
    widths = {c.key: (c.wide if wide else c.narrow) for c in COLUMNS}
    widths["name"] = NAME_MIN
    rest = available - sum(widths.values()) - 2 * padding * len(COLUMNS)
    if rest < 0:
        return _shrunk(widths, -rest - padding)
    want = {key: (wanted or {}).get(key, 0) for key in GROWING}
    asked = want | {"name": max(NAME_MAX, want["name"])}
    for key in GROWING:
        more = min(rest, max(0, min(asked[key], GROWN_MAX) - widths[key]))
        widths[key] += more
        rest -= more
    rest += _spared(widths, want, rest)
    for key in GROWING:
        more = min(rest, max(0, want[key] - widths[key]))
        widths[key] += more
        rest -= more
    widths["contract"] += rest
    return widths


def natural_width(padding: int, wanted: Mapping[str, int]) -> int:
    """How wide the table is when no text is cut: every column at its wide width or its
    longest text (``wanted``), whichever is more, each growing column at most
    ``GROWN_MAX`` (a long report is cut rather than squeezing what stands beside it)."""
    widths = {c.key: c.wide for c in COLUMNS}
    widths["name"] = max(NAME_MIN, min(wanted.get("name", 0), GROWN_MAX))
    for key in GROWING:
        widths[key] = max(widths[key], min(wanted.get(key, 0), GROWN_MAX))
    return sum(widths.values()) + 2 * padding * len(COLUMNS)


def _spared(widths: dict[str, int], want: Mapping[str, int], rest: int) -> int:
    """Take back from the growing columns the width their text leaves unused (never below a
    column's least width or its label with the sort mark), as much as the cut ones need
    beyond ``rest``; how much was taken."""
    short = sum(max(0, want[key] - widths[key]) for key in GROWING) - rest
    taken = 0
    for spec in reversed(COLUMNS):
        if spec.key in GROWING and taken < short:
            least = NAME_MIN if spec.key == "name" else spec.narrow
            floor = max(least, len(spec.label) + 2, want[spec.key])
            spare = min(short - taken, max(0, widths[spec.key] - floor))
            widths[spec.key] -= spare
            taken += spare
    return taken


def _shrunk(widths: dict[str, int], over: int) -> dict[str, int]:
    """``widths`` made ``over`` cells narrower, column by column in ``SHRINKING`` order."""
    for key in SHRINKING:
        less = min(max(0, over), max(0, widths[key] - CUT_MIN))
        widths[key] -= less
        over -= less
    return widths


def waits_on_user(item: HeinzelSummary) -> list[str]:
    """What this heinzel is waiting on the user for, in the order they are usually handled."""
    waiting = []
    if item.state == "proposed":
        waiting.append("contract")
    if item.pending_draft:
        waiting.append("draft")
    if item.pending_question:
        waiting.append("question")
    if item.pending_amendment:
        waiting.append("amendment")
    return waiting


def filter_terms(text: str) -> list[str]:
    """A filter is words; a heinzel matches when every word is in one of its fields."""
    return [word for word in text.lower().split() if word]


def matches(item: HeinzelSummary, terms: list[str]) -> bool:
    if not terms:
        return True
    fields = [item.name, item.state, item.contract_name or "", *item.assets]
    if item.damaged:
        fields.append("damaged")
    if item.team is not None:
        fields += ["team", team_mark(item)]
    haystack = "\n".join(fields).lower()
    return all(term in haystack for term in terms)


#: The row fields written by others (a name given with file access, a report, a question):
#: every screen shows them, so they are made safe to draw once, as the rows arrive.
_FREE_TEXT = ("name", "contract_name", "last_report", "pending_question", "last_cause")


def drawable(item: HeinzelSummary) -> HeinzelSummary:
    """``item`` with its free text safe to draw (``display.visible``): escape sequences in a
    name written into the index by hand reached the terminal raw from the preview. The same
    row when nothing needed it (a copy only for the rare row that does)."""
    changed: dict[str, object] = {
        field: display.visible(value)
        for field in _FREE_TEXT
        if isinstance(value := getattr(item, field), str) and display.visible(value) != value
    }
    assets = [display.visible(asset) for asset in item.assets]
    if assets != item.assets:
        changed["assets"] = assets
    return item.model_copy(update=changed) if changed else item


def cells(
    item: HeinzelSummary, palette: Palette, now: datetime, *, stale: bool = False
) -> dict[str, RowCell]:
    """Every column's cell for one heinzel; ``stale``: the daemon is lost (reconnecting), so
    whether a turn runs or waits now is not known."""
    state_style = {
        "awake": palette.ok,
        "waiting": palette.warn,
        "paused": palette.muted,
        "retired": palette.muted,
        "proposed": palette.accent,
    }.get(item.state, PLAIN)
    state = (
        RowCell("damaged", palette.bad, order=-1)
        if item.damaged
        else RowCell(item.state, state_style, order=display.STATE_ORDER.get(item.state, 9))
    )
    if item.contract_version is None:
        contract = RowCell("—", palette.muted, order=("", 0))
    else:
        label = f"{item.contract_name or 'contract'} v{item.contract_version}"
        contract = RowCell(label, order=(item.contract_name or "", item.contract_version))
    last_turn = _last_turn(item, palette, now, stale)
    waits = waits_on_user(item)
    name_style = palette.bad if item.damaged else PLAIN
    if item.team is not None and item.team.error_code and not item.damaged:
        name_style = palette.warn
    mark = team_mark(item)
    return {
        "name": RowCell(item.name + mark, name_style, order=item.name.lower(), kept=len(mark)),
        "state": state,
        "contract": contract,
        "next_due": RowCell(display.due(item.next_due, now), order=item.next_due or "~"),
        "last_turn": last_turn,
        "waits": RowCell(", ".join(waits), palette.warn if waits else PLAIN, order=-len(waits)),
        "cost": RowCell(display.usd(item.cost_today), order=-item.cost_today),
    }


def team_mark(item: HeinzelSummary) -> str:
    """A team heinzel's mark after its name: ``@`` and who runs it (``here``, the holder's
    handle, ``free``, ``?`` before a lease is seen), then `` !`` when its last team work
    failed; nothing for a local heinzel. Characters, so it reads without colour too."""
    team = item.team
    if team is None:
        return ""
    return f" @{team.who or '?'}" + (" !" if team.error_code else "")


def team_facts(team: TeamView, palette: Palette, now: datetime) -> list[tuple[str, str | Text]]:
    """A team heinzel's lease as this home last saw it, its repository and role here, and its
    last team error (in the error colour, and named so without colour too)."""
    token = f" · token {team.token}" if team.token is not None else ""
    if team.holder is None:
        lease = "no lease found" if team.seen_at else "no lease seen yet"
    elif team.free == "released":
        lease = f"free since {display.clock(team.expires)} (released by {team.holder}){token}"
    elif team.free == "expired":
        lease = f"expired {display.clock(team.expires)} (held by {team.holder}){token}"
    else:
        holder = "this home" if team.held_here else team.holder
        lease = f"held by {holder} until {display.clock(team.expires)}{token}"
    if team.seen_at:
        lease += f" · checked {display.ago(team.seen_at, now, exact=False)}"
    role = f" ({team.role} here)" if team.role else ""
    repo = f"{display.visible(team.repo or '—')}{role}"
    facts: list[tuple[str, str | Text]] = [("Team", lease), ("Team repo", repo)]
    if team.error:
        facts.append(("Team error", Text(display.visible(team.error), style=palette.bad)))
    return facts


def live_turn(item: HeinzelSummary) -> bool:
    """Whether the row says a turn of it runs or waits now (what a lost daemon leaves unknown)."""
    return bool(item.queued) or (item.state == "awake" and not item.last_disposition)


def _last_turn(item: HeinzelSummary, palette: Palette, now: datetime, stale: bool) -> RowCell:
    if stale and live_turn(item):
        # The lost daemon's "running 18s" or "queued: capacity" is no longer known to be true.
        return RowCell(NOT_KNOWN, palette.muted, order=(0, float("-inf")))
    if item.queued:
        # What it waits for now says more than how its last turn went; it sorts first.
        return RowCell(display.queued(item.queued), palette.warn, order=(0, float("-inf")))
    if not item.last_turn_at:
        return RowCell("—", palette.muted, order=(1, ()))
    stamp = display.parse_time(item.last_turn_at)
    # Ascending order lists the newest turn first.
    newest_first = (0, -stamp.timestamp() if stamp else 0.0)
    when = display.ago(item.last_turn_at, now, exact=False)
    if item.state == "awake" and not item.last_disposition:
        started = stamp or now
        elapsed = display.span((now - started).total_seconds(), exact=False)
        if item.interrupted:
            return RowCell(f"interrupted {elapsed}", palette.warn, order=newest_first)
        return RowCell(f"running {elapsed}", palette.ok, order=newest_first)
    disposition = item.last_disposition or item.last_cause or "turn"
    style = palette.bad if disposition in ("failed", "abandoned") else PLAIN
    return RowCell(f"{disposition} {when}", style, order=newest_first)
