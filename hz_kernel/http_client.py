"""``HttpClient``: the ``KernelClient`` of a running daemon, built from the same table.

``call(op, request)`` posts the request model to ``/v1/op/<name>`` and
parses the response model; a refusal comes back as the ``HzError`` (or
``UsageError``) the kernel raised, with the same code, so a head prints
the same line whether its kernel is embedded or detached. Proxies are
never consulted (``trust_env=False``): loopback traffic and the token stay
on the machine.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Self

# httpx imports its own command line (rich, pygments, click: ~40 ms of every head's start)
# unless that import fails; hz never runs it.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

import httpx  # noqa: E402
from httpx_sse import aconnect_sse  # noqa: E402
from pydantic import TypeAdapter, ValidationError  # noqa: E402

from hz_kernel.daemon.protocol import (  # noqa: E402
    DRAIN_PATH,
    EVENTS_PATH,
    HEALTH_PATH,
    OP_PREFIX,
    PROTOCOL_HEADER,
    PROTOCOL_VERSION,
    SHUTDOWN_PATH,
    Discovery,
    DrainReport,
    DrainRequest,
    ErrorBody,
    FeedItem,
    FeedReset,
    Health,
    Hello,
    Reset,
)
from hz_kernel.errors import HzError, UsageError  # noqa: E402
from hz_kernel.operations import Operation, Req, Resp  # noqa: E402
from hz_kernel.overview import KernelLoad, KernelStatus  # noqa: E402

CALL_TIMEOUT_S = 300.0
#: Longer than the largest heartbeat interval the daemon accepts, so a live feed never times out.
FEED_READ_TIMEOUT_S = 90.0
FEED_ITEMS = TypeAdapter(list[FeedItem])


class HttpClient:
    """A head's connection to a daemon named by its discovery file."""

    remote = False
    """Set by ``hz_kernel.remote.attach``: the daemon's home is not on this machine."""

    def __init__(
        self,
        discovery: Discovery,
        *,
        timeout: float = CALL_TIMEOUT_S,
        protocol: int = PROTOCOL_VERSION,
    ) -> None:
        self.discovery = discovery
        self.where = f"daemon (pid {discovery.pid}) at {discovery.address}"
        self.feed_generation: str | None = None
        """The index generation of the feed positions this client has seen."""
        self.feed_position: int | None = None
        """Where this client's ``subscribe`` got to (at least its hello's edge)."""
        transport: httpx.AsyncHTTPTransport | None = None
        base_url = discovery.address
        if discovery.address.startswith("unix:"):
            transport = httpx.AsyncHTTPTransport(
                uds=discovery.address.removeprefix("unix:"), verify=False
            )
            base_url = "http://localhost"
        # Plain HTTP on loopback never negotiates TLS: skip loading a CA bundle (~70 ms).
        self._http = httpx.AsyncClient(
            base_url=base_url,
            transport=transport,
            trust_env=False,
            verify=False,
            timeout=httpx.Timeout(timeout, connect=5.0),
            headers={
                "authorization": f"Bearer {discovery.token}",
                PROTOCOL_HEADER: str(protocol),
            },
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    # -- requests --------------------------------------------------------------------------

    def _unreachable(self, exc: Exception) -> HzError:
        reason = type(exc).__name__
        return HzError("HZD040", f"the daemon is unreachable ({reason})", self.discovery.address)

    async def _send(
        self, method: str, path: str, *, content: bytes | None = None, timeout: float | None = None
    ) -> httpx.Response:
        limit = httpx.USE_CLIENT_DEFAULT if timeout is None else timeout
        try:
            response = await self._http.request(method, path, content=content, timeout=limit)
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None
        if response.status_code >= 400:
            raise refusal(response)
        return response

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp:
        response = await self._send(
            "POST", OP_PREFIX + operation.name, content=request.model_dump_json().encode()
        )
        return operation.response.model_validate_json(response.content)

    async def health(self, timeout: float | None = None) -> Health:
        response = await self._send("GET", HEALTH_PATH, timeout=timeout)
        return Health.model_validate_json(response.content)

    async def status(self) -> KernelStatus:
        health = await self.health()
        return KernelStatus(
            **{name: getattr(health, name) for name in KernelLoad.model_fields},
            embedded=False,
            pid=health.pid,
            protocol=health.protocol,
            address=health.address,
            started_at=health.started_at,
            uptime_s=health.uptime_s,
            heinzels=health.heinzels,
        )

    async def warm(self) -> None:
        return None

    async def shutdown(self) -> None:
        """Ask the daemon to exit (it answers first, then stops)."""
        await self._send("POST", SHUTDOWN_PATH)

    async def drain(self, timeout_s: float, *, draining: bool = True) -> DrainReport:
        """Ask the daemon to start nothing new and let running turns pause (before a restart)."""
        order = DrainRequest(timeout_s=timeout_s, draining=draining).model_dump_json().encode()
        response = await self._send("POST", DRAIN_PATH, content=order, timeout=timeout_s + 10)
        return DrainReport.model_validate_json(response.content)

    # -- the feed --------------------------------------------------------------------------

    async def subscribe(
        self, after: int | None = None, *, generation: str | None = None
    ) -> AsyncIterator[FeedItem]:
        """Replay from position ``after`` (None: from now), then follow.

        ``generation`` (default: the one this client last saw) is the index
        generation ``after`` belongs to; pass both from another client to
        pick up where it stopped, on another daemon of the same home. An
        overflow resumes transparently. Raises ``FeedReset`` when the daemon
        cannot serve the position (take a fresh snapshot, then subscribe
        from now), ``FeedLost`` (``HZD090``) when the connection drops
        mid-feed. Ends when the daemon closes the feed (it is stopping).
        After either, ``feed_position`` and ``feed_generation`` say where
        to resume.
        """
        position = after
        if after is not None:
            generation = generation or self.feed_generation
        timeout = httpx.Timeout(5.0, read=FEED_READ_TIMEOUT_S)
        while True:
            params = {} if position is None else {"after": str(position)}
            if generation is not None and position is not None:
                params["generation"] = generation
            overflowed = False
            greeted = False
            try:
                async with aconnect_sse(
                    self._http, "GET", EVENTS_PATH, params=params, timeout=timeout
                ) as source:
                    if source.response.status_code >= 400:
                        await source.response.aread()
                        raise refusal(source.response)
                    async for sse in source.aiter_sse():
                        if sse.event == "items":
                            for item in FEED_ITEMS.validate_json(sse.data):
                                position = self.feed_position = item.seq
                                yield item
                        elif sse.event == "hello":
                            hello = Hello.model_validate_json(sse.data)
                            greeted = True
                            generation = self.feed_generation = hello.generation
                            if position is None:
                                position = hello.edge
                            self.feed_position = position
                        elif sse.event == "reset":
                            raise FeedReset(Reset.model_validate_json(sse.data))
                        elif sse.event == "overflow":
                            overflowed = True
            except httpx.TransportError as exc:
                if not greeted:
                    raise self._unreachable(exc) from None
                raise FeedLost(self.discovery.address, position, generation) from None
            if not overflowed:
                return


class FeedLost(HzError):
    """The feed's connection dropped mid-stream (the daemon died or restarted).

    ``position`` and ``generation`` are where to resume, with any client of
    the home's daemon, old or new.
    """

    def __init__(self, address: str, position: int | None, generation: str | None) -> None:
        super().__init__(
            "HZD090",
            f"the feed connection dropped at position {position}; resubscribe from there",
            address,
        )
        self.position = position
        self.generation = generation


def refusal(response: httpx.Response) -> HzError:
    """The ``HzError`` a refused request carries, rebuilt with its code and kind."""
    body: ErrorBody | None = None
    with contextlib.suppress(ValidationError):
        body = ErrorBody.model_validate_json(response.content)
    if body is None:
        return HzError("HZD013", f"the daemon answered HTTP {response.status_code}")
    kind = UsageError if body.usage else HzError
    return kind(body.code, body.message, body.place)
