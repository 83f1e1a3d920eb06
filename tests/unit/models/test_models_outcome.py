"""The outcome types: bounded short texts, waits that wait on something, one tool per kind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from hz_kernel.engine.outcome import (
    OUTCOME_KINDS,
    OUTCOME_MODELS,
    AmendmentOutcome,
    ApprovalWait,
    DraftOutcome,
    Lesson,
    NothingOutcome,
    OutcomeAdapter,
    QuestionOutcome,
    SummaryOutcome,
    WaitOutcome,
    output_tools,
)


def test_a_report_is_one_line_and_bounded() -> None:
    outcome = NothingOutcome(report="  nothing\n moved   today ")
    assert outcome.report == "nothing moved today"
    NothingOutcome(report="x" * 200)
    with pytest.raises(ValidationError):
        NothingOutcome(report="x" * 201)
    with pytest.raises(ValidationError):
        NothingOutcome(report="   ")


def test_lessons_and_questions_are_bounded() -> None:
    Lesson(lesson="y" * 240, hunks=["@@ -1 +1 @@"])
    with pytest.raises(ValidationError):
        Lesson(lesson="y" * 241)
    with pytest.raises(ValidationError):
        QuestionOutcome(question="q" * 501, report="asked")
    with pytest.raises(ValidationError):
        SummaryOutcome(asset="doc:a", wants="w", decisions=["d" * 241], report="r")


def test_a_wait_needs_a_time_or_a_condition_and_keeps_utc() -> None:
    with pytest.raises(ValidationError):
        WaitOutcome(report="waiting")
    with pytest.raises(ValidationError):
        WaitOutcome(until=datetime(2026, 12, 4, 12, 0), report="naive time")
    berlin = timezone(timedelta(hours=1))
    wait = WaitOutcome(until=datetime(2026, 12, 4, 13, 0, tzinfo=berlin), report="until noon")
    assert wait.until == datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    assert wait.until.tzinfo == UTC
    on = WaitOutcome(on=ApprovalWait(key="hz-1@v1@slot@doc"), report="until approved")
    assert on.on is not None and on.on.kind == "approval"


def test_outcomes_parse_by_their_type_field() -> None:
    parsed = OutcomeAdapter.validate_json(
        '{"type": "wait", "on": {"kind": "source", "input": "board", "fingerprint_not": "ab12"},'
        ' "report": "until the board moves"}'
    )
    assert isinstance(parsed, WaitOutcome)
    assert parsed.on is not None and parsed.on.kind == "source"
    draft = OutcomeAdapter.validate_python(
        {"type": "draft", "output": "section", "text": "## Hi\n", "report": "drafted"}
    )
    assert isinstance(draft, DraftOutcome)
    with pytest.raises(ValidationError):
        OutcomeAdapter.validate_python({"type": "draft", "text": "x", "report": "r", "extra": 1})
    amendment = AmendmentOutcome(text="---\nhz: {}\n---\n", reason="fewer inputs", report="r")
    assert OutcomeAdapter.validate_json(amendment.model_dump_json()) == amendment


def test_one_output_tool_per_kind_named_after_it() -> None:
    tools = output_tools()
    assert [tool.name for tool in tools] == list(OUTCOME_KINDS)
    # Described by the outcome model's docstring, once: the schema does not carry it too
    # (it was once sent doubled: "Pause the turn…. Pause the turn…").
    for tool in tools:
        assert tool.kind == "output"
        assert tool.description == OUTCOME_MODELS[tool.name].__doc__
        assert "description" not in tool.parameters_json_schema
    assert [tool.name for tool in output_tools(("lessons", "nothing", "lessons"))] == [
        "lessons",
        "nothing",
    ]
    with pytest.raises(ValueError):
        output_tools(())
