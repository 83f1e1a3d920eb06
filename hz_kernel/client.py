"""``KernelClient``: the one way a head talks to a kernel, wherever the kernel runs.

``call(operation, request)`` and ``subscribe(after)`` (the live feed) are
the heart of the interface; ``status()`` says where the kernel runs and
``warm()`` loads what a client put off. ``LocalClient`` serves it from a
kernel in this process; ``DeferredClient`` from one it opens only when
first needed; ``hz_kernel.http_client.HttpClient`` from a daemon. Heads
never know which they hold (``hz_kernel.connect.connect`` picks).

This module does not import the kernel itself: a head that attaches to a
daemon, or lists before its embedded kernel has loaded, never pays for it.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from hz_kernel import operations as ops
from hz_kernel.clock import now_utc, stamp
from hz_kernel.daemon.protocol import PROTOCOL_VERSION, FeedItem
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_kernel.listing import list_summaries
from hz_kernel.operations import OPERATIONS, Operation, Req, Resp
from hz_kernel.overview import HeinzelList, KernelStatus
from hz_kernel.store.index import IndexReader
from hz_kernel.tick.failures import failures_path, read_failures
from hz_kernel.tick.schedule import SlotClock, user_zone

if TYPE_CHECKING:
    from hz_kernel.daemon.discovery import KernelLock
    from hz_kernel.daemon.feed import FeedHub
    from hz_kernel.kernel import Kernel

__all__ = ["DeferredClient", "FeedItem", "KernelClient", "LocalClient", "dump"]


class KernelClient(Protocol):
    """What every head may ask of a kernel."""

    where: str
    remote: bool
    """True when the kernel's files are not this machine's (``hz --connect``): wire only."""

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp: ...

    def subscribe(
        self, after: int | None = None, *, generation: str | None = None
    ) -> AsyncIterator[FeedItem]:
        """Feed items after position ``after`` (None: from now), then live.

        ``generation`` is the index generation ``after`` belongs to (from the
        feed's hello or the health): a position of another one raises
        ``FeedReset`` instead of replaying other events.
        """
        ...

    async def status(self) -> KernelStatus:
        """Which process the kernel runs in, since when, and how busy it is."""
        ...

    async def warm(self) -> None:
        """Load now what the client put off (a deferred kernel); nothing for the others."""
        ...

    async def close(self) -> None: ...


class LocalClient:
    """An embedded kernel: the calls run in this process."""

    remote = False

    def __init__(
        self, kernel: Kernel, hub: FeedHub | None = None, *, kernel_lock: KernelLock | None = None
    ) -> None:
        self.kernel = kernel
        self.kernel_lock = kernel_lock
        """The home's ``kernel.lock`` while this kernel is the one that ticks, released on close."""
        self.where = f"embedded kernel on {kernel.home.root}"
        from hz_kernel.daemon.feed import FeedHub  # the event log behind ``subscribe``

        self.hub = hub or FeedHub.of(kernel)
        if hub is None:
            kernel.observers.append(self.hub.observe)

    @classmethod
    async def open(
        cls, home: Home, *, long_lived: bool = False, kernel_lock: KernelLock | None = None
    ) -> LocalClient:
        from hz_kernel.kernel import Kernel  # the whole kernel, loaded only where one runs

        try:
            kernel = await Kernel.open(home, long_lived=long_lived)
        except BaseException:
            if kernel_lock is not None:
                kernel_lock.release()
            raise
        return cls(kernel, kernel_lock=kernel_lock)

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp:
        if OPERATIONS.get(operation.name) is not operation:
            raise KeyError(operation.name)
        method = getattr(self.kernel, operation.handler)
        result = await method(**_arguments(request))
        return operation.wrap(result)

    async def subscribe(
        self, after: int | None = None, *, generation: str | None = None
    ) -> AsyncIterator[FeedItem]:
        async for item in self.hub.items(after, generation):
            yield item

    async def status(self) -> KernelStatus:
        kernel = self.kernel
        return KernelStatus(
            **dict(kernel.load()),
            embedded=True,
            pid=os.getpid(),
            protocol=PROTOCOL_VERSION,
            started_at=stamp(kernel.opened_at),
            uptime_s=round((now_utc() - kernel.opened_at).total_seconds(), 3),
            heinzels=len(kernel.home.heinzel_ids()),
        )

    async def warm(self) -> None:
        return None

    async def close(self) -> None:
        try:
            await self.kernel.close()
        finally:
            if self.kernel_lock is not None:
                self.kernel_lock.release()


class DeferredClient:
    """An embedded kernel opened on first need; until then listings come from the index.

    Importing and opening the kernel is most of a cockpit's start. While it
    is not open, ``heinzel.list`` is answered from a read-only index, but
    only when the index has provably seen every spine as it is now (one
    ``stat`` each); otherwise, and for every other call, the kernel is
    opened first, and its opening brings a lagging index up to date. The
    answer is the kernel's own listing code either way (``hz_kernel.listing``).
    """

    remote = False

    def __init__(
        self, home: Home, *, long_lived: bool = False, kernel_lock: KernelLock | None = None
    ) -> None:
        self.home = home
        self.long_lived = long_lived
        self.kernel_lock = kernel_lock
        """The home's ``kernel.lock`` (held from the start, so no daemon starts beside us)."""
        self.where = f"embedded kernel on {home.root}"
        self.opened = asyncio.Event()
        """Set once the kernel is open (what runs beside the cockpit waits for it)."""
        self._local: LocalClient | None = None
        self._opening: asyncio.Task[LocalClient] | None = None
        self._reader: IndexReader | None = None
        self._clock: SlotClock | None = None

    @property
    def local(self) -> LocalClient:
        """The open kernel's client; only after ``opened``."""
        if self._local is None:
            raise RuntimeError("the embedded kernel is not open yet")
        return self._local

    @property
    def kernel(self) -> Kernel:
        return self.local.kernel

    async def open_kernel(self) -> LocalClient:
        """Open the kernel (once, however many callers ask at the same time)."""
        if self._opening is None:
            self._opening = asyncio.ensure_future(self._open())
        opening = self._opening
        try:
            local = await asyncio.shield(opening)
        except HzError:
            if self._opening is opening:
                self._opening = None  # put right (an index moved away, say), the next call opens
            raise
        if self._local is None:
            self._local = local
            if self._reader is not None:
                await self._reader.close()
                self._reader = None
            self.opened.set()
        return local

    async def _open(self) -> LocalClient:
        # Importing the kernel is ~0.5 s of pure Python; in a thread, the event loop (a
        # cockpit's screen and keys) keeps most of its turns meanwhile.
        await asyncio.to_thread(importlib.import_module, "hz_kernel.kernel")
        return await LocalClient.open(self.home, long_lived=self.long_lived)

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp:
        if self._local is None and operation is ops.LIST:
            assert isinstance(request, ops.ListRequest)
            try:
                listed = await self._list_from_index(request)
            except HzError:
                listed = None  # a damaged index, say: the kernel rebuilds it, or says what is wrong
            if listed is not None:
                return operation.wrap(listed)
        return await (await self.open_kernel()).call(operation, request)

    async def _list_from_index(self, request: ops.ListRequest) -> HeinzelList | None:
        if self._reader is None:
            self._reader = await IndexReader.open(self.home.index_path)
        reader = self._reader
        if reader is None or not await reader.is_current(self.home.spine_paths()):
            return None
        if self._clock is None:
            self._clock = SlotClock(user_zone(self.home.settings.heinzel.timezone))
        failures = read_failures(failures_path(self.home.heinzel_root))
        team = (self.home.root, self.home.settings.team)
        items = await list_summaries(
            reader, self._clock, failures=failures, team=team, **_arguments(request)
        )
        return HeinzelList.model_construct(items=items)  # rows typed by the index

    async def subscribe(
        self, after: int | None = None, *, generation: str | None = None
    ) -> AsyncIterator[FeedItem]:
        local = await self.open_kernel()
        async for item in local.subscribe(after, generation=generation):
            yield item

    async def status(self) -> KernelStatus:
        return await (await self.open_kernel()).status()

    async def warm(self) -> None:
        await self.open_kernel()

    async def close(self) -> None:
        """Close the kernel (its turns are cut at a checkpoint) and let go of the home; twice is
        fine, as the hand-off to a daemon closes before the cockpit's own exit does."""
        if self._reader is not None:
            await self._reader.close()
            self._reader = None
        opening, self._opening, self._local = self._opening, None, None
        try:
            # An opening cancelled with the loop that ran it (a cockpit's) never opened.
            if opening is not None and not opening.cancelled():
                local = await asyncio.shield(opening)
                await local.close()
        finally:
            if self.kernel_lock is not None:
                self.kernel_lock.release()


def _arguments(request: BaseModel) -> dict[str, Any]:
    """A request's fields as the keyword arguments of the kernel method that serves it."""
    return {name: getattr(request, name) for name in type(request).model_fields}


def dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")
