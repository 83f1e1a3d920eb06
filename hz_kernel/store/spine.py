"""The spine writer: append-only, hash-chained, one fsync per line, one writer at a time.

``SpineWriter.open`` takes the heinzel's lock, reads the spine once (that
read also yields the events the index projection needs), cuts off a torn
tail if a crash left one, and from then on appends one line per ``write``
followed by ``fsync``. Readers use ``scan.scan_file`` and never need the lock.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from hz_kernel import crashpoints
from hz_kernel.errors import HzError
from hz_kernel.home import SPINE_NAME
from hz_kernel.store.envelope import Event, encode_data, line_hash
from hz_kernel.store.fsutil import FILE_MODE, ensure_private_dir, fsync_dir
from hz_kernel.store.locks import FileLock
from hz_kernel.store.repair import keep_and_cut
from hz_kernel.store.scan import SpineScan, read_spine_bytes, scan
from hz_kernel.vocabulary import EventData, SpineRepaired

LOCK_NAME = "lock"


class SpineWriter:
    """The only way lines get into a spine."""

    def __init__(self, heinzel_dir: Path) -> None:
        self.dir = heinzel_dir
        self.path = heinzel_dir / SPINE_NAME
        self.lock = FileLock(heinzel_dir / LOCK_NAME)
        self._fd: int | None = None
        self.last_seq = 0
        self.last_hash = ""
        self.opened_scan: SpineScan | None = None

    @classmethod
    def open(cls, heinzel_dir: Path) -> SpineWriter:
        writer = cls(heinzel_dir)
        writer._open()
        return writer

    def _open(self) -> None:
        ensure_private_dir(self.dir)
        self.lock.acquire()
        try:
            data = read_spine_bytes(self.path)
            found = scan(data, self.path)
            created = not self.path.exists()
            self._fd = os.open(
                self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE
            )
            if created:
                fsync_dir(self.dir)
            self.last_seq, self.last_hash = found.last_seq, found.last_hash
            self.opened_scan = found
            if found.torn is not None:
                kept = keep_and_cut(self.path, data, found.torn)
                repaired = self.append(
                    SpineRepaired(
                        offset=found.torn.offset,
                        dropped_bytes=found.torn.size,
                        kept_copy=kept.name,
                    )
                )
                found.events.append(repaired)
                found.torn = None
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
        """Append one event and make it durable before returning it."""
        if self._fd is None:
            raise HzError("HZS012", "spine writer is closed", str(self.path))
        seq = self.last_seq + 1
        data = payload.model_dump(mode="json", exclude_none=True)
        line = encode_data(
            payload.kind, data, seq=seq, prev=self.last_hash, turn=turn, key=key, ts=ts
        )
        offset = os.lseek(self._fd, 0, os.SEEK_END)
        os.write(self._fd, line + b"\n")
        os.fsync(self._fd)
        digest = line_hash(line)
        event = Event(
            1, seq, _ts_of(line), self.last_hash, turn, payload.kind, key, data, offset, digest
        )
        self.last_seq, self.last_hash = seq, digest
        step = event.data.get("step")
        crashpoints.reached(payload.kind, f"{payload.kind}:{step}" if step else payload.kind)
        return event

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.lock.release()

    def __enter__(self) -> SpineWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ts_of(line: bytes) -> str:
    start = line.index(b'"ts":"') + 6
    return line[start : line.index(b'"', start)].decode()
