"""finish: ``turn.finished`` with the disposition, cost and duration; a turn that ends
unfinished first settles the effects it left open."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from hz_kernel.engine.outcome import (
    AmendmentOutcome,
    DraftOutcome,
    LessonsOutcome,
    NothingOutcome,
    Outcome,
    QuestionOutcome,
    SummaryOutcome,
)
from hz_kernel.engine.state import TurnState
from hz_kernel.engine.steps.act import settle_effects
from hz_kernel.vocabulary import TurnFinished

if TYPE_CHECKING:
    from hz_kernel.engine.runner import TurnRunner


async def finish(
    run: TurnRunner,
    state: TurnState,
    disposition: str,
    *,
    reason: str | None = None,
    report: str | None = None,
    step: str | None = None,
) -> str:
    """``turn.finished``; an abandoned or failed turn first settles its open effects."""
    if disposition in ("abandoned", "failed"):
        await settle_effects(run, state)
    body_hash = body_size = None
    if run.body is not None:
        run.body.sync()
        body_hash, body_size = run.body.hash, run.body.size
    await run.held.append(
        TurnFinished(
            disposition=disposition,  # type: ignore[arg-type]
            reason=reason,
            causes=state.causes,  # type: ignore[arg-type]
            report=report or state.report or reason,
            tokens=state.tokens,
            tokens_cached=state.tokens_cached,
            usd=round(state.usd, 6),
            duration_ms=int((state.ran_s + time.monotonic() - run.started_clock) * 1000),
            body_hash=body_hash,
            body_size=body_size,
            step=step,  # type: ignore[arg-type]
            priced=None if state.priced else False,
        ),
        turn=state.turn,
    )
    return disposition


def disposition_of(outcome: Outcome | None) -> str:
    """The disposition a turn that acted on ``outcome`` finishes with."""
    return {
        DraftOutcome: "drafted",
        LessonsOutcome: "learned",
        QuestionOutcome: "asked",
        AmendmentOutcome: "proposed",
        SummaryOutcome: "summarised",
        NothingOutcome: "nothing",
    }.get(type(outcome), "nothing")
