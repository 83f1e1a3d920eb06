"""The map of who reads and writes what: declared by contracts, observed in spines.

A heinzel's contract declares what it reads (its inputs) and where it may
write (its ``publishes`` assets); its spine shows what its turns did read
(the inputs its gather steps recorded, by name, resolved through the
contract version each turn ran under) and write (``draft.placed``). The two
are kept apart on every edge, so a reader sees both what was promised and
what happened. A heinzel that reads an asset another one writes, or another
one's approved output, depends on it. A team heinzel's drafts that another
home placed are known from the receipts on the team repository's ``hz/state``:
they count as observed, and apart (``team_turns``).

Everything here is a pure function of those facts; ``commands.graph`` reads
them from the home.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from hz_kernel import api
from hz_kernel.contracts.model import CompiledContract, InputSpec


@dataclass
class Seen:
    """How often something was observed, and in which turn last (turn ids sort by time)."""

    turns: int = 0
    last_turn: str | None = None

    def add(self, turn: str | None) -> None:
        self.turns += 1
        if turn is not None and (self.last_turn is None or turn > self.last_turn):
            self.last_turn = turn


@dataclass
class HeinzelFacts:
    """What the graph needs of one heinzel: its contract now and what its spine shows."""

    id: str | None
    """Its id on this home; None for a team heinzel only another home has."""
    name: str
    contract: CompiledContract | None
    reads: dict[str, Seen] = field(default_factory=dict)
    """Observed reads, by the node they read (``input_node``)."""
    writes: dict[str, Seen] = field(default_factory=dict)
    """Observed drafts placed, by asset node."""
    turns: set[str] = field(default_factory=set)
    """The turns this home's spine has."""
    team_id: str | None = None
    team_writes: dict[str, Seen] = field(default_factory=dict)
    """Drafts placed in turns another home ran, by asset node (from ``hz/state``)."""


def heinzel_node(name: str) -> str:
    return f"heinzel:{name}"


def asset_node(ref: str) -> str:
    return f"asset:{ref}"


def input_node(spec: InputSpec) -> tuple[str, str | None]:
    """The node an input reads, and for another heinzel's output, which output (``via``)."""
    args = spec.args
    if spec.source == "heinzel":
        return heinzel_node(str(args["heinzel"])), str(args["output"])
    if spec.source == "document":
        anchor = args.get("anchor")
        return asset_node(f"doc:{args['path']}" + (f"#{anchor}" if anchor else "")), None
    if spec.source == "files":
        root = args.get("root")
        return f"source:files:{f'{root}/' if root else ''}{args['pattern']}", None
    if spec.source == "git":
        branch = args.get("branch")
        return f"source:git:{args['repo']}" + (f"@{branch}" if branch else ""), None
    if spec.source == "http":
        return f"source:http:{args['url']}", None
    return f"source:shell:{args['command']}", None


@dataclass
class _Edge:
    source: str
    target: str
    relation: str
    via: str | None = None
    declared: bool = False
    seen: Seen | None = None
    team: Seen | None = None

    @property
    def observed(self) -> bool:
        return self.seen is not None or self.team is not None

    def model(self) -> api.GraphEdge:
        both = [s for s in (self.seen, self.team) if s is not None]
        lasts = [s.last_turn for s in both if s.last_turn is not None]
        return api.GraphEdge(
            source=self.source,
            target=self.target,
            relation=self.relation,  # type: ignore[arg-type]
            declared=self.declared,
            observed=self.observed,
            turns=sum(s.turns for s in both),
            last_turn=max(lasts, default=None),
            via=self.via,
            team_turns=self.team.turns if self.team else 0,
        )


class _Edges:
    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str, str, str | None], _Edge] = {}

    def get(self, source: str, target: str, relation: str, via: str | None = None) -> _Edge:
        key = (source, target, relation, via)
        edge = self.by_key.get(key)
        if edge is None:
            edge = self.by_key[key] = _Edge(source, target, relation, via)
        return edge

    def of(self, relation: str) -> list[_Edge]:
        return [e for e in self.by_key.values() if e.relation == relation]


def build_graph(
    heinzels: Iterable[HeinzelFacts],
    *,
    readable: Callable[[str], bool],
    renamed: Mapping[str, str] | None = None,
) -> api.Graph:
    """Every heinzel's reads and writes, and who depends on whom through them; ``readable``
    says whether this home can read an asset's document (by its ``doc:`` ref), ``renamed``
    what a name no heinzel has now was renamed to (a reader may still name the old one)."""
    facts = sorted(heinzels, key=lambda h: (h.name, h.id or ""))
    now_named = {heinzel_node(old): heinzel_node(new) for old, new in (renamed or {}).items()}
    edges = _Edges()
    for heinzel in facts:
        me = heinzel_node(heinzel.name)
        declared = heinzel.contract.inputs.values() if heinzel.contract else ()
        for spec in declared:
            node, via = input_node(spec)
            relation = "depends_on" if via is not None else "reads"
            edges.get(me, now_named.get(node, node), relation, via).declared = True
        for asset in heinzel.contract.assets if heinzel.contract else ():
            edges.get(me, asset_node(asset), "writes").declared = True
        for node, seen in heinzel.reads.items():
            via = _output_of(heinzel.contract, node)
            relation = "depends_on" if node.startswith("heinzel:") else "reads"
            edges.get(me, now_named.get(node, node), relation, via).seen = seen
        for node, seen in heinzel.writes.items():
            edges.get(me, node, "writes").seen = seen
        for node, seen in heinzel.team_writes.items():
            edges.get(me, node, "writes").team = seen
    _through_assets(edges)
    nodes = _nodes(edges, facts, readable)
    ordered = sorted(edges.by_key.values(), key=lambda e: (e.source, e.relation, e.target, e.via))
    return api.Graph(nodes=nodes, edges=[e.model() for e in ordered])


def _output_of(contract: CompiledContract | None, node: str) -> str | None:
    """The output an observed read of another heinzel took, as its contract names it."""
    if contract is None or not node.startswith("heinzel:"):
        return None
    for spec in contract.inputs.values():
        target, via = input_node(spec)
        if target == node:
            return via
    return None


def _through_assets(edges: _Edges) -> None:
    """A heinzel that reads an asset another writes depends on that one, via the asset."""
    writers: dict[str, list[_Edge]] = {}
    for edge in edges.of("writes"):
        writers.setdefault(edge.target, []).append(edge)
    for read in edges.of("reads"):
        for write in writers.get(read.target, []):
            if write.source == read.source:
                continue
            via = read.target.removeprefix("asset:")
            dependency = edges.get(read.source, write.source, "depends_on", via)
            dependency.declared = read.declared and write.declared
            if read.seen is not None and write.observed:
                dependency.seen = Seen(read.seen.turns, read.seen.last_turn)


def _nodes(
    edges: _Edges, facts: list[HeinzelFacts], readable: Callable[[str], bool]
) -> list[api.GraphNode]:
    seen: dict[str, api.GraphNode] = {}
    for heinzel in facts:
        node = heinzel_node(heinzel.name)
        seen[node] = api.GraphNode(
            id=node, kind="heinzel", label=heinzel.name, heinzel=heinzel.id, team_id=heinzel.team_id
        )
    for edge in edges.by_key.values():
        for node in (edge.source, edge.target):
            if node not in seen:
                kind, _, label = node.partition(":")
                seen[node] = api.GraphNode(
                    id=node,
                    kind=kind,  # type: ignore[arg-type]
                    label=label,
                    readable=readable(label) if kind == "asset" else None,
                )
    order = {"heinzel": 0, "source": 1, "asset": 2}
    return sorted(seen.values(), key=lambda n: (order[n.kind], n.id))


def focus(graph: api.Graph, nodes: set[str]) -> api.Graph:
    """Only the edges that touch one of ``nodes`` (a dependency through an asset touches the
    asset), and the nodes those edges join."""
    kept = [
        e
        for e in graph.edges
        if e.source in nodes or e.target in nodes or (e.via and asset_node(e.via) in nodes)
    ]
    wanted = nodes | {e.source for e in kept} | {e.target for e in kept}
    return api.Graph(nodes=[n for n in graph.nodes if n.id in wanted], edges=kept)
