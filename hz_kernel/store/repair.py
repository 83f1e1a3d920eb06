"""Cutting off a torn tail, keeping a copy of what was cut.

Only the writer repairs, and only while it holds the spine's lock. The cut
bytes go to ``session.jsonl.torn-<offset>`` beside the spine (fsynced
first), then the spine is truncated to its last whole line and the writer
records a ``spine.repaired`` event naming the copy. The same happens to
bytes another process appended while the writer held the spine: they are
found before the writer's next line (``keep_foreign``). Chain breaks in the
middle are never repaired here.
"""

from __future__ import annotations

import os
from pathlib import Path

from hz_kernel.store.fsutil import FILE_MODE, fsync_dir
from hz_kernel.store.scan import TornTail


def keep_and_cut(path: Path, data: bytes, torn: TornTail) -> Path:
    """Save the torn bytes beside the spine, then truncate the spine before them."""
    return _keep_and_cut(path, torn.offset, data[torn.offset :])


def keep_foreign(path: Path, end: int) -> tuple[Path, int]:
    """Save what another process wrote after ``end`` (the writer's own end of the spine)
    beside it, then truncate the spine to ``end``: the copy and how many bytes were cut.

    The writer's next line then follows its own last line, never foreign bytes.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        chunks: list[bytes] = []
        while chunk := os.pread(fd, 1 << 20, end + sum(map(len, chunks))):
            chunks.append(chunk)
    finally:
        os.close(fd)
    foreign = b"".join(chunks)
    return _keep_and_cut(path, end, foreign), len(foreign)


def _keep_and_cut(path: Path, offset: int, tail: bytes) -> Path:
    copy = path.with_name(f"{path.name}.torn-{offset}")
    suffix = 1
    while copy.exists():
        suffix += 1
        copy = path.with_name(f"{path.name}.torn-{offset}.{suffix}")
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        os.write(fd, tail)
        os.fsync(fd)
    finally:
        os.close(fd)
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
    try:
        os.ftruncate(fd, offset)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)
    return copy
