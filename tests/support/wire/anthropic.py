"""Anthropic's Messages wire (``POST /v1/messages``, streamed).

Written from Anthropic's API reference for streaming messages: named SSE
events ``message_start`` (the message with its input usage: ``input_tokens``
not counting the ``cache_read_input_tokens`` read from the prompt cache),
``content_block_start`` (a ``tool_use`` block with its id and name),
``ping``, ``content_block_delta`` per ``input_json_delta`` piece,
``content_block_stop``, ``message_delta`` (``stop_reason: tool_use`` and the
output tokens) and ``message_stop``. Errors are ``{"type": "error", "error":
{type, message}}``: ``rate_limit_error`` (429, with ``retry-after``),
``api_error`` (500), ``overloaded_error`` (529), and a context overflow is a
400 ``invalid_request_error`` saying "prompt is too long".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.support.wire.server import (
    Answer,
    Overflow,
    Reply,
    Status,
    ToolCall,
    WireStub,
    retry_headers,
    sse,
)

_ERROR_TYPES = {400: "invalid_request_error", 429: "rate_limit_error", 529: "overloaded_error"}


@dataclass(frozen=True)
class AnthropicMessages:
    path: str = "/v1/messages"
    content_type: str = "text/event-stream"

    def error(self, reply: Status | Overflow) -> Answer:
        if isinstance(reply, Overflow):
            message = f"prompt is too long: {reply.prompt_tokens} tokens > {reply.window} maximum"
            body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
            return Answer(400, body)
        kind = _ERROR_TYPES.get(reply.code, "api_error")
        body = {"type": "error", "error": {"type": kind, "message": reply.message}}
        headers = retry_headers(reply) | {"request-id": "req_stub"}
        return Answer(reply.code, body, headers=headers)

    def frames(self, model: str, reply: ToolCall) -> list[str]:
        message = {
            "id": "msg_stub",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": model,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": reply.prompt_tokens - reply.cached_tokens,
                "cache_read_input_tokens": reply.cached_tokens,
                "cache_creation_input_tokens": 0,
                "output_tokens": 1,
            },
        }
        block = {"type": "tool_use", "id": "toolu_stub", "name": reply.tool, "input": {}}
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": message},
            {"type": "content_block_start", "index": 0, "content_block": block},
            {"type": "ping"},
        ]
        events.extend(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            }
            for piece in reply.pieces()
        )
        events += [
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": reply.completion_tokens},
            },
            {"type": "message_stop"},
        ]
        return [sse(event, event=str(event["type"])) for event in events]

    def answer(self, reply: Reply, request: dict[str, Any]) -> Answer:
        if not isinstance(reply, ToolCall):
            return self.error(reply)
        if not request.get("stream"):
            body = {"type": "error", "error": {"type": "api_error", "message": "stub streams"}}
            return Answer(400, body)
        frames = self.frames(str(request.get("model", "stub")), reply)
        return Answer(200, frames=frames, cut_after=reply.cut_after)


class AnthropicStub(WireStub):
    """Anthropic's Messages API, addressed as ``anthropic:<name>`` with ``ANTHROPIC_BASE_URL``."""

    def __init__(self, replies: list[Reply]) -> None:
        super().__init__(AnthropicMessages(), replies)
