"""A scripted model provider on 127.0.0.1: a real socket, one dialect of a provider's wire.

Each request takes the next reply from the test's script and the dialect
(``tests/support/wire/*.py``) writes it the way that provider's public API
reference describes: an HTTP error in the provider's error shape, the
provider's context-length error, or one tool call streamed as server-sent
events (or returned whole when the client did not ask to stream).

The replies are the provider-neutral values below. A model-callable tool is
scripted exactly like an outcome: ``ToolCall("read_file", {...})`` followed by
``ToolCall("draft", {...})``; the second request's body (``stub.requests[1]``)
then carries the tool's result for the test to read.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Protocol, Self

CREATED = 1_700_000_000


@dataclass(frozen=True)
class Status:
    """Answer with an HTTP error status (429, 5xx, 4xx) in the provider's error shape."""

    code: int
    message: str = "scripted failure"
    retry_after: float | None = None
    error_code: str | None = None
    """The provider's own error code where it sends one (e.g. OpenAI's ``insufficient_quota``)."""


@dataclass(frozen=True)
class Overflow:
    """Answer with the provider's own "the input is longer than the model's context" error."""

    prompt_tokens: int = 250_000
    window: int = 200_000


@dataclass(frozen=True)
class ToolCall:
    """Answer with one call of ``tool``, its arguments streamed in ``chunk_chars`` pieces.

    ``cut_after=n`` drops the connection after ``n`` frames without ending the
    body, which the client sees as a stream that broke off.
    """

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
        return [text[i : i + self.chunk_chars] for i in range(0, len(text), self.chunk_chars)] or [
            ""
        ]


Reply = Status | Overflow | ToolCall


@dataclass(frozen=True)
class Answer:
    """What a dialect sends: a status, headers, and either one JSON body or a stream of frames."""

    status: int
    body: dict[str, Any] | None = None
    frames: list[str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    cut_after: int | None = None


class Dialect(Protocol):
    """One provider's wire: which path it serves and how a reply looks on it."""

    path: str
    content_type: str

    def answer(self, reply: Reply, request: dict[str, Any]) -> Answer: ...


@dataclass(frozen=True)
class Exchange:
    """One request the stub received: path, headers (lower-case names), JSON body, and when
    it arrived (``time.monotonic()``), so a test can see that a wait was really waited."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


@dataclass
class _Script:
    replies: list[Reply]
    exchanges: list[Exchange] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, exchange: Exchange) -> Reply:
        with self.lock:
            self.exchanges.append(exchange)
            if self.replies:
                return self.replies.pop(0)
            return Status(500, "the stub's script is exhausted")


def _handler(script: _Script, dialect: Dialect) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.partition("?")[0].rstrip("/")
            if path != dialect.path:
                self._write(Answer(404, {"error": {"message": f"no route {self.path}"}}))
                return
            headers = {name.lower(): value for name, value in self.headers.items()}
            reply = script.next(Exchange(path, headers, body))
            self._write(dialect.answer(reply, body))

        def _write(self, answer: Answer) -> None:
            if answer.frames is None:
                data = json.dumps(answer.body or {}).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_response(answer.status)
            self.send_header("Content-Type", dialect.content_type)
            self.send_header("Transfer-Encoding", "chunked")
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            for sent, frame in enumerate(answer.frames):
                if answer.cut_after is not None and sent >= answer.cut_after:
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


class WireStub:
    """The scripted server for one dialect; use it as a context manager around the test."""

    def __init__(self, dialect: Dialect, replies: Iterable[Reply]) -> None:
        self.dialect = dialect
        self._script = _Script(list(replies))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self._script, dialect))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def root_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """The URL an OpenAI-style client takes (with ``/v1``)."""
        return f"{self.root_url}/v1"

    @property
    def exchanges(self) -> list[Exchange]:
        """The requests received so far, in order."""
        return list(self._script.exchanges)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies received so far, in order."""
        return [exchange.body for exchange in self._script.exchanges]

    def __enter__(self) -> Self:
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


def sse(data: dict[str, Any] | str, event: str | None = None) -> str:
    """One server-sent event frame; ``event`` names it where the provider does."""
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n"


def retry_headers(reply: Status) -> dict[str, str]:
    """The headers of an error reply: ``retry-after`` when the script gives one."""
    headers = {"x-should-retry": "false"}
    if reply.retry_after is not None:
        headers["retry-after"] = f"{reply.retry_after:g}"
    return headers
