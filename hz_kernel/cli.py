"""The ``hz`` command line.

Exit codes are a contract: 0 success, 1 an error (one line on stderr that
starts with its code, e.g. ``HZS010: …``), 2 a usage error. Every command
that prints data takes ``--json``. Commands reach the kernel through a
``KernelClient`` only.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson
from pydantic import BaseModel

from hz_kernel import operations as ops
from hz_kernel.client import KernelClient, LocalClient
from hz_kernel.errors import HzError
from hz_kernel.home import Home

Command = Callable[[KernelClient, argparse.Namespace], Awaitable[int]]


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one coded line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"HZU000: {self.prog}: {message}\n")
        raise SystemExit(2)


def _emit_json(data: Any) -> None:
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


def _table(rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        line = "  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(row))
        sys.stdout.write(line.rstrip() + "\n")


def _parse_where(items: Sequence[str] | None) -> dict[str, str] | None:
    if not items:
        return None
    where: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise HzError(
                "HZU022", "--where takes KEY=VALUE (a key of the contract's hz table)", item
            )
        where[key] = value
    return where


async def cmd_list(client: KernelClient, args: argparse.Namespace) -> int:
    result = await client.call(
        ops.LIST,
        ops.ListRequest(
            state=args.state,
            artifact=args.artifact,
            contract=args.contract,
            where=_parse_where(args.where),
        ),
    )
    for warning in result.warnings:
        sys.stderr.write(warning + "\n")
    if args.json:
        _emit_json([item.model_dump(mode="json") for item in result.items])
        return 0
    if not result.items:
        sys.stdout.write(
            "no heinzels yet — create one with: hz heinzel new --template weekly-report\n"
        )
        return 0
    rows = [
        [
            h.name + (" (damaged)" if h.damaged else ""),
            h.state,
            f"v{h.contract_version}" if h.contract_version else "-",
            h.last_disposition or "-",
            (h.last_turn_at or "-")[:16],
            f"{h.cost_today:.2f}",
        ]
        for h in result.items
    ]
    _table(rows, ["NAME", "STATE", "CONTRACT", "LAST", "WHEN", "USD TODAY"])
    return 0


async def cmd_show(client: KernelClient, args: argparse.Namespace) -> int:
    detail = await client.call(ops.SHOW, ops.HeinzelRef(ref=args.name))
    if args.json:
        _emit_json(detail)
        return 0
    h = detail.heinzel
    out = sys.stdout.write
    out(f"{h.name}  {h.id}  {h.state}{'  DAMAGED' if h.damaged else ''}\n")
    versions = ", ".join(f"v{v}" for v in detail.contract_versions) or "none"
    out(f"contract: {h.contract_name or '-'} v{h.contract_version or '-'} (versions: {versions})\n")
    cost = detail.cost_month
    parts = ", ".join(f"{usd:.2f} {cause}" for cause, usd in cost.by_cause.items())
    out(f"cost this month: {cost.total:.2f} USD" + (f": {parts}" if parts else "") + "\n")
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
                (t.report or "") + ("" if t.body_present else "  [body pruned]"),
            ]
            for t in detail.turns
        ]
        _table(rows, ["  STARTED", "CAUSE", "DISPOSITION", "USD", "REPORT"])
    return 0


async def cmd_verify(client: KernelClient, args: argparse.Namespace) -> int:
    result = await client.call(ops.VERIFY, ops.VerifyRequest(ref=args.name, accept=args.accept))
    if args.json:
        _emit_json([r.model_dump(mode="json") for r in result.items])
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
        if first.code != "HZS030":
            sys.stderr.write(f"{first.code}: {bad[0].id}: {first.detail}\n")
        else:
            sys.stderr.write(
                f"HZS030: {bad[0].name}: chain broken at byte {first.offset} (seq {first.seq}): "
                f"{first.detail}; accept with: hz heinzel verify {bad[0].name} --accept\n"
            )
        return 1
    return 0


async def cmd_reindex(client: KernelClient, args: argparse.Namespace) -> int:
    report = await client.call(ops.REINDEX, ops.Empty())
    if args.json:
        _emit_json(report)
    else:
        sys.stdout.write(
            f"reindexed {report.heinzels} heinzels, {report.events} events "
            f"in {report.seconds:.3f}s\n"
        )
    return 0


async def cmd_prune(client: KernelClient, args: argparse.Namespace) -> int:
    report = await client.call(ops.PRUNE, ops.Empty())
    if args.json:
        _emit_json(report)
    else:
        sys.stdout.write(
            f"removed {report.bodies_removed} bodies and {report.requests_removed} requests "
            f"({report.bytes_freed} bytes)\n"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="hz", description="Durable agents that keep documents true.")
    parser.add_argument("--home", help="the hz home (default: $HZ_HOME or the user data dir)")
    sub = parser.add_subparsers(dest="group", parser_class=_Parser)

    heinzel = sub.add_parser("heinzel", help="manage heinzels")
    hsub = heinzel.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = hsub.add_parser("list", help="list heinzels from the index")
    p.add_argument(
        "--state", choices=["proposed", "asleep", "awake", "waiting", "paused", "retired"]
    )
    p.add_argument("--artifact", help="an asset ref, e.g. doc:reports/weekly.md#checkout")
    p.add_argument("--contract", help="NAME or NAME:VERSION")
    p.add_argument("--where", action="append", metavar="KEY=VALUE", help="a contract hz key")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_list)

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
    return parser


async def _run(args: argparse.Namespace) -> int:
    home = Home.resolve(args.home)
    client = await LocalClient.open(home)
    try:
        command: Command = args.run
        return await command(client, args)
    finally:
        await client.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 0
    try:
        return asyncio.run(_run(args))
    except HzError as exc:
        sys.stderr.write(exc.one_line() + "\n")
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
