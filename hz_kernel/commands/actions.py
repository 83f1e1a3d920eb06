"""The action log: what each turn read and wrote, and the lines reported about it.

hz writes most of it itself, as a turn's steps go: the inputs its gather
step read (by name and fingerprint; the ref comes from the contract version
the turn ran under), the drafts it placed (asset and hash) and the tasks it
handed to a coding agent (runner, hashes, exit status, cost). Beside them
stand the lines the model's ``report`` tool and ``hz heinzel report`` add
(``action.reported``). All of it is read from the spine, where every line
passed the same lint: no content, no e-mail address.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hz_kernel import api
from hz_kernel.commands.graph import ContractCache
from hz_kernel.core import KernelCore
from hz_kernel.errors import HzError
from hz_kernel.graph import input_node
from hz_kernel.store.envelope import Event
from hz_kernel.store.scan import scan_file
from hz_kernel.store.spine import SPINE_NAME
from hz_kernel.vocabulary import ActionReported


class ActionCommands(KernelCore):
    """``heinzel.report`` and ``heinzel.actions``."""

    async def report(self, *, ref: str, line: str, request_id: str | None = None) -> api.Decision:
        """Add the user's line to the heinzel's action log; a retried request (the same
        ``request_id``, kept as the line's key) finds its line there and adds none, and the
        same id with another line is refused (``HZS034``), as for every admitted request."""
        row = await self.resolve(ref)
        async with self.holding(row["id"]) as held:
            if held.projection.heinzel["damaged"]:
                raise HzError(
                    "HZE001",
                    "its spine has a broken chain; look with hz heinzel verify, then accept it",
                    str(row["name"]),
                )
            key = None if request_id is None else f"{held.id}@report:{request_id}"
            logged = next(
                (e for e in held.scan.events if e.kind == ActionReported.kind and e.key == key),
                None,
            )
            if key is None or logged is None:
                await held.append(ActionReported(by="user", line=line), key=key)
            elif logged.data.get("line") != line:
                raise HzError(
                    "HZS034",
                    f"request id {request_id!r} was already used for another report line; "
                    "use a new id",
                    str(row["name"]),
                )
            return api.Decision(
                heinzel=held.id, what="report", state=str(held.projection.heinzel["state"])
            )

    async def actions(self, *, ref: str, limit: int = 200) -> api.ActionLog:
        """The newest ``limit`` entries, read from the spine as it is on disk."""
        row = await self.resolve(ref)
        heinzel_dir = self.home.heinzel_dir(str(row["id"]))
        events = (await asyncio.to_thread(scan_file, heinzel_dir / SPINE_NAME)).events
        contracts = ContractCache(heinzel_dir)
        entries: list[api.ActionEntry] = []
        versions: dict[str, int] = {}
        handoffs: dict[str, int] = {}  # each handoff's entry, by effect key: its cost follows
        runners: dict[str, str] = {}  # each handoff begun, by effect key: its runner
        for event in events:
            if event.kind == "turn.started" and event.turn:
                versions[event.turn] = int(event.data.get("contract_version") or 0)
            if event.kind == "effect.started" and event.data.get("effect") == "handoff":
                runners[str(event.key)] = str(event.data.get("target"))
            elif event.kind == "effect.interrupted" and str(event.key) in runners.keys() - handoffs:
                # Cut short before its end was accounted: no exit, report or cost to show.
                entries.append(_interrupted(event, runners[str(event.key)]))
            if event.kind == "handoff.finished":
                handoffs[str(event.data.get("key"))] = len(entries)
            elif event.kind == "usage" and event.data.get("purpose") == "handoff":
                place = handoffs.get(str(event.key))
                if place is not None:
                    cost = {"usd": event.data.get("usd"), "tokens": event.data.get("tokens")}
                    entries[place] = entries[place].model_copy(update=cost)
            entries.extend(_entries(event, contracts.get(versions.get(event.turn or ""))))
        return api.ActionLog(heinzel=str(row["id"]), name=str(row["name"]), items=entries[-limit:])


def _interrupted(event: Event, runner: str) -> api.ActionEntry:
    at = {"seq": event.seq, "at": event.ts, "turn": event.turn}
    return api.ActionEntry(**at, what="handed_off", by="hz", name=runner, interrupted=True)


def _entries(event: Event, contract: Any) -> list[api.ActionEntry]:
    at = {"seq": event.seq, "at": event.ts, "turn": event.turn}
    if event.kind == "action.reported":
        data = event.data
        return [api.ActionEntry(**at, what="reported", by=data["by"], line=data["line"])]
    if event.kind == "handoff.finished":
        data = event.data
        return [
            api.ActionEntry(
                **at,
                what="handed_off",
                by="hz",
                name=str(data["runner"]),
                fingerprint=data.get("report_hash"),
                transcript_hash=data.get("transcript_hash"),
                exit_status=data.get("exit_status"),
            )
        ]
    if event.kind == "draft.placed":
        data = event.data
        return [
            api.ActionEntry(
                **at, what="wrote", by="hz", ref=str(data["asset"]), fingerprint=data.get("hash")
            )
        ]
    if event.kind != "step.done" or event.data.get("step") != "gather":
        return []
    read = []
    for item in event.data.get("inputs") or []:
        name = str(item.get("name"))
        spec = contract.inputs.get(name) if contract is not None else None
        node = input_node(spec)[0] if spec is not None else None
        read.append(
            api.ActionEntry(
                **at,
                what="read",
                by="hz",
                name=name,
                ref=node.partition(":")[2] if node else None,
                fingerprint=item.get("fingerprint"),
            )
        )
    return read
