"""What one tick did, as ``hz tick --once --json`` prints it and the cockpit shows it.

The counters are there to make the cost of a tick visible: an idle tick
over hundreds of asleep heinzels reads one index query, fetches nothing
that is not due and opens no spine.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from hz_kernel.terms import Cause, SkipReason, WokenBy

DeferReason = Literal["max-wakes", "cap", "busy", "source-failed", "backoff", "held-by", "no-lease"]


class _Shape(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")


class TickWoken(_Shape):
    """A turn the tick ran (or resumed)."""

    heinzel: str
    name: str
    causes: list[Cause]
    keys: list[str]
    due_at: datetime
    height: int
    turn: str | None = None
    woken_by: WokenBy | None = None


class TickSkipped(_Shape):
    """Wakes ended with one ``turn.skipped`` line: no body, no model."""

    heinzel: str
    name: str
    reason: SkipReason
    keys: list[str]
    moved: list[str] = []
    turn: str | None = None
    holder: str | None = None
    """``held-by``: the home whose lease runs this team heinzel's slot."""


class TickDeferred(_Shape):
    """Due, but left for a later tick."""

    heinzel: str
    name: str
    reason: DeferReason
    keys: list[str]
    due_at: datetime
    holder: str | None = None
    """``held-by``: the roster handle of the home whose lease decides this slot."""


class TickProblem(_Shape):
    """A source that could not be read or a turn that failed to start; the tick went on."""

    code: str
    message: str
    place: str | None = None
    heinzel: str | None = None


class TickReport(_Shape):
    at: datetime
    due: int
    woken: list[TickWoken] = []
    deferred: list[TickDeferred] = []
    skipped: list[TickSkipped] = []
    fetches: int = 0
    from_cache: int = 0
    index_queries: int = 0
    spines_opened: int = 0
    problems: list[TickProblem] = []
    notices: list[str] = []
    seconds: float = 0.0
