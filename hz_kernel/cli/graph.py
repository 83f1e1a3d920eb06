"""``hz graph`` (who reads and writes what, declared and observed apart) and the action log
(``hz heinzel actions``, ``hz heinzel report``): ``docs/graph.md``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from hz_kernel import operations as ops
from hz_kernel.cli.output import emit_json
from hz_kernel.cli.parser import writes
from hz_kernel.client import KernelClient
from hz_kernel.errors import echoed

if TYPE_CHECKING:
    from hz_kernel import api

_VERBS = {"reads": "reads", "writes": "writes", "depends_on": "needs"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("graph", help="who reads and writes what: declared by contracts, observed")
    p.add_argument("--heinzel", help="only this heinzel's edges (a name or id)")
    p.add_argument("--asset", help="only the edges that touch this asset (doc:path#anchor)")
    p.add_argument("--source", help="only the edges that touch this source (git:/repo, …)")
    p.add_argument("--json", action="store_true", help="the graph as JSON (docs/graph.md)")
    p.set_defaults(run=cmd_graph)


async def cmd_graph(client: KernelClient, args: argparse.Namespace) -> int:
    request = ops.GraphRequest(heinzel=args.heinzel, asset=args.asset, source=args.source)
    graph = await client.call(ops.GRAPH, request)
    if args.json:
        emit_json(graph.model_dump(mode="json"))
        return 0
    sys.stdout.write(render(graph))
    return 0


def render(graph: api.Graph) -> str:
    """Each heinzel with what it reads, writes and needs, one edge a line."""
    if not graph.edges:
        return "nothing reads or writes anything here yet\n"
    labels = {node.id: _label(node) for node in graph.nodes}
    lines: list[str] = []
    for node in graph.nodes:
        if node.kind != "heinzel":
            continue
        mine = [e for e in graph.edges if e.source == node.id]
        if not mine:
            continue
        elsewhere = node.heinzel is None and node.team_id is not None
        name = echoed(node.label)
        lines.append(f"{name}  (team: runs on another home)" if elsewhere else name)
        width = max(len(labels[e.target]) for e in mine)
        for edge in mine:
            target = labels[edge.target]
            via = f" via {echoed(edge.via)}" if edge.via else ""
            known = _provenance(edge, elsewhere)
            lines.append(f"  {_VERBS[edge.relation]:<6} {target:<{width}}  {known}{via}")
    return "\n".join(lines) + "\n"


def _label(node: api.GraphNode) -> str:
    """The node's label with control and format characters escaped (a document's name is
    anyone's words, and U+202E or a newline would forge the lines after it)."""
    label = echoed(node.label)
    return f"{label} (not readable here)" if node.readable is False else label


def _provenance(edge: api.GraphEdge, elsewhere: bool) -> str:
    counted = "draft" if edge.relation == "writes" else "turn"
    seen = f"observed in {edge.turns} {counted}{'s' if edge.turns != 1 else ''}"
    if edge.team_turns:
        seen += (
            " on hz/state" if edge.team_turns == edge.turns else f" ({edge.team_turns} on hz/state)"
        )
    if elsewhere:
        return seen
    if edge.declared and edge.observed:
        return f"declared · {seen}" if edge.turns else "declared · observed"
    if edge.declared:
        return "declared · not observed yet"
    return f"observed only ({seen}; the contract does not say so)"


def register_heinzel(hsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``hz heinzel report`` and ``hz heinzel actions``."""
    p = hsub.add_parser("report", help='add a line to a heinzel\'s action log: NAME "line"')
    p.add_argument("name")
    p.add_argument("line")
    p.add_argument(
        "--request-id", help="an id of your own: retried with it, the line is added once"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_report)

    p = hsub.add_parser("actions", help="a heinzel's action log: what it read, wrote, reported")
    p.add_argument("name")
    p.add_argument("-n", type=int, default=50, dest="limit", help="the newest N entries")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_actions, flags={"limit": "-n"})


@writes
async def cmd_report(client: KernelClient, args: argparse.Namespace) -> int:
    request = ops.ReportRequest(ref=args.name, line=args.line, request_id=args.request_id)
    decided = await client.call(ops.REPORT, request)
    if args.json:
        emit_json(decided)
    else:
        sys.stdout.write(f"{args.name}: noted in the action log\n")
    return 0


async def cmd_actions(client: KernelClient, args: argparse.Namespace) -> int:
    log = await client.call(ops.ACTIONS, ops.ActionsRequest(ref=args.name, limit=args.limit))
    if args.json:
        emit_json(log.model_dump(mode="json"))
        return 0
    if not log.items:
        sys.stdout.write(f"{log.name} has no actions yet\n")
    for entry in log.items:
        sys.stdout.write(_action_line(entry) + "\n")
    return 0


def _action_line(entry: api.ActionEntry) -> str:
    when = entry.at[:16].replace("T", " ")
    if entry.what == "reported":
        return f"{when}  reported by {entry.by}: {entry.line}"
    mark = f"  {entry.fingerprint[:12]}" if entry.fingerprint else ""
    if entry.what == "handed_off" and entry.interrupted:
        return f"{when}  handed off to {entry.name} (interrupted)"
    if entry.what == "handed_off":
        cost = f", {entry.usd:.4f} USD" if entry.usd is not None else ""
        return f"{when}  handed off to {entry.name} (exit {entry.exit_status}{cost}){mark}"
    if entry.what == "wrote":
        return f"{when}  wrote {entry.ref}{mark}"
    what = f"{entry.name} ({entry.ref})" if entry.ref else str(entry.name)
    return f"{when}  read  {what}{mark}"
