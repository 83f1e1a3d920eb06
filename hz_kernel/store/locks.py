"""One writer per spine: an exclusive ``flock`` on ``<heinzel>/lock``.

The lock file also carries the holder's pid so a refused writer can say who
holds it. ``flock`` is released by the kernel when the process dies, so a
crash never leaves a lock behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from hz_kernel.errors import HzError
from hz_kernel.store.fsutil import FILE_MODE, open_regular, read_nofollow, store_error


class SpineBusy(HzError):
    """Another process (or another writer in this one) holds the spine's lock."""

    def __init__(self, path: Path, holder: int | None) -> None:
        who = f"process {holder}" if holder else "another writer"
        super().__init__(
            "HZS010",
            f"{who} is writing this heinzel's spine; submit through the inbox or the daemon",
            str(path),
        )
        self.holder = holder


def read_holder(path: Path) -> int | None:
    """The pid written by the current (or last) holder, if readable."""
    try:
        raw = read_nofollow(path)[:32].strip()
    except OSError:
        return None
    return int(raw) if raw.isdigit() else None


class FileLock:
    """A non-blocking exclusive flock that records the holder's pid."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> FileLock:
        """Take the lock; a lock path that is a link, FIFO, socket or device is refused (HZS090)."""
        try:
            fd = open_regular(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        except OSError as exc:
            raise store_error(exc, self.path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SpineBusy(self.path, read_holder(self.path)) from None
        # The pid only names the holder: a full disk that refuses it must not refuse the lock.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd
        return self

    def try_acquire(self) -> bool:
        try:
            self.acquire()
        except SpineBusy:
            return False
        return True

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
