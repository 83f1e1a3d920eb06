"""What the cockpit says in words: an action's decision (attack pass: approving a draft said
"weekly-report: draft, now awake", never that it was approved), a transcript's attempts, the
activity pane's entries."""

from __future__ import annotations

from datetime import UTC, datetime

from textual.app import App

from hz_kernel.api import Decision
from hz_tui.actions import describe
from hz_tui.transcript import TranscriptModel
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
