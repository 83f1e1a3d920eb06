"""The cockpit's own small files: private (0600 in 0700 folders), replaced atomically.

The kernel's ``fsutil`` helpers sit in ``hz_kernel.store``, which the
layering keeps out of the cockpit; these are the same temp-fsync-rename
steps for the few files the cockpit writes (``cockpit.json``, held rejections).
Reads never block: a FIFO (or any other non-regular file) where one of
these files belongs is refused with ``NotRegular``, never opened for a read.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from hz_kernel.errors import HzError


class NotRegular(OSError):
    """A cockpit file is a FIFO, socket, device, directory or symbolic link: refused (HZS090),
    never read."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.EINVAL, "refused: it is not a regular file", str(path))

    def one_line(self) -> str:
        return f"HZS090: {self.filename}: {self.strerror}"


def read_private(path: Path, limit: int = 1 << 20) -> bytes | None:
    """The file's bytes (at most ``limit``), or None when it does not exist.

    Raises ``OSError`` for any other failure (``NotRegular`` for a FIFO or
    the like: opened without blocking, refused after ``fstat``); links are
    never followed.
    """
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit)


@contextlib.contextmanager
def locked(path: Path, *, code: str, what: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created 0600 in a 0700 folder) inside the block.

    A failure to take it is ``HzError(code)`` naming ``what``.
    """
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        fd = open_regular(path, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise HzError(code, f"cannot lock {what} ({exc.strerror})", str(path)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def open_regular(path: Path, flags: int) -> int:
    """``os.open`` that returns at once on a FIFO and refuses anything but a regular file.

    Links are never followed; the descriptor is back in blocking mode.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.EISDIR, errno.ENODEV, errno.ELOOP):
            raise NotRegular(path) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegular(path)
    os.set_blocking(fd, True)
    return fd


def write_private(
    path: Path, data: bytes, *, code: str, what: str, make_folder: bool = False
) -> None:
    """Replace ``path`` with ``data`` atomically; a failure is ``HzError(code)`` naming ``what``.

    ``make_folder`` creates the file's own folder (0700) when missing, never its parents.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if make_folder:
            path.parent.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except OSError as exc:
        with contextlib.suppress(OSError):  # gone, or its folder is not one (a file there)
            tmp.unlink()
        raise HzError(code, f"cannot save {what} ({exc.strerror})", str(path)) from None
