"""Following spines by byte offset: each read returns only lines appended since the last one.

A spine only grows (``docs/format.md``), so a reader that remembers where it
stopped never rereads a byte. A line counts once its newline is on disk: a
partly written last line is left for the next read, when the writer has
finished it. Torn-tail repair only cuts bytes after the last newline, which
this reader never consumed; a file that shrank below the offset anyway was
replaced, and the reader starts it over and says so.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

#: The spine's file name (``docs/format.md``); the store module is the kernel's, not ours.
SPINE_NAME = "session.jsonl"
#: One read's ceiling; a larger backlog is read over several calls.
READ_LIMIT = 4 << 20


class SpineLine(BaseModel):
    """The envelope fields the cockpit uses; payloads stay with the kernel."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    seq: int
    ts: str
    turn: str | None = None
    kind: str
    key: str | None = None


class TailRead(BaseModel):
    """What one read found: the new lines, unreadable ones counted, and a restart flag."""

    model_config = ConfigDict(frozen=True)

    lines: list[SpineLine] = []
    unreadable: int = 0
    restarted: bool = False

    @property
    def last_seq(self) -> int | None:
        return self.lines[-1].seq if self.lines else None


class SpineTail:
    """A reader of one spine that remembers its byte offset."""

    def __init__(self, path: Path, offset: int = 0) -> None:
        self.path = path
        self.offset = offset

    @classmethod
    def at_end(cls, path: Path) -> SpineTail:
        """A tail that starts after what is on disk now (the screen already shows it)."""
        try:
            size = os.stat(path).st_size
        except OSError:
            size = 0
        return cls(path, size)

    def read_new(self) -> TailRead:
        """Read whole lines appended since the last call; a missing file reads as nothing."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return TailRead()
        try:
            size = os.fstat(fd).st_size
            restarted = size < self.offset
            if restarted:
                self.offset = 0
            if size == self.offset:
                return TailRead(restarted=restarted)
            data = os.pread(fd, min(size - self.offset, READ_LIMIT), self.offset)
        finally:
            os.close(fd)
        end = data.rfind(b"\n")
        if end < 0:
            return TailRead(restarted=restarted)
        whole = data[: end + 1]
        self.offset += len(whole)
        lines: list[SpineLine] = []
        unreadable = 0
        for raw in whole.split(b"\n")[:-1]:
            parsed = _parse(raw)
            if parsed is None:
                unreadable += 1
            else:
                lines.append(parsed)
        return TailRead(lines=lines, unreadable=unreadable, restarted=restarted)


def _parse(raw: bytes) -> SpineLine | None:
    """One envelope, or None for a line that is not one (damage is the verifier's to report)."""
    stripped = raw.strip(b"\x00 \r")
    if not stripped:
        return None
    try:
        return SpineLine.model_validate(orjson.loads(stripped))
    except (orjson.JSONDecodeError, ValidationError):
        return None
