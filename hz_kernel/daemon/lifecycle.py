"""Starting, adopting, stopping and serving the daemon of one home.

Three files coordinate it, all under the home:

* ``kernel.lock`` (flock): held by whichever process runs the kernel of the
  home, the daemon or an embedded kernel that ticks. Only its holder may
  tick, so two kernels never work the same home at once. The daemon holds
  it for its whole life; the kernel releases it when the process dies.
* ``daemon.start.lock`` (flock): held by a launcher while it checks for a
  daemon and spawns one, so racing launchers end with one daemon: the
  loser finds the winner's discovery file and adopts it.
* ``daemon.json``: the running daemon's pid, address, token and protocol
  (0600, written atomically once the socket listens, removed on a clean
  exit). A file whose kernel lock nobody holds, or whose pid is gone, is
  stale: it is reported and taken over.

A live daemon that fails its health check is reported unreachable
(``HZD040``); nothing is removed and no second daemon is started. A daemon
that answers but has not finished a tick within two intervals is reported
unhealthy (``HZD070``): its tick loop is stuck or gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import re
import secrets
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hz_kernel.api import KernelLoad, TurnActivity
from hz_kernel.client import LocalClient
from hz_kernel.clock import now_utc
from hz_kernel.commands.tick import TickPulse, run_tick_loop, tick_interval
from hz_kernel.config import DaemonSettings
from hz_kernel.daemon import logs, service, startenv
from hz_kernel.daemon.discovery import (
    HEALTH_TIMEOUT_S,
    KERNEL_LOCK_NAME,
    KernelBusy,
    KernelLock,
    ask_health,
    inspect,
    pid_alive,
    read_discovery,
    remove_discovery,
    write_discovery,
)
from hz_kernel.daemon.feed import FeedHub
from hz_kernel.daemon.protocol import PROTOCOL_VERSION, Discovery, DrainReport, Health
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.http_client import HttpClient
from hz_kernel.kernel import Kernel
from hz_kernel.logfiles import LOG_NAME
from hz_kernel.loopback import loopback_address
from hz_kernel.store.fsutil import FILE_MODE, NotRegularFile, open_regular, store_error
from hz_kernel.store.locks import read_holder
from hz_kernel.tick.report import TickReport

log = logging.getLogger("hz.daemon")

START_LOCK_NAME = "daemon.start.lock"
SOCKET_NAME = "daemon.sock"
#: The bench-only knob: set to 1 in the daemon's environment to serve ``/v1/bench/feed``.
BENCH_FEED_ENV = "HZ_BENCH_FEED"

START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
#: How long a restart lets running turns reach a step boundary before it stops the daemon.
DRAIN_TIMEOUT_S = 60.0
SEND_BUFFER_BYTES = 128 << 10
_POLL_S = 0.05
_CODED_LINE = re.compile(r"^(HZ[A-Z]\d{3}): (.*)$")


# -- reports ---------------------------------------------------------------------------------


class DaemonReport(BaseModel):
    """What ``hz daemon start|stop|status|restart`` print (``--json``: this model)."""

    model_config = ConfigDict(defer_build=True)

    running: bool
    pid: int | None = None
    address: str | None = None
    protocol: int | None = None
    started_at: str | None = None
    uptime_s: float | None = None
    heinzels: int | None = None
    adopted: bool = False
    stopped: int | None = None
    stale_pid: int | None = None
    healthy: bool | None = None
    ticks: int | None = None
    tick_seconds: float | None = None
    tick_age_s: float | None = None
    tick_error: str | None = None
    turns_running: int | None = None
    turns_queued: int | None = None
    attempts_running: int | None = None
    attempts_queued: int | None = None
    max_concurrent_turns: int | None = None
    max_concurrent_attempts: int | None = None
    memory_available_mb: int | None = None
    memory_floor_mb: int | None = None
    turns: list[TurnActivity] = []
    supervisor: str | None = None
    paused: list[str] = []
    """A restart's drain: turns that paused at a step boundary (the new daemon resumes them)."""
    still_running: list[str] = []
    """A restart's drain: turns still running when it gave up waiting (cut, then resumed)."""
    warnings: list[str] = []
    log: str

    @classmethod
    def of(cls, home: Home, health: Health | None = None, **extra: object) -> DaemonReport:
        fields: dict[str, object] = {"running": health is not None, "log": str(log_path(home))}
        if health is not None:
            fields |= {name: getattr(health, name) for name in _LOAD_FIELDS}
            fields |= {
                "pid": health.pid,
                "address": health.address,
                "protocol": health.protocol,
                "started_at": health.started_at,
                "uptime_s": health.uptime_s,
                "heinzels": health.heinzels,
                "healthy": health.healthy,
                "ticks": health.ticks,
                "tick_seconds": health.tick_seconds,
                "tick_age_s": health.tick_age_s,
                "tick_error": health.tick_error,
                "supervisor": health.supervisor,
            }
        return cls.model_validate(fields | extra)

    def unhealthy(self) -> HzError | None:
        """``HZD070`` when the daemon runs but its tick has not finished within two intervals."""
        if not self.running or self.healthy is not False:
            return None
        last = f"; the last one failed: {self.tick_error}" if self.tick_error else ""
        return HzError(
            "HZD070",
            f"the daemon (pid {self.pid}) answers but its tick has not finished for "
            f"{self.tick_age_s or 0:.0f}s (every {self.tick_seconds or 0:g}s expected){last}; "
            f"see {self.log}",
        )


#: The kernel's load as ``hz daemon status`` reports it (the tick has fields of its own).
_LOAD_FIELDS = [name for name in KernelLoad.model_fields if name != "tick"]


def log_path(home: Home) -> Path:
    return home.root / LOG_NAME


async def status(home: Home) -> DaemonReport:
    found = inspect(home)
    if found.state != "running" or found.discovery is None:
        return DaemonReport.of(home, stale_pid=found.stale_pid)
    return DaemonReport.of(home, await ask_health(found.discovery))


# -- start -----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def startup_lock(home: Home, timeout: float = START_TIMEOUT_S) -> AsyncIterator[None]:
    """Hold ``daemon.start.lock`` while checking for a daemon and spawning one."""
    path = home.root / START_LOCK_NAME
    try:
        fd = open_regular(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    except OSError as exc:
        raise store_error(exc, path) from None
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise HzError(
                        "HZD005", "another hz is starting the daemon and did not finish", str(path)
                    ) from None
                await asyncio.sleep(_POLL_S)
        yield
    finally:
        os.close(fd)


async def start(
    home: Home, *, timeout: float = START_TIMEOUT_S, like: startenv.StartRecord | None = None
) -> DaemonReport:
    """Adopt the running daemon, or spawn one detached and wait until it answers.

    ``like`` (a restart) spawns it with the command line, directory and
    environment that record says the previous daemon had.
    """
    async with startup_lock(home, timeout):
        found = inspect(home)
        if found.state == "running" and found.discovery is not None:
            return DaemonReport.of(home, await ask_health(found.discovery), adopted=True)
        if KernelLock.is_held(home):
            lock_path = home.root / KERNEL_LOCK_NAME
            raise KernelBusy(lock_path, read_holder(lock_path))
        logged = _log_size(home)
        process = _spawn(home, like)
        health = await _wait_until_serving(home, process, timeout, logged)
        return DaemonReport.of(home, health, stale_pid=found.stale_pid)


def _log_size(home: Home) -> int:
    try:
        return log_path(home).stat().st_size
    except FileNotFoundError:
        return 0


def _open_log(home: Home) -> int:
    """The live log, appended to: the daemon rotates it once its logging is set up."""
    path = log_path(home)
    try:
        return open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    except OSError as exc:
        raise store_error(exc, path) from None


def _spawn(home: Home, like: startenv.StartRecord | None = None) -> subprocess.Popen[bytes]:
    """The daemon in its own session: no terminal, no pipes back, output to the log.

    No service manager supervises it, so none of their variables pass on
    (the daemon would take itself for a service, and a restart would go there).
    The command is always this hz's own (``-P``: the working directory is not
    on the import path); a ``like`` record lends only its directory and its
    kept variables, so a tampered ``daemon.start.json`` never names the program.
    """
    argv = [sys.executable, "-P", "-m", "hz_kernel.cli", "--home", str(home.root)]
    argv += ["daemon", "start", "--foreground"]
    env = {k: v for k, v in os.environ.items() if k not in logs.SUPERVISOR_ENV}
    cwd = str(home.root)
    if like is not None:
        cwd = like.cwd if os.path.isdir(like.cwd) else cwd
        env, _ = like.environment(os.environ)
    log_fd = _open_log(home)
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            cwd=cwd,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(log_fd)


async def _wait_until_serving(
    home: Home, process: subprocess.Popen[bytes], timeout: float, logged: int
) -> Health:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise _start_failure(home, process.returncode, logged)
        discovery = read_discovery(home)
        if discovery is not None and discovery.pid == process.pid:
            with contextlib.suppress(HzError):
                return await ask_health(discovery, max(0.5, deadline - time.monotonic()))
        await asyncio.sleep(_POLL_S)
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    raise HzError("HZD003", f"the daemon did not answer within {timeout:.0f}s", str(log_path(home)))


def _start_failure(home: Home, returncode: int, logged: int) -> HzError:
    """The daemon's own coded error from what it logged, or a pointer to the log."""
    try:
        with os.fdopen(open_regular(log_path(home), os.O_RDONLY), "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(logged if logged <= size else 0)
            tail = handle.read()[-8192:].decode("utf-8", "replace").splitlines()
    except OSError:
        tail = []
    for line in reversed(tail):
        match = _CODED_LINE.match(line.strip())
        if match:
            return HzError(match.group(1), match.group(2))
    return HzError(
        "HZD003", f"the daemon exited at start (status {returncode})", str(log_path(home))
    )


# -- stop, restart ---------------------------------------------------------------------------


async def stop(home: Home, *, timeout: float = STOP_TIMEOUT_S) -> DaemonReport:
    """Ask the daemon to exit and wait until it has; SIGTERM if it will not answer, SIGKILL
    if that does not end it either (a stopped process, SIGSTOP, takes neither until it runs
    again, and would then stop long after the caller gave up). Killed, its running turns
    resume from their last checkpoint in the next kernel, as after any crash."""
    found = inspect(home)
    discovery = found.discovery
    if found.state != "running" or discovery is None:
        return DaemonReport.of(home, stale_pid=found.stale_pid)
    asked = False
    if discovery.protocol == PROTOCOL_VERSION:
        with contextlib.suppress(HzError):
            async with HttpClient(discovery, timeout=HEALTH_TIMEOUT_S) as client:
                await client.shutdown()
                asked = True
    if not asked:
        _terminate(discovery.pid)
    if not await _wait_until_gone(home, discovery.pid, timeout):
        if asked:
            _terminate(discovery.pid)
        if not await _wait_until_gone(home, discovery.pid, timeout / 2):
            _terminate(discovery.pid, signal.SIGKILL)
            if not await _wait_until_gone(home, discovery.pid, timeout / 2):
                raise HzError(
                    "HZD004", f"the daemon (pid {discovery.pid}) did not stop", str(log_path(home))
                )
    return DaemonReport.of(home, stopped=discovery.pid)


def _terminate(pid: int, signum: signal.Signals = signal.SIGTERM) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


async def _wait_until_gone(home: Home, pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid) or not KernelLock.is_held(home):
            return True
        await asyncio.sleep(_POLL_S)
    return False


async def restart(
    home: Home, *, drain_s: float = DRAIN_TIMEOUT_S, say: Callable[[str], None] | None = None
) -> DaemonReport:
    """Drain, then restart the daemon the way it was started: through its service manager
    when one runs it, else stop it and spawn the next one with its recorded command line
    and environment. The new daemon resumes the turns that paused at a step boundary.
    ``say`` hears at once what it does (a drain can take ``drain_s``)."""
    found = inspect(home)
    discovery = found.discovery
    if found.state != "running" or discovery is None:
        # A daemon that died (SIGKILL, a crash) still comes back as it was started.
        crashed = found.stale_pid and startenv.read_record(home, found.stale_pid)
        return await start(home, like=crashed or None)
    record = startenv.read_record(home, discovery.pid)
    warnings = []
    if record is not None:
        _, missing = record.environment(os.environ)
        if missing:
            warnings.append(
                HzError(
                    "HZD152",
                    f"the daemon was started with {', '.join(missing)} set; this environment "
                    "lacks it, so the new daemon runs without it",
                ).one_line()
            )
    if say is not None:
        say(await _draining_line(discovery, drain_s))
    drained = await _drain(discovery, drain_s)
    if drained.still_running:
        left = len(drained.still_running)
        turns, they = ("1 turn", "it is") if left == 1 else (f"{left} turns", "they are")
        warnings.append(
            HzError(
                "HZD158",
                f"{turns} did not reach a step boundary within "
                f"{drain_s:g}s; {they} cut and resume at their last checkpoint",
            ).one_line()
        )
    if discovery.supervisor is not None:
        try:
            service.run_manager(service.restart_command(discovery.supervisor, discovery.unit))
        except HzError:
            await _drain(discovery, 0, draining=False)
            raise
        report = DaemonReport.of(home, await _wait_for_successor(home, discovery.pid))
    else:
        await stop(home)
        report = await start(home, like=record)
    return report.model_copy(
        update={
            "stopped": discovery.pid,
            "paused": drained.paused,
            "still_running": drained.still_running,
            "warnings": warnings,
        }
    )


async def _draining_line(discovery: Discovery, timeout_s: float) -> str:
    """What a restart says before it drains: how many turns run, how long it may wait."""
    try:
        async with HttpClient(discovery, timeout=HEALTH_TIMEOUT_S) as client:
            running = (await client.health(HEALTH_TIMEOUT_S)).turns_running
    except HzError:
        return f"restarting daemon pid {discovery.pid}…"
    if not running:
        return f"restarting daemon pid {discovery.pid}: no turn is running…"
    turns = "1 turn" if running == 1 else f"{running} turns"
    return f"draining: {turns} running; waiting up to {timeout_s:g}s for a step boundary…"


async def _drain(discovery: Discovery, timeout_s: float, *, draining: bool = True) -> DrainReport:
    """Ask the daemon to drain (or to stop draining); a daemon that cannot is simply stopped."""
    if discovery.protocol != PROTOCOL_VERSION:
        return DrainReport()
    try:
        async with HttpClient(discovery, timeout=HEALTH_TIMEOUT_S) as client:
            return await client.drain(timeout_s, draining=draining)
    except HzError as exc:
        log.warning("drain: %s", exc.one_line())
        return DrainReport()


async def _wait_for_successor(home: Home, old_pid: int) -> Health:
    """The daemon the service manager started in place of ``old_pid``, once it answers."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        found = inspect(home)
        if found.state == "running" and found.discovery and found.discovery.pid != old_pid:
            with contextlib.suppress(HzError):
                return await ask_health(found.discovery)
        await asyncio.sleep(_POLL_S)
    raise HzError(
        "HZD153",
        f"the service manager did not bring up a new daemon within {START_TIMEOUT_S:.0f}s",
        str(log_path(home)),
    )


# -- serving (the daemon process itself) -----------------------------------------------------


def _loopback_host(host: str) -> str:
    address = loopback_address(host)
    if address is None:
        raise HzError("HZD001", "the daemon binds loopback addresses only", f"daemon.host={host}")
    return address


def _clear_socket_path(path: Path) -> None:
    """Remove a previous daemon's socket (we hold the lock); a directory there is ``HZS090``."""
    try:
        if stat.S_ISDIR(path.lstat().st_mode):
            raise store_error(NotRegularFile(path, "directory"), path)
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise store_error(exc, path) from None


def _listen(home: Home, settings: DaemonSettings) -> tuple[socket.socket, str, frozenset[str]]:
    """A listening socket, its address for clients, and the ``Host`` values it answers to."""
    if settings.unix_socket:
        path = home.root / SOCKET_NAME
        if len(os.fsencode(path)) > 100:
            raise HzError("HZD001", "the home's path is too long for a Unix socket", str(path))
        _clear_socket_path(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        previous = os.umask(0o177)
        try:
            sock.bind(str(path))
        except OSError as exc:
            sock.close()
            raise HzError("HZD006", f"cannot listen ({exc.strerror})", str(path)) from None
        finally:
            os.umask(previous)
        sock.listen(128)
        return sock, f"unix:{path}", frozenset({"localhost"})
    host = _loopback_host(settings.host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this: a feed reader that stops reading fills a small
    # kernel buffer, then its own queue, and overflows, instead of parking megabytes here.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
    try:
        sock.bind((host, settings.port))
    except OSError as exc:
        sock.close()
        raise HzError(
            "HZD006", f"cannot listen ({exc.strerror})", f"{host}:{settings.port}"
        ) from None
    sock.listen(128)
    port = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    return sock, f"http://{shown}:{port}", frozenset({f"{shown}:{port}", f"localhost:{port}"})


async def serve(home: Home) -> None:
    """Run the daemon in this process until asked to stop (``hz daemon start --foreground``)."""
    settings = home.settings.daemon
    logs.setup(home, settings)
    try:
        await _serve(home, settings)
    except HzError as exc:
        if not logs.stderr_is_logged(home):
            log.error("%s", exc.one_line())
        raise


async def _serve(home: Home, settings: DaemonSettings) -> None:
    interval = tick_interval(home.settings)
    lock = KernelLock(home).acquire(wait=2.0)
    try:
        previous = read_discovery(home)
        if previous is not None or home.discovery_path.exists():
            stale = f"pid {previous.pid}" if previous else "an unreadable file"
            log.info("taking over from a stale daemon.json (%s is gone)", stale)
        sock, address, hosts = _listen(home, settings)
        try:
            kernel = await Kernel.open(home, long_lived=True)
            kernel.runs_every_turn = True
            try:
                await _serve_on(home, settings, kernel, sock, address, hosts, interval)
            finally:
                await kernel.close()
        finally:
            sock.close()
            if settings.unix_socket:
                with contextlib.suppress(FileNotFoundError):
                    (home.root / SOCKET_NAME).unlink()
    finally:
        lock.release()


async def _serve_on(
    home: Home,
    settings: DaemonSettings,
    kernel: Kernel,
    sock: socket.socket,
    address: str,
    hosts: frozenset[str],
    tick_seconds: float,
) -> None:
    # The HTTP stack loads here, in the daemon, never in a command that only asks about it.
    from hz_kernel.daemon import app

    hub = FeedHub.of(kernel, queue_items=settings.feed_queue_items)
    kernel.observers.append(hub.observe)
    watching = asyncio.ensure_future(hub.watch())
    supervisor = logs.supervisor()
    discovery = Discovery(
        pid=os.getpid(),
        address=address,
        token=secrets.token_urlsafe(32),
        protocol=PROTOCOL_VERSION,
        started_at=now_utc().isoformat(timespec="seconds"),
        home=str(home.root),
        run=hub.run,
        supervisor=supervisor[0] if supervisor else None,
        unit=supervisor[1] if supervisor else None,
    )
    state = app.DaemonState(
        home=home,
        kernel=kernel,
        client=LocalClient(kernel, hub=hub),
        hub=hub,
        discovery=discovery,
        allowed_hosts=hosts,
        heartbeat_s=settings.feed_heartbeat_seconds,
        bench_feed=os.environ.get(BENCH_FEED_ENV) == "1",
        pulse=TickPulse(tick_seconds),
    )
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, state.request_shutdown)
    ticking = asyncio.ensure_future(
        run_tick_loop(kernel, tick_seconds, state.stopping, on_report=_TickLog(), pulse=state.pulse)
    )
    ticking.add_done_callback(_tick_ended)
    try:
        startenv.write_record(home)
        write_discovery(home, discovery)
        managed = f", run by {supervisor[0]} as {supervisor[1]}" if supervisor else ""
        log.info("serving %s at %s (pid %d%s)", home.root, address, discovery.pid, managed)
        await app.serve(state, sock)
    finally:
        state.stopping.set()
        # A tick in the middle of a turn is cancelled, as background turns are: the turn is
        # not ended, and the next start resumes it. Waiting for it could outlast any stop.
        ticking.cancel()
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await ticking
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        remove_discovery(home, discovery.pid)
        kernel.observers.remove(hub.observe)
        log.info("stopped (pid %d)", discovery.pid)


class _TickLog:
    """Logs each tick's problems, one line per distinct problem: a problem that comes back
    tick after tick (a damaged file, a failing fetch) is logged once, until it changes."""

    def __init__(self) -> None:
        self.last: set[str] = set()

    def __call__(self, report: TickReport) -> None:
        lines = {f"tick: {p.code}: {p.message} ({p.place or '-'})" for p in report.problems}
        for line in sorted(lines - self.last):
            log.warning("%s", line)
        self.last = lines
        if report.woken:
            woken = len(report.woken)
            log.info("tick: woke %s", "1 heinzel" if woken == 1 else f"{woken} heinzels")


def _tick_ended(task: asyncio.Future[None]) -> None:
    """The tick loop only ends with the daemon; anything else is logged, never swallowed
    (and the health check turns unhealthy, as no tick finishes any more)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("the tick loop stopped", exc_info=task.exception())
