"""The feed hub: one fan-out of what the kernel observes, shared by every live reader.

The hub is a kernel observer. Each observation becomes one numbered
``FeedItem`` kept in a bounded in-memory log and handed to every
subscription's own bounded queue; its JSON is encoded at most once,
however many connections carry it (a connection only joins those bytes
into its frames). A reader that falls behind overflows alone: its
subscription leaves the fan-out and the others never notice.

Numbers are per run of the hub. A reader that comes back with a number
from another run, or from before what the log still holds, is told to take
a fresh snapshot instead of waiting for items that will never come.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import AsyncIterator

from ulid import ULID

from hz_kernel.daemon.protocol import FeedItem, FeedType, Hello, Overflow, Reset
from hz_kernel.errors import HzError
from hz_kernel.observe import Observation


class FeedReset(HzError):
    """The feed cannot continue from the reader's position: take a fresh snapshot."""

    def __init__(self, reset: Reset) -> None:
        super().__init__(
            "HZD050",
            f"the feed cannot continue from there ({reset.reason}); take a fresh snapshot",
            f"run {reset.run} at seq {reset.edge}",
        )
        self.reset = reset


def sse_frame(name: str, data: bytes) -> bytes:
    """One server-sent event; ``data`` is a single line of JSON."""
    return f"event: {name}\ndata: ".encode() + data + b"\n\n"


def items_frame(entries: list[FeedEntry]) -> bytes:
    """One ``items`` event carrying a run of entries, its id the last seq.

    Whatever queued up while a connection was writing leaves as one event:
    a burst costs a reader one parse, and the id is where to resume from.
    """
    body = b",".join(entry.json for entry in entries)
    return b"id: %d\nevent: items\ndata: [%b]\n\n" % (entries[-1].seq, body)


HEARTBEAT_FRAME = b": keep-alive\n\n"


class FeedEntry:
    """A published item and, once a connection first needs them, its JSON bytes."""

    __slots__ = ("_json", "item")

    def __init__(self, item: FeedItem) -> None:
        self.item = item
        self._json: bytes | None = None

    @property
    def seq(self) -> int:
        return self.item.seq

    @property
    def json(self) -> bytes:
        if self._json is None:
            self._json = self.item.model_dump_json().encode()
        return self._json


class Subscription:
    """One reader's place in the hub: what to replay, then its bounded live queue."""

    def __init__(self, hub: FeedHub, capacity: int) -> None:
        self.hub = hub
        self.capacity = capacity
        self.queue: deque[FeedEntry] = deque()
        self.overflowed = False
        self.closed = False
        self.last = 0
        self.hello = Hello(run=hub.run, edge=hub.edge, first=hub.first)
        self.reset: Reset | None = None
        self.replay: list[FeedEntry] = []
        self._ready = asyncio.Event()

    def push(self, entry: FeedEntry) -> bool:
        """Queue a live entry; False (and overflowed) when the queue is full."""
        if len(self.queue) >= self.capacity:
            self.overflowed = True
            self._ready.set()
            return False
        self.queue.append(entry)
        self._ready.set()
        return True

    def end(self) -> None:
        """The hub is going away: wake the reader so it can finish."""
        self.closed = True
        self._ready.set()

    @property
    def finished(self) -> bool:
        """Nothing more will come: closed, or overflowed with the queue drained."""
        return not self.queue and (self.closed or self.overflowed)

    def overflow(self) -> Overflow:
        return Overflow(capacity=self.capacity, last=self.last)

    async def next_batch(self, timeout: float | None = None) -> list[FeedEntry]:
        """Everything queued now, waiting up to ``timeout`` for something; [] when idle."""
        if not self.queue and not self.finished:
            self._ready.clear()
            try:
                async with asyncio.timeout(timeout):
                    await self._ready.wait()
            except TimeoutError:
                return []
        batch = list(self.queue)
        self.queue.clear()
        if batch:
            self.last = batch[-1].seq
        return batch

    def close(self) -> None:
        self.hub.unsubscribe(self)


class FeedHub:
    """The fan-out. Register ``hub.observe`` as a kernel observer."""

    def __init__(
        self, *, log_items: int = 10_000, queue_items: int = 4096, run: str | None = None
    ) -> None:
        self.run = run or str(ULID())
        self.queue_items = queue_items
        self.edge = 0
        self._log: deque[FeedEntry] = deque(maxlen=log_items)
        self._live: set[Subscription] = set()

    @property
    def first(self) -> int:
        """The oldest seq the log can still replay (``edge + 1`` when it holds nothing)."""
        return self._log[0].seq if self._log else self.edge + 1

    @property
    def subscribers(self) -> int:
        return len(self._live)

    def observe(self, observation: Observation) -> None:
        """The kernel observer: number the observation and fan it out."""
        kind: FeedType
        if observation.event is not None:
            kind = "event"
        elif observation.body is not None:
            kind = "body"
        else:
            kind = "row"
        event = observation.event
        turn = observation.turn or (event.turn if event is not None else None)
        self.publish(
            FeedItem(
                seq=self.edge + 1,
                heinzel=observation.heinzel,
                type=kind,
                turn=turn,
                event=event.to_dict() if event is not None else None,
                body=observation.body,
            )
        )

    def publish(self, item: FeedItem) -> None:
        entry = FeedEntry(item)
        self.edge = item.seq
        self._log.append(entry)
        for subscription in list(self._live):
            if not subscription.push(entry):
                self._live.discard(subscription)

    def subscribe(self, after: int | None = None, run: str | None = None) -> Subscription:
        """Join the live fan-out, then decide what to replay up to the edge seen at joining.

        Both happen without yielding to the event loop, so every item is
        either in the replay or in the live queue, exactly once. ``after``
        None means "from now on".
        """
        subscription = Subscription(self, self.queue_items)
        self._live.add(subscription)
        edge, first = subscription.hello.edge, subscription.hello.first
        subscription.last = edge
        if after is None:
            return subscription
        if run is not None and run != self.run:
            subscription.reset = Reset(reason="other-run", run=self.run, edge=edge)
        elif after > edge:
            subscription.reset = Reset(reason="ahead-of-edge", run=self.run, edge=edge)
        elif after < first - 1:
            subscription.reset = Reset(reason="log-moved-on", run=self.run, edge=edge)
        else:
            subscription.replay = list(itertools.islice(self._log, after - first + 1, None))
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._live.discard(subscription)

    def close(self) -> None:
        """End every subscription (the daemon is shutting down)."""
        for subscription in list(self._live):
            subscription.end()
        self._live.clear()

    async def items(self, after: int | None = None) -> AsyncIterator[FeedItem]:
        """In-process reading: replay, then follow; an overflow resumes from the log.

        Raises ``FeedReset`` when the log can no longer serve the position.
        Ends when the hub closes.
        """
        position = after
        while True:
            subscription = self.subscribe(position)
            try:
                if subscription.reset is not None:
                    raise FeedReset(subscription.reset)
                if position is None:
                    position = subscription.hello.edge
                for entry in subscription.replay:
                    position = entry.seq
                    yield entry.item
                while not subscription.finished:
                    for entry in await subscription.next_batch():
                        position = entry.seq
                        yield entry.item
                if subscription.closed:
                    return
            finally:
                subscription.close()
