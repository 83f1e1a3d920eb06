"""``exchange``: one request over asyncio's streams, read whole, its failures named as httpx
names them (the daemon's line says which)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from hz_kernel.exchange import Unreachable, exchange


@asynccontextmanager
async def serving(answer: bytes | None) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A loopback server that reads one request and writes ``answer`` (None: nothing, ever)."""
    heard: list[bytes] = []
    ended = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heard.append(await reader.readuntil(b"\r\n\r\n"))
        if answer is None:
            await ended.wait()
        writer.write(answer or b"")
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", heard
    finally:
        ended.set()
        server.close()
        await asyncio.sleep(0.01)  # a silent handler ends with the server


async def test_a_chunked_answer_is_read_whole_and_the_request_carries_its_headers() -> None:
    answer = (
        b"HTTP/1.1 409 Conflict\r\ntransfer-encoding: chunked\r\n\r\n"
        b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    )
    async with serving(answer) as (address, heard):
        reply = await exchange(address, "POST", "/v1/op/x", {"authorization": "Bearer t"}, b"{}", 5)
    assert (reply.status_code, reply.content) == (409, b"abcde")
    assert heard[0].startswith(b"POST /v1/op/x HTTP/1.1\r\n")
    assert b"authorization: Bearer t\r\n" in heard[0] and b"content-length: 2\r\n" in heard[0]


async def test_an_answer_by_length_or_by_close() -> None:
    for answer in (
        b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nbody",
        b"HTTP/1.1 200 OK\r\n\r\nbody",
    ):
        async with serving(answer) as (address, _):
            reply = await exchange(address, "GET", "/v1/health", {}, None, 5)
        assert (reply.status_code, reply.content) == (200, b"body")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort", "RemoteProtocolError"),
        (b"", "RemoteProtocolError"),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "RemoteProtocolError"),
        (None, "ReadTimeout"),
    ],
    ids=["cut-short", "closed", "not-http", "silent"],
)
async def test_no_whole_answer_is_unreachable(answer: bytes | None, reason: str) -> None:
    async with serving(answer) as (address, _):
        with pytest.raises(Unreachable) as caught:
            await exchange(address, "GET", "/v1/health", {}, None, 0.5)
    assert caught.value.reason == reason


async def test_nobody_listening_is_a_connect_error() -> None:
    async with serving(b"") as (address, _):
        pass  # closed: its port is free again
    with pytest.raises(Unreachable) as caught:
        await exchange(address, "GET", "/v1/health", {}, None, 5)
    assert caught.value.reason == "ConnectError"
