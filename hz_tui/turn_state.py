"""The live turn as the spine tells it: which of the five steps, which attempt, which effects.

A reducer over spine lines, kept apart from the widgets so the rules read in
one place and are tested without a screen. It follows the newest turn that
ran (a ``turn.skipped`` line is a tick's one-line "nothing to do", not a turn
worth replacing the last real one on screen).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from hz_kernel.following import chunk_text
from hz_kernel.terms import STEP_NAMES
from hz_tui.tail import SpineLine

__all__ = [
    "EffectRow",
    "LiveTurn",
    "RunningHandoff",
    "TurnFollower",
    "chunk_text",
    "short_key",
    "step_under_way",
]

TurnStatus = Literal["none", "running", "waiting", "finished"]
#: Endings that cut a turn short: the steps after the one under way never ran.
CUT_SHORT = ("failed", "abandoned")
EffectStatus = Literal["started", "done", "failed", "interrupted"]

#: Spine kinds whose ``key`` names an effect and what it left behind, as a short phrase.
LEFT_BEHIND = {
    "draft.placed": "draft placed",
    "question.asked": "question asked",
    "notice.raised": "notice raised",
}


@dataclass
class EffectRow:
    """One row of the effect ledger: an effect by its key, and how far it got."""

    key: str
    effect: str
    status: EffectStatus
    detail: str = ""


@dataclass(frozen=True)
class RunningHandoff:
    """A handoff under way: its effect key, the runner's name and when it started."""

    key: str
    runner: str
    since: str | None


@dataclass
class LiveTurn:
    """What the live panel shows of the newest turn."""

    turn: str | None = None
    status: TurnStatus = "none"
    started_at: str | None = None
    causes: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    attempt: int = 0
    requests: int = 0
    """The model requests of the think step so far (a tool round is a request; a retry is not)."""
    retries: int = 0
    """Retries of the request under way."""
    retrying: bool = False
    attempt_note: str = ""
    disposition: str | None = None
    reason: str | None = None
    halted_at: str | None = None
    """The step under way when the turn failed or was stopped (``None`` otherwise)."""
    report: str | None = None
    waiting_until: str | None = None
    steered: int = 0
    requested: int = 0
    effects: dict[str, EffectRow] = field(default_factory=dict)
    handoff: RunningHandoff | None = None
    """The coding agent this turn's tool call is waiting for, while it runs."""

    @property
    def step(self) -> str | None:
        """The step under way: the first of the five not done yet (None once it ended)."""
        if self.status in ("none", "finished"):
            return None
        return next((s for s in STEP_NAMES if s not in self.done), "finish")

    def fold(self, line: SpineLine) -> bool:
        """Fold one line of this turn in; True when it changed what the panel shows."""
        kind, data = line.kind, line.data
        if kind == "step.done":
            step = str(data.get("step"))
            if step not in self.done:
                self.done.append(step)
            if data.get("report"):
                self.report = str(data["report"])
            self.attempt_note = ""
        elif kind == "attempt.started":
            self.attempt = int(data.get("attempt") or 1)
            if self.retrying:
                self.retries += 1
            else:
                self.requests, self.retries = self.requests + 1, 0
            self.retrying = False
            self.attempt_note = f"model {data['model']}" if data.get("model") else ""
        elif kind == "attempt.retry":
            self.attempt = int(data.get("attempt") or self.attempt)
            self.retrying = True
            self.attempt_note = f"retry in {data.get('delay_ms', 0)} ms: {data.get('error', '')}"
        elif kind == "attempt.failed":
            self.attempt = int(data.get("attempt") or self.attempt)
            self.attempt_note = f"failed {data.get('code', '')}: {data.get('error', '')}"
        elif kind == "turn.waiting":
            self.status = "waiting"
            self.waiting_until = data.get("until")
        elif kind == "turn.resumed":
            self.status = "running"
            self.waiting_until = None
            if data.get("woken_by") != "restart":
                # Woken from a wait, the turn thinks again from its gathered inputs.
                self.done = [s for s in self.done if s == "gather"]
        elif kind == "turn.finished":
            self.handoff = None
            self._finished(data)
            self.reason = data.get("reason")
            self.report = data.get("report") or self.report
        elif kind == "turn.steered":
            self.steered += 1
        elif kind == "turn.requested":
            self.requested += 1
        elif kind.startswith("effect."):
            return self._effect(kind, data, line.ts)
        elif kind in LEFT_BEHIND and line.key in self.effects:
            self.effects[line.key].detail = LEFT_BEHIND[kind]
        else:
            return False
        return True

    def _finished(self, data: dict[str, Any]) -> None:
        """The turn ended. Cut short, it shows the steps that ran and the one it stopped in;
        otherwise it went through every step (the kernel only ends well after ``act``; a
        skipped turn skipped the rest, and ``finish`` is the ending itself)."""
        self.status = "finished"
        self.attempt_note = ""  # the ending says how it went; the last note would repeat it
        self.disposition = data.get("disposition")
        if self.disposition in CUT_SHORT:
            self.halted_at = next((s for s in STEP_NAMES if s not in self.done), None)
        elif self.disposition == "skipped":
            self.done.append("finish")
        else:
            self.done = list(STEP_NAMES)

    def _effect(self, kind: str, data: dict[str, Any], ts: str | None) -> bool:
        key = str(data.get("key") or "")
        if not key:
            return False
        row = self.effects.get(key)
        if kind == "effect.started":
            self.effects[key] = EffectRow(key, str(data.get("effect") or "effect"), "started")
            if data.get("effect") == "handoff":
                self.handoff = RunningHandoff(key, str(data.get("target") or "runner"), ts)
            return True
        if self.handoff is not None and self.handoff.key == key:
            self.handoff = None
        if row is None:
            row = self.effects[key] = EffectRow(key, str(data.get("effect") or "effect"), "started")
        if kind == "effect.done":
            row.status = "done"
            row.detail = "found on resume" if data.get("found_on_resume") else row.detail
        elif kind == "effect.failed":
            row.status, row.detail = "failed", str(data.get("error") or "")
        elif kind == "effect.interrupted":
            row.status = "interrupted"
        else:
            return False
        return True


class TurnFollower:
    """Follows one spine's lines and keeps the newest turn that ran as ``current``."""

    def __init__(self) -> None:
        self.current = LiveTurn()
        self.last_seq = 0

    def apply(self, lines: list[SpineLine]) -> bool:
        """Fold new lines in (repeats by seq are ignored); True when the view changed."""
        changed = False
        for line in lines:
            if line.seq <= self.last_seq:
                continue
            self.last_seq = line.seq
            if line.turn is None or line.kind == "turn.skipped":
                continue
            if line.kind == "turn.started":
                causes = line.data.get("causes") or [line.data.get("cause")]
                self.current = LiveTurn(
                    turn=line.turn,
                    status="running",
                    started_at=line.ts,
                    causes=[str(c) for c in causes if c],
                )
                changed = True
            elif line.turn == self.current.turn:
                changed |= self.current.fold(line)
            elif self.current.turn is None:
                # The window began inside this turn: follow it from what is visible.
                self.current = LiveTurn(turn=line.turn, status="running")
                self.current.fold(line)
                changed = True
        return changed


def step_under_way(last_done: str | None) -> str:
    """The step a running turn is in, from the last one it finished (``TurnSummary.step``):
    the live panel and the timeline both name this one."""
    if last_done not in STEP_NAMES:
        return STEP_NAMES[0]
    return STEP_NAMES[min(STEP_NAMES.index(last_done) + 1, len(STEP_NAMES) - 1)]


def short_key(key: str) -> str:
    """An effect key without its heinzel id: the page already says whose it is."""
    return key.split("@", 1)[1] if key.startswith("hz-") and "@" in key else key
