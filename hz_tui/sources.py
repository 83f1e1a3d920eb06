"""Where the cockpit learns what changed: the home's spine files, or the daemon's feed.

On the kernel's machine the cockpit tails the spines itself (``FileSource``,
the fast path: no round trip, nothing to decode but new bytes). Attached
with ``hz --connect`` it has no files to read, and builds the same
``SpineBatch``es from the daemon's feed (``FeedSource``): spine events
become lines, body deltas ride along, and a feed that lost its place asks
for a reload. Either way the app gets one kind of message.

The feed is read through the cockpit's ``Link``, so when the daemon is lost
it waits for the link to attach again and resumes from its position on
whichever daemon that is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from pydantic import ValidationError

from hz_kernel.client import FeedItem
from hz_kernel.errors import HzError
from hz_kernel.home import Home
from hz_tui.link import Link, NotConnected
from hz_tui.tail import SpineLine
from hz_tui.watcher import BodyDelta, SpineBatch, SpineWatcher

#: First and longest pause before following the feed again after it ended or failed.
RETRY_MIN_S = 0.2
RETRY_MAX_S = 5.0
#: The code of ``FeedReset``: the daemon cannot continue from our position.
FEED_RESET = "HZD050"

Deliver = Callable[[SpineBatch], None]


class LiveSource(Protocol):
    """What tells the cockpit that spines moved."""

    async def prime(self) -> None:
        """Note where things stand now: only what comes after is delivered."""
        ...

    async def run(self, deliver: Deliver) -> None:
        """Deliver batches until cancelled."""
        ...


def live_source(home: Home, link: Link) -> LiveSource:
    """The feed for a cockpit attached with ``--connect``, the home's files otherwise."""
    return FeedSource(link) if link.remote else FileSource(home)


class FileSource:
    """The spine files of a home on this machine (``SpineWatcher``)."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.watcher = SpineWatcher(home.heinzel_root)

    async def prime(self) -> None:
        self.watcher.prime(self.home.heinzel_ids())

    async def run(self, deliver: Deliver) -> None:
        await self.watcher.run(deliver)


class FeedSource:
    """The daemon's feed, from the position taken at ``prime``; follows again when it ends."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.position: int | None = None

    async def prime(self) -> None:
        self.position = await self.link.feed_edge()

    async def run(self, deliver: Deliver) -> None:
        """Follow the feed until cancelled; a lost position means a fresh start and a reload.

        A daemon the link lost is followed again as soon as the link is
        attached again; a feed that ended or dropped, after a pause that
        grows up to ``RETRY_MAX_S``. Either way from the last item delivered.
        """
        pause = RETRY_MIN_S
        while True:
            try:
                if self.position is None:
                    await self.prime()
                    deliver(SpineBatch(reload=True))
                await self.follow(deliver)
                pause = RETRY_MIN_S
            except NotConnected:
                await self.link.wait_attached()
                pause = RETRY_MIN_S
                continue
            except HzError as exc:
                if exc.code == FEED_RESET:
                    self.position = None
                    continue
            await asyncio.sleep(pause)
            pause = min(pause * 2, RETRY_MAX_S)

    async def follow(self, deliver: Deliver) -> None:
        """One subscription: whatever arrived together is delivered as one batch."""
        arrived: asyncio.Queue[FeedItem | None] = asyncio.Queue()

        async def read() -> None:
            try:
                async for item in self.link.subscribe(self.position):
                    arrived.put_nowait(item)
            finally:
                arrived.put_nowait(None)

        reader = asyncio.ensure_future(read())
        try:
            while True:
                items = [await arrived.get()]
                while not arrived.empty():
                    items.append(arrived.get_nowait())
                batch = self.batch_of([item for item in items if item is not None])
                if batch:
                    deliver(batch)
                if None in items:
                    await reader  # raises what ended the subscription, if anything did
                    return
        finally:
            reader.cancel()

    def batch_of(self, items: list[FeedItem]) -> SpineBatch:
        moved: dict[str, int | None] = {}
        lines: dict[str, list[SpineLine]] = {}
        bodies: dict[str, list[BodyDelta]] = {}
        for item in items:
            self.position = item.seq
            heinzel = item.heinzel
            if item.type == "event" and item.event is not None:
                try:
                    line = SpineLine.model_validate(item.event)
                except ValidationError:
                    continue
                moved[heinzel] = line.seq
                lines.setdefault(heinzel, []).append(line)
            elif item.type == "body" and item.body is not None:
                bodies.setdefault(heinzel, []).append(BodyDelta(turn=item.turn, record=item.body))
            elif item.type == "row":
                moved.setdefault(heinzel, None)
        return SpineBatch(moved=moved, lines=lines, bodies=bodies)
