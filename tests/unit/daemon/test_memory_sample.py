"""The free-memory sample: Linux's ``MemAvailable`` read straight, psutil where it would differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from hz_kernel.daemon import admission

MEMINFO = """MemTotal:       16000000 kB
MemFree:         1000000 kB
MemAvailable:    {available} kB
Buffers:          100000 kB
Cached:          2000000 kB
"""


def _meminfo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    path = tmp_path / "meminfo"
    path.write_text(text)
    monkeypatch.setattr(admission, "_MEMINFO", str(path))


def test_mem_available_is_read_as_psutil_would_report_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _meminfo(tmp_path, monkeypatch, MEMINFO.format(available=8_192_000))
    assert admission.memory_available_mb() == 8_000


@pytest.mark.parametrize(
    "text",
    [
        MEMINFO.format(available=0),
        MEMINFO.format(available=17_000_000),
        MEMINFO.replace("MemAvailable:    {available} kB\n", ""),
        "",
    ],
    ids=["zero", "above-total", "absent", "empty"],
)
def test_psutil_estimates_where_mem_available_cannot_be_taken_as_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    _meminfo(tmp_path, monkeypatch, text)
    assert admission._meminfo_available() is None
    assert (admission.memory_available_mb() or 0) > 0  # psutil's own reading of the machine


def test_no_meminfo_falls_back_to_psutil(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admission, "_MEMINFO", str(tmp_path / "absent"))
    assert (admission.memory_available_mb() or 0) > 0
