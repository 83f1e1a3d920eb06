"""One heinzel's failure is that heinzel's: what the tick records, shows and backs off from.

When the tick's work for one heinzel fails — with a coded error or with
anything unexpected (a full disk, a turn that cannot resume) — the tick
records it here and goes on with every other heinzel. The failed one is
left alone until its retry time: a minute after the first failure,
doubling with each failure in a row, at most an hour. Its next success
clears the record.

The record is ``<home>/heinzel/failures.json`` (0600, replaced atomically):
one small file, read once by a ticking kernel and once per listing. It is
not derived from the spines, so it is not part of the index (which may be
deleted at any time). Losing it costs nothing but an early retry; when it
cannot be written (a full disk), the ticking process keeps the record in
memory and writes it with the next change.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from pathlib import Path

from pydantic import ConfigDict, TypeAdapter

from hz_kernel.overview import HeinzelFailure
from hz_kernel.store.fsutil import atomic_write, is_regular_file, read_nofollow

FAILURES_NAME = "failures.json"
BACKOFF_FIRST_S = 60.0
BACKOFF_MAX_S = 3600.0

#: Built on first use: a listing reads the ledger only when a turn has failed.
_FAILURES = TypeAdapter(dict[str, HeinzelFailure], config=ConfigDict(defer_build=True))
_log = logging.getLogger("hz.tick")


def failures_path(heinzel_root: Path) -> Path:
    return heinzel_root / FAILURES_NAME


def read_failures(path: Path) -> dict[str, HeinzelFailure]:
    """The recorded failures by heinzel id; none when the file is missing or not one we wrote.

    Only a regular file is read (a FIFO in its place must not hang a listing).
    """
    if not is_regular_file(path):
        return {}
    try:
        return _FAILURES.validate_json(read_nofollow(path))
    except (OSError, ValueError):
        return {}


def backoff_seconds(failures: int) -> float:
    """The wait after ``failures`` failures in a row."""
    return min(BACKOFF_FIRST_S * 2.0 ** min(failures - 1, 32), BACKOFF_MAX_S)


class FailureLedger:
    """The failures of one home, as the kernel that ticks it keeps them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.failures = read_failures(path)
        self._unsaved = False

    def backing_off(self, now: datetime) -> set[str]:
        """The heinzels whose retry time has not come yet."""
        return {h for h, failure in self.failures.items() if failure.retry_at > now}

    def record(
        self, heinzel_id: str, *, code: str, message: str, place: str | None, now: datetime
    ) -> HeinzelFailure:
        previous = self.failures.get(heinzel_id)
        count = previous.failures + 1 if previous is not None else 1
        failure = HeinzelFailure(
            code=code,
            message=message,
            place=place,
            since=previous.since if previous is not None else now,
            at=now,
            failures=count,
            retry_at=now + timedelta(seconds=backoff_seconds(count)),
        )
        self.failures[heinzel_id] = failure
        self._save()
        return failure

    def clear(self, heinzel_id: str) -> None:
        """The heinzel's work succeeded: forget its failures."""
        if self.failures.pop(heinzel_id, None) is not None or self._unsaved:
            self._save()

    def keep_only(self, heinzel_ids: set[str]) -> None:
        """Forget heinzels that are gone from the home."""
        gone = set(self.failures) - heinzel_ids
        for heinzel_id in gone:
            del self.failures[heinzel_id]
        if gone:
            self._save()

    def _save(self) -> None:
        try:
            atomic_write(self.path, _FAILURES.dump_json(self.failures))
        except OSError as exc:
            self._unsaved = True
            _log.info("could not record the tick's failures in %s: %s", self.path, exc)
        else:
            self._unsaved = False
