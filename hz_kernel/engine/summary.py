"""Past the budget, a turn ends with a summary in the fixed shape, chained to the last."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hz_kernel.adapters.framing import render_summary_request
from hz_kernel.adapters.models import TokenUsage, price_usd, resolve_model
from hz_kernel.engine.attempts import run_model_step, user_message
from hz_kernel.engine.caps import token_budget
from hz_kernel.engine.context import EVENT_LINES_MAX, FRAMING, history_lines, summary_block
from hz_kernel.engine.outcome import SummaryOutcome
from hz_kernel.engine.state import TurnState
from hz_kernel.store.envelope import Event, seq_index, since_seq
from hz_kernel.vocabulary import SummaryWritten, Usage

if TYPE_CHECKING:
    from hz_kernel.engine.runner import TurnRunner


async def summarise_if_due(run: TurnRunner, state: TurnState) -> None:
    """Past the budget, end the turn with a summary in the fixed shape, chained to the last.

    The budget is ``summary_after_turns`` turns or ``summary_after_chars``
    characters of history since the last summary.
    """
    events = run.held.scan.events
    last = _last_summary(run)
    recent = since_seq(events, last.seq + 1 if last is not None else 0)
    ended = [
        e for e in recent if e.kind in ("turn.started", "turn.skipped") and e.turn != state.turn
    ]
    lines = history_lines(recent)
    settings = run.settings.heinzel
    over = len(ended) + 1 >= settings.summary_after_turns
    if over or sum(len(line) for line in lines) >= settings.summary_after_chars:
        await summarise(run, state)


def _last_summary(run: TurnRunner) -> Event | None:
    """The spine's last ``summary.written``, found by the seq its projection keeps (a search
    from the end passed every line since, and all of them before the first summary)."""
    seq = run.held.projection.heinzel["last_summary_seq"]
    if seq is None:
        return None
    events = run.held.scan.events
    at = seq_index(events, seq)
    return events[at] if at < len(events) and events[at].seq == seq else None


async def summarise(run: TurnRunner, state: TurnState) -> bool:
    """Write a summary of the history since the last one, in the fixed shape, chained to it;
    True when one was written. Once per turn: the think step compacts with it when the
    context would not fit the model's window, and the turn's end when history grew long.

    The summary's model call is recorded as ``usage`` (spend outside the turn's own
    think step).
    """
    events = run.held.scan.events
    last = _last_summary(run)
    if last is not None and last.turn == state.turn:
        return False  # a turn writes one summary, and none is written after it while it runs
    since = last.seq if last is not None else 0
    lines = history_lines(since_seq(events, since + 1))
    if not lines:
        return False
    contract = run.contract(state)
    asset = next(iter(contract.assets), contract.name)
    messages = []
    if last is not None:
        messages.append(summary_block(last))
    messages.append("<history>\n" + "\n".join(lines[-EVENT_LINES_MAX:]) + "\n</history>")
    messages.append(render_summary_request(asset=asset, wants=contract.goal[:500]))
    spec = contract.hz.agent.model or run.settings.model.default
    model = resolve_model(spec, settings=run.env)

    async def quiet(*_: object) -> None:
        return None

    size = len(FRAMING.encode()) + sum(len(m.encode()) for m in messages)
    # What the turn did so far is indexed and told before the model is asked, not after.
    await run.held.publish()
    result = await run_model_step(
        model=model,
        instructions=FRAMING,
        messages=[user_message(*messages)],
        on_attempt=quiet,
        on_chunk=quiet,
        admit=run.admit_attempt,
        outcomes=("summary",),
        budget=token_budget(
            max_tokens=contract.hz.agent.max_tokens,
            context_bytes=size,
            priced=price_usd(spec, TokenUsage(), settings=run.env).priced,
        ),
    )
    outcome = result.outcome
    if not isinstance(outcome, SummaryOutcome):
        return False
    assert run.body is not None
    run.body.write("summary", outcome=outcome.model_dump(mode="json"))
    run.body.sync()
    await run.held.append(
        SummaryWritten(
            asset=outcome.asset,
            wants=outcome.wants,
            decisions=list(outcome.decisions),
            open_questions=list(outcome.open_questions),
            next_deadline=outcome.next_deadline,
            sources=list(outcome.sources) or sorted(contract.hz.inputs),
            previous_seq=last.seq if last is not None else None,
            covers_through_seq=run.held.writer.last_seq,
        ),
        turn=state.turn,
    )
    cost = price_usd(spec, result.usage, settings=run.env)
    await run.held.append(
        Usage(
            purpose="summary",
            tokens=result.usage.input_tokens + result.usage.output_tokens,
            tokens_cached=result.usage.cached_tokens,
            usd=cost.usd,
            priced=None if cost.priced else False,
        ),
        turn=state.turn,
    )
    return True
