"""What ``hz daemon status`` says of the tick (new-user pass, issue 13 finding 6)."""

from __future__ import annotations

from hz_kernel.daemon.cli import _describe
from hz_kernel.daemon.lifecycle import DaemonReport


def _report(ticks: int) -> DaemonReport:
    return DaemonReport(
        running=True,
        pid=7,
        address="http://127.0.0.1:9",
        protocol=1,
        uptime_s=12,
        heinzels=1,
        ticks=ticks,
        tick_age_s=12,
        log="daemon.log",
    )


def test_before_the_first_tick_status_says_no_tick_yet() -> None:
    """It said "last tick 12s ago" with no tick done: the age counts from the loop's start."""
    assert "no tick yet" in _describe(_report(0)) and "last tick" not in _describe(_report(0))
    assert "last tick 12s ago" in _describe(_report(3))
