"""``hz`` alone, ``hz --connect`` and ``hz demo``: the cockpit, which the ``hz`` entry point
(``hz_tui.entry``) hands in, so the kernel's command line never imports it itself."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Protocol

from hz_kernel import remote
from hz_kernel.cli.parser import Subcommands
from hz_kernel.client import DeferredClient, KernelClient
from hz_kernel.connect import connect, may_start
from hz_kernel.daemon.discovery import inspect
from hz_kernel.errors import UsageError
from hz_kernel.home import Home

Beside = Callable[[asyncio.Event], Awaitable[None]]


class Cockpit(Protocol):
    """Runs the cockpit and returns the exit code. Given by the ``hz`` entry point
    (``hz_tui.entry``), so the kernel's command line never imports the cockpit itself.

    ``daemon_ends_with_it``: the daemon the cockpit talks to is stopped when
    the cockpit closes (``hz demo``), so quitting asks about its running turns.
    """

    def __call__(
        self,
        home: Home,
        client: KernelClient,
        beside: Sequence[Beside],
        /,
        *,
        daemon_ends_with_it: bool = False,
    ) -> Awaitable[int]: ...


async def open_cockpit(
    explicit_home: str | None,
    cockpit: Cockpit | None,
    beside: Sequence[Beside] = (),
    *,
    embedded: bool = False,
    daemon_ends_with_it: bool = False,
) -> int:
    """``hz`` alone: the cockpit on the home's daemon, adopted or started here (the header says
    which), so its work outlives the window; on a kernel embedded here under ``--embedded``.

    An embedded kernel lives as long as the cockpit, so it is made long-lived
    (turns run in the background, a command answers at once) and the tick
    runs beside the cockpit every ``HZ_TICK_SECONDS``. The cockpit package is
    imported by the ``hz`` entry point only when it runs, so the other
    commands never pay for Textual.
    """
    run_cockpit = _need_cockpit(cockpit)
    home = Home.resolve(explicit_home)
    start = may_start(home, embedded=embedded)
    if start and inspect(home).state != "running":
        # Starting one takes seconds (its imports, its kernel): say so before the screen waits.
        sys.stderr.write(f"starting the daemon for {home.root}…\n")
        sys.stderr.flush()
    client = await connect(home, defer_kernel=True, start=start)
    jobs = list(beside)
    if isinstance(client, DeferredClient):
        jobs.append(partial(_tick_beside, client))
    try:
        return await run_cockpit(
            home, client, jobs, daemon_ends_with_it=daemon_ends_with_it and not embedded
        )
    finally:
        await client.close()


async def open_remote_cockpit(args: argparse.Namespace, cockpit: Cockpit | None) -> int:
    """``hz --connect URL --token-file FILE``: the cockpit on a daemon's wire alone."""
    return await remote.cockpit(args, _need_cockpit(cockpit))


def _need_cockpit(cockpit: Cockpit | None) -> Cockpit:
    if cockpit is None:
        raise UsageError("HZU063", "this hz was started without its cockpit; run the hz command")
    _need_foreground()
    return cockpit


def _need_foreground() -> None:
    """Refuse a terminal whose foreground is another process group (``timeout hz``, ``hz &``):
    the terminal stops a background cockpit the moment it draws, and nothing resumes it, so
    it would hang stopped, deaf even to the signal meant to end it."""
    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd) or os.tcgetpgrp(fd) == os.getpgrp():
            return
    except (OSError, ValueError):
        return  # no terminal to ask: the cockpit says what it needs when it starts
    raise UsageError(
        "HZU241",
        "the cockpit needs the terminal's foreground, and another process group holds it; "
        "run hz in the foreground (under timeout: timeout --foreground)",
        "stdin",
    )


async def _tick_beside(client: DeferredClient, stop: asyncio.Event) -> None:
    """The embedded cockpit's tick loop, from the moment its kernel is open until ``stop``.

    The cockpit opens the kernel once its first frame is drawn, so the
    kernel's loading never delays that frame.
    """
    opened = asyncio.ensure_future(client.opened.wait())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({opened, stopping}, return_when=asyncio.FIRST_COMPLETED)
    opened.cancel()
    stopping.cancel()
    if stop.is_set():
        return
    from hz_kernel.commands.tick import run_tick_loop, tick_interval

    await run_tick_loop(client.kernel, tick_interval(client.home.settings), stop)


async def open_demo(explicit_root: str | None, cockpit: Cockpit | None, *, embedded: bool) -> int:
    """``hz demo``: build a throwaway home (``hz_kernel.demo``), then open the cockpit on it.

    The cockpit runs on a daemon started for the demo home (unless
    ``--embedded``); as the home is thrown away, that daemon stops with it.
    """
    from hz_kernel import demo

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    demo.demo_environment()
    world = await demo.build(demo.demo_root(explicit_root), say=say)
    for line in demo.summary(world):
        say(line)
    committing = partial(demo.keep_committing, world)
    try:
        return await open_cockpit(
            str(world.home.root),
            cockpit,
            beside=[committing],
            embedded=embedded,
            daemon_ends_with_it=True,
        )
    finally:
        from hz_kernel.daemon import lifecycle

        stopped = await lifecycle.stop(world.home)
        if stopped.stopped is not None:
            say(f"stopped the demo's daemon (pid {stopped.stopped})")


def register_demo(sub: Subcommands) -> None:
    """``hz demo`` (``hz`` alone is the parser's default: no group)."""
    p = sub.add_parser(
        "demo",
        help="a throwaway home with a git repository, documents and heinzels, then the cockpit",
    )
    p.add_argument(
        "--home",
        dest="demo_home",
        metavar="DIR",
        help="a new or empty folder (default: a temp dir)",
    )
