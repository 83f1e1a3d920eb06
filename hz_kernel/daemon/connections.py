"""What a connection may cost the daemon: no local process can starve it of sockets.

Any local process can open connections to the daemon's port, token or not.
Left alone, uvicorn keeps each one until its client speaks, so a thousand
idle connections exhaust the daemon's file descriptors: ``accept`` fails
with ``EMFILE`` and nobody, a client with the token included, gets in. The
rules here sit below the app, in the HTTP protocol of each connection:

* a connection must send a request carrying the daemon's token within
  ``header_timeout_seconds`` of connecting, or it is cut;
* at most ``max_unauthenticated`` connections may be waiting to do so: a new
  one over that cap cuts the oldest waiting one (a real client speaks at
  once, so the oldest is the least likely to be one);
* all connections together stay inside a budget derived from
  ``RLIMIT_NOFILE`` (its soft limit raised towards the hard one at start),
  which keeps a reserve of descriptors for the kernel itself, and leaves
  everything beyond the waiting cap to clients that showed the token;
* a connection whose reader accepts nothing for ``send_timeout_seconds``
  while a response waits to be written is cut, so a write blocked on a
  reader that stopped reading (a stalled feed) never holds a connection;
* an idle keep-alive connection closes after ``idle_timeout_seconds``;
* what a connection without the token provokes in uvicorn's log (a malformed
  request, an upgrade we do not serve) is counted and reported at most once
  a minute, so no local process can flush the daemon's log by rotation.

Cutting is ``transport.abort()``: the descriptor is released at once,
whatever was left unsent. The token check here only sorts connections; the
app's ``Guard`` still checks every request in full.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import math
import os
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, ClassVar

from uvicorn.protocols.http.h11_impl import H11Protocol

from hz_kernel.config import DaemonSettings

log = logging.getLogger("hz.daemon")

#: Connections uvicorn accepts in one pass of the loop (also the listen backlog). Up to a
#: few passes' worth are open before any of them is counted, so the budget keeps them free.
ACCEPT_BATCH = 64
#: The soft ``RLIMIT_NOFILE`` is raised at most this far: children inherit it.
FD_CEILING = 65_536
#: Descriptors kept for the kernel itself (spines, the index, tools, models): at least this…
KERNEL_RESERVE_MIN = 64
#: …or this share of the limit, whichever is more.
KERNEL_RESERVE_SHARE = 8
#: The waiting cap takes at most this share of the connection budget.
WAITING_SHARE = 4
#: Cuts over the caps are reported at most once per this many seconds.
REPORT_EVERY_S = 60.0


def raise_fd_limit() -> int | None:
    """Raise the soft ``RLIMIT_NOFILE`` towards the hard one; the soft limit now in force.

    None where the limit cannot be read (no ``resource`` module) or is unlimited.
    """
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    ceiling = FD_CEILING if hard == resource.RLIM_INFINITY else min(hard, FD_CEILING)
    if soft != resource.RLIM_INFINITY and soft < ceiling:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
            soft = ceiling
    return None if soft == resource.RLIM_INFINITY else soft


def fds_in_use() -> int:
    """Descriptors this process holds now (0 where the OS does not list them)."""
    for listing in ("/proc/self/fd", "/dev/fd"):
        with contextlib.suppress(OSError):
            return len(os.listdir(listing))
    return 0


@dataclass(frozen=True)
class ConnectionLimits:
    """The caps one daemon serves under, fixed at start."""

    header_timeout_s: float
    idle_timeout_s: float
    send_timeout_s: float
    max_unauthenticated: int
    max_connections: int | None
    """All connections together; None when the descriptor limit is unknown."""
    fd_limit: int | None

    @classmethod
    def derive(
        cls, settings: DaemonSettings, fd_limit: int | None, in_use: int
    ) -> ConnectionLimits:
        """Caps from the settings, bounded by the descriptors left after a reserve."""
        waiting = settings.max_unauthenticated_connections
        total: int | None = None
        if fd_limit is not None:
            reserve = max(KERNEL_RESERVE_MIN, fd_limit // KERNEL_RESERVE_SHARE)
            total = max(16, fd_limit - in_use - reserve - 2 * ACCEPT_BATCH)
            waiting = max(4, min(waiting, total // WAITING_SHARE))
        return cls(
            header_timeout_s=settings.header_timeout_seconds,
            idle_timeout_s=settings.idle_timeout_seconds,
            send_timeout_s=settings.send_timeout_seconds,
            max_unauthenticated=waiting,
            max_connections=total,
            fd_limit=fd_limit,
        )

    @classmethod
    def at_start(cls, settings: DaemonSettings) -> ConnectionLimits:
        """Raise the descriptor limit, then derive the caps from what it allows."""
        return cls.derive(settings, raise_fd_limit(), fds_in_use())

    def describe(self) -> str:
        total = "unbounded" if self.max_connections is None else str(self.max_connections)
        return (
            f"connections: at most {total} ({self.max_unauthenticated} without the token, "
            f"each for {self.header_timeout_s:g}s), descriptor limit {self.fd_limit or 'unknown'}"
        )


class Warden:
    """Counts a daemon's connections and cuts the ones the caps do not allow."""

    def __init__(self, limits: ConnectionLimits, token: str) -> None:
        self.limits = limits
        self._token = f"Bearer {token}".encode()
        self._open: set[GuardedProtocol] = set()
        self._waiting: OrderedDict[GuardedProtocol, None] = OrderedDict()
        self._cut_unreported = 0
        self._reported_at = -math.inf
        self._noise_unreported = 0
        self._noise_reported_at = -math.inf

    def admit(self, connection: GuardedProtocol) -> None:
        """A new connection waits for its token; over a cap, the oldest waiting one goes."""
        self._open.add(connection)
        self._waiting[connection] = None
        total = self.limits.max_connections
        while self._waiting and (
            len(self._waiting) > self.limits.max_unauthenticated
            or (total is not None and len(self._open) > total)
        ):
            oldest = next(iter(self._waiting))
            oldest.cut()
            self._count_cut()

    def shows_token(self, headers: list[tuple[bytes, bytes]]) -> bool:
        token = next((value for name, value in headers if name == b"authorization"), b"")
        return hmac.compare_digest(token, self._token)

    def trust(self, connection: GuardedProtocol) -> None:
        self._waiting.pop(connection, None)

    def forget(self, connection: GuardedProtocol) -> None:
        self._open.discard(connection)
        self._waiting.pop(connection, None)

    def _count_cut(self) -> None:
        self._cut_unreported += 1
        now = time.monotonic()
        if now - self._reported_at >= REPORT_EVERY_S:
            log.warning(
                "connections: cut %d without the token over the caps "
                "(at most %d waiting, %s in all)",
                self._cut_unreported,
                self.limits.max_unauthenticated,
                self.limits.max_connections or "no cap",
            )
            self._cut_unreported = 0
            self._reported_at = now

    def note_untrusted(self, message: str) -> None:
        """A warning uvicorn raised for a connection without the token: counted, not logged."""
        self._noise_unreported += 1
        now = time.monotonic()
        if now - self._noise_reported_at >= REPORT_EVERY_S:
            log.warning(
                "connections: %d requests without the token refused before the app (last: %s)",
                self._noise_unreported,
                message[:120],
            )
            self._noise_unreported = 0
            self._noise_reported_at = now


class _ConnectionLog(logging.Logger):
    """uvicorn's ``uvicorn.error`` logger for one connection: its warnings go to the
    ``Warden``'s count while the connection has not shown the token."""

    def __init__(self, connection: GuardedProtocol, logger: logging.Logger) -> None:
        super().__init__(logger.name, logger.getEffectiveLevel())
        self.parent = logger
        self.connection = connection

    def handle(self, record: logging.LogRecord) -> None:
        if record.levelno == logging.WARNING and not self.connection.check_token():
            self.connection.warden.note_untrusted(record.getMessage())
            return
        super().handle(record)


class GuardedProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol under a ``Warden``'s rules (bind one with ``protocol_for``)."""

    warden: ClassVar[Warden]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.trusted = False
        self.logger = _ConnectionLog(self, self.logger)
        self._deadline: asyncio.TimerHandle | None = None
        self._stall: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        limits = self.warden.limits
        self._deadline = self.loop.call_later(limits.header_timeout_s, self.cut)
        self.warden.admit(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.warden.forget(self)
        self._cancel_timers()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        self.check_token()

    def check_token(self) -> bool:
        """Trust the connection once a request of it has shown the token; whether it is trusted."""
        if not self.trusted and self.headers is not None and self.warden.shows_token(self.headers):
            self.trusted = True
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            self.warden.trust(self)
        return self.trusted

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stall is None:
            self._stall = self.loop.call_later(self.warden.limits.send_timeout_s, self._stalled)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None

    def cut(self) -> None:
        """Drop the connection now, releasing its descriptor whatever is left unsent."""
        self.warden.forget(self)
        self._cancel_timers()
        self.transport.abort()

    def _stalled(self) -> None:
        self._stall = None
        client = f"{self.client[0]}:{self.client[1]}" if self.client else "a local client"
        log.info(
            "connections: cut %s, which read nothing for %gs",
            client,
            self.warden.limits.send_timeout_s,
        )
        self.cut()

    def _cancel_timers(self) -> None:
        for timer in (self._deadline, self._stall):
            if timer is not None:
                timer.cancel()
        self._deadline = self._stall = None


def protocol_for(warden: Warden) -> type[GuardedProtocol]:
    """The protocol class to hand uvicorn (``Config(http=…)``) for one daemon."""
    return type("DaemonProtocol", (GuardedProtocol,), {"warden": warden})
