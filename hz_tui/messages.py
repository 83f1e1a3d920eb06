"""Messages and signal payloads passed between the cockpit's parts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from textual.message import Message

from hz_kernel.overview import HeinzelSummary
from hz_tui.watcher import SpineBatch


class RowsUpdate(BaseModel):
    """Fresh summaries from the kernel: ``full`` replaces everything, else a delta."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    rows: list[HeinzelSummary] = []
    gone: list[str] = []
    full: bool = False

    @property
    def ids(self) -> set[str]:
        return {row.id for row in self.rows} | set(self.gone)


class SpinesMoved(Message):
    """The watcher read new lines from some spines."""

    def __init__(self, batch: SpineBatch) -> None:
        super().__init__()
        self.batch = batch


class OpenHeinzel(Message):
    """The user asked to open one heinzel's page."""

    def __init__(self, heinzel_id: str) -> None:
        super().__init__()
        self.heinzel_id = heinzel_id
