"""``graph``: who reads and writes what, from the contracts and the spines of the home.

The contract each heinzel has now declares; its spine's turns observed
(``hz_kernel.graph``). A heinzel whose contract or spine cannot be read
still appears, with what could be read: one bad heinzel never hides the
others. With team heinzels or a ``[team] repo``, the drafts other homes
placed come from the receipts on ``hz/state`` as this home last fetched it
(every tick of a home with team heinzels fetches; the graph itself never
waits for the network). The files are read in a worker thread.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from hz_kernel import api
from hz_kernel.commands.team import TeamCommands, team_id
from hz_kernel.contracts.model import CompiledContract
from hz_kernel.contracts.versions import ContractVersions
from hz_kernel.errors import HzError, UsageError
from hz_kernel.graph import (
    HeinzelFacts,
    Seen,
    asset_node,
    build_graph,
    focus,
    heinzel_node,
    input_node,
)
from hz_kernel.store.scan import scan_file
from hz_kernel.store.spine import SPINE_NAME
from hz_kernel.team.receipts import AnyReceipt, DraftPlacedReceipt
from hz_kernel.team.state_branch import StateBranch


class GraphCommands(TeamCommands):
    """``graph``."""

    async def graph(
        self, *, heinzel: str | None = None, asset: str | None = None, source: str | None = None
    ) -> api.Graph:
        rows = await self.index.fetch(
            "heinzels", "SELECT id, name, contract_version FROM heinzels ORDER BY name, id"
        )
        wanted: set[str] = set()
        asked: dict[str, str] = {}
        if asset is not None:
            ref = asset if asset.startswith("doc:") else f"doc:{asset}"
            asked[asset_node(ref)] = asset
        if source is not None:
            asked[source if source.startswith("source:") else f"source:{source}"] = source
        facts = await asyncio.to_thread(
            lambda: [self._facts(row) for row in rows],
        )
        await self._team_facts(facts)
        names = {str(row["id"]): str(row["name"]) for row in rows}
        renamed = {old: names[id_] for old, id_ in self.index.former_names().items()}
        graph = await asyncio.to_thread(
            lambda: build_graph(facts, readable=self._readable, renamed=renamed)
        )
        known = {node.id for node in graph.nodes}
        if heinzel is not None:
            wanted.add(await self._heinzel_node(heinzel, graph))
        for node, spelled in asked.items():
            if node not in known:
                what = "asset" if node.startswith("asset:") else "source"
                raise UsageError(
                    "HZU010", f"no heinzel reads or writes this {what} (see hz graph)", spelled
                )
        wanted |= set(asked)
        return focus(graph, wanted) if wanted else graph

    async def _heinzel_node(self, ref: str, graph: api.Graph) -> str:
        """The node of the heinzel ``ref`` names: one of this home's, by name, id or a name it
        had before a rename, or one only other homes run, by its name or team id."""
        for node in graph.nodes:
            if (
                node.kind == "heinzel"
                and node.heinzel is None
                and ref in (node.label, node.team_id)
            ):
                return node.id
        return heinzel_node(str((await self.resolve(ref))["name"]))

    async def _team_facts(self, facts: list[HeinzelFacts]) -> None:
        """Add the drafts other homes placed for team heinzels (a heinzel only they have gets
        a node of its own, named when a contract here names it, else by its team id)."""
        members, _ = await self.team_members()
        repos = {m.repo for m in members} | set(filter(None, [self.home.settings.team.repo]))
        if not repos:
            return
        logs = await asyncio.to_thread(lambda: [self._cached_receipts(r) for r in sorted(repos)])
        local = {f.id: f for f in facts}
        by_team = {m.team_id: local[m.heinzel] for m in members if m.heinzel in local}
        for team, heinzel in by_team.items():
            heinzel.team_id = team
        names = {f.name for f in facts}
        upstreams = {
            team_id(str(spec.args["heinzel"])): str(spec.args["heinzel"])
            for f in facts
            if f.contract is not None
            for spec in f.contract.inputs.values()
            if spec.source == "heinzel"
        }
        for receipt in (r for log in logs for r in log):
            if not isinstance(receipt, DraftPlacedReceipt) or receipt.turn is None:
                continue
            heinzel = by_team.get(receipt.heinzel)
            if heinzel is None:
                name = upstreams.get(receipt.heinzel)
                label = name if name is not None and name not in names else receipt.heinzel
                heinzel = HeinzelFacts(id=None, name=label, contract=None, team_id=receipt.heinzel)
                by_team[receipt.heinzel] = heinzel
                facts.append(heinzel)
            if receipt.turn in heinzel.turns:
                continue
            node = asset_node(unquote(receipt.asset))
            heinzel.team_writes.setdefault(node, Seen()).add(receipt.turn)

    def _cached_receipts(self, repo: str) -> list[AnyReceipt]:
        try:
            return StateBranch(self.home.root, repo).cached_receipts().receipts
        except HzError:
            return []

    def _readable(self, ref: str) -> bool:
        """Whether the document is a file this home can read. A relative ref must stay inside
        the documents root (one climbing out with ``..`` is not readable here, whoever wrote
        it); an absolute one only a contract of this home can name (receipts are refused)."""
        documents = self.home.settings.documents
        root = Path(os.path.normpath(Path(documents.root).expanduser().absolute()))
        document = ref.removeprefix("doc:").partition("#")[0]
        path = Path(os.path.normpath(documents.resolve(document)))
        inside = Path(document).expanduser().is_absolute() or path.is_relative_to(root)
        return inside and path.is_file() and os.access(path, os.R_OK)

    def _facts(self, row: dict[str, Any]) -> HeinzelFacts:
        heinzel_dir = self.home.heinzel_dir(str(row["id"]))
        versions = ContractCache(heinzel_dir)
        facts = HeinzelFacts(
            id=str(row["id"]),
            name=str(row["name"]),
            contract=versions.get(row["contract_version"]),
        )
        try:
            events = scan_file(heinzel_dir / SPINE_NAME).events
        except (HzError, OSError):
            return facts
        version_of: dict[str, int] = {}
        for event in events:
            if event.kind == "turn.started" and event.turn:
                version_of[event.turn] = int(event.data.get("contract_version") or 0)
                facts.turns.add(event.turn)
            elif event.kind == "step.done" and event.data.get("step") == "gather":
                contract = versions.get(version_of.get(event.turn or ""))
                if contract is None:
                    continue
                for item in event.data.get("inputs") or []:
                    spec = contract.inputs.get(str(item.get("name")))
                    if spec is not None:
                        node, _ = input_node(spec)
                        facts.reads.setdefault(node, Seen()).add(event.turn)
            elif event.kind == "draft.placed":
                node = asset_node(str(event.data.get("asset")))
                facts.writes.setdefault(node, Seen()).add(event.turn)
        return facts


class ContractCache:
    """A heinzel's contract versions, each read once; an unreadable one is None."""

    def __init__(self, heinzel_dir: Path) -> None:
        self.store = ContractVersions(heinzel_dir)
        self.read: dict[int, CompiledContract | None] = {}

    def get(self, number: object) -> CompiledContract | None:
        if not isinstance(number, int) or number < 1:
            return None
        if number not in self.read:
            try:
                self.read[number] = self.store.read(number)[1]
            except (HzError, OSError, ValueError):
                self.read[number] = None
        return self.read[number]
