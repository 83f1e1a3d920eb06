"""``hz heinzel new|templates|import|contract|amend|pause|unpause|retire|unretire|rename`` and
``hz approve|reject``: a heinzel's contract and state (the kernel's side is
``hz_kernel.commands.lifecycle``)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hz_kernel import operations as ops
from hz_kernel.cli.output import emit_json
from hz_kernel.cli.parser import Command, Subcommands, writes
from hz_kernel.client import KernelClient
from hz_kernel.errors import UsageError
from hz_kernel.store.fsutil import open_regular


def _params(items: Sequence[str] | None) -> dict[str, str] | None:
    if not items:
        return None
    params: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError("HZU023", "--param takes NAME=VALUE", item)
        params[key] = value
    return params


def _read_text(path: str) -> str:
    """A file the user named (a link is fine; a FIFO or device is refused, never read)."""
    try:
        fd = open_regular(Path(path).expanduser(), os.O_RDONLY, follow=True)
        with os.fdopen(fd, "rb") as file:
            return file.read().decode("utf-8")
    except FileNotFoundError:
        raise UsageError("HZU024", "no such file", path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError("HZU025", f"cannot read the file ({exc})", path) from None


def _names_a_file(source: str) -> bool:
    """A contract file's name: one word ending in ``.md`` (a sentence that ends in one, such as
    "keep a digest of the notes in digest.md", is a sentence; a file given with spaces in its
    path is found by its existence)."""
    return source.endswith(".md") and not any(c.isspace() for c in source.strip())


def _is_file(source: str) -> bool:
    """Whether ``source`` names an existing file; a long sentence is no name the system takes
    (``ENAMETOOLONG``), and ``~someone`` no home it knows: both are sentences then."""
    try:
        return Path(source).expanduser().is_file()
    except (OSError, RuntimeError):
        return False


@writes
async def cmd_new(client: KernelClient, args: argparse.Namespace) -> int:
    source = args.source
    if args.template:
        if source:
            raise UsageError("HZU032", "give a template or a contract, not both", source)
        request = ops.NewRequest(template=args.template, params=_params(args.param))
    elif source and (_names_a_file(source) or _is_file(source)):
        request = ops.NewRequest(text=_read_text(source), source=source)
    elif source:
        request = ops.NewRequest(sentence=source, params=_params(args.param))
    else:
        raise UsageError("HZU032", "give a contract file, --template NAME or a sentence")
    made = await client.call(ops.NEW, request)
    if args.json:
        emit_json(made)
    else:
        sys.stdout.write(made.contract.rstrip("\n") + "\n\n")
        sys.stdout.write(
            f"proposed {made.name} ({made.id}). Approve this contract with: "
            f"hz approve {made.name}\n"
        )
    _warn(made.warnings)
    return 0


def _warn(warnings: Sequence[str]) -> None:
    """Warnings go to stderr and leave the exit status 0: what they name may be set later."""
    for warning in warnings:
        sys.stderr.write(warning + "\n")


async def cmd_templates(_: object, args: argparse.Namespace) -> int:
    """The shipped templates, from this installation: no kernel, so no home is touched."""
    from hz_kernel.commands.lifecycle import template_list

    listed = template_list()
    if args.json:
        emit_json(listed)
        return 0
    for template in listed.items:
        params = ", ".join(template.parameters)
        sys.stdout.write(f"{template.name:16} {template.description}  [{params}]\n")
    return 0


@writes
async def cmd_import(client: KernelClient, args: argparse.Namespace) -> int:
    path = str(Path(args.folder).expanduser().resolve())
    report = await client.call(ops.IMPORT, ops.ImportRequest(path=path))
    if args.json:
        emit_json(report)
    else:
        sys.stdout.write(
            f"created {len(report.created)}, unchanged {len(report.unchanged)}, "
            f"conflicts {len(report.conflicts)}\n"
        )
    for conflict in report.conflicts:
        sys.stderr.write(conflict + "\n")
    return 1 if report.conflicts else 0


async def cmd_contract(client: KernelClient, args: argparse.Namespace) -> int:
    """A version's text (or, with ``--against``, a diff between two), then what waits."""
    view = await client.call(
        ops.CONTRACT,
        ops.ContractRequest(ref=args.name, version=args.version, against=args.against),
    )
    if args.json:
        emit_json(view)
        return 0
    out = sys.stdout
    if view.version is not None:
        listed = ", ".join(str(n) for n in view.versions)
        out.write(f"{view.name} v{view.version} (versions: {listed})\n\n")
        body = view.diff if args.against is not None else view.text
        out.write((body or "(no changes)\n").rstrip("\n") + "\n")
    pending = view.pending
    if pending is None:
        return 0
    if pending.first:
        out.write(f"{view.name}: its first contract waits for approval\n\n")
        out.write(pending.text.rstrip("\n") + "\n")
    else:
        reason = f": {pending.reason}" if pending.reason else ""
        out.write(f"\namendment {pending.proposal} by {pending.by} waits{reason}\n")
        if pending.widens:
            out.write(f"widens: {'; '.join(pending.widens)}\n")
        if pending.narrows:
            out.write(f"narrows: {'; '.join(pending.narrows)}\n")
        out.write("\n" + (pending.diff or pending.text).rstrip("\n") + "\n")
    ref = f"{view.name}@{pending.short_key}"
    decline = "" if pending.first else f"   decline with: hz reject {ref}"
    out.write(f"\napprove with: hz approve {ref}{decline}\n")
    return 0


@writes
async def cmd_amend(client: KernelClient, args: argparse.Namespace) -> int:
    text = _read_text(args.contract)
    made = await client.call(
        ops.AMEND, ops.AmendRequest(ref=args.name, text=text, source=args.contract)
    )
    if args.json:
        emit_json(made)
        return 0
    widens = f"; it widens: {'; '.join(made.widens)}" if made.widens else ""
    sys.stdout.write(
        f"proposed amendment {made.proposal}{widens}. "
        f"Approve with: hz approve {args.name}@amendment:{made.proposal}\n"
    )
    return 0


def _decision_command(operation: ops.Operation[Any, Any], verb: str) -> Command:
    @writes
    async def run(client: KernelClient, args: argparse.Namespace) -> int:
        reason = {"reason": args.reason} if getattr(args, "reason", None) else {}
        decided = await client.call(operation, operation.request(ref=args.name, **reason))
        if args.json:
            emit_json(decided)
        else:
            version = f" v{decided.version}" if decided.version else ""
            did = f"already {decided.already}, nothing changed" if decided.already else verb
            sys.stdout.write(f"{args.name}: {did}{version}; now {decided.state}\n")
        _warn(decided.warnings)
        return 0

    return run


@writes
async def cmd_rename(client: KernelClient, args: argparse.Namespace) -> int:
    decided = await client.call(ops.RENAME, ops.RenameRequest(ref=args.name, name=args.new_name))
    if args.json:
        emit_json(decided)
    else:
        sys.stdout.write(f"renamed to {args.new_name}\n")
    return 0


def register_heinzel(hsub: Subcommands) -> None:
    """``new``, ``templates``, ``import``, ``contract``, ``amend``, ``pause``, ``unpause``,
    ``retire``, ``unretire`` and ``rename`` under ``hz heinzel``."""
    p = hsub.add_parser("new", help="create a heinzel from a contract, a template or a sentence")
    p.add_argument("source", nargs="?", help="CONTRACT.prose.md or a sentence in quotes")
    p.add_argument("--template", help="a shipped template (see hz heinzel templates)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="template parameter")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_new)

    p = hsub.add_parser("templates", help="list the contract templates hz ships")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_templates, needs_kernel=False)

    p = hsub.add_parser("import", help="every *.prose.md of a folder becomes a heinzel at v1")
    p.add_argument("folder")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_import)

    p = hsub.add_parser("contract", help="a contract version's text or diff, and what waits")
    p.add_argument("name")
    p.add_argument("--version", type=int, metavar="N", help="this version (default: the newest)")
    p.add_argument(
        "--against", type=int, metavar="M", help="print the diff from version M instead of text"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_contract)

    p = hsub.add_parser("amend", help="propose a new contract text (you approve it after)")
    p.add_argument("name")
    p.add_argument("contract")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_amend)

    for verb, operation, past in (
        ("pause", ops.PAUSE, "paused"),
        ("unpause", ops.UNPAUSE, "unpaused"),
        ("retire", ops.RETIRE, "retired"),
        ("unretire", ops.UNRETIRE, "unretired"),
    ):
        p = hsub.add_parser(verb, help=f"{verb} a heinzel")
        p.add_argument("name")
        p.add_argument("--json", action="store_true")
        p.set_defaults(run=_decision_command(operation, past))

    p = hsub.add_parser("rename", help="give a heinzel a new name (its id stays)")
    p.add_argument("name")
    p.add_argument("new_name")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_rename)


def register(sub: Subcommands) -> None:
    """``hz approve`` and ``hz reject``."""
    p = sub.add_parser("approve", help="approve what waits: a contract, an amendment, a draft")
    p.add_argument("name", metavar="KEY|NAME")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_decision_command(ops.APPROVE, "approved"))

    p = sub.add_parser("reject", help="decline an amendment or reject a draft")
    p.add_argument("name", metavar="KEY|NAME")
    p.add_argument(
        "--reason",
        help="why; a draft's reason may become a lesson (its text never does), an amendment's "
        "is kept in the heinzel's history",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_decision_command(ops.REJECT, "rejected"))
