"""Turn bodies: ``turns/<turn>.jsonl``, the content of one turn.

A body holds what the spine must not: the inputs as fetched, the messages
exchanged with the model, streamed output, the draft's text. Records are
JSON lines ``{"ts", "type", ...}``. The writer fsyncs at step boundaries
(``sync``) so the spine event that names a step never points at content
that a crash could lose. A body may expire (``prune``); the spine keeps its
hash, so a pruned body is a visible gap and never a break in the chain.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from hz_kernel.store.envelope import utc_stamp
from hz_kernel.store.fsutil import (
    FILE_MODE,
    NotRegularFile,
    ensure_private_dir,
    fsync_dir,
    open_regular,
    read_nofollow,
    store_error,
    store_io,
)

TURN_ID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
BODY_NAME = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}\.jsonl$")


def body_path(heinzel_dir: Path, turn: str) -> Path:
    return heinzel_dir / "turns" / f"{turn}.jsonl"


class BodyWriter:
    """Appends records to one turn's body; reopening after a crash drops a torn last record."""

    def __init__(self, heinzel_dir: Path, turn: str) -> None:
        if not TURN_ID.match(turn):
            raise ValueError(f"not a turn id: {turn!r}")
        self.path = body_path(heinzel_dir, turn)
        self._fd = -1
        with store_io(self.path):
            ensure_private_dir(self.path.parent)
            created = not self.path.exists()
            self._fd = open_regular(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE)
            if created:
                fsync_dir(self.path.parent)
        self._digest = hashlib.sha256()
        self.size = 0
        self._resume()

    def _resume(self) -> None:
        existing = b""
        while chunk := os.pread(self._fd, 1 << 20, len(existing)):
            existing += chunk
        whole = existing.rfind(b"\n") + 1
        if whole < len(existing):
            os.ftruncate(self._fd, whole)
            os.fsync(self._fd)
        self._digest.update(existing[:whole])
        self.size = whole
        os.lseek(self._fd, whole, os.SEEK_SET)

    def write(self, record_type: str, **fields: Any) -> None:
        """Append one record; on a full disk the partial record is cut off and HZS091 raised."""
        line = orjson.dumps({"ts": utc_stamp(), "type": record_type, **fields}) + b"\n"
        try:
            written = os.write(self._fd, line)
            if written != len(line):
                raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self.size)
                os.lseek(self._fd, self.size, os.SEEK_SET)
            raise store_error(exc, self.path) from None
        self._digest.update(line)
        self.size += len(line)

    def sync(self) -> None:
        with store_io(self.path):
            os.fsync(self._fd)

    @property
    def hash(self) -> str:
        return self._digest.hexdigest()

    def close(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1


def read_body(heinzel_dir: Path, turn: str) -> list[dict[str, Any]] | None:
    """Every whole record of a body, or None when the body is gone (pruned or never written).

    A body that is a FIFO, socket or device is refused with HZS090, never read.
    """
    if not TURN_ID.match(turn):
        return None
    path = body_path(heinzel_dir, turn)
    try:
        data = read_nofollow(path)
    except NotRegularFile as exc:
        raise store_error(exc, path) from None
    except OSError:
        return None
    return list(_records(data))


def _records(data: bytes) -> Iterator[dict[str, Any]]:
    for line in data.split(b"\n"):
        if not line:
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict):
            yield record


def read_body_page(
    heinzel_dir: Path, turn: str, offset: int, limit: int
) -> tuple[list[dict[str, Any]], int, bool] | None:
    """The whole records after byte ``offset``, about ``limit`` bytes of them at most.

    Returns the records, the offset after them and whether the page stopped
    at ``limit`` with more to read; None when the body is gone. Offsets count
    bytes of whole lines, as ``BodyWriter.size`` does, so a reader resumes
    exactly where it stopped; a last line still being written waits.
    """
    fd = _open_body(heinzel_dir, turn)
    if fd is None:
        return None
    try:
        left = os.fstat(fd).st_size - offset
        data = os.pread(fd, min(left, limit), offset) if left > 0 else b""
        if data and b"\n" not in data and left > limit:
            data = os.pread(fd, left, offset)  # one record larger than a page
    finally:
        os.close(fd)
    whole = data[: data.rfind(b"\n") + 1]
    return list(_records(whole)), offset + len(whole), len(data) < left


def read_body_lines(
    heinzel_dir: Path, turn: str, offset: int, limit: int
) -> tuple[list[tuple[int, bytes]], int, bool, bool, int] | None:
    """``read_body_page``'s page as raw lines with their 1-based line numbers, for checking.

    Returns the numbered whole lines, the offset after them, whether the
    page limit stopped it, whether the file ends in a line with no newline
    (being written, or torn), and how many lines come before the page;
    None when the body is gone.
    """
    fd = _open_body(heinzel_dir, turn)
    if fd is None:
        return None
    try:
        size = os.fstat(fd).st_size
        before = os.pread(fd, offset, 0).count(b"\n") if offset else 0
        left = size - offset
        data = os.pread(fd, min(left, limit), offset) if left > 0 else b""
        if data and b"\n" not in data and left > limit:
            data = os.pread(fd, left, offset)
    finally:
        os.close(fd)
    whole = data[: data.rfind(b"\n") + 1]
    more = len(data) < left
    torn = not more and len(whole) < len(data)
    lines = [(before + n + 1, line) for n, line in enumerate(whole.split(b"\n")[:-1])]
    return lines, offset + len(whole), more, torn, before


def _open_body(heinzel_dir: Path, turn: str) -> int | None:
    """A descriptor on the turn's body, or None when the id is not a turn's or the body is
    gone; a body that is not a regular file is the store's coded refusal."""
    if not TURN_ID.match(turn):
        return None
    path = body_path(heinzel_dir, turn)
    try:
        return open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a FIFO, a directory, a symbolic link: refused, never "gone"
        raise store_error(exc, path) from None
