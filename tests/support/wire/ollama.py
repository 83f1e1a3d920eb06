"""Ollama's OpenAI-compatible wire (``POST /v1/chat/completions`` on an Ollama server).

pydantic-ai's ``OllamaModel`` is its OpenAI chat model pointed at Ollama's
OpenAI compatibility endpoint, not at the native ``/api/chat`` NDJSON stream,
so this is the wire hz meets. Written from Ollama's OpenAI compatibility
reference, where it differs from OpenAI's: a tool call arrives whole in one
chunk (name and all its arguments), usage has no cached-token detail and is
sent only when the request asks with ``stream_options.include_usage``, errors
are ``{"error": {message, type: "api_error", param: null, code: null}}``, and
an input longer than the model's context is refused with "the input length
exceeds the context length" and no OpenAI code.
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


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-417",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "system_fingerprint": "fp_ollama",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


@dataclass(frozen=True)
class OllamaChat:
    path: str = "/v1/chat/completions"
    content_type: str = "text/event-stream"

    def error(self, reply: Status | Overflow) -> Answer:
        if isinstance(reply, Overflow):
            message, code = "the input length exceeds the context length", 400
            headers: dict[str, str] = {}
        else:
            message, code, headers = reply.message, reply.code, retry_headers(reply)
        error = {"message": message, "type": "api_error", "param": None, "code": None}
        return Answer(code, {"error": error}, headers=headers)

    def frames(self, model: str, reply: ToolCall, include_usage: bool) -> list[str]:
        call = {
            "id": "call_ollama",
            "index": 0,
            "type": "function",
            "function": {"name": reply.tool, "arguments": reply.arguments_json()},
        }
        events = [
            _chunk(model, {"role": "assistant", "content": ""}),
            _chunk(model, {"role": "assistant", "content": "", "tool_calls": [call]}),
            _chunk(model, {"role": "assistant", "content": ""}, finish="tool_calls"),
        ]
        if include_usage:
            final = _chunk(model, {})
            final["choices"] = []
            final["usage"] = {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            }
            events.append(final)
        return [*(sse(e) for e in events), sse("[DONE]")]

    def answer(self, reply: Reply, request: dict[str, Any]) -> Answer:
        if not isinstance(reply, ToolCall):
            return self.error(reply)
        if not request.get("stream"):
            return Answer(400, {"error": {"message": "the stub only streams", "type": "api_error"}})
        options = request.get("stream_options") or {}
        model = str(request.get("model", "stub"))
        frames = self.frames(model, reply, bool(options.get("include_usage")))
        return Answer(200, frames=frames, cut_after=reply.cut_after)


class OllamaStub(WireStub):
    """An Ollama server, addressed as ``ollama:<name>`` with ``OLLAMA_BASE_URL``."""

    def __init__(self, replies: list[Reply]) -> None:
        super().__init__(OllamaChat(), replies)
