"""Issue 12 item 5: a turn's timeout counts the time processes worked on it, nothing else."""

from __future__ import annotations

from typing import Any

from hz_kernel.engine.state import load_state, running_time_s
from hz_kernel.store.envelope import Event

TURN = "01TURN"


def _event(seq: int, ts: str, kind: str, **data: Any) -> Event:
    return Event(v=1, seq=seq, ts=ts, prev="", turn=TURN, kind=kind, key=None, data=data)


def test_issue12_item5_down_time_and_waiting_are_not_running_time() -> None:
    events = [
        _event(
            1,
            "2026-10-30T15:00:00.000000Z",
            "turn.started",
            cause="schedule",
            contract_version=1,
            deadline="2026-10-30T15:15:00Z",
        ),
        _event(2, "2026-10-30T15:00:10.000000Z", "step.done", step="gather"),
        # the process dies; restarted 40 minutes later
        _event(3, "2026-10-30T15:40:00.000000Z", "turn.resumed", woken_by="restart"),
        _event(4, "2026-10-30T15:40:05.000000Z", "step.done", step="think"),
        _event(5, "2026-10-30T15:40:05.000000Z", "step.done", step="outcome"),
        _event(6, "2026-10-30T15:40:05.000000Z", "step.done", step="act"),
        _event(7, "2026-10-30T15:40:05.000000Z", "turn.waiting", step="act"),
        # three days parked, then the timer fires
        _event(8, "2026-11-02T15:40:05.000000Z", "turn.resumed", woken_by="timer"),
        _event(9, "2026-11-02T15:40:07.000000Z", "step.done", step="think"),
    ]
    assert running_time_s(events) == 17.0
    state = load_state(events, TURN)
    assert state is not None and state.ran_s == 17.0


def test_issue12_item5_a_clock_that_stepped_back_never_counts_negative() -> None:
    events = [
        _event(1, "2026-10-30T15:00:00.000000Z", "turn.started", cause="asked", contract_version=1),
        _event(2, "2026-10-30T14:59:00.000000Z", "step.done", step="gather"),
    ]
    assert running_time_s(events) == 0.0
