"""What ``hz heinzel wake`` says of a turn that does not run to its end at once."""

from __future__ import annotations

from hz_kernel.api import TurnReport
from hz_kernel.cli.tail import waiting_line


def test_a_parked_turn_is_not_called_queued_for_capacity() -> None:
    """Both issue-18 passes: a reader's turn parked at gather (docs/flow.md) was reported as
    "queued (capacity) … starts when a turn slot frees" with nothing else running."""
    parked = TurnReport(heinzel="h", turn="T1", status="waiting")
    assert waiting_line("weekly", parked) == (
        "weekly: waiting: turn T1 is parked until what it waits for comes (hz heinzel show weekly)"
    )
    queued = TurnReport(heinzel="h", turn="T1", status="waiting", reason="capacity")
    assert waiting_line("weekly", queued) == (
        "weekly: queued (capacity): turn T1 starts when a turn slot frees"
    )
