"""Reading and replacing a user's document without ever losing the user's own save.

The user's editor does not take locks, so the only protection is to look
again: the new content is staged and fsynced next to the document, the
document is re-read, and the rename happens only if it is still exactly what
the edit was computed from. ``fsutil.atomic_write`` renames straight after its
fsync, which leaves no place for that last look, so the staging is done here
with the same primitives (private temp file, rename, directory fsync).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hz_kernel.adapters.documents import codes
from hz_kernel.errors import HzError
from hz_kernel.store.fsutil import FILE_MODE, fsync_dir

MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
"""A Markdown document bigger than this is almost certainly not one a person edits."""

BeforeCommit = Callable[[Path], None]


@dataclass(frozen=True)
class Snapshot:
    """The bytes of a document and its permission bits, as read at one moment."""

    data: bytes
    mode: int


def read_snapshot(path: Path) -> Snapshot | None:
    """Read a regular file without following a symlink; None if it does not exist.

    ``O_NONBLOCK`` keeps a FIFO from hanging the open; the type is then
    checked on the open descriptor, so nothing can be swapped in between.
    """
    place = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except NotADirectoryError as exc:
        raise HzError(
            codes.PARENT_MISSING, "a parent of the document is not a directory", place
        ) from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise HzError(
                codes.SYMLINK_REFUSED,
                "the document is a symbolic link; point the asset at the real file",
                place,
            ) from exc
        if exc.errno == errno.ENXIO:
            raise HzError(
                codes.NOT_A_REGULAR_FILE, "the document is not a regular file", place
            ) from exc
        raise HzError(codes.IO_FAILED, f"cannot open the document ({exc.strerror})", place) from exc
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise HzError(codes.NOT_A_REGULAR_FILE, "the document path is a directory", place)
        if not stat.S_ISREG(info.st_mode):
            raise HzError(codes.NOT_A_REGULAR_FILE, "the document is not a regular file", place)
        if info.st_size > MAX_DOCUMENT_BYTES:
            raise HzError(
                codes.TOO_LARGE,
                f"the document is larger than {MAX_DOCUMENT_BYTES} bytes",
                place,
            )
        chunks: list[bytes] = []
        budget = MAX_DOCUMENT_BYTES + 1
        while budget > 0 and (chunk := os.read(fd, min(budget, 1 << 20))):
            chunks.append(chunk)
            budget -= len(chunk)
        if budget <= 0:
            raise HzError(codes.TOO_LARGE, "the document grew too large while reading", place)
        return Snapshot(data=b"".join(chunks), mode=stat.S_IMODE(info.st_mode) & 0o777)
    except OSError as exc:
        raise HzError(codes.IO_FAILED, f"cannot read the document ({exc.strerror})", place) from exc
    finally:
        os.close(fd)


@contextlib.contextmanager
def directory_lock(directory: Path) -> Iterator[None]:
    """Serialise hz's own writers to documents in one directory.

    An advisory ``flock`` on the directory itself: it leaves no lock file in
    the user's folder, and the document's inode changes on every rename so it
    could not carry the lock.
    """
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise HzError(
            codes.PARENT_MISSING,
            "the document's directory does not exist; create it first",
            str(directory),
        ) from exc
    except OSError as exc:
        raise HzError(
            codes.IO_FAILED, f"cannot open the directory ({exc.strerror})", str(directory)
        ) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def commit_if_unchanged(
    path: Path,
    data: bytes,
    *,
    expected: Snapshot | None,
    before_commit: BeforeCommit | None = None,
) -> bool:
    """Replace ``path`` with ``data`` if it still holds ``expected``; False if someone saved.

    A new file is linked into place (never over a file that appeared
    meanwhile) with mode 0600; an existing one keeps its permission bits.
    ``before_commit`` runs after staging and before the last look.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.hz-tmp")
    try:
        _stage(tmp, data, expected.mode if expected else FILE_MODE)
        if before_commit is not None:
            before_commit(path)
        current = read_snapshot(path)
        if _bytes(current) != _bytes(expected):
            return False
        if expected is None:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
        else:
            os.replace(tmp, path)
        fsync_dir(path.parent)
        return True
    except OSError as exc:
        raise HzError(
            codes.IO_FAILED, f"cannot write the document ({exc.strerror})", str(path)
        ) from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _stage(tmp: Path, data: bytes, mode: int) -> None:
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE
    )
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
        os.fsync(fd)
    finally:
        os.close(fd)


def _bytes(snapshot: Snapshot | None) -> bytes | None:
    return None if snapshot is None else snapshot.data
