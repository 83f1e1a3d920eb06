"""Pruning on its own: a tick loop (the daemon, ``hz tick``, the cockpit) prunes once a day.

What prune removes and what it always keeps is ``StoreCommands.prune``;
this module only decides when a loop runs it, so it stays light enough for
the command line to import.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from hz_kernel.clock import now_utc
from hz_kernel.errors import HzError

#: How often a loop that ticks prunes on its own.
PRUNE_EVERY = timedelta(days=1)


class DailyPrune:
    """Runs a prune at most once per ``PRUNE_EVERY`` of the kernel's clock, from a tick loop.

    Called after every tick; the first call prunes. A failed prune is
    returned to the loop to report, and tried again a day later.
    """

    def __init__(self, prune: Callable[[], Awaitable[object]]) -> None:
        self._prune = prune
        self._last: datetime | None = None

    async def __call__(self) -> HzError | None:
        now = now_utc()
        if self._last is not None and now - self._last < PRUNE_EVERY:
            return None
        self._last = now
        try:
            await self._prune()
        except HzError as exc:
            return exc
        return None
