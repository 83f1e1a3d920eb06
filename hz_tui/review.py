"""Reviewing a draft: what changed between the draft as placed and the document's text now.

Kept apart from the screen so the rules (what a status means to the reviewer,
how the diff reads) are tested without one. The texts come from the kernel's
``draft.diff``; the cockpit never reads a document to find a section itself.
"""

from __future__ import annotations

import difflib
import os
import shlex

from rich.text import Text

from hz_kernel.api import DraftDiff
from hz_tui.rows import Palette

#: What each status of ``draft.diff`` tells the reviewer, in a few words.
STATUS_NOTES = {
    "placed": "unchanged since it was placed",
    "edited": "you edited it: the diff shows your changes",
    "approved": "approved already (the tag line is gone)",
    "rejected": "rejected already (the section is gone)",
    "missing": "the document is missing",
}
DIFF_CONTEXT = 3


def diff_lines(diff: DraftDiff) -> list[str]:
    """A unified diff from the draft as placed to the section as it reads now."""
    before = diff.placed_text.splitlines()
    after = diff.current_text.splitlines()
    return list(
        difflib.unified_diff(
            before, after, "as placed", "in the document now", n=DIFF_CONTEXT, lineterm=""
        )
    )


def render_diff(diff: DraftDiff, palette: Palette) -> Text:
    """The review pane: a header, then the diff, or the draft itself when nothing changed."""
    text = Text()
    text.append(f"{diff.heinzel_name}", style="bold")
    text.append(f"  {diff.asset}\n", style="dim")
    text.append(f"{diff.path}\n", style="dim")
    note = STATUS_NOTES.get(diff.status, diff.status)
    text.append(f"{note}\n\n", style="italic")
    lines = diff_lines(diff)
    if not lines:
        for line in diff.placed_text.splitlines():
            text.append(f"  {line}\n")
        return text
    text.append_text(colour_diff(lines, palette))
    return text


def colour_diff(lines: list[str], palette: Palette) -> Text:
    """Unified-diff lines coloured as a reviewer reads them: added, removed, hunk headers."""
    text = Text()
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith(("---", "+++")):
            text.append(line + "\n", style="bold")
        elif line.startswith("@@"):
            text.append(line + "\n", style=palette.accent)
        elif line.startswith("+"):
            text.append(line + "\n", style=palette.ok)
        elif line.startswith("-"):
            text.append(line + "\n", style=palette.bad)
        else:
            text.append(line + "\n")
    return text


def editor_command(path: str) -> list[str]:
    """``$VISUAL`` or ``$EDITOR`` (with its own arguments), else ``vi``, on ``path``."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    return [*shlex.split(editor), path]
