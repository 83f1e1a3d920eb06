"""F6: the graph page, who reads and writes what, with the contract's word and the record's apart.

One row an edge, grouped by heinzel: what it reads (sources and other
heinzels' documents), what it writes, whose output it needs. "Known from"
says whether the contract declares the edge, the spine shows it happened,
or both; an edge observed only (the contract does not say so) is marked,
and one declared but never observed is dimmed. The page asks the kernel
for the graph (the operations table's ``graph``, as ``hz graph`` does), so
it reads the same locally, on a daemon and remotely.

``f`` narrows the page to the highlighted row's heinzel and its neighbours
(and back to everything); ``enter`` opens that heinzel's page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from hz_kernel import api
from hz_kernel import operations as ops
from hz_kernel.errors import HzError
from hz_tui import display, keymap
from hz_tui.link import NotConnected
from hz_tui.rows import Cell, Palette
from hz_tui.watcher import SpineBatch
from hz_tui.widgets.key_bar import KeyBar

if TYPE_CHECKING:
    from hz_tui.app import CockpitApp

#: Spine kinds after which the graph may read differently.
CHANGES_THE_GRAPH = frozenset(
    {"draft.placed", "turn.finished", "contract.approved", "heinzel.created", "heinzel.renamed"}
)
VERBS = {"reads": "reads", "writes": "writes", "depends_on": "needs"}
#: Fixed columns; "What" takes the width they leave (at least ``WHAT_MIN``).
COLUMNS = (
    ("heinzel", "Heinzel", 16),
    ("verb", "", 6),
    ("what", "What", 0),
    ("known", "Known from", 19),
    ("turns", "Turns", 5),
)
WHAT_MIN = 16
EMPTY = (
    "Nothing reads or writes anything here yet. A heinzel's contract declares what it "
    "reads and the document it writes; each turn then records what it read and placed."
)


def known_from(edge: api.GraphEdge) -> str:
    """The edge's provenance in a few words: declared, observed, or both; an edge known only
    from the team's receipts (another home's turns) says so."""
    if edge.team_turns and edge.team_turns == edge.turns and not edge.declared:
        return "from hz/state"
    if edge.declared and edge.observed:
        return "declared · observed"
    if edge.declared:
        return "declared only"
    return "observed only"


def summary(graph: api.Graph, focus: str | None) -> str:
    """One line: how many of each node and edge, and what the page is narrowed to."""
    counts = {kind: 0 for kind in ("heinzel", "source", "asset")}
    for node in graph.nodes:
        counts[node.kind] += 1
    elsewhere = sum(1 for n in graph.nodes if n.kind == "heinzel" and n.heinzel is None)
    only_observed = sum(1 for e in graph.edges if e.observed and not e.declared)
    declared_only = sum(1 for e in graph.edges if e.declared and not e.observed)
    parts = [
        _count(counts["heinzel"], "heinzel")
        + (f" ({elsewhere} on other homes)" if elsewhere else ""),
        _count(counts["source"], "source"),
        _count(counts["asset"], "document"),
        _count(len(graph.edges), "edge"),
    ]
    if only_observed:
        parts.append(f"{only_observed} observed only")
    if declared_only:
        parts.append(f"{declared_only} declared only")
    line = " · ".join(parts)
    if focus is not None:
        line += f"  —  only {focus} and its neighbours (z: everything)"
    return line


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


class GraphTable(DataTable[Text]):
    """The edges, one a row. The "What" column is as wide as its longest line, up to the width
    the other columns leave; a path too long for that goes on over more lines, broken after
    a ``/``."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self.graph = api.Graph()
        self.room = WHAT_MIN
        """The width the other columns leave for "What"."""
        self.what_width = 0
        self.node_of_row: list[api.GraphNode] = []
        """Each row's heinzel node: one only other homes run has no id here (no page)."""

    def on_resize(self, event: events.Resize) -> None:
        fixed = sum(width for _, _, width in COLUMNS) + 2 * self.cell_padding * len(COLUMNS)
        scrollbar = self.styles.scrollbar_size_vertical  # kept free: rows may outgrow the page
        self.room = max(WHAT_MIN, event.size.width - fixed - scrollbar - 2)
        self.show(self.graph)

    def _widest(self, graph: api.Graph) -> int:
        labels = [len(node.label) for node in graph.nodes]
        vias = [len(edge.via) + 4 for edge in graph.edges if edge.via]
        return max([WHAT_MIN, *labels, *vias])

    def show(self, graph: api.Graph) -> None:
        """Fill the table: each heinzel's edges under its name, reads before writes. The
        cursor stays with the heinzel it was on (a narrower or wider graph, a resize)."""
        was_on = None if (on := self.highlighted_node()) is None else on.id
        self.graph = graph
        width = min(self.room, self._widest(graph))
        if width != self.what_width or not self.columns:
            self.what_width = width
            self.clear(columns=True)
            for key, label, fixed in COLUMNS:
                self.add_column(label, key=key, width=fixed or width)
        palette = Palette.from_theme(self.app.theme_variables)
        labels = {node.id: _label(node) for node in graph.nodes}
        order = {"reads": 0, "writes": 1, "depends_on": 2}
        self.clear()
        self.node_of_row = []
        for node in graph.nodes:
            if node.kind != "heinzel":
                continue
            mine = sorted(
                (e for e in graph.edges if e.source == node.id),
                key=lambda e: (order[e.relation], labels.get(e.target, e.target)),
            )
            for n, edge in enumerate(mine):
                what = display.visible(labels.get(edge.target, edge.target))
                lines = display.path_lines(what, self.what_width)
                if edge.via:
                    via = display.visible(f"via {edge.via}")
                    lines += display.path_lines(via, self.what_width)
                style = ""
                if edge.observed and not edge.declared:
                    style = palette.warn
                elif not edge.observed:
                    style = palette.muted
                self.add_row(
                    Cell(display.visible(node.label) if n == 0 else "", "bold"),
                    Cell(VERBS[edge.relation]),
                    Text("\n".join(lines), style=style, no_wrap=True, overflow="ellipsis"),
                    Cell(known_from(edge), style),
                    Cell(str(edge.turns) if edge.turns else "", style),
                    height=len(lines),
                )
                self.node_of_row.append(node)
        rows = [n.id for n in self.node_of_row]
        if was_on in rows:
            self.move_cursor(row=rows.index(was_on), scroll=True)

    def highlighted_node(self) -> api.GraphNode | None:
        """The heinzel node of the highlighted row's group (None on an empty table)."""
        row = self.cursor_row
        if 0 <= row < len(self.node_of_row):
            return self.node_of_row[row]
        return None


def _label(node: api.GraphNode) -> str:
    """A node's label, an asset this home cannot read marked as ``hz graph`` marks it."""
    return f"{node.label} (not readable here)" if node.readable is False else node.label


class GraphScreen(Screen[None]):
    """The home's graph, or one heinzel's neighbourhood in it."""

    CSS_PATH = "graph.tcss"
    BINDINGS = keymap.GRAPH

    def __init__(self, focus: str | None = None) -> None:
        super().__init__()
        self.focus_on = focus
        """The heinzel (id or name) the page is narrowed to, or None for every edge."""
        self.focus_label: str | None = None

    @property
    def cockpit(self) -> CockpitApp:
        return cast("CockpitApp", self.app)

    def compose(self) -> ComposeResult:
        yield Header(icon="hz")
        yield Static(id="graph-summary")
        yield GraphTable(id="graph-edges")
        yield Static(id="graph-empty")
        yield KeyBar()

    def on_mount(self) -> None:
        self.title = "hz · graph"
        self.cockpit.spines_moved.subscribe(self, self.on_spines)
        self.load()

    def on_spines(self, batch: SpineBatch) -> None:
        """What turns read and wrote changes the graph: ask again when one placed a draft,
        finished or got a new contract."""
        kinds = {line.kind for lines in batch.lines.values() for line in lines}
        if kinds & CHANGES_THE_GRAPH or batch.gone:
            self.load()

    def on_screen_resume(self) -> None:
        self.load()

    @work(exclusive=True, group="graph-page")
    async def load(self) -> None:
        request = ops.GraphRequest(heinzel=self.focus_on)
        try:
            graph = await self.cockpit.client.call(ops.GRAPH, request)
        except NotConnected:
            self._say("Not connected: the graph comes back once the cockpit is attached again.")
            return
        except HzError as exc:
            self._say(exc.one_line())
            return
        if not self.is_attached:
            return
        self.focus_label = (
            None
            if self.focus_on is None
            else next(
                (
                    n.label
                    for n in graph.nodes
                    if n.kind == "heinzel" and self.focus_on in (n.heinzel, n.label, n.team_id)
                ),
                self.focus_on,
            )
        )
        self.query_one("#graph-summary", Static).update(summary(graph, self.focus_label))
        self.query_one(GraphTable).show(graph)
        empty = self.query_one("#graph-empty", Static)
        empty.update(EMPTY if not graph.edges else "")
        empty.display = not graph.edges

    def _say(self, line: str) -> None:
        if self.is_attached:
            self.query_one("#graph-summary", Static).update(Text(line, style="bold"))

    def action_refresh(self) -> None:
        self.load()

    def action_toggle_focus(self) -> None:
        if self.focus_on is not None:
            self.focus_on = None
        else:
            node = self.query_one(GraphTable).highlighted_node()
            if node is None:
                return
            # One only other homes run goes by its team id, as hz graph --heinzel takes it.
            self.focus_on = node.heinzel or node.team_id or node.label
        self.load()

    def action_open(self) -> None:
        node = self.query_one(GraphTable).highlighted_node()
        if node is None:
            return
        if node.heinzel is None:
            self.notify(
                f"{display.visible(node.label)} runs on another home: it has no page here.",
                title="Team heinzel",
            )
            return
        self.cockpit.open_heinzel(node.heinzel)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_back(self) -> None:
        self.dismiss()
