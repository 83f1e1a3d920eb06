"""Cutting off a torn tail, keeping a copy of what was cut.

Only the writer repairs, and only while it holds the spine's lock. The cut
bytes go to ``session.jsonl.torn-<offset>`` beside the spine (fsynced
first), then the spine is truncated to its last whole line and the writer
records a ``spine.repaired`` event naming the copy. Chain breaks in the
middle are never repaired here.
"""

from __future__ import annotations

import os
from pathlib import Path

from hz_kernel.store.fsutil import FILE_MODE, fsync_dir
from hz_kernel.store.scan import TornTail


def keep_and_cut(path: Path, data: bytes, torn: TornTail) -> Path:
    """Save the torn bytes beside the spine, then truncate the spine before them."""
    copy = path.with_name(f"{path.name}.torn-{torn.offset}")
    suffix = 1
    while copy.exists():
        suffix += 1
        copy = path.with_name(f"{path.name}.torn-{torn.offset}.{suffix}")
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        os.write(fd, data[torn.offset :])
        os.fsync(fd)
    finally:
        os.close(fd)
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
    try:
        os.ftruncate(fd, torn.offset)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)
    return copy
