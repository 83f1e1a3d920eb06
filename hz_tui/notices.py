"""Toasts for what happened on a spine that the user wants to know at once, on any screen.

A draft landing (``draft.placed``) means something waits for review; a turn
that failed (``turn.finished`` with disposition ``failed``) means a heinzel
did not do its job. Everything else shows on the screens that care.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from hz_tui.watcher import SpineBatch


@dataclass(frozen=True)
class Toast:
    message: str
    severity: Literal["information", "warning", "error"] = "information"
    timeout: float = 8.0


def names_seen(batch: SpineBatch) -> dict[str, str]:
    """Names given in a batch (a new heinzel, a rename): a toast may come before its row."""
    return {
        heinzel_id: str(line.data["name"])
        for heinzel_id, lines in batch.lines.items()
        for line in lines
        if line.kind in ("heinzel.created", "heinzel.renamed") and line.data.get("name")
    }


def toasts_for(batch: SpineBatch, names: Mapping[str, str]) -> list[Toast]:
    """The toasts a batch of new spine lines deserves, in the order the lines came."""
    toasts: list[Toast] = []
    for heinzel_id, lines in batch.lines.items():
        name = names.get(heinzel_id, heinzel_id)
        for line in lines:
            if line.kind == "draft.placed":
                asset = str(line.data.get("asset", "")).removeprefix("doc:")
                toasts.append(Toast(f"{name}: a draft landed in {asset} (F4 to review)"))
            elif line.kind == "turn.finished" and line.data.get("disposition") == "failed":
                why = line.data.get("reason") or line.data.get("report") or "no reason given"
                toasts.append(Toast(f"{name}: a turn failed: {why}", "error", 15.0))
    return toasts
