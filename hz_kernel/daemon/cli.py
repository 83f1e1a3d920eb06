"""``hz daemon start|stop|status|restart [--foreground] [--json]``.

These commands manage the daemon itself, so they take the home, not a
kernel client (``needs_kernel=False``). Exit codes: ``start``, ``stop`` and
``restart`` exit 0 when the daemon ends up in the state asked for (a
``stop`` with no daemon running is a success: there is nothing to stop);
``status`` exits 0 when a daemon runs and answers with a fresh tick, 1
with the coded line ``HZD041`` when none runs and ``HZD070`` when its tick
has not finished within two intervals (``--json`` prints the report either
way).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import orjson

from hz_kernel.errors import HzError
from hz_kernel.home import Home

if TYPE_CHECKING:
    from hz_kernel.daemon.lifecycle import DaemonReport


def _emit(report: DaemonReport) -> None:
    sys.stdout.write(
        orjson.dumps(report.model_dump(mode="json"), option=orjson.OPT_INDENT_2).decode()
    )
    sys.stdout.write("\n")


def _uptime(seconds: float | None) -> str:
    whole = int(seconds or 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _describe(report: DaemonReport) -> str:
    tick = f"  last tick {report.tick_age_s:.0f}s ago" if report.tick_age_s is not None else ""
    return (
        f"pid {report.pid}  {report.address}  protocol {report.protocol}  "
        f"up {_uptime(report.uptime_s)}  heinzels {report.heinzels}{tick}"
    )


def _load(report: DaemonReport) -> str:
    """The admission line: the true running and queued work, the limits, the memory sample."""
    memory = (
        f"{report.memory_available_mb} MB free"
        if report.memory_available_mb is not None
        else "free memory unknown"
    )
    return (
        f"turns {report.turns_running} running, {report.turns_queued} queued "
        f"(max {report.max_concurrent_turns})  attempts {report.attempts_running} running, "
        f"{report.attempts_queued} queued (max {report.max_concurrent_attempts})  "
        f"memory {memory} (floor {report.memory_floor_mb} MB)"
    )


def _note_stale(report: DaemonReport) -> None:
    if report.stale_pid is not None:
        sys.stdout.write(
            f"found a stale daemon.json (pid {report.stale_pid} is gone); took it over\n"
        )


async def cmd_start(home: Home, args: argparse.Namespace) -> int:
    from hz_kernel.daemon import lifecycle  # the kernel's modules: only for this command

    if args.foreground:
        await lifecycle.serve(home)
        return 0
    report = await lifecycle.start(home)
    if args.json:
        _emit(report)
        return 0
    _note_stale(report)
    what = "daemon already running" if report.adopted else "started daemon"
    sys.stdout.write(f"{what}: {_describe(report)}\n")
    return 0


async def cmd_stop(home: Home, args: argparse.Namespace) -> int:
    from hz_kernel.daemon import lifecycle  # the kernel's modules: only for this command

    report = await lifecycle.stop(home)
    if args.json:
        _emit(report)
    elif report.stopped is not None:
        sys.stdout.write(f"stopped daemon pid {report.stopped}\n")
    else:
        stale = f" (stale daemon.json names pid {report.stale_pid})" if report.stale_pid else ""
        sys.stdout.write(f"daemon is not running{stale}\n")
    return 0


async def cmd_status(home: Home, args: argparse.Namespace) -> int:
    from hz_kernel.daemon import lifecycle  # the kernel's modules: only for this command

    report = await lifecycle.status(home)
    if args.json:
        _emit(report)
    elif report.running:
        sys.stdout.write(f"running: {_describe(report)}\n{_load(report)}\n")
    unhealthy = report.unhealthy()
    if unhealthy is not None:
        if not args.json:
            sys.stderr.write(unhealthy.one_line() + "\n")
        return 1
    if report.running:
        return 0
    if not args.json:
        stale = f" (stale daemon.json names pid {report.stale_pid})" if report.stale_pid else ""
        sys.stderr.write(HzError("HZD041", f"daemon is not running{stale}").one_line() + "\n")
    return 1


async def cmd_restart(home: Home, args: argparse.Namespace) -> int:
    from hz_kernel.daemon import lifecycle  # the kernel's modules: only for this command

    report = await lifecycle.restart(home)
    if args.json:
        _emit(report)
        return 0
    if report.stopped is not None:
        sys.stdout.write(f"stopped daemon pid {report.stopped}\n")
    sys.stdout.write(f"started daemon: {_describe(report)}\n")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``hz daemon …`` to the main parser."""
    daemon = subparsers.add_parser("daemon", help="run the kernel as a local daemon")
    commands = daemon.add_subparsers(dest="command", required=True, parser_class=type(daemon))

    p = commands.add_parser("start", help="start the daemon detached (or adopt a running one)")
    p.add_argument(
        "--foreground", action="store_true", help="serve in this process (systemd, launchd)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_start, needs_kernel=False)

    p = commands.add_parser("stop", help="ask the daemon to exit and wait until it has")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_stop, needs_kernel=False)

    p = commands.add_parser(
        "status", help="pid, address, uptime, heinzels; turns running and queued, limits, memory"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_status, needs_kernel=False)

    p = commands.add_parser("restart", help="stop, then start")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_restart, needs_kernel=False)
