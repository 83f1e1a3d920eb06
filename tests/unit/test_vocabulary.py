"""The vocabulary is compatibility data: kinds and step names are pinned here."""

from __future__ import annotations

import re
import typing

from pydantic import BaseModel

from hz_kernel import vocabulary
from hz_kernel.terms import STEP_NAMES
from hz_kernel.vocabulary import KINDS, MIGRATIONS, migrate

PINNED_KINDS = [
    "action.reported", "amendment.declined", "amendment.proposed", "approval.observed",
    "attempt.failed",
    "attempt.retry", "attempt.started", "chain.accepted", "context.edit", "context.prepared",
    "contract.amended",
    "contract.approved", "contract.proposed", "draft.placed", "draft.rejected",
    "draft.superseded", "effect.done", "effect.failed", "effect.interrupted", "effect.started",
    "heinzel.created", "heinzel.paused", "heinzel.renamed", "heinzel.retired",
    "heinzel.unpaused", "heinzel.unretired", "lesson.dismissed", "lesson.recorded",
    "notice.raised", "question.answered", "question.asked", "spine.repaired", "step.done",
    "summary.written", "tool.finished", "tool.interrupted", "tool.started", "turn.finished",
    "turn.queued", "turn.requested", "turn.resumed", "turn.skipped", "turn.started",
    "turn.steered", "turn.waiting", "usage",
]  # fmt: skip


def test_event_kinds_are_pinned() -> None:
    assert list(KINDS) == PINNED_KINDS, "kinds are only ever added; update this list knowingly"


def test_step_names_are_pinned() -> None:
    assert STEP_NAMES == ("gather", "think", "outcome", "act", "finish")
    assert typing.get_args(vocabulary.Step) == STEP_NAMES


def test_vocabulary_versions() -> None:
    assert vocabulary.VOCABULARY_VERSION == 1 and vocabulary.ENVELOPE_VERSION == 1


def _field_names(model: type[BaseModel]) -> set[str]:
    names = set(model.model_fields)
    for field in model.model_fields.values():
        for arg in typing.get_args(field.annotation) or (field.annotation,):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                names |= _field_names(arg)
    return names


def test_no_kind_has_a_content_field() -> None:
    for kind, model in KINDS.items():
        assert not _field_names(model) & {"text", "draft", "transcript"}, kind


def test_no_example_event_carries_an_email_address() -> None:
    email = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
    for kind, model in KINDS.items():
        for field in model.model_fields.values():
            assert not (
                field.default and isinstance(field.default, str) and email.search(field.default)
            ), kind


def test_migration_on_read_follows_renames(monkeypatch) -> None:
    monkeypatch.setitem(
        MIGRATIONS,
        "draft.placed.0",
        ("draft.placed", lambda d: {"output": d["out"], "key": d["key"]}),
    )
    kind, data = migrate("draft.placed.0", {"out": "section", "key": "k"})
    assert kind == "draft.placed" and data == {"output": "section", "key": "k"}
    assert migrate("turn.finished", {"a": 1}) == ("turn.finished", {"a": 1})
