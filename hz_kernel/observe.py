"""What live readers are told: spine events as they become durable, body deltas, row changes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hz_kernel.store.envelope import Event


@dataclass(frozen=True, slots=True)
class Observation:
    """Something a live reader may want to see: a spine event, a body delta, a row change.

    A spine event comes with its durable feed position (``hz_kernel.store.positions``).
    """

    heinzel: str
    event: Event | None = None
    body: dict[str, Any] | None = None
    turn: str | None = None
    position: int | None = None


Observer = Callable[[Observation], None]
