"""s6 attack 1: the daemon's log of tick problems says each distinct problem once."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from hz_kernel.daemon.lifecycle import _TickLog
from hz_kernel.tick.report import TickProblem, TickReport, TickWoken

AT = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def _report(*codes: str) -> TickReport:
    problems = [TickProblem(code=code, message="the index is damaged") for code in codes]
    return TickReport(at=AT, due=0, problems=problems)


def test_s6_item1_a_problem_repeated_tick_after_tick_is_logged_once_until_it_changes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A tick failing the same way every 5 s is one line, not one (with a traceback) per tick;
    a new problem, or the old one coming back after a clean tick, is logged again."""
    log = _TickLog()
    with caplog.at_level(logging.INFO, logger="hz.daemon"):
        for codes in (["HZS094"], ["HZS094"], ["HZS094"], ["HZS094", "HZT010"], [], ["HZS094"]):
            log(_report(*codes))
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "tick: HZS094: the index is damaged (-)",
        "tick: HZT010: the index is damaged (-)",
        "tick: HZS094: the index is damaged (-)",
    ]


def test_one_heinzel_woken_is_logged_in_the_singular(caplog: pytest.LogCaptureFixture) -> None:
    """New-user pass (issue 13) finding 5: the log said "tick: woke 1 heinzels"."""
    woken = TickWoken(heinzel="h", name="d", causes=["schedule"], keys=["k"], due_at=AT, height=0)
    log = _TickLog()
    with caplog.at_level(logging.INFO, logger="hz.daemon"):
        log(TickReport(at=AT, due=1, woken=[woken]))
        log(TickReport(at=AT, due=2, woken=[woken, woken]))
    assert [r.getMessage() for r in caplog.records] == [
        "tick: woke 1 heinzel",
        "tick: woke 2 heinzels",
    ]
