"""From "these spines moved" to fresh rows: coalesced per frame, re-asked of the kernel.

The watcher says which spines gained lines and the newest seq it read. The
refresher waits one frame so a burst becomes one batch, then asks the kernel
for just those heinzels. The kernel indexes a line right after it is
durable, so a row can briefly lag its spine; a row whose seq is behind what
the tail read is shown as the kernel has it and asked again a moment later.

Cost (``bench/cockpit.py``, 500 heinzels): ``heinzel.show`` answers one
heinzel in about 6 ms, ``heinzel.list`` all of them in about 40 ms, so up to
``SHOW_UP_TO`` moved heinzels are shown one by one and more take the list.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from hz_kernel import operations as ops
from hz_kernel.api import HeinzelSummary
from hz_kernel.client import KernelClient
from hz_kernel.errors import HzError
from hz_tui.messages import RowsUpdate
from hz_tui.watcher import SpineBatch

SHOW_UP_TO = 6
FRAME_S = 1 / 60
LAG_RETRY_S = 0.02
LAG_GIVE_UP_S = 2.0


class RowRefresher:
    """Turns spine batches into ``RowsUpdate``s, at most one kernel round per frame."""

    def __init__(self, client: KernelClient) -> None:
        self.client = client
        self.pending: dict[str, int | None] = {}
        self.gone: set[str] = set()
        self.first_seen: dict[str, float] = {}
        self.wake = asyncio.Event()

    def note(self, batch: SpineBatch) -> None:
        now = time.monotonic()
        for heinzel_id, seq in batch.moved.items():
            seqs = [s for s in (self.pending.get(heinzel_id), seq) if s is not None]
            self.pending[heinzel_id] = max(seqs) if seqs else None
            self.first_seen.setdefault(heinzel_id, now)
        self.gone.update(batch.gone)
        self.wake.set()

    async def fetch(
        self, wanted: dict[str, int | None]
    ) -> tuple[RowsUpdate, dict[str, int | None]]:
        """Rows for ``wanted``; the second value holds those whose index lags the spine."""
        rows: dict[str, HeinzelSummary] = {}
        gone: list[str] = []
        if len(wanted) <= SHOW_UP_TO:
            for heinzel_id in wanted:
                try:
                    detail = await self.client.call(ops.SHOW, ops.HeinzelRef(ref=heinzel_id))
                except HzError as exc:
                    if exc.code != "HZU010":
                        raise
                    gone.append(heinzel_id)
                else:
                    rows[heinzel_id] = detail.heinzel
        else:
            listed = await self.client.call(ops.LIST, ops.ListRequest())
            by_id = {item.id: item for item in listed.items}
            for heinzel_id in wanted:
                if heinzel_id in by_id:
                    rows[heinzel_id] = by_id[heinzel_id]
                else:
                    gone.append(heinzel_id)
        lagging = {
            heinzel_id: seq
            for heinzel_id, seq in wanted.items()
            if seq is not None and heinzel_id in rows and rows[heinzel_id].seq < seq
        }
        return RowsUpdate(rows=list(rows.values()), gone=gone), lagging

    async def run(
        self, publish: Callable[[RowsUpdate], None], on_error: Callable[[HzError], None]
    ) -> None:
        """Serve batches until cancelled."""
        while True:
            await self.wake.wait()
            self.wake.clear()
            await asyncio.sleep(FRAME_S)
            wanted, self.pending = self.pending, {}
            gone, self.gone = sorted(self.gone), set()
            if gone:
                publish(RowsUpdate(gone=gone))
            if not wanted:
                continue
            try:
                update, lagging = await self.fetch(wanted)
            except HzError as exc:
                on_error(exc)
                continue
            for heinzel_id in update.ids - lagging.keys():
                self.first_seen.pop(heinzel_id, None)
            if update.rows or update.gone:
                publish(update)
            self._retry(lagging)

    def _retry(self, lagging: dict[str, int | None]) -> None:
        """Ask again shortly for rows the index has not caught up on; give up after a while."""
        now = time.monotonic()
        for heinzel_id, seq in lagging.items():
            if now - self.first_seen.get(heinzel_id, now) > LAG_GIVE_UP_S:
                self.first_seen.pop(heinzel_id, None)
                continue
            self.pending.setdefault(heinzel_id, seq)
        if self.pending:
            asyncio.get_running_loop().call_later(LAG_RETRY_S, self.wake.set)
