"""Toasts for what the user wants to know at once, on any screen, and their history.

A draft landing (``draft.placed``) means something waits for review; a turn
that failed (``turn.finished`` with disposition ``failed``) means a heinzel
did not do its job. Everything else shows on the screens that care (the
home's activity pane lists it all). Every notice the cockpit raises goes
through the ``NoticeBoard``: repeats group into one toast with a count, no
more than ``MAX_TOASTS`` show at once, and the notices page (F5) lists them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from textual.app import App
from textual.notifications import Notification
from textual.signal import Signal

from hz_tui import display
from hz_tui.watcher import SpineBatch

Severity = Literal["information", "warning", "error"]


@dataclass(frozen=True)
class Toast:
    message: str
    severity: Severity = "information"
    timeout: float = 8.0


def names_seen(batch: SpineBatch) -> dict[str, str]:
    """Names given in a batch (a new heinzel, a rename): a toast may come before its row."""
    return {
        heinzel_id: display.visible(str(line.data["name"]))
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
            elif line.kind == "notice.raised" and line.data.get("notice"):
                notice = display.visible(str(line.data["notice"]))
                toasts.append(Toast(f"{name}: {notice}", "warning", 15.0))
            elif line.kind == "turn.finished" and line.data.get("disposition") == "failed":
                why = line.data.get("reason") or line.data.get("report") or "no reason given"
                toasts.append(Toast(f"{name}: a turn failed: {why}", "error", 15.0))
    return toasts


#: Toasts on screen at once; a newer one pushes the oldest out (the history keeps it).
MAX_TOASTS = 3
#: Notices the history keeps (the oldest go first).
HISTORY = 500


@dataclass
class Notice:
    """One notice in the history: a repeat of the same text while its toast shows counts here."""

    message: str
    title: str
    severity: Severity
    first_at: datetime
    at: datetime
    count: int = 1
    toast: Notification | None = None
    """The toast that shows it now (None once it has gone)."""

    @property
    def text(self) -> str:
        return self.message if self.count == 1 else f"{self.message} (×{self.count})"

    @property
    def showing(self) -> bool:
        return self.toast is not None and not self.toast.has_expired


class NoticeBoard:
    """Every notice the cockpit raised, and the few toasts that show the newest.

    ``raise_notice`` returns the toast to post: a notice equal to one still
    on screen (same text, title and severity) replaces that toast with one
    that counts the repeats, and beyond ``MAX_TOASTS`` the oldest toast
    goes. A toast is retired by expiring it (``timeout = 0``): Textual drops
    expired notifications when the next one is added.
    """

    def __init__(self, owner: App[Any]) -> None:
        self.owner = owner
        self.history: deque[Notice] = deque(maxlen=HISTORY)
        self.changed: Signal[Notice] = Signal(owner, "notices-changed")

    @property
    def showing(self) -> list[Notice]:
        return [notice for notice in self.history if notice.showing]

    def raise_notice(
        self,
        message: str,
        *,
        title: str,
        severity: Severity,
        timeout: float,
        markup: bool,
        now: datetime,
    ) -> Notification:
        showing = self.showing
        notice = next(
            (n for n in showing if (n.message, n.title, n.severity) == (message, title, severity)),
            None,
        )
        if notice is None:
            notice = Notice(message, title, severity, first_at=now, at=now)
        else:
            showing.remove(notice)
            self.history.remove(notice)
            _retire(notice)
            notice.count += 1
            notice.at = now
        while len(showing) >= MAX_TOASTS:
            _retire(showing.pop(0))
        notice.toast = Notification(notice.text, title, severity, timeout, markup=markup)
        self.history.append(notice)
        self.changed.publish(notice)
        return notice.toast

    def withdraw(self, message: str, *, severity: Severity = "information") -> None:
        """Take down the toast that shows ``message`` now (what it offered is gone: an undo
        used or over); the history keeps the notice."""
        for notice in self.showing:
            if (notice.message, notice.severity) == (message, severity) and notice.toast:
                toast = notice.toast
                _retire(notice)
                self.owner._unnotify(toast)


def _retire(notice: Notice) -> None:
    if notice.toast is not None:
        notice.toast.timeout = 0
        notice.toast = None
