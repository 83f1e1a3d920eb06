"""``hz doctor``: is each model the home's turns use configured, and does it answer?"""

from __future__ import annotations

import argparse
import sys

from hz_kernel import operations as ops
from hz_kernel.cli.output import emit_json
from hz_kernel.cli.parser import Subcommands
from hz_kernel.client import KernelClient


async def cmd_doctor(client: KernelClient, args: argparse.Namespace) -> int:
    report = await client.call(ops.DOCTOR, ops.DoctorRequest(model=args.model, ask=not args.no_ask))
    if args.json:
        emit_json(report)
    else:
        sys.stdout.write(f"checked from the {client.where}\n")
        for check in report.items:
            users = f" (used by {', '.join(check.used_by)})" if check.used_by else ""
            if check.ok:
                took = (
                    f": answered in {check.seconds:.1f} s"
                    if check.seconds is not None
                    else ": built in, nothing to ask"
                    if check.model == "local"
                    else ""
                )
                unpriced = "" if check.priced else "; unpriced, so only tokens cap its turns"
                sys.stdout.write(f"ok    {check.model}{users}{took}{unpriced}\n")
                if check.note:
                    sys.stdout.write(f"      {check.note}\n")
            else:
                sys.stdout.write(f"FAIL  {check.model}{users}: {check.code}: {check.problem}\n")
                if check.hint:
                    sys.stdout.write(f"      {check.hint}\n")
    return 0 if all(check.ok for check in report.items) else 1


def register(sub: Subcommands) -> None:
    """``hz doctor``."""
    p = sub.add_parser(
        "doctor",
        help="check that the models turns use are configured and answer (one tiny request each)",
    )
    p.add_argument("--model", help="check this model string only (e.g. openai:gpt-4o)")
    p.add_argument(
        "--no-ask", action="store_true", help="only check keys and packages; send no request"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_doctor)
