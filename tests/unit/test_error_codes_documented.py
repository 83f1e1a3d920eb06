"""Every error code the sources can raise is documented somewhere in docs/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = re.compile(r"\bHZ[A-Z][0-9]{3}\b")


def test_every_code_is_documented() -> None:
    raised = set()
    for package in ("hz_kernel", "hz_tui"):
        for path in (ROOT / package).rglob("*.py"):
            raised |= set(CODE.findall(path.read_text(encoding="utf-8")))
    documented = set()
    for page in (ROOT / "docs").glob("*.md"):
        documented |= set(CODE.findall(page.read_text(encoding="utf-8")))
    ranges = re.findall(r"(HZ[A-Z])([0-9]{3})[–-]HZ[A-Z]([0-9]{3})", " ".join(
        p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md")
    ))  # fmt: skip
    for prefix, low, high in ranges:
        documented |= {f"{prefix}{n:03d}" for n in range(int(low), int(high) + 1)}
    assert sorted(raised - documented) == []
