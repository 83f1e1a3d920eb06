"""No file of the project keeps a merge's conflict markers (a merge once left them in a doc)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_MARKER = re.compile(rb"^(<{7} |>{7} |={7}$)", re.M)


def test_no_tracked_text_file_holds_conflict_markers() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", "*.md", "*.py", "*.toml", "*.tcss", "*.yaml", "*.txt"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    marked = [
        name
        for name in filter(None, listed.decode().split("\0"))
        if (ROOT / name).is_file() and _MARKER.search((ROOT / name).read_bytes())
    ]

    assert marked == []
