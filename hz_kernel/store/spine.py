"""The spine writer: append-only, hash-chained, fsynced before acknowledged, one writer at a time.

``SpineWriter.open`` takes the heinzel's lock, reads the spine once (that
read also yields the events the index projection needs), cuts off a torn
tail if a crash left one, and from then on appends lines with one ``write``
followed by ``fsync``: one line (``append``), or a group of lines staged
since the last flush (``stage`` then ``flush`` or ``append``), which cost
one fsync together. Readers use ``scan.scan_file`` and never need the lock.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from hz_kernel import crashpoints
from hz_kernel.clock import now_utc
from hz_kernel.errors import HzError
from hz_kernel.home import SPINE_NAME
from hz_kernel.store.envelope import Event, encode_data, utc_stamp
from hz_kernel.store.fsutil import (
    ensure_private_dir,
    fsync_dir,
    open_regular,
    store_error,
    store_io,
)
from hz_kernel.store.locks import FileLock
from hz_kernel.store.repair import keep_and_cut, keep_foreign
from hz_kernel.store.scan import SpineScan, read_spine_bytes, scan
from hz_kernel.vocabulary import EventData, SpineRepaired

LOCK_NAME = "lock"

_log = logging.getLogger("hz.store")


class SpineWriter:
    """The only way lines get into a spine."""

    def __init__(self, heinzel_dir: Path) -> None:
        self.dir = heinzel_dir
        self.path = heinzel_dir / SPINE_NAME
        self.lock = FileLock(heinzel_dir / LOCK_NAME)
        self._fd: int | None = None
        self._end = 0
        """Where this writer's last line ends: the spine's size as far as it knows."""
        self.last_seq = 0
        self.last_hash = ""
        self.opened_scan: SpineScan | None = None
        self._staged: list[_Staged] = []
        self.interposed: list[Event] = []
        """Events the writer put before a caller's line (a ``spine.repaired`` for foreign
        bytes it cut), for the holder to fold in too (``take_interposed``)."""

    @classmethod
    def open(cls, heinzel_dir: Path) -> SpineWriter:
        writer = cls(heinzel_dir)
        writer._open()
        return writer

    def _open(self) -> None:
        with store_io(self.dir):
            ensure_private_dir(self.dir)
        self.lock.acquire()
        try:
            data = read_spine_bytes(self.path)
            found = scan(data, self.path)
            created = not self.path.exists()
            self._fd = open_regular(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            if created:
                fsync_dir(self.dir)
            self.last_seq, self.last_hash = found.last_seq, found.last_hash
            self.opened_scan = found
            self._end = len(data)
            if found.torn is not None:
                kept = keep_and_cut(self.path, data, found.torn)
                self._end = found.torn.offset
                repaired = self.append(
                    SpineRepaired(
                        offset=found.torn.offset,
                        dropped_bytes=found.torn.size,
                        kept_copy=kept.name,
                    )
                )
                found.events.append(repaired)
                found.torn = None
        except OSError as exc:
            self.close()
            raise store_error(exc, getattr(exc, "filename", None) or self.path) from None
        except BaseException:
            self.close()
            raise

    def append(
        self,
        payload: EventData,
        *,
        turn: str | None = None,
        key: str | None = None,
        ts: datetime | None = None,
    ) -> Event:
        """Append one event (after any staged ones) and make it durable before returning it."""
        self.stage(payload, turn=turn, key=key, ts=ts)
        return self.flush()[-1]

    def stage(
        self,
        payload: EventData,
        *,
        turn: str | None = None,
        key: str | None = None,
        ts: datetime | None = None,
    ) -> None:
        """Queue one event for the next ``flush``: it is durable (and exists) only after that.

        The line is encoded now, so a payload the spine refuses fails here,
        at the caller that made it; its time is now, not the flush's.
        """
        if self._fd is None:
            raise HzError("HZS012", "spine writer is closed", str(self.path))
        staged = _Staged(payload, turn, key, ts if ts is not None else now_utc())
        if self._staged:
            last = self._staged[-1]
            staged.encode(last.seq + 1, last.digest)
        else:
            staged.encode(self.last_seq + 1, self.last_hash)
        self._staged.append(staged)
        if crashpoints.ARMED:
            _crash_point(f"staged:{payload.kind}", staged.data)

    def discard(self) -> None:
        """Drop every staged event: a flush that cannot happen loses its group whole."""
        self._staged = []

    @property
    def staged(self) -> int:
        """How many events wait for the next ``flush``."""
        return len(self._staged)

    def flush(self) -> list[Event]:
        """Write every staged event in one write and one fsync; returns them, now durable.

        Group commit: consecutive events cost one fsync, and none of them is
        acknowledged (returned, folded, indexed, told) before it. A failed
        write cuts the group off whole, so the chain never holds half of it.
        """
        staged, self._staged = self._staged, []
        if not staged:
            return []
        if self._fd is None:
            raise HzError("HZS012", "spine writer is closed", str(self.path))
        offset = os.lseek(self._fd, 0, os.SEEK_END)
        if offset != self._end:
            self._foreign(offset)
            offset = self._end
            seq, prev = self.last_seq, self.last_hash
            for line in staged:
                seq += 1
                line.encode(seq, prev)
                prev = line.digest
        data = b"\n".join([line.line for line in staged]) + b"\n"
        try:
            if os.write(self._fd, data) != len(data):
                raise OSError(errno.ENOSPC, "No space left on device")
            os.fsync(self._fd)
        except OSError as exc:
            self._cut_back(offset)
            raise store_error(exc, self.path) from None
        events = []
        for line in staged:
            events.append(
                Event(
                    1, line.seq, line.stamp, line.prev, line.turn, line.kind, line.key, line.data,
                    offset, line.digest,
                )
            )  # fmt: skip
            offset += len(line.line) + 1
        self.last_seq, self.last_hash = events[-1].seq, events[-1].hash
        self._end = offset
        if crashpoints.ARMED:
            for event in events:
                _crash_point(event.kind, event.data)
        return events

    def _foreign(self, size: int) -> None:
        """The spine is not where this writer left it: someone else wrote to it.

        The size comes from the ``lseek`` every append makes anyway, so the
        check costs no system call. Bytes past the writer's end (another
        process appended while this one held the lock) are kept beside the
        spine and cut, like a torn tail at start-up, and a ``spine.repaired``
        line records it before the caller's line: the writer never glues its
        line onto foreign bytes. A spine shorter than the writer left it lost
        lines this writer made durable: nothing more is written (HZS100).
        """
        if size < self._end:
            raise HzError(
                "HZS100",
                f"the spine is {self._end - size} bytes shorter than its writer left it: "
                "another process cut it; nothing more is written (hz heinzel verify shows "
                "the damage)",
                str(self.path),
            )
        try:
            kept, dropped = keep_foreign(self.path, self._end)
        except OSError as exc:
            raise store_error(exc, getattr(exc, "filename", None) or self.path) from None
        _log.warning(
            "HZS099: %s: %d bytes another process appended while this one held the spine "
            "were kept in %s and cut",
            self.path,
            dropped,
            kept.name,
        )
        repair = SpineRepaired(offset=self._end, dropped_bytes=dropped, kept_copy=kept.name)
        self.interposed.append(self.append(repair))

    def take_interposed(self) -> list[Event]:
        """The events written before the last caller's line since the last call (then none)."""
        taken, self.interposed = self.interposed, []
        return taken

    def _cut_back(self, offset: int) -> None:
        """Remove a line that did not become durable (a full disk), so the chain stays whole.

        Truncating frees space, so it works on a full disk; if even that
        fails, the writer closes and the next open cuts the torn tail.
        """
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, offset)
            os.fsync(self._fd)
        except OSError:
            self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.lock.release()

    def __enter__(self) -> SpineWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Staged:
    """One event waiting for a flush, encoded for the place in the chain it will take."""

    __slots__ = ("data", "digest", "key", "kind", "line", "prev", "seq", "stamp", "turn")

    def __init__(self, payload: EventData, turn: str | None, key: str | None, ts: datetime) -> None:
        self.kind, self.turn, self.key, self.stamp = payload.kind, turn, key, utc_stamp(ts)
        self.data = payload.model_dump(mode="json", exclude_none=True)
        self.seq, self.prev, self.line, self.digest = 0, "", b"", ""

    def encode(self, seq: int, prev: str) -> None:
        self.seq, self.prev = seq, prev
        self.line = encode_data(
            self.kind, self.data, seq=seq, prev=prev, turn=self.turn, key=self.key, ts=self.stamp
        )
        self.digest = hashlib.sha256(self.line).hexdigest()


def _crash_point(kind: str, data: dict[str, Any]) -> None:
    """Reach the crash points of a line: its kind, and its kind with its step (if any)."""
    step = data.get("step")
    crashpoints.reached(kind, f"{kind}:{step}" if step else kind)
