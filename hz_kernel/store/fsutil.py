"""Small, careful file primitives: private modes, atomic writes, fsync of directories.

Everything hz writes under its home goes through these helpers so the
permission and durability rules live in one place.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from hz_kernel.errors import HzError

DIR_MODE = 0o700
FILE_MODE = 0o600

_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
_NO_PERMISSION = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


class NotRegularFile(OSError):
    """A path hz reads is a FIFO, socket, device or directory: refused instead of opened."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"it is a {kind}, not a regular file", str(path))
        self.kind = kind


def file_kind(mode: int) -> str:
    """A word for what a mode says a path is (for messages)."""
    for test, word in (
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "device"),
        (stat.S_ISBLK, "device"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISLNK, "symbolic link"),
    ):
        if test(mode):
            return word
    return "regular file" if stat.S_ISREG(mode) else "special file"


def open_regular(path: Path, flags: int, mode: int = FILE_MODE, *, follow: bool = False) -> int:
    """``os.open`` that never blocks on a FIFO nor opens a socket, device or directory.

    ``O_NONBLOCK`` makes opening a FIFO return at once; the ``fstat`` that
    follows refuses anything but a regular file (``NotRegularFile``). The
    returned descriptor is back in blocking mode. Links are not followed
    unless ``follow``.
    """
    extra = os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags | extra, mode)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.EISDIR, errno.ENODEV):
            st = os.stat(path, follow_symlinks=follow)
            if not stat.S_ISREG(st.st_mode):
                raise NotRegularFile(path, file_kind(st.st_mode)) from None
        raise
    try:
        st_mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(st_mode):
            raise NotRegularFile(path, file_kind(st_mode))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def store_error(exc: OSError, path: Path | str) -> HzError:
    """The coded error for a failed read or write under the home, saying what went wrong.

    A full disk and a permission problem (including a read-only file
    system) get their own codes, so the user is never told that a file is
    damaged when the disk is merely full.
    """
    place = str(path)
    if exc.errno in _NO_SPACE:
        return HzError("HZS091", "no space left on the device; free some and try again", place)
    if exc.errno in _NO_PERMISSION:
        what = "the file system is read-only" if exc.errno == errno.EROFS else "permission denied"
        return HzError("HZS092", f"{what}; hz needs to write here", place)
    if isinstance(exc, NotRegularFile):
        return HzError("HZS090", f"refused: {exc.strerror}", place)
    if exc.errno == errno.ELOOP:
        return HzError("HZS090", "refused: it is a symbolic link, not a regular file", place)
    if exc.errno == errno.EISDIR:
        return HzError("HZS090", "refused: it is a directory, not a regular file", place)
    return HzError("HZS093", f"input/output error ({exc.strerror or type(exc).__name__})", place)


@contextlib.contextmanager
def store_io(path: Path | str) -> Iterator[None]:
    """Turn an ``OSError`` raised inside into ``store_error`` for ``path``."""
    try:
        yield
    except OSError as exc:
        raise store_error(exc, getattr(exc, "filename", None) or path) from None


def fsync_dir(path: Path) -> None:
    """Make a directory entry (a create, rename or truncate) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) as 0700 directories; fsync the parent of each new one."""
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=DIR_MODE)
            fsync_dir(directory.parent)
    return path


def _write_temp(tmp: Path, data: bytes, *, durable: bool = True) -> None:
    """Write (and fsync, if ``durable``) a new private temp file; on failure (a full disk)
    nothing is left behind."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    os.close(fd)


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` so readers see the old or the new file, never a mix.

    Temp file in the same directory, fsync, rename over the target, fsync the
    directory. The file is 0600. A file that is only a convenience (a cache
    whose loss means work again, never lost work) passes ``durable=False``:
    still atomic for every reader, but after a power cut it may be the old
    file, or empty.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    _write_temp(tmp, data, durable=durable)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    if durable:
        fsync_dir(path.parent)


def create_exclusive(path: Path, data: bytes, *, durable: bool = True) -> bool:
    """Atomically create ``path`` with ``data`` unless it exists; True if this call created it.

    Used for files that are idempotent by name (inbox requests): the first
    writer wins, a retry finds the file and leaves it alone. ``durable=False``
    leaves the fsyncs to the caller (``fsync_file``), who may find them needless.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    _write_temp(tmp, data, durable=durable)
    try:
        os.link(tmp, path)
        created = True
    except FileExistsError:
        created = False
    finally:
        tmp.unlink()
    if durable:
        fsync_dir(path.parent)
    return created


def fsync_file(path: Path) -> None:
    """Make a file written without fsync durable, with its name in its directory."""
    fd = open_regular(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)


def is_regular_file(path: Path) -> bool:
    """True for a regular file that is not a symbolic link."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    return stat.S_ISREG(mode)


def read_nofollow(path: Path) -> bytes:
    """Read a whole regular file, refusing a link at the last component, a FIFO or a device.

    Refusals are ``OSError`` (``NotRegularFile`` for the special files), so
    callers that treat an unreadable file as missing keep doing so, and none
    of them can hang on a FIFO.
    """
    fd = open_regular(path, os.O_RDONLY)
    try:
        return read_all(fd)
    finally:
        os.close(fd)


def read_all(fd: int) -> bytes:
    """Everything from ``fd``'s position to its end, read into one buffer sized by ``fstat``.

    Reading in fixed 1 MB chunks allocated a fresh megabyte per read (the
    empty one at the end too) and then joined them: twenty times slower
    for a 1 MB spine than this.
    """
    with io.FileIO(fd, closefd=False) as file:
        return file.readall()
