"""The think step's model requests, each one a journalled attempt.

Rules this module keeps, whatever the provider:

* ``on_attempt`` is awaited before the provider is asked, so the engine can make
  the attempt durable first.
* A retryable failure (429, 5xx, transport) before any output is retried with
  jittered exponential backoff, up to ``max_attempts`` per request; each retry is
  reported through ``on_retry`` before its wait.
* The provider saying the context is longer than the model's window is a
  ``ContextOverflow`` (``HZE065``), told apart from every other refusal so the
  caller can shrink the context and ask again; it is never retried here.
* Once text has streamed (``on_chunk`` was called), a failure ends the step
  with ``StreamTruncated`` carrying that text. It is never retried: a retry would
  show the user the same answer twice.
* Before each model request, and again after a retry's wait, ``steering()`` is
  asked for messages the user sent meanwhile; they join the next ask of the
  provider as steering-marked user messages.

Retries before the first streamed event go through pydantic-ai's own attempt
loop (a capability raising ``RetryModelRequest``), which keeps the history
intact. A failure after the stream opened but before any text restarts the run
from the step's messages, the only way to ask again once a stream is consumed.
"""

from __future__ import annotations

import contextlib
import functools
import json
import random
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import (
    Agent,
    AgentRunEvents,
    AgentRunResult,
    AgentRunResultEvent,
    ModelMessagesTypeAdapter,
)
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestTimeout,
    ModelRetry,
    ModelServerError,
    ModelUnavailableError,
    RetryModelRequest,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
    UserError,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    ToolCallPart,
    ToolCallPartDelta,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestContext
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.usage import UsageLimits
from pydantic_core import from_json

from hz_kernel.adapters.models import TokenUsage, render_steering, scaled_sleep
from hz_kernel.engine.outcome import (
    Outcome,
    OutcomeAdapter,
    OutcomeKind,
    SourceWait,
    WaitOutcome,
    output_tools,
)
from hz_kernel.errors import HzError

OUTPUT_RETRIES = 2
_MESSAGE_MAX = 300


class ModelUnavailable(HzError):
    """The provider kept failing with retryable errors until the attempts ran out."""

    def __init__(self, message: str, *, attempts: int, error: str) -> None:
        super().__init__("HZE020", message, "think")
        self.attempts = attempts
        self.error = error


class StreamTruncated(HzError):
    """The provider failed after text had streamed; the text so far is kept, never retried."""

    def __init__(
        self,
        message: str,
        *,
        text: str,
        error: str,
        usage: TokenUsage,
        messages: list[dict[str, Any]],
    ) -> None:
        super().__init__("HZE021", message, "think")
        self.text = text
        self.error = error
        self.usage = usage
        self.messages = messages


class ModelRefused(HzError):
    """The provider refused the request itself (a 4xx other than 429); asking again won't help."""

    def __init__(
        self, message: str, *, error: str, status_code: int | None, code: str = "HZE022"
    ) -> None:
        super().__init__(code, message, "think")
        self.error = error
        self.status_code = status_code


class ContextOverflow(ModelRefused):
    """The provider says the request is longer than the model's context window (``HZE065``).

    A refusal, so a caller that does nothing about it fails the step like any
    other; a caller that can shrink the context catches this class and asks again.
    """

    def __init__(self, message: str, *, error: str, status_code: int | None) -> None:
        super().__init__(message, error=error, status_code=status_code, code="HZE065")


class QuotaExhausted(ModelRefused):
    """The provider says the account's quota or credits are used up (``HZE067``).

    It comes as a 429 like a rate limit, but waiting won't help, so it is not retried.
    """

    def __init__(self, message: str, *, error: str, status_code: int | None) -> None:
        super().__init__(message, error=error, status_code=status_code, code="HZE067")


class ModelOutputInvalid(HzError):
    """The model never produced a valid outcome, even after being told what was wrong."""

    def __init__(self, message: str) -> None:
        super().__init__("HZE023", message, "think")


class TokenCapReached(HzError):
    """The step used the tokens its turn may use (``agent.max_tokens``); it is not retried."""

    def __init__(self, message: str, *, usage: TokenUsage) -> None:
        super().__init__("HZE060", message, "think")
        self.usage = usage


class TokenBudget(BaseModel):
    """What one think step may use: ``total`` tokens in all and, when set, ``output`` tokens
    per answer (the provider's own default otherwise)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    total: int = Field(ge=1)
    output: int | None = Field(default=None, ge=1)

    def left(self, usage: TokenUsage) -> TokenBudget | None:
        """What is left after ``usage``; None when nothing is."""
        left = self.total - usage.tokens
        return TokenBudget(total=left, output=self.output) if left >= 1 else None


class AttemptInfo(BaseModel):
    """One ask of the provider: ``attempt`` counts asks in the step, ``retry`` within a request."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    attempt: int = Field(ge=1)
    request: int = Field(ge=1)
    retry: int = Field(ge=0)
    model: str


class RetryInfo(BaseModel):
    """A failed attempt that will be tried again after ``delay_ms``."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    attempt: int = Field(ge=1)
    request: int = Field(ge=1)
    error: str
    status_code: int | None = None
    message: str = Field(max_length=_MESSAGE_MAX)
    delay_ms: int = Field(ge=0)


class StepResult(BaseModel):
    """What think produced: the outcome, the text as streamed, usage and the model's messages."""

    model_config = ConfigDict(defer_build=True)

    outcome: Outcome
    text: str
    usage: TokenUsage
    messages: list[dict[str, Any]]
    attempts: int
    model: str


class Backoff(BaseModel):
    """Jittered exponential backoff: ``base * factor**retry``, capped, times 1 ± ``jitter``.

    A provider's Retry-After is honoured when it asks for longer, up to the cap.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    base_s: float = Field(default=0.5, gt=0)
    factor: float = Field(default=2.0, ge=1)
    cap_s: float = Field(default=20.0, gt=0)
    jitter: float = Field(default=0.25, ge=0, lt=1)

    def delay(self, retry: int, *, retry_after: float | None, rng: random.Random) -> float:
        planned = min(self.cap_s, self.base_s * self.factor**retry)
        jittered = planned * (1 + rng.uniform(-self.jitter, self.jitter))
        if retry_after is not None:
            jittered = max(jittered, min(retry_after, self.cap_s))
        return jittered


def user_message(*texts: str) -> ModelRequest:
    """A user message with one part per text, as the context builder hands them to a step."""
    return ModelRequest(parts=[UserPromptPart(text) for text in texts])


def steering_message(*texts: str) -> ModelRequest:
    """User messages marked as steering, as the model sees a message sent during think."""
    return user_message(*(render_steering(text) for text in texts))


def messages_to_json(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """Model messages as plain JSON data, for the turn body."""
    return ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")


def messages_from_json(data: Sequence[dict[str, Any]]) -> list[ModelMessage]:
    """Model messages back from the turn body, to rerun think from the last recorded message."""
    return ModelMessagesTypeAdapter.validate_python(list(data))


Failure = Literal["retry", "refused", "overflow", "quota", "invalid", "cap", "unknown"]
_RETRYABLE = (
    ModelRateLimitError,
    ModelUnavailableError,
    ModelServerError,
    ModelConnectionError,
    ModelRequestTimeout,
    ConnectionError,
    TimeoutError,
)


#: How servers that send no ``context_length_exceeded`` code word a context overflow
#: (Ollama: "the input length exceeds the context length"; llama.cpp: "exceeds the available
#: context size"; Anthropic: "prompt is too long").
_OVERFLOW_WORDS = (
    "context length",
    "context window",
    "context size",
    "maximum context",
    "prompt is too long",
    "context_length_exceeded",
    "exceed_context_size",
)


def _says_overflow(error: ModelAPIError) -> bool:
    if isinstance(error, ModelHTTPError) and error.status_code not in (400, 413, 422):
        return False
    said = " ".join(
        str(part)
        for part in (error.provider_error_code, error.provider_error_type, error.body, error)
        if part is not None
    ).lower()
    return any(words in said for words in _OVERFLOW_WORDS)


def classify(error: BaseException) -> Failure:
    """Sort a provider failure: retry it, give up at once, or report invalid output or a cap."""
    if isinstance(error, UsageLimitExceeded):
        return "cap"
    if isinstance(error, ModelContextWindowExceededError):
        return "overflow"
    if isinstance(error, ModelQuotaExceededError):
        return "quota"
    if isinstance(error, _RETRYABLE):
        return "retry"
    if isinstance(error, ModelHTTPError) and (error.status_code == 429 or error.status_code >= 500):
        return "retry"
    if isinstance(error, ModelAPIError):
        return "overflow" if _says_overflow(error) else "refused"
    if isinstance(error, UnexpectedModelBehavior):
        return "invalid"
    return "unknown"


def _describe(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= _MESSAGE_MAX else text[: _MESSAGE_MAX - 1] + "…"


def _status(error: BaseException) -> int | None:
    return error.status_code if isinstance(error, ModelHTTPError) else None


_VISIBLE_FIELDS: dict[str, str] = {
    "draft": "text",
    "amendment": "text",
    "question": "question",
    "summary": "wants",
    "wait": "report",
    "nothing": "report",
}


def visible_text(kind: str, arguments: str) -> str:
    """The prose a person would watch stream from an outcome's (possibly partial) arguments."""
    try:
        data = from_json(arguments or "{}", allow_partial="trailing-strings")
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    if kind == "lessons":
        lessons = data.get("lessons")
        if not isinstance(lessons, list):
            return ""
        lines = [
            f"- {item['lesson']}"
            for item in lessons
            if isinstance(item, dict) and isinstance(item.get("lesson"), str) and item["lesson"]
        ]
        return "\n".join(lines)
    value = data.get(_VISIBLE_FIELDS.get(kind, "text"))
    return value if isinstance(value, str) else ""


@dataclass
class _StreamedText:
    """Follows output-tool argument deltas and yields the new visible text of each."""

    tools: dict[int, str] = field(default_factory=dict)
    arguments: dict[int, str] = field(default_factory=dict)
    shown: dict[int, str] = field(default_factory=dict)

    def feed(self, event: object) -> str:
        if isinstance(event, PartStartEvent):
            index = event.index
            self.shown[index] = ""
            if not isinstance(event.part, ToolCallPart):
                self.tools.pop(index, None)
                return ""
            self.tools[index] = event.part.tool_name
            args = event.part.args
            # A call whose arguments will stream opens empty: Anthropic's tool_use block starts
            # with ``input: {}``, which must not become a "{}" that the pieces are appended to.
            if not args:
                self.arguments[index] = ""
            else:
                self.arguments[index] = args if isinstance(args, str) else json.dumps(args)
        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, ToolCallPartDelta):
            index = event.index
            if index not in self.tools:
                return ""
            if event.delta.tool_name_delta:
                self.tools[index] += event.delta.tool_name_delta
            if isinstance(event.delta.args_delta, str):
                self.arguments[index] += event.delta.args_delta
            elif isinstance(event.delta.args_delta, dict):
                self.arguments[index] = json.dumps(event.delta.args_delta)
        else:
            return ""
        visible = visible_text(self.tools[index], self.arguments[index])
        before = self.shown.get(index, "")
        if len(visible) <= len(before) or not visible.startswith(before):
            return ""
        self.shown[index] = visible
        return visible[len(before) :]


@dataclass
class _Step:
    """The state one think step carries across its requests, attempts and restarts."""

    model_name: str
    on_attempt: Callable[[AttemptInfo], Awaitable[None]]
    on_chunk: Callable[[str], Awaitable[None]]
    on_retry: Callable[[RetryInfo], Awaitable[None]] | None
    steering: Callable[[], Awaitable[list[str]]] | None
    max_attempts: int
    sleep: Callable[[float], Awaitable[None]]
    backoff: Backoff
    rng: random.Random
    request: int = 0
    retry: int = 0
    attempts: int = 0
    restarting: bool = False
    chunks: list[str] = field(default_factory=list)
    delivered: list[str] = field(default_factory=list)

    async def begin_request(self, ctx: RunContext[None]) -> None:
        if self.restarting:
            self.restarting = False
        else:
            self.request += 1
            self.retry = 0
        for text in await self.poll_steering():
            ctx.enqueue(render_steering(text))

    async def poll_steering(self) -> list[str]:
        """Messages the user admitted since the last poll; they are delivered from now on."""
        if self.steering is None:
            return []
        fresh = list(await self.steering())
        self.delivered.extend(fresh)
        return fresh

    async def begin_attempt(self) -> None:
        self.attempts += 1
        await self.on_attempt(
            AttemptInfo(
                attempt=self.attempts, request=self.request, retry=self.retry, model=self.model_name
            )
        )

    async def emit(self, text: str) -> None:
        self.chunks.append(text)
        await self.on_chunk(text)

    async def back_off(self, error: BaseException) -> None:
        """Wait before the next try of a retryable failure; raise when the tries are used up."""
        if self.retry + 1 >= self.max_attempts:
            raise ModelUnavailable(
                f"the model failed {self.retry + 1} times: {_describe(error)}",
                attempts=self.attempts,
                error=type(error).__name__,
            ) from error
        retry_after = error.retry_after if isinstance(error, ModelAPIError) else None
        delay = self.backoff.delay(self.retry, retry_after=retry_after, rng=self.rng)
        if self.on_retry is not None:
            await self.on_retry(
                RetryInfo(
                    attempt=self.attempts,
                    request=self.request,
                    error=type(error).__name__,
                    status_code=_status(error),
                    message=_describe(error),
                    delay_ms=round(delay * 1000),
                )
            )
        await self.sleep(delay)
        self.retry += 1

    def history(
        self, messages: Sequence[ModelMessage], recorded: Sequence[ModelMessage] = ()
    ) -> list[ModelMessage]:
        """What a (re)started run begins from: the step's messages and steering delivered so far,
        or, once this run called tools, the conversation as recorded before its last call
        (which holds the steering delivered until then), so no call is made a second time."""
        if len(recorded) > len(messages):
            return list(recorded)
        if not self.delivered:
            return list(messages)
        return [*messages, steering_message(*self.delivered)]

    async def recover(
        self, error: Exception, run_messages: list[ModelMessage], spent: TokenUsage
    ) -> None:
        """Turn a failed run into a typed error, or back off so the step can restart it."""
        kind = classify(error)
        if kind == "unknown":
            raise error
        if kind == "cap":
            raise TokenCapReached(
                f"the turn reached its token cap: {_describe(error)}", usage=spent
            ) from error
        if kind == "invalid":
            raise ModelOutputInvalid(f"no valid outcome: {_describe(error)}") from error
        if self.chunks:
            raise StreamTruncated(
                f"the stream broke after output began: {_describe(error)}",
                text="".join(self.chunks),
                error=type(error).__name__,
                usage=spent,
                messages=messages_to_json(run_messages),
            ) from error
        if kind == "overflow":
            raise ContextOverflow(
                f"the context is longer than the model's window: {_describe(error)}",
                error=type(error).__name__,
                status_code=_status(error),
            ) from error
        if kind == "quota":
            raise QuotaExhausted(
                f"the provider's quota or credits are used up: {_describe(error)}",
                error=type(error).__name__,
                status_code=_status(error),
            ) from error
        if kind == "refused":
            raise ModelRefused(
                f"the model refused the request: {_describe(error)}",
                error=type(error).__name__,
                status_code=_status(error),
            ) from error
        await self.back_off(error)
        self.restarting = True


class _RestartWithSteering(Exception):
    """Steering arrived while a retry waited: restart the run so the retry carries it."""


@dataclass
class _AttemptHooks(AbstractCapability[None]):
    """Wires the step into pydantic-ai's request lifecycle."""

    step: _Step

    async def before_model_request(
        self, ctx: RunContext[None], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        await self.step.begin_request(ctx)
        return request_context

    async def prepare_model_request(
        self, ctx: RunContext[None], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        await self.step.begin_attempt()
        return request_context

    async def on_model_request_error(
        self, ctx: RunContext[None], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        kind = classify(error)
        if self.step.chunks or kind != "retry":
            raise error
        await self.step.back_off(error)
        if await self.step.poll_steering():
            raise _RestartWithSteering()
        raise RetryModelRequest()


async def run_model_step(
    *,
    model: Model,
    instructions: str,
    messages: Sequence[ModelMessage],
    on_attempt: Callable[[AttemptInfo], Awaitable[None]],
    on_chunk: Callable[[str], Awaitable[None]],
    on_retry: Callable[[RetryInfo], Awaitable[None]] | None = None,
    admit: Callable[[], AbstractAsyncContextManager[object]] | None = None,
    steering: Callable[[], Awaitable[list[str]]] | None = None,
    outcomes: Sequence[OutcomeKind] | None = None,
    budget: TokenBudget | None = None,
    wait_check: WaitCheck | None = None,
    toolset: AbstractToolset[Any] | None = None,
    recorded: Callable[[], list[ModelMessage]] | None = None,
    max_attempts: int = 3,
    sleep: Callable[[float], Awaitable[None]] = scaled_sleep,
    backoff: Backoff | None = None,
    rng: random.Random | None = None,
) -> StepResult:
    """Run think: ask ``model`` for one typed outcome, streaming, retrying only before output.

    ``messages`` is the context the engine built (ending in a user message), or
    the messages recorded before a crash. ``outcomes`` limits the output tools
    offered (all kinds by default). ``budget`` caps the tokens: the step stops
    once ``budget.total`` are used, and each answer asks the provider for at
    most ``budget.output`` tokens when that is set. Each run of requests (the first
    and every restart) holds what ``admit()`` gives (the kernel's attempt slot)
    and lets it go before a restart's backoff. Raises ``ModelUnavailable``,
    ``StreamTruncated``, ``ModelRefused`` (``ContextOverflow`` and ``QuotaExhausted`` among
    them), ``ModelOutputInvalid`` or ``TokenCapReached``. ``wait_check`` refuses a wait on
    a key or fingerprint the turn does not know; the model is told and asked again.
    ``toolset`` holds the function tools the model may call, and ``recorded()`` the
    conversation its calls recorded so far, where a restarted run begins. ``messages``
    may end with a model answer whose tool calls are still to be settled (a step resumed
    after a crash).
    """
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    if not messages or not (
        isinstance(messages[-1], ModelRequest)
        or (isinstance(messages[-1], ModelResponse) and messages[-1].tool_calls)
    ):
        raise ValueError("messages must end with a request for the model or its tool calls")
    step = _Step(
        model_name=model.model_name,
        on_attempt=on_attempt,
        on_chunk=on_chunk,
        on_retry=on_retry,
        steering=steering,
        max_attempts=max_attempts,
        sleep=sleep,
        backoff=backoff or Backoff(),
        rng=rng or random.Random(),
    )
    agent = _agent(tuple(outcomes) if outcomes is not None else None)
    hooks = [_AttemptHooks(step)]
    settings = (
        ModelSettings(max_tokens=budget.output)
        if budget is not None and budget.output is not None
        else None
    )
    async with agent:
        spent = TokenUsage()
        while True:
            stream: AgentRunEvents[Any] | None = None
            try:
                async with (
                    admit() if admit is not None else contextlib.nullcontext(),
                    agent.run_stream_events(
                        message_history=step.history(messages, recorded() if recorded else ()),
                        instructions=instructions,
                        model=model,
                        capabilities=hooks,
                        usage_limits=_limits(budget, spent),
                        model_settings=settings,
                        deps=wait_check,
                        toolsets=[toolset] if toolset is not None else None,
                    ) as stream,
                ):
                    result = await _consume(stream, step)
            except HzError:
                raise
            except _RestartWithSteering:
                spent += _so_far(stream)[1]
                step.restarting = True
                continue
            except Exception as error:
                run_messages, run_usage = _so_far(stream)
                spent += run_usage
                await step.recover(error, run_messages, spent)
                continue
            return StepResult(
                outcome=OutcomeAdapter.validate_python(result.output),
                text="".join(step.chunks),
                usage=spent + TokenUsage.from_run(result.usage),
                messages=messages_to_json(result.all_messages()),
                attempts=step.attempts,
                model=step.model_name,
            )


def _limits(budget: TokenBudget | None, spent: TokenUsage) -> UsageLimits | None:
    """A run's token limit: what the step's budget has left after earlier (failed) runs."""
    if budget is None:
        return None
    left = budget.left(spent)
    if left is None:
        raise TokenCapReached(f"the step used its {budget.total} tokens", usage=spent)
    return UsageLimits(total_tokens_limit=left.total)


class WaitCheck(Protocol):
    """What a turn knows a wait may name: its drafts, questions and input fingerprints
    (``engine.context.Situation``)."""

    def refusal(self, kind: str, name: str) -> str | None:
        """Why a wait ``on`` a ``kind`` naming ``name`` cannot be met, or None if it can."""


@functools.cache
def _agent(outcomes: tuple[OutcomeKind, ...] | None) -> Agent[WaitCheck | None, Any]:
    """One agent per set of outcome kinds: building the output tools' schemas costs tens of
    milliseconds, so it is done once; the model, the attempt hooks and the wait check are
    given per run."""
    agent: Agent[WaitCheck | None, Any] = Agent(
        output_type=output_tools(outcomes),
        deps_type=WaitCheck,  # type: ignore[arg-type]  # None (no check) is allowed too
        retries={"output": OUTPUT_RETRIES},
    )
    agent.output_validator(_wait_names_what_exists)
    return agent


def _wait_names_what_exists(ctx: RunContext[WaitCheck | None], output: Any) -> Any:
    """A wait on a key or fingerprint the turn does not know would never end: the model is
    told which ones exist and asked again (within the output retries)."""
    if ctx.deps is None or not isinstance(output, WaitOutcome) or output.on is None:
        return output
    on = output.on
    named = f"{on.input}:{on.fingerprint_not}" if isinstance(on, SourceWait) else on.key
    refusal = ctx.deps.refusal(on.kind, named)
    if refusal is not None:
        raise ModelRetry(refusal)
    return output


async def _consume(stream: AgentRunEvents[Any], step: _Step) -> AgentRunResult[Any]:
    """Stream the run's events, passing new visible text on; return the run's result."""
    visible = _StreamedText()
    async for event in stream:
        if isinstance(event, AgentRunResultEvent):
            return event.result
        if delta := visible.feed(event):
            await step.emit(delta)
    raise AssertionError("the agent run ended without a result")


def _so_far(stream: AgentRunEvents[Any] | None) -> tuple[list[ModelMessage], TokenUsage]:
    """What a failed run got before it failed; empty when it never started."""
    if stream is None:
        return [], TokenUsage()
    try:
        return stream.all_messages(), TokenUsage.from_run(stream.usage)
    except UserError:
        return [], TokenUsage()
