"""The daemon's HTTP head: routes generated from the operations table, the feed, health.

``POST /v1/op/<name>`` serves every operation in ``OPERATIONS`` through the
same ``LocalClient`` an embedded head uses, looked up per request, so an
operation added to the table is on the wire with no change here. Every
route, the feed and health included, sits behind ``Guard``: a loopback
``Host`` (any port: a port forward names its own), a loopback ``Origin`` if any, the bearer token
(constant-time) and our protocol version, in that order. ``/mcp`` is the MCP
head (``hz_kernel.daemon.mcp_endpoint``): the same guard, less our protocol
header, which an MCP client does not send.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import anyio
import uvicorn
from pydantic import BaseModel, ValidationError
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from hz_kernel.client import LocalClient
from hz_kernel.commands.tick import TickPulse
from hz_kernel.daemon.connections import ACCEPT_BATCH, ConnectionLimits, Warden, protocol_for
from hz_kernel.daemon.feed import HEARTBEAT_COMMENT, FeedHub, Subscription, frames
from hz_kernel.daemon.mcp_endpoint import MCP_METHODS, MCP_PATH, McpEndpoint
from hz_kernel.daemon.protocol import (
    BENCH_FEED_PATH,
    DRAIN_PATH,
    EVENTS_PATH,
    HEALTH_PATH,
    LOOPBACK_NAMES,
    OP_PREFIX,
    PROTOCOL_HEADER,
    PROTOCOL_VERSION,
    SHUTDOWN_PATH,
    BenchFeedRequest,
    Discovery,
    DrainReport,
    DrainRequest,
    ErrorBody,
    Health,
)
from hz_kernel.errors import HzError, UsageError, field_problem
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.observe import Observation
from hz_kernel.operations import OPERATIONS

log = logging.getLogger("hz.daemon")

MAX_BODY_BYTES = 1 << 20
DRAIN_POLL_S = 0.05
_BUSY_CODES = frozenset({"HZS010"})
#: Kernel errors that refuse what the request asked (a malformed request id, an id reused
#: for other content): the client's to fix, never a server failure.
_REFUSED_INPUT_CODES = {"HZS030": 400, "HZS034": 409}
#: Documents refused for what the user's file is (missing folder, a directory, FIFO or link,
#: binary, too large, a damaged or missing section, changing under hz): the request was
#: fine, the file is in a state that refuses it — a conflict, never a server failure.
_REFUSED_BY_USER_FILES = dict.fromkeys(
    ("HZE040", "HZE041", "HZE042", "HZE043", "HZE044", "HZE047", "HZE048", "HZE049"), 409
)


@dataclass
class DaemonState:
    """Everything the routes need; built by ``lifecycle.serve``."""

    home: Home
    kernel: Kernel
    client: LocalClient
    hub: FeedHub
    discovery: Discovery
    allowed_hosts: frozenset[str]
    heartbeat_s: float
    bench_feed: bool = False
    pulse: TickPulse | None = None
    started: float = field(default_factory=time.monotonic)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    mcp: McpEndpoint | None = None

    def request_shutdown(self) -> None:
        """End every feed connection and let the server wind down."""
        self.hub.close()
        self.stopping.set()


def error_status(error: HzError) -> int:
    """The stable HTTP status of a kernel error."""
    if error.code == "HZU010":
        return 404
    if isinstance(error, UsageError):
        return 400
    if error.code in _BUSY_CODES:
        return 409
    return (_REFUSED_INPUT_CODES | _REFUSED_BY_USER_FILES).get(error.code, 500)


def json_response(model: BaseModel, status: int = 200) -> Response:
    return Response(model.model_dump_json(), status_code=status, media_type="application/json")


def error_response(error: HzError, status: int | None = None) -> Response:
    body = ErrorBody(
        code=error.code,
        message=error.message,
        place=error.place,
        usage=isinstance(error, UsageError),
    )
    return json_response(body, status or error_status(error))


def _invalid(exc: ValidationError) -> Response:
    """HZD010 for a request body the route's model refuses, naming the field (``timeout_s``)."""
    first = exc.errors()[0]
    place = ".".join(str(part) for part in first["loc"]) or None
    return error_response(HzError("HZD010", field_problem(first), place), 422)


# -- the guard -------------------------------------------------------------------------------


class Guard:
    """Refuses any request that is not ours before a route sees it."""

    def __init__(self, app: ASGIApp, state: DaemonState) -> None:
        self.app = app
        self.state = state
        self._token = f"Bearer {state.discovery.token}".encode()
        self._protocol = str(PROTOCOL_VERSION).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        refusal = self._refusal(dict(scope["headers"]), mcp=scope["path"] == MCP_PATH)
        if refusal is not None:
            error, status = refusal
            await error_response(error, status)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(
        self, headers: dict[bytes, bytes], *, mcp: bool = False
    ) -> tuple[HzError, int] | None:
        """Why a request is refused, if it is. ``mcp``: a request to ``/mcp``, whose MCP
        client speaks MCP's protocol, not ours, and sends no protocol header."""
        host = headers.get(b"host", b"").decode("latin-1").lower()
        if host not in self.state.allowed_hosts and not _loopback_host(host):
            return HzError("HZD031", "requests must name this daemon's loopback address", host), 403
        origin = headers.get(b"origin")
        if origin is not None and not _loopback_origin(origin.decode("latin-1")):
            refused = origin.decode("latin-1")[:80]
            return HzError("HZD032", "cross-origin requests are refused", refused), 403
        token = headers.get(b"authorization", b"")
        if not hmac.compare_digest(token, self._token):
            why = "missing" if not token else "wrong"
            return HzError("HZD030", f"{why} bearer token (see daemon.json)"), 401
        protocol = headers.get(PROTOCOL_HEADER.encode())
        if protocol is None and mcp:
            return None
        if protocol is None:
            return (
                HzError(
                    "HZD136",
                    f"the request has no {PROTOCOL_HEADER} header; this daemon speaks protocol "
                    f"{PROTOCOL_VERSION} (send {PROTOCOL_HEADER}: {PROTOCOL_VERSION})",
                    PROTOCOL_HEADER,
                ),
                400,
            )
        if protocol != self._protocol:
            theirs = protocol.decode("latin-1")[:40] or "none"
            return (
                HzError(
                    "HZD020",
                    f"this daemon speaks protocol {PROTOCOL_VERSION}, the client {theirs}; "
                    "restart the daemon deliberately once its work has settled",
                ),
                400,
            )
        return None


def _loopback_host(host: str) -> bool:
    """A ``Host`` naming a loopback address with any port: a forward (``ssh -L``) picks its own.

    A DNS-rebinding page still names its own host, never a loopback one.
    """
    if "@" in host:
        return False
    try:
        split = urlsplit(f"//{host}")
        split.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        return False
    return split.hostname in LOOPBACK_NAMES


def _loopback_origin(origin: str) -> bool:
    try:
        hostname = urlsplit(origin).hostname
    except ValueError:
        return False
    return hostname in LOOPBACK_NAMES


# -- the feed --------------------------------------------------------------------------------


#: A feed position is at most this many ASCII digits (int64 has 19): anything else is HZD014.
MAX_POSITION_DIGITS = 20


def _feed_position(request: Request) -> tuple[int | None, str | None]:
    raw = request.query_params.get("after") or request.headers.get("last-event-id")
    generation = request.query_params.get("generation") or None
    if raw is None or raw == "":
        return None, generation
    if not (raw.isascii() and raw.isdigit() and len(raw) <= MAX_POSITION_DIGITS):
        raise UsageError("HZD014", "the feed position must be a sequence number", raw[:40])
    return int(raw), generation


def feed_response(subscription: Subscription, heartbeat_s: float) -> Response:
    """One subscription as SSE (sse-starlette: disconnects, heartbeats, back-pressure)."""
    return EventSourceResponse(
        frames(subscription),
        ping=heartbeat_s,
        sep="\n",
        ping_message_factory=lambda: ServerSentEvent(comment=HEARTBEAT_COMMENT, sep="\n"),
    )


# -- the app ---------------------------------------------------------------------------------


def build_app(state: DaemonState) -> ASGIApp:
    """The guarded Starlette app of one daemon."""

    async def operation(request: Request) -> Response:
        name = request.path_params["name"]
        op = OPERATIONS.get(name)
        if op is None:
            return error_response(HzError("HZD011", "no such operation", name[:80]), 404)
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    error = HzError("HZD012", f"request body over {MAX_BODY_BYTES} bytes", name)
                    return error_response(error, 413)
        except ClientDisconnect:
            # None of the body came: the client withdrew the call (a cockpit drops a read it
            # no longer needs), not worth a line. A body cut short is.
            level = logging.INFO if body else logging.DEBUG
            log.log(
                level,
                "%s: the client went away after %d bytes of its request body",
                name,
                len(body),
            )
            return Response(status_code=400)
        try:
            parsed = op.request.model_validate_json(bytes(body) or b"{}")
        except ValidationError as exc:
            first = exc.errors()[0]
            place = ".".join(str(part) for part in first["loc"]) or None
            return error_response(HzError("HZD010", field_problem(first), place), 422)
        try:
            answer = await state.client.call(op, parsed)
        except HzError as exc:
            return error_response(exc)
        except Exception:
            log.exception("operation %s failed", name)
            return error_response(HzError("HZD013", "the daemon failed on this request", name))
        return json_response(answer)

    async def health(request: Request) -> Response:
        return json_response(describe(state))

    async def events(request: Request) -> Response:
        try:
            after, generation = _feed_position(request)
        except HzError as exc:
            return error_response(exc)
        return feed_response(state.hub.subscribe(after, generation), state.heartbeat_s)

    async def shutdown(request: Request) -> Response:
        log.info("shutdown requested over the wire")
        return Response(
            b'{"ok":true}',
            status_code=202,
            media_type="application/json",
            background=BackgroundTask(state.request_shutdown),
        )

    async def drain(request: Request) -> Response:
        try:
            order = DrainRequest.model_validate_json(await request.body() or b"{}")
        except ValidationError as exc:
            return _invalid(exc)
        if not order.draining:
            state.kernel.draining = False
            log.info("draining taken back")
            return json_response(DrainReport())
        return json_response(await drain_turns(state.kernel, order.timeout_s))

    async def bench_feed(request: Request) -> Response:
        try:
            order = BenchFeedRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            return _invalid(exc)
        started = time.perf_counter()
        await emit_synthetic(state.kernel, order)
        elapsed = time.perf_counter() - started
        return Response(
            f'{{"emitted":{order.count},"seconds":{elapsed:.4f}}}', media_type="application/json"
        )

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        why = "no such route" if status == 404 else f"{request.method[:10]} is not served here"
        return error_response(HzError("HZD011", why, request.url.path[:80]), status)

    routes = [
        Route(OP_PREFIX + "{name:str}", operation, methods=["POST"]),
        Route(HEALTH_PATH, health, methods=["GET"]),
        Route(EVENTS_PATH, events, methods=["GET"]),
        Route(SHUTDOWN_PATH, shutdown, methods=["POST"]),
        Route(DRAIN_PATH, drain, methods=["POST"]),
    ]
    if state.bench_feed:
        routes.append(Route(BENCH_FEED_PATH, bench_feed, methods=["POST"]))
    state.mcp = McpEndpoint(state.client, state.stopping)
    routes.append(Route(MCP_PATH, state.mcp, methods=list(MCP_METHODS)))
    app = Starlette(routes=routes, exception_handlers={HTTPException: not_found})
    return Guard(app, state)


def describe(state: DaemonState) -> Health:
    """A fresh health sample (memory and the tick's age are read now, not at start).

    Unhealthy when no tick has finished within two intervals: the tick loop
    is stuck in a tick or has ended, while the daemon still answers.
    """
    pulse = state.pulse
    return Health(
        **dict(state.kernel.load()),
        protocol=PROTOCOL_VERSION,
        pid=os.getpid(),
        home=str(state.home.root),
        address=state.discovery.address,
        started_at=state.discovery.started_at,
        uptime_s=round(time.monotonic() - state.started, 3),
        heinzels=len(state.home.heinzel_ids()),
        run=state.hub.run,
        edge=state.hub.edge,
        generation=state.hub.generation,
        feed_connections=state.hub.subscribers,
        tick_seconds=pulse.interval if pulse else None,
        ticks=pulse.ticks if pulse else 0,
        tick_age_s=round(pulse.age, 3) if pulse else None,
        tick_error=pulse.error if pulse else None,
        healthy=not pulse.stale if pulse else True,
        draining=state.kernel.draining,
        supervisor=state.discovery.supervisor,
    )


def _turns(count: int) -> str:
    return "1 turn" if count == 1 else f"{count} turns"


async def drain_turns(kernel: Kernel, timeout_s: float) -> DrainReport:
    """Start no turn or step from now on; wait up to ``timeout_s`` for running turns to pause.

    A paused turn stays open at its last step boundary, and the next start
    resumes it. Draining lasts until the daemon stops: it precedes a restart.
    """
    kernel.draining = True
    before = kernel.running_turns()
    log.info("draining: %s running", _turns(len(before)))
    deadline = time.monotonic() + timeout_s
    while kernel.running_turns() and time.monotonic() < deadline:
        await asyncio.sleep(DRAIN_POLL_S)
    left = kernel.running_turns()
    paused = sorted(turn for heinzel, turn in before.items() if left.get(heinzel) != turn)
    if left:
        log.warning("draining: %s still running after %gs", _turns(len(left)), timeout_s)
    return DrainReport(paused=paused, still_running=sorted(left.values()))


async def emit_synthetic(kernel: Kernel, order: BenchFeedRequest) -> None:
    """The bench knob: observations through the kernel's observers at a steady rate.

    Each carries its emission time (``time.time_ns``) so a reader can
    measure append-to-receipt latency.
    """
    started = time.perf_counter()
    emitted = 0
    while emitted < order.count:
        due = min(order.count, int((time.perf_counter() - started) * order.rate) + 1)
        while emitted < due:
            emitted += 1
            kernel.observe(
                Observation(heinzel="bench", body={"n": emitted, "t_ns": time.time_ns()})
            )
        await asyncio.sleep(0.001)


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: ``lifecycle.serve`` installs ours on the loop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve(state: DaemonState, sock: socket.socket) -> None:
    """Serve the app on a listening socket until ``state.request_shutdown()``."""
    limits = ConnectionLimits.at_start(state.home.settings.daemon)
    log.info(limits.describe())
    server = _Server(
        uvicorn.Config(
            build_app(state),
            http=protocol_for(Warden(limits, state.discovery.token)),
            timeout_keep_alive=limits.idle_timeout_s,
            backlog=ACCEPT_BATCH,
            lifespan="off",
            ws="none",
            log_config=None,
            access_log=False,
            proxy_headers=False,
            server_header=False,
            timeout_graceful_shutdown=5,
        )
    )

    async def stop_when_asked() -> None:
        await state.stopping.wait()
        server.should_exit = True

    # The first feed response would load anyio's asyncio backend (sse-starlette's events):
    # load it before serving, so the readers that come back after a restart do not wait.
    await anyio.sleep(0)
    watcher = asyncio.ensure_future(stop_when_asked())
    try:
        await server.serve(sockets=[sock])
    finally:
        watcher.cancel()
        if state.mcp is not None:
            await state.mcp.close()
