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
from collections.abc import Iterable, Iterator
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
    store_error,
    store_io,
)

TURN_ID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
BODY_NAME = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}\.jsonl$")
#: A body record longer than this is never loaded: readers pass it over (a transcript names
#: it damaged). Far above the largest record a turn writes (an input shows at most 8 Mi
#: characters), so only a damaged body has one.
BODY_LINE_MAX_BYTES = 64 << 20
#: Bodies are read in chunks of this size, so reading one holds at most a chunk and a line.
READ_CHUNK_BYTES = 1 << 20


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
        self._unsynced = False
        self._resume()

    def _resume(self) -> None:
        whole = _after_last_newline(self._fd, os.fstat(self._fd).st_size)
        if whole < os.fstat(self._fd).st_size:
            os.ftruncate(self._fd, whole)
            os.fsync(self._fd)
        position = 0
        while position < whole and (
            chunk := os.pread(self._fd, min(READ_CHUNK_BYTES, whole - position), position)
        ):
            self._digest.update(chunk)
            position += len(chunk)
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
        self._unsynced = True

    def sync(self) -> None:
        """Make every record written so far durable (free when nothing was written since)."""
        if not self._unsynced:
            return
        with store_io(self.path):
            os.fsync(self._fd)
        self._unsynced = False

    @property
    def hash(self) -> str:
        return self._digest.hexdigest()

    def close(self) -> None:
        if self._fd >= 0:
            try:
                self.sync()
            finally:
                os.close(self._fd)
                self._fd = -1


def read_body(heinzel_dir: Path, turn: str) -> list[dict[str, Any]] | None:
    """Every whole record of a body, or None when the body is gone (pruned or never written).

    A body that is a FIFO, socket or device is refused with HZS090, never read.
    Lines are read in bounded chunks: a torn last line or a line over
    ``BODY_LINE_MAX_BYTES`` is passed over, never held whole.
    """
    if not TURN_ID.match(turn):
        return None
    path = body_path(heinzel_dir, turn)
    try:
        fd = open_regular(path, os.O_RDONLY)
    except NotRegularFile as exc:
        raise store_error(exc, path) from None
    except OSError:
        return None
    try:
        return list(_records(_Lines(fd, 0)))
    except OSError:
        return None
    finally:
        os.close(fd)


def _records(lines: Iterable[bytes | None]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if not line:
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict):
            yield record


class _Lines:
    """The whole lines of a body from ``offset`` on, read forward in bounded chunks.

    Iterating yields each line without its newline, or None for a line over
    ``BODY_LINE_MAX_BYTES``. A line reaching past a chunk is first looked
    through for its end and only then read, whole, if it is under the cap; a
    torn last line is never read. So reading a body holds at most one chunk
    and one line under the cap. With
    a ``limit`` it stops before the line that would take the page past
    ``limit`` bytes (the first line always comes) and sets ``more``. ``end``
    is the offset after the last line yielded; ``torn`` whether the file,
    as big as it was when reading began, ends in a line with no newline.
    """

    def __init__(self, fd: int, offset: int, limit: int | None = None) -> None:
        self._fd = fd
        self._limit = limit
        self.start = self.end = offset
        self.size = os.fstat(fd).st_size
        self.more = False

    @property
    def torn(self) -> bool:
        return not self.more and self.end < self.size

    def _over(self, upto: int) -> bool:
        """Whether bytes up to ``upto`` would take a page that holds a line past its limit."""
        return self._limit is not None and self.end > self.start and upto - self.start > self._limit

    def __iter__(self) -> Iterator[bytes | None]:
        position = self.end
        while position < self.size:
            chunk = os.pread(self._fd, min(READ_CHUNK_BYTES, self.size - position), position)
            if not chunk:
                return
            cut = 0
            while (newline := chunk.find(b"\n", cut)) >= 0:
                if self._over(position + newline + 1):
                    self.more = True
                    return
                self.end = position + newline + 1
                yield chunk[cut:newline]
                cut = newline + 1
            position += len(chunk)
            if cut == len(chunk):
                continue
            if self._over(position):
                self.more = True
                return
            start = position - len(chunk) + cut
            newline_at = self._newline_from(position)
            if newline_at is None:
                return
            self.end = newline_at + 1
            length = newline_at - start
            yield None if length > BODY_LINE_MAX_BYTES else os.pread(self._fd, length, start)
            position = self.end

    def _newline_from(self, position: int) -> int | None:
        """The offset of the first newline at or after ``position``, chunk by chunk."""
        while position < self.size:
            chunk = os.pread(self._fd, min(READ_CHUNK_BYTES, self.size - position), position)
            if not chunk:
                return None
            newline = chunk.find(b"\n")
            if newline >= 0:
                return position + newline
            position += len(chunk)
        return None


def read_body_page(
    heinzel_dir: Path, turn: str, offset: int, limit: int
) -> tuple[list[dict[str, Any]], int, bool] | None:
    """The whole records after byte ``offset``, about ``limit`` bytes of them at most.

    Returns the records, the offset after them and whether the page stopped
    at ``limit`` with more to read; None when the body is gone. Offsets count
    bytes of whole lines, as ``BodyWriter.size`` does, so a reader resumes
    exactly where it stopped; a last line still being written waits. A
    record larger than a page comes alone; one over ``BODY_LINE_MAX_BYTES``
    is passed over.
    """
    fd = _open_body(heinzel_dir, turn)
    if fd is None:
        return None
    try:
        lines = _Lines(fd, offset, limit)
        records = list(_records(lines))
    finally:
        os.close(fd)
    return records, lines.end, lines.more


def read_body_lines(
    heinzel_dir: Path, turn: str, offset: int, limit: int
) -> tuple[list[tuple[int, bytes | None]], int, bool, bool, int] | None:
    """``read_body_page``'s page as raw lines with their 1-based line numbers, for checking.

    Returns the numbered whole lines (None for one over
    ``BODY_LINE_MAX_BYTES``, never read whole), the offset after them,
    whether the page limit stopped it, whether the file ends in a line with
    no newline (being written, or torn), and how many lines come before the
    page; None when the body is gone.
    """
    fd = _open_body(heinzel_dir, turn)
    if fd is None:
        return None
    try:
        before = _newlines_before(fd, offset)
        lines = _Lines(fd, offset, limit)
        numbered = [(before + n + 1, line) for n, line in enumerate(lines)]
    finally:
        os.close(fd)
    return numbered, lines.end, lines.more, lines.torn, before


def _newlines_before(fd: int, offset: int) -> int:
    count = position = 0
    while position < offset and (
        chunk := os.pread(fd, min(READ_CHUNK_BYTES, offset - position), position)
    ):
        count += chunk.count(b"\n")
        position += len(chunk)
    return count


def _after_last_newline(fd: int, size: int) -> int:
    """The offset after the file's last newline (0 when it has none), read backwards in chunks."""
    position = size
    while position > 0:
        start = max(0, position - READ_CHUNK_BYTES)
        chunk = os.pread(fd, position - start, start)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        position = start
    return 0


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
