"""The real provider path: pydantic-ai's OpenAI chat model against a scripted local server."""

from __future__ import annotations

import random

import pytest

from hz_kernel.adapters.models import ModelEnv, render_steering, resolve_model
from hz_kernel.engine.attempts import (
    AttemptInfo,
    Backoff,
    ContextOverflow,
    ModelRefused,
    ModelUnavailable,
    QuotaExhausted,
    RetryInfo,
    StepResult,
    StreamTruncated,
    messages_from_json,
    run_model_step,
    user_message,
)
from hz_kernel.engine.outcome import DraftOutcome
from tests.support.openai_stub import OpenAIStub, Overflow, Reply, Status, ToolCall

DRAFT = {
    "type": "draft",
    "output": "section",
    "text": "## Weekly\n- shipped the login page\n- fixed the crash on save\n",
    "report": "Drafted the weekly section.",
}


class Journal:
    """What the engine would journal: attempts, retries, chunks and the waits asked for."""

    def __init__(self, steering: list[list[str]] | None = None) -> None:
        self.attempts: list[AttemptInfo] = []
        self.retries: list[RetryInfo] = []
        self.chunks: list[str] = []
        self.sleeps: list[float] = []
        self.pending = steering or []
        self.steering_asked = 0

    async def on_attempt(self, info: AttemptInfo) -> None:
        self.attempts.append(info)

    async def on_retry(self, info: RetryInfo) -> None:
        self.retries.append(info)

    async def on_chunk(self, text: str) -> None:
        self.chunks.append(text)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    async def steering(self) -> list[str]:
        self.steering_asked += 1
        return self.pending.pop(0) if self.pending else []


async def think(stub: OpenAIStub, journal: Journal, **extra: object) -> StepResult:
    return await run_model_step(
        model=resolve_model(stub.spec(), settings=ModelEnv()),
        instructions="You keep the weekly section.",
        messages=[user_message("Draft this week's section.")],
        on_attempt=journal.on_attempt,
        on_chunk=journal.on_chunk,
        on_retry=journal.on_retry,
        steering=journal.steering,
        sleep=journal.sleep,
        rng=random.Random(7),
        **extra,
    )


def scripted(*replies: Reply) -> OpenAIStub:
    return OpenAIStub(replies)


async def test_a_429_is_retried_and_the_step_succeeds_on_attempt_two() -> None:
    journal = Journal()
    with scripted(Status(429, "slow down"), ToolCall("draft", DRAFT)) as stub:
        result = await think(stub, journal)
        requests = stub.requests
    assert isinstance(result.outcome, DraftOutcome)
    assert result.outcome.text == DRAFT["text"]
    assert "".join(journal.chunks) == DRAFT["text"] == result.text
    assert len(journal.chunks) >= 2
    assert [(a.attempt, a.request, a.retry) for a in journal.attempts] == [(1, 1, 0), (2, 1, 1)]
    assert result.attempts == 2
    [retry] = journal.retries
    assert (retry.attempt, retry.status_code, retry.error) == (1, 429, "ModelRateLimitError")
    assert journal.sleeps == [pytest.approx(retry.delay_ms / 1000, abs=1e-3)]
    assert 0.375 <= journal.sleeps[0] <= 0.625
    assert len(requests) == 2
    assert requests[1]["stream"] is True
    assert {t["function"]["name"] for t in requests[1]["tools"]} >= {"draft", "lessons", "nothing"}
    assert result.usage.input_tokens == 120
    assert result.usage.output_tokens == 60
    assert result.usage.cached_tokens == 20
    assert result.model == "stub-model"


async def test_a_stream_cut_after_its_first_chunk_is_truncated_and_never_retried() -> None:
    journal = Journal()
    cut = ToolCall("draft", DRAFT, chunk_chars=64, cut_after=1)
    with scripted(cut, ToolCall("draft", DRAFT)) as stub:
        with pytest.raises(StreamTruncated) as caught:
            await think(stub, journal)
        requests = stub.requests
    error = caught.value
    assert error.code == "HZE021"
    assert error.text == "".join(journal.chunks)
    assert error.text
    assert DRAFT["text"].startswith(error.text)
    assert error.text != DRAFT["text"]
    assert len(requests) == 1
    assert len(journal.attempts) == 1
    assert journal.retries == []
    assert journal.sleeps == []
    assert error.one_line().startswith("HZE021: think: the stream broke after output began")
    assert messages_from_json(error.messages)


async def test_a_stream_cut_before_any_text_restarts_the_same_request() -> None:
    journal = Journal()
    cut = ToolCall("draft", DRAFT, chunk_chars=10, cut_after=1)
    with scripted(cut, ToolCall("draft", DRAFT)) as stub:
        result = await think(stub, journal)
        requests = stub.requests
    assert result.outcome.text == DRAFT["text"]
    assert [(a.attempt, a.request, a.retry) for a in journal.attempts] == [(1, 1, 0), (2, 1, 1)]
    assert [r.error for r in journal.retries] == ["ModelConnectionError"]
    assert len(requests) == 2


async def test_retryable_failures_give_up_after_three_attempts() -> None:
    journal = Journal()
    with scripted(Status(503), Status(502), Status(500), ToolCall("draft", DRAFT)) as stub:
        with pytest.raises(ModelUnavailable) as caught:
            await think(stub, journal)
        requests = stub.requests
    assert caught.value.code == "HZE020"
    assert caught.value.attempts == 3
    assert len(requests) == 3
    assert [r.status_code for r in journal.retries] == [503, 502]
    first, second = journal.sleeps
    assert 0.375 <= first <= 0.625
    assert 0.75 <= second <= 1.25


async def test_a_refusal_is_not_retried() -> None:
    journal = Journal()
    with scripted(Status(400, "bad request"), ToolCall("draft", DRAFT)) as stub:
        with pytest.raises(ModelRefused) as caught:
            await think(stub, journal)
        requests = stub.requests
    assert caught.value.code == "HZE022"
    assert caught.value.status_code == 400
    assert len(requests) == 1
    assert journal.retries == []


async def test_retry_after_is_honoured_up_to_the_cap() -> None:
    journal = Journal()
    with scripted(Status(429, retry_after=7), ToolCall("draft", DRAFT)) as stub:
        await think(stub, journal, backoff=Backoff(base_s=0.1, cap_s=5.0))
    assert journal.sleeps == [5.0]
    assert journal.retries[0].delay_ms == 5000


async def test_steering_reaches_the_model_before_its_next_request() -> None:
    journal = Journal(steering=[["keep it under ten lines"]])
    with scripted(Status(429), ToolCall("draft", DRAFT)) as stub:
        await think(stub, journal)
        requests = stub.requests
    marked = render_steering("keep it under ten lines")
    for body in requests:
        texts = [str(m.get("content")) for m in body["messages"] if m["role"] == "user"]
        assert sum(text.count(marked) for text in texts) == 1
    assert journal.steering_asked == 2


async def test_steering_admitted_during_a_retry_wait_reaches_the_retry() -> None:
    journal = Journal(steering=[[], ["keep it under ten lines"]])
    with scripted(Status(429), ToolCall("draft", DRAFT)) as stub:
        result = await think(stub, journal)
        requests = stub.requests
    marked = render_steering("keep it under ten lines")

    def user_texts(body: dict) -> list[str]:
        return [str(m.get("content")) for m in body["messages"] if m["role"] == "user"]

    assert not any(marked in text for text in user_texts(requests[0]))
    assert any(marked in text for text in user_texts(requests[1]))
    assert [(a.attempt, a.request, a.retry) for a in journal.attempts] == [(1, 1, 0), (2, 1, 1)]
    assert isinstance(result.outcome, DraftOutcome)


async def test_issue15_item2_a_context_overflow_is_told_apart_and_not_retried() -> None:
    with scripted(Overflow(), ToolCall("draft", DRAFT)) as stub:
        journal = Journal()
        with pytest.raises(ContextOverflow) as caught:
            await think(stub, journal)
        requests = stub.requests
    assert caught.value.code == "HZE065" and isinstance(caught.value, ModelRefused)
    assert caught.value.status_code == 400
    assert len(requests) == 1 and journal.retries == [] and journal.sleeps == []


async def test_issue15_item2_a_quota_429_is_not_retried() -> None:
    with scripted(
        Status(429, "quota", error_code="insufficient_quota"), ToolCall("draft", DRAFT)
    ) as stub:
        journal = Journal()
        with pytest.raises(QuotaExhausted) as caught:
            await think(stub, journal)
        requests = stub.requests
    assert caught.value.code == "HZE067"
    assert len(requests) == 1 and journal.retries == []
