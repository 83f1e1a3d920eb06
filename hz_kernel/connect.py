"""How a head reaches the kernel of a home: the daemon if one serves it, else embedded.

``connect`` never starts a second writer next to a live daemon: a daemon
whose process and kernel lock are alive but that fails its health check
is reported unreachable (``HZD040``), and one that speaks another protocol
is refused (``HZD020``) and left alone. Only when no daemon runs (no
discovery file, or a stale one) does the head get an embedded kernel.

The HTTP client is imported where a daemon is actually talked to, so an
embedded cockpit never loads the HTTP stack.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from hz_kernel.client import DeferredClient, KernelClient, LocalClient
from hz_kernel.daemon.discovery import HEALTH_TIMEOUT_S, check_health, inspect
from hz_kernel.daemon.protocol import FeedItem
from hz_kernel.errors import HzError
from hz_kernel.home import Home

#: Event kinds after which a turn does no more work: it ended, or it parked itself to wait.
TURN_ENDS = frozenset({"turn.finished", "turn.skipped", "turn.waiting"})


async def connect(
    home: Home, *, health_timeout: float = HEALTH_TIMEOUT_S, defer_kernel: bool = False
) -> KernelClient:
    """A client of the home's running daemon, or of a kernel embedded in this process.

    ``defer_kernel`` (the cockpit) embeds a ``DeferredClient``: the kernel is
    opened when first needed, and a listing before that comes from the index.
    """
    found = inspect(home)
    if found.state == "running" and found.discovery is not None:
        from hz_kernel.http_client import HttpClient

        client = HttpClient(found.discovery)
        try:
            await check_health(client, health_timeout)
        except BaseException:
            await client.close()
            raise
        return client
    if defer_kernel:
        return DeferredClient(home, long_lived=True)
    return await LocalClient.open(home)


async def restart_daemon(client: KernelClient, home: Home) -> KernelClient:
    """Restart the daemon behind ``client`` (like ``hz daemon restart``); a client of the new one.

    The restart drains the daemon first, which can take a while. ``client``
    is left open for the caller to close once it has switched to the new
    one: a head's background reads must never meet a closed client. An
    embedded kernel has no daemon to restart (``HZU064``): it lives and ends
    with its cockpit.
    """
    from hz_kernel.http_client import HttpClient

    if not isinstance(client, HttpClient):
        raise HzError("HZU064", "an embedded kernel is not a daemon; it restarts with the cockpit")
    from hz_kernel.daemon import lifecycle  # starting a daemon needs the kernel's modules

    await lifecycle.restart(home)
    return await connect(home)


async def feed_edge(client: KernelClient) -> int:
    """The feed's current last seq: take it before starting work you mean to ``follow``."""
    if isinstance(client, LocalClient):
        return client.hub.edge
    from hz_kernel.http_client import HttpClient

    if isinstance(client, HttpClient):
        health = await client.health()
        client.feed_run = health.run
        return health.edge
    raise TypeError(f"no feed edge for {type(client).__name__}")


async def follow(
    client: KernelClient, heinzel: str, turn: str | None = None, *, after: int | None = None
) -> AsyncIterator[FeedItem]:
    """The feed items of one turn until it ends or waits (``hz heinzel wake --follow``).

    ``turn`` None follows the first turn of ``heinzel`` that starts after
    ``after`` (a wake that answers before its turn has an id). Pass as
    ``after`` the ``feed_edge`` taken before the turn was asked for, so
    nothing of a quick turn is missed.
    """
    async for item in client.subscribe(after):
        if item.heinzel != heinzel:
            continue
        if turn is None and item.event is not None and item.event["kind"] == "turn.started":
            turn = item.turn
        if turn is None or item.turn != turn:
            continue
        yield item
        if item.type == "event" and item.event is not None and item.event["kind"] in TURN_ENDS:
            return
