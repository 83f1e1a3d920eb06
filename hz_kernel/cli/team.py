"""``hz team status`` and ``hz team log``: the team repository's leases and receipts
(``docs/team.md``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from hz_kernel import operations as ops
from hz_kernel.cli.output import emit_json
from hz_kernel.cli.parser import Parser
from hz_kernel.client import KernelClient
from hz_kernel.errors import echoed

if TYPE_CHECKING:
    from hz_kernel import api


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    team = sub.add_parser("team", help="team heinzels: leases and receipts in the team repository")
    tsub = team.add_subparsers(dest="command", required=True, parser_class=Parser)
    p = tsub.add_parser("status", help="who holds each team heinzel's lease, until when")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_status)
    p = tsub.add_parser("log", help="the team's receipts on hz/state, oldest first")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_log)


async def cmd_status(client: KernelClient, args: argparse.Namespace) -> int:
    status = await client.call(ops.TEAM_STATUS, ops.Empty())
    if args.json:
        emit_json(status.model_dump(mode="json"))
    else:
        sys.stdout.write(render_status(status))
    problems = status.problems + [r.error for r in status.leases if r.error]
    for line in problems:
        sys.stderr.write(echoed(line) + "\n")
    return 1 if problems else 0


def render_status(status: api.TeamStatus) -> str:
    if not status.leases:
        if status.problems:
            return "no team heinzel here can be placed in a team: see the errors\n"
        return "no team heinzels here\n"
    lines = []
    for row in status.leases:
        here = " (this home)" if row.held_here else ""
        if row.holder is None:
            held = "no lease yet"
        elif row.free == "released":
            held = f"free since {row.expires} (released by {row.holder}), token {row.token}"
        elif row.free == "expired":
            held = f"expired at {row.expires} (held by {row.holder}{here}), token {row.token}"
        else:
            held = f"held by {row.holder}{here} until {row.expires}, token {row.token}"
        lines.append(f"{row.name}  {row.role}  {held}")
    for repo, count in status.pending.items():
        lines.append(f"{count} receipt(s) waiting to be pushed to {repo}")
    return "\n".join(lines) + "\n"


async def cmd_log(client: KernelClient, args: argparse.Namespace) -> int:
    log = await client.call(ops.TEAM_LOG, ops.Empty())
    if args.json:
        emit_json(log.model_dump(mode="json"))
    else:
        sys.stdout.write(render_log(log))
    for line in log.errors:
        sys.stderr.write(echoed(line) + "\n")
    return 1 if log.errors else 0


def render_log(log: api.TeamLog) -> str:
    if not log.receipts:
        return (
            "no receipts read: see the errors\n" if log.errors else "no receipts on hz/state yet\n"
        )
    return "".join(_line(entry.name, entry.receipt) + "\n" for entry in log.receipts)


def _line(name: str | None, receipt: dict[str, Any]) -> str:
    """One receipt: when, whose, what, under which token, which home ran it, and its kind's
    telling fields."""
    kind = receipt.get("kind")
    detail = {
        "turn.finished": f"{receipt.get('disposition')} ({receipt.get('cause')}) "
        f"{float(receipt.get('usd') or 0):.4f} USD",
        "draft.placed": str(receipt.get("asset")),
        "approval.observed": f"approver {receipt.get('approver')}",
        "contract.amended": f"v{receipt.get('version')}",
    }.get(str(kind), "")
    turn = receipt.get("turn") or "-"
    who = name or receipt.get("heinzel")
    by = f"  by {receipt['by']}" if receipt.get("by") else ""
    return (
        f"{receipt.get('at')}  {who}  {kind}  {detail}  turn {turn}  "
        f"token {receipt.get('token')}{by}"
    )
