"""The shapes a head shows first: the heinzel rows and the kernel's load.

A cockpit's first frame (and ``hz heinzel list``) needs only these, so they
live apart from the rest of ``hz_kernel.api``: starting a head does not
create every answer model of the interface. ``hz_kernel.api`` re-exports
each one; a client never needs to know which module holds a shape.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

State = Literal["proposed", "asleep", "awake", "waiting", "paused", "retired"]


class _Shape(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")


class HeinzelFailure(_Shape):
    """The tick's work for one heinzel failed; it is left alone until ``retry_at``.

    Kept until that heinzel's work next succeeds; ``hz heinzel list`` and
    ``show`` carry it.
    """

    code: str
    message: str
    place: str | None = None
    since: datetime
    """When the first failure of this run of failures happened."""
    at: datetime
    failures: int
    """Failures in a row; each doubles the wait before the next try."""
    retry_at: datetime


class TeamView(_Shape):
    """A team heinzel's place in its team as this home last saw it (``docs/team.md``).

    Read from what the tick recorded (``<home>/team/seen.json``), never from
    git: a listing stays as fast with team heinzels as without.
    """

    repo: str | None = None
    """The team repository (None: none is named, see ``error``)."""
    role: Literal["owner", "delegate"] | None = None
    """None: the home has no ``[team] handle``, so its role is unknown."""
    holder: str | None = None
    """The roster handle holding the lease (None: no lease seen yet)."""
    expires: str | None = None
    token: int | None = None
    held_here: bool = False
    """This home holds the lease (and it has not run out)."""
    free: Literal["expired", "released"] | None = None
    """The lease no longer holds: it ran out, or its holder handed it back at ``expires``."""
    seen_at: str | None = None
    """When this home last read the lease (a tick's lease step, or ``hz team status``)."""
    error_code: str | None = None
    error: str | None = None
    """The last team error of this heinzel as one coded line (the repository could not be
    reached, no roster handle…), until the tick's team work (or ``hz team status``) goes
    through."""

    @property
    def who(self) -> str | None:
        """Who runs it now as this home knows: ``here``, the holder's handle, ``free`` (the
        lease ran out or was handed back) or None (no lease seen yet)."""
        if self.held_here:
            return "here"
        if self.free is not None:
            return "free"
        return self.holder


class HeinzelSummary(_Shape):
    """One row of ``hz heinzel list``."""

    id: str
    name: str
    namespace: str
    state: State
    damaged: bool = False
    contract_name: str | None = None
    contract_version: int | None = None
    assets: list[str] = []
    schedule: str | None = None
    next_due: str | None = None
    last_turn: str | None = None
    last_cause: str | None = None
    last_disposition: str | None = None
    last_report: str | None = None
    last_turn_at: str | None = None
    pending_draft: str | None = None
    pending_amendment: str | None = None
    pending_question: str | None = None
    waiting_until: str | None = None
    lessons_active: int = 0
    turns_count: int = 0
    cost_today: float = 0.0
    seq: int = 0
    failure: HeinzelFailure | None = None
    """The tick's last failure of this heinzel's work, until it next succeeds."""
    queued: Literal["capacity", "low-memory"] | None = None
    """Why a turn of this heinzel waits for the kernel's admission now (None: none waits)."""
    interrupted: bool = False
    """Its open turn (state ``awake``) runs nowhere now: a crash or a stopped kernel cut it,
    and it resumes when its heinzel next runs (the tick, a wake)."""
    team: TeamView | None = None
    """A team heinzel's lease and last team error as this home knows them (None: not a team
    heinzel)."""


class HeinzelList(_Shape):
    items: list[HeinzelSummary]
    warnings: list[str] = []


class SpendToday(_Shape):
    """What the home spent today (UTC day) against ``[heinzel] max_usd_per_day``, the cap a
    turn is skipped at; the cockpit's totals line shows it."""

    day: str
    spent_usd: float
    cap_usd: float


class TurnActivity(_Shape):
    """One turn a kernel runs now, or holds in its admission queue."""

    heinzel: str
    name: str
    turn: str | None = None
    queued: Literal["capacity", "low-memory"] | None = None
    """Why it waits for a slot; None once it runs."""
    step: str | None = None
    """The step it is in (running turns only)."""
    elapsed_s: float = 0.0
    """Running: seconds since it was admitted; queued: seconds it has waited."""
    usd: float = 0.0
    """Its cost so far (a think step adds its cost when it ends)."""
    tokens: int = 0


class TickStatus(_Shape):
    """The kernel's tick loop: when it last ticked, when it ticks next, what it left undone."""

    interval_s: float
    ticks: int = 0
    """Ticks finished since the loop started."""
    ticking_since: str | None = None
    """When the tick under way began, if one is: a tick runs the turns it wakes to their end,
    so one can last as long as they do (and ``ticks`` stays where it was meanwhile)."""
    last_at: str | None = None
    next_at: str | None = None
    error: str | None = None
    """The coded line of the last tick that failed as a whole, until one finishes."""
    woken: int = 0
    skipped: list[str] = []
    """What the last tick skipped, as ``name (reason)``."""
    deferred: list[str] = []
    """What the last tick put off, as ``name (reason)``."""


class KernelLoad(_Shape):
    """What a kernel runs now, what waits, and under which limits, sampled when asked."""

    turns_running: int = 0
    turns_queued: int = 0
    attempts_running: int = 0
    attempts_queued: int = 0
    max_concurrent_turns: int | None = None
    max_concurrent_attempts: int | None = None
    memory_floor_mb: int | None = None
    memory_available_mb: int | None = None
    turns: list[TurnActivity] = []
    """Running turns first (oldest first), then queued ones in admission order."""
    tick: TickStatus | None = None
    """None where no tick loop runs in the kernel's process."""


class KernelStatus(KernelLoad):
    """Where the kernel behind a client runs and how it is doing, sampled when asked."""

    embedded: bool
    """True for a kernel inside the asking process; False for a daemon."""
    pid: int
    protocol: int
    address: str | None = None
    started_at: str
    uptime_s: float
    heinzels: int
