"""outcome: record the structured result the model chose and its report line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hz_kernel.engine.state import TurnState
from hz_kernel.vocabulary import StepDone

if TYPE_CHECKING:
    from hz_kernel.engine.runner import TurnRunner


async def record_outcome(run: TurnRunner, state: TurnState) -> None:
    """``step.done {outcome, report}``: the report line is the turn's from here on."""
    assert state.outcome is not None
    state.report = state.outcome.report
    # Staged: durable with the next line (the outcome is in the body the think step synced).
    run.held.stage(
        StepDone(step="outcome", outcome=state.outcome.type, report=state.outcome.report),
        turn=state.turn,
    )
    state.done.append("outcome")
