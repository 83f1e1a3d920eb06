"""``hz daemon start|stop|status|restart|logs|install|uninstall``.

These commands manage the daemon itself, so they take the home, not a
kernel client (``needs_kernel=False``). Exit codes: ``start``, ``stop`` and
``restart`` exit 0 when the daemon ends up in the state asked for (a
``stop`` with no daemon running is a success: there is nothing to stop);
``status`` exits 0 when a daemon runs and answers with a fresh tick, 1
with the coded line ``HZD041`` when none runs and ``HZD070`` when its tick
has not finished within two intervals (``--json`` prints the report either
way). ``logs`` prints the log's last lines (and follows it with ``-f``);
``install``/``uninstall`` put the daemon under the user's service manager.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

import orjson

from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.store.fsutil import atomic_write, store_error

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
    tick = ""
    if report.ticks == 0:  # tick_age_s then counts from the loop's start, not from a tick
        tick = "  no tick yet"
    elif report.tick_age_s is not None:
        tick = f"  last tick {report.tick_age_s:.0f}s ago"
    managed = f"  run by {report.supervisor}" if report.supervisor else ""
    return (
        f"pid {report.pid}  {report.address}  protocol {report.protocol}  "
        f"up {_uptime(report.uptime_s)}  heinzels {report.heinzels}{tick}{managed}"
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

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    report = await lifecycle.restart(
        home, drain_s=args.drain_timeout, say=None if args.json else say
    )
    for warning in report.warnings:
        sys.stderr.write(warning + "\n")
    if args.json:
        _emit(report)
        return 0
    if report.paused:
        paused = len(report.paused)
        turns = "1 turn" if paused == 1 else f"{paused} turns"
        them = "it" if paused == 1 else "them"
        sys.stdout.write(f"{turns} paused at a step boundary; the new daemon resumes {them}\n")
    if report.stopped is not None:
        sys.stdout.write(f"stopped daemon pid {report.stopped}\n")
    sys.stdout.write(f"started daemon: {_describe(report)}\n")
    return 0


#: How often ``hz daemon logs -f`` looks for new lines.
FOLLOW_POLL_S = 0.2


async def cmd_logs(home: Home, args: argparse.Namespace) -> int:
    from hz_kernel import logfiles
    from hz_kernel.daemon.discovery import inspect

    found = inspect(home)
    running = found.discovery if found.state == "running" else None
    if running is not None and running.supervisor == "systemd":
        follow = " -f" if args.follow else ""
        sys.stderr.write(
            f"the daemon (pid {running.pid}) runs under systemd and logs to the journal: "
            f"journalctl --user -u {running.unit}{follow}\n"
        )
        if args.follow:
            return 0
    path = logfiles.log_path(home.root)
    logfiles.refuse_odd_log(home.root)
    follower = logfiles.Follower(home.root)
    follower.start()
    lines = logfiles.tail(home.root, args.lines)
    if not lines and not args.follow and not path.exists():
        sys.stderr.write(HzError("HZD156", "no daemon log here yet", str(path)).one_line() + "\n")
        return 1
    _write_lines(lines)
    try:
        while args.follow:
            _write_lines(follower.read())
            await asyncio.sleep(FOLLOW_POLL_S)
    finally:
        follower.close()
    return 0


def _write_lines(lines: list[str]) -> None:
    if lines:
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()


async def cmd_install(home: Home, args: argparse.Namespace) -> int:
    from hz_kernel.daemon import lifecycle, service
    from hz_kernel.daemon.discovery import inspect

    unit = service.service_file(home, args.manager)
    found = inspect(home)
    detached = found.state == "running" and found.discovery and found.discovery.supervisor is None
    if args.dry_run:
        if detached and found.discovery:
            sys.stdout.write(
                f"# would stop daemon pid {found.discovery.pid} first: {unit.manager} runs it "
                "from then on\n"
            )
        sys.stdout.write(f"# would write {unit.path}\n{unit.text}")
        for argv in unit.enable:
            sys.stdout.write(f"# would run: {' '.join(argv)}\n")
        return 0
    other = service.installed_home(unit)
    if other is not None and other != str(home.root) and not args.force:
        raise HzError(
            "HZD155",
            f"{unit.path.name} already serves the home {other}; --force replaces it",
            str(unit.path),
        )
    if detached:
        stopped = await lifecycle.stop(home)
        sys.stdout.write(f"stopped daemon pid {stopped.stopped}: {unit.manager} runs it now\n")
    try:  # whatever stands at the unit's path is replaced, never opened
        unit.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(unit.path, unit.text.encode("utf-8"))
    except OSError as exc:
        raise store_error(exc, unit.path) from None
    sys.stdout.write(f"wrote {unit.path}\n")
    for argv in unit.enable:
        service.run_manager(argv)
    sys.stdout.write(f"enabled and started {unit.path.name} ({unit.manager}, restart on failure)\n")
    return 0


async def cmd_uninstall(home: Home, args: argparse.Namespace) -> int:
    from hz_kernel.daemon import service

    unit = service.service_file(home, args.manager)
    if not unit.path.exists():
        sys.stdout.write(f"nothing to uninstall: {unit.path} does not exist\n")
        return 0
    if args.dry_run:
        for argv in unit.disable:
            sys.stdout.write(f"# would run: {' '.join(argv)}\n")
        sys.stdout.write(f"# would remove {unit.path}\n")
        return 0
    service.run_manager(unit.disable[0])
    unit.path.unlink()
    for argv in unit.disable[1:]:
        service.run_manager(argv)
    sys.stdout.write(f"stopped and removed {unit.path}\n")
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

    p = commands.add_parser(
        "restart", help="let running turns reach a step boundary, stop, start as before"
    )
    p.add_argument(
        "--drain-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long running turns may take to reach a step boundary (default 60)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_restart, needs_kernel=False)

    p = commands.add_parser("logs", help="the daemon log's last lines; -f follows it")
    p.add_argument("-n", "--lines", type=int, default=50, metavar="N", help="default 50")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    p.set_defaults(run=cmd_logs, needs_kernel=False)

    for name, run, what in (
        ("install", cmd_install, "write and enable a user service that runs the daemon"),
        ("uninstall", cmd_uninstall, "disable and remove that user service"),
    ):
        p = commands.add_parser(name, help=what)
        p.add_argument("--manager", choices=["systemd", "launchd"], default=None,
                       help="default: systemd on Linux, launchd on macOS")  # fmt: skip
        p.add_argument("--dry-run", action="store_true", help="print what it would do")
        if name == "install":
            p.add_argument("--force", action="store_true", help="replace a unit of another home")
        p.set_defaults(run=run, needs_kernel=False)
