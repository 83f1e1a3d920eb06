"""A heinzel's session as its writer holds it: the open spine plus its live projection.

The writer's first read of the spine doubles as the projection's input,
so taking the lock, repairing a torn tail and bringing the index up to date
cost one read of the file.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import orjson

from hz_kernel.observe import Observation, Observer
from hz_kernel.store.envelope import Event
from hz_kernel.store.fsutil import read_nofollow
from hz_kernel.store.index import Index, stat_spine
from hz_kernel.store.projection import Projection
from hz_kernel.store.scan import SpineScan
from hz_kernel.store.spine import SpineWriter
from hz_kernel.vocabulary import EventData


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

    @property
    def damaged(self) -> bool:
        return bool(self.projection.heinzel["damaged"])

    async def sync_index(self, *, full: bool = False) -> None:
        stats = {self.id: stat_spine(self.writer.path)}
        await self.index.write([self.projection], stats, full=full)

    async def append(
        self,
        payload: EventData,
        *,
        turn: str | None = None,
        key: str | None = None,
        ts: datetime | None = None,
        flush: bool = True,
    ) -> Event:
        """Append durably, fold into the projection, then (by default) update the index."""
        event = self.writer.append(payload, turn=turn, key=key, ts=ts)
        self.scan.events.append(event)
        self.projection.apply(event)
        if flush:
            await self.sync_index()
        if self._notify is not None:
            self._notify(Observation(heinzel=self.id, event=event, turn=event.turn))
        return event

    def close(self) -> None:
        self.writer.close()
