"""What the cockpit says in words: an action's decision (attack pass: approving a draft said
"weekly-report: draft, now awake", never that it was approved), a transcript's attempts, the
activity pane's entries."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from textual.app import App

from hz_kernel.api import Decision, TurnReport
from hz_kernel.overview import HeinzelSummary
from hz_tui.actions import describe
from hz_tui.tail import SpineLine
from hz_tui.transcript import TranscriptModel
from hz_tui.widgets import activity
from hz_tui.widgets.activity import Activity, ActivityPane


def test_a_decision_says_what_was_approved_or_rejected_and_the_state_after() -> None:
    approved = Decision(heinzel="h", what="draft", state="awake")
    rejected = Decision(heinzel="h", what="draft", state="asleep", declined=True)
    contract = Decision(heinzel="h", what="contract", version=1, state="asleep")
    assert describe("weekly-report", approved) == "weekly-report: draft approved; now awake"
    assert describe("weekly-report", rejected) == "weekly-report: draft rejected; now asleep"
    assert describe("team-okrs", contract) == "team-okrs: contract v1 approved; now asleep"


def test_other_actions_read_as_done() -> None:
    paused = Decision(heinzel="h", what="pause", state="paused")
    renamed = Decision(heinzel="h", what="rename", state="asleep")
    assert describe("notes-digest", paused) == "notes-digest: paused"
    assert describe("digest", renamed) == "digest: renamed; now asleep"


def test_a_wake_says_when_its_turn_waits() -> None:
    """New-user pass (issue 13) finding 2: a wake the daemon queued read "turn started"."""
    waiting = TurnReport(heinzel="h", turn="t", status="waiting", reason="low-memory")
    behind = TurnReport(heinzel="h", turn="t", status="requested")
    assert describe("digest", waiting) == "digest: turn queued: low memory"
    assert describe("digest", behind) == "digest: queued behind the running turn"


def test_a_failed_attempt_is_listed_after_its_ask_and_a_repeated_ask_once() -> None:
    """New-user pass: a failed turn listed "attempt 1 failed" before "→ attempt 1 asked", and
    a stopped turn said "→ attempt 1 asked" twice in a row."""
    model = TranscriptModel(
        heinzel="h",
        turn="t",
        events=[
            {"kind": "attempt.started", "data": {"attempt": 1, "model": "local"}},
            {"kind": "attempt.failed", "data": {"attempt": 1, "code": "HZE021", "error": "cut"}},
        ],
        records=[{"type": "attempt", "attempt": 1}, {"type": "attempt", "attempt": 1}],
    )
    texts = [line.text for line in model.lines()]
    asked = texts.index("→ attempt 1 asked (asked again 1× after a restart)")
    failed = next(i for i, text in enumerate(texts) if text.startswith("attempt 1 failed"))
    assert asked < failed
    assert sum(text.startswith("→ attempt 1 asked") for text in texts) == 1


async def test_the_activity_shows_a_line_read_twice_once_and_in_time_order() -> None:
    """Attack pass: after daemon restarts the activity pane repeated events and listed older
    ones after newer ones. A spine line read again (same heinzel, same seq) shows once; a
    catch-up's older line goes where its time puts it."""
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)

    def entry(seq: int, minute: int) -> Activity:
        return Activity(f"2026-12-01T11:{minute:02d}:00Z", "hz-1", "digest", f"e{seq}", seq=seq)

    app = App[None]()
    async with app.run_test():
        pane = ActivityPane()
        await app.mount(pane)
        pane.add([entry(1, 1), entry(2, 2)], now)
        pane.add([entry(1, 1), entry(2, 2), entry(4, 4)], now)  # replayed after a reconnect
        pane.add([entry(3, 3)], now)  # caught up late
        assert [e.text for e in pane.entries] == ["e1", "e2", "e3", "e4"]


def test_the_activity_history_reads_back_past_a_long_run_of_tool_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New-user pass: a reopened cockpit dropped an approval minutes old, because the last
    16 KiB of a busy spine held nothing but two turns' tool lines. The history reads further
    back until it has enough entries, and shows nothing older than the point where a spine it
    had to cut short begins (no gap between heinzels). The windows are scaled down (4 KiB,
    at most 16 KiB) so the spines can be small."""
    monkeypatch.setattr(activity, "HISTORY_WINDOW", 4 << 10)
    monkeypatch.setattr(activity, "HISTORY_WINDOW_MAX", 16 << 10)
    busy, quiet = "hz-01JC0CKP1T0000000000000001", "hz-01JC0CKP1T0000000000000002"

    def line(seq: int, minute: int, kind: str, **data: object) -> str:
        ts = f"2026-12-01T10:{minute:02d}:00.000000Z"
        return json.dumps({"v": 1, "seq": seq, "ts": ts, "kind": kind, "data": data}) + "\n"

    noise = "x" * 400
    lines = [line(1, 0, "heinzel.created")]
    lines += [line(2 + n, 1, "draft.rejected", key=f"k{n}") for n in range(100)]
    lines.append(line(110, 2, "approval.observed", key="k", share_changed=0.1))
    lines += [line(111 + n, 3, "tool.started", call=n, note=noise) for n in range(20)]
    lines.append(line(300, 4, "turn.finished", disposition="drafted", report="done"))
    (tmp_path / busy).mkdir()
    (tmp_path / busy / "session.jsonl").write_text("".join(lines))
    (tmp_path / quiet).mkdir()
    (tmp_path / quiet / "session.jsonl").write_text(line(1, 0, "heinzel.created"))
    rows = [
        HeinzelSummary(id=busy, name="busy", namespace="personal", state="asleep",
                       last_turn_at="2026-12-01T10:04:00Z"),
        HeinzelSummary(id=quiet, name="quiet", namespace="personal", state="asleep",
                       last_turn_at="2026-12-01T09:00:00Z"),
    ]  # fmt: skip
    entries = activity.from_spine_tails(tmp_path, rows)
    texts = [(entry.name, entry.text) for entry in entries]
    assert ("busy", "draft approved") in texts, "read back past the tool lines"
    assert texts[-1] == ("busy", "done")
    assert ("quiet", "created") not in texts, "older than where the busy spine was cut"


def test_a_notice_on_a_spine_reads_as_its_text_in_the_activity_pane() -> None:
    """Issue 18 item 5: a reader's nudge to an upstream's owner is read where activity is."""
    nudge = "weekly-report needs theo-row's row approved by Fri 30 Oct 12:00 UTC (in 1 h 0 min)"
    line = SpineLine(seq=9, ts="2026-10-30T11:00:00Z", kind="notice.raised", data={"notice": nudge})
    assert activity.describe(line) == (nudge, "warn")
