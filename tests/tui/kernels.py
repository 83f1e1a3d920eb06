"""The kernels behind the Pilot tests: embedded as ``hz`` embeds them, and transports around them.

``embedded_client`` opens the kernel on a world the way the cockpit does
(long-lived, turns in the background) and closes it after. ``PassThrough``
is the client as it is; a test's transport subclasses it and changes
``call`` to count, lose or refuse what the cockpit sends. ``quitting_home``
is a home for an embedded cockpit that may hand its turns to a daemon: the
daemon is stopped after, whatever happened.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hz_kernel.api import KernelStatus
from hz_kernel.client import LocalClient
from hz_kernel.daemon import lifecycle
from hz_kernel.daemon.discovery import read_discovery
from hz_kernel.home import Home
from hz_kernel.kernel import Kernel
from hz_kernel.operations import Operation, Req, Resp
from tests.tui import homes, worlds


@contextlib.asynccontextmanager
async def embedded_client(world: worlds.World) -> AsyncIterator[LocalClient]:
    """The kernel as ``hz`` embeds it in the cockpit: long-lived, turns in the background."""
    opened = LocalClient(await Kernel.open(world.home, long_lived=True))
    try:
        yield opened
    finally:
        await opened.close()


class PassThrough:
    """The kernel's client as it is: every operation and subscription goes to ``inner``."""

    remote = False

    def __init__(self, inner: LocalClient) -> None:
        self.inner = inner
        self.where = inner.where

    async def call(self, operation: Operation[Req, Resp], request: Req) -> Resp:
        return await self.inner.call(operation, request)

    def subscribe(self, after: int | None = None, **_: Any) -> Any:
        return self.inner.subscribe(after)

    async def status(self) -> KernelStatus:
        return await self.inner.status()

    async def warm(self) -> None:
        await self.inner.warm()

    async def close(self) -> None:
        await self.inner.close()


@contextlib.asynccontextmanager
async def quitting_home(
    root: Path, monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...], settings: str = ""
) -> AsyncIterator[Home]:
    """A home with the approved digest heinzels ``names`` over long notes (``settings`` added
    to its ``hz.toml``), for a cockpit ``hz --embedded`` runs: no tick for an hour, the local
    model slowed so a turn is running when the user quits. Any daemon started on it is
    stopped after."""
    for name in ("HZ_EMBEDDED", "HZ_CRASH_AT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HZ_NOW", homes.NOW)
    monkeypatch.setenv("HZ_TICK_SECONDS", "3600")
    world = worlds.make_world(root)
    with (world.home.root / "hz.toml").open("a") as toml:
        toml.write(settings)
    world.add_note("wednesday.md", "# Wednesday\n" + worlds.LONG_NOTES)
    kernel = await Kernel.open(world.home)
    try:
        for name in names:
            await worlds.add_heinzel(kernel, world, name, wake=False)
    finally:
        await kernel.close()
    monkeypatch.setenv("HZ_MODEL_DELAY_MS", "150")
    try:
        yield world.home
    finally:
        found = read_discovery(world.home)
        with contextlib.suppress(Exception):
            await lifecycle.stop(world.home)
        if found is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(found.pid, signal.SIGKILL)
