"""``hz tick``: wake what is due, once or in a loop (the kernel's side is
``hz_kernel.commands.tick``)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from functools import partial

import orjson

from hz_kernel import operations as ops
from hz_kernel.cli.parser import Subcommands
from hz_kernel.client import KernelClient
from hz_kernel.errors import echoed
from hz_kernel.store.pruning import DailyPrune


async def cmd_tick(client: KernelClient, args: argparse.Namespace) -> int:
    prune = DailyPrune(partial(client.call, ops.PRUNE, ops.Empty()))
    while True:
        report = await client.call(ops.TICK, ops.Empty())
        if args.json:
            sys.stdout.write(orjson.dumps(report.model_dump(mode="json")).decode() + "\n")
        else:
            sys.stdout.write(
                f"{report.at:%Y-%m-%d %H:%M:%S} due {report.due}, woken {len(report.woken)}, "
                f"skipped {len(report.skipped)}, deferred {len(report.deferred)}, "
                f"fetches {report.fetches}\n"
            )
            for notice in report.notices:
                sys.stdout.write(echoed(f"  notice: {notice}") + "\n")
        sys.stdout.flush()
        for problem in report.problems:
            where = f"{problem.place}: " if problem.place else ""
            sys.stderr.write(echoed(f"{problem.code}: {where}{problem.message}") + "\n")
        if args.once:
            return 1 if report.problems else 0
        if (failed := await prune()) is not None:
            sys.stderr.write(failed.one_line() + "\n")
        await asyncio.sleep(args.interval)


def register(sub: Subcommands) -> None:
    """``hz tick``."""
    p = sub.add_parser("tick", help="wake what is due: once (cron, systemd timers) or in a loop")
    p.add_argument("--once", action="store_true", help="one tick, then exit")
    p.add_argument("--interval", type=float, default=None, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_tick)
