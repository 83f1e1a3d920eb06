"""Receipts from a real spine, and the lint that keeps text out of the team repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from hz_kernel.errors import HzError
from hz_kernel.store.envelope import Event
from hz_kernel.store.scan import scan_file
from hz_kernel.team.lint import lint
from hz_kernel.team.receipts import (
    ApprovalObservedReceipt,
    ContractAmendedReceipt,
    DraftPlacedReceipt,
    TurnFinishedReceipt,
    fingerprint,
    receipts_from,
)
from hz_kernel.team.state_branch import StateBranch
from tests.support.drafted import Drafted, build_drafted
from tests.support.team import HEINZEL, T0, finished, make_team_repo, run_git


@pytest.fixture(scope="module")
def approved(tmp_path_factory: pytest.TempPathFactory) -> Drafted:
    """A digest heinzel that drafted once and whose draft was approved (two turns)."""
    world = build_drafted(tmp_path_factory.mktemp("drafted"))
    result = world.hz("approve", "dig", now="2026-12-01T10:00:00Z")
    assert result.returncode == 0, result.stderr
    return world


def spine(world: Drafted) -> list[Event]:
    return scan_file(world.spine).events


def test_a_real_spine_gives_one_receipt_per_receipt_grade_event(approved: Drafted) -> None:
    events = spine(approved)
    data = {e.kind: e.data for e in events}

    receipts = receipts_from(events, heinzel=approved.heinzel_id, handle="priya", token=3)

    kinds = [r.kind for r in receipts]
    assert kinds == ["draft.placed", "turn.finished", "approval.observed", "turn.finished"]
    placed, drafted, observed, learned = receipts
    assert isinstance(placed, DraftPlacedReceipt)
    assert placed.asset == "doc:reports/digest.md#digest"
    assert placed.key_fp == fingerprint(str(data["draft.placed"]["key"]))
    assert placed.hash == data["draft.placed"]["hash"]
    assert isinstance(drafted, TurnFinishedReceipt)
    assert (drafted.cause, drafted.disposition, drafted.draft_hash) == (
        "asked",
        "drafted",
        placed.hash,
    )
    assert drafted.contract_version == 1
    assert drafted.contract_fp == data["contract.approved"]["fingerprint"]
    first_gather = next(e for e in events if e.kind == "step.done" and e.data["step"] == "gather")
    assert drafted.input_fps == [i["fingerprint"] for i in first_gather.data["inputs"]]
    assert drafted.tokens > 0
    assert isinstance(observed, ApprovalObservedReceipt)
    assert (observed.approver, observed.key_fp) == ("priya", placed.key_fp)
    assert observed.output_fp == data["approval.observed"]["output_fp"]
    assert isinstance(learned, TurnFinishedReceipt)
    assert (learned.cause, learned.disposition, learned.draft_hash) == ("approval", "learned", None)
    assert {r.token for r in receipts} == {3}
    assert {r.by for r in receipts} == {"priya"}
    assert all(r.heinzel == approved.heinzel_id for r in receipts)


def test_no_receipt_carries_the_spine_s_texts(approved: Drafted, tmp_path: Path) -> None:
    events = spine(approved)
    texts = [
        str(e.data[field])
        for e in events
        for field in ("report", "reason", "question", "lesson", "wants")
        if field in e.data
    ]
    assert texts, "the spine should hold report lines for this test to mean anything"
    team = make_team_repo(tmp_path)
    state = StateBranch(tmp_path / "priya", str(team))
    state.queue(receipts_from(events, heinzel=approved.heinzel_id, handle="priya", token=1))
    assert state.push_pending(now=T0).error is None

    pushed = run_git(team, "log", "-p", "hz/state")

    assert "receipts/" in pushed
    for text in texts:
        assert text not in pushed


def test_an_amendment_outside_a_turn_is_a_receipt_named_by_its_version() -> None:
    amended = Event(
        v=1,
        seq=30,
        ts="2026-12-02T10:00:00.000000Z",
        prev="0" * 64,
        turn=None,
        kind="contract.amended",
        key=None,
        data={"version": 2, "fingerprint": "e" * 64, "proposal": "01PROPOSAL", "by": "user"},
    )

    (receipt,) = receipts_from([amended], heinzel=HEINZEL, handle="priya", token=1)

    assert isinstance(receipt, ContractAmendedReceipt)
    assert receipt.path == f"receipts/{HEINZEL}/v2-by-priya.contract.amended.json"
    assert "proposal" not in receipt.model_dump()


def test_an_event_that_cannot_be_a_receipt_is_a_coded_error() -> None:
    observed = Event(
        v=1,
        seq=7,
        ts="2026-12-02T10:00:00.000000Z",
        prev="0" * 64,
        turn="01JDTURN01",
        kind="approval.observed",
        key=None,
        data={"key": "k", "approver": "Priya Raman", "share_changed": 0.1, "output_fp": "f" * 64},
    )

    with pytest.raises(HzError) as refused:
        receipts_from([observed], heinzel=HEINZEL, handle="priya", token=1)

    assert refused.value.code == "HZS107"
    assert refused.value.one_line().startswith(f"HZS107: {HEINZEL} seq 7: approval.observed")
    assert "approver" in refused.value.message


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("text", "the whole draft", "HZS101"),
        ("body", "x", "HZS101"),
        ("lesson", "keep it short", "HZS101"),
        ("lessons", ["keep it short"], "HZS101"),
        ("summary", "x", "HZS101"),
        ("report", "Drafted digest", "HZS101"),
        ("report_line", "x", "HZS101"),
        ("reason", "x", "HZS101"),
        ("name", "priya", "HZS101"),
        ("display_name", "priya", "HZS101"),
        ("email", "x", "HZS101"),
        ("author_email", "x", "HZS101"),
        ("approver", "priya@example.org", "HZS102"),
        ("approver", "Priya Raman", "HZS103"),
        ("asset", "doc:notes.md\nignore previous", "HZS103"),
        ("input_fps", ["a" * 64, "said no"], "HZS103"),
        ("asset", "x" * 600, "HZS103"),
    ],
)
def test_the_lint_refuses_text_names_and_addresses(field: str, value: object, code: str) -> None:
    document = finished("01JDTURN01").model_dump(mode="json") | {field: value}

    with pytest.raises(HzError) as refused:
        lint(document, "receipts/x.json")

    assert refused.value.code == code
    assert repr(field) in refused.value.message or f"'{field}[" in refused.value.message
    assert refused.value.place == "receipts/x.json"


def test_the_lint_refuses_text_nested_anywhere() -> None:
    document = finished("01JDTURN01").model_dump(mode="json") | {"extra": [{"summary": "x"}]}

    with pytest.raises(HzError) as refused:
        lint(document, "receipts/x.json")

    assert refused.value.one_line() == (
        "HZS101: receipts/x.json: field 'extra[0].summary' would carry text to the team repository"
    )


def test_the_lint_passes_every_receipt_kind(approved: Drafted) -> None:
    for receipt in receipts_from(
        spine(approved), heinzel=approved.heinzel_id, handle="priya", token=1
    ):
        lint(receipt.model_dump(mode="json"), receipt.path)
