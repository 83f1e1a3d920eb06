"""The ``hz`` command line.

Exit codes are a contract: 0 success, 1 an error (one line on stderr that
starts with its code, e.g. ``HZS010: …``), 2 a usage error. Every command
that prints data takes ``--json``. Commands reach the kernel through a
``KernelClient`` only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import io
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import orjson
from pydantic import BaseModel, ValidationError

from hz_kernel import operations as ops
from hz_kernel import remote, tail_cli
from hz_kernel.client import DeferredClient, KernelClient
from hz_kernel.connect import connect, connect_ticker, may_start
from hz_kernel.daemon.cli import register as register_daemon
from hz_kernel.daemon.discovery import inspect
from hz_kernel.errors import HzError, UsageError, echoed
from hz_kernel.held import Queued
from hz_kernel.home import Home
from hz_kernel.store.fsutil import open_regular
from hz_kernel.store.pruning import DailyPrune

Command = Callable[[KernelClient, argparse.Namespace], Awaitable[int]]
#: Adds commands to the main parser from outside the kernel (``hz serve``, by ``hz_tui.entry``).
Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

#: The commands that change state: they adopt the home's daemon or start one (``may_start``).
_WRITES: set[Command] = set()


def _writes(command: Command) -> Command:
    _WRITES.add(command)
    return command


#: The exit code of a command whose reader went away (``hz ... | head``): 128 + SIGPIPE,
#: what a shell reports for a program that a broken pipe ended.
EXIT_BROKEN_PIPE = 141

#: Terminal control characters (C0 but newline and tab, DEL, C1) shown as ``\uXXXX``: data
#: from documents never moves the cursor or recolours the terminal, and in JSON the
#: replacement is the same string's escape.
_CONTROLS = {
    code: f"\\u{code:04x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if chr(code) not in "\n\t"
}


def shown(text: str) -> str:
    """``text`` with its terminal control characters made visible (``\\u001b``)."""
    return text.translate(_CONTROLS)


class _Shown(io.TextIOBase):
    """Standard output through ``shown``, that notes when its reader has gone away."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        try:
            self.stream.write(shown(text))
        except BrokenPipeError:
            self.reader_gone = True
            raise
        return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self.reader_gone = True
            raise

    def discard(self) -> None:
        """Send what is still buffered to /dev/null, so the exit does not fail on it again."""
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self.stream.fileno())
        os.close(null)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()


class _Subcommands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Subcommands whose own ``--help`` opens with the line that lists them."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs.setdefault("description", kwargs.get("help"))
        return super().add_parser(name, **kwargs)


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one coded line and exit code 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Subcommands)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """A value outside the choices (a mistyped command) names the closest one."""
        choices = action.choices
        if choices is None or value in choices:
            return
        names = [str(choice) for choice in choices]
        close = difflib.get_close_matches(str(value), names, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        if isinstance(action, argparse._SubParsersAction):
            message = f"unknown command {value!r}{hint} (commands: {', '.join(names)})"
            raise argparse.ArgumentError(None, message)
        message = f"invalid choice {value!r}{hint} (choose from {', '.join(names)})"
        raise argparse.ArgumentError(action, message)

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(echoed(f"HZU000: {self.prog}: {message}") + "\n")
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
            raise UsageError(
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
            h.name + (" (damaged)" if h.damaged else "") + (" (failing)" if h.failure else ""),
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
    if detail.model:
        chosen = "set in the contract" if detail.model_from == "contract" else "the home's default"
        out(f"model: {detail.model} ({chosen})\n")
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
        if first.code != "HZS033":
            sys.stderr.write(f"{first.code}: {bad[0].id}: {first.detail}\n")
        else:
            sys.stderr.write(
                f"HZS033: {bad[0].name}: chain broken at byte {first.offset} (seq {first.seq}): "
                f"{first.detail}; accept with: hz heinzel verify {bad[0].name} --accept\n"
            )
        return 1
    return 0


@_writes
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


@_writes
async def cmd_prune(client: KernelClient, args: argparse.Namespace) -> int:
    report = await client.call(ops.PRUNE, ops.Empty())
    if args.json:
        _emit_json(report)
    else:
        sys.stdout.write(
            f"removed {report.bodies_removed} bodies, {report.requests_removed} requests and "
            f"{report.sources_removed} cached source results ({report.bytes_freed} bytes)\n"
        )
    return 0


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


@_writes
async def cmd_new(client: KernelClient, args: argparse.Namespace) -> int:
    source = args.source
    if args.template:
        if source:
            raise UsageError("HZU032", "give a template or a contract, not both", source)
        request = ops.NewRequest(template=args.template, params=_params(args.param))
    elif source and (source.endswith(".md") or Path(source).expanduser().is_file()):
        request = ops.NewRequest(text=_read_text(source), source=source)
    elif source:
        request = ops.NewRequest(sentence=source, params=_params(args.param))
    else:
        raise UsageError("HZU032", "give a contract file, --template NAME or a sentence")
    made = await client.call(ops.NEW, request)
    if args.json:
        _emit_json(made)
        return 0
    sys.stdout.write(made.contract.rstrip("\n") + "\n\n")
    sys.stdout.write(
        f"proposed {made.name} ({made.id}). Approve this contract with: hz approve {made.name}\n"
    )
    return 0


async def cmd_templates(client: KernelClient, args: argparse.Namespace) -> int:
    listed = await client.call(ops.TEMPLATES, ops.Empty())
    if args.json:
        _emit_json(listed)
        return 0
    for template in listed.items:
        params = ", ".join(template.parameters)
        sys.stdout.write(f"{template.name:16} {template.description}  [{params}]\n")
    return 0


@_writes
async def cmd_import(client: KernelClient, args: argparse.Namespace) -> int:
    path = str(Path(args.folder).expanduser().resolve())
    report = await client.call(ops.IMPORT, ops.ImportRequest(path=path))
    if args.json:
        _emit_json(report)
    else:
        sys.stdout.write(
            f"created {len(report.created)}, unchanged {len(report.unchanged)}, "
            f"conflicts {len(report.conflicts)}\n"
        )
    for conflict in report.conflicts:
        sys.stderr.write(conflict + "\n")
    return 1 if report.conflicts else 0


@_writes
async def cmd_amend(client: KernelClient, args: argparse.Namespace) -> int:
    text = _read_text(args.contract)
    made = await client.call(
        ops.AMEND, ops.AmendRequest(ref=args.name, text=text, source=args.contract)
    )
    if args.json:
        _emit_json(made)
        return 0
    widens = f"; it widens: {'; '.join(made.widens)}" if made.widens else ""
    sys.stdout.write(
        f"proposed amendment {made.proposal}{widens}. "
        f"Approve with: hz approve {args.name}@amendment:{made.proposal}\n"
    )
    return 0


def _decision_command(operation: ops.Operation[Any, Any], verb: str) -> Command:
    @_writes
    async def run(client: KernelClient, args: argparse.Namespace) -> int:
        reason = {"reason": args.reason} if getattr(args, "reason", None) else {}
        decided = await client.call(operation, operation.request(ref=args.name, **reason))
        if args.json:
            _emit_json(decided)
        else:
            version = f" v{decided.version}" if decided.version else ""
            sys.stdout.write(f"{args.name}: {verb}{version}; now {decided.state}\n")
        return 0

    return run


@_writes
async def cmd_rename(client: KernelClient, args: argparse.Namespace) -> int:
    decided = await client.call(ops.RENAME, ops.RenameRequest(ref=args.name, name=args.new_name))
    if args.json:
        _emit_json(decided)
    else:
        sys.stdout.write(f"renamed to {args.new_name}\n")
    return 0


@_writes
async def cmd_wake(client: KernelClient, args: argparse.Namespace) -> int:
    if getattr(args, "follow", False):
        return await tail_cli.wake_follow(client, args)
    if args.command == "resume":
        report = await client.call(ops.RESUME, ops.HeinzelRef(ref=args.name))
    else:
        request = ops.WakeRequest(ref=args.name, request_id=args.request_id)
        report = await client.call(ops.WAKE, request)
    if args.json:
        _emit_json(report)
        return 0
    if report.status == "none":
        sys.stdout.write(f"{args.name}: no turn ran\n")
        return 0
    if report.disposition == "failed":
        sys.stdout.write(f"{args.name}: failed\n")
        sys.stderr.write(f"{report.reason or report.report or 'the turn failed'}\n")
        return 1
    outcome = report.disposition or report.status
    reason = f" ({report.reason})" if report.reason else ""
    sys.stdout.write(
        f"{args.name}: {outcome}{reason}: {report.report or ''}\n".replace(": \n", "\n")
    )
    return 0


async def cmd_drafts(client: KernelClient, args: argparse.Namespace) -> int:
    listed = await client.call(ops.DRAFTS, ops.Empty())
    if args.json:
        _emit_json([d.model_dump(mode="json") for d in listed.items])
        return 0
    if not listed.items:
        sys.stdout.write("no drafts are waiting\n")
        return 0
    rows = [
        [
            d.heinzel_name or d.heinzel,
            d.asset or "-",
            f"v{d.contract_version}",
            (d.placed_at or "")[:16],
            d.key,
        ]
        for d in listed.items
    ]
    _table(rows, ["HEINZEL", "ASSET", "CONTRACT", "PLACED", "KEY"])
    return 0


@_writes
async def cmd_chat(client: KernelClient, args: argparse.Namespace) -> int:
    request = ops.ChatRequest(
        ref=args.name, message=args.message, mode=args.mode, request_id=args.request_id
    )
    admitted = await client.call(ops.CHAT, request)
    if args.json:
        _emit_json(admitted)
    else:
        turn = f" (turn {admitted.turn})" if admitted.turn else ""
        sys.stdout.write(f"{args.name}: message {admitted.request_id} {admitted.status}{turn}\n")
    return 0


@_writes
async def cmd_turn_command(client: KernelClient, args: argparse.Namespace) -> int:
    """stop, retry and answer: each ends in a turn report."""
    if args.command == "stop":
        report = await client.call(ops.STOP, ops.StopRequest(ref=args.name))
    elif args.command == "retry":
        report = await client.call(ops.RETRY, ops.RetryRequest(ref=args.name, hint=args.hint))
    else:
        report = await client.call(
            ops.ANSWER, ops.AnswerRequest(ref=args.name, message=args.message)
        )
    if args.json:
        _emit_json(report)
        return 0
    if report.status == "none":
        none = "no turn is running; nothing to stop" if args.command == "stop" else "no turn ran"
        sys.stdout.write(f"{args.name}: {none}\n")
        return 0
    outcome = report.disposition or report.status
    reason = f" ({report.reason})" if report.reason else ""
    sys.stdout.write(
        f"{args.name}: {outcome}{reason}" + (f": {report.report}" if report.report else "") + "\n"
    )
    return 0


async def cmd_lessons(client: KernelClient, args: argparse.Namespace) -> int:
    detail = await client.call(ops.SHOW, ops.HeinzelRef(ref=args.name))
    if args.json:
        _emit_json([lesson.model_dump(mode="json") for lesson in detail.lessons])
        return 0
    if not detail.lessons:
        sys.stdout.write(f"{args.name} has learned nothing from you yet\n")
    for lesson in detail.lessons:
        mark = "  (dismissed)" if lesson.dismissed else ""
        sys.stdout.write(f"{lesson.lesson_id}  {lesson.lesson}{mark}\n")
    return 0


@_writes
async def cmd_dismiss(client: KernelClient, args: argparse.Namespace) -> int:
    decided = await client.call(
        ops.DISMISS, ops.DismissRequest(ref=args.name, lesson_id=args.lesson)
    )
    if args.json:
        _emit_json(decided)
    else:
        sys.stdout.write(f"dismissed {args.lesson}; it is never shown to the model again\n")
    return 0


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
        sys.stdout.flush()
        for problem in report.problems:
            where = f"{problem.place}: " if problem.place else ""
            sys.stderr.write(echoed(f"{problem.code}: {where}{problem.message}") + "\n")
        if args.once:
            return 1 if report.problems else 0
        if (failed := await prune()) is not None:
            sys.stderr.write(failed.one_line() + "\n")
        await asyncio.sleep(args.interval)


def build_parser(commands: Sequence[Register] = ()) -> argparse.ArgumentParser:
    parser = _Parser(prog="hz", description="Durable agents that keep documents true.")
    parser.add_argument("--home", help="the hz home (default: $HZ_HOME or the user data dir)")
    remote.add_options(parser)
    parser.add_argument(
        "--embedded",
        action="store_true",
        help="never start the daemon: run the kernel in this process when none serves the home",
    )
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

    p = hsub.add_parser("new", help="create a heinzel from a contract, a template or a sentence")
    p.add_argument("source", nargs="?", help="CONTRACT.prose.md or a sentence in quotes")
    p.add_argument("--template", help="a shipped template (see hz heinzel templates)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="template parameter")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_new)

    p = hsub.add_parser("templates", help="list the contract templates hz ships")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_templates)

    p = hsub.add_parser("import", help="every *.prose.md of a folder becomes a heinzel at v1")
    p.add_argument("folder")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_import)

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

    p = hsub.add_parser("wake", help="run a turn now")
    p.add_argument("name")
    p.add_argument("--request-id", help="an idempotency key: the same id never runs twice")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_wake)
    tail_cli.register(hsub, p)

    p = hsub.add_parser("chat", help="send a message: steer a running turn or queue the next")
    p.add_argument("name")
    p.add_argument("message")
    p.add_argument("--mode", choices=["steer", "queue"], default="queue")
    p.add_argument("--request-id", help="an idempotency key: a retry never makes a second message")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_chat)

    p = hsub.add_parser("stop", help="stop the running turn (queued messages stay)")
    p.add_argument("name")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_turn_command)

    p = hsub.add_parser(
        "retry", help='try the last turn again, e.g. hz heinzel retry NAME "shorter"'
    )
    p.add_argument("name")
    p.add_argument("hint", nargs="?")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_turn_command)

    p = hsub.add_parser("answer", help="answer the question a heinzel asked")
    p.add_argument("name")
    p.add_argument("message")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_turn_command)

    p = hsub.add_parser("lessons", help="what a heinzel learned from your edits")
    p.add_argument("name")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_lessons)

    p = hsub.add_parser("dismiss", help="dismiss a lesson (kept, never shown to the model again)")
    p.add_argument("name")
    p.add_argument("lesson")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_dismiss)

    p = hsub.add_parser("resume", help="continue an interrupted or waiting turn now")
    p.add_argument("name")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_wake)

    p = sub.add_parser("drafts", help="the drafts waiting for your review")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_drafts)

    p = sub.add_parser("tick", help="wake what is due: once (cron, systemd timers) or in a loop")
    p.add_argument("--once", action="store_true", help="one tick, then exit")
    p.add_argument("--interval", type=float, default=None, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_tick)

    p = sub.add_parser("approve", help="approve what waits: a contract, an amendment, a draft")
    p.add_argument("name", metavar="KEY|NAME")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_decision_command(ops.APPROVE, "approved"))

    p = sub.add_parser("reject", help="decline an amendment or reject a draft")
    p.add_argument("name", metavar="KEY|NAME")
    p.add_argument("--reason", help="why; it may become a lesson (the rejected text never does)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_decision_command(ops.REJECT, "rejected"))
    register_daemon(sub)
    for register in commands:
        register(sub)

    p = sub.add_parser(
        "demo",
        help="a throwaway home with a git repository, documents and heinzels, then the cockpit",
    )
    p.add_argument(
        "--home",
        dest="demo_home",
        metavar="DIR",
        help="a new or empty folder (default: a temp dir)",
    )
    return parser


async def _run(args: argparse.Namespace) -> int:
    client: KernelClient
    if remote.wanted(args):
        home, client = await remote.open_remote(args)
    else:
        home = Home.resolve(args.home)
        if not getattr(args, "needs_kernel", True):
            return int(await args.run(home, args))
        client = await _connect_for(home, args)
    try:
        if getattr(args, "run", None) is cmd_tick and args.interval is None:
            from hz_kernel.commands.tick import tick_interval

            args.interval = tick_interval(home.settings)
        command: Command = args.run
        return await command(client, args)
    except Queued as queued:
        if getattr(args, "json", False):
            _emit_json(queued.report())
        else:
            name = getattr(args, "name", None) or queued.request.heinzel
            sys.stdout.write(queued.line(name) + "\n")
        return 0
    finally:
        await client.close()


async def _connect_for(home: Home, args: argparse.Namespace) -> KernelClient:
    """The kernel a command runs on: ``hz tick`` embedded (never beside a daemon); a write on
    the daemon, started if need be; a read on a running daemon, else embedded. An embedded
    write to a spine another process holds is queued (``hz_kernel.held``)."""
    if args.run is cmd_tick:
        return await connect_ticker(home)
    start = args.run in _WRITES and may_start(home, embedded=args.embedded)
    return await connect(home, start=start, queue_held=True)


Beside = Callable[[asyncio.Event], Awaitable[None]]
#: Runs the cockpit: ``(home, client, beside) -> exit code``. Given by the ``hz`` entry point
#: (``hz_tui.entry``), so the kernel's command line never imports the cockpit itself.
Cockpit = Callable[[Home, KernelClient, Sequence[Beside]], Awaitable[int]]


async def _cockpit(
    explicit_home: str | None,
    cockpit: Cockpit | None,
    beside: Sequence[Beside] = (),
    *,
    embedded: bool = False,
) -> int:
    """``hz`` alone: the cockpit on the home's daemon, adopted or started here (the header says
    which), so its work outlives the window; on a kernel embedded here under ``--embedded``.

    An embedded kernel lives as long as the cockpit, so it is made long-lived
    (turns run in the background, a command answers at once) and the tick
    runs beside the cockpit every ``HZ_TICK_SECONDS``. The cockpit package is
    imported by the ``hz`` entry point only when it runs, so the other
    commands never pay for Textual.
    """
    run_cockpit = _need_cockpit(cockpit)
    home = Home.resolve(explicit_home)
    start = may_start(home, embedded=embedded)
    if start and inspect(home).state != "running":
        # Starting one takes seconds (its imports, its kernel): say so before the screen waits.
        sys.stderr.write(f"starting the daemon for {home.root}…\n")
        sys.stderr.flush()
    client = await connect(home, defer_kernel=True, start=start)
    jobs = list(beside)
    if isinstance(client, DeferredClient):
        jobs.append(partial(_tick_beside, client))
    try:
        return await run_cockpit(home, client, jobs)
    finally:
        await client.close()


async def _remote_cockpit(args: argparse.Namespace, cockpit: Cockpit | None) -> int:
    """``hz --connect URL --token-file FILE``: the cockpit on a daemon's wire alone."""
    return await remote.cockpit(args, _need_cockpit(cockpit))


def _need_cockpit(cockpit: Cockpit | None) -> Cockpit:
    if cockpit is None:
        raise UsageError("HZU063", "this hz was started without its cockpit; run the hz command")
    return cockpit


async def _tick_beside(client: DeferredClient, stop: asyncio.Event) -> None:
    """The embedded cockpit's tick loop, from the moment its kernel is open until ``stop``.

    The cockpit opens the kernel once its first frame is drawn, so the
    kernel's loading never delays that frame.
    """
    opened = asyncio.ensure_future(client.opened.wait())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({opened, stopping}, return_when=asyncio.FIRST_COMPLETED)
    opened.cancel()
    stopping.cancel()
    if stop.is_set():
        return
    from hz_kernel.commands.tick import run_tick_loop, tick_interval

    await run_tick_loop(client.kernel, tick_interval(client.home.settings), stop)


async def _demo(explicit_root: str | None, cockpit: Cockpit | None, *, embedded: bool) -> int:
    """``hz demo``: build a throwaway home (``hz_kernel.demo``), then open the cockpit on it.

    The cockpit runs on a daemon started for the demo home (unless
    ``--embedded``); as the home is thrown away, that daemon stops with it.
    """
    from hz_kernel import demo

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    demo.demo_environment()
    world = await demo.build(demo.demo_root(explicit_root), say=say)
    for line in demo.summary(world):
        say(line)
    committing = partial(demo.keep_committing, world)
    try:
        return await _cockpit(str(world.home.root), cockpit, beside=[committing], embedded=embedded)
    finally:
        from hz_kernel.daemon import lifecycle

        stopped = await lifecycle.stop(world.home)
        if stopped.stopped is not None:
            say(f"stopped the demo's daemon (pid {stopped.stopped})")


def main(
    argv: Sequence[str] | None = None,
    *,
    cockpit: Cockpit | None = None,
    commands: Sequence[Register] = (),
) -> int:
    parser = build_parser(commands)
    args = parser.parse_args(argv)
    job: Coroutine[Any, Any, int]
    # A Textual driver named in the environment draws elsewhere (``hz serve``'s browser tabs).
    screen = (sys.stdin.isatty() and sys.stdout.isatty()) or bool(os.environ.get("TEXTUAL_DRIVER"))
    if args.group in (None, "demo") and not screen:
        sys.stderr.write("HZU062: the cockpit needs a terminal; hz --help lists the commands\n")
        return 2
    if args.group in (None, "demo") and remote.wanted(args):
        job = _remote_cockpit(args, cockpit)
    elif args.group is None:
        job = _cockpit(args.home, cockpit, embedded=args.embedded)
    elif args.group == "demo":
        job = _demo(args.demo_home, cockpit, embedded=args.embedded)
    elif getattr(args, "run", None):
        job = _run(args)
    else:
        parser.print_help()
        return 0
    out = _Shown(sys.stdout)
    try:
        if args.group in (None, "demo"):
            return asyncio.run(job)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(_Shown(sys.stderr)):
            code = asyncio.run(job)
            out.flush()  # a reader that went away is found here, not at the interpreter's exit
            return code
    except BrokenPipeError as exc:
        if not out.reader_gone:
            return _internal_error(exc)
        out.discard()
        return EXIT_BROKEN_PIPE
    except HzError as exc:
        sys.stderr.write(shown(exc.one_line()) + "\n")
        return exc.exit_code
    except ValidationError as exc:
        if exc.title not in {operation.request.__name__ for operation in ops.OPERATIONS.values()}:
            return _internal_error(exc)
        first = exc.errors()[0]
        place = ".".join(str(part) for part in first["loc"]) or None
        wrong = UsageError("HZU101", first["msg"], place)
        sys.stderr.write(shown(wrong.one_line()) + "\n")
        return wrong.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        return _internal_error(exc)


def _internal_error(exc: Exception) -> int:
    if os.environ.get("HZ_DEBUG"):
        raise exc
    sys.stderr.write(
        echoed(
            f"HZX001: internal error: {type(exc).__name__}: {str(exc)[:300]} "
            "(run with HZ_DEBUG=1 for the traceback, and please report it)"
        )
        + "\n"
    )
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
