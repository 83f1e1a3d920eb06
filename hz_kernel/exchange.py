"""One HTTP/1.1 request to a daemon, over its loopback port or unix socket, on asyncio alone.

A head's calls are small requests to a daemon on this machine (or at the
local end of a port forward): no TLS, no proxy, no redirect, one answer
each. httpx and its stack took longer to import than the rest of a head's
start, so calls go out here, one connection each (``Connection: close``),
and only the feed (``HttpClient.subscribe``) loads httpx.

A failure is ``Unreachable``, named as httpx names the same failure
(``ConnectError``, ``ReadTimeout``…), so the line a head prints for it is
the same whichever stack met it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]

#: Seconds to open the connection, as httpx's ``connect`` timeout was.
CONNECT_TIMEOUT_S = 5.0
#: The longest status line and headers read (a daemon's are a few hundred bytes).
HEAD_LIMIT = 64 * 1024


class Unreachable(Exception):
    """The request got no whole answer; ``reason`` names how, as httpx would."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Reply:
    """A whole answer: its status and body (``refusal`` reads both)."""

    status_code: int
    content: bytes


async def exchange(
    address: str,
    method: str,
    path: str,
    headers: dict[str, str],
    content: bytes | None,
    timeout: float,
    *,
    connect_timeout: float = CONNECT_TIMEOUT_S,
) -> Reply:
    """Send one request to ``address`` (``http://host:port`` or ``unix:PATH``) and read its
    answer whole, within ``timeout`` seconds once connected."""
    host, connecting = _dial(address)
    try:
        async with asyncio.timeout(connect_timeout):
            reader, writer = await connecting
    except TimeoutError:
        raise Unreachable("ConnectTimeout") from None
    except OSError:
        raise Unreachable("ConnectError") from None
    try:
        body = content or b""
        lines = [f"{method} {path} HTTP/1.1", f"host: {host}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines += [f"content-length: {len(body)}", "connection: close", "", ""]
        writer.write("\r\n".join(lines).encode("ascii") + body)
        try:
            async with asyncio.timeout(timeout):
                await _drained(writer)
                return await _read_reply(reader)
        except TimeoutError:
            raise Unreachable("ReadTimeout") from None
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


def _dial(address: str) -> tuple[str, Coroutine[Any, Any, Streams]]:
    """The ``Host`` to name and the connection to open for ``address``."""
    if address.startswith("unix:"):
        path = address.removeprefix("unix:")
        return "localhost", asyncio.open_unix_connection(path, limit=HEAD_LIMIT)
    split = urlsplit(address)
    return split.netloc, asyncio.open_connection(split.hostname, split.port, limit=HEAD_LIMIT)


async def _drained(writer: asyncio.StreamWriter) -> None:
    try:
        await writer.drain()
    except OSError:
        raise Unreachable("WriteError") from None


async def _read_reply(reader: asyncio.StreamReader) -> Reply:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        version, _, rest = status_line.partition(" ")
        status = int(rest[:3])
        if not version.startswith("HTTP/1."):
            raise ValueError(version)
        headers = {}
        for line in filter(None, header_lines):
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return Reply(status, await _chunks(reader))
        if "content-length" in headers:
            return Reply(status, await reader.readexactly(int(headers["content-length"])))
        return Reply(status, await reader.read())
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
        raise Unreachable("RemoteProtocolError") from None
    except OSError:
        raise Unreachable("ReadError") from None


async def _chunks(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:  # trailers, if any, end with the connection
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readexactly(2)
