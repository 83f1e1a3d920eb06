"""What the cockpit says after an action: the decision in words (attack pass: approving a
draft said "weekly-report: draft, now awake", never that it was approved)."""

from __future__ import annotations

from hz_kernel.api import Decision
from hz_tui.actions import describe


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
