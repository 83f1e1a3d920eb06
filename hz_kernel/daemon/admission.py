"""The admission controller: one FIFO gate for a kernel's turns and model attempts.

Every kernel owns one (the daemon's and an embedded one alike), built from
``[daemon]``: a turn takes one of ``max_concurrent_turns`` slots for as long
as it runs, and each model request inside it one of
``max_concurrent_attempts`` (a separate pool: a turn waiting for an
attempt slot holds no attempt slot, so the two never deadlock). Neither
starts while free memory is under the floor. Waiting work keeps the
deadline it came with; every decision records why it waited or why it was
refused (capacity, low memory, timeout). While anything waits or runs,
memory is sampled every ``poll_s``: a low sample blocks new work and
aborts running work, which then sees ``AdmissionAborted`` instead of a
bare cancellation.

Free memory is ``psutil``'s estimate of what can be used without swapping
(Linux ``MemAvailable``; free plus inactive pages on macOS; available
physical memory on Windows); on Linux ``MemAvailable`` is read straight
from ``/proc/meminfo`` where psutil would report it as is, since every turn
samples twice and psutil parses the whole file. These are resource
controls, not a sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import psutil
from pydantic import BaseModel, ConfigDict

from hz_kernel.clock import now_utc
from hz_kernel.config import DaemonSettings
from hz_kernel.errors import HzError

Kind = Literal["turn", "attempt"]
Blocker = Literal["capacity", "low-memory"]
Reason = Literal["free", "capacity", "low-memory", "timeout", "cancelled"]

FLOOR_MIN_MB = 1024
POLL_SECONDS = 0.25
_MB = 1 << 20


_MEMINFO = "/proc/meminfo"
_MEM_TOTAL = re.compile(rb"^MemTotal:\s+(\d+) kB$", re.MULTILINE)
_MEM_AVAILABLE = re.compile(rb"^MemAvailable:\s+(\d+) kB$", re.MULTILINE)


def memory_available_mb() -> int | None:
    """Memory available to new work, in MB; None where it cannot be read (no floor is enforced)."""
    available = _meminfo_available()
    if available is not None:
        return available // _MB
    try:
        return int(psutil.virtual_memory().available) // _MB
    except (OSError, RuntimeError):
        return None


def _meminfo_available() -> int | None:
    """Linux's ``MemAvailable`` in bytes, where psutil reports it unchanged: present, not zero
    and not above ``MemTotal`` (in a container psutil estimates instead); else None."""
    try:
        fd = os.open(_MEMINFO, os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 1 << 16)
    except OSError:
        return None
    finally:
        os.close(fd)
    total, available = _MEM_TOTAL.search(data), _MEM_AVAILABLE.search(data)
    if total is None or available is None:
        return None
    kib = int(available[1])
    return kib << 10 if 0 < kib <= int(total[1]) else None


def default_floor_mb() -> int:
    """The larger of 1024 MB and an eighth of the machine's RAM."""
    try:
        total = int(psutil.virtual_memory().total) // _MB
    except (OSError, RuntimeError):
        total = 0
    return max(FLOOR_MIN_MB, total // 8)


class Decision(BaseModel):
    """Why a piece of work started when it did, or why it never did."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    kind: Kind
    owner: str
    admitted: bool
    reason: Reason
    blocked_by: Blocker | None = None
    waited_s: float = 0.0


class AdmissionTimeout(HzError):
    def __init__(self, decision: Decision) -> None:
        super().__init__(
            "HZD060",
            f"{decision.kind} not admitted before its deadline "
            f"(waited {decision.waited_s:.1f}s for {decision.blocked_by or 'nothing'})",
            decision.owner,
        )
        self.decision = decision


class AdmissionAborted(HzError):
    def __init__(self, ticket: Ticket) -> None:
        super().__init__(
            "HZD061", f"{ticket.kind} aborted: free memory fell under the floor", ticket.owner
        )
        self.ticket = ticket


#: Told once, before a ticket starts to wait, why it waits (a turn journals it).
OnWait = Callable[[Blocker], Awaitable[None]]


@dataclass(eq=False)
class Ticket:
    """One piece of admitted (or waiting) work."""

    kind: Kind
    owner: str
    deadline: datetime | None
    since: datetime
    """When it asked, on the kernel's clock (what a status shows elapsed times from)."""
    queued_at: float = field(default_factory=time.monotonic)
    admitted_at: float | None = None
    admitted_since: datetime | None = None
    blocked_by: Blocker | None = None
    decision: Decision | None = None
    aborted: bool = False
    task: asyncio.Task[object] | None = None
    granted: asyncio.Future[None] | None = None


@dataclass
class _Pool:
    """One limit and the FIFO of tickets waiting for it."""

    limit: int
    used: int = 0
    queue: deque[Ticket] = field(default_factory=deque)


class AdmissionController:
    """FIFO admission under two concurrency limits and a free-memory floor."""

    def __init__(
        self,
        max_turns: int,
        max_attempts: int,
        floor_mb: int,
        *,
        sample: Callable[[], int | None] = memory_available_mb,
        poll_s: float = POLL_SECONDS,
        clock: Callable[[], datetime] = now_utc,
        history: int = 200,
    ) -> None:
        self.floor_mb = floor_mb
        self.last_sample: int | None = None
        self.decisions: deque[Decision] = deque(maxlen=history)
        self._pools: dict[Kind, _Pool] = {"turn": _Pool(max_turns), "attempt": _Pool(max_attempts)}
        self._sample = sample
        self._poll_s = poll_s
        self._clock = clock
        self._running: set[Ticket] = set()
        self._monitor: asyncio.Task[None] | None = None

    @classmethod
    def from_settings(cls, settings: DaemonSettings) -> AdmissionController:
        floor = settings.min_free_memory_mb
        return cls(
            settings.max_concurrent_turns,
            settings.max_concurrent_attempts,
            default_floor_mb() if floor is None else floor,
        )

    # -- what it reports -------------------------------------------------------------------

    @property
    def max_turns(self) -> int:
        return self._pools["turn"].limit

    @property
    def max_attempts(self) -> int:
        return self._pools["attempt"].limit

    def running(self, kind: Kind) -> int:
        return sum(1 for ticket in self._running if ticket.kind == kind)

    def queued(self, kind: Kind) -> int:
        return len(self._pools[kind].queue)

    def slots_used(self, kind: Kind) -> int:
        return self._pools[kind].used

    def tickets(self, kind: Kind) -> list[Ticket]:
        """Running tickets (oldest admission first), then the waiting ones in queue order."""
        running = sorted(
            (t for t in self._running if t.kind == kind), key=lambda t: t.admitted_at or 0.0
        )
        return [*running, *self._pools[kind].queue]

    def sample_memory(self) -> int | None:
        self.last_sample = self._sample()
        return self.last_sample

    def _memory_low(self) -> bool:
        available = self.sample_memory()
        return available is not None and available < self.floor_mb

    async def close(self) -> None:
        """Stop the memory watch (the kernel is closing)."""
        if self._monitor is not None:
            self._monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._monitor
            self._monitor = None

    # -- the public gates ------------------------------------------------------------------

    def turn(
        self, heinzel: str, deadline: datetime | None = None, *, on_wait: OnWait | None = None
    ) -> contextlib.AbstractAsyncContextManager[Ticket]:
        """Run a turn under a slot: ``async with admission.turn(heinzel_id, deadline): ...``."""
        return self._admitted("turn", heinzel, deadline, on_wait)

    def attempt(
        self, heinzel: str, deadline: datetime | None = None
    ) -> contextlib.AbstractAsyncContextManager[Ticket]:
        """A model request under an attempt slot, released when the request is over."""
        return self._admitted("attempt", heinzel, deadline, None)

    @contextlib.asynccontextmanager
    async def _admitted(
        self, kind: Kind, owner: str, deadline: datetime | None, on_wait: OnWait | None
    ) -> AsyncIterator[Ticket]:
        ticket = Ticket(kind, owner, deadline, self._clock())
        await self._admit(ticket, on_wait)
        ticket.task = asyncio.current_task()
        ticket.admitted_at = time.monotonic()
        ticket.admitted_since = self._clock()
        self._running.add(ticket)
        self._ensure_monitor()
        try:
            yield ticket
        except asyncio.CancelledError:
            if ticket.aborted and ticket.task is not None and ticket.task.uncancel() == 0:
                raise AdmissionAborted(ticket) from None
            raise
        finally:
            self._running.discard(ticket)
            self._pools[kind].used -= 1
            self._pump()

    # -- admission -------------------------------------------------------------------------

    def _remaining(self, ticket: Ticket) -> float | None:
        if ticket.deadline is None:
            return None
        return (ticket.deadline - self._clock()).total_seconds()

    def _decide(self, ticket: Ticket, *, admitted: bool, reason: Reason | None = None) -> Decision:
        decision = Decision(
            kind=ticket.kind,
            owner=ticket.owner,
            admitted=admitted,
            reason=reason or ticket.blocked_by or "free",
            blocked_by=ticket.blocked_by,
            waited_s=round(time.monotonic() - ticket.queued_at, 4),
        )
        ticket.decision = decision
        self.decisions.append(decision)
        return decision

    async def _admit(self, ticket: Ticket, on_wait: OnWait | None) -> None:
        """Grant at once when a slot and memory are free; only a waiter can expire."""
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ticket.granted = granted
        self._pools[ticket.kind].queue.append(ticket)
        self._pump()
        remaining = None if granted.done() else self._remaining(ticket)
        if remaining is not None and remaining <= 0:
            self._withdraw(ticket, granted)
            raise AdmissionTimeout(self._decide(ticket, admitted=False, reason="timeout"))
        try:
            async with asyncio.timeout(remaining):
                if not granted.done():
                    self._ensure_monitor()
                    if on_wait is not None:
                        await on_wait(ticket.blocked_by or "capacity")
                await granted
        except TimeoutError:
            self._withdraw(ticket, granted)
            raise AdmissionTimeout(self._decide(ticket, admitted=False, reason="timeout")) from None
        except BaseException:
            self._withdraw(ticket, granted)
            self._decide(ticket, admitted=False, reason="cancelled")
            raise
        self._decide(ticket, admitted=True)

    def _withdraw(self, ticket: Ticket, granted: asyncio.Future[None]) -> None:
        """A waiter that timed out or was cancelled leaves for good, handing on any slot."""
        pool = self._pools[ticket.kind]
        if granted.done() and not granted.cancelled():
            pool.used -= 1
        with contextlib.suppress(ValueError):
            pool.queue.remove(ticket)
        self._pump()

    def _pump(self) -> None:
        """Grant slots to the head of each queue while capacity and memory allow (strict FIFO)."""
        for pool in self._pools.values():
            while pool.queue:
                head = pool.queue[0]
                if head.granted is None or head.granted.done():
                    pool.queue.popleft()
                    continue
                blocker: Blocker | None = None
                if pool.used >= pool.limit:
                    blocker = "capacity"
                elif self._memory_low():
                    blocker = "low-memory"
                if blocker is not None:
                    for waiting in pool.queue:
                        waiting.blocked_by = blocker
                    break
                pool.queue.popleft()
                pool.used += 1
                head.granted.set_result(None)

    # -- memory ----------------------------------------------------------------------------

    def _busy(self) -> bool:
        return bool(self._running) or any(pool.queue for pool in self._pools.values())

    def _ensure_monitor(self) -> None:
        if self._monitor is None or self._monitor.done():
            self._monitor = asyncio.get_running_loop().create_task(self._watch_memory())

    async def _watch_memory(self) -> None:
        while self._busy():
            await asyncio.sleep(self._poll_s)
            if self._memory_low():
                for ticket in list(self._running):
                    if not ticket.aborted and ticket.task is not None:
                        ticket.aborted = True
                        ticket.task.cancel()
                continue
            self._pump()
