"""Finding a home's daemon from the files it leaves, and asking it how it is.

The client side of the daemon's lifecycle, apart from starting and serving
(``hz_kernel.daemon.lifecycle``) so a head that only connects — the
cockpit, ``hz daemon status`` — does not load the kernel to do so. The
discovery file names the daemon; the home-level kernel lock proves it is
alive (a discovery file whose process is gone, or whose lock is free, is
stale).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import ValidationError

from hz_kernel.daemon.protocol import PROTOCOL_VERSION, Discovery, Health
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.store.fsutil import atomic_write, open_regular, read_nofollow, store_error
from hz_kernel.store.locks import FileLock, SpineBusy

KERNEL_LOCK_NAME = "kernel.lock"
HEALTH_TIMEOUT_S = 3.0
_POLL_S = 0.05

if TYPE_CHECKING:
    from hz_kernel.http_client import HttpClient


# -- the home-level kernel lock --------------------------------------------------------------


class KernelBusy(HzError):
    def __init__(self, path: Path, holder: int | None) -> None:
        who = f"process {holder}" if holder else "another process"
        super().__init__("HZD002", f"{who} already runs the kernel of this home", str(path))
        self.holder = holder


class KernelLock:
    """``<home>/kernel.lock``: held by the one process that runs (and ticks) a home's kernel.

    Use it as a context manager, or ``acquire()``/``release()``. ``wait``
    rides out the instant another process spends probing the lock.
    """

    def __init__(self, home: Home) -> None:
        self.path = home.root / KERNEL_LOCK_NAME
        self._lock = FileLock(self.path)

    def acquire(self, wait: float = 1.0) -> KernelLock:
        deadline = time.monotonic() + wait
        while True:
            try:
                self._lock.acquire()
                return self
            except SpineBusy as busy:
                if time.monotonic() >= deadline:
                    raise KernelBusy(self.path, busy.holder) from None
            time.sleep(_POLL_S)

    @property
    def held(self) -> bool:
        return self._lock.held

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> KernelLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    @staticmethod
    def is_held(home: Home) -> bool:
        """True while some process holds the kernel lock of ``home`` (probed, not taken)."""
        path = home.root / KERNEL_LOCK_NAME
        try:
            fd = open_regular(path, os.O_RDONLY)
        except OSError:
            return False  # missing, or not a lock file (a FIFO would block): taking it says which
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False


# -- discovery -------------------------------------------------------------------------------


def read_discovery(home: Home) -> Discovery | None:
    """The discovery file, or None when there is none or it cannot be understood."""
    try:
        return Discovery.model_validate_json(read_nofollow(home.discovery_path))
    except (OSError, ValidationError):
        return None


def write_discovery(home: Home, discovery: Discovery) -> None:
    try:
        atomic_write(home.discovery_path, discovery.model_dump_json(indent=2).encode() + b"\n")
    except OSError as exc:
        raise store_error(exc, home.discovery_path) from None


def remove_discovery(home: Home, pid: int) -> None:
    """Remove the discovery file if it still names ``pid`` (never a successor's)."""
    found = read_discovery(home)
    if found is not None and found.pid == pid:
        with contextlib.suppress(FileNotFoundError):
            home.discovery_path.unlink()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Found:
    """What the files say about a home's daemon, without asking it anything."""

    state: Literal["running", "stale", "absent"]
    discovery: Discovery | None = None

    @property
    def stale_pid(self) -> int | None:
        return self.discovery.pid if self.state == "stale" and self.discovery else None


def inspect(home: Home) -> Found:
    if not home.discovery_path.exists():
        return Found("absent")
    discovery = read_discovery(home)
    if discovery is not None and pid_alive(discovery.pid) and KernelLock.is_held(home):
        return Found("running", discovery)
    return Found("stale", discovery)


async def check_health(client: HttpClient, timeout: float = HEALTH_TIMEOUT_S) -> Health:
    """Ask a live daemon for its health: ``HZD020`` for another protocol, ``HZD040`` if silent
    (stopped with SIGSTOP, say), naming its pid and what ends it."""
    discovery = client.discovery
    if discovery.protocol != PROTOCOL_VERSION:
        raise HzError(
            "HZD020",
            f"the daemon (pid {discovery.pid}) speaks protocol {discovery.protocol}, this hz "
            f"{PROTOCOL_VERSION}; left alone — stop it with `hz daemon stop` once its work "
            "has settled",
        )
    try:
        return await client.health(timeout)
    except HzError as exc:
        if exc.code != "HZD040":
            raise
        raise HzError(
            "HZD040",
            f"{exc.message}: pid {discovery.pid} runs but does not answer; wait for it, or end "
            "it with `hz daemon stop` (its turns resume at the next start)",
            exc.place,
        ) from None


async def ask_health(discovery: Discovery, timeout: float = HEALTH_TIMEOUT_S) -> Health:
    """``check_health`` through a client of its own, for a single question."""
    from hz_kernel.http_client import HttpClient  # the HTTP stack, only once there is a daemon

    async with HttpClient(discovery) as client:
        return await check_health(client, timeout)
