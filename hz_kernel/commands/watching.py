"""Reads for a head that follows a turn from afar: a turn's events and its body by offset.

A head on the kernel's machine tails the spine and the body itself; one
attached over the wire (``hz --connect``) catches up through ``turn.body``
and then follows the feed, whose body deltas carry the same byte offsets.
"""

from __future__ import annotations

from hz_kernel import api
from hz_kernel.core import KernelCore
from hz_kernel.errors import HzError
from hz_kernel.store.bodies import read_body_page
from hz_kernel.store.envelope import Event
from hz_kernel.store.scan import scan_file
from hz_kernel.store.spine import SPINE_NAME

#: Body bytes one ``turn.body`` answer carries at most; a larger backlog takes several calls.
BODY_PAGE_BYTES = 512 * 1024


class WatchCommands(KernelCore):
    """``turn.body``."""

    async def turn_body(
        self,
        *,
        ref: str,
        turn: str | None = None,
        after_offset: int = 0,
        types: list[str] | None = None,
    ) -> api.TurnBody:
        row = await self.resolve(ref)
        heinzel_id = row["id"]
        events = self._spine_events(heinzel_id)
        if turn is None:
            turn = next((e.turn for e in reversed(events) if e.kind == "turn.started"), None)
        if turn is None:
            return api.TurnBody(heinzel=heinzel_id)
        try:
            page = read_body_page(
                self.home.heinzel_dir(heinzel_id), turn, after_offset, BODY_PAGE_BYTES
            )
        except HzError as exc:
            return api.TurnBody(
                heinzel=heinzel_id,
                turn=turn,
                events=[e.to_dict() for e in events if e.turn == turn],
                offset=after_offset,
                refused=exc.one_line(),
            )
        records, offset, more = page if page is not None else ([], after_offset, False)
        wanted = set(types) if types is not None else None
        return api.TurnBody(
            heinzel=heinzel_id,
            turn=turn,
            events=[e.to_dict() for e in events if e.turn == turn],
            records=[r for r in records if wanted is None or r.get("type") in wanted],
            offset=offset,
            more=more,
            present=page is not None,
        )

    def _spine_events(self, heinzel_id: str) -> list[Event]:
        """The spine's events: from the session this kernel holds, else read from the file."""
        held = self.sessions.get(heinzel_id)
        if held is not None:
            return held.scan.events
        return scan_file(self.home.heinzel_dir(heinzel_id) / SPINE_NAME).events
