"""``HZ_NOW=@FILE``: the pinned time is read from the file at every use; a missing file is one
coded error."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from hz_kernel.clock import now_utc
from hz_kernel.errors import UsageError


def test_the_clock_follows_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = tmp_path / "clock"
    monkeypatch.setenv("HZ_NOW", f"@{clock}")
    clock.write_text("2026-11-27T09:00:00Z\n")
    first = now_utc()
    clock.write_text("2026-11-27T09:10:00Z")

    assert (first, now_utc()) == (
        datetime(2026, 11, 27, 9, 0, tzinfo=UTC),
        datetime(2026, 11, 27, 9, 10, tzinfo=UTC),
    )


def test_a_missing_clock_file_is_one_coded_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HZ_NOW", f"@{tmp_path / 'gone'}")

    with pytest.raises(UsageError) as raised:
        now_utc()

    assert raised.value.code == "HZU001" and "cannot read" in raised.value.message
