"""A heinzel that may hand tasks off, and the scripted runner configured in its home."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from tests.support import handoff_runner
from tests.support.wire.server import ToolCall

RUNNER = Path(handoff_runner.__file__)
TASK = "Rename the heading of monday.md\nand add a one-line summary."
HANDOFF = ToolCall("handoff", {"task": TASK, "workdir": "notes"})
DRAFT = {"output": "digest", "text": "- handed the rename off\n", "report": "drafted 1"}


def handoff_contract(model: str) -> str:
    """``fixer``: reads the ``notes`` folder, may hand tasks off there, drafts a section."""
    return f"""---
name: "fixer"
description: "Hands small fixes to a coding agent."
hz:
  inputs:
    notes: {{source: files, method: glob, args: {{pattern: "**/*.md", root: notes}}}}
  requires: [files:read, agents:handoff, documents:write]
  publishes:
    - capability: documents.place_draft
      asset: "doc:reports/fixer.md#fixer"
  outputs:
    digest: {{}}
  approvers: [owner]
  agent:
    model: "{model}"
---
# Fixer

### Goal

Hand the fixes the notes ask for to the coding agent, then draft what was done.
"""


def configure(home: Path, mode: str, *args: str, name: str = "script", **keys: float | str) -> Path:
    """A runner in ``home``'s ``hz.toml`` running the scripted runner in ``mode`` with ``args``
    (``keys``: more of its settings); returns the file it marks each start in."""
    marks = home.parent / f"{name}-marks.txt"
    marks.write_text("")
    command = json.dumps([sys.executable, str(RUNNER), mode, str(marks), *args])
    settings = {"timeout_s": 60, **keys}
    lines = "".join(f"{key} = {json.dumps(value)}\n" for key, value in settings.items())
    with (home / "hz.toml").open("a") as toml:
        toml.write(f"\n[handoff.runners.{name}]\ncommand = {command}\n{lines}")
    return marks


def marked(marks: Path, lines: int = 1, timeout_s: float = 30.0) -> dict[str, list[int]]:
    """The pids the scripted runner marked (``started``, ``child``), once ``lines`` are there."""
    stop = time.monotonic() + timeout_s
    while len(marks.read_text().splitlines()) < lines and time.monotonic() < stop:
        time.sleep(0.05)
    found: dict[str, list[int]] = {"started": [], "child": []}
    for line in marks.read_text().splitlines():
        what, pid = line.split()
        found[what].append(int(pid))
    return found


def gone(pid: int, timeout_s: float = 10.0) -> bool:
    """Whether ``pid`` ends within ``timeout_s`` (a zombie nobody reaped yet counts as ended)."""
    stop = time.monotonic() + timeout_s
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if _zombie(pid) or time.monotonic() > stop:
            return _zombie(pid)
        time.sleep(0.05)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] == "Z"
