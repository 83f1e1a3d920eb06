"""A heinzel's session as its writer holds it: the open spine plus its live projection.

The writer's first read of the spine doubles as the projection's input,
so taking the lock, repairing a torn tail and bringing the index up to date
cost one read of the file.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from hz_kernel.errors import HzError
from hz_kernel.observe import Observation, Observer
from hz_kernel.store.envelope import Event
from hz_kernel.store.fsutil import read_nofollow
from hz_kernel.store.index import Index, stat_spine
from hz_kernel.store.positions import Positions
from hz_kernel.store.projection import Projection
from hz_kernel.store.scan import ChainBreak, SpineScan, index_break
from hz_kernel.store.spine import SpineWriter
from hz_kernel.vocabulary import ChainAccepted, EventData

if TYPE_CHECKING:
    from hz_kernel.contracts import CompiledContract

#: The writer's code for a spine shorter than it left it (``SpineWriter._foreign``).
CUT_UNDER_WRITER = "HZS100"


def contract_loader(heinzel_dir: Path) -> object:
    """A loader of compiled contract versions for the projection (missing or bad → None)."""

    def load(version: int | str) -> dict[str, object] | None:
        name = f"v{version}" if isinstance(version, int) else f"proposals/{version}"
        try:
            raw = read_nofollow(heinzel_dir / "contract" / f"{name}.compiled.json")
            data = orjson.loads(raw)
        except (OSError, orjson.JSONDecodeError):
            return None
        return data if isinstance(data, dict) else None

    return load


def project(heinzel_id: str, heinzel_dir: Path, found: SpineScan) -> Projection:
    proj = Projection(heinzel_id, contract_loader(heinzel_dir))  # type: ignore[arg-type]
    proj.apply_all(found.events)
    proj.mark_damaged(not found.intact)
    return proj


class HeldSession:
    """The spine writer and projection of one heinzel, owned by one kernel."""

    def __init__(
        self,
        heinzel_id: str,
        heinzel_dir: Path,
        index: Index,
        notify: Observer | None = None,
    ) -> None:
        self.id = heinzel_id
        self._notify = notify
        self.dir = heinzel_dir
        self.index = index
        self.writer = SpineWriter.open(heinzel_dir)
        assert self.writer.opened_scan is not None
        self.scan = self.writer.opened_scan
        self.projection = project(heinzel_id, heinzel_dir, self.scan)
        #: Called before each flush: a running turn syncs its body, so no spine line is
        #: durable before the body records written ahead of it.
        self.before_flush: Callable[[], None] | None = None
        #: Set by a running turn for local work between two waits (see ``publish``): lines
        #: are made durable as ever, and indexed and told only at the next ``publish``.
        self.index_later = False
        self._untold: list[Event] = []
        #: Set when the spine contradicts the index (cut off, last line changed): see ``append``.
        self.index_break: ChainBreak | None = None
        #: Contract versions compiled, read once while held: a version is never rewritten
        #: with other text, so each turn takes its pinned one from here, not from disk.
        self.contracts: dict[int, CompiledContract] = {}

    @property
    def damaged(self) -> bool:
        return bool(self.projection.heinzel["damaged"])

    async def check_against_index(self) -> bool:
        """Compare the spine with the seq and hash the index saw; True if it contradicts them.

        A contradicted spine is marked damaged in the index, whose rows (the
        last state known good) are kept, and only ``chain.accepted`` may be
        written until the user accepts what happened.
        """
        self.index_break = index_break(self.index.seen(self.id), self.scan)
        if self.index_break is None:
            return False
        self.projection.mark_damaged(True)
        await self.index.mark_damaged(self.id, stat_spine(self.writer.path))
        return True

    def accepted(self) -> None:
        """The user accepted the damage: the spine as it is now is the record again."""
        self.index_break = None
        self.projection.mark_damaged(False)

    async def sync_index(self, *, full: bool = False) -> Positions:
        """Bring the index up to the spine; the feed positions given to lines new to it."""
        stats = {self.id: stat_spine(self.writer.path)}
        spines = {self.id: self.scan.events}
        return await self.index.write([self.projection], stats, full=full, spines=spines)

    def _check_writable(self, payload: EventData) -> None:
        if self.index_break is not None and payload.kind != ChainAccepted.kind:
            raise HzError(
                "HZS095",
                f"the spine contradicts the index ({self.index_break.detail}); nothing is "
                "written until you look with hz heinzel verify and accept it (--accept)",
                str(self.writer.path),
            )

    async def append(
        self,
        payload: EventData,
        *,
        turn: str | None = None,
        key: str | None = None,
        ts: datetime | None = None,
    ) -> Event:
        """Append durably (with any staged events before it), fold into the projection,
        update the index, then tell observers.

        Observers hear the line with its feed position, so it is in the
        index (and replayable) before any reader sees it live.
        """
        self._check_writable(payload)
        self.writer.stage(payload, turn=turn, key=key, ts=ts)
        return (await self._flush())[-1]

    def stage(
        self,
        payload: EventData,
        *,
        turn: str | None = None,
        key: str | None = None,
        ts: datetime | None = None,
    ) -> None:
        """Queue an event to be made durable with the next ``append`` or ``flush``.

        Only for an event whose loss in a crash costs nothing to redo: the
        end of a replay-safe step, a note, the record of an effect the
        ledger finds again on resume. Until then it is nowhere: not folded,
        not indexed, not told.
        """
        self._check_writable(payload)
        self.writer.stage(payload, turn=turn, key=key, ts=ts)

    async def flush(self) -> None:
        """Make every staged event durable (nothing to do when none is staged)."""
        if self.writer.staged:
            await self._flush()

    async def publish(self) -> None:
        """Index and tell the lines made durable while ``index_later`` held them back.

        The index is derived: a crash before this leaves it behind the
        spine, which the next writer's ``sync_index`` catches up, as after
        a crash between any spine flush and its index write. Holding lines
        back over a stretch of local work makes that stretch one index
        commit instead of one per flush.
        """
        if self._untold:
            await self._tell(self._untold)

    async def _flush(self) -> list[Event]:
        if self.before_flush is not None:
            try:
                self.before_flush()
            except BaseException:
                # Refused like a failed write: the group is cut off whole, never written
                # later with some other line.
                self.writer.discard()
                raise
        try:
            flushed = self.writer.flush()
        except HzError as exc:
            if exc.code == CUT_UNDER_WRITER:
                await self._found_cut()
            raise
        written = [*self.writer.take_interposed(), *flushed]
        for line in written:
            self.scan.events.append(line)
            self.projection.apply(line)
        self._untold.extend(written)
        if not self.index_later:
            await self._tell(self._untold)
        return flushed

    async def _tell(self, lines: list[Event]) -> None:
        """Index ``lines`` (with the projection's rows), then tell observers of each."""
        assigned = await self.sync_index()
        told, self._untold = lines, []
        if self._notify is not None:
            for line in told:
                position = assigned.get((self.id, line.seq))
                self._notify(
                    Observation(heinzel=self.id, event=line, turn=line.turn, position=position)
                )

    async def _found_cut(self) -> None:
        """Another process cut the spine under this writer: the heinzel is damaged until the
        user accepts it, so no tick retries its turns meanwhile and every page says so."""
        self.projection.mark_damaged(True)
        await self.index.mark_damaged(self.id, stat_spine(self.writer.path))

    def close(self) -> None:
        self.writer.close()
