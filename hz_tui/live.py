"""From "these spines moved" to fresh rows: one kernel query per batch, never a fixed wait.

The watcher says which spines gained lines and the newest seq it read. The
refresher asks the kernel for just those heinzels in one ``heinzel.list``
(``ids``); what arrives while that query runs is asked next, as one batch,
so a burst coalesces by itself and a lone append pays no waiting. The
kernel indexes a line right after it is durable, so a row can briefly lag
its spine; a row whose seq is behind what the tail read is shown as the
kernel has it and asked again a moment later.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from hz_kernel import operations as ops
from hz_kernel.client import KernelClient
from hz_kernel.errors import HzError
from hz_kernel.overview import HeinzelSummary
from hz_tui.messages import RowsUpdate
from hz_tui.watcher import SpineBatch

LAG_RETRY_S = 0.02
LAG_GIVE_UP_S = 2.0


class RowRefresher:
    """Turns spine batches into ``RowsUpdate``s, one kernel query at a time."""

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
        ids = sorted(wanted) if len(wanted) <= ops.MAX_LISTED_IDS else None
        listed = await self.client.call(ops.LIST, ops.ListRequest(ids=ids))
        by_id = {item.id: item for item in listed.items}
        rows: dict[str, HeinzelSummary] = {h: by_id[h] for h in wanted if h in by_id}
        gone = sorted(h for h in wanted if h not in by_id)
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
