"""``KernelClient``: the one way a head talks to a kernel, wherever the kernel runs.

``call(operation, request)`` is the whole interface (plus the event feed,
added by the daemon). ``LocalClient`` serves it from a kernel in this
process; the HTTP client serves it from a daemon. Heads never know which
they hold.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel

from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.operations import OPERATIONS, Operation, Req, Resp


class KernelClient(Protocol):
    """What every head may ask of a kernel."""

    where: str

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp: ...

    async def close(self) -> None: ...


class LocalClient:
    """An embedded kernel: the calls run in this process."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.where = f"embedded kernel on {kernel.home.root}"

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

    async def close(self) -> None:
        await self.kernel.close()


def dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")
