"""A turn: five journalled steps, effects through the ledger, resumable at every checkpoint.

``gather → think → outcome → act → finish``. Each step's ``step.done`` is
durable before the next starts, and its content is in the turn body (fsynced
first). A process that dies anywhere is resumed by the next run of the same
key: finished steps are not done again, their results are read back from
the body; an effect whose ``effect.started`` has no outcome is looked up by
key instead of performed again; a model request that had streamed output
is never rerun (``engine_restart_mid_stream``).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import hashlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import TypeAdapter

from hz_kernel import crashpoints
from hz_kernel.adapters.documents import FoundSection, MarkdownDocuments
from hz_kernel.adapters.local_model import (
    FramedInput,
    render_approval,
    render_rejection,
    render_summary_request,
)
from hz_kernel.adapters.models import ModelEnv, TokenUsage, UsdCost, price_usd, resolve_model
from hz_kernel.adapters.sources import SourceRequest, default_registry
from hz_kernel.clock import now_utc
from hz_kernel.contracts import (
    CompiledContract,
    ContractError,
    ContractVersions,
    duration_seconds,
)
from hz_kernel.engine.attempts import (
    AttemptInfo,
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
from hz_kernel.engine.context import (
    EVENT_LINES_MAX,
    FRAMING,
    build_context,
    event_line,
    summary_block,
)
from hz_kernel.engine.outcome import (
    AmendmentOutcome,
    DraftOutcome,
    LessonsOutcome,
    NothingOutcome,
    Outcome,
    QuestionOutcome,
    SummaryOutcome,
    WaitOutcome,
    quotes_document,
)
from hz_kernel.engine.wakes import Wake, draft_key
from hz_kernel.errors import HzError
from hz_kernel.observe import Observation
from hz_kernel.store.bodies import BodyWriter, read_body
from hz_kernel.store.envelope import Event
from hz_kernel.store.inbox import Inbox
from hz_kernel.store.session import HeldSession
from hz_kernel.tick.cache import SourceCache
from hz_kernel.vocabulary import (
    ApprovalObserved,
    AttemptFailed,
    AttemptRetry,
    AttemptStarted,
    DraftPlaced,
    DraftSuperseded,
    EffectDone,
    EffectFailed,
    EffectInterrupted,
    EffectStarted,
    LessonRecorded,
    QuestionAsked,
    StepDone,
    SummaryWritten,
    TurnFinished,
    TurnResumed,
    TurnStarted,
    TurnWaiting,
    Usage,
)

if TYPE_CHECKING:
    from hz_kernel.core import KernelCore

_OUTCOME = TypeAdapter(Outcome)
PLACE_DRAFT = "documents.place_draft"


def sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def share_changed(before: str, after: str) -> float:
    """The share of words the user changed between the draft and the approved text."""
    old, new = before.split(), after.split()
    if not old and not new:
        return 0.0
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    return round(1.0 - matcher.ratio(), 4)


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


#: The code of a think attempt cut on purpose for the next kernel: its step is asked again.
HANDED_OVER = "engine_handed_over"


class Drained(Exception):
    """The kernel drains: the turn stops at a step boundary, open, as a resumable checkpoint."""


class TurnRunner:
    """Runs one turn of one heinzel while its session (and lock) is held."""

    def __init__(self, kernel: KernelCore, held: HeldSession) -> None:
        self.kernel = kernel
        self.held = held
        self.settings = kernel.home.settings
        self.documents = MarkdownDocuments()
        self.cache = SourceCache(kernel.home.sources_dir)
        self.sources = default_registry(
            base_dir=Path(self.settings.documents.root).expanduser(),
            heinzel_root=kernel.home.heinzel_root,
        )
        self.body: BodyWriter | None = None
        self.started_clock = time.monotonic()
        self.steer: Callable[[], Awaitable[list[str]]] | None = None
        self._pinned: CompiledContract | None = None
        self.stopping = False
        self.turn = ""
        self.task: asyncio.Task[object] | None = None
        self.state: TurnState | None = None
        """The turn as it runs (its step and cost so far, for the kernel's status)."""
        self._env = ModelEnv.from_environ()

    # -- entry points --------------------------------------------------------------------

    async def start(
        self,
        turn: str,
        wakes: list[Wake],
        *,
        request_ids: list[str],
        parent_turn: str | None = None,
        from_step: str | None = None,
        deadline: datetime | None = None,
    ) -> TurnState:
        """``turn.started``; ``deadline`` (default: now + the timeout) came with the wake, so
        time spent queued for admission counts against it."""
        row = self.held.projection.heinzel
        self.started_clock = time.monotonic()
        deadline = deadline or now_utc() + timedelta(seconds=self.settings.heinzel.turn_timeout_s)
        started = await self.held.append(
            TurnStarted(
                cause=wakes[0].cause,
                causes=[w.cause for w in wakes],
                keys=[w.key for w in wakes],
                contract_version=int(row["contract_version"]),
                lessons_seq=int(row["lessons_seq"] or 0),
                request_ids=request_ids,
                parent_turn=parent_turn,
                from_step=from_step,  # type: ignore[arg-type]
                deadline=deadline,
            ),
            turn=turn,
            key=wakes[0].key,
        )
        return TurnState(turn=turn, started=started)

    async def resume(self, state: TurnState, woken_by: str = "restart") -> TurnState | None:
        """Continue an open turn, or end it abandoned when it resumed too often or overran.

        The timeout counts running time (``TurnState.ran_s``): a turn that was
        down for an hour after a crash, or waited a week, has not overrun.
        """
        step = state.done[-1] if state.done else None
        if state.resumes >= self.settings.heinzel.max_resumes:
            await self._finish(
                state, "abandoned", reason=f"resumed {state.resumes} times", step=step
            )
            return None
        if state.ran_s > timeout_s(state, self.settings.heinzel.turn_timeout_s):
            await self._finish(state, "abandoned", reason="timeout", step=step)
            return None
        waited = woken_by != "restart"
        if waited:
            state.done = [s for s in state.done if s == "gather"]
            state.outcome = None
        await self.held.append(
            TurnResumed(woken_by=woken_by, resumes=state.resumes + 1),  # type: ignore[arg-type]
            turn=state.turn,
        )
        self.started_clock = time.monotonic()
        state.resumes += 1
        return state

    async def abandon(self, state: TurnState, reason: str) -> str:
        """End an open turn this process is not running (``stop`` after a crash)."""
        return await self._finish(
            state, "abandoned", reason=reason, step=state.done[-1] if state.done else None
        )

    async def run(self, state: TurnState) -> str:
        """Walk the remaining steps; returns the disposition (or ``waited``)."""
        self.body = BodyWriter(self.held.dir, state.turn)
        self.state = state
        try:
            return await self._walk(state)
        except Drained:
            return "drained"
        except asyncio.CancelledError:
            if not self.stopping:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return await self._finish(
                state, "abandoned", reason="stopped", step=state.done[-1] if state.done else None
            )
        finally:
            self.body.close()
            self.body = None

    async def _walk(self, state: TurnState) -> str:
        """The remaining steps. Each boundary yields to the event loop, so a message, a
        wake or a stop that arrived meanwhile is taken in between two steps; a draining
        kernel ends the walk there, the turn left open for the next start to resume."""
        assert self.body is not None
        if self.body.size == 0 and "think" in state.done and "act" not in state.done:
            # The body was deleted: the inputs and the outcome are gone. Those steps are
            # replay-safe, so they run again rather than acting on nothing.
            state.done = []
        self._reload(state)
        try:
            await self._boundary()
            if "gather" not in state.done:
                await self._gather(state)
                await self._boundary()
            if "think" not in state.done:
                disposition = await self._think(state)
                if disposition is not None:
                    return disposition
                await self._boundary()
            if "outcome" not in state.done:
                await self._outcome(state)
                await self._boundary()
            if "act" not in state.done:
                waited = await self._act(state)
                if waited:
                    return "waited"
                await self._boundary()
            await self._maybe_summarise(state)
        except HzError as exc:
            step = state.done[-1] if state.done else None
            return await self._finish(state, "failed", reason=exc.one_line()[:500], step=step)
        return await self._finish(state, _disposition(state.outcome), report=state.report)

    async def _boundary(self) -> None:
        """Between two steps: let what arrived run, and stop here, the turn open at its
        checkpoint, when the kernel drains (a restart, or a cockpit handing its turns to the
        daemon): the next kernel resumes it from there."""
        await asyncio.sleep(0)
        if self.kernel.draining:
            raise Drained

    async def _maybe_summarise(self, state: TurnState) -> None:
        """Past the budget, end the turn with a summary in the fixed shape, chained to the last.

        The budget is ``summary_after_turns`` turns or ``summary_after_chars``
        characters of history since the last summary. The summary's model call
        is recorded as ``usage`` (spend outside the turn's own think step).
        """
        events = self.held.scan.events
        last = next((e for e in reversed(events) if e.kind == "summary.written"), None)
        since = last.seq if last is not None else 0
        if any(e.kind == "summary.written" and e.turn == state.turn for e in events):
            return
        ended = [
            e
            for e in events
            if e.seq > since and e.kind in ("turn.started", "turn.skipped") and e.turn != state.turn
        ]
        lines = [line for e in events if e.seq > since and (line := event_line(e))]
        settings = self.settings.heinzel
        over = len(ended) + 1 >= settings.summary_after_turns
        if not over and sum(len(line) for line in lines) < settings.summary_after_chars:
            return
        contract = self._contract(state)
        asset = next(iter(contract.assets), contract.name)
        messages = []
        if last is not None:
            messages.append(summary_block(last))
        messages.append("<history>\n" + "\n".join(lines[-EVENT_LINES_MAX:]) + "\n</history>")
        messages.append(render_summary_request(asset=asset, wants=contract.goal[:500]))
        spec = contract.hz.agent.model or self.settings.model.default
        model = resolve_model(spec, settings=self._env)

        async def quiet(*_: object) -> None:
            return None

        size = len(FRAMING.encode()) + sum(len(m.encode()) for m in messages)
        result = await run_model_step(
            model=model,
            instructions=FRAMING,
            messages=[user_message(*messages)],
            on_attempt=quiet,
            on_chunk=quiet,
            admit=self._admit_attempt,
            outcomes=("summary",),
            budget=token_budget(
                max_tokens=contract.hz.agent.max_tokens,
                context_bytes=size,
                priced=price_usd(spec, TokenUsage(), settings=self._env).priced,
            ),
        )
        outcome = result.outcome
        if not isinstance(outcome, SummaryOutcome):
            return
        assert self.body is not None
        self.body.write("summary", outcome=outcome.model_dump(mode="json"))
        self.body.sync()
        await self.held.append(
            SummaryWritten(
                asset=outcome.asset,
                wants=outcome.wants,
                decisions=list(outcome.decisions),
                open_questions=list(outcome.open_questions),
                next_deadline=outcome.next_deadline,
                sources=list(outcome.sources) or sorted(contract.hz.inputs),
                previous_seq=last.seq if last is not None else None,
                covers_through_seq=self.held.writer.last_seq,
            ),
            turn=state.turn,
        )
        cost = price_usd(spec, result.usage, settings=self._env)
        await self.held.append(
            Usage(
                purpose="summary",
                tokens=result.usage.input_tokens + result.usage.output_tokens,
                tokens_cached=result.usage.cached_tokens,
                usd=cost.usd,
                priced=None if cost.priced else False,
            ),
            turn=state.turn,
        )

    def _admit_attempt(self) -> contextlib.AbstractAsyncContextManager[object]:
        """A model request waits for one of the kernel's attempt slots."""
        return self.kernel.admission.attempt(self.held.id)

    # -- the steps ---------------------------------------------------------------------

    def _contract(self, state: TurnState) -> CompiledContract:
        if self._pinned is None:
            self._pinned = ContractVersions(self.held.dir).read(state.version)[1]
        return self._pinned

    def _reload(self, state: TurnState) -> None:
        records = read_body(self.held.dir, state.turn) or []
        state.inputs = [r for r in records if r.get("type") == "input"]
        outcomes = [r for r in records if r.get("type") == "outcome"]
        if outcomes:
            state.outcome = _OUTCOME.validate_python(outcomes[-1]["outcome"])

    async def _gather(self, state: TurnState) -> None:
        assert self.body is not None
        contract = self._contract(state)
        last = self.held.projection.heinzel["inputs"]
        if "approval" in state.causes:
            await self._gather_approval(state)
            return
        parent = state.started.data.get("parent_turn")
        if parent and state.started.data.get("from_step"):
            inherited = [r for r in read_body(self.held.dir, parent) or [] if r["type"] == "input"]
        else:
            inherited = []
        gathered: list[dict[str, Any]] = []
        for record in inherited:
            gathered.append({k: v for k, v in record.items() if k not in ("ts", "type")})
        if not inherited:
            staged = _staged_fingerprints(state.keys, contract.hz.inputs)
            for name, spec in contract.hz.inputs.items():
                request = SourceRequest(source=spec.source, method=spec.method, args=spec.args)
                result = self.cache.get(request)
                fresh_for = duration_seconds(spec.recheck) if spec.recheck else 0
                now = now_utc()
                if result is None or (
                    (now - result.as_of).total_seconds() > fresh_for
                    and result.fingerprint(spec.facet) != staged.get(name)
                ):
                    result = self.sources.fetch(request, now=now, previous=result)
                    self.cache.put(result)
                fingerprint = result.fingerprint(spec.facet)
                content = "\n\n".join(
                    f"## {facet}\n{text}" if len(result.content) > 1 else text
                    for facet, text in sorted(result.content.items())
                )
                gathered.append(
                    {
                        "name": name,
                        "source": f"{spec.source}:{spec.method}",
                        "fingerprint": fingerprint,
                        "moved": fingerprint != (last.get(name) or {}).get("last_fp"),
                        "content": content,
                    }
                )
        for item in gathered:
            self.body.write("input", **item)
        self._write_requests(state)
        self.body.sync()
        state.inputs = gathered
        await self.held.append(
            StepDone(
                step="gather",
                inputs=[
                    {
                        "name": i["name"],
                        "fingerprint": i["fingerprint"],
                        "size": len(i["content"].encode()),
                        "moved": i["moved"],
                    }
                    for i in gathered
                ],
            ),
            turn=state.turn,
        )
        state.done.append("gather")

    async def _gather_approval(self, state: TurnState) -> None:
        """An approval turn's inputs: the draft as placed and the text as the user left it.

        A rejected draft (or a declined amendment) gives only the user's reason:
        the deleted text is never shown, so nothing is learned from it.
        """
        assert self.body is not None
        draft_key_ = str(state.started.data.get("keys", [""])[0]).split("@approval:", 1)[-1]
        draft = self.held.projection.drafts.get(draft_key_)
        if draft is None or draft.get("status") == "rejected":
            await self._gather_rejection(state, draft_key_)
            return
        placed = next(
            (
                r
                for r in read_body(self.held.dir, str(draft.get("turn"))) or []
                if r.get("type") == "draft" and r.get("key") == draft_key_
            ),
            {},
        )
        placed_text = str(placed.get("text", ""))
        path, _ = self._resolve_asset(str(draft.get("asset", "")))
        seen = self.documents.draft_state(path, draft_key_, placed_text=placed_text)
        if seen.status.value == "rejected":
            await self._gather_rejection(state, draft_key_)
            return
        approved = seen.text or "" if seen.status.value == "approved" else ""
        self.body.write("approval", key=draft_key_, status=seen.status.value)
        for name, source, text in (
            ("draft_as_placed", "turn-body", placed_text),
            ("approved_text", "document", approved),
        ):
            self.body.write(
                "input",
                name=name,
                source=source,
                fingerprint=sha256(text),
                moved=False,
                content=text,
            )
        self.body.sync()
        state.inputs = [
            {"name": "draft_as_placed", "content": placed_text},
            {"name": "approved_text", "content": approved},
        ]
        if seen.status.value == "approved" and draft.get("status") == "pending":
            await self.held.append(
                ApprovalObserved(
                    key=draft_key_,
                    approver="owner",
                    share_changed=share_changed(placed_text, approved),
                    output_fp=sha256(" ".join(approved.split())),
                ),
                turn=state.turn,
            )
        await self.held.append(
            StepDone(
                step="gather",
                inputs=[
                    {
                        "name": "draft_as_placed",
                        "fingerprint": sha256(placed_text),
                        "size": len(placed_text.encode()),
                    },
                    {
                        "name": "approved_text",
                        "fingerprint": sha256(approved),
                        "size": len(approved.encode()),
                    },
                ],
            ),
            turn=state.turn,
        )
        state.done.append("gather")

    async def _gather_rejection(self, state: TurnState, key: str) -> None:
        """A rejection's one input: the reason the user gave with it (empty without one)."""
        assert self.body is not None
        inbox = Inbox(self.held.dir)
        reasons = [
            request.message
            for request_id in state.started.data.get("request_ids") or []
            if (request := inbox.get(str(request_id))) is not None and request.message
        ]
        reason = "\n".join(reasons)
        self.body.write("approval", key=key, status="rejected")
        self.body.write(
            "input",
            name="rejection_reason",
            source="user",
            fingerprint=sha256(reason),
            moved=False,
            content=reason,
        )
        self.body.sync()
        state.inputs = [{"name": "rejection_reason", "content": reason}]
        await self.held.append(
            StepDone(
                step="gather",
                inputs=[
                    {
                        "name": "rejection_reason",
                        "fingerprint": sha256(reason),
                        "size": len(reason.encode()),
                    }
                ],
            ),
            turn=state.turn,
        )
        state.done.append("gather")

    def _write_requests(self, state: TurnState) -> None:
        """Copy the texts of the requests this turn answers into its body."""
        assert self.body is not None
        inbox = Inbox(self.held.dir)
        for request_id in state.started.data.get("request_ids") or []:
            request = inbox.get(str(request_id))
            if request is not None and request.message:
                self.body.write("request", request_id=request.request_id, message=request.message)

    async def _think(self, state: TurnState) -> str | None:
        """Ask the model; a failure ends the turn (returns the disposition)."""
        assert self.body is not None
        contract = self._contract(state)
        records = read_body(self.held.dir, state.turn) or []
        interrupted = await self._interrupted_stream(state, records)
        if interrupted is not None:
            return interrupted
        requests = [str(r["message"]) for r in records if r.get("type") == "request"]
        requests.extend(self._answers(state))
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
        context = build_context(
            contract=contract,
            version=state.version,
            events=self.held.scan.events,
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
            approved_text=None if approval else self._last_approved_text(),
            extra=extra,
            keep_turns=self.settings.heinzel.summary_keep_turns,
        )
        spec = contract.hz.agent.model or self.settings.model.default
        size = len(context.instructions.encode()) + sum(len(m.encode()) for m in context.messages)
        max_tokens = contract.hz.agent.max_tokens
        cap = check_caps(
            model=spec,
            context_bytes=size,
            max_tokens=max_tokens,
            contract_max_usd=contract.hz.agent.max_usd,
            user_max_usd=self.settings.heinzel.max_usd,
            spent_today_usd=await self._spent_today(),
            max_usd_per_day=self.settings.heinzel.max_usd_per_day,
        )
        if not cap.ok:
            return await self._finish(state, "skipped", reason=f"cap: {cap.reason}")
        budget = token_budget(max_tokens=max_tokens, context_bytes=size, priced=cap.priced)
        model = resolve_model(spec, settings=self._env)
        self.body.write("context", **context.record())
        self.body.sync()

        async def on_attempt(info: AttemptInfo) -> None:
            assert self.body is not None
            # The body says which request an attempt asked (the spine counts attempts only),
            # so a transcript pairs each attempt with the request and the answer it got.
            self.body.write("attempt", attempt=info.attempt, request=info.request, retry=info.retry)
            await self.held.append(
                AttemptStarted(step="think", attempt=info.attempt, model=spec), turn=state.turn
            )

        async def on_retry(info: RetryInfo) -> None:
            await self.held.append(
                AttemptRetry(
                    step="think", attempt=info.attempt, delay_ms=info.delay_ms, error=info.error
                ),
                turn=state.turn,
            )

        async def on_chunk(chunk: str) -> None:
            assert self.body is not None
            offset = self.body.size
            self.body.write("chunk", text=chunk)
            crashpoints.reached("model:chunk")
            # The record's byte range in the body: a reader over the wire (``turn.body``) tells
            # a repeat from a gap by it.
            delta = {"type": "chunk", "text": chunk, "offset": offset, "end": self.body.size}
            self.kernel.observe(Observation(heinzel=self.held.id, turn=state.turn, body=delta))

        history: list[Any] = [user_message(*context.messages)]
        usage = TokenUsage()
        attempts = 0
        started = len([e for e in self.held.scan.events if e.kind == "attempt.started"])
        try:
            while True:
                left = budget.left(usage)
                if left is None:
                    raise TokenCapReached("no tokens left to answer steering", usage=TokenUsage())
                result = await run_model_step(
                    model=model,
                    instructions=context.instructions,
                    messages=history,
                    on_attempt=on_attempt,
                    on_chunk=on_chunk,
                    on_retry=on_retry,
                    admit=self._admit_attempt,
                    steering=self.steer,
                    outcomes=("lessons", "nothing") if approval else None,
                    budget=left,
                )
                usage += result.usage
                attempts += result.attempts
                late = await self.steer() if self.steer is not None else []
                if not late:
                    break
                history = [*messages_from_json(result.messages), steering_message(*late)]
        except TokenCapReached as exc:
            self._spent(state, usage + exc.usage, spec)
            await self._attempt_failed(state, exc.code, exc.message, 0)
            reason = f"cap: used max_tokens {max_tokens} per turn"
            return await self._finish(state, "failed", reason=reason, step="think")
        except StreamTruncated as exc:
            self.body.sync()
            await self._attempt_failed(state, "stream_truncated", exc.message, len(exc.text))
            return await self._finish(state, "failed", reason="stream_truncated", step="think")
        except (ModelUnavailable, ModelRefused, ModelOutputInvalid) as exc:
            await self._attempt_failed(state, exc.code, exc.message, 0)
            return await self._finish(state, "failed", reason=exc.one_line()[:500], step="think")
        except asyncio.CancelledError:
            asked = [e for e in self.held.scan.events if e.kind == "attempt.started"][started:]
            if self.kernel.draining and asked:
                # Cut on purpose for the next kernel (a hand-off, a restart): the answer had no
                # effect yet, so the step is asked again there rather than failed as a crash.
                self.body.sync()
                await self._attempt_failed(
                    state, HANDED_OVER, "the kernel handed the turn over mid-answer", 0
                )
            raise
        self.body.write("messages", messages=result.messages)
        outcome_json = result.outcome.model_dump(mode="json")
        self.body.write("outcome", outcome=outcome_json)
        self.body.sync()
        state.outcome = result.outcome
        cost = self._spent(state, usage, spec)
        state.attempts = attempts
        text = orjson.dumps(outcome_json)
        await self.held.append(
            StepDone(
                step="think",
                output_hash=sha256(text),
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

    def _answers(self, state: TurnState) -> list[str]:
        """The user's answers to questions this turn asked (a turn resumed by an answer)."""
        asked = {
            e.data.get("key")
            for e in self.held.scan.events
            if e.turn == state.turn and e.kind == "question.asked"
        }
        inbox = Inbox(self.held.dir)
        answers = []
        for event in self.held.scan.events:
            if event.kind == "question.answered" and event.data.get("key") in asked:
                request = inbox.get(str(event.data.get("request_id")))
                if request is not None:
                    answers.append(f"Your question was answered: {request.message}")
        return answers

    def _last_approved_text(self) -> str | None:
        """The text the user last approved, from the approval turn that saw it."""
        approved = [
            d for d in self.held.projection.drafts.values() if d.get("status") == "approved"
        ]
        if not approved:
            return None
        latest = max(approved, key=lambda d: d.get("seq", 0))
        for event in reversed(self.held.scan.events):
            if event.kind == "approval.observed" and event.data.get("key") == latest.get("key"):
                for record in read_body(self.held.dir, str(event.turn)) or []:
                    if record.get("type") == "input" and record.get("name") == "approved_text":
                        return str(record.get("content"))
                break
        return None

    async def _interrupted_stream(
        self, state: TurnState, records: list[dict[str, Any]]
    ) -> str | None:
        """After a crash in think: output that had streamed is never asked for again."""
        mine = [e for e in self.held.scan.events if e.turn == state.turn]
        attempts = [e.seq for e in mine if e.kind == "attempt.started"]
        thought = [e.seq for e in mine if e.kind == "step.done" and e.data.get("step") == "think"]
        handed = [
            e.seq for e in mine if e.kind == "attempt.failed" and e.data.get("code") == HANDED_OVER
        ]
        attempted = bool(attempts) and (not thought or thought[-1] < attempts[-1])
        attempted = attempted and not (handed and handed[-1] > attempts[-1])
        last_context = max(
            (n for n, r in enumerate(records) if r.get("type") == "context"), default=-1
        )
        streamed = sum(
            len(str(r.get("text", "")))
            for r in records[last_context + 1 :]
            if r.get("type") == "chunk"
        )
        if not (attempted and streamed):
            return None
        await self._attempt_failed(
            state,
            "engine_restart_mid_stream",
            "the process stopped while output streamed",
            streamed,
        )
        return await self._finish(state, "failed", reason="engine_restart_mid_stream", step="think")

    async def _attempt_failed(self, state: TurnState, code: str, error: str, size: int) -> None:
        await self.held.append(
            AttemptFailed(
                step="think",
                attempt=max(state.attempts, 1),
                code=code,
                error=error[:500],
                output_size=size,
            ),
            turn=state.turn,
        )

    def _spent(self, state: TurnState, usage: TokenUsage, spec: str) -> UsdCost:
        """Add a think step's usage to the turn; an unpriced model leaves its cost unknown."""
        cost = price_usd(spec, usage, settings=self._env)
        state.tokens += usage.tokens
        state.tokens_cached += usage.cached_tokens
        state.usd += cost.usd
        state.priced = state.priced and cost.priced
        return cost

    async def _spent_today(self) -> float:
        return self.kernel.index.spent_on(now_utc().date().isoformat())

    async def _outcome(self, state: TurnState) -> None:
        assert state.outcome is not None
        state.report = state.outcome.report
        await self.held.append(
            StepDone(step="outcome", outcome=state.outcome.type, report=state.outcome.report),
            turn=state.turn,
        )
        state.done.append("outcome")

    async def _act(self, state: TurnState) -> bool:
        """Perform the outcome's effects through the ledger; True when the turn now waits."""
        outcome = state.outcome
        assert outcome is not None
        if isinstance(outcome, DraftOutcome):
            await self._place_draft(state, outcome)
        elif isinstance(outcome, LessonsOutcome):
            known = set(self.held.projection.lessons)
            active = {
                _rule(str(row.get("lesson") or ""))
                for row in self.held.projection.lessons.values()
                if not row.get("dismissed")
            }
            document = [
                str(i.get("content", "")) for i in state.inputs if i["name"] != "rejection_reason"
            ]
            for n, lesson in enumerate(outcome.lessons):
                lesson_id = f"L-{state.turn[-8:]}-{n}"
                if (
                    lesson_id in known
                    or _rule(lesson.lesson) in active
                    or quotes_document(lesson.lesson, document)
                ):
                    continue
                active.add(_rule(lesson.lesson))
                hunks = "\n".join(lesson.hunks)
                await self.held.append(
                    LessonRecorded(
                        lesson_id=lesson_id,
                        lesson=lesson.lesson,
                        hunks=len(lesson.hunks),
                        hunks_hash=sha256(hunks) if hunks else None,
                        from_key=state.keys[0] if state.keys else None,
                    ),
                    turn=state.turn,
                )
        elif isinstance(outcome, QuestionOutcome):
            key = f"{self.held.id}@q:{state.turn}"
            if key not in self.held.projection.questions:
                await self.held.append(
                    QuestionAsked(key=key, question=outcome.question), turn=state.turn, key=key
                )
        elif isinstance(outcome, AmendmentOutcome):
            await self._propose(state, outcome)
        elif isinstance(outcome, SummaryOutcome):
            await self.held.append(
                SummaryWritten(
                    asset=outcome.asset,
                    wants=outcome.wants,
                    decisions=list(outcome.decisions),
                    open_questions=list(outcome.open_questions),
                    next_deadline=outcome.next_deadline,
                    sources=list(outcome.sources),
                    previous_seq=self.held.projection.heinzel["last_summary_seq"],
                    covers_through_seq=state.started.seq,
                ),
                turn=state.turn,
            )
        elif isinstance(outcome, WaitOutcome):
            until = outcome.until or now_utc() + timedelta(days=self.settings.heinzel.max_wait_days)
            await self.held.append(StepDone(step="act", report=outcome.report), turn=state.turn)
            state.done.append("act")
            on = outcome.on.model_dump(mode="json") if outcome.on else None
            await self.held.append(TurnWaiting(step="act", until=until, on=on), turn=state.turn)
            return True
        await self.held.append(StepDone(step="act"), turn=state.turn)
        state.done.append("act")
        return False

    async def _place_draft(self, state: TurnState, outcome: DraftOutcome) -> None:
        assert self.body is not None
        contract = self._contract(state)
        row = self.held.projection.heinzel
        for publish in contract.hz.publishes:
            asset = publish.asset
            key = draft_key(self.held.id, state.version, state.keys[0], asset)
            if key in state.placed:
                continue
            path, anchor = self._resolve_asset(asset)

            def place(path: Path = path, anchor: str | None = anchor, key: str = key) -> str:
                placed = self.documents.place_draft(
                    path,
                    anchor,
                    key=key,
                    heinzel_name=str(row["name"]),
                    heinzel_id=self.held.id,
                    contract_version=state.version,
                    text=outcome.text,
                )
                return placed.section.text

            if key not in state.effects_started:
                self.body.write("draft", key=key, asset=asset, text=outcome.text)
                self.body.sync()
                await self.held.append(
                    EffectStarted(key=key, effect=PLACE_DRAFT), turn=state.turn, key=key
                )
                found_on_resume = False
                section_text = await self._perform(state, key, place)
                crashpoints.reached("effect:before-done")
            elif key not in state.effects_done:
                found = self.documents.find(path, key)
                found_on_resume = found is not None
                section_text = (
                    found.text if found is not None else await self._perform(state, key, place)
                )
            else:
                found = self.documents.find(path, key)
                section_text, found_on_resume = (found.text if found else outcome.text), False
            if key not in state.effects_done:
                await self.held.append(
                    EffectDone(key=key, hash=sha256(section_text), found_on_resume=found_on_resume),
                    turn=state.turn,
                    key=key,
                )
                state.effects_done.add(key)
            await self._record_draft(state, key, asset, outcome.text)

    async def _perform(self, state: TurnState, key: str, effect: Callable[[], str]) -> str:
        """Perform an effect whose ``effect.started`` is durable; a failure is ``effect.failed``."""
        try:
            return effect()
        except HzError as exc:
            await self.held.append(
                EffectFailed(key=key, error=exc.one_line()[:600]), turn=state.turn, key=key
            )
            state.effects_done.add(key)
            raise

    async def _record_draft(self, state: TurnState, key: str, asset: str, text: str) -> None:
        """``draft.placed`` for a draft that is in its document: the user's pending draft."""
        for old_key, old in list(self.held.projection.drafts.items()):
            if old_key != key and old.get("status") == "pending" and old.get("asset") == asset:
                await self.held.append(DraftSuperseded(key=old_key, by=key), turn=state.turn)
        await self.held.append(
            DraftPlaced(
                key=key,
                asset=asset,
                output=next(iter(self._contract(state).hz.outputs), "section"),
                hash=sha256(text),
                size=len(text.encode()),
                contract_version=state.version,
            ),
            turn=state.turn,
            key=key,
        )
        state.placed.add(key)

    async def _settle_effects(self, state: TurnState) -> None:
        """Close what a turn that ends unfinished left open, so no effect stays untracked.

        A draft that is in its document (done, or found there by key) becomes
        the pending draft; an effect not found was cut off and is never
        performed now: ``effect.interrupted``.
        """
        done = {
            str(e.data.get("key"))
            for e in self.held.scan.events
            if e.turn == state.turn and e.kind == "effect.done"
        }
        unsettled = [
            key
            for key in state.effects_started
            if key not in state.placed and (key in done or key not in state.effects_done)
        ]
        if not unsettled:
            return
        drafts = {
            str(r.get("key")): r
            for r in read_body(self.held.dir, state.turn) or []
            if r.get("type") == "draft"
        }
        for key in unsettled:
            effect = str(state.effects_started[key].data.get("effect"))
            record = drafts.get(key, {})
            asset = str(record.get("asset") or key.split("@", 3)[-1])
            found = self._find_draft(asset, key) if effect == PLACE_DRAFT else None
            if key not in done:
                state.effects_done.add(key)
                if found is None:
                    await self.held.append(
                        EffectInterrupted(key=key, effect=effect), turn=state.turn, key=key
                    )
                    continue
                await self.held.append(
                    EffectDone(key=key, hash=sha256(found.text), found_on_resume=True),
                    turn=state.turn,
                    key=key,
                )
            text = record.get("text") or (found.text if found is not None else None)
            if effect == PLACE_DRAFT and text:
                await self._record_draft(state, key, asset, str(text))

    def _find_draft(self, asset: str, key: str) -> FoundSection | None:
        """The section with ``key`` in its document; None when absent or unreadable."""
        try:
            return self.documents.find(self._resolve_asset(asset)[0], key)
        except HzError:
            return None

    def _resolve_asset(self, asset: str) -> tuple[Path, str | None]:
        ref = asset.removeprefix("doc:")
        path, _, anchor = ref.partition("#")
        return self.settings.documents.resolve(path), (anchor or None)

    async def _propose(self, state: TurnState, outcome: AmendmentOutcome) -> None:
        if any(
            e.kind == "amendment.proposed" and e.turn == state.turn for e in self.held.scan.events
        ):
            return
        try:
            await self.kernel.amend(  # type: ignore[attr-defined]
                ref=self.held.id,
                text=outcome.text,
                by="heinzel",
                reason=outcome.reason,
                source=f"turn {state.turn}",
            )
        except ContractError as exc:
            state.report = f"{outcome.report} (refused: {exc.code})"

    async def _finish(
        self,
        state: TurnState,
        disposition: str,
        *,
        reason: str | None = None,
        report: str | None = None,
        step: str | None = None,
    ) -> str:
        if disposition in ("abandoned", "failed"):
            await self._settle_effects(state)
        body_hash = body_size = None
        if self.body is not None:
            self.body.sync()
            body_hash, body_size = self.body.hash, self.body.size
        await self.held.append(
            TurnFinished(
                disposition=disposition,  # type: ignore[arg-type]
                reason=reason,
                causes=state.causes,  # type: ignore[arg-type]
                report=report or state.report or reason,
                tokens=state.tokens,
                tokens_cached=state.tokens_cached,
                usd=round(state.usd, 6),
                duration_ms=int((state.ran_s + time.monotonic() - self.started_clock) * 1000),
                body_hash=body_hash,
                body_size=body_size,
                step=step,  # type: ignore[arg-type]
                priced=None if state.priced else False,
            ),
            turn=state.turn,
        )
        return disposition


def _disposition(outcome: Outcome | None) -> str:
    return {
        DraftOutcome: "drafted",
        LessonsOutcome: "learned",
        QuestionOutcome: "asked",
        AmendmentOutcome: "proposed",
        SummaryOutcome: "summarised",
        NothingOutcome: "nothing",
    }.get(type(outcome), "nothing")


def _staged_fingerprints(keys: list[str], inputs: Mapping[str, object]) -> dict[str, str]:
    """Each input a source wake names, with the fingerprint that woke it.

    The tick staged exactly that arrival in the cache before it woke the
    turn; gathering it again would fetch twice and could read content the
    wake's key does not name.
    """
    staged: dict[str, str] = {}
    for key in keys:
        occasion = key.split("@", 1)[-1]
        name, _, fingerprint = occasion.rpartition(":")
        if name in inputs and fingerprint:
            staged[name] = fingerprint
    return staged


def _rule(lesson: str) -> str:
    """A lesson's wording compared as a rule: the same words, whatever the case and spacing.

    Two approvals with the same kind of edit teach one lesson, not two.
    """
    return " ".join(lesson.casefold().split()).rstrip(".")
