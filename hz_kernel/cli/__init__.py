"""The ``hz`` command line.

Exit codes are a contract: 0 success, 1 an error (one line on stderr that
starts with its code, e.g. ``HZS010: …``), 2 a usage error. Every command
that prints data takes ``--json``. Commands reach the kernel through a
``KernelClient`` only.

One module per command group: ``store``, ``lifecycle``, ``turns`` (with
``tail``) and ``tick`` mirror the kernel's ``hz_kernel.commands``; ``cockpit``
is ``hz`` alone and ``hz demo``; ``hz daemon`` is ``hz_kernel.daemon.cli``.
This module builds the parser from them and runs what it parsed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hz_kernel import operations as ops
from hz_kernel import remote
from hz_kernel.cli import doctor, graph, lifecycle, mcp, store, team, tick, turns
from hz_kernel.cli.cockpit import (
    Cockpit,
    open_cockpit,
    open_demo,
    open_remote_cockpit,
    register_demo,
)
from hz_kernel.cli.output import EXIT_BROKEN_PIPE, Shown, emit_json, shown
from hz_kernel.cli.parser import WRITES, Command, Parser, Register
from hz_kernel.client import DeferredClient, KernelClient, LocalClient
from hz_kernel.connect import connect, connect_ticker, may_start
from hz_kernel.daemon.cli import register as register_daemon
from hz_kernel.errors import (
    HzError,
    Interrupted,
    UsageError,
    echoed,
    field_problem,
    interrupted,
    say_interrupted,
)
from hz_kernel.held import Queued
from hz_kernel.home import Home


def build_parser(commands: Sequence[Register] = ()) -> argparse.ArgumentParser:
    """Every group's commands, in the order ``hz --help`` lists them; ``commands`` come from
    outside the kernel (``hz serve``)."""
    parser = Parser(prog="hz", description="Durable agents that keep documents true.")
    parser.add_argument("--home", help="the hz home (default: $HZ_HOME or the user data dir)")
    remote.add_options(parser)
    parser.add_argument(
        "--embedded",
        action="store_true",
        help="never start the daemon: run the kernel in this process when none serves the home",
    )
    sub = parser.add_subparsers(dest="group", parser_class=Parser)

    heinzel = sub.add_parser("heinzel", help="manage heinzels")
    hsub = heinzel.add_subparsers(dest="command", required=True, parser_class=Parser)
    store.register_heinzel(hsub)
    lifecycle.register_heinzel(hsub)
    turns.register_heinzel(hsub)
    graph.register_heinzel(hsub)
    turns.register(sub)
    tick.register(sub)
    doctor.register(sub)
    mcp.register(sub)
    graph.register(sub)
    team.register(sub)
    lifecycle.register(sub)
    register_daemon(sub)
    for register in commands:
        register(sub)
    register_demo(sub)
    return parser


async def _run(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as scratch:
        return await _run_in(args, scratch)


async def _run_in(args: argparse.Namespace, scratch: contextlib.ExitStack) -> int:
    client: KernelClient
    try:
        if remote.wanted(args):
            home, client = await remote.open_remote(args)
        else:
            home = Home.resolve(args.home)
            if not getattr(args, "needs_kernel", True):
                return int(await args.run(home, args))
            reads = args.run not in WRITES and args.run is not tick.cmd_tick
            if reads and not home.heinzel_root.exists():  # a read of an empty home stays empty
                import tempfile  # only here: no command's start pays for it

                folder = scratch.enter_context(tempfile.TemporaryDirectory(prefix="hz-read-"))
                home = home.scratch(Path(folder))
            client = await _connect_for(home, args)
    except asyncio.CancelledError:
        raise _interrupted(None) from None
    try:
        if getattr(args, "run", None) is tick.cmd_tick and args.interval is None:
            from hz_kernel.commands.tick import tick_interval

            args.interval = tick_interval(home.settings)
        command: Command = args.run
        return await command(client, args)
    except Queued as queued:
        if getattr(args, "json", False):
            emit_json(queued.report())
        else:
            name = getattr(args, "name", None) or queued.request.heinzel
            sys.stdout.write(queued.line(name) + "\n")
        return 0
    except asyncio.CancelledError:
        raise _interrupted(client, writes=getattr(args, "run", None) in WRITES) from None
    finally:
        await client.close()


def _interrupted(client: KernelClient | None, *, writes: bool = False) -> Interrupted:
    """Ctrl-C, which ``asyncio.run`` turns into cancelling the command: what was cut short.

    A daemon that was answering is not stopped by it, and a change the command asked of
    it may still be made; a kernel in this process stops, and a turn it ran resumes later.
    """
    if client is not None and not isinstance(client, LocalClient | DeferredClient):
        change = ", and the change it was asked for may still be made" if writes else ""
        return Interrupted(
            "HZD139",
            f"interrupted (Ctrl-C) while waiting for the {client.where}; the daemon runs on"
            + change,
        )
    return interrupted()


async def _connect_for(home: Home, args: argparse.Namespace) -> KernelClient:
    """The kernel a command runs on: ``hz tick`` embedded (never beside a daemon); a write on
    the daemon, started if need be; a read on a running daemon, else embedded. An embedded
    write to a spine another process holds is queued (``hz_kernel.held``); a listing embedded
    reads a current index without opening the kernel (``index_first``)."""
    if args.run is tick.cmd_tick:
        return await connect_ticker(home)
    start = args.run in WRITES and may_start(home, embedded=args.embedded)
    index_first = getattr(args, "index_first", False)
    return await connect(home, start=start, queue_held=True, index_first=index_first)


def main(
    argv: Sequence[str] | None = None,
    *,
    cockpit: Cockpit | None = None,
    commands: Sequence[Register] = (),
) -> int:
    """Run one command line; returns the exit code (``hz_tui.entry`` passes the cockpit)."""
    try:
        parser = build_parser(commands)
        args = parser.parse_args(argv)
    except KeyboardInterrupt:
        return say_interrupted()
    job: Coroutine[Any, Any, int]
    # A Textual driver named in the environment draws elsewhere (``hz serve``'s browser tabs).
    screen = (sys.stdin.isatty() and sys.stdout.isatty()) or bool(os.environ.get("TEXTUAL_DRIVER"))
    if args.group in (None, "demo") and not screen:
        sys.stderr.write("HZU062: the cockpit needs a terminal; hz --help lists the commands\n")
        return 2
    if args.group in (None, "demo") and remote.wanted(args):
        job = open_remote_cockpit(args, cockpit)
    elif args.group is None:
        job = open_cockpit(args.home, cockpit, embedded=args.embedded)
    elif args.group == "demo":
        job = open_demo(args.demo_home, cockpit, embedded=args.embedded)
    elif getattr(args, "run", None):
        job = _run(args)
    else:
        parser.print_help()
        return 0
    out = Shown(sys.stdout)
    try:
        if args.group in (None, "demo"):
            return asyncio.run(job)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(Shown(sys.stderr)):
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
        # A field the command line fills from a flag of another name is named by its flag.
        place = getattr(args, "flags", {}).get(place, place)
        wrong = UsageError("HZU101", field_problem(first), place)
        sys.stderr.write(shown(wrong.one_line()) + "\n")
        return wrong.exit_code
    except KeyboardInterrupt:
        # Ctrl-C outside the command's own handling (a second one, say); the cockpit has
        # put the terminal back and says nothing more.
        return 130 if args.group in (None, "demo") else say_interrupted()
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
