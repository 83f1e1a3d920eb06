"""OpenAI's Responses wire (``POST /v1/responses``, streamed).

Written from OpenAI's API reference for streaming responses: every event is
an SSE frame whose ``event:`` line and ``type`` field name it, each with a
``sequence_number``. A function call goes ``response.created``,
``response.in_progress``, ``response.output_item.added`` (the call's name,
empty arguments), ``response.function_call_arguments.delta`` per piece,
``response.function_call_arguments.done``, ``response.output_item.done`` and
``response.completed``, whose response carries the usage (``input_tokens``
with ``input_tokens_details.cached_tokens``, ``output_tokens``). Errors before
the stream are ``{"error": {message, type, param, code}}``; a context overflow
is a 400 with ``code: context_length_exceeded``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.support.wire.server import (
    CREATED,
    Answer,
    Overflow,
    Reply,
    Status,
    ToolCall,
    WireStub,
    retry_headers,
    sse,
)


def _response(model: str, status: str, output: list[dict[str, Any]], usage: object) -> dict:
    return {
        "id": "resp_stub",
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "usage": usage,
    }


@dataclass(frozen=True)
class OpenAIResponses:
    path: str = "/v1/responses"
    content_type: str = "text/event-stream"

    def error(self, reply: Status | Overflow) -> Answer:
        if isinstance(reply, Overflow):
            error = {
                "message": "Your input exceeds the context window of this model. "
                "Please adjust your input and try again.",
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded",
            }
            return Answer(400, {"error": error})
        kind = "rate_limit_exceeded" if reply.code == 429 else "server_error"
        code = reply.error_code or kind
        error = {"message": reply.message, "type": kind, "param": None, "code": code}
        return Answer(reply.code, {"error": error}, headers=retry_headers(reply))

    def frames(self, model: str, reply: ToolCall) -> list[str]:
        item = {
            "type": "function_call",
            "id": "fc_stub",
            "call_id": "call_stub",
            "name": reply.tool,
            "arguments": "",
            "status": "in_progress",
        }
        done = item | {"arguments": reply.arguments_json(), "status": "completed"}
        usage = {
            "input_tokens": reply.prompt_tokens,
            "input_tokens_details": {"cached_tokens": reply.cached_tokens},
            "output_tokens": reply.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": _response(model, "in_progress", [], None)},
            {"type": "response.in_progress", "response": _response(model, "in_progress", [], None)},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        ]
        events.extend(
            {
                "type": "response.function_call_arguments.delta",
                "item_id": "fc_stub",
                "output_index": 0,
                "delta": piece,
            }
            for piece in reply.pieces()
        )
        events += [
            {
                "type": "response.function_call_arguments.done",
                "item_id": "fc_stub",
                "output_index": 0,
                "name": reply.tool,
                "arguments": reply.arguments_json(),
            },
            {"type": "response.output_item.done", "output_index": 0, "item": done},
            {
                "type": "response.completed",
                "response": _response(model, "completed", [done], usage),
            },
        ]
        return [
            sse(event | {"sequence_number": n}, event=str(event["type"]))
            for n, event in enumerate(events)
        ]

    def answer(self, reply: Reply, request: dict[str, Any]) -> Answer:
        if not isinstance(reply, ToolCall):
            return self.error(reply)
        if not request.get("stream"):
            return Answer(400, {"error": {"message": "the stub only streams", "code": None}})
        frames = self.frames(str(request.get("model", "stub")), reply)
        return Answer(200, frames=frames, cut_after=reply.cut_after)


class OpenAIResponsesStub(WireStub):
    """OpenAI's Responses API, addressed as ``openai:<name>`` with ``OPENAI_BASE_URL``."""

    def __init__(self, replies: list[Reply]) -> None:
        super().__init__(OpenAIResponses(), replies)
