"""The source cache: the last fetch of every request, staged before anyone wakes.

The tick writes a result here before it starts a turn, so a crash between
fetch and wake re-wakes from the cached input instead of fetching again,
and gather reads the cached content when its fingerprint matches. The cache
is a convenience, never the record: a missing or damaged file only means a
refetch. It holds fetched content, so it is private (0700 directory, 0600
files, atomic writes). Writes are not fsynced: readers see a whole file or
none, and what a power cut loses is fetched again.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from hz_kernel.adapters.sources.base import FetchResult, SourceRequest, as_utc
from hz_kernel.errors import HzError
from hz_kernel.store.fsutil import (
    atomic_write,
    ensure_private_dir,
    file_kind,
    fsync_dir,
    store_io,
)

CACHE_FILE = re.compile(r"[0-9a-f]{64}\.json")
LEFTOVER_TEMP = re.compile(r"\.[0-9a-f]{64}\.json\.\d+\.tmp")
"""What ``atomic_write`` leaves behind if the process died mid-write."""


class SourceCache:
    """One JSON file per ``request.cache_key()`` under ``dir``."""

    def __init__(self, dir: Path) -> None:
        self.dir = dir

    def path_for(self, request: SourceRequest) -> Path:
        return self.path_of(request.cache_key())

    def path_of(self, key: str) -> Path:
        """The file of the request whose cache key is ``key``."""
        return self.dir / f"{key}.json"

    def put(self, result: FetchResult) -> None:
        """Store ``result`` atomically, replacing the previous one for the same request.

        A cache folder that is a FIFO, socket, file or link is refused with
        ``HZS090`` (never followed nor written through); any other failure
        is the store's coded error.
        """
        with store_io(self.dir):
            ensure_private_dir(self.dir)
            mode = os.lstat(self.dir).st_mode
            if not stat.S_ISDIR(mode):
                raise HzError(
                    "HZS090", f"refused: it is a {file_kind(mode)}, not a directory", str(self.dir)
                )
            # Not fsynced: a power cut may cost a refetch, never a turn's input (its body
            # holds what it read).
            atomic_write(
                self.path_for(result.request),
                result.model_dump_json().encode("utf-8"),
                durable=False,
            )

    def get(self, request: SourceRequest) -> FetchResult | None:
        """The cached result for ``request``; None when absent, unreadable or damaged."""
        data = _read_regular(self.path_for(request))
        if data is None:
            return None
        try:
            result = FetchResult.model_validate_json(data[0])
        except ValidationError:
            return None
        if result.request.cache_key() != request.cache_key():
            return None
        return result

    def prune(self, older_than: datetime) -> int:
        """Delete cached results fetched before ``older_than``; return how many went.

        Only names this cache writes are considered, only regular files are
        removed (links are neither followed nor deleted), and a file that
        cannot be parsed is dated by its modification time.
        """
        cutoff = as_utc(older_than)
        try:
            entries = sorted(os.scandir(self.dir), key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            return 0
        removed = 0
        for entry in entries:
            if CACHE_FILE.fullmatch(entry.name) is None and (
                LEFTOVER_TEMP.fullmatch(entry.name) is None
            ):
                continue
            stamp = _fetched_at(Path(entry.path))
            if stamp is None or stamp >= cutoff:
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed += 1
        if removed:
            fsync_dir(self.dir)
        return removed


def _read_regular(path: Path) -> tuple[bytes, os.stat_result] | None:
    """Read a regular file without following a link or blocking on a FIFO; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), info
    except OSError:
        return None
    finally:
        os.close(fd)


def _fetched_at(path: Path) -> datetime | None:
    """When a cache file's result was fetched, or its mtime if it cannot be parsed."""
    read = _read_regular(path)
    if read is None:
        return None
    data, info = read
    if path.name.endswith(".json"):
        with contextlib.suppress(ValidationError):
            return FetchResult.model_validate_json(data).as_of
    return datetime.fromtimestamp(info.st_mtime, UTC)
