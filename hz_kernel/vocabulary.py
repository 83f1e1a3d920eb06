"""The frozen event vocabulary of a spine.

Every kind a spine line may carry is a pydantic model here, keyed by its
``kind`` string. The list is compatibility data: a test pins it, kinds are
only ever added, and a kind whose payload changes incompatibly gets a new
name (``draft.placed.2``) plus an entry in ``MIGRATIONS`` so old lines are
upgraded when read. Nothing ever rewrites a spine.

Payloads hold no content: ids, hashes, sizes, costs, dispositions and the
short texts meant for the user (a lesson, a question, a report line, a
summary). No field is named ``text``, ``draft`` or ``transcript``; drafts,
inputs and model messages live in the turn body.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from hz_kernel.terms import Cause, Disposition, SkipReason, Step, WokenBy

VOCABULARY_VERSION = 1
ENVELOPE_VERSION = 1


class EventData(BaseModel):
    """Base of every payload: frozen, and tolerant of fields added by newer versions."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")
    kind: ClassVar[str]


# --- the heinzel itself ---------------------------------------------------------------


class HeinzelCreated(EventData):
    kind: ClassVar[str] = "heinzel.created"
    name: str
    namespace: Literal["me", "team"] = "me"
    origin: Literal["file", "template", "sentence", "import"] = "file"
    template: str | None = None


class HeinzelRenamed(EventData):
    kind: ClassVar[str] = "heinzel.renamed"
    name: str
    previous: str


class HeinzelPaused(EventData):
    kind: ClassVar[str] = "heinzel.paused"
    reason: str | None = None


class HeinzelUnpaused(EventData):
    kind: ClassVar[str] = "heinzel.unpaused"


class HeinzelRetired(EventData):
    kind: ClassVar[str] = "heinzel.retired"


class HeinzelUnretired(EventData):
    kind: ClassVar[str] = "heinzel.unretired"


# --- the contract in versions ---------------------------------------------------------


class ContractProposed(EventData):
    """Version 1 written and compiled, waiting for the user's approval."""

    kind: ClassVar[str] = "contract.proposed"
    version: int
    fingerprint: str
    size: int
    proposal: str | None = None


class ContractApproved(EventData):
    kind: ClassVar[str] = "contract.approved"
    version: int
    fingerprint: str
    approver: str = "owner"


class AmendmentProposed(EventData):
    kind: ClassVar[str] = "amendment.proposed"
    proposal: str
    by: Literal["heinzel", "user"]
    fingerprint: str
    widens: list[str] = []
    narrows: list[str] = []
    reason: str | None = Field(default=None, max_length=600)


class AmendmentDeclined(EventData):
    kind: ClassVar[str] = "amendment.declined"
    proposal: str
    sources: list[str] = []


class ContractAmended(EventData):
    kind: ClassVar[str] = "contract.amended"
    version: int
    fingerprint: str
    proposal: str | None = None
    by: Literal["heinzel", "user"] = "user"
    approver: str = "owner"


# --- turns ----------------------------------------------------------------------------


class TurnStarted(EventData):
    kind: ClassVar[str] = "turn.started"
    cause: Cause
    causes: list[Cause] = []
    keys: list[str] = []
    contract_version: int
    lessons_seq: int = 0
    skills: dict[str, str] = {}
    vocabulary: int = VOCABULARY_VERSION
    parent_turn: str | None = None
    from_step: Step | None = None
    request_ids: list[str] = []
    deadline: datetime | None = None


class StepDone(EventData):
    """A step's checkpoint: what it produced, by hash and size only."""

    kind: ClassVar[str] = "step.done"
    step: Step
    inputs: list[dict[str, Any]] = []
    output_hash: str | None = None
    output_size: int | None = None
    outcome: str | None = None
    report: str | None = Field(default=None, max_length=600)
    attempts: int | None = None
    tokens: int | None = None
    tokens_cached: int | None = None
    usd: float | None = None
    priced: bool | None = None
    """False when the model has no known price: ``usd`` leaves its cost out."""


class AttemptStarted(EventData):
    kind: ClassVar[str] = "attempt.started"
    step: Step
    attempt: int
    model: str


class AttemptRetry(EventData):
    kind: ClassVar[str] = "attempt.retry"
    step: Step
    attempt: int
    delay_ms: int
    error: str


class AttemptFailed(EventData):
    kind: ClassVar[str] = "attempt.failed"
    step: Step
    attempt: int
    code: str
    error: str
    output_size: int = 0


class TurnQueued(EventData):
    """A turn that must wait for the kernel's limits before it (re)starts: why, never what.

    Written when the wait begins, with the turn's id; the next ``turn.started``
    (or ``turn.resumed``) of that turn is its admission.
    """

    kind: ClassVar[str] = "turn.queued"
    reason: Literal["capacity", "low-memory"]
    keys: list[str] = []


class TurnWaiting(EventData):
    kind: ClassVar[str] = "turn.waiting"
    step: Step
    until: datetime | None = None
    on: dict[str, Any] | None = None


class TurnResumed(EventData):
    kind: ClassVar[str] = "turn.resumed"
    woken_by: WokenBy
    resumes: int = 0


class TurnSteered(EventData):
    kind: ClassVar[str] = "turn.steered"
    request_id: str
    hash: str


class TurnRequested(EventData):
    kind: ClassVar[str] = "turn.requested"
    cause: Cause
    key: str
    request_id: str | None = None


class TurnSkipped(EventData):
    kind: ClassVar[str] = "turn.skipped"
    causes: list[Cause]
    keys: list[str]
    reason: SkipReason
    moved: list[str] = []
    detail: str | None = Field(default=None, max_length=600)


class TurnFinished(EventData):
    kind: ClassVar[str] = "turn.finished"
    disposition: Disposition
    reason: str | None = Field(default=None, max_length=600)
    causes: list[Cause] = []
    report: str | None = Field(default=None, max_length=600)
    tokens: int = 0
    tokens_cached: int = 0
    usd: float = 0.0
    duration_ms: int = 0
    body_hash: str | None = None
    body_size: int | None = None
    step: Step | None = None
    priced: bool | None = None
    """False when a model without a known price ran: the turn's cost is unknown."""


# --- the effect ledger ----------------------------------------------------------------


class EffectStarted(EventData):
    kind: ClassVar[str] = "effect.started"
    key: str
    effect: str
    replay_safe: bool = False


class EffectDone(EventData):
    kind: ClassVar[str] = "effect.done"
    key: str
    hash: str | None = None
    found_on_resume: bool = False


class EffectFailed(EventData):
    kind: ClassVar[str] = "effect.failed"
    key: str
    error: str = Field(max_length=600)


class EffectInterrupted(EventData):
    kind: ClassVar[str] = "effect.interrupted"
    key: str
    effect: str


# --- the model's tool calls -----------------------------------------------------------


class ToolStarted(EventData):
    """A tool call the model made, durable before it runs; ``call`` is its place among the
    think step's tool calls, ``rerun`` marks a replay-safe call run again after a crash."""

    kind: ClassVar[str] = "tool.started"
    call: int
    call_id: str
    tool: str
    args_hash: str
    replay_safe: bool
    rerun: bool = False


class ToolFinished(EventData):
    """A tool call ended: its result by hash and size, or the code of its error."""

    kind: ClassVar[str] = "tool.finished"
    call: int
    call_id: str
    tool: str
    result_hash: str | None = None
    size: int = 0
    truncated: bool = False
    error: str | None = None
    found_on_resume: bool = False


class ToolInterrupted(EventData):
    """An unsafe tool call a crash cut short: settled without running it again."""

    kind: ClassVar[str] = "tool.interrupted"
    call: int
    call_id: str
    tool: str


# --- what effects leave behind --------------------------------------------------------


class DraftPlaced(EventData):
    kind: ClassVar[str] = "draft.placed"
    key: str
    asset: str
    output: str = "section"
    hash: str
    size: int
    contract_version: int


class DraftSuperseded(EventData):
    kind: ClassVar[str] = "draft.superseded"
    key: str
    by: str | None = None


class DraftRejected(EventData):
    kind: ClassVar[str] = "draft.rejected"
    key: str
    by: str = "owner"


class ApprovalObserved(EventData):
    kind: ClassVar[str] = "approval.observed"
    key: str
    approver: str = "owner"
    share_changed: float
    output_fp: str


class LessonRecorded(EventData):
    kind: ClassVar[str] = "lesson.recorded"
    lesson_id: str
    lesson: str = Field(max_length=300)
    from_key: str | None = None
    hunks: int = 0
    hunks_hash: str | None = None


class LessonDismissed(EventData):
    kind: ClassVar[str] = "lesson.dismissed"
    lesson_id: str


class QuestionAsked(EventData):
    kind: ClassVar[str] = "question.asked"
    key: str
    question: str = Field(max_length=600)


class QuestionAnswered(EventData):
    kind: ClassVar[str] = "question.answered"
    key: str
    request_id: str
    hash: str


class NoticeRaised(EventData):
    kind: ClassVar[str] = "notice.raised"
    key: str
    notice: str = Field(max_length=600)


#: The longest line of the action log.
ACTION_LINE_MAX = 300


class ActionReported(EventData):
    """A line for the action log: what the model (its ``report`` tool, within a turn) or the
    user (``hz heinzel report``) says was done. One line, no content beyond it."""

    kind: ClassVar[str] = "action.reported"
    by: Literal["model", "user"]
    line: str = Field(min_length=1, max_length=ACTION_LINE_MAX, pattern=r"^[^\n\r]+$")


class SummaryWritten(EventData):
    kind: ClassVar[str] = "summary.written"
    asset: str
    wants: str = Field(max_length=600)
    decisions: list[str] = []
    open_questions: list[str] = []
    next_deadline: str | None = None
    sources: list[str] = []
    previous_seq: int | None = None
    covers_through_seq: int


class ContextPrepared(EventData):
    """What the think step will ask the model with, by size: the estimate against the window."""

    kind: ClassVar[str] = "context.prepared"
    model: str
    estimate_tokens: int
    window_tokens: int | None = None
    """None when the model's window is not known (a server's own setting, no override)."""
    budget_tokens: int | None = None
    compacted: bool = False
    reason: Literal["budget", "overflow"] | None = None


class ContextEdit(EventData):
    kind: ClassVar[str] = "context.edit"
    target: str
    replacement: str | None = Field(default=None, max_length=600)


class Usage(EventData):
    kind: ClassVar[str] = "usage"
    purpose: Literal["summary", "lesson", "handoff", "contract"]
    tokens: int = 0
    tokens_cached: int = 0
    usd: float = 0.0
    priced: bool | None = None


# --- the spine's own care -------------------------------------------------------------


class SpineRepaired(EventData):
    """A torn tail was cut off; ``kept_copy`` names the file that keeps the bytes."""

    kind: ClassVar[str] = "spine.repaired"
    offset: int
    dropped_bytes: int
    kept_copy: str


class ChainAccepted(EventData):
    """The user looked at a break in the chain and accepted it (``verify --accept``)."""

    kind: ClassVar[str] = "chain.accepted"
    breaks: list[dict[str, Any]]


def _collect() -> dict[str, type[EventData]]:
    kinds: dict[str, type[EventData]] = {}
    stack: list[type[EventData]] = list(EventData.__subclasses__())
    while stack:
        model = stack.pop()
        kinds[model.kind] = model
        stack.extend(model.__subclasses__())
    return dict(sorted(kinds.items()))


KINDS: dict[str, type[EventData]] = _collect()

Migration = Callable[[dict[str, Any]], dict[str, Any]]

#: Old kind name -> (current kind name, payload upgrade). Applied on read only.
MIGRATIONS: dict[str, tuple[str, Migration]] = {}


def migrate(kind: str, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Follow renames until the kind is current; unknown kinds come back unchanged."""
    seen: set[str] = set()
    while kind in MIGRATIONS and kind not in seen:
        seen.add(kind)
        kind, upgrade = MIGRATIONS[kind][0], MIGRATIONS[kind][1]
        data = upgrade(data)
    return kind, data


def parse_payload(kind: str, data: dict[str, Any]) -> EventData | None:
    """The typed payload of a line, or None for a kind this version does not know."""
    model = KINDS.get(kind)
    if model is None:
        return None
    return model.model_validate(data)
