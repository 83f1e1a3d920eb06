"""Following one turn's body over the wire: feed deltas where they fit, ``turn.body`` for the rest.

Each body delta on the feed carries the byte range of its record in the
body (``offset``, ``end``). A reader that knows where it stands takes a
delta that starts exactly there, skips one it already has, and reads the
body from its place (``turn.body``) when a delta shows a gap: joining
mid-turn, a feed that dropped items, a reconnect. The file-tailing reader
of the cockpit needs none of this; it reads the body file by offset itself.
"""

from __future__ import annotations

from typing import Any

from hz_kernel import operations as ops
from hz_kernel.client import KernelClient

#: The body record types a follower shows: the model's streamed output.
SHOWN_TYPES = ["chunk"]


def chunk_text(records: list[dict[str, Any]]) -> str:
    """The streamed model output in a run of body records."""
    return "".join(str(r.get("text", "")) for r in records if r.get("type") == "chunk")


class BodyCursor:
    """Where a reader of one turn's body stands, as a byte offset into it."""

    def __init__(self, heinzel: str, turn: str, offset: int = 0) -> None:
        self.heinzel = heinzel
        self.turn = turn
        self.offset = offset
        self.present = True
        self.refused: str | None = None
        """The store's coded line when the body is not a regular file (never read)."""

    def take(self, delta: dict[str, Any]) -> str | None:
        """The text a feed delta adds ('' for one already read); None when there is a gap."""
        start, end = delta.get("offset"), delta.get("end")
        if not isinstance(start, int) or not isinstance(end, int):
            return None
        if end <= self.offset:
            return ""
        if start != self.offset:
            return None
        self.offset = end
        return chunk_text([delta])

    async def read(self, client: KernelClient) -> str:
        """Everything streamed from here to the body's current end (``turn.body``, paged)."""
        parts: list[str] = []
        while True:
            page = await client.call(
                ops.TURN_BODY,
                ops.TurnBodyRequest(
                    ref=self.heinzel, turn=self.turn, after_offset=self.offset, types=SHOWN_TYPES
                ),
            )
            self.present = page.present
            self.refused = page.refused
            parts.append(chunk_text(page.records))
            moved = page.offset != self.offset
            self.offset = page.offset
            if not (page.more and moved):
                return "".join(parts)
