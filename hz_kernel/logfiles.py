"""The daemon's log files on disk: their names, the last lines, and following them.

``<home>/daemon.log`` is the live file; when it passes its size it is renamed
to ``daemon.log.1`` (the older ones shift up to ``daemon.log.N``) and a fresh
one begins. Readers here only read: the last lines across that boundary
(``hz daemon logs -n``) and a follower that keeps going when the file it
follows is renamed away under it (``-f``, the cockpit's log view). Nothing
here needs a running daemon or the kernel, so the cockpit may read the log
of a daemon on this machine without loading the daemon's modules.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import BinaryIO

from hz_kernel.store.fsutil import open_regular, store_error

LOG_NAME = "daemon.log"
#: Rotated files are read at most this far back for a tail: older ones are not looked for.
MAX_ROTATED = 50


#: Terminal control characters shown as ``\\uXXXX``, so a log line never drives a screen.
_CONTROLS = {code: f"\\u{code:04x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if code != 0x09}


def visible(line: str) -> str:
    """``line`` with its control characters made visible (``\\u001b``)."""
    return line.translate(_CONTROLS)


def log_path(root: Path) -> Path:
    """The live log of the home at ``root``."""
    return root / LOG_NAME


def rotated(root: Path, index: int) -> Path:
    """``daemon.log.<index>``: 1 is the newest rotated file."""
    return root / f"{LOG_NAME}.{index}"


def _open(path: Path) -> BinaryIO:
    """A log file for reading; one that is a FIFO, directory or link is refused, never waited on."""
    return open(open_regular(path, os.O_RDONLY), "rb")


def refuse_odd_log(root: Path) -> None:
    """Raise ``HZS090`` when the live log is there but is not a regular file."""
    try:
        _open(log_path(root)).close()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise store_error(exc, log_path(root)) from None


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def tail(root: Path, lines: int) -> list[str]:
    """The last ``lines`` lines of the log, reading back into rotated files when needed."""
    if lines <= 0:
        return []
    found: list[str] = []
    paths = [log_path(root)] + [rotated(root, i) for i in range(1, MAX_ROTATED + 1)]
    for index, path in enumerate(paths):
        try:
            with _open(path) as handle:
                raw = handle.read()
        except FileNotFoundError:
            if index == 0:
                continue
            break
        except OSError:
            break
        found = [_decode(line) for line in raw.splitlines()] + found
        if len(found) >= lines:
            break
    return found[-lines:]


class Follower:
    """Reads what is appended to the live log, and keeps following across a rotation.

    ``start()`` places it at the current end; each ``read()`` returns the
    whole lines appended since. When the live file has been renamed away,
    the rest of the renamed file is read through the handle already open,
    then the new live file from its start: no line is lost or read twice,
    as long as the log rotates at most once between two reads.
    """

    def __init__(self, root: Path) -> None:
        self.path = log_path(root)
        self._handle: BinaryIO | None = None
        self._inode: int | None = None
        self._partial = b""

    def start(self, *, at_end: bool = True) -> None:
        self._open(at_end=at_end)

    def _open(self, *, at_end: bool) -> None:
        try:
            handle = _open(self.path)
        except OSError:
            return  # missing, or not a regular file (refused by ``refuse_odd_log``)
        if at_end:
            handle.seek(0, os.SEEK_END)
        self._handle = handle
        self._inode = os.fstat(handle.fileno()).st_ino

    def read(self) -> list[str]:
        """Lines appended since the last read (the live file, and a rotated one's rest)."""
        if self._handle is None:
            self._open(at_end=False)
            if self._handle is None:
                return []
        data = self._handle.read()
        try:
            current = os.stat(self.path)
        except FileNotFoundError:
            current = None
        if current is not None and current.st_ino != self._inode:
            data += self._handle.read()
            self._handle.close()
            self._handle = None
            self._open(at_end=False)
            if self._handle is not None:
                data += self._handle.read()
        elif current is not None and current.st_size < self._handle.tell():
            self._handle.seek(0)
            data += self._handle.read()
        whole = self._partial + data
        *complete, self._partial = whole.split(b"\n")
        return [_decode(line) for line in complete]

    def close(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.close()
            self._handle = None
