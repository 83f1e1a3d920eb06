"""``KernelClient``: the one way a head talks to a kernel, wherever the kernel runs.

``call(operation, request)`` and ``subscribe(after)`` (the live feed) are
the whole interface. ``LocalClient`` serves it from a kernel in this
process; ``hz_kernel.http_client.HttpClient`` from a daemon. Heads never
know which they hold (``hz_kernel.connect.connect`` picks).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any, Protocol

from pydantic import BaseModel

from hz_kernel.api import KernelStatus
from hz_kernel.clock import now_utc
from hz_kernel.daemon.feed import FeedHub, FeedReset
from hz_kernel.daemon.protocol import PROTOCOL_VERSION, FeedItem
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.operations import OPERATIONS, Operation, Req, Resp

__all__ = ["FeedItem", "FeedReset", "KernelClient", "LocalClient", "dump"]


class KernelClient(Protocol):
    """What every head may ask of a kernel."""

    where: str

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp: ...

    def subscribe(self, after: int | None = None) -> AsyncIterator[FeedItem]:
        """Feed items after ``after`` (None: from now), then live; ``FeedReset`` if impossible."""
        ...

    async def status(self) -> KernelStatus:
        """Which process the kernel runs in, since when, and how busy it is."""
        ...

    async def close(self) -> None: ...


class LocalClient:
    """An embedded kernel: the calls run in this process."""

    def __init__(self, kernel: Kernel, hub: FeedHub | None = None) -> None:
        self.kernel = kernel
        self.where = f"embedded kernel on {kernel.home.root}"
        self.hub = hub or FeedHub()
        if hub is None:
            kernel.observers.append(self.hub.observe)

    @classmethod
    async def open(cls, home: Home) -> LocalClient:
        return cls(await Kernel.open(home))

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp:
        if OPERATIONS.get(operation.name) is not operation:
            raise KeyError(operation.name)
        method = getattr(self.kernel, operation.handler)
        kwargs: dict[str, Any] = {
            name: getattr(request, name) for name in type(request).model_fields
        }
        result = await method(**kwargs)
        return operation.wrap(result)

    async def subscribe(self, after: int | None = None) -> AsyncIterator[FeedItem]:
        async for item in self.hub.items(after):
            yield item

    async def status(self) -> KernelStatus:
        kernel = self.kernel
        return KernelStatus(
            embedded=True,
            pid=os.getpid(),
            protocol=PROTOCOL_VERSION,
            started_at=kernel.opened_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            uptime_s=round((now_utc() - kernel.opened_at).total_seconds(), 3),
            heinzels=len(kernel.home.heinzel_ids()),
            turns_running=len(kernel.tasks),
        )

    async def close(self) -> None:
        await self.kernel.close()


def dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")
