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

* Each request holds an attempt slot (``admit``) only while it is asked: not
  during a retry's wait, not while the tools it called run.

The conversation is driven here, one streamed request per model answer through
pydantic-ai's direct model API, not through its agent run graph: the graph cost
a turn more than ten times the request itself, and a step needs only this loop
(ask, answer the tool calls, validate the outcome, tell the model what was
wrong). The messages it records are pydantic-ai's own, in the shapes its agent
records them, so a step resumed from the body reads the same either way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import random
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_ai import ModelMessagesTypeAdapter
from pydantic_ai.direct import model_request_stream
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestTimeout,
    ModelServerError,
    ModelUnavailableError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    RetryFeedbackPart,
    ToolCallPart,
    ToolCallPartDelta,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.messages import RetryInfo as MessageRetryInfo
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RunUsage, UsageLimits
from pydantic_core import from_json

from hz_kernel.adapters.models import TokenUsage, render_steering, scaled_sleep
from hz_kernel.engine.outcome import (
    OUTCOME_MODELS,
    Outcome,
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


class StepTools(Protocol):
    """The function tools a think step offers the model, and how a call of one is run
    (``engine.tools.journal.ToolJournal``)."""

    def definitions(self) -> list[ToolDefinition]:
        """Each tool as the model is told of it."""

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        messages: Sequence[ModelMessage],
        call_id: str,
    ) -> object:
        """Run one call the model made; ``messages`` is the conversation up to its answer."""


class WaitCheck(Protocol):
    """What a turn knows a wait may name: its drafts, questions and input fingerprints
    (``engine.context.Situation``)."""

    def refusal(self, kind: str, name: str) -> str | None:
        """Why a wait ``on`` a ``kind`` naming ``name`` cannot be met, or None if it can."""


@dataclass
class _Step:
    """The state one think step carries across its requests and attempts."""

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
    chunks: list[str] = field(default_factory=list)

    async def poll_steering(self) -> list[str]:
        """Messages the user admitted since the last poll; they are delivered from now on."""
        if self.steering is None:
            return []
        return list(await self.steering())

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

    def failure(
        self, error: Exception, conversation: Sequence[ModelMessage], spent: TokenUsage
    ) -> HzError | None:
        """The typed error a failed request ends the step with; None when it may be tried
        again (a retryable failure before any output)."""
        kind = classify(error)
        if kind == "cap":
            return TokenCapReached(
                f"the turn reached its token cap: {_describe(error)}", usage=spent
            )
        if kind == "invalid":
            return ModelOutputInvalid(f"no valid outcome: {_describe(error)}")
        if self.chunks:
            return StreamTruncated(
                f"the stream broke after output began: {_describe(error)}",
                text="".join(self.chunks),
                error=type(error).__name__,
                usage=spent,
                messages=messages_to_json(conversation),
            )
        if kind == "overflow":
            return ContextOverflow(
                f"the context is longer than the model's window: {_describe(error)}",
                error=type(error).__name__,
                status_code=_status(error),
            )
        if kind == "quota":
            return QuotaExhausted(
                f"the provider's quota or credits are used up: {_describe(error)}",
                error=type(error).__name__,
                status_code=_status(error),
            )
        if kind == "refused":
            return ModelRefused(
                f"the model refused the request: {_describe(error)}",
                error=type(error).__name__,
                status_code=_status(error),
            )
        return None


#: A tool call the model gets back an error for (an unknown name, arguments that are not a
#: JSON object) may be made again this many times per tool before the step fails.
TOOL_RETRIES = 1
_NO_OUTPUT = "Please include your response in a tool call."
_FINAL = "Final result processed."
_NOT_USED = "Output tool not used - a final result was already processed."


@dataclass
class _Answering:
    """Reads each model answer: the outcome it gives, or what the model is told back."""

    outcomes: tuple[ToolDefinition, ...]
    functions: list[ToolDefinition]
    tools: StepTools | None
    wait_check: WaitCheck | None
    output_retries: int = 0
    tool_retries: dict[str, int] = field(default_factory=dict)

    async def read(
        self, response: ModelResponse, conversation: Sequence[ModelMessage]
    ) -> tuple[Outcome | None, list[ModelRequestPart]]:
        """The outcome of ``response`` (None when the model must be asked again) and the parts
        of the request that answers its calls; function tools run in the order called."""
        offered = {tool.name for tool in self.outcomes}
        calls = response.tool_calls
        chosen = [call for call in calls if call.tool_name in offered]
        parts: list[ModelRequestPart] = []
        outcome: Outcome | None = None
        if chosen:
            first, *others = chosen
            outcome, part = self._outcome(first)
            parts.append(part)
            parts.extend(
                ToolReturnPart(other.tool_name, _NOT_USED, tool_call_id=other.tool_call_id)
                for other in others
            )
        elif not calls:
            self._charge_output()
            parts.append(
                RetryFeedbackPart(
                    _NO_OUTPUT,
                    retry=MessageRetryInfo(
                        "no_output", attempt=self.output_retries, max_retries=OUTPUT_RETRIES
                    ),
                )
            )
        for call in calls:
            if call.tool_name not in offered:
                parts.append(await self._function(call, conversation))
        return outcome, parts

    def _charge_output(self) -> None:
        """Count one unusable answer (no tool call, an invalid outcome, a wait on nothing): all
        kinds share the ``OUTPUT_RETRIES`` budget, so the model gets three answers in all."""
        self.output_retries += 1
        if self.output_retries > OUTPUT_RETRIES:
            raise ModelOutputInvalid(
                f"no valid outcome: exceeded maximum retries ({OUTPUT_RETRIES}) for output "
                "validation"
            )

    def _outcome(self, call: ToolCallPart) -> tuple[Outcome | None, ModelRequestPart]:
        try:
            outcome = _validated(call)
            refusal = self._refusal(outcome)
        except ValidationError as exc:
            content: Any = exc.errors(include_url=False, include_context=False)
            cause: Literal["validation_error", "model_retry"] = "validation_error"
        else:
            if refusal is None:
                return outcome, ToolReturnPart(
                    call.tool_name, _FINAL, tool_call_id=call.tool_call_id
                )
            content, cause = refusal, "model_retry"
        self._charge_output()
        return None, ToolReturnPart(
            call.tool_name,
            content,
            tool_call_id=call.tool_call_id,
            outcome="retried",
            retry=MessageRetryInfo(cause, attempt=self.output_retries, max_retries=OUTPUT_RETRIES),
        )

    def _refusal(self, outcome: Outcome) -> str | None:
        """A wait on a key or fingerprint the turn does not know would never end: the model is
        told which ones exist and asked again (within the output retries)."""
        if self.wait_check is None or not isinstance(outcome, WaitOutcome) or outcome.on is None:
            return None
        on = outcome.on
        named = f"{on.input}:{on.fingerprint_not}" if isinstance(on, SourceWait) else on.key
        return self.wait_check.refusal(on.kind, named)

    async def _function(
        self, call: ToolCallPart, conversation: Sequence[ModelMessage]
    ) -> ModelRequestPart:
        if self.tools is None or call.tool_name not in {tool.name for tool in self.functions}:
            offered = {tool.name for tool in (*self.functions, *self.outcomes)}
            names = ", ".join(repr(name) for name in sorted(offered))
            return self._retry_tool(
                call,
                f"Unknown tool name: {call.tool_name!r}. Available tools: {names}",
                "unknown_tool",
            )
        try:
            arguments = _arguments(call)
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_context=False)
            return self._retry_tool(call, errors, "validation_error")
        result = await self.tools.call(
            call.tool_name, arguments, messages=conversation, call_id=call.tool_call_id
        )
        return ToolReturnPart(call.tool_name, result, tool_call_id=call.tool_call_id)

    def _retry_tool(
        self,
        call: ToolCallPart,
        content: Any,
        cause: Literal["unknown_tool", "validation_error"],
    ) -> ModelRequestPart:
        retries = self.tool_retries.get(call.tool_name, 0) + 1
        if retries > TOOL_RETRIES:
            raise ModelOutputInvalid(
                f"no valid outcome: tool {call.tool_name!r} exceeded max retries count of "
                f"{TOOL_RETRIES}"
            )
        self.tool_retries[call.tool_name] = retries
        return ToolReturnPart(
            call.tool_name,
            content,
            tool_call_id=call.tool_call_id,
            outcome="retried",
            retry=MessageRetryInfo(cause, attempt=retries, max_retries=TOOL_RETRIES),
        )


_OBJECT: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


def _validated(call: ToolCallPart) -> Outcome:
    """The outcome an output tool call gives, validated by its kind's model."""
    kind = OUTCOME_MODELS[cast(OutcomeKind, call.tool_name)]
    args = call.args
    if isinstance(args, dict):
        return cast(Outcome, kind.model_validate(args))
    return cast(Outcome, kind.model_validate_json(args or "{}"))


def _arguments(call: ToolCallPart) -> dict[str, Any]:
    """A call's arguments as an object; a ``ValidationError`` when they are not one."""
    args = call.args
    if isinstance(args, dict):
        return dict(args)
    return _OBJECT.validate_json(args or "{}")


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
    tools: StepTools | None = None,
    max_attempts: int = 3,
    sleep: Callable[[float], Awaitable[None]] = scaled_sleep,
    backoff: Backoff | None = None,
    rng: random.Random | None = None,
) -> StepResult:
    """Run think: ask ``model`` for one typed outcome, streaming, retrying only before output.

    ``messages`` is the context the engine built (ending in a user message), or
    the conversation recorded before a crash, which may end with a model answer
    whose tool calls are still to be settled. ``outcomes`` limits the output
    tools offered (all kinds by default). ``budget`` caps the tokens: the step
    stops once ``budget.total`` are used, and each answer asks the provider for
    at most ``budget.output`` tokens when that is set. Each model request holds
    what ``admit()`` gives (the kernel's attempt slot) and lets it go before a
    retry's backoff and while tools run. Raises ``ModelUnavailable``,
    ``StreamTruncated``, ``ModelRefused`` (``ContextOverflow`` and
    ``QuotaExhausted`` among them), ``ModelOutputInvalid`` or
    ``TokenCapReached``. ``wait_check`` refuses a wait on a key or fingerprint
    the turn does not know; the model is told and asked again. ``tools`` holds
    the function tools the model may call.

    The conversation is driven here over the model's own streamed request
    (``pydantic_ai.direct``), not through an agent run: one request per model
    answer, its tool calls answered in the next request, until an outcome is valid.
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
    offered = output_tools(tuple(outcomes) if outcomes is not None else None)
    functions = tools.definitions() if tools is not None else []
    answering = _Answering(offered, functions, tools, wait_check)
    parameters = ModelRequestParameters(
        function_tools=functions,
        output_tools=list(offered),
        output_mode="tool",
        allow_text_output=False,
        instruction_parts=[InstructionPart(content=instructions)] if instructions else None,
    )
    settings = (
        ModelSettings(max_tokens=budget.output)
        if budget is not None and budget.output is not None
        else None
    )
    limits = UsageLimits(total_tokens_limit=budget.total if budget is not None else None)
    usage = RunUsage()
    conversation = list(messages)
    pending = conversation[-1]
    if isinstance(pending, ModelRequest):
        conversation[-1] = dataclasses.replace(pending, instructions=instructions or None)
    while True:
        answer = conversation[-1]
        if isinstance(answer, ModelResponse):
            outcome, parts = await answering.read(answer, conversation)
            if outcome is not None:
                conversation.append(ModelRequest(parts=parts))
                return _result(outcome, step, usage, conversation)
            conversation.append(ModelRequest(parts=parts, instructions=instructions or None))
        _capped(limits.check_before_request, usage)
        step.request += 1
        step.retry = 0
        _steer(conversation, await step.poll_steering())
        response = await _ask(model, conversation, parameters, settings, step, admit, usage)
        usage.incr(response.usage)
        usage.requests += 1
        conversation.append(response)
        _capped(limits.check_tokens, usage)


def _capped(check: Callable[[RunUsage], None], usage: RunUsage) -> None:
    """Run a usage limit's check; going over it ends the step as the token cap."""
    try:
        check(usage)
    except UsageLimitExceeded as exc:
        raise TokenCapReached(
            f"the turn reached its token cap: {_describe(exc)}", usage=TokenUsage.from_run(usage)
        ) from exc


async def _ask(
    model: Model,
    conversation: list[ModelMessage],
    parameters: ModelRequestParameters,
    settings: ModelSettings | None,
    step: _Step,
    admit: Callable[[], AbstractAsyncContextManager[object]] | None,
    usage: RunUsage,
) -> ModelResponse:
    """One request, streamed; a retryable failure before any output is asked again after a
    backoff, carrying the steering that arrived meanwhile."""
    while True:
        visible = _StreamedText()
        try:
            async with admit() if admit is not None else contextlib.nullcontext():
                await step.begin_attempt()
                async with model_request_stream(
                    model,
                    conversation,
                    model_settings=settings,
                    model_request_parameters=parameters,
                    instrument=False,
                ) as stream:
                    async for event in stream:
                        if delta := visible.feed(event):
                            await step.emit(delta)
                    return stream.get()
        except HzError:
            raise
        except Exception as error:
            if classify(error) == "unknown":
                raise
            failure = step.failure(error, conversation, TokenUsage.from_run(usage))
            if failure is not None:
                raise failure from error
            await step.back_off(error)
            _steer(conversation, await step.poll_steering())


def _steer(conversation: list[ModelMessage], texts: Sequence[str]) -> None:
    """Steering joins the request about to be sent, as steering-marked user text."""
    if not texts:
        return
    last = conversation[-1]
    assert isinstance(last, ModelRequest)
    steered = [UserPromptPart(render_steering(text)) for text in texts]
    conversation[-1] = dataclasses.replace(last, parts=[*last.parts, *steered])


def _result(
    outcome: Outcome, step: _Step, usage: RunUsage, conversation: Sequence[ModelMessage]
) -> StepResult:
    return StepResult(
        outcome=outcome,
        text="".join(step.chunks),
        usage=TokenUsage.from_run(usage),
        messages=messages_to_json(conversation),
        attempts=step.attempts,
        model=step.model_name,
    )
