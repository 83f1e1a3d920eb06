"""A heinzel that may hand tasks off, and the scripted runner configured in its home."""

from __future__ import annotations

import json
import sys
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


def configure(home: Path, mode: str, *, name: str = "script") -> Path:
    """A runner in ``home``'s ``hz.toml`` running the scripted runner in ``mode``; returns the
    file it marks each start in."""
    marks = home.parent / f"{name}-marks.txt"
    marks.write_text("")
    command = json.dumps([sys.executable, str(RUNNER), mode, str(marks)])
    with (home / "hz.toml").open("a") as settings:
        settings.write(f"\n[handoff.runners.{name}]\ncommand = {command}\ntimeout_s = 60\n")
    return marks
