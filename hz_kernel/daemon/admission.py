"""The admission controller: one FIFO gate for turns, model attempts and tool runs.

A turn takes one of ``max_concurrent_turns`` slots for as long as it runs.
Model attempts and tool runs inside a turn reuse their turn's slot (asking
for a second one could deadlock a full house) but, like turns, never start
while free memory is under the floor. Waiting work keeps the deadline it
came with; every decision records why it waited or why it was refused
(capacity, low memory, timeout). While anything waits or runs, memory is
sampled every ``poll_s``: a low sample blocks new work and aborts running
work, which then sees ``AdmissionAborted`` instead of a bare cancellation.

These are resource controls, not a sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from hz_kernel.clock import now_utc
from hz_kernel.config import DaemonSettings
from hz_kernel.errors import HzError

Kind = Literal["turn", "attempt", "tool"]
Blocker = Literal["capacity", "low-memory"]
Reason = Literal["free", "capacity", "low-memory", "timeout", "cancelled"]

MEMINFO = Path("/proc/meminfo")
FLOOR_MIN_MB = 1024
POLL_SECONDS = 0.25


def _meminfo_mb(key: str) -> int | None:
    try:
        text = MEMINFO.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) // 1024
    return None


def memory_available_mb() -> int | None:
    """Linux ``MemAvailable`` in MB; None where it cannot be read (no floor is enforced)."""
    return _meminfo_mb("MemAvailable")


def default_floor_mb() -> int:
    """The larger of 1024 MB and an eighth of the machine's RAM."""
    total = _meminfo_mb("MemTotal")
    return max(FLOOR_MIN_MB, (total or 0) // 8)


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


@dataclass(eq=False)
class Ticket:
    """One piece of admitted (or waiting) work."""

    kind: Kind
    owner: str
    deadline: datetime | None
    slot: bool
    queued_at: float = field(default_factory=time.monotonic)
    blocked_by: Blocker | None = None
    decision: Decision | None = None
    aborted: bool = False
    task: asyncio.Task[object] | None = None
    granted: asyncio.Future[None] | None = None


class AdmissionController:
    """FIFO admission under a concurrency limit and a free-memory floor."""

    def __init__(
        self,
        max_concurrent: int,
        floor_mb: int,
        *,
        sample: Callable[[], int | None] = memory_available_mb,
        poll_s: float = POLL_SECONDS,
        clock: Callable[[], datetime] = now_utc,
        history: int = 200,
    ) -> None:
        self.max_concurrent = max_concurrent
        self.floor_mb = floor_mb
        self.last_sample: int | None = None
        self.decisions: deque[Decision] = deque(maxlen=history)
        self.slots_used = 0
        self._sample = sample
        self._poll_s = poll_s
        self._clock = clock
        self._queue: deque[Ticket] = deque()
        self._memory_waiters: list[asyncio.Future[None]] = []
        self._running: set[Ticket] = set()
        self._turn_owners: dict[str, int] = {}
        self._monitor: asyncio.Task[None] | None = None

    @classmethod
    def from_settings(cls, settings: DaemonSettings) -> AdmissionController:
        floor = settings.min_free_memory_mb
        return cls(settings.max_concurrent_turns, default_floor_mb() if floor is None else floor)

    @property
    def queued(self) -> int:
        return len(self._queue) + len(self._memory_waiters)

    @property
    def running(self) -> int:
        return len(self._running)

    def sample_memory(self) -> int | None:
        self.last_sample = self._sample()
        return self.last_sample

    def _memory_low(self) -> bool:
        available = self.sample_memory()
        return available is not None and available < self.floor_mb

    async def close(self) -> None:
        """Stop the memory watch (the daemon is shutting down)."""
        if self._monitor is not None:
            self._monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._monitor
            self._monitor = None

    # -- the public gates ------------------------------------------------------------------

    def turn(
        self, heinzel: str, deadline: datetime | None = None
    ) -> contextlib.AbstractAsyncContextManager[Ticket]:
        """Run a turn under a slot: ``async with admission.turn(heinzel_id, deadline): ...``."""
        return self._admitted("turn", heinzel, deadline)

    def attempt(
        self, heinzel: str, deadline: datetime | None = None
    ) -> contextlib.AbstractAsyncContextManager[Ticket]:
        """A model attempt: inside its heinzel's turn it reuses the turn's slot."""
        return self._admitted("attempt", heinzel, deadline)

    def tool(
        self, heinzel: str, deadline: datetime | None = None
    ) -> contextlib.AbstractAsyncContextManager[Ticket]:
        """A tool run: inside its heinzel's turn it reuses the turn's slot."""
        return self._admitted("tool", heinzel, deadline)

    @contextlib.asynccontextmanager
    async def _admitted(
        self, kind: Kind, owner: str, deadline: datetime | None
    ) -> AsyncIterator[Ticket]:
        slot = kind == "turn" or not self._turn_owners.get(owner)
        ticket = Ticket(kind, owner, deadline, slot)
        await self._admit(ticket)
        ticket.task = asyncio.current_task()
        self._running.add(ticket)
        if kind == "turn":
            self._turn_owners[owner] = self._turn_owners.get(owner, 0) + 1
        self._ensure_monitor()
        try:
            yield ticket
        except asyncio.CancelledError:
            if ticket.aborted and ticket.task is not None and ticket.task.uncancel() == 0:
                raise AdmissionAborted(ticket) from None
            raise
        finally:
            self._running.discard(ticket)
            if kind == "turn":
                left = self._turn_owners[owner] - 1
                if left:
                    self._turn_owners[owner] = left
                else:
                    del self._turn_owners[owner]
            if slot:
                self.slots_used -= 1
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

    async def _admit(self, ticket: Ticket) -> None:
        remaining = self._remaining(ticket)
        if remaining is not None and remaining <= 0:
            raise AdmissionTimeout(self._decide(ticket, admitted=False, reason="timeout"))
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ticket.granted = granted
        if ticket.slot:
            self._queue.append(ticket)
            self._pump()
        elif self._memory_low():
            ticket.blocked_by = "low-memory"
            self._memory_waiters.append(granted)
        else:
            granted.set_result(None)
        if not granted.done():
            self._ensure_monitor()
        try:
            async with asyncio.timeout(remaining):
                await granted
        except TimeoutError:
            self._withdraw(ticket, granted)
            raise AdmissionTimeout(self._decide(ticket, admitted=False, reason="timeout")) from None
        except asyncio.CancelledError:
            self._withdraw(ticket, granted)
            self._decide(ticket, admitted=False, reason="cancelled")
            raise
        self._decide(ticket, admitted=True)

    def _withdraw(self, ticket: Ticket, granted: asyncio.Future[None]) -> None:
        """A waiter that timed out or was cancelled leaves for good, handing on any slot."""
        if ticket.slot and granted.done() and not granted.cancelled():
            self.slots_used -= 1
        with contextlib.suppress(ValueError):
            self._queue.remove(ticket)
        with contextlib.suppress(ValueError):
            self._memory_waiters.remove(granted)
        self._pump()

    def _pump(self) -> None:
        """Grant slots to the head of the queue while capacity and memory allow (strict FIFO)."""
        while self._queue:
            head = self._queue[0]
            if head.granted is None or head.granted.done():
                self._queue.popleft()
                continue
            if self.slots_used >= self.max_concurrent:
                head.blocked_by = "capacity"
                return
            if self._memory_low():
                head.blocked_by = "low-memory"
                return
            self._queue.popleft()
            self.slots_used += 1
            head.granted.set_result(None)

    # -- memory ----------------------------------------------------------------------------

    def _ensure_monitor(self) -> None:
        if self._monitor is None or self._monitor.done():
            self._monitor = asyncio.get_running_loop().create_task(self._watch_memory())

    async def _watch_memory(self) -> None:
        while self._queue or self._running or self._memory_waiters:
            await asyncio.sleep(self._poll_s)
            if self._memory_low():
                for ticket in list(self._running):
                    if not ticket.aborted and ticket.task is not None:
                        ticket.aborted = True
                        ticket.task.cancel()
                continue
            waiters, self._memory_waiters = self._memory_waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
            self._pump()
