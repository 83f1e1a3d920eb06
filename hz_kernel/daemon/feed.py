"""The feed hub: one fan-out of what the kernel observes, replayable from the index.

The hub is a kernel observer. A spine event arrives with its durable
position (``hz_kernel.store.positions``), which becomes its ``seq``; a
body delta or row change is live only and carries the position of the
last event before it, so resuming from any item's ``seq`` misses no event.
Each item is handed to every subscription's own bounded queue and its JSON
is encoded at most once, however many connections carry it. A reader that
falls behind overflows alone: its subscription leaves the fan-out and the
others never notice.

Replay reads the index and the spines, never a memory of what was
published, so it survives a restart of the daemon: a reader that comes
back with a position of the same index generation gets exactly the events
after it. Only a position of another generation (the index was deleted or
rebuilt) or one beyond the edge gets a ``reset``. What replays read is
kept, encoded, in a bounded cache by position (``ReplayCache``): after a
restart every reader comes back from about the same position, and the
spines are read once for all of them, not once per reader.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import orjson
from ulid import ULID

from hz_kernel.daemon.protocol import (
    FeedItem,
    FeedReset,
    FeedType,
    Hello,
    Overflow,
    Reset,
    ResetReason,
)
from hz_kernel.observe import Observation
from hz_kernel.store.positions import FeedRows, FileStamp, Line, Row, SpineChanged
from hz_kernel.store.spine import SPINE_NAME

if TYPE_CHECKING:
    from hz_kernel.core import KernelCore

#: Replayed events per frame, so a long replay is paced by the socket.
REPLAY_PAGE = 256
#: Rows a replay that misses the cache reads at once: each spine is read once per this many.
READ_AHEAD = 2048
#: Bytes of replayed JSON the hub keeps for the next reader of the same range.
REPLAY_CACHE_BYTES = 4 * 1024 * 1024
#: How often a daemon's hub looks for positions other processes gave lines (a CLI's write).
WATCH_SECONDS = 1.0


def sse_frame(name: str, data: bytes) -> bytes:
    """One server-sent event; ``data`` is a single line of JSON."""
    return f"event: {name}\ndata: ".encode() + data + b"\n\n"


def items_frame(entries: list[FeedEntry]) -> bytes:
    """One ``items`` event carrying a run of entries, its id the last position.

    Whatever queued up while a connection was writing leaves as one event:
    a burst costs a reader one parse, and the id is where to resume from.
    """
    body = b",".join(entry.json for entry in entries)
    return b"id: %d\nevent: items\ndata: [%b]\n\n" % (entries[-1].seq, body)


#: The comment an idle connection receives every ``feed_heartbeat_seconds``.
HEARTBEAT_COMMENT = "keep-alive"


class FeedEntry:
    """A feed item as the model (in process) or its JSON bytes (on the wire), each made once."""

    __slots__ = ("_item", "_json", "seq")

    def __init__(self, seq: int, item: FeedItem | None = None, json: bytes | None = None) -> None:
        self.seq = seq
        self._item = item
        self._json = json

    @classmethod
    def of_line(cls, line: Line) -> FeedEntry:
        """A replayed event: the spine's bytes are the envelope, spliced in, not re-encoded."""
        json = b'{"seq":%d,"heinzel":%b,"type":"event","turn":%b,"event":%b,"body":null}' % (
            line.position,
            orjson.dumps(line.heinzel),
            orjson.dumps(line.turn),
            line.raw,
        )
        return cls(line.position, json=json)

    @property
    def item(self) -> FeedItem:
        if self._item is None:
            assert self._json is not None
            self._item = FeedItem.model_validate_json(self._json)
        return self._item

    @property
    def json(self) -> bytes:
        if self._json is None:
            assert self._item is not None
            self._json = self._item.model_dump_json().encode()
        return self._json


class ReplayCache:
    """Replayed entries by position, encoded once and shared by every reader of a hub.

    A page whose entries are all here costs one index query; a miss reads
    the spines for up to ``READ_AHEAD`` rows at once, each spine once. An
    entry holds what its line was when read: it is dropped when its spine
    file changes (size, mtime or inode, checked once per spine per page),
    with its index generation, and oldest first beyond ``budget`` bytes.
    """

    def __init__(self, rows: FeedRows, budget: int = REPLAY_CACHE_BYTES) -> None:
        self.rows = rows
        self.budget = budget
        self.generation = rows.generation
        self._entries: dict[int, FeedEntry] = {}
        self._bytes = 0
        self._spine_of: dict[int, str] = {}
        """The heinzel whose spine each entry was read from."""
        self._stamps: dict[str, FileStamp] = {}
        """Each spine as it was when its entries here were read."""

    def page(self, after: int, upto: int) -> list[FeedEntry]:
        """Up to ``REPLAY_PAGE`` events with ``after < position <= upto``, in order.

        Raises ``SpineChanged`` when a line it reads (of the page, or read ahead) is not
        where the index put it.
        """
        hit, ahead, missing = self._look_up(after, upto)
        if hit is not None:
            return hit
        return self._fill(ahead, self.rows.lines(missing))

    async def page_off_loop(self, after: int, upto: int) -> list[FeedEntry]:
        """``page``, reading the spines in a worker thread: a spine edited by hand costs a
        pass over the whole file, which must not hold up the daemon's event loop."""
        hit, ahead, missing = self._look_up(after, upto)
        if hit is not None:
            return hit
        generation = self.generation
        lines = await asyncio.to_thread(self.rows.lines, missing)
        return self._fill(ahead, lines, keep=self.rows.generation == generation)

    def _look_up(
        self, after: int, upto: int
    ) -> tuple[list[FeedEntry] | None, list[Row], list[Row]]:
        """The page if the cache holds all of it; else the rows to read ahead and those missing."""
        if self.rows.generation != self.generation:
            self._entries.clear()
            self._spine_of.clear()
            self._stamps.clear()
            self._bytes = 0
            self.generation = self.rows.generation
        rows = self.rows.rows(after, upto, REPLAY_PAGE)
        for heinzel_id in {row.heinzel for row in rows} & self._stamps.keys():
            if self.rows.stamp(heinzel_id) != self._stamps[heinzel_id]:
                self._drop(heinzel_id)
        kept = self._entries
        if all(row.position in kept for row in rows):
            return [kept[row.position] for row in rows], [], []
        ahead = self.rows.rows(after, upto, READ_AHEAD)
        return None, ahead, [row for row in ahead if row.position not in kept]

    def _fill(self, ahead: list[Row], lines: list[Line], keep: bool = True) -> list[FeedEntry]:
        """The page of ``ahead`` from the cache and the ``lines`` just read, kept unless
        the index was rebuilt while they were read."""
        kept = self._entries
        fresh = {line.position: FeedEntry.of_line(line) for line in lines}
        page = [kept.get(row.position) or fresh[row.position] for row in ahead[:REPLAY_PAGE]]
        for line in lines if keep else ():
            if self._stamps.get(line.heinzel) != line.stamp:
                self._drop(line.heinzel)
                self._stamps[line.heinzel] = line.stamp
            self._keep(line.heinzel, fresh[line.position])
        return page

    def _keep(self, heinzel_id: str, entry: FeedEntry) -> None:
        self._entries[entry.seq] = entry
        self._spine_of[entry.seq] = heinzel_id
        self._bytes += len(entry.json)
        while self._bytes > self.budget:
            position = next(iter(self._entries))
            self._bytes -= len(self._entries.pop(position).json)
            del self._spine_of[position]

    def _drop(self, heinzel_id: str) -> None:
        """Forget the entries of a spine that changed since they were read."""
        for position in [p for p, owner in self._spine_of.items() if owner == heinzel_id]:
            self._bytes -= len(self._entries.pop(position).json)
            del self._spine_of[position]
        self._stamps.pop(heinzel_id, None)


class Subscription:
    """One reader's place in the hub: what to replay, then its bounded live queue."""

    def __init__(self, hub: FeedHub, capacity: int) -> None:
        self.hub = hub
        self.capacity = capacity
        self.queue: deque[FeedEntry] = deque()
        self.overflowed = False
        self.closed = False
        self.last = hub.edge
        self.hello = Hello(run=hub.run, generation=hub.generation, edge=hub.edge)
        self.reset: Reset | None = None
        self._replayed = hub.edge
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

    def replay_from(self, after: int) -> None:
        self._replayed = after

    def replay_page(self) -> list[FeedEntry]:
        """The next page of events between the reader's position and the edge at joining.

        [] when the replay is done. Sets ``reset`` (and returns []) when the
        index can no longer serve it: rebuilt meanwhile, or a line gone.
        """
        if not self._replaying():
            return []
        try:
            page = self.hub.cache.page(self._replayed, self.hello.edge)
        except SpineChanged:
            page = None
        return self._replayed_page(page)

    async def replay_page_off_loop(self) -> list[FeedEntry]:
        """``replay_page`` with the spines read in a worker thread (what a connection uses)."""
        if not self._replaying():
            return []
        try:
            page = await self.hub.cache.page_off_loop(self._replayed, self.hello.edge)
        except SpineChanged:
            page = None
        if not self._replaying():
            return []
        return self._replayed_page(page)

    def _replaying(self) -> bool:
        if self._replayed >= self.hello.edge or self.reset is not None:
            return False
        if self.hub.rows.generation != self.hello.generation:
            self.reset = self.hub.reset("other-generation")
            return False
        return True

    def _replayed_page(self, page: list[FeedEntry] | None) -> list[FeedEntry]:
        """Advance past ``page`` (None: a line is gone, reset)."""
        if page is None:
            self.reset = self.hub.reset("spine-changed")
            return []
        if not page:
            self._replayed = self.hello.edge
            return []
        self._replayed = self.last = page[-1].seq
        return page

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
    """The fan-out over one home's index. Register ``hub.observe`` as a kernel observer."""

    def __init__(self, rows: FeedRows, *, queue_items: int = 4096, run: str | None = None) -> None:
        self.rows = rows
        self.cache = ReplayCache(rows)
        self.run = run or str(ULID())
        self.queue_items = queue_items
        self.generation = rows.generation
        self.edge = rows.edge()
        """The last position published (or, at start, the last the index has assigned)."""
        self._live: set[Subscription] = set()
        self.stopped = False
        """Closed for good (the daemon is stopping): a late subscriber gets an ended feed."""

    @classmethod
    def of(cls, kernel: KernelCore, *, queue_items: int = 4096) -> FeedHub:
        """The hub over ``kernel``'s index and spines (observing is the caller's to register)."""
        home = kernel.home
        rows = FeedRows(kernel.index, lambda heinzel_id: home.heinzel_dir(heinzel_id) / SPINE_NAME)
        return cls(rows, queue_items=queue_items)

    @property
    def subscribers(self) -> int:
        return len(self._live)

    def reset(self, reason: ResetReason) -> Reset:
        return Reset(reason=reason, generation=self.generation, edge=self.edge)

    def observe(self, observation: Observation) -> None:
        """The kernel observer: publish the observation in position order."""
        event = observation.event
        turn = observation.turn or (event.turn if event is not None else None)
        if event is not None:
            if observation.position is None:
                return
            self._follow_generation(observation.position)
            if observation.position <= self.edge:
                return
            self.catch_up(observation.position - 1)
            item = FeedItem(
                seq=observation.position,
                heinzel=observation.heinzel,
                type="event",
                turn=turn,
                event=event.to_dict(),
            )
            self.publish(FeedEntry(item.seq, item))
            return
        kind: FeedType = "body" if observation.body is not None else "row"
        item = FeedItem(
            seq=self.edge, heinzel=observation.heinzel, type=kind, turn=turn, body=observation.body
        )
        self.publish(FeedEntry(item.seq, item))

    def _follow_generation(self, position: int) -> None:
        """The index was rebuilt under the hub: end every reader (their positions mean nothing)."""
        if self.rows.generation == self.generation:
            return
        self.generation = self.rows.generation
        self.edge = position - 1
        self.close(self.reset("other-generation"))

    def catch_up(self, upto: int | None = None) -> None:
        """Publish the lines other processes positioned since the edge, up to ``upto``.

        A CLI that wrote a spine the daemon does not hold gave its lines
        positions in the shared index; they are published here, in order,
        before anything after them.
        """
        if self.rows.generation != self.generation:
            self._follow_generation(self.rows.edge() + 1)
            return
        target = self.rows.edge() if upto is None else upto
        while self.edge < target:
            try:
                entries = self.cache.page(self.edge, target)
            except SpineChanged:
                entries = []
            for entry in entries:
                self.publish(entry)
            if not entries:
                self.edge = target

    def publish(self, entry: FeedEntry) -> None:
        self.edge = max(self.edge, entry.seq)
        for subscription in list(self._live):
            if not subscription.push(entry):
                self._live.discard(subscription)

    async def watch(self, interval: float = WATCH_SECONDS) -> None:
        """Catch up with other processes' lines every ``interval`` (the daemon runs this)."""
        while True:
            await asyncio.sleep(interval)
            self.catch_up()

    def subscribe(self, after: int | None = None, generation: str | None = None) -> Subscription:
        """Join the live fan-out and take the edge in one step, then decide what to replay.

        Both happen without yielding to the event loop, so every event is
        either in the replay (read later from the index, up to that edge) or
        in the live queue, exactly once. ``after`` None means "from now on";
        ``generation`` None takes ``after`` at its word.
        """
        subscription = Subscription(self, self.queue_items)
        if self.stopped:
            subscription.end()
        else:
            self._live.add(subscription)
        if after is None:
            return subscription
        if generation is not None and generation != self.generation:
            subscription.reset = self.reset("other-generation")
        elif after > self.edge:
            subscription.reset = self.reset("ahead-of-edge")
        else:
            subscription.replay_from(after)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._live.discard(subscription)

    def close(self, reset: Reset | None = None) -> None:
        """End every subscription: the daemon is stopping, or (``reset``) the index was rebuilt.

        Stopping is for good: a reader that subscribes in the moment before the
        server exits is ended too, or it would hold the exit up until the
        server's graceful timeout cancelled it.
        """
        self.stopped = self.stopped or reset is None
        for subscription in list(self._live):
            subscription.reset = subscription.reset or reset
            subscription.end()
        self._live.clear()

    async def items(
        self, after: int | None = None, generation: str | None = None
    ) -> AsyncIterator[FeedItem]:
        """In-process reading: replay, then follow; an overflow resumes from the index.

        Raises ``FeedReset`` when the position cannot be served. Ends when
        the hub closes.
        """
        position = after
        while True:
            subscription = self.subscribe(position, generation)
            try:
                generation = subscription.hello.generation
                if position is None:
                    position = subscription.hello.edge
                while page := await subscription.replay_page_off_loop():
                    for entry in page:
                        position = entry.seq
                        yield entry.item
                while subscription.reset is None and not subscription.finished:
                    for entry in await subscription.next_batch():
                        position = entry.seq
                        yield entry.item
                if subscription.reset is not None:
                    raise FeedReset(subscription.reset)
                if subscription.closed:
                    return
            finally:
                subscription.close()


async def frames(subscription: Subscription) -> AsyncIterator[bytes]:
    """The SSE frames of one connection: hello, the replay page by page, then live items.

    Each ``yield`` waits for the socket to take the frame, so a long replay
    is read from the index only as fast as the reader takes it.
    """
    try:
        yield sse_frame("hello", subscription.hello.model_dump_json().encode())
        while page := await subscription.replay_page_off_loop():
            yield items_frame(page)
        while subscription.reset is None and not subscription.finished:
            batch = await subscription.next_batch()
            if batch:
                yield items_frame(batch)
        if subscription.reset is not None:
            yield sse_frame("reset", subscription.reset.model_dump_json().encode())
        elif subscription.overflowed:
            yield sse_frame("overflow", subscription.overflow().model_dump_json().encode())
    finally:
        subscription.close()
