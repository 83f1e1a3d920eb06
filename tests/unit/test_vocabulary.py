"""The vocabulary is compatibility data: kinds and step names are pinned here."""

from __future__ import annotations

import re
import types
import typing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from hz_kernel import vocabulary
from hz_kernel.errors import HzError
from hz_kernel.store.envelope import GENESIS, encode
from hz_kernel.store.scan import scan
from hz_kernel.terms import STEP_NAMES
from hz_kernel.vocabulary import (
    _SHAPES,
    KINDS,
    MIGRATIONS,
    EventData,
    _fault,
    migrate,
    payload_fault,
)

PINNED_KINDS = [
    "action.reported", "amendment.declined", "amendment.proposed", "approval.observed",
    "attempt.failed",
    "attempt.retry", "attempt.started", "chain.accepted", "context.edit", "context.prepared",
    "contract.amended",
    "contract.approved", "contract.proposed", "draft.placed", "draft.rejected",
    "draft.superseded", "effect.done", "effect.failed", "effect.interrupted", "effect.started",
    "handoff.finished", "heinzel.created", "heinzel.paused", "heinzel.renamed", "heinzel.retired",
    "heinzel.unpaused", "heinzel.unretired", "lesson.dismissed", "lesson.recorded",
    "notice.raised", "question.answered", "question.asked", "source.discovered", "spine.repaired",
    "step.done",
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


# --- s11: what a payload read from disk must look like -----------------------------------

_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(-1e9, 1e9) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)


def _values(annotation: object, limit: int | None = None) -> st.SearchStrategy[Any]:
    """Values the model accepts for ``annotation``, as a caller would pass them."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    plain: dict[object, st.SearchStrategy[Any]] = {
        str: st.text(st.characters(exclude_categories=("Cs",)), max_size=limit or 30),
        int: st.integers(-(2**63), 2**63 - 1),
        float: st.floats(allow_nan=False, allow_infinity=False),
        bool: st.booleans(),
        datetime: st.datetimes(timezones=st.just(UTC)),
        typing.Any: _JSON,
    }
    if annotation in plain:
        return plain[annotation]
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(_values(arg, limit) for arg in args))
    if origin is list:
        return st.lists(_values(args[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(_TEXT, _values(args[1]), max_size=3)
    if annotation is type(None):
        return st.none()
    raise AssertionError(f"no strategy for {annotation!r}")


@st.composite
def _payloads(draw: st.DrawFn, model: type[EventData]) -> EventData:
    values = {}
    for name, field in model.model_fields.items():
        if field.is_required() or draw(st.booleans()):
            limit = next((m.max_length for m in field.metadata), None)
            values[name] = draw(_values(field.annotation, limit))
    return model.model_validate(values)


@pytest.mark.parametrize("kind", PINNED_KINDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_s11_every_line_the_writer_emits_is_read_back_as_its_event(
    kind: str, data: st.DataObject
) -> None:
    """s11: the check a line meets when it is read back never refuses the writer's own."""
    payload = data.draw(_payloads(KINDS[kind]))
    try:
        line = encode(payload, seq=1, prev=GENESIS, turn="T", key="k")
    except HzError:  # a value the writer refuses (an e-mail address) is never written
        return
    found = scan(line + b"\n", Path("session.jsonl"))
    assert found.intact, found.breaks
    (event,) = found.events
    assert event.payload() == payload


@pytest.mark.parametrize("kind", PINNED_KINDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_s11_a_payload_that_fits_is_one_its_model_accepts(kind: str, data: st.DataObject) -> None:
    """s11: any field given any JSON value: what the check lets through never fails
    ``payload()``, and each field keeps the JSON type the writer gives it. The straight-line
    test a reindex runs lets through exactly what the loop that names the fault does."""
    model = KINDS[kind]
    written = data.draw(_payloads(model)).model_dump(mode="json", exclude_none=True)
    names = [*model.model_fields, "unknown"]
    edited = {**written, data.draw(st.sampled_from(names)): data.draw(_JSON)}
    if data.draw(st.booleans()) and edited:
        del edited[data.draw(st.sampled_from(sorted(edited)))]
    said = payload_fault(kind, edited)
    assert (said is None) == (_fault(kind, edited, *_SHAPES[kind]) is None)
    if said is None:
        typed = model.model_validate(edited).model_dump(mode="json", exclude_none=True)
        for name, value in edited.items():
            if name in typed and not isinstance(typed[name], float):
                assert type(typed[name]) is type(value), name


def test_s11_each_kind_names_what_does_not_fit() -> None:
    """s11: the fault names the kind and the field; an unknown kind fits (a newer version)."""
    assert payload_fault("turn.finished", {"disposition": "drafted", "usd": "x"}) == (
        "its turn.finished field 'usd' does not fit (str)"
    )
    assert payload_fault("draft.placed", {"key": "k"}) == "its draft.placed lacks the field 'asset'"
    assert payload_fault("step.done", {"step": ["think"]}) is not None
    assert payload_fault("hologram.projected", {"beam": [1]}) is None
