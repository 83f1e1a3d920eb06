"""The cockpit's link to its kernel: one client, attached again when its daemon goes away.

Attached to a daemon, the cockpit talks to the one ``<home>/daemon.json``
names, or (``hz --connect``) to the one its URL leads to. That daemon may
die, or be restarted (locally anywhere: a new port, a new token). The link
notices — its feed ends or fails, a call finds the daemon unreachable
(``HZD040``), or the discovery file comes to name another daemon — and says
so (``reconnecting…``). It then tries again with backoff: locally at once
whenever the discovery file changes too, each try reading the file; a
remote cockpit has no such file and dials its URL again, reading its token
file afresh (``RemoteClient.redial``). A daemon that is alive, answers its
health check and is not draining becomes the new client. The cockpit then
catches up: its rows are listed again and the feed resumes after the last
position read; a position the new daemon cannot serve (``FeedReset``) means
one more full reload.

The header says how the cockpit came by its daemon: ``started now`` or
``adopted`` at start (``hz_kernel.connect``), then ``adopted`` for another
daemon the link found (the cockpit did not start it) and ``restarted`` for
one the cockpit restarted itself (Ctrl+R on the kernel page); the same daemon found again keeps
what it had.

A daemon that still takes connections but answers nothing (stopped with
SIGSTOP, hung) is lost too: while attached, the link asks its health every
few seconds, and two unanswered checks in a row count as losing it.

The link never starts a kernel: when no daemon comes back, it keeps
reconnecting (whatever supervises the daemon restarts it). Meanwhile every
call fails at once with ``NotConnected`` (``HZD110``) instead of waiting on
a dead address, and so does every call still waiting on the daemon when it is
lost: it went out, so it says that it may still happen. An embedded kernel
lives inside the cockpit and is never lost, so a link to one only passes calls
through.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from textual.dom import DOMNode
from textual.signal import Signal

from hz_kernel.client import FeedItem, KernelClient
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.operations import Operation, Req, Resp
from hz_kernel.overview import KernelStatus
from hz_tui.watcher import RUST_TIMEOUT_MS

if TYPE_CHECKING:
    from watchfiles import Change

    from hz_kernel.http_client import HttpClient

#: The first pause between tries to reach a daemon, and the longest it grows to.
BACKOFF_FIRST_S = 0.2
BACKOFF_MAX_S = 5.0
#: How often an attached cockpit asks its daemon's health, how long it waits for an answer,
#: and how many unanswered checks in a row make the daemon lost (reconnecting…).
ALIVE_EVERY_S = 5.0
ALIVE_TIMEOUT_S = 10.0
ALIVE_MISSES = 2
#: The code of a daemon that does not answer (``HttpClient``).
UNREACHABLE = "HZD040"

LinkState = Literal["attached", "reconnecting"]
T = TypeVar("T")


class NotConnected(HzError):
    """A call the link could not carry: it is reconnecting, or the daemon left mid-call.

    ``sent``: the call had gone out when the daemon was lost, so the daemon may still
    carry it out once it answers again (a request id makes sending it again safe).
    """

    def __init__(self, *, sent: bool = False) -> None:
        message = "not connected (reconnecting to the daemon…)"
        if sent:
            message = (
                "the daemon stopped answering before it answered (reconnecting…); "
                "what was asked may still happen once it is back"
            )
        super().__init__("HZD110", message)
        self.sent = sent


class Link:
    """A ``KernelClient`` that passes calls to ``current`` and replaces it when it is lost.

    ``changed`` is published (with the link) whenever the state changes;
    ``catch_up`` is awaited after every re-attachment and feed reset.
    """

    def __init__(
        self,
        home: Home,
        client: KernelClient,
        *,
        owner: DOMNode,
        catch_up: Callable[[], Awaitable[None]],
    ) -> None:
        self.home = home
        self.current = client
        self.state: LinkState = "attached"
        self.position: int | None = None
        """The seq of the last feed item read from the current daemon run (None: not yet known)."""
        self.changed: Signal[Link] = Signal(owner, "link-changed")
        self.catch_up = catch_up
        self.how: str | None = None
        """How the cockpit came by a daemon it re-attached to (``adopted``, ``restarted``)."""
        self._lost = asyncio.Event()
        self._cut = asyncio.Event()
        """Set when ``current`` is lost: the calls still waiting on it fail at once."""
        self._nudge = asyncio.Event()
        self._attached = asyncio.Event()
        self._attached.set()

    @property
    def attached(self) -> bool:
        return self.state == "attached"

    @property
    def daemon(self) -> bool:
        """True when the kernel is a daemon the link can lose and find again: this home's
        (named by its discovery file) or a remote one (at its URL)."""
        return getattr(self.current, "discovery", None) is not None

    @property
    def remote(self) -> bool:
        return self.current.remote

    @property
    def described(self) -> str:
        """The current (or lost) daemon in the header's words, and how the cockpit came by it."""
        return self.current.where if self.how is None else f"{self.current.where} · {self.how}"

    @property
    def where(self) -> str:
        if self.attached:
            return self.described
        refusal = getattr(self.current, "refusal", None)  # a remote URL now serving another home
        why = f"; {refusal.one_line()}" if refusal is not None else ""
        return f"reconnecting… (lost the {self.described}{why})"

    @property
    def forms(self) -> list[str]:
        """``where`` and shorter forms of it, longest first, for a header that cannot fit it:
        without a remote daemon's home, then without the address; "reconnecting…" and the
        daemon's pid stay in every form (reconnecting, the last drop how it was found, then
        the kind of kernel)."""
        what = "remote daemon" if self.remote else "daemon" if self.daemon else "embedded kernel"
        discovery = getattr(self.current, "discovery", None)
        pid = getattr(discovery, "pid", None) if self.daemon else None
        _, sep, how = self.current.where.rpartition(" · ")
        how = f" · {self.how}" if self.how else f" · {how}" if sep else ""
        described = self.described
        forms = [described, described.split(", home ")[0] + how if ", home " in described else ""]
        forms.append(f"{what} (pid {pid}){how}" if pid else what)
        forms = [form for form in dict.fromkeys(forms) if form]
        if self.attached:
            return forms
        lost = [f"reconnecting… (lost the {form})" for form in forms]
        if pid:
            lost += [f"reconnecting… (lost the {what} (pid {pid}))", f"reconnecting… (pid {pid})"]
        return list(dict.fromkeys(lost))

    async def wait_attached(self) -> None:
        """Return once the link is attached (at once if it is)."""
        await self._attached.wait()

    async def feed_edge(self) -> int:
        """The feed's last durable position on the current daemon (``NotConnected`` if lost)."""
        from hz_kernel.connect import feed_edge

        client = self._usable()
        try:
            return await self._answered(client, feed_edge(client))
        except HzError as exc:
            self._check(client, exc)
            raise

    # -- the KernelClient interface ------------------------------------------------------

    def _usable(self) -> KernelClient:
        if not self.attached:
            raise NotConnected()
        return self.current

    async def _answered(self, client: KernelClient, asked: Awaitable[T]) -> T:
        """``asked``'s answer, or ``NotConnected(sent=True)`` as soon as ``client`` is lost: a
        daemon stopped after the call went out (SIGSTOP, hung) would hold it for the client's
        whole call timeout (attack pass: a wake waited 300 s after "reconnecting…")."""
        if getattr(client, "discovery", None) is None:
            return await asked  # an embedded kernel is never lost
        cut = self._cut
        call = asyncio.ensure_future(asked)
        lost = asyncio.ensure_future(cut.wait())
        try:
            await asyncio.wait({call, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            lost.cancel()
            if not call.done():
                call.cancel()
                await asyncio.gather(call, return_exceptions=True)
        if call.cancelled():
            raise NotConnected(sent=True)
        return call.result()

    def _check(self, client: KernelClient, error: HzError) -> None:
        """An unreachable daemon is a lost link: raise ``NotConnected`` instead of ``HZD040``."""
        if error.code == UNREACHABLE and self.daemon:
            if client is self.current:
                self._lose()
            raise NotConnected() from error

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp:
        client = self._usable()
        try:
            return await self._answered(client, client.call(operation, request))
        except HzError as exc:
            self._check(client, exc)
            raise

    async def subscribe(self, after: int | None = None) -> AsyncIterator[FeedItem]:
        client = self._usable()
        try:
            async for item in client.subscribe(after):
                yield item
        except HzError as exc:
            self._check(client, exc)
            raise

    async def status(self) -> KernelStatus:
        client = self._usable()
        try:
            return await self._answered(client, client.status())
        except HzError as exc:
            self._check(client, exc)
            raise

    async def warm(self) -> None:
        await self.current.warm()

    async def close(self) -> None:
        await self.current.close()

    # -- attaching -----------------------------------------------------------------------

    async def attach(self, client: KernelClient, *, how: str | None = None) -> None:
        """Carry on with ``client`` (a daemon the cockpit restarted itself); the old one closes.

        ``how`` is what the header says of a daemon's client (``restarted``).
        If the link has found that daemon already (before or while this
        runs), it keeps its own client (calls may be under way on it) and
        closes ``client``.
        """
        how = how if getattr(client, "discovery", None) is not None else None
        edge: int | None = None
        if not self._found_already(client):
            from hz_kernel.connect import feed_edge  # the HTTP stack is loaded by now

            with contextlib.suppress(HzError):
                edge = await feed_edge(client)
        # Found before or while the edge was read: its client may have calls under way.
        if self._found_already(client):
            await client.close()
            self.how = how
            self.changed.publish(self)
            return
        self._cut.set()  # calls still waiting on the old client: it closes below
        self._cut = asyncio.Event()
        previous, self.current = self.current, client
        self.position = edge  # what happens from here on is replayed, even before the feed follows
        self.how = how
        self.state = "attached"
        self._attached.set()
        self.changed.publish(self)
        self._lost.set()  # the watch moves on to the new client
        self._nudge.set()  # and a reconnect under way stops trying
        if previous is not client:
            await previous.close()

    def _found_already(self, client: KernelClient) -> bool:
        """Whether the link is attached to ``client``'s daemon by a client of its own."""
        found = getattr(self.current, "discovery", None)
        return self.attached and found is not None and found == getattr(client, "discovery", None)

    def _lose(self) -> None:
        if self.attached:
            self._set_state("reconnecting")
        self._cut.set()
        self._lost.set()

    def _set_state(self, state: LinkState) -> None:
        if state != self.state:
            self.state = state
            if state == "attached":
                self._attached.set()
            else:
                self._attached.clear()
            self.changed.publish(self)

    async def run(self) -> None:
        """Watch the daemon while the cockpit runs; attach again whenever it is lost."""
        if not self.daemon:
            return
        async with asyncio.TaskGroup() as group:
            if not self.remote:
                group.create_task(self._watch_discovery())
            while True:
                following = self.current
                await self._follow(following)
                if self.current is not following and self.attached:
                    continue  # ``attach`` handed over a new client
                self._lose()
                client = await self._reach()
                if client is not None:
                    await self._take(client)
                    await self.catch_up()

    async def _follow(self, client: KernelClient) -> None:
        """Return when ``client`` is lost: its feed ends or fails, or ``_lost`` is set."""
        if not self.attached:
            return
        self._lost.clear()
        feed = asyncio.ensure_future(self._read_feed(client))
        lost = asyncio.ensure_future(self._lost.wait())
        alive = asyncio.ensure_future(self._check_alive(client))
        try:
            await asyncio.wait({feed, lost, alive}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (feed, lost, alive):
                task.cancel()
            await asyncio.gather(feed, lost, alive, return_exceptions=True)

    async def _check_alive(self, client: KernelClient) -> None:
        """Return when the daemon stops answering its health check in time: a daemon that is
        stopped (SIGSTOP) or hung still takes connections, so neither its feed nor a call
        fails for minutes (attack pass: the header said connected, a wake waited 300 s)."""
        health = getattr(client, "health", None)
        if health is None:
            return await asyncio.Event().wait()  # no daemon behind it: nothing to check
        missed = 0
        while missed < ALIVE_MISSES:
            await asyncio.sleep(ALIVE_EVERY_S)
            try:
                await asyncio.wait_for(health(ALIVE_TIMEOUT_S), ALIVE_TIMEOUT_S + 1)
            except (HzError, TimeoutError):
                missed += 1  # one slow answer on a loaded machine is not a lost daemon
            else:
                missed = 0

    async def _read_feed(self, client: KernelClient) -> None:
        """Follow the feed from the last position read; a reset is a full reload."""
        from hz_kernel.connect import feed_edge  # the HTTP stack is loaded by now
        from hz_kernel.http_client import FeedReset

        while True:
            try:
                if self.position is None:
                    self.position = await feed_edge(client)
                async for item in client.subscribe(self.position):
                    if client is not self.current:
                        return  # ``attach`` moved on; this feed's positions mean nothing there
                    self.position = item.seq
            except FeedReset:
                self.position = None
                await self.catch_up()
                continue
            except HzError:
                return
            return

    async def _reach(self) -> HttpClient | None:
        """The client of the daemon the discovery file names (remote: at the URL), once one
        answers.

        None when ``attach`` supplied a client meanwhile.
        """
        from hz_kernel import connect
        from hz_kernel.remote_client import RemoteClient

        delay = BACKOFF_FIRST_S
        while not self.attached:
            self._nudge.clear()
            lost = self.current
            if isinstance(lost, RemoteClient):
                client: HttpClient | None = await lost.redial()
            else:
                client = await connect.reattach(self.home)
            if client is not None and self.attached:
                await client.close()
            elif client is not None:
                return client
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._nudge.wait(), delay)
            delay = min(delay * 2, BACKOFF_MAX_S)
        return None

    async def _take(self, client: HttpClient) -> None:
        """Make ``client`` current; its feed resumes from the old position in the old daemon's
        index generation, which the new one judges (a rebuilt index is a reset)."""
        self._cut = asyncio.Event()
        previous, self.current = self.current, client
        client.feed_generation = getattr(previous, "feed_generation", None)
        before = getattr(previous, "discovery", None)
        if before is not None and before.run == client.discovery.run:
            client.where = previous.where  # the same daemon, found again: the same words
        else:
            self.how = "adopted"  # another daemon, which this cockpit did not start
        self._set_state("attached")
        await previous.close()

    # -- the discovery file --------------------------------------------------------------

    async def _watch_discovery(self) -> None:
        """Try to reconnect at once when ``daemon.json`` changes; drop a daemon it stops naming."""
        from watchfiles import awatch  # a cockpit's first frame does without it

        from hz_kernel.connect import names_another_daemon

        name = self.home.discovery_path.name

        def wanted(change: Change, path: str) -> bool:
            return Path(path).name == name

        changes = awatch(
            self.home.root, watch_filter=wanted, recursive=False, rust_timeout=RUST_TIMEOUT_MS
        )
        with contextlib.suppress(OSError):  # unwatchable: the backoff alone finds the daemon
            async for _ in changes:
                self._nudge.set()
                if self.attached and names_another_daemon(self.home, self.current):
                    self._lose()
