"""``HttpClient``: the ``KernelClient`` of a running daemon, built from the same table.

``call(op, request)`` posts the request model to ``/v1/op/<name>`` and
parses the response model; a refusal comes back as the ``HzError`` (or
``UsageError``) the kernel raised, with the same code, so a head prints
the same line whether its kernel is embedded or detached. Proxies are
never consulted: loopback traffic and the token stay on the machine.
Requests go out through ``hz_kernel.exchange``; httpx is loaded for the
feed alone (``subscribe``), so a command that only calls never imports it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol, Self

from pydantic import TypeAdapter, ValidationError

from hz_kernel.daemon.protocol import (
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
from hz_kernel.errors import HzError, UsageError
from hz_kernel.exchange import CONNECT_TIMEOUT_S, Reply, Unreachable, exchange
from hz_kernel.operations import Operation, Req, Resp
from hz_kernel.overview import KernelLoad, KernelStatus

if TYPE_CHECKING:
    import httpx

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
        self.timeout = timeout
        self._headers = {
            "authorization": f"Bearer {discovery.token}",
            PROTOCOL_HEADER: str(protocol),
        }
        self._feed: httpx.AsyncClient | None = None

    def _feed_client(self) -> httpx.AsyncClient:
        """The feed's HTTP client, made (and httpx imported) on the first ``subscribe``."""
        if self._feed is not None:
            return self._feed
        # httpx imports its own command line (rich, pygments, click: ~40 ms) unless that
        # import fails; hz never runs it.
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
        import httpx

        transport: httpx.AsyncHTTPTransport | None = None
        base_url = self.discovery.address
        if base_url.startswith("unix:"):
            transport = httpx.AsyncHTTPTransport(uds=base_url.removeprefix("unix:"), verify=False)
            base_url = "http://localhost"
        # Plain HTTP on loopback never negotiates TLS: skip loading a CA bundle (~70 ms).
        self._feed = httpx.AsyncClient(
            base_url=base_url,
            transport=transport,
            trust_env=False,
            verify=False,
            timeout=httpx.Timeout(self.timeout, connect=CONNECT_TIMEOUT_S),
            headers=self._headers,
        )
        return self._feed

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._feed is not None:
            await self._feed.aclose()

    # -- requests --------------------------------------------------------------------------

    def _unreachable(self, reason: str) -> HzError:
        return HzError("HZD040", f"the daemon is unreachable ({reason})", self.discovery.address)

    async def _send(
        self, method: str, path: str, *, content: bytes | None = None, timeout: float | None = None
    ) -> Reply:
        # As httpx took them: the client's timeouts, or ``timeout`` for every phase.
        limit, connect = (self.timeout, CONNECT_TIMEOUT_S) if timeout is None else (timeout,) * 2
        address = self.discovery.address
        try:
            response = await exchange(
                address, method, path, self._headers, content, limit, connect_timeout=connect
            )
        except Unreachable as exc:
            raise self._unreachable(exc.reason) from None
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
        feed = self._feed_client()  # first: it keeps httpx's command line unimported
        import httpx
        from httpx_sse import aconnect_sse

        position = after
        if after is not None:
            generation = generation or self.feed_generation
        timeout = httpx.Timeout(CONNECT_TIMEOUT_S, read=FEED_READ_TIMEOUT_S)
        while True:
            params = {} if position is None else {"after": str(position)}
            if generation is not None and position is not None:
                params["generation"] = generation
            overflowed = False
            greeted = False
            try:
                async with aconnect_sse(
                    feed, "GET", EVENTS_PATH, params=params, timeout=timeout
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
                    raise self._unreachable(type(exc).__name__) from None
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


class Answer(Protocol):
    """A whole answer to a request, from ``exchange`` or (the feed's) httpx."""

    @property
    def status_code(self) -> int: ...

    @property
    def content(self) -> bytes: ...


def refusal(response: Answer) -> HzError:
    """The ``HzError`` a refused request carries, rebuilt with its code and kind."""
    body: ErrorBody | None = None
    with contextlib.suppress(ValidationError):
        body = ErrorBody.model_validate_json(response.content)
    if body is None:
        return HzError("HZD013", f"the daemon answered HTTP {response.status_code}")
    kind = UsageError if body.usage else HzError
    return kind(body.code, body.message, body.place)
