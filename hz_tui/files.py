"""The cockpit's own small files: private (0600 in 0700 folders), replaced atomically.

The kernel's ``fsutil`` helpers sit in ``hz_kernel.store``, which the
layering keeps out of the cockpit; these are the same temp-fsync-rename
steps for the few files the cockpit writes (``cockpit.json``, held rejections).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from hz_kernel.errors import HzError


def read_private(path: Path, limit: int = 1 << 20) -> bytes | None:
    """The file's bytes (at most ``limit``), or None when it does not exist.

    Raises ``OSError`` for any other failure; links are never followed.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit)


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
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise HzError(code, f"cannot save {what} ({exc.strerror})", str(path)) from None
