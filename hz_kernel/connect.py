"""How a head reaches the kernel of a home: the daemon if one serves it, else embedded.

``connect`` never starts a second writer next to a live daemon: a daemon
whose process and kernel lock are alive but that fails its health check
is reported unreachable (``HZD040``), and one that speaks another protocol
is refused (``HZD020``) and left alone. Only when no daemon runs (no
discovery file, or a stale one) does the head get an embedded kernel, or,
with ``start=True`` (``hz`` and the commands that change state), a daemon
it starts. Nothing starts one under ``--embedded``, ``HZ_EMBEDDED=1`` or
``[daemon] autostart = false`` (``may_start``), nor while another process
runs the home's kernel (an ``hz --embedded`` cockpit, ``hz tick``): that
process holds ``kernel.lock``, and the head embeds a one-shot kernel whose
writes to a spine it holds go through the inbox (``hz_kernel.held``).

The HTTP client is imported where a daemon is actually talked to, so an
embedded cockpit never loads the HTTP stack.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from hz_kernel.client import DeferredClient, KernelClient, LocalClient
from hz_kernel.daemon.discovery import (
    HEALTH_TIMEOUT_S,
    KernelBusy,
    KernelLock,
    check_health,
    inspect,
    read_discovery,
)
from hz_kernel.daemon.protocol import Discovery, FeedItem
from hz_kernel.errors import HzError
from hz_kernel.held import QueueingClient
from hz_kernel.home import Home

if TYPE_CHECKING:
    from hz_kernel.daemon.lifecycle import DaemonReport
    from hz_kernel.http_client import HttpClient
    from hz_kernel.kernel import Kernel

#: Set to 1 to keep ``hz`` and the CLI from starting a daemon (the test suite does).
EMBEDDED_ENV = "HZ_EMBEDDED"

#: Event kinds after which a turn does no more work: it ended, or it parked itself to wait.
TURN_ENDS = frozenset({"turn.finished", "turn.skipped", "turn.waiting"})


def may_start(home: Home, *, embedded: bool = False) -> bool:
    """Whether a head may start the home's daemon: not under ``--embedded`` (``embedded``),
    ``HZ_EMBEDDED=1`` or ``[daemon] autostart = false``."""
    if embedded or os.environ.get(EMBEDDED_ENV, "").strip().lower() in ("1", "true", "yes"):
        return False
    return home.settings.daemon.autostart


async def connect(
    home: Home,
    *,
    health_timeout: float = HEALTH_TIMEOUT_S,
    defer_kernel: bool = False,
    start: bool = False,
    queue_held: bool = False,
    index_first: bool = False,
) -> KernelClient:
    """A client of the home's daemon, or of a kernel embedded in this process.

    ``start`` starts the daemon when none runs (the startup lock makes racing
    heads end with one); its client's ``where`` then says whether it was
    ``started here`` (this process started it) or ``adopted``. ``defer_kernel``
    (the cockpit) embeds a ``DeferredClient`` that holds ``kernel.lock`` while it lives, so no
    daemon starts beside it: the kernel is opened when first needed, and a
    listing before that comes from the index. ``queue_held`` (the CLI)
    embeds a ``QueueingClient``: a command on a spine another process holds
    is queued in the heinzel's inbox (``hz_kernel.held``). ``index_first``
    (``hz heinzel list``) embeds a one-shot ``DeferredClient``: the listing
    comes from the index when it has seen every spine as it is now, and
    the kernel (seconds of imports) is opened only when it has not.
    """
    found = inspect(home)
    if found.state == "running" and found.discovery is not None:
        return await _attach(found.discovery, health_timeout, "adopted" if start else None)
    if start:
        from hz_kernel.daemon import lifecycle  # starting a daemon needs the kernel's modules

        try:
            report = await lifecycle.start(home)
        except KernelBusy:
            pass  # an embedded kernel runs the home; embed beside it (the spines' locks arbitrate)
        else:
            return await _attach_started(home, report, health_timeout)
    if defer_kernel:
        return DeferredClient(home, long_lived=True, kernel_lock=_try_kernel_lock(home))
    if index_first:
        return DeferredClient(home)
    return await (QueueingClient if queue_held else LocalClient).open(home)


async def _attach(discovery: Discovery, health_timeout: float, how: str | None) -> HttpClient:
    from hz_kernel.http_client import HttpClient

    client = HttpClient(discovery)
    try:
        await check_health(client, health_timeout)
    except BaseException:
        await client.close()
        raise
    if how is not None:
        client.where = f"{client.where} · {how}"
    return client


async def _attach_started(home: Home, report: DaemonReport, health_timeout: float) -> HttpClient:
    discovery = read_discovery(home)
    if discovery is None or discovery.pid != report.pid:
        raise HzError("HZD100", "the daemon started but its discovery file is gone", str(home.root))
    return await _attach(discovery, health_timeout, "adopted" if report.adopted else "started here")


def _try_kernel_lock(home: Home) -> KernelLock | None:
    """``kernel.lock`` if free: whoever holds it runs (and ticks) the home's kernel."""
    try:
        return KernelLock(home).acquire(wait=0)
    except KernelBusy:
        return None


async def connect_ticker(home: Home) -> LocalClient:
    """``hz tick``'s embedded kernel, holding ``kernel.lock`` while it ticks when it can.

    Beside a live daemon it refuses (``HZD101``): the daemon ticks the home
    already, and a second ticker would race it. Holding the lock keeps a
    daemon from starting while this tick runs; an embedded cockpit that
    holds it already ticks too, as before (the spines' locks keep the two
    apart).
    """
    lock = _try_kernel_lock(home)
    found = inspect(home) if lock is None else None  # a daemon holds the lock all its life
    if found is not None and found.state == "running" and found.discovery is not None:
        raise HzError(
            "HZD101",
            f"the daemon (pid {found.discovery.pid}) serves this home and already ticks it; "
            "a second ticker would race it (see hz daemon status; hz daemon stop to tick here)",
            str(home.root),
        )
    return await LocalClient.open(home, kernel_lock=lock)


def drain(client: KernelClient) -> None:
    """Have the embedded kernel start no more turns or steps, ahead of its hand-over.

    Its running turns stop at their next step boundary, or where they are
    when it closes; either way open at a checkpoint the next kernel resumes.
    A think step cut then is asked again there (``engine_handed_over``):
    its answer had no effect yet.
    """
    kernel = _embedded_kernel(client)
    if kernel is not None:
        kernel.draining = True


async def hand_off(client: KernelClient, home: Home) -> DaemonReport:
    """Close the embedded kernel behind ``client`` and start the home's daemon in its place.

    The running turns are cut at once (``drain``, then closing cancels them),
    never waited for: the daemon starts now, and its first tick resumes every
    turn left open. Closing lets go of their spines and of ``kernel.lock``.
    """
    drain(client)
    await client.close()
    from hz_kernel.daemon import lifecycle  # starting a daemon needs the kernel's modules

    return await lifecycle.start(home)


def running_names(client: KernelClient) -> list[str]:
    """The names of the heinzels whose turns the embedded kernel behind ``client`` runs."""
    kernel = _embedded_kernel(client)
    if kernel is None:
        return []
    held = kernel.sessions
    return sorted(
        str(held[h].projection.heinzel["name"]) if h in held else h for h in kernel.running_turns()
    )


def turns_to_cut(client: KernelClient) -> int:
    """Turns an embedded kernel behind ``client`` runs now (0 for a daemon's client)."""
    kernel = _embedded_kernel(client)
    return kernel.running_count() if kernel is not None else 0


def _embedded_kernel(client: KernelClient) -> Kernel | None:
    """The open kernel behind an embedded client; None for a daemon's (or one not open yet)."""
    if isinstance(client, DeferredClient):
        try:
            return client.kernel
        except RuntimeError:  # not open (yet, or any more): it runs no turn
            return None
    if isinstance(client, LocalClient):
        return client.kernel
    return None


async def restart_daemon(client: KernelClient, home: Home) -> KernelClient:
    """Restart the daemon behind ``client`` (like ``hz daemon restart``); a client of the new one.

    The restart drains the daemon first, which can take a while. ``client``
    is left open for the caller to close once it has switched to the new
    one: a head's background reads must never meet a closed client. An
    embedded kernel has no daemon to restart (``HZU064``): it lives and ends
    with its cockpit.
    """
    refused = restart_refusal(client)
    if refused is not None:
        raise refused
    from hz_kernel.daemon import lifecycle  # starting a daemon needs the kernel's modules

    await lifecycle.restart(home)
    return await connect(home)


def restart_refusal(client: KernelClient) -> HzError | None:
    """Why ``restart_daemon`` would refuse ``client`` at once (asked before saying it restarts)."""
    from hz_kernel.http_client import HttpClient

    if not isinstance(client, HttpClient):
        return HzError("HZU064", "an embedded kernel is not a daemon; it restarts with the cockpit")
    if client.remote:
        return HzError(
            "HZU125",
            "a daemon attached with --connect restarts on its own machine (hz daemon restart)",
        )
    return None


async def ensure_daemon(home: Home) -> str:
    """Adopt the home's daemon or start one (as ``hz daemon start``); a line saying which."""
    from hz_kernel.daemon import lifecycle  # starting a daemon needs the kernel's modules

    report = await lifecycle.start(home)
    verb = "attached to the running daemon" if report.adopted else "started the daemon"
    return f"{verb} (pid {report.pid}) at {report.address}"


async def feed_edge(client: KernelClient) -> int:
    """The feed's last durable position: take it before starting work you mean to ``follow``."""
    if isinstance(client, LocalClient):
        return client.hub.edge
    from hz_kernel.http_client import HttpClient

    if isinstance(client, HttpClient):
        health = await client.health()
        client.feed_generation = health.generation
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


async def reattach(home: Home, *, health_timeout: float = HEALTH_TIMEOUT_S) -> HttpClient | None:
    """A client of the daemon serving ``home`` now, if one runs and answers; else None.

    For a head whose daemon went away (the cockpit's link): unlike ``connect``
    it never embeds a kernel and never starts a daemon, it only finds one. A
    daemon that drains is on its way out (a restart): attaching to it would
    only lose it again, so it is not found; the one that follows is.
    """
    found = inspect(home)
    if found.state != "running" or found.discovery is None:
        return None
    from hz_kernel.http_client import HttpClient

    client = HttpClient(found.discovery)
    try:
        health = await check_health(client, health_timeout)
    except HzError:
        await client.close()
        return None
    if health.draining:
        await client.close()
        return None
    return client


def names_another_daemon(home: Home, client: KernelClient) -> bool:
    """True when ``daemon.json`` names a daemon other than ``client``'s (no file is not another)."""
    found = read_discovery(home)
    mine = getattr(client, "discovery", None)
    if found is None or mine is None:
        return False
    return (found.pid, found.address, found.token) != (mine.pid, mine.address, mine.token)
