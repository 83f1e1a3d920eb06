"""A scripted OpenAI-compatible server on 127.0.0.1, for tests of the real provider path.

It speaks just enough of ``POST /v1/chat/completions`` for pydantic-ai's OpenAI
chat model: each request takes the next reply from the script, either an HTTP
error (``Status``) or one tool call (``ToolCall``), streamed as server-sent
events in chunked transfer encoding, or returned whole when the request does
not stream. ``ToolCall(cut_after=n)`` drops the connection after ``n`` events
without ending the body, which a client sees as a broken stream.

    with OpenAIStub([Status(429), ToolCall("draft", {...})]) as stub:
        model = resolve_model(stub.spec())
        ...
        assert len(stub.requests) == 2
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

CREATED = 1_700_000_000


@dataclass(frozen=True)
class Status:
    """Answer with an HTTP error status and an OpenAI-shaped error body."""

    code: int
    message: str = "scripted failure"
    retry_after: float | None = None


@dataclass(frozen=True)
class ToolCall:
    """Answer with one call of ``tool``; streamed in pieces of ``chunk_chars`` characters."""

    tool: str
    arguments: dict[str, Any] | str
    chunk_chars: int = 24
    cut_after: int | None = None
    prompt_tokens: int = 120
    completion_tokens: int = 60
    cached_tokens: int = 20

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)

    def pieces(self) -> list[str]:
        text = self.arguments_json()
        return [text[i : i + self.chunk_chars] for i in range(0, len(text), self.chunk_chars)]


Reply = Status | ToolCall


@dataclass
class _Script:
    replies: list[Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            self.requests.append(body)
            if self.replies:
                return self.replies.pop(0)
            return Status(500, "the stub's script is exhausted")


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _usage(reply: ToolCall) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
    }


def _events(model: str, reply: ToolCall) -> list[dict[str, Any]]:
    pieces = reply.pieces() or [""]
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
    final = _chunk(model, {})
    final["choices"] = []
    final["usage"] = _usage(reply)
    events.append(final)
    return events


def _completion(model: str, reply: ToolCall) -> dict[str, Any]:
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
        "usage": _usage(reply),
    }


def _handler(script: _Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._json(404, {"error": {"message": f"no route {self.path}"}})
                return
            reply = script.next(body)
            model = str(body.get("model", "stub"))
            if isinstance(reply, Status):
                self._status(reply)
            elif body.get("stream"):
                self._stream(model, reply)
            else:
                self._json(200, _completion(model, reply))

        def _json(
            self, code: int, payload: dict[str, Any], extra: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _status(self, reply: Status) -> None:
            kind = "rate_limit_exceeded" if reply.code == 429 else "server_error"
            error = {"message": reply.message, "type": kind, "code": kind}
            headers = {"x-should-retry": "false"}
            if reply.retry_after is not None:
                headers["retry-after"] = str(reply.retry_after)
            self._json(reply.code, {"error": error}, headers)

        def _stream(self, model: str, reply: ToolCall) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            frames = [f"data: {json.dumps(e)}\n\n" for e in _events(model, reply)]
            frames.append("data: [DONE]\n\n")
            for sent, frame in enumerate(frames):
                if reply.cut_after is not None and sent >= reply.cut_after:
                    self._cut()
                    return
                data = frame.encode()
                self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _cut(self) -> None:
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    return Handler


class OpenAIStub:
    """The scripted server; use it as a context manager around the test."""

    def __init__(self, replies: Iterable[Reply]) -> None:
        self._script = _Script(list(replies))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self._script))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies received so far, in order."""
        return list(self._script.requests)

    def spec(self, model: str = "stub-model") -> str:
        """The hz model string that points at this server."""
        return f"openai-compatible:{model}@{self.base_url}"

    def __enter__(self) -> OpenAIStub:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
