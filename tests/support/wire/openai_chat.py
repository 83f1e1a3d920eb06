"""OpenAI's Chat Completions wire (``POST /v1/chat/completions``), and servers that copy it.

Written from OpenAI's API reference: a streamed answer is a series of
``chat.completion.chunk`` objects as ``data:`` events, a tool call arrives as
``delta.tool_calls`` (the name in the first piece, then argument pieces), the
finish reason in its own chunk, the usage in a last chunk with no choices
(sent when the request asked for it with ``stream_options.include_usage``),
then ``data: [DONE]``. Errors are ``{"error": {message, type, param, code}}``.

``flavour`` picks whose server it is:

* ``"openai"``: OpenAI itself; a context overflow is a 400 with
  ``code: context_length_exceeded``.
* ``"compatible"``: a self-hosted OpenAI-compatible server in the manner of
  llama.cpp's: no cached-token detail, and a context overflow worded its own
  way (``exceed_context_size_error``), with no OpenAI code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

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

Flavour = Literal["openai", "compatible"]


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


@dataclass(frozen=True)
class OpenAIChat:
    flavour: Flavour = "openai"
    path: str = "/v1/chat/completions"
    content_type: str = "text/event-stream"

    def usage(self, reply: ToolCall) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }
        if self.flavour == "openai":
            usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
        return usage

    def error(self, reply: Status | Overflow) -> Answer:
        if isinstance(reply, Overflow):
            if self.flavour == "openai":
                message = (
                    f"This model's maximum context length is {reply.window} tokens. However, "
                    f"your messages resulted in {reply.prompt_tokens} tokens. "
                    "Please reduce the length of the messages."
                )
                error = {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            else:
                message = (
                    f"request ({reply.prompt_tokens} tokens) exceeds the available context "
                    f"size ({reply.window} tokens), try increasing it"
                )
                error = {"code": 400, "message": message, "type": "exceed_context_size_error"}
            return Answer(400, {"error": error})
        kind = "rate_limit_exceeded" if reply.code == 429 else "server_error"
        code = reply.error_code or kind
        error = {"message": reply.message, "type": kind, "param": None, "code": code}
        return Answer(reply.code, {"error": error}, headers=retry_headers(reply))

    def frames(self, model: str, reply: ToolCall, include_usage: bool) -> list[str]:
        pieces = reply.pieces()
        first_call = {
            "index": 0,
            "id": "call_stub",
            "type": "function",
            "function": {"name": reply.tool, "arguments": pieces[0]},
        }
        events = [_chunk(model, {"role": "assistant", "content": None, "tool_calls": [first_call]})]
        events.extend(
            _chunk(model, {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in pieces[1:]
        )
        events.append(_chunk(model, {}, finish="tool_calls"))
        if include_usage:
            final = _chunk(model, {})
            final["choices"] = []
            final["usage"] = self.usage(reply)
            events.append(final)
        return [*(sse(e) for e in events), sse("[DONE]")]

    def whole(self, model: str, reply: ToolCall) -> dict[str, Any]:
        call = {
            "id": "call_stub",
            "type": "function",
            "function": {"name": reply.tool, "arguments": reply.arguments_json()},
        }
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": CREATED,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": self.usage(reply),
        }

    def answer(self, reply: Reply, request: dict[str, Any]) -> Answer:
        if not isinstance(reply, ToolCall):
            return self.error(reply)
        model = str(request.get("model", "stub"))
        if not request.get("stream"):
            return Answer(200, self.whole(model, reply))
        options = request.get("stream_options") or {}
        frames = self.frames(model, reply, bool(options.get("include_usage")))
        return Answer(200, frames=frames, cut_after=reply.cut_after)


class OpenAIChatStub(WireStub):
    """OpenAI's Chat Completions, or (``flavour="compatible"``) a server that copies it."""

    def __init__(self, replies: list[Reply], flavour: Flavour = "openai") -> None:
        super().__init__(OpenAIChat(flavour), replies)

    def spec(self, model: str = "stub-model") -> str:
        """The hz model string for an OpenAI-compatible server at this address."""
        return f"openai-compatible:{model}@{self.base_url}"
