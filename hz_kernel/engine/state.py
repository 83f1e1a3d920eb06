"""What a turn knows, rebuilt from its spine events when it resumes (bodies add content later)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hz_kernel.engine.outcome import Outcome
from hz_kernel.store.envelope import Event


@dataclass
class TurnState:
    """What a turn knows, rebuilt from its spine events and body when it resumes."""

    turn: str
    started: Event
    done: list[str] = field(default_factory=list)
    inputs: list[dict[str, Any]] = field(default_factory=list)
    outcome: Outcome | None = None
    tokens: int = 0
    tokens_cached: int = 0
    usd: float = 0.0
    attempts: int = 0
    effects_started: dict[str, Event] = field(default_factory=dict)
    effects_done: set[str] = field(default_factory=set)
    placed: set[str] = field(default_factory=set)
    resumes: int = 0
    report: str | None = None
    priced: bool = True
    """False once a model without a known price ran: the turn's USD leave its cost out."""
    ran_s: float = 0.0
    """Running time so far: the spans a process worked on the turn, never down or waiting time."""

    @property
    def version(self) -> int:
        return int(self.started.data["contract_version"])

    @property
    def keys(self) -> list[str]:
        return list(self.started.data.get("keys") or [])

    @property
    def causes(self) -> list[str]:
        return list(self.started.data.get("causes") or [self.started.data["cause"]])


def load_state(events: list[Event], turn: str) -> TurnState | None:
    """The state of ``turn`` from the spine alone (bodies add content later)."""
    state: TurnState | None = None
    mine = [event for event in events if event.turn == turn]
    for event in mine:
        kind, data = event.kind, event.data
        if kind == "turn.started":
            state = TurnState(turn=turn, started=event)
        elif state is None:
            continue
        elif kind == "step.done":
            state.done.append(str(data["step"]))
            if data["step"] == "think":
                state.priced = state.priced and data.get("priced") is not False
                state.tokens += int(data.get("tokens") or 0)
                state.tokens_cached += int(data.get("tokens_cached") or 0)
                state.usd += float(data.get("usd") or 0.0)
                state.attempts = int(data.get("attempts") or 0)
            if data.get("report"):
                state.report = str(data["report"])
        elif kind == "effect.started":
            state.effects_started[str(data["key"])] = event
        elif kind in ("effect.done", "effect.failed", "effect.interrupted"):
            state.effects_done.add(str(data["key"]))
        elif kind == "draft.placed":
            state.placed.add(str(data["key"]))
        elif kind == "turn.resumed" and data.get("woken_by") == "restart":
            state.resumes += 1
        elif kind == "turn.resumed":
            state.done = [step for step in state.done if step == "gather"]
    if state is not None:
        state.ran_s = running_time_s(mine)
    return state


def running_time_s(events: list[Event]) -> float:
    """How long processes worked on a turn, from its own events' times.

    A run begins at ``turn.started`` or ``turn.resumed`` and lasts until the
    turn's last event before the process stopped or the turn parked
    (``turn.waiting``). The time a process was down, or the turn waited
    (parked, or queued for admission: ``turn.queued``), lies between runs
    and is not counted.
    """
    total = 0.0
    run: list[datetime] = []
    for event in events:
        if event.kind in ("turn.started", "turn.resumed"):
            total += _span(run)
            run = [event.when]
        elif event.kind == "turn.queued":
            total += _span(run)
            run = []
        elif run:
            run.append(event.when)
            if event.kind == "turn.waiting":
                total += _span(run)
                run = []
    return total + _span(run)


def _span(run: list[datetime]) -> float:
    """The seconds from a run's first event to its last (never negative if a clock stepped)."""
    return max(0.0, (run[-1] - run[0]).total_seconds()) if run else 0.0


def timeout_s(state: TurnState, default: float) -> float:
    """The running time the turn may use, as pinned when it started (``deadline`` − start)."""
    deadline = state.started.data.get("deadline")
    if not deadline:
        return default
    return (datetime.fromisoformat(str(deadline)) - state.started.when).total_seconds()
