"""The typed results a turn's think step may end with.

The model answers by calling exactly one output tool, one per outcome kind, so
real providers and the local model share the same contract. Every outcome has a
``report``: the one line the timeline shows. Fields that end up in the spine
(report, lesson, question, summary) are bounded here, so an overlong answer is
sent back to the model as a validation error instead of reaching the record.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    field_validator,
    model_validator,
)
from pydantic_ai.tools import GenerateToolJsonSchema, ToolDefinition

REPORT_MAX = 200
LESSON_MAX = 240
QUESTION_MAX = 500
REASON_MAX = 500
SUMMARY_ITEM_MAX = 240
SUMMARY_ITEMS_MAX = 20


#: Terminal escape sequences: CSI (colours, cursor), OSC (titles, links), two-byte ESC forms.
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _one_line(value: Any) -> Any:
    """One line without control characters: a short text may quote a document, never its escapes.

    Runs of whitespace (newlines included) collapse to one space.
    """
    if isinstance(value, str):
        return " ".join(_CONTROL.sub(" ", _ESCAPE.sub("", value)).split())
    return value


_OneLine = BeforeValidator(_one_line)
Report = Annotated[str, _OneLine, StringConstraints(min_length=1, max_length=REPORT_MAX)]
LessonText = Annotated[str, _OneLine, StringConstraints(min_length=1, max_length=LESSON_MAX)]
QuestionText = Annotated[str, _OneLine, StringConstraints(min_length=1, max_length=QUESTION_MAX)]
ReasonText = Annotated[str, _OneLine, StringConstraints(min_length=1, max_length=REASON_MAX)]
SummaryItem = Annotated[str, _OneLine, StringConstraints(min_length=1, max_length=SUMMARY_ITEM_MAX)]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]

OutcomeKind = Literal["draft", "lessons", "amendment", "question", "wait", "summary", "nothing"]
OUTCOME_KINDS: tuple[OutcomeKind, ...] = get_args(OutcomeKind)


class _Strict(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)


class Lesson(_Strict):
    """One thing learned from the user's edits, with the diff hunks it comes from."""

    lesson: LessonText = Field(description="One sentence of advice about how to write, not what.")
    hunks: list[str] = Field(default_factory=list, description="The diff hunks it comes from.")


class DraftOutcome(_Strict):
    """A new text for one of the contract's outputs, placed as a draft awaiting approval."""

    type: Literal["draft"] = "draft"
    output: Name = Field(description="The name of the output this text is for.")
    text: str = Field(min_length=1, description="The full text of the output, in Markdown.")
    report: Report = Field(description="One short line for the timeline.")


class LessonsOutcome(_Strict):
    """What the user's edits to an approved draft teach about how to write the next one."""

    type: Literal["lessons"] = "lessons"
    lessons: list[Lesson] = Field(default_factory=list)
    report: Report


class AmendmentOutcome(_Strict):
    """A proposed new text of the whole contract; the user approves or declines it."""

    type: Literal["amendment"] = "amendment"
    text: str = Field(min_length=1, description="The full proposed contract text.")
    reason: ReasonText
    report: Report


class QuestionOutcome(_Strict):
    """A question only the user can answer; the answer arrives as a later input."""

    type: Literal["question"] = "question"
    question: QuestionText
    report: Report


class SourceWait(_Strict):
    """Continue once an input's fingerprint differs from the one given."""

    kind: Literal["source"] = "source"
    input: Name
    fingerprint_not: Name


class ApprovalWait(_Strict):
    """Continue once the draft with this key was approved or rejected."""

    kind: Literal["approval"] = "approval"
    key: Name


class AnswerWait(_Strict):
    """Continue once the question with this key was answered."""

    kind: Literal["answer"] = "answer"
    key: Name


WaitCondition = Annotated[SourceWait | ApprovalWait | AnswerWait, Field(discriminator="kind")]


class WaitOutcome(_Strict):
    """Pause the turn until a time, a condition, or whichever comes first."""

    type: Literal["wait"] = "wait"
    until: datetime | None = Field(default=None, description="A UTC time with its offset.")
    on: WaitCondition | None = None
    report: Report

    @field_validator("until")
    @classmethod
    def _aware_utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("until needs a timezone offset")
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _waits_on_something(self) -> WaitOutcome:
        if self.until is None and self.on is None:
            raise ValueError("a wait needs until, on, or both")
        return self


class SummaryOutcome(_Strict):
    """What is known about this asset and this user, in the same shape every time."""

    type: Literal["summary"] = "summary"
    asset: Name
    wants: QuestionText
    decisions: list[SummaryItem] = Field(default_factory=list, max_length=SUMMARY_ITEMS_MAX)
    open_questions: list[SummaryItem] = Field(default_factory=list, max_length=SUMMARY_ITEMS_MAX)
    next_deadline: str | None = Field(default=None, max_length=100)
    sources: list[Name] = Field(default_factory=list, max_length=SUMMARY_ITEMS_MAX)
    report: Report


class NothingOutcome(_Strict):
    """Nothing needs doing this turn."""

    type: Literal["nothing"] = "nothing"
    report: Report


Outcome = Annotated[
    DraftOutcome
    | LessonsOutcome
    | AmendmentOutcome
    | QuestionOutcome
    | WaitOutcome
    | SummaryOutcome
    | NothingOutcome,
    Field(discriminator="type"),
]
OutcomeAdapter: TypeAdapter[Outcome] = TypeAdapter(Outcome)

OUTCOME_MODELS: dict[OutcomeKind, type[BaseModel]] = {
    "draft": DraftOutcome,
    "lessons": LessonsOutcome,
    "amendment": AmendmentOutcome,
    "question": QuestionOutcome,
    "wait": WaitOutcome,
    "summary": SummaryOutcome,
    "nothing": NothingOutcome,
}


@functools.cache
def output_tools(kinds: tuple[OutcomeKind, ...] | None = None) -> tuple[ToolDefinition, ...]:
    """The output tools offered to the model: one per allowed kind, named after the kind.

    Naming the tools after the kinds lets any model (and the local one) pick the
    outcome by tool name; separate tools also keep each schema a plain object,
    which every provider accepts. Each tool is described by its model's
    docstring. Built once per set of kinds: a schema costs milliseconds.
    """
    chosen = OUTCOME_KINDS if kinds is None else tuple(dict.fromkeys(kinds))
    if not chosen:
        raise ValueError("at least one outcome kind is needed")
    tools = []
    for kind in chosen:
        schema = OUTCOME_MODELS[kind].model_json_schema(schema_generator=GenerateToolJsonSchema)
        description = schema.pop("description", None)
        tools.append(
            ToolDefinition(
                name=kind, parameters_json_schema=schema, description=description, kind="output"
            )
        )
    return tuple(tools)


_WORD = re.compile(r"[^\W_]+")
QUOTE_WORDS = 5


def quotes_document(lesson: str, texts: Sequence[str]) -> bool:
    """Whether a lesson repeats a line of the document (the spine holds no document text).

    A content line of four words or more counts as quoted when five of its
    words in a row (all four of a four-word line) appear in the lesson in that
    order. Headings are exempt: a lesson may name a section.
    """
    said = " ".join(_WORD.findall(lesson.lower()))
    for text in texts:
        for line in text.splitlines():
            if line.lstrip().startswith("#"):
                continue
            words = _WORD.findall(line.lower())
            if len(words) < 4:
                continue
            run = min(len(words), QUOTE_WORDS)
            for start in range(len(words) - run + 1):
                if f" {' '.join(words[start : start + run])} " in f" {said} ":
                    return True
    return False
