"""The think step's own request loop: what the model is told back, and when it gives up.

The loop drives the model directly (no agent run graph), so these pin the
conversation it records and the limits it keeps, against pydantic-ai's
function model scripted answer by answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.tools import ToolDefinition

from hz_kernel.engine.attempts import (
    ModelOutputInvalid,
    TokenBudget,
    TokenCapReached,
    messages_from_json,
    run_model_step,
    user_message,
)
from hz_kernel.engine.outcome import NothingOutcome

Answer = str | dict[int, DeltaToolCall]


def scripted(*answers: Answer) -> tuple[FunctionModel, list[list[ModelMessage]]]:
    """A model that gives ``answers`` in turn, and the messages each request carried."""
    seen: list[list[ModelMessage]] = []

    async def stream(messages: list[ModelMessage], _: AgentInfo) -> AsyncIterator[Any]:
        seen.append(list(messages))
        yield answers[len(seen) - 1]

    return FunctionModel(stream_function=stream), seen


def call(name: str, args: str, call_id: str) -> dict[int, DeltaToolCall]:
    return {0: DeltaToolCall(name=name, json_args=args, tool_call_id=call_id)}


class Echo:
    """One function tool, ``echo``; records each call and whether a slot was held meanwhile."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], str, int]] = []
        self.slot_held = False
        self.held_during_call: list[bool] = []

    def definitions(self) -> list[ToolDefinition]:
        schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
        return [ToolDefinition(name="echo", parameters_json_schema=schema, sequential=True)]

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        messages: Sequence[ModelMessage],
        call_id: str,
    ) -> object:
        self.calls.append((arguments, call_id, len(messages)))
        self.held_during_call.append(self.slot_held)
        return {"echo": arguments}

    @contextlib.asynccontextmanager
    async def admit(self) -> AsyncIterator[object]:
        self.slot_held = True
        try:
            yield self
        finally:
            self.slot_held = False


async def _quiet(_: object) -> None:
    return None


async def step(model: FunctionModel, tools: Echo | None = None, **extra: Any) -> Any:
    return await run_model_step(
        model=model,
        instructions="Keep the digest true.",
        messages=extra.pop("messages", [user_message("Anything to do?")]),
        on_attempt=_quiet,
        on_chunk=_quiet,
        tools=tools,
        admit=tools.admit if tools is not None else None,
        **extra,
    )


def parts_of(message: ModelMessage) -> list[Any]:
    return list(message.parts)


async def test_what_the_model_is_told_back_until_its_outcome_is_valid() -> None:
    tools = Echo()
    model, seen = scripted(
        "I would rather chat.",
        call("nothing", '{"report": ""}', "o1"),
        {
            0: DeltaToolCall(name="echo", json_args='{"x": 1}', tool_call_id="c1"),
            1: DeltaToolCall(name="shell", json_args="{}", tool_call_id="c2"),
        },
        call("nothing", '{"report": "all quiet"}', "o2"),
    )
    result = await step(model, tools)
    assert result.outcome == NothingOutcome(report="all quiet")
    assert result.usage.requests == 4
    recorded = messages_from_json(result.messages)
    no_output, invalid, answered = (recorded[n] for n in (2, 4, 6))
    feedback = parts_of(no_output)[0]
    assert isinstance(feedback, RetryFeedbackPart) and feedback.retry.cause == "no_output"
    assert "include your response in a tool call" in str(parts_of(seen[1][-1])[0].content)
    told = parts_of(invalid)[0]
    assert isinstance(told, ToolReturnPart) and told.outcome == "retried"
    assert told.retry is not None and told.retry.cause == "validation_error"
    assert told.content[0]["loc"] == ["report"]
    echoed, unknown = parts_of(answered)
    assert echoed.content == {"echo": {"x": 1}} and echoed.outcome == "success"
    assert unknown.outcome == "retried" and "Unknown tool name: 'shell'" in unknown.content
    # Every request the model got carried the step's instructions.
    assert all(
        [m for m in request if isinstance(m, ModelRequest)][-1].instructions
        == "Keep the digest true."
        for request in seen
    )
    # The tool ran once, with the conversation up to the answer that called it, and no
    # attempt slot was held while it ran.
    assert [(args, call_id) for args, call_id, _ in tools.calls] == [({"x": 1}, "c1")]
    assert tools.held_during_call == [False]
    assert isinstance(recorded[-1], ModelRequest)
    assert [p.content for p in parts_of(recorded[-1])] == ["Final result processed."]


async def test_three_unusable_answers_end_the_step_as_invalid_output() -> None:
    model, seen = scripted("one", "two", "three", call("nothing", '{"report": "late"}', "o"))
    with pytest.raises(ModelOutputInvalid) as failed:
        await step(model)
    assert failed.value.code == "HZE023"
    assert len(seen) == 3


async def test_a_tool_called_badly_twice_ends_the_step() -> None:
    model, _ = scripted(call("echo", "{not json", "c1"), call("echo", "[1]", "c2"))
    with pytest.raises(ModelOutputInvalid, match="echo"):
        await step(model, Echo())


async def test_a_step_resumed_after_its_answer_settles_the_calls_before_asking_again() -> None:
    tools = Echo()
    answered = ModelResponse(parts=[ToolCallPart("echo", '{"x": 7}', tool_call_id="c9")])
    model, seen = scripted(call("nothing", '{"report": "done"}', "o"))
    result = await step(model, tools, messages=[user_message("Anything to do?"), answered])
    assert result.outcome == NothingOutcome(report="done")
    assert [call_id for _, call_id, _ in tools.calls] == ["c9"]
    returned = parts_of(seen[0][-1])[0]
    assert isinstance(returned, ToolReturnPart) and returned.content == {"echo": {"x": 7}}


async def test_the_token_budget_ends_a_step_that_keeps_calling_tools() -> None:
    model, seen = scripted(*(call("echo", '{"x": 1}', f"c{n}") for n in range(50)))
    with pytest.raises(TokenCapReached) as capped:
        await step(model, Echo(), budget=TokenBudget(total=400))
    assert capped.value.code == "HZE060"
    assert capped.value.usage.tokens > 400
    assert len(seen) < 50
