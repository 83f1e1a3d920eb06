"""``hz heinzel list|show|verify|reindex|prune``: reads of the index and care of the files
(the kernel's side is ``hz_kernel.commands.store``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hz_kernel import operations as ops
from hz_kernel.cli.output import emit_json, emit_rows, table
from hz_kernel.cli.parser import Subcommands, writes
from hz_kernel.client import KernelClient
from hz_kernel.errors import UsageError, echoed

if TYPE_CHECKING:
    from hz_kernel import api


def _parse_where(items: Sequence[str] | None) -> dict[str, str] | None:
    if not items:
        return None
    where: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(
                "HZU022", "--where takes KEY=VALUE (a key of the contract's hz table)", item
            )
        where[key] = value
    return where


async def cmd_list(client: KernelClient, args: argparse.Namespace) -> int:
    # Built as validation would build it: argparse checked each field already, and a listing
    # from the index then builds no validator at all (``emit_rows``).
    request = ops.ListRequest.model_construct(
        state=args.state,
        artifact=args.artifact,
        contract=args.contract,
        where=_parse_where(args.where),
    )
    result = await client.call(ops.LIST, request)
    for warning in result.warnings:
        sys.stderr.write(warning + "\n")
    if args.json:
        emit_rows(result.items)
        return 0
    if not result.items:
        sys.stdout.write(
            "no heinzels yet — create one with: hz heinzel new --template weekly-report\n"
        )
        return 0
    teamed = any(h.team is not None for h in result.items)
    rows = [
        [
            h.name + (" (damaged)" if h.damaged else "") + (" (failing)" if h.failure else ""),
            h.state + (" (interrupted)" if h.interrupted else ""),
            f"v{h.contract_version}" if h.contract_version else "-",
            h.last_disposition or "-",
            (h.last_turn_at or "-")[:16],
            f"{h.cost_today:.2f}",
            *([_team_mark(h.team)] if teamed else []),
        ]
        for h in result.items
    ]
    team = ["TEAM"] if teamed else []
    table(rows, ["NAME", "STATE", "CONTRACT", "LAST", "WHEN", "USD TODAY", *team])
    return 0


def _team_mark(team: api.TeamView | None) -> str:
    """Who runs a team heinzel (``here``, a handle, ``free``) and its last team error's code;
    nothing for a local heinzel."""
    if team is None:
        return ""
    error = f"! {team.error_code}" if team.error_code else ""
    return " ".join(filter(None, [team.who or ("" if error else "no lease"), error]))


def _team_lines(team: api.TeamView) -> list[str]:
    """``hz heinzel show``'s team section: the repository and role, the lease, the error."""
    role = f" ({team.role} here)" if team.role else ""
    lines = [f"team: {team.repo or '-'}{role}"]
    seen = f" (as of {team.seen_at})" if team.seen_at else ""
    if team.holder is None:
        lease = "none found" if team.seen_at else "none seen yet"
    elif team.free == "released":
        lease = f"free since {team.expires} (released by {team.holder}), token {team.token}"
    elif team.free == "expired":
        lease = f"expired at {team.expires} (held by {team.holder}), token {team.token}"
    else:
        holder = "this home" if team.held_here else team.holder
        lease = f"held by {holder} until {team.expires}, token {team.token}"
    lines.append(f"  lease: {lease}{seen}")
    if team.error:
        lines.append(f"  error: {echoed(team.error)}")
    return lines


async def cmd_show(client: KernelClient, args: argparse.Namespace) -> int:
    detail = await client.call(ops.SHOW, ops.HeinzelRef(ref=args.name))
    if args.json:
        emit_json(detail)
        return 0
    h = detail.heinzel
    out = sys.stdout.write
    out(f"{h.name}  {h.id}  {h.state}{'  DAMAGED' if h.damaged else ''}\n")
    versions = ", ".join(f"v{v}" for v in detail.contract_versions) or "none"
    out(f"contract: {h.contract_name or '-'} v{h.contract_version or '-'} (versions: {versions})\n")
    if detail.model:
        chosen = "set in the contract" if detail.model_from == "contract" else "the home's default"
        out(f"model: {detail.model} ({chosen})\n")
    if h.team is not None:
        out("".join(line + "\n" for line in _team_lines(h.team)))
    cost = detail.cost_month
    parts = ", ".join(f"{usd:.2f} {cause}" for cause, usd in cost.by_cause.items())
    out(f"cost this month: {cost.total:.2f} USD" + (f": {parts}" if parts else "") + "\n")
    if h.failure is not None:
        f = h.failure
        out(
            f"failing since {f.since:%Y-%m-%d %H:%M}Z ({f.failures} in a row): {f.code}: "
            f"{f.message}; the tick tries again after {f.retry_at:%Y-%m-%d %H:%M:%S}Z\n"
        )
    if detail.caps is not None and not detail.caps.priced:
        caps = detail.caps
        out(
            f"cost unknown: {caps.model} has no known price; each turn is capped at "
            f"{caps.max_tokens} tokens ({caps.tokens_month} tokens this month)\n"
        )
    if detail.lessons:
        out("what I learned from you:\n")
        for lesson in detail.lessons:
            mark = " (dismissed)" if lesson.dismissed else ""
            out(f"  [{lesson.lesson_id}] {lesson.lesson}{mark}\n")
    pending = [d for d in detail.drafts if d.status == "pending"]
    for draft in pending:
        out(f"pending draft: {draft.key} in {draft.asset}\n")
    for question in detail.questions:
        if question.status == "pending":
            out(f"question: {question.question}\n")
    for notice in detail.notices:
        out(echoed(f"notice ({str(notice.ts)[:16]}): {notice.notice}") + "\n")
    for why in detail.inbox_skipped:
        out(f"inbox: skipped: {why}\n")
    for amendment in detail.amendments:
        if amendment.status == "pending":
            widens = f" (widens: {'; '.join(amendment.widens)})" if amendment.widens else ""
            out(f"amendment {amendment.proposal} by {amendment.by}{widens}\n")
    if detail.turns:
        out("turns:\n")
        rows = [
            [
                t.started_at[:16],
                ",".join(t.causes) or t.cause or "-",
                t.disposition or t.status,
                f"{t.usd:.2f}",
                (t.report or "") + _pruned(t),
            ]
            for t in detail.turns
        ]
        table(rows, ["  STARTED", "CAUSE", "DISPOSITION", "USD", "REPORT"])
    return 0


def _pruned(turn: api.TurnSummary) -> str:
    """The mark of a turn whose body pruning removed: a skipped turn never had one."""
    return "" if turn.body_present or turn.disposition == "skipped" else "  [body pruned]"


async def cmd_verify(client: KernelClient, args: argparse.Namespace) -> int:
    result = await client.call(ops.VERIFY, ops.VerifyRequest(ref=args.name, accept=args.accept))
    if args.json:
        emit_json([r.model_dump(mode="json") for r in result.items])
    bad = [r for r in result.items if not r.ok]
    if not args.json:
        for report in result.items:
            status = "ok" if report.ok else "BROKEN"
            accepted = " (break accepted now)" if report.accepted_now else ""
            sys.stdout.write(
                f"{report.name}: {status}, {report.events} events, {report.bytes} bytes{accepted}\n"
            )
            for problem in report.problems:
                tag = "accepted " if problem.accepted else ""
                where = f"seq {problem.seq}" if problem.seq is not None else "a line"
                sys.stdout.write(
                    f"  {tag}{problem.problem}: {where} at byte {problem.offset}: "
                    f"{problem.detail}\n"
                )
    if bad:
        first = bad[0].problems[0]
        if first.code != "HZS033":
            sys.stderr.write(f"{first.code}: {bad[0].id}: {first.detail}\n")
        else:
            sys.stderr.write(
                f"HZS033: {bad[0].name}: chain broken at byte {first.offset} (seq {first.seq}): "
                f"{first.detail}; accept with: hz heinzel verify {bad[0].name} --accept\n"
            )
        return 1
    return 0


@writes
async def cmd_reindex(client: KernelClient, args: argparse.Namespace) -> int:
    report = await client.call(ops.REINDEX, ops.Empty())
    if args.json:
        emit_json(report)
    else:
        sys.stdout.write(
            f"reindexed {report.heinzels} heinzels, {report.events} events "
            f"in {report.seconds:.3f}s\n"
        )
    return 0


@writes
async def cmd_prune(client: KernelClient, args: argparse.Namespace) -> int:
    report = await client.call(ops.PRUNE, ops.Empty())
    if args.json:
        emit_json(report)
    else:
        sys.stdout.write(
            f"removed {report.bodies_removed} bodies, {report.requests_removed} requests and "
            f"{report.sources_removed} cached source results ({report.bytes_freed} bytes)\n"
        )
    return 0


def register_heinzel(hsub: Subcommands) -> None:
    """``list``, ``show``, ``verify``, ``reindex`` and ``prune`` under ``hz heinzel``."""
    p = hsub.add_parser("list", help="list heinzels from the index")
    p.add_argument(
        "--state", choices=["proposed", "asleep", "awake", "waiting", "paused", "retired"]
    )
    p.add_argument("--artifact", help="an asset ref, e.g. doc:reports/weekly.md#checkout")
    p.add_argument("--contract", help="NAME or NAME:VERSION")
    p.add_argument("--where", action="append", metavar="KEY=VALUE", help="a contract hz key")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_list, index_first=True)

    p = hsub.add_parser("show", help="one heinzel: contract, turns, lessons, cost")
    p.add_argument("name")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_show)

    p = hsub.add_parser("verify", help="check the hash chain of spines")
    p.add_argument("name", nargs="?")
    p.add_argument("--accept", action="store_true", help="accept the breaks found (recorded)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_verify)

    p = hsub.add_parser("reindex", help="rebuild the index from the spines")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_reindex)

    p = hsub.add_parser("prune", help="delete expired turn bodies and delivered requests")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_prune)
