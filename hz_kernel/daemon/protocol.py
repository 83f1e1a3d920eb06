"""The daemon's wire: protocol version, headers, the discovery file and the frame shapes.

Both ends of the wire import this module and nothing else to agree on a
shape: the daemon's app, the HTTP client, the lifecycle commands and the
feed. Operations themselves live in ``hz_kernel.operations``; this module
only carries what surrounds them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hz_kernel.errors import HzError
from hz_kernel.overview import KernelLoad

#: Bumped whenever a route, a frame or a shape changes incompatibly. A client
#: that speaks another version is refused (``HZD020``) and leaves the daemon alone.
PROTOCOL_VERSION = 2
PROTOCOL_HEADER = "x-hz-protocol"
API_PREFIX = "/v1"
OP_PREFIX = f"{API_PREFIX}/op/"
HEALTH_PATH = f"{API_PREFIX}/health"
EVENTS_PATH = f"{API_PREFIX}/events"
SHUTDOWN_PATH = f"{API_PREFIX}/shutdown"
DRAIN_PATH = f"{API_PREFIX}/drain"
BENCH_FEED_PATH = f"{API_PREFIX}/bench/feed"

#: Names a loopback ``Host`` or ``Origin`` may carry (DNS-rebinding protection).
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})

FeedType = Literal["event", "body", "row"]


class _Shape(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")


class ErrorBody(_Shape):
    """Every refusal on the wire: the ``HzError`` fields plus whether it was the caller's fault."""

    code: str
    message: str
    place: str | None = None
    usage: bool = False


class Discovery(_Shape):
    """``<home>/daemon.json``: how a client finds and authenticates to the running daemon."""

    pid: int
    address: str
    token: str = Field(repr=False)
    protocol: int
    started_at: str
    home: str
    run: str
    supervisor: str | None = None
    """``systemd`` or ``launchd`` when a service manager runs the daemon (restart through it)."""
    unit: str | None = None
    """The systemd unit or launchd label of that service."""


class Health(KernelLoad):
    """``GET /v1/health``: enough to show on a status line, sampled when asked.

    The kernel's load (``KernelLoad``: turns running and queued, attempts,
    the limits, the memory sample and floor, the tick) is the kernel's own
    admission controller's, read at the request.
    """

    protocol: int
    pid: int
    home: str
    address: str
    started_at: str
    uptime_s: float
    heinzels: int
    run: str
    edge: int
    """The feed's last durable position (see ``FeedItem``)."""
    feed_connections: int
    tick_seconds: float | None = None
    ticks: int = 0
    """Ticks finished since the daemon started."""
    tick_age_s: float | None = None
    """Seconds since the last tick finished (or the tick loop started)."""
    tick_error: str | None = None
    """The coded line of the last tick that failed as a whole, until one finishes."""
    healthy: bool = True
    """False when no tick has finished within two intervals: the loop is stuck or gone."""
    generation: str = ""
    """The index generation the feed's positions belong to."""
    draining: bool = False
    """True once a restart asked it to drain: no turn or step starts any more."""
    supervisor: str | None = None


class FeedItem(_Shape):
    """One thing a feed reader is told.

    For a spine event (``type`` "event") ``seq`` is its durable feed
    position: increasing across every heinzel of the home, the same after a
    daemon restart, meaningful within one index ``generation``. A body
    delta or row change is live only; its ``seq`` is the position of the
    last event before it, so resuming from any item's ``seq`` misses no event.
    """

    seq: int
    heinzel: str
    type: FeedType
    turn: str | None = None
    event: dict[str, Any] | None = None
    body: dict[str, Any] | None = None


class Hello(_Shape):
    """The first frame of every feed connection: the index generation and its edge now."""

    protocol: int = PROTOCOL_VERSION
    run: str
    generation: str
    edge: int


ResetReason = Literal["other-generation", "ahead-of-edge", "spine-changed"]


class Reset(_Shape):
    """The feed cannot continue from where the client asked: take a fresh snapshot."""

    reason: ResetReason
    generation: str
    edge: int


class FeedReset(HzError):
    """The feed cannot continue from the reader's position: take a fresh snapshot."""

    def __init__(self, reset: Reset) -> None:
        super().__init__(
            "HZD050",
            f"the feed cannot continue from there ({reset.reason}); take a fresh snapshot",
            f"generation {reset.generation} at position {reset.edge}",
        )
        self.reset = reset


class Overflow(_Shape):
    """The connection fell too far behind and is being closed; reconnect from ``last``."""

    reason: Literal["queue-full"] = "queue-full"
    capacity: int
    last: int


class BenchFeedRequest(_Shape):
    """Synthetic observations for ``bench/feed.py`` (only served with ``HZ_BENCH_FEED=1``)."""

    count: int = Field(ge=1, le=1_000_000)
    rate: float = Field(gt=0, le=1_000_000)


class DrainRequest(_Shape):
    """``POST /v1/drain``: start no turn or step; wait this long for running turns to pause."""

    timeout_s: float = Field(default=60.0, ge=0, le=3600)
    draining: bool = True
    """False takes a drain back (a restart that could not go ahead)."""


class DrainReport(_Shape):
    """What draining found: turns that paused at a step boundary, and those still running."""

    paused: list[str] = []
    still_running: list[str] = []
