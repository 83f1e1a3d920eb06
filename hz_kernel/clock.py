"""The kernel's clock. ``HZ_NOW`` pins it for a run so slots and days are testable."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from hz_kernel.errors import UsageError

#: How the kernel writes an instant for people and the wire: UTC, to the second.
STAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def stamp(moment: datetime) -> str:
    """``moment`` (aware) as ``STAMP_FORMAT`` in UTC."""
    return moment.astimezone(UTC).strftime(STAMP_FORMAT)


def now_utc() -> datetime:
    """The kernel's clock: ``HZ_NOW`` pins it for a run (tests, demos), else the real time.

    ``HZ_NOW=@<file>`` reads the pinned time from that file at every call, so a
    test can move a running daemon's clock forward, one simulated tick at a time.
    """
    pinned = os.environ.get("HZ_NOW")
    if pinned and pinned.startswith("@"):
        try:
            pinned = Path(pinned[1:]).read_text().strip()
        except OSError as exc:
            raise UsageError(
                "HZU001", f"HZ_NOW names a file hz cannot read ({exc.strerror})", pinned
            ) from None
    if pinned:
        try:
            moment = datetime.fromisoformat(pinned.replace("Z", "+00:00"))
        except ValueError:
            raise UsageError("HZU001", "HZ_NOW is not an ISO time", pinned) from None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return datetime.now(UTC)
