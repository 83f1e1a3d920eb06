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

import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import TypeAdapter

from hz_kernel import crashpoints
from hz_kernel.adapters.documents import MarkdownDocuments
from hz_kernel.adapters.local_model import FramedInput
from hz_kernel.adapters.models import ModelEnv, price_usd, resolve_model
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
    run_model_step,
    user_message,
)
from hz_kernel.engine.caps import check_caps
from hz_kernel.engine.context import build_context
from hz_kernel.engine.outcome import (
    AmendmentOutcome,
    DraftOutcome,
    LessonsOutcome,
    NothingOutcome,
    Outcome,
    QuestionOutcome,
    SummaryOutcome,
    WaitOutcome,
)
from hz_kernel.engine.wakes import Wake, draft_key
from hz_kernel.observe import Observation
from hz_kernel.store.bodies import BodyWriter, read_body
from hz_kernel.store.envelope import Event
from hz_kernel.store.inbox import Inbox
from hz_kernel.store.session import HeldSession
from hz_kernel.tick.cache import SourceCache
from hz_kernel.vocabulary import (
    AttemptFailed,
    AttemptRetry,
    AttemptStarted,
    DraftPlaced,
    DraftSuperseded,
    EffectDone,
    EffectStarted,
    LessonRecorded,
    QuestionAsked,
    StepDone,
    SummaryWritten,
    TurnFinished,
    TurnResumed,
    TurnStarted,
    TurnWaiting,
)

if TYPE_CHECKING:
    from hz_kernel.core import KernelCore

_OUTCOME = TypeAdapter(Outcome)
PLACE_DRAFT = "documents.place_draft"


def sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


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
    for event in events:
        if event.turn != turn:
            continue
        kind, data = event.kind, event.data
        if kind == "turn.started":
            state = TurnState(turn=turn, started=event)
        elif state is None:
            continue
        elif kind == "step.done":
            state.done.append(str(data["step"]))
            if data["step"] == "think":
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
    return state


class TurnRunner:
    """Runs one turn of one heinzel while its session (and lock) is held."""

    def __init__(self, kernel: KernelCore, held: HeldSession) -> None:
        self.kernel = kernel
        self.held = held
        self.settings = kernel.home.settings
        self.documents = MarkdownDocuments()
        self.cache = SourceCache(kernel.home.sources_dir)
        self.sources = default_registry(base_dir=Path(self.settings.documents.root).expanduser())
        self.body: BodyWriter | None = None
        self.started_clock = time.monotonic()
        self.steer: Callable[[], Awaitable[list[str]]] | None = None
        self._pinned: CompiledContract | None = None
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
    ) -> TurnState:
        row = self.held.projection.heinzel
        now = now_utc()
        deadline = now + timedelta(seconds=self.settings.heinzel.turn_timeout_s)
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
        """Continue an open turn, or end it abandoned when it resumed too often or overran."""
        deadline = state.started.data.get("deadline")
        step = state.done[-1] if state.done else None
        if state.resumes >= self.settings.heinzel.max_resumes:
            await self._finish(
                state, "abandoned", reason=f"resumed {state.resumes} times", step=step
            )
            return None
        if deadline and now_utc() > datetime.fromisoformat(str(deadline)):
            await self._finish(state, "abandoned", reason="timeout", step=step)
            return None
        await self.held.append(
            TurnResumed(woken_by=woken_by, resumes=state.resumes + 1),  # type: ignore[arg-type]
            turn=state.turn,
        )
        state.resumes += 1
        return state

    async def run(self, state: TurnState) -> str:
        """Walk the remaining steps; returns the disposition (or ``waited``)."""
        self.body = BodyWriter(self.held.dir, state.turn)
        try:
            self._reload(state)
            if "gather" not in state.done:
                await self._gather(state)
            if "think" not in state.done:
                disposition = await self._think(state)
                if disposition is not None:
                    return disposition
            if "outcome" not in state.done:
                await self._outcome(state)
            if "act" not in state.done:
                waited = await self._act(state)
                if waited:
                    return "waited"
            return await self._finish(state, _disposition(state.outcome), report=state.report)
        finally:
            self.body.close()
            self.body = None

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
        parent = state.started.data.get("parent_turn")
        if parent and state.started.data.get("from_step"):
            inherited = [r for r in read_body(self.held.dir, parent) or [] if r["type"] == "input"]
        else:
            inherited = []
        gathered: list[dict[str, Any]] = []
        for record in inherited:
            gathered.append({k: v for k, v in record.items() if k not in ("ts", "type")})
        if not inherited:
            for name, spec in contract.hz.inputs.items():
                request = SourceRequest(source=spec.source, method=spec.method, args=spec.args)
                result = self.cache.get(request)
                fresh_for = duration_seconds(spec.recheck) if spec.recheck else 0
                now = now_utc()
                if result is None or (now - result.as_of).total_seconds() > fresh_for:
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
        output = next(iter(contract.hz.outputs), "section")
        context = build_context(
            contract=contract,
            version=state.version,
            events=self.held.scan.events,
            before_seq=state.started.seq,
            lessons_seq=int(state.started.data.get("lessons_seq") or 0),
            inputs=[
                FramedInput(
                    name=i["name"], source=i["source"], content=i["content"], moved=i["moved"]
                )
                for i in state.inputs
            ],
            output=output,
            requests=requests,
        )
        spec = contract.hz.agent.model or self.settings.model.default
        size = len(context.instructions.encode()) + sum(len(m.encode()) for m in context.messages)
        cap = check_caps(
            model=spec,
            context_bytes=size,
            contract_max_usd=contract.hz.agent.max_usd,
            user_max_usd=self.settings.heinzel.max_usd,
            spent_today_usd=await self._spent_today(),
            max_usd_per_day=self.settings.heinzel.max_usd_per_day,
        )
        if not cap.ok:
            return await self._finish(state, "skipped", reason=f"cap: {cap.reason}")
        model = resolve_model(spec, settings=self._env)
        self.body.write(
            "context", instructions=context.instructions, messages=list(context.messages)
        )
        self.body.sync()

        async def on_attempt(info: AttemptInfo) -> None:
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
            self.body.write("chunk", text=chunk)
            crashpoints.reached("model:chunk")
            self.kernel.observe(
                Observation(
                    heinzel=self.held.id, turn=state.turn, body={"type": "chunk", "text": chunk}
                )
            )

        try:
            result = await run_model_step(
                model=model,
                instructions=context.instructions,
                messages=[user_message(*context.messages)],
                on_attempt=on_attempt,
                on_chunk=on_chunk,
                on_retry=on_retry,
                steering=self.steer,
            )
        except StreamTruncated as exc:
            self.body.sync()
            await self._attempt_failed(state, "stream_truncated", exc.message, len(exc.text))
            return await self._finish(state, "failed", reason="stream_truncated", step="think")
        except (ModelUnavailable, ModelRefused, ModelOutputInvalid) as exc:
            await self._attempt_failed(state, exc.code, exc.message, 0)
            return await self._finish(state, "failed", reason=exc.code, step="think")
        usage = result.usage
        cost = price_usd(spec, usage, settings=self._env)
        self.body.write("messages", messages=result.messages)
        outcome_json = result.outcome.model_dump(mode="json")
        self.body.write("outcome", outcome=outcome_json)
        self.body.sync()
        state.outcome = result.outcome
        state.tokens += usage.input_tokens + usage.output_tokens
        state.tokens_cached += usage.cached_tokens
        state.usd += cost.usd
        state.attempts = result.attempts
        text = orjson.dumps(outcome_json)
        await self.held.append(
            StepDone(
                step="think",
                output_hash=sha256(text),
                output_size=len(text),
                attempts=result.attempts,
                tokens=usage.input_tokens + usage.output_tokens,
                tokens_cached=usage.cached_tokens,
                usd=cost.usd,
            ),
            turn=state.turn,
        )
        state.done.append("think")
        return None

    async def _interrupted_stream(
        self, state: TurnState, records: list[dict[str, Any]]
    ) -> str | None:
        """After a crash in think: output that had streamed is never asked for again."""
        attempted = any(
            e.turn == state.turn and e.kind == "attempt.started" for e in self.held.scan.events
        )
        streamed = sum(len(str(r.get("text", ""))) for r in records if r.get("type") == "chunk")
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
            for n, lesson in enumerate(outcome.lessons):
                lesson_id = f"L-{state.turn[-8:]}-{n}"
                if lesson_id in known:
                    continue
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
            if key not in state.effects_started:
                self.body.write("draft", key=key, asset=asset, text=outcome.text)
                self.body.sync()
                await self.held.append(
                    EffectStarted(key=key, effect=PLACE_DRAFT), turn=state.turn, key=key
                )
                found_on_resume = False
                placed = self.documents.place_draft(
                    path,
                    anchor,
                    key=key,
                    heinzel_name=str(row["name"]),
                    heinzel_id=self.held.id,
                    contract_version=state.version,
                    text=outcome.text,
                )
                crashpoints.reached("effect:before-done")
                section_text = placed.section.text
            elif key not in state.effects_done:
                found = self.documents.find(path, key)
                found_on_resume = found is not None
                if found is None:
                    placed = self.documents.place_draft(
                        path,
                        anchor,
                        key=key,
                        heinzel_name=str(row["name"]),
                        heinzel_id=self.held.id,
                        contract_version=state.version,
                        text=outcome.text,
                    )
                    section_text = placed.section.text
                else:
                    section_text = found.text
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
            for old_key, old in list(self.held.projection.drafts.items()):
                if old_key != key and old.get("status") == "pending" and old.get("asset") == asset:
                    await self.held.append(DraftSuperseded(key=old_key, by=key), turn=state.turn)
            await self.held.append(
                DraftPlaced(
                    key=key,
                    asset=asset,
                    output=next(iter(contract.hz.outputs), "section"),
                    hash=sha256(outcome.text),
                    size=len(outcome.text.encode()),
                    contract_version=state.version,
                ),
                turn=state.turn,
                key=key,
            )
            state.placed.add(key)

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
                ref=self.held.id, text=outcome.text, by="heinzel", reason=outcome.reason,
                source=f"turn {state.turn}",
            )  # fmt: skip
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
                duration_ms=int((time.monotonic() - self.started_clock) * 1000),
                body_hash=body_hash,
                body_size=body_size,
                step=step,  # type: ignore[arg-type]
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
