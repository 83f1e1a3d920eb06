"""think: build the context in code and ask the model for one typed outcome; each request
is an attempt, a failure ends the turn, and output that had streamed before a crash is
never asked for again."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import orjson

from hz_kernel import crashpoints
from hz_kernel.adapters.framing import (
    FramedInput,
    render_approval,
    render_discovered,
    render_rejection,
)
from hz_kernel.adapters.models import TokenUsage, UsdCost, price_usd, resolve_model
from hz_kernel.adapters.sources import sha256_hex
from hz_kernel.clock import now_utc
from hz_kernel.contracts import CompiledContract, ContractVersions
from hz_kernel.engine.attempts import (
    AttemptInfo,
    ContextOverflow,
    ModelOutputInvalid,
    ModelRefused,
    ModelUnavailable,
    RetryInfo,
    StreamTruncated,
    TokenCapReached,
    messages_from_json,
    run_model_step,
    steering_message,
    user_message,
)
from hz_kernel.engine.caps import check_caps, token_budget
from hz_kernel.engine.context import Context, Situation, build_context
from hz_kernel.engine.outcome import REPORT_MAX, DraftOutcome, Outcome
from hz_kernel.engine.state import TurnState
from hz_kernel.engine.steps.finish import finish
from hz_kernel.engine.summary import summarise
from hz_kernel.engine.tools import TOOLS, Grant
from hz_kernel.engine.tools.journal import ToolJournal, tool_calls_began
from hz_kernel.engine.window import Window, estimate_tokens, window_for
from hz_kernel.observe import Observation
from hz_kernel.store.bodies import read_body
from hz_kernel.store.envelope import since_seq
from hz_kernel.store.fsutil import is_regular_file
from hz_kernel.store.inbox import Inbox
from hz_kernel.tick.discovery import KnownSources, amended_text, input_for, input_identity
from hz_kernel.vocabulary import (
    AttemptFailed,
    AttemptRetry,
    AttemptStarted,
    ContextPrepared,
    StepDone,
)

if TYPE_CHECKING:
    from hz_kernel.engine.runner import TurnRunner

#: The code of a think attempt cut on purpose for the next kernel: its step is asked again.
HANDED_OVER = "engine_handed_over"


async def think(run: TurnRunner, state: TurnState) -> str | None:
    """Ask the model; a failure ends the turn (returns the disposition)."""
    assert run.body is not None
    contract = run.contract(state)
    records = read_body(run.held.dir, state.turn) or []
    interrupted = await _interrupted_stream(run, state, records)
    if interrupted is not None:
        return interrupted
    requests = [str(r["message"]) for r in records if r.get("type") == "request"]
    requests.extend(_answers(run, state))
    output = next(iter(contract.hz.outputs), "section")
    approval = "approval" in state.causes
    by_name = {str(i["name"]): str(i["content"]) for i in state.inputs}
    extra: list[str] = []
    if approval and "rejection_reason" in by_name:
        extra.append(render_rejection(reason=by_name["rejection_reason"]))
    elif approval:
        extra.append(
            render_approval(
                draft_as_placed=by_name.get("draft_as_placed", ""),
                approved_text=by_name.get("approved_text", ""),
            )
        )
    situation = None if approval else _situation(run, state)
    discovered = _discovered(run, state, contract)

    def prepare() -> Context:
        return build_context(
            contract=contract,
            version=state.version,
            events=run.held.scan.events,
            hidden=run.held.projection.hidden,
            before_seq=state.started.seq,
            lessons_seq=int(state.started.data.get("lessons_seq") or 0),
            inputs=None
            if approval
            else [
                FramedInput(
                    name=i["name"], source=i["source"], content=i["content"], moved=i["moved"]
                )
                for i in state.inputs
            ],
            output=output,
            requests=requests,
            approved_text=None if approval else _last_approved_text(run),
            extra=extra,
            discovered=discovered,
            keep_turns=run.settings.heinzel.summary_keep_turns,
            situation=situation,
            turn=state.turn,
        )

    context = prepare()
    spec = contract.hz.agent.model or run.settings.model.default
    size = len(context.instructions.encode()) + sum(len(m.encode()) for m in context.messages)
    max_tokens = contract.hz.agent.max_tokens
    cap = check_caps(
        model=spec,
        context_bytes=size,
        max_tokens=max_tokens,
        contract_max_usd=contract.hz.agent.max_usd,
        user_max_usd=run.settings.heinzel.max_usd,
        spent_today_usd=await _spent_today(run),
        max_usd_per_day=run.settings.heinzel.max_usd_per_day,
    )
    if not cap.ok:
        return await finish(run, state, "skipped", reason=f"cap: {cap.reason}")
    budget = token_budget(max_tokens=max_tokens, context_bytes=size, priced=cap.priced)
    model = resolve_model(spec, settings=run.env)
    grant = Grant.of(
        contract,
        base_dir=Path(run.settings.documents.root).expanduser(),
        heinzel_root=run.kernel.home.heinzel_root,
        resolve_asset=run.resolve_asset,
    )
    # A step that had called tools when the process stopped goes on from the conversation
    # it recorded; any other begins again from a context built now.
    resuming = tool_calls_began(run.held.scan.events, state.turn)
    journal = ToolJournal(run, state, TOOLS, grant, records if resuming else [])
    window = window_for(spec, run.settings.model.windows)
    if not journal.messages:
        context = await _fitted(run, state, context, prepare, window, journal.described(), spec)
        if context is None:
            await run.held.flush()
            return await finish(run, state, "failed", reason=_too_large(run, state), step="think")
        run.body.write("context", **context.record())

    async def on_attempt(info: AttemptInfo) -> None:
        assert run.body is not None
        # The body says which request an attempt asked (the spine counts attempts only),
        # so a transcript pairs each attempt with the request and the answer it got.
        run.body.write("attempt", attempt=info.attempt, request=info.request, retry=info.retry)
        await run.held.append(
            AttemptStarted(step="think", attempt=info.attempt, model=spec), turn=state.turn
        )

    async def on_retry(info: RetryInfo) -> None:
        await run.held.append(
            AttemptRetry(
                step="think", attempt=info.attempt, delay_ms=info.delay_ms, error=info.error
            ),
            turn=state.turn,
        )

    async def on_chunk(chunk: str) -> None:
        assert run.body is not None
        offset = run.body.size
        run.body.write("chunk", text=chunk)
        crashpoints.reached("model:chunk")
        # The record's byte range in the body: a reader over the wire (``turn.body``) tells
        # a repeat from a gap by it.
        delta = {"type": "chunk", "text": chunk, "offset": offset, "end": run.body.size}
        run.kernel.observe(Observation(heinzel=run.held.id, turn=state.turn, body=delta))

    history: list[Any] = journal.history() or [user_message(*context.messages)]
    usage = TokenUsage()
    attempts = 0
    before = len(run.held.scan.events)
    overflowed = False
    try:
        while True:
            left = budget.left(usage)
            if left is None:
                raise TokenCapReached("no tokens left to answer steering", usage=TokenUsage())
            try:
                result = await run_model_step(
                    model=model,
                    instructions=context.instructions,
                    messages=history,
                    on_attempt=on_attempt,
                    on_chunk=on_chunk,
                    on_retry=on_retry,
                    admit=run.admit_attempt,
                    steering=run.steer,
                    outcomes=("lessons", "nothing") if approval else None,
                    budget=left,
                    wait_check=situation,
                    tools=journal,
                )
            except ContextOverflow as exc:
                # Once per step, and only before any tool call (a fresh conversation would
                # number its calls anew): compact the history, then ask once more.
                if overflowed or tool_calls_began(run.held.scan.events, state.turn):
                    raise
                overflowed = True
                await _attempt_failed(run, state, exc.code, exc.message, 0)
                tools = journal.described()
                compacted = await _fitted(run, state, None, prepare, window, tools, spec)
                if compacted is None:
                    return await finish(
                        run, state, "failed", reason=exc.one_line()[:500], step="think"
                    )
                context = compacted
                run.body.write("context", **context.record())
                run.body.sync()
                history = [user_message(*context.messages)]
                continue
            usage += result.usage
            attempts += result.attempts
            late = await run.steer() if run.steer is not None else []
            if not late:
                break
            history = [*messages_from_json(result.messages), steering_message(*late)]
    except TokenCapReached as exc:
        _spent(run, state, usage + exc.usage, spec)
        await _attempt_failed(run, state, exc.code, exc.message, 0)
        reason = f"cap: used max_tokens {max_tokens} per turn"
        return await finish(run, state, "failed", reason=reason, step="think")
    except StreamTruncated as exc:
        run.body.sync()
        await _attempt_failed(run, state, "stream_truncated", exc.message, len(exc.text))
        return await finish(run, state, "failed", reason="stream_truncated", step="think")
    except (ModelUnavailable, ModelRefused, ModelOutputInvalid) as exc:
        await _attempt_failed(run, state, exc.code, exc.message, 0)
        return await finish(run, state, "failed", reason=exc.one_line()[:500], step="think")
    except asyncio.CancelledError:
        asked = [e for e in run.held.scan.events[before:] if e.kind == "attempt.started"]
        if run.kernel.draining and asked:
            # Cut on purpose for the next kernel (a hand-off, a restart): the answer had no
            # effect yet, so the step is asked again there rather than failed as a crash.
            run.body.sync()
            await _attempt_failed(
                run, state, HANDED_OVER, "the kernel handed the turn over mid-answer", 0
            )
        raise
    run.body.write("messages", messages=result.messages)
    outcome = said_stale(result.outcome, state.inputs)
    outcome_json = outcome.model_dump(mode="json")
    run.body.write("outcome", outcome=outcome_json)
    run.body.sync()
    state.outcome = outcome
    cost = _spent(run, state, usage, spec)
    state.attempts = attempts
    text = orjson.dumps(outcome_json)
    # The model has answered: up to the turn's end the work is local (the outcome, the act,
    # the finish), so its lines are indexed and told together when the turn ends.
    run.held.index_later = True
    await run.held.append(
        StepDone(
            step="think",
            output_hash=sha256_hex(text),
            output_size=len(text),
            attempts=attempts,
            tokens=usage.input_tokens + usage.output_tokens,
            tokens_cached=usage.cached_tokens,
            usd=cost.usd,
            priced=None if cost.priced else False,
        ),
        turn=state.turn,
    )
    state.done.append("think")
    return None


def said_stale(outcome: Outcome, inputs: list[dict[str, Any]]) -> Outcome:
    """A draft made from an upstream's older approved text says so (``docs/flow.md``): hz,
    not the model, writes the first line of the draft and marks the report."""
    notes = [str(i["note"]) for i in inputs if i.get("fell_back") and i.get("note")]
    if not notes or not isinstance(outcome, DraftOutcome):
        return outcome
    quoted = "\n".join(f"> {note}" for note in notes)
    report = f"{outcome.report} (stale input)"
    if len(report) > REPORT_MAX:
        report = outcome.report[: REPORT_MAX - len(" (stale input)") - 1] + "… (stale input)"
    return outcome.model_copy(update={"text": f"{quoted}\n\n{outcome.text}", "report": report})


def _too_large(run: TurnRunner, state: TurnState) -> str:
    """Why the turn cannot ask its model: the estimate against the budget, and the way out."""
    prepared = next(
        e.data
        for e in reversed(run.held.scan.events)
        if e.kind == "context.prepared" and e.turn == state.turn
    )
    return (
        f"HZE070: the context needs about {prepared['estimate_tokens']} tokens, even compacted; "
        f"the model takes {prepared.get('budget_tokens')} (its window of "
        f"{prepared.get('window_tokens')} less the answer's reserve): set a larger window in "
        "[model.windows] if the model has one, or narrow the contract's inputs"
    )


async def _fitted(
    run: TurnRunner,
    state: TurnState,
    context: Context | None,
    prepare: Callable[[], Context],
    window: Window,
    tools: str,
    spec: str,
) -> Context | None:
    """The context to ask with, compacted first when it would not fit; None if it cannot fit.

    Given a ``context``, it is compacted (a summary, then built again) only
    when its estimate is over a known window's budget; given none, the
    provider said the last one overflowed, and it is compacted in any case.
    Either way ``context.prepared`` records the estimate the model is asked
    with. A window that is not known never refuses a context.
    """
    estimate = (
        0
        if context is None
        else estimate_tokens(window, context.instructions, context.messages, tools)
    )
    reason: Literal["budget", "overflow"] | None = None
    if context is None or (window.known and estimate > window.budget):
        reason = "budget" if context is not None else "overflow"
        if not await summarise(run, state) and context is None:
            return None
        context = prepare()
        estimate = estimate_tokens(window, context.instructions, context.messages, tools)
    run.held.stage(
        ContextPrepared(
            model=spec,
            estimate_tokens=estimate,
            window_tokens=window.tokens if window.known else None,
            budget_tokens=window.budget if window.known else None,
            compacted=reason is not None,
            reason=reason,
        ),
        turn=state.turn,
    )
    return context if estimate <= window.budget or not window.known else None


def _situation(run: TurnRunner, state: TurnState) -> Situation:
    """Why this turn woke, and the drafts, questions and input fingerprints a wait may name."""
    projection = run.held.projection
    return Situation(
        woken_by=tuple(state.causes),
        drafts=tuple(
            (str(row["key"]), str(row.get("asset") or ""))
            for row in projection.live("drafts", projection.drafts)
        ),
        questions=tuple(
            (str(row["key"]), str(row.get("question") or ""))
            for row in projection.live("questions", projection.questions)
        ),
        fingerprints=tuple(
            (str(i["name"]), str(i["fingerprint"])) for i in state.inputs if i.get("fingerprint")
        ),
    )


def _discovered(run: TurnRunner, state: TurnState, contract: CompiledContract) -> list[str]:
    """The sources this turn woke for (``discovered``), each with the contract that would read
    it; none the contract reads already, the user declined, or whose hint it no longer has."""
    if "discovered" not in state.causes:
        return []
    keys = set(state.keys)
    resolve = run.settings.documents.resolve
    team_repo = (contract.hz.team.repo if contract.hz.team else None) or run.settings.team.repo
    reading = KnownSources(
        input_identity(spec, resolve, team_repo) for spec in contract.inputs.values()
    )
    declined = run.held.projection.declined
    known = KnownSources(declined)
    text = ContractVersions(run.held.dir).text(state.version)
    framed = []
    for event in run.held.scan.events:
        if event.kind != "source.discovered" or event.key not in keys:
            continue
        source, hint = str(event.data.get("source")), str(event.data.get("hint"))
        if hint not in contract.hz.discover or source in reading or source in known:
            continue
        if source.startswith("/") and not is_regular_file(Path(source)):
            framed.append(
                render_discovered(source=source, hint=hint, input_name="", proposal="", gone=True)
            )
            continue
        made = input_for(source, [*contract.inputs, *declined], team_repo)
        proposal = (amended_text(text, *made) if made else None) or ""
        name = made[0] if made and proposal else ""
        framed.append(
            render_discovered(source=source, hint=hint, input_name=name, proposal=proposal)
        )
    return framed


def _answers(run: TurnRunner, state: TurnState) -> list[str]:
    """The user's answers to questions this turn asked (a turn resumed by an answer)."""
    since = since_seq(run.held.scan.events, state.started.seq)
    asked = {
        e.data.get("key"): str(e.data.get("question") or "")
        for e in since
        if e.turn == state.turn and e.kind == "question.asked"
    }
    inbox = Inbox(run.held.dir)
    answers = []
    for event in since:
        if event.kind == "question.answered" and event.data.get("key") in asked:
            request = inbox.get(str(event.data.get("request_id")))
            if request is not None:
                question = asked[event.data.get("key")]
                answers.append(f"You asked: {question}\nThe user answered: {request.message}")
    return answers


def _last_approved_text(run: TurnRunner) -> str | None:
    """The text the user last approved, from the approval turn that saw it (the last one that
    observed the approval of the newest approved draft)."""
    projection = run.held.projection
    drafts = projection.drafts
    approved = [
        (drafts[key].get("seq", 0), turn)
        for key, turn in projection.approvals.items()
        if drafts[key].get("status") == "approved"
    ]
    if not approved:
        return None
    _, turn = max(approved, key=lambda found: found[0])
    for record in read_body(run.held.dir, str(turn)) or []:
        if record.get("type") == "input" and record.get("name") == "approved_text":
            return str(record.get("content"))
    return None


async def _interrupted_stream(
    run: TurnRunner, state: TurnState, records: list[dict[str, Any]]
) -> str | None:
    """After a crash in think: output that had streamed is never asked for again."""
    mine = [e for e in since_seq(run.held.scan.events, state.started.seq) if e.turn == state.turn]
    attempts = [e.seq for e in mine if e.kind == "attempt.started"]
    thought = [e.seq for e in mine if e.kind == "step.done" and e.data.get("step") == "think"]
    handed = [
        e.seq for e in mine if e.kind == "attempt.failed" and e.data.get("code") == HANDED_OVER
    ]
    attempted = bool(attempts) and (not thought or thought[-1] < attempts[-1])
    attempted = attempted and not (handed and handed[-1] > attempts[-1])
    last_context = max((n for n, r in enumerate(records) if r.get("type") == "context"), default=-1)
    streamed = sum(
        len(str(r.get("text", ""))) for r in records[last_context + 1 :] if r.get("type") == "chunk"
    )
    if not (attempted and streamed):
        return None
    attempt = next(e for e in reversed(mine) if e.kind == "attempt.started")
    state.ran_s += _streamed_for_s(attempt.when, records[last_context + 1 :])
    await _attempt_failed(
        run,
        state,
        "engine_restart_mid_stream",
        "the process stopped while output streamed",
        streamed,
    )
    return await finish(
        run,
        state,
        "failed",
        reason="engine_restart_mid_stream",
        report="the process stopped while output streamed; not asked again",
        step="think",
    )


def _streamed_for_s(since: datetime, records: list[dict[str, Any]]) -> float:
    """How long output streamed after the attempt's spine line, from the body's record times.

    The spine's last line of such a run is ``attempt.started``; the run went on
    until its last body record, and that time counts as running time.
    """
    stamps = [r["ts"] for r in records if isinstance(r.get("ts"), str)]
    if not stamps:
        return 0.0
    try:
        last = datetime.fromisoformat(stamps[-1].replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return max(0.0, (last - since).total_seconds())


async def _attempt_failed(
    run: TurnRunner, state: TurnState, code: str, error: str, size: int
) -> None:
    await run.held.append(
        AttemptFailed(
            step="think",
            attempt=max(state.attempts, 1),
            code=code,
            error=error[:500],
            output_size=size,
        ),
        turn=state.turn,
    )


def _spent(run: TurnRunner, state: TurnState, usage: TokenUsage, spec: str) -> UsdCost:
    """Add a think step's usage to the turn; an unpriced model leaves its cost unknown."""
    cost = price_usd(spec, usage, settings=run.env)
    state.tokens += usage.tokens
    state.tokens_cached += usage.cached_tokens
    state.usd += cost.usd
    state.priced = state.priced and cost.priced
    return cost


async def _spent_today(run: TurnRunner) -> float:
    return run.kernel.index.spent_on(now_utc().date().isoformat())
