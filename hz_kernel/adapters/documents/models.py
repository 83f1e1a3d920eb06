"""What the documents adapter answers: plain pydantic models, safe to journal or send."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict


class DraftStatus(StrEnum):
    """Where a placed draft stands, as the document shows it."""

    MISSING = "missing"
    PLACED = "placed"
    EDITED = "edited"
    APPROVED = "approved"
    REJECTED = "rejected"


class FoundSection(BaseModel):
    """One hz section as it is in the file right now."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    key: str
    heinzel_id: str
    anchor: str | None
    pending: bool
    """True while the DRAFT tag line is still there (the user has not approved)."""
    text: str
    """The section's text without markers and tag line, lines joined with ``\\n``."""
    first_line: int
    """1-based line of the begin marker."""
    last_line: int
    """1-based line of the end marker."""


class PlacedDraft(BaseModel):
    """The result of ``place_draft``: where the draft is and what it displaced."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    path: Path
    key: str
    already_there: bool
    """A section with this key existed, so nothing was written."""
    superseded: list[str]
    """Keys of this heinzel's pending drafts for the same asset that the new one replaced."""
    replaced: list[str]
    """Keys of this heinzel's approved sections under the anchor that the new draft took over."""
    section: FoundSection


class DraftState(BaseModel):
    """The answer to ``draft_state``: the status and, when there is one, the current text."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    key: str
    status: DraftStatus
    text: str | None
    """The section's text for placed, edited and approved; None otherwise."""


class DraftChange(BaseModel):
    """The result of ``approve_draft`` and ``remove_draft`` (both idempotent)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    key: str
    changed: bool
    """False when the document already was as asked, so nothing was written."""
    status: DraftStatus
    text: str | None
    """The approved text after an approval; None after a removal."""
