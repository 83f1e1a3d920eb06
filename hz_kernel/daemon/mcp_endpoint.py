"""``/mcp``: the MCP head served by the daemon over streamable HTTP, behind its guard.

The route sits behind the daemon's ``Guard`` like every other (loopback
``Host``, no foreign ``Origin``, the bearer token), less the protocol
header an MCP client does not send. The MCP SDK is loaded on the first
request, not at the daemon's start (it costs a quarter of a second), and its
session manager runs in a task of its own until the daemon stops. Sessions
are stateless and answers plain JSON: every call is one request and one
response, as the operations are. A stateless server has nothing to push, so
the route takes POST only: a GET is refused at once (405, as MCP allows)
instead of holding an event stream that never carries an event. The SDK's
own logging is kept to warnings: it logs a line per request at info, which
would let any MCP client flood the daemon's log. A body that is not a
JSON-RPC message is answered here, 400 with one coded JSON-RPC error
(``HZD138``, as over stdio), before the SDK would answer it in its own words.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from starlette.types import Message, Receive, Scope, Send

from hz_kernel.client import KernelClient

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

MCP_PATH = "/mcp"
#: The only method served at ``/mcp``: stateless, one request and one answer.
MCP_METHODS = ("POST",)
#: The largest message ``/mcp`` reads (the MCP SDK's own limit): a larger one is refused, coded.
MAX_MCP_BODY = 4 << 20


class McpEndpoint:
    """The ASGI app at ``/mcp``; its session manager starts with the first request."""

    def __init__(self, client: KernelClient, stopping: asyncio.Event) -> None:
        self.client = client
        self.stopping = stopping
        self._manager: asyncio.Future[StreamableHTTPSessionManager] | None = None
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = await self._started()
        from hz_kernel.mcp_head import read_message, too_large

        body = await _body(receive)
        if len(body) > MAX_MCP_BODY:
            refused = too_large(MAX_MCP_BODY, f"POST {MCP_PATH}")
            await _answer(send, 413, refused.model_dump_json(by_alias=True).encode())
            return
        refused = read_message(body, f"POST {MCP_PATH}")
        if refused is not None:
            await _answer(send, 400, refused.model_dump_json(by_alias=True).encode())
            return
        await manager.asgi_app(scope, _replay(body, receive), send)

    async def _started(self) -> StreamableHTTPSessionManager:
        if self._manager is None:
            self._manager = asyncio.get_running_loop().create_future()
            self._task = asyncio.ensure_future(self._run(self._manager))
        return await asyncio.shield(self._manager)

    async def _run(self, ready: asyncio.Future[StreamableHTTPSessionManager]) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings

        from hz_kernel.mcp_head import build_server

        logging.getLogger("mcp").setLevel(logging.WARNING)
        try:
            manager = StreamableHTTPSessionManager(
                app=build_server(self.client),
                json_response=True,
                stateless=True,
                max_request_body_size=MAX_MCP_BODY,
                # The daemon's guard checks Host and Origin for every route, this one too.
                security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            )
            async with manager.run():
                ready.set_result(manager)
                await self.stopping.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    async def close(self) -> None:
        """End the session manager's task (the daemon is stopping)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


async def _body(receive: Receive) -> bytes:
    """The request's body, read no further than one byte over ``MAX_MCP_BODY``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_MCP_BODY or not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body already read given again first."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def _answer(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
