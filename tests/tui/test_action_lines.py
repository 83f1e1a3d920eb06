"""What the cockpit says in words: an action's decision (attack pass: approving a draft said
"weekly-report: draft, now awake", never that it was approved), a transcript's attempts."""

from __future__ import annotations

from hz_kernel.api import Decision
from hz_tui.actions import describe
from hz_tui.transcript import TranscriptModel


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
