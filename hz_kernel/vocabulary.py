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

import functools
import types
from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from hz_kernel.terms import (
    ACTION_LINE_MAX,
    Cause,
    Disposition,
    SkipReason,
    Step,
    WokenBy,
)

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
    reason: str | None = Field(default=None, max_length=2000)


class SourceDiscovered(EventData):
    """The daily discovery job found a new source under one of the contract's ``discover``
    hints: an absolute path, or ``team:`` and a path in the team repository. Recorded once per
    source and heinzel, with the key of the one wake it brings (``docs/discovery.md``)."""

    kind: ClassVar[str] = "source.discovered"
    source: str = Field(max_length=4096)
    hint: str = Field(max_length=512)


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
    token: int | None = None
    """A team heinzel's lease fencing token this turn runs under (its receipts carry it)."""


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
    holder: str | None = Field(default=None, max_length=39)
    """``held-by``: the roster handle of the home whose lease runs this slot."""


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
    target: str | None = None
    """What the effect acts through, by name where it has one (a handoff's runner)."""


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


class HandoffFinished(EventData):
    """A handoff's runner ended (the effect keyed ``key``): how, and its transcript and report
    by hash and size; the texts are in the turn body. ``exit_status`` is negative for a signal;
    ``priced`` is False when the runner reported no cost (then no ``usage`` follows)."""

    kind: ClassVar[str] = "handoff.finished"
    key: str
    runner: str
    exit_status: int
    timed_out: bool = False
    duration_ms: int
    transcript_hash: str
    transcript_size: int
    transcript_cut: int = 0
    """Bytes of the runner's output left out of the body (past ``max_output_bytes``)."""
    report_hash: str
    report_size: int
    priced: bool = False


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


class ActionReported(EventData):
    """A line for the action log: what the model (its ``report`` tool, within a turn) or the
    user (``hz heinzel report``) says was done. One line, no content beyond it."""

    kind: ClassVar[str] = "action.reported"
    by: Literal["model", "user"]
    line: str = Field(max_length=ACTION_LINE_MAX)
    """Checked to be one non-empty line where it comes in (``heinzel.report``, the tool)."""


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


# --- what a payload read from disk must look like ---------------------------------------

#: How one field's JSON value is tested: ``(how, what)``. As strict as the model and of the
#: very JSON type the writer dumps (an int is no str, a bool no int), so a payload that fits
#: never fails ``payload()`` and a fold that reads the raw dict meets the types it expects.
#: A reindex tests every field of every line, so the common shapes are tested with one
#: C-level operation each, in one function per kind (``_fits_function``); only the rest call
#: a test.
Rule = tuple[int, Any]
#: ``type(value) in what``; ``value in what`` (a closed word list, None if optional); a list
#: whose items' types are all in ``what``; a list whose items are all in ``what``; a dict
#: whose values' types are all in ``what``; ``what(value)``.
_TYPE, _WORD, _LIST, _WORDS, _DICT, _TEST = range(6)

_JSON_OF: dict[Any, frozenset[type]] = {
    str: frozenset({str}),
    int: frozenset({int}),
    bool: frozenset({bool}),
    float: frozenset({float, int}),
}


@functools.cache
def _datetime() -> TypeAdapter[datetime]:
    return TypeAdapter(datetime)


def _timestamp(value: Any) -> bool:
    if type(value) is not str:
        return False
    try:
        _datetime().validate_python(value)
    except ValidationError:
        return False
    return True


def _test(annotation: Any, limit: int | None = None) -> Callable[[Any], bool]:
    """The test of any annotation the vocabulary uses, as a function; one it cannot test is
    a TypeError at once (the test of every kind shows it), never a silent pass."""
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is Any:
        return lambda value: True
    if annotation is str and limit is not None:
        return lambda value: type(value) is str and len(value) <= limit
    if annotation in _JSON_OF:
        json_types = _JSON_OF[annotation]
        return lambda value: type(value) in json_types
    if annotation is datetime:
        return _timestamp
    if origin is Literal:
        words = frozenset(args)
        return lambda value: type(value) is str and value in words
    if origin in (Union, types.UnionType):
        options = [_test(arg, limit) for arg in args if arg is not types.NoneType]
        nullable = types.NoneType in args
        return lambda value: (nullable and value is None) or any(o(value) for o in options)
    if origin is list and len(args) == 1:
        item = _test(args[0])
        return lambda value: type(value) is list and all(map(item, value))
    if origin is dict and len(args) == 2 and args[0] is str:
        entry = _test(args[1])
        return lambda value: type(value) is dict and all(map(entry, value.values()))
    raise TypeError(f"no JSON test for a payload field of type {annotation!r}")


def _words(annotation: Any) -> frozenset[Any] | None:
    """The words of a closed word list (``Literal`` of strings, perhaps optional), else None."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal and all(type(arg) is str for arg in args):
        return frozenset(args)
    if origin in (Union, types.UnionType) and types.NoneType in args and len(args) == 2:
        (inner,) = (arg for arg in args if arg is not types.NoneType)
        words = _words(inner)
        return None if words is None else words | {None}
    return None


def _json_types(annotation: Any) -> frozenset[type] | None:
    """The JSON types a plain field (str, int, float, bool, a dict of anything, perhaps
    optional) may hold, else None."""
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation in _JSON_OF:
        return _JSON_OF[annotation]
    if origin is dict and args == (str, Any):
        return frozenset({dict})
    if origin in (Union, types.UnionType) and types.NoneType in args and len(args) == 2:
        (inner,) = (arg for arg in args if arg is not types.NoneType)
        plain = _json_types(inner)
        return None if plain is None else plain | {types.NoneType}
    return None


def _rule(annotation: Any, limit: int | None) -> Rule:
    origin, args = get_origin(annotation), get_args(annotation)
    words = _words(annotation)
    plain = _json_types(annotation)
    if limit is None and plain is not None:
        return _TYPE, plain
    if words is not None:
        return _WORD, words
    if origin is list and _json_types(args[0]) is not None:
        return _LIST, _json_types(args[0])
    if origin is list and _words(args[0]) is not None:
        return _WORDS, _words(args[0])
    if origin is dict and args[0] is str and _json_types(args[1]) is not None:
        return _DICT, _json_types(args[1])
    return _TEST, _test(annotation, limit)


#: Each kind's fields with their rules, and the names it requires (built on first use).
_SHAPES: dict[str, tuple[dict[str, Rule], frozenset[str]]] = {}
#: Each kind's whole test as one function (``_fits_function``), built with ``_SHAPES``.
_FITS: dict[str, Callable[[dict[str, Any]], bool]] = {}

_MISSING = object()

#: The expression that tests a present value ``v`` against a rule's ``what`` (``{w}``), for
#: each way of testing.
_TEST_EXPRESSIONS = {
    _TYPE: "type(v) in {w}",
    _WORD: "v in {w}",
    _LIST: "type(v) is list and {w}.issuperset(map(type, v))",
    _WORDS: "type(v) is list and {w}.issuperset(v)",
    _DICT: "type(v) is dict and {w}.issuperset(map(type, v.values()))",
    _TEST: "{w}(v)",
}


def _shapes() -> dict[str, tuple[dict[str, Rule], frozenset[str]]]:
    shapes = {}
    for kind, model in KINDS.items():
        rules = {}
        for name, field in model.model_fields.items():
            limit = None
            for constraint in field.metadata:
                if not hasattr(constraint, "max_length"):
                    raise TypeError(f"no JSON test for the constraint {constraint!r} of {name}")
                limit = constraint.max_length
            rules[name] = _rule(field.annotation, limit)
        required = frozenset(n for n, field in model.model_fields.items() if field.is_required())
        shapes[kind] = (rules, required)
        _FITS[kind] = _fits_function(kind, rules, required)
    _SHAPES.update(shapes)
    return _SHAPES


def _fits_function(
    kind: str, rules: dict[str, Rule], required: frozenset[str]
) -> Callable[[dict[str, Any]], bool]:
    """One kind's test of a payload as straight-line code, a field after another.

    A reindex tests every line it reads; a loop over the fields that looks
    up each rule and branches on its way costs several times the tests
    themselves. The source is made from the rules alone (field names are
    the models' identifiers), so it says exactly what ``_fault`` says.
    """
    source = ["def fits(data):", "    get = data.get"]
    scope: dict[str, Any] = {"MISSING": _MISSING, "REQUIRED": required}
    for number, (name, (how, what)) in enumerate(rules.items()):
        scope[f"w{number}"] = what
        test = _TEST_EXPRESSIONS[how].format(w=f"w{number}")
        source += [
            f"    v = get({name!r}, MISSING)",
            f"    if v is not MISSING and not ({test}):",
            "        return False",
        ]
    source.append("    return REQUIRED <= data.keys()")
    exec(compile("\n".join(source), f"<the payload test of {kind}>", "exec"), scope)
    fits: Callable[[dict[str, Any]], bool] = scope["fits"]
    return fits


def payload_fault(kind: str, data: dict[str, Any]) -> str | None:
    """What makes a payload read from disk unfit for its kind, or None when it fits.

    A model's validation of every line would cost more than the rest of a
    reindex. Fields this version does not know, and kinds it does not know,
    fit (a newer version wrote them).
    """
    if kind in MIGRATIONS:
        kind, data = migrate(kind, data)
    shape = (_SHAPES or _shapes()).get(kind)
    if shape is None:
        return None
    try:
        if _FITS[kind](data):
            return None
    except TypeError:  # an unhashable value looked up among words
        pass
    return _fault(kind, data, *shape)


def _fault(
    kind: str, data: dict[str, Any], rules: dict[str, Rule], required: frozenset[str]
) -> str | None:
    """What ``payload_fault`` found wrong, said for the user: the first field that does not
    fit, in the payload's order, or the first required field it lacks."""
    for name, value in data.items():
        rule = rules.get(name)
        if rule is None:
            continue
        how, what = rule
        try:
            if how == _TYPE:
                if type(value) in what:
                    continue
            elif how == _WORD:
                if value in what:
                    continue
            elif how == _LIST:
                if type(value) is list and what.issuperset(map(type, value)):
                    continue
            elif how == _WORDS:
                if type(value) is list and what.issuperset(value):
                    continue
            elif how == _DICT:
                if type(value) is dict and what.issuperset(map(type, value.values())):
                    continue
            elif what(value):
                continue
        except TypeError:  # an unhashable value looked up among words
            pass
        return f"its {kind} field {name!r} does not fit ({type(value).__name__})"
    if not required <= data.keys():
        return f"its {kind} lacks the field {min(required - data.keys())!r}"
    return None
