"""Following spines and turn bodies by byte offset: each read returns only what was appended.

A spine only grows (``docs/format.md``), so a reader that remembers where it
stopped never rereads a byte. A line counts once its newline is on disk: a
partly written last line is left for the next read, when the writer has
finished it. Torn-tail repair only cuts bytes after the last newline, which
this reader never consumed; a file that shrank below the offset anyway was
replaced, and the reader starts it over and says so. A turn body
(``turns/<turn>.jsonl``) is read the same way, record by record.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from hz_tui.files import NotRegular, open_regular

#: The spine's file name (``docs/format.md``); the store module is the kernel's, not ours.
SPINE_NAME = "session.jsonl"
#: Where a turn's body lives, beside the spine (``docs/format.md``).
BODIES_DIR = "turns"
#: One read's ceiling; a larger backlog is read over several calls.
READ_LIMIT = 4 << 20


class SpineLine(BaseModel):
    """One spine event as the cockpit reads it: the envelope and the kind's small payload."""

    model_config = ConfigDict(defer_build=True, extra="ignore", frozen=True)

    seq: int
    ts: str
    turn: str | None = None
    kind: str
    key: str | None = None
    data: dict[str, Any] = {}


class TailRead(BaseModel):
    """What one read found: the new lines, unreadable ones counted, and a restart flag."""

    model_config = ConfigDict(defer_build=True, frozen=True)

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

    @classmethod
    def near_end(cls, path: Path, window: int) -> SpineTail:
        """A tail that starts at the first whole line within the last ``window`` bytes.

        A page that shows the latest turn needs its events, not the heinzel's
        whole life; a turn's events are a few kilobytes, so a window finds them.
        """
        try:
            fd = open_regular(path, os.O_RDONLY)
        except OSError:
            return cls(path)
        try:
            size = os.fstat(fd).st_size
            if size <= window:
                return cls(path)
            before = os.pread(fd, window, size - window)
        finally:
            os.close(fd)
        newline = before.find(b"\n")
        return cls(path, size - window + newline + 1 if newline >= 0 else size)

    def read_new(self) -> TailRead:
        """Read whole lines appended since the last call; a missing file reads as nothing."""
        raw_lines, restarted = _read_whole_lines(self)
        lines: list[SpineLine] = []
        unreadable = 0
        for raw in raw_lines:
            parsed = _parse(raw)
            if parsed is None:
                unreadable += 1
            else:
                lines.append(parsed)
        return TailRead(lines=lines, unreadable=unreadable, restarted=restarted)


class BodyTail:
    """A reader of one turn body (``turns/<turn>.jsonl``) that remembers its byte offset."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    @classmethod
    def of_turn(cls, heinzel_dir: Path, turn: str) -> BodyTail:
        return cls(heinzel_dir / BODIES_DIR / f"{turn}.jsonl")

    def exists(self) -> bool:
        return os.path.lexists(self.path)

    def read_new(self) -> list[dict[str, Any]]:
        """Records appended since the last call (JSON objects with ``type``); others skipped.

        Raises ``NotRegular`` when a FIFO or a directory stands where the body goes.
        """
        raw_lines, _ = _read_whole_lines(self)
        records = []
        for raw in raw_lines:
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(record, dict) and isinstance(record.get("type"), str):
                records.append(record)
        return records


def _read_whole_lines(tail: SpineTail | BodyTail) -> tuple[list[bytes], bool]:
    """The whole lines after ``tail.offset`` (advancing it), and whether the file was replaced.

    A spine that is not a regular file reads as nothing (the index and the
    verifier report it); a body raises ``NotRegular`` so its panel can say so.
    """
    try:
        fd = open_regular(tail.path, os.O_RDONLY)
    except NotRegular:
        if isinstance(tail, BodyTail):
            raise
        return [], False
    except OSError:
        return [], False
    try:
        size = os.fstat(fd).st_size
        restarted = size < tail.offset
        if restarted:
            tail.offset = 0
        if size == tail.offset:
            return [], restarted
        data = os.pread(fd, min(size - tail.offset, READ_LIMIT), tail.offset)
    finally:
        os.close(fd)
    end = data.rfind(b"\n")
    if end < 0:
        return [], restarted
    whole = data[: end + 1]
    tail.offset += len(whole)
    return whole.split(b"\n")[:-1], restarted


def _parse(raw: bytes) -> SpineLine | None:
    """One envelope, or None for a line that is not one (damage is the verifier's to report)."""
    stripped = raw.strip(b"\x00 \r")
    if not stripped:
        return None
    try:
        return SpineLine.model_validate(orjson.loads(stripped))
    except (orjson.JSONDecodeError, ValidationError):
        return None
