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
from hz_kernel.errors import echoed

#: The body record types a follower shows: the model's streamed output, its tool calls and
#: the output of a coding agent a call handed a task to, with how that ended.
SHOWN_TYPES = ["chunk", "tool_call", "tool_result", "handoff_output", "handoff"]
ARG_CHARS = 40
RESULT_CHARS = 80


def chunk_text(records: list[dict[str, Any]]) -> str:
    """The streamed model output in a run of body records, each tool call a line of its own
    with a line for its result, a handoff's output where it ran."""
    return "".join(_shown(record) for record in records)


def _shown(record: dict[str, Any]) -> str:
    kind = record.get("type")
    if kind == "chunk":
        return str(record.get("text", ""))
    if kind == "tool_call":
        return f"⚙ {tool_call_line(record)}\n"
    if kind == "tool_result":
        return f"  → {tool_result_line(record)}\n"
    if kind == "handoff_output":
        return runner_text(str(record.get("text", "")))
    if kind == "handoff":
        return f"{runner_text(handoff_tail(record))}  ⎿ {handoff_line(record)}\n"
    return ""


def _count(value: object) -> int:
    """A count from a body record read raw (the file tail checks no shapes): 0 unless an int."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def handoff_tail(record: dict[str, Any]) -> str:
    """The end of a runner's output its ``handoff`` record keeps, after a marked cut if any."""
    cut = _count(record.get("cut"))
    left_out = f"[hz: {cut} bytes of output left out here]\n" if cut else ""
    return left_out + str(record.get("tail") or "")


def runner_text(text: str) -> str:
    """A runner's output as shown: its lines as they are, anything that would drive a
    terminal shown as an escape."""
    return echoed(text, keep="\n\t")


def handoff_line(record: dict[str, Any]) -> str:
    """How a handoff's runner ended: ``claude exited 0 after 12.5 s``."""
    seconds = _count(record.get("duration_ms")) / 1000
    if record.get("stopped"):
        ended = "was stopped"
    elif record.get("timed_out"):
        ended = "ran over its time"
    else:
        ended = f"exited {record.get('exit_status')}"
    return f"{record.get('runner')} {ended} after {seconds:.1f} s"


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tool_call_line(record: dict[str, Any]) -> str:
    """``name(arg=value, …)`` with each value cut short: what a call asked, at a glance."""
    args = record.get("args") or {}
    shown = ", ".join(f"{k}={_clip(str(v), ARG_CHARS)}" for k, v in dict(args).items())
    return f"{record.get('tool')}({shown})"


def tool_result_line(record: dict[str, Any]) -> str:
    """A result's first words, its size and whether the model got only its head and tail;
    or the code a call was refused or failed with."""
    if record.get("error"):
        return _clip(str(record.get("message") or record["error"]), RESULT_CHARS * 2)
    text = str(record.get("shown", record.get("result", "")))
    cut = ", truncated: the model got its head and tail" if record.get("truncated") else ""
    first = _clip(text, RESULT_CHARS) or "(empty)"
    return f"{first} ({record.get('size', len(text))} chars{cut})"


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
